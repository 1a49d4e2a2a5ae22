#!/usr/bin/env bash
# Score a fanscan binary on the real-world set of eval/real/apps.tsv.
#
#   eval/real/score.sh FANSCAN_BIN TREES [OUT] [NAME...]
#
# TREES is the directory eval/real/fetch.sh filled (TREES/<name>/ at the pinned
# commit); OUT (default: a new directory under /tmp) receives, per application,
# <name>.json (the scan report), <name>.stderr and, for vulnerable ones,
# <name>.eval.json and <name>.eval.md (fanscan eval's output).
#
# Vulnerable applications: fanscan scan TREES/<name>/<subdir> --format json
#   --fail-on never --no-store, then fanscan eval against truth/<name>.csv.
# Clean libraries: fanscan scan ... --format json --no-store with the DEFAULT
#   gate (--fail-on high, so the skeptic challenges high+ findings), and the
#   table counts the high+ findings: open (what the gate sees), refuted by the
#   skeptic, and their sum (what --fail-on never would report); gate = the
#   report's gate.outcome. Every high+ finding in a clean library is a false alarm.
# Extra scan flags can be passed in FANSCAN_SCAN_ARGS (e.g. "--jobs 1").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
table="$here/apps.tsv"
die() { echo "score.sh: $*" >&2; exit 1; }

