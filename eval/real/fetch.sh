#!/usr/bin/env bash
# Materialise every application of eval/real/apps.tsv at its pinned commit.
#
#   eval/real/fetch.sh DEST [NAME...]
#
# DEST/<name>/ receives the whole tree of <name> at the commit in apps.tsv
# (the scanner is then pointed at DEST/<name>/<subdir>). With NAMEs, only
# those applications. Sources, in order:
#   - FANSCAN_MIRROR=/dir: a local bare mirror named owner+name, either
#     /dir/owner+name (a git dir) or /dir/owner+name/repo;
#   - otherwise GitHub: git init + git fetch --depth 1 origin <commit>.
# An application already present at the right commit (DEST/<name>/.eval-commit)
# is left alone. Nothing is written outside DEST.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
table="$here/apps.tsv"

die() { echo "fetch.sh: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: $0 DEST [NAME...]   (e.g. $0 /tmp/real)"
dest="$1"; shift
[[ -f "$table" ]] || die "no $table"
command -v git >/dev/null || die "git is not installed"
command -v tar >/dev/null || die "tar is not installed"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

want=("$@")
wanted() {
  [[ ${#want[@]} -eq 0 ]] && return 0
  local w; for w in "${want[@]}"; do [[ "$w" == "$1" ]] && return 0; done
  return 1
}

mirror_dir() { # owner/name -> a git dir in $FANSCAN_MIRROR, or nothing
  local m="${FANSCAN_MIRROR:-}" key="${1/\//+}"
  [[ -n "$m" ]] || return 0
  local d
  for d in "$m/$key/repo" "$m/$key"; do
    if [[ -d "$d" ]] && git --git-dir="$d" rev-parse --git-dir >/dev/null 2>&1; then
      echo "$d"; return 0
    fi
  done
}

fetched=0 failed=()
while IFS=$'\t' read -r name lang repo commit licence subdir kind; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  wanted "$name" || continue
  [[ "$commit" =~ ^[0-9a-f]{40}$ ]] || die "$name: bad commit '$commit' in apps.tsv"
  out="$dest/$name"
  if [[ -f "$out/.eval-commit" && "$(cat "$out/.eval-commit")" == "$commit" ]]; then
    echo "$name: already at $commit"; continue
  fi
  rm -rf "$out" && mkdir -p "$out"
  src="$(mirror_dir "$repo")"
  if [[ -n "$src" ]]; then
    echo "$name: $repo@$commit from mirror $src"
    if ! git --git-dir="$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
      echo "fetch.sh: $name: commit $commit is not in the mirror $src" >&2
      failed+=("$name"); continue
    fi
    if ! git --git-dir="$src" archive --format=tar "$commit" | tar -x -C "$out"; then
      echo "fetch.sh: $name: git archive from $src failed" >&2
      failed+=("$name"); continue
    fi
  else
    [[ -n "${FANSCAN_MIRROR:-}" ]] && echo "$name: not in mirror $FANSCAN_MIRROR, trying GitHub" >&2
    echo "$name: $repo@$commit from https://github.com/$repo"
    tmp="$(mktemp -d "$dest/.fetch-$name.XXXXXX")"
    if ! ( git init -q "$tmp" &&
           git -C "$tmp" remote add origin "https://github.com/$repo.git" &&
           git -C "$tmp" fetch -q --depth 1 origin "$commit" &&
           git -C "$tmp" archive --format=tar FETCH_HEAD | tar -x -C "$out" ); then
      echo "fetch.sh: $name: could not fetch $commit from https://github.com/$repo" >&2
      rm -rf "$tmp"; failed+=("$name"); continue
    fi
    rm -rf "$tmp"
  fi
  [[ -d "$out/$subdir" ]] || { echo "fetch.sh: $name: subdirectory '$subdir' missing at $commit" >&2; failed+=("$name"); continue; }
  echo "$commit" > "$out/.eval-commit"
  fetched=$((fetched + 1))
done < "$table"

if [[ ${#want[@]} -gt 0 ]]; then
  for w in "${want[@]}"; do
    grep -q "^$w	" "$table" || die "no application named '$w' in apps.tsv"
  done
fi
echo "fetched $fetched application(s) into $dest"
[[ ${#failed[@]} -eq 0 ]] || die "failed: ${failed[*]}"