[[ $# -ge 2 ]] || die "usage: $0 FANSCAN_BIN TREES [OUT] [NAME...]"
bin="$1"; trees="$2"; shift 2
out="${1:-}"; [[ $# -gt 0 ]] && shift
[[ -x "$bin" ]] || die "$bin is not an executable"
[[ -d "$trees" ]] || die "$trees is not a directory (run eval/real/fetch.sh $trees first)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON reports"
[[ -n "$out" ]] || out="$(mktemp -d /tmp/fanscan-real.XXXXXX)"
mkdir -p "$out"
want=("$@")
wanted() {
  [[ ${#want[@]} -eq 0 ]] && return 0
  local w; for w in "${want[@]}"; do [[ "$w" == "$1" ]] && return 0; done
  return 1
}
read -r -a extra <<< "${FANSCAN_SCAN_ARGS:-}"

rows="$out/rows.tsv"; : > "$rows"
while IFS=$'\t' read -r name lang repo commit licence subdir kind; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  wanted "$name" || continue
  dir="$trees/$name/$subdir"
  if [[ ! -d "$dir" ]]; then
    echo "score.sh: $name: $dir missing (fetch it first)" >&2
    printf '%s\t%s\t%s\tmissing\n' "$name" "$lang" "$kind" >> "$rows"; continue
  fi
  if [[ -f "$trees/$name/.eval-commit" && "$(cat "$trees/$name/.eval-commit")" != "$commit" ]]; then
    echo "score.sh: $name: $trees/$name is not at the pinned commit $commit" >&2
  fi
  report="$out/$name.json"
  start=$(date +%s)
  if [[ "$kind" == vulnerable ]]; then
    truth="$here/truth/$name.csv"
    [[ -f "$truth" ]] || die "$name: no truth file $truth"
    set +e
    "$bin" scan "$dir" --format json -o "$report" --fail-on never --no-store "${extra[@]}" 2> "$out/$name.stderr"
    rc=$?
    set -e
    secs=$(( $(date +%s) - start ))
    if [[ $rc -ne 0 && $rc -ne 3 ]] || [[ ! -s "$report" ]]; then
      echo "score.sh: $name: scan exited $rc (see $out/$name.stderr)" >&2
      printf '%s\t%s\t%s\tscan-failed:%s\n' "$name" "$lang" "$kind" "$rc" >> "$rows"; continue
    fi
    "$bin" eval "$report" --truth "$truth" > "$out/$name.eval.md" 2>> "$out/$name.stderr" || true
    if ! "$bin" eval "$report" --truth "$truth" --format json > "$out/$name.eval.json" 2>> "$out/$name.stderr"; then
      echo "score.sh: $name: eval failed (see $out/$name.stderr)" >&2
      printf '%s\t%s\t%s\teval-failed\n' "$name" "$lang" "$kind" >> "$rows"; continue
    fi
    printf '%s\t%s\t%s\tok\t%s\t%s\n' "$name" "$lang" "$kind" "$rc" "$secs" >> "$rows"
  else
    set +e
    "$bin" scan "$dir" --format json -o "$report" --no-store "${extra[@]}" 2> "$out/$name.stderr"
    rc=$?
    set -e
    secs=$(( $(date +%s) - start ))
    if [[ $rc -ne 0 && $rc -ne 3 && $rc -ne 4 ]] || [[ ! -s "$report" ]]; then
      echo "score.sh: $name: scan exited $rc (see $out/$name.stderr)" >&2
      printf '%s\t%s\t%s\tscan-failed:%s\n' "$name" "$lang" "$kind" "$rc" >> "$rows"; continue
    fi
    printf '%s\t%s\t%s\tok\t%s\t%s\n' "$name" "$lang" "$kind" "$rc" "$secs" >> "$rows"
  fi
done < "$table"

python3 - "$out" "$rows" <<'PY'
import json, sys, collections
out, rows = sys.argv[1], sys.argv[2]
HIGH = {"critical", "high"}

def table(title, columns):
    print(f"\n## {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))

def f(x):
    return "–" if x is None else f"{x:+.2f}" if isinstance(x, float) else str(x)

vuln, clean = [], []
per_class = collections.defaultdict(lambda: [0, 0, 0, 0])
for line in open(rows):
    p = line.rstrip("\n").split("\t")
    name, lang, kind, status = p[:4]
    if status != "ok":
        (vuln if kind == "vulnerable" else clean).append((name, lang, status))
        continue
    rc, secs = p[4], p[5]
    rep = json.load(open(f"{out}/{name}.json"))
    complete = rep.get("complete")
    if kind == "vulnerable":
        ev = json.load(open(f"{out}/{name}.eval.json"))
        run = ev["runs"][0]
        o = run["overall"]
        for c in run["per_cwe"]:
            k = per_class[c["cwe"]]
            k[0] += c["tp"]; k[1] += c["fp"]; k[2] += c["fn"]; k[3] += c["tn"]
        vuln.append((name, lang, o["tp"], o["fp"], o["fn"], o["tn"],
                     o["macro"]["tpr"], o["macro"]["fpr"], o["macro"]["score"],
                     o["micro"]["score"], len(rep.get("findings") or []),
                     run.get("not_reviewed"), complete, secs))
    else:
        fs = rep.get("findings") or []
        ref = rep.get("refuted") or []
        hi = [x for x in fs if (x.get("severity") or "").lower() in HIGH]
        hr = [x for x in ref if (x.get("severity") or "").lower() in HIGH]
        gate = (rep.get("gate") or {}).get("outcome")
        rules = collections.Counter(x.get("rule") for x in hi + hr)
        clean.append((name, lang, len(fs), len(hi), len(hr), len(hi) + len(hr), gate,
                       complete, secs, ", ".join(f"{r}×{n}" for r, n in rules.most_common(4))))

table("Vulnerable applications (fanscan eval, --fail-on never; macro = mean of the classes' rates)",
      ["app", "language", "TP", "FP", "FN", "TN", "TPR", "FPR", "TPR−FPR (macro)", "TPR−FPR (micro)",
       "findings", "not reviewed", "complete", "s"])
for r in vuln:
    if len(r) == 3:
        print(f"| {r[0]} | {r[1]} | {r[2]} |"); continue
    n, l, tp, fp, fn, tn, tpr, fpr, s, mi, nf, nr, cp, secs = r
    print(f"| {n} | {l} | {tp} | {fp} | {fn} | {tn} | {f(tpr).lstrip('+')} | {f(fpr).lstrip('+')} | {f(s)} | {f(mi)} | {nf} | {f(nr)} | {cp} | {secs} |")

table("Per CWE class, summed over the vulnerable applications",
      ["CWE", "TP", "FP", "FN", "TN", "TPR", "FPR", "TPR−FPR"])
def key(c):
    try: return int(c.split("-")[-1])
    except ValueError: return 0
for c in sorted(per_class, key=key):
    tp, fp, fn, tn = per_class[c]
    tpr = tp / (tp + fn) if tp + fn else None
    fpr = fp / (fp + tn) if fp + tn else None
    sc = (tpr - fpr) if tpr is not None and fpr is not None else None
    print(f"| {c} | {tp} | {fp} | {fn} | {tn} | {f(tpr).lstrip('+')} | {f(fpr).lstrip('+')} | {f(sc)} |")

table("Clean libraries (default gate: --fail-on high, skeptic on high+; every high+ finding is a false alarm)",
      ["app", "language", "findings (open)", "high+ open", "high+ refuted", "high+ before skeptic",
       "default gate", "complete", "s", "top high+ rules"])
for r in clean:
    if len(r) == 3:
        print(f"| {r[0]} | {r[1]} | {r[2]} |"); continue
    n, l, nf, hi, hr, tot, gate, cp, secs, rules = r
    print(f"| {n} | {l} | {nf} | {hi} | {hr} | {tot} | {gate}{' (would FAIL)' if gate == 'fail' else ''} | {cp} | {secs} | {rules} |")
print(f"\nReports and eval output: {out}")
PY
