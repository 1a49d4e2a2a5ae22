//! The offline engine beside Semgrep OSS, side by side in one run: the
//! release binary's `fanscan scan TREE --fail-on never --no-store` (the
//! raw scan: every rule and taint walk, no skeptic) and its default gate
//! (`--fail-on high`: the skeptic challenges every high finding), against
//! `semgrep scan --config RULES --metrics=off --json TREE` with a
//! directory of Semgrep's public rules. Each round runs every command once,
//! in turn; the figures are medians of the rounds (the machine is shared
//! and noisy: ratios of interleaved runs are what count), with each
//! command's peak resident memory (as GNU time reads it, when
//! `/usr/bin/time` is there; for Semgrep, its largest process).
//!
//! Set `FANSCAN_PEER_TREE=DIR` (the tree), `FANSCAN_PEER_RULES=DIR` (the
//! rules: e.g. the `security` rules of one language of the public
//! semgrep-rules repository, copied into one directory), and optionally
//! `FANSCAN_SEMGREP=PATH` (default `semgrep` on the PATH; `pip install
//! semgrep`) and `FANSCAN_PEER_ROUNDS` (default 3). Run with `cargo bench
//! --bench peer`; docs/benchmarks.md says how the figures there were made.
//! Without the variables, and under `cargo test --benches`, it scans a
//! small tree it writes, once, as a smoke test, and says what it skipped.
//! The lines after `== results ==` go into docs/benchmarks.md, with the
//! date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let small = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    let tree = match std::env::var_os("FANSCAN_PEER_TREE").filter(|_| bench) {
        Some(tree) => PathBuf::from(tree),
        None => {
            write_small_tree(small.path());
            results.push(
                "no FANSCAN_PEER_TREE (or not a bench run): a small tree written here".into(),
            );
            small.path().to_path_buf()
        }
    };
    let rounds: usize = std::env::var("FANSCAN_PEER_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|_| bench)
        .unwrap_or(1);
    let out = tempfile::tempdir().unwrap();
    let (commands, notes) = commands(&tree, out.path());
    results.extend(notes);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); commands.len()];
    for _ in 0..rounds {
        for (command, samples) in commands.iter().zip(&mut samples) {
            samples.push(command.run());
        }
    }
    results.push(format!(
        "tree: {} ({} rounds, interleaved)",
        tree.display(),
        rounds
    ));
    let medians: Vec<Sample> = samples.iter_mut().map(|s| median(s)).collect();
    for (command, m) in commands.iter().zip(&medians) {
        results.push(format!(
            "{}: {:.2} s, peak {}, {} results",
            command.name,
            m.seconds,
            m.peak_kib
                .map_or("not read".to_string(), |k| format!("{} MiB", k / 1024)),
            m.results
        ));
    }
    if let Some(semgrep) = commands.iter().position(|c| c.name.starts_with("semgrep")) {
        for (command, m) in commands.iter().zip(&medians).take(semgrep) {
            results.push(format!(
                "semgrep / {} = {:.1}x (target >= 5x)",
                command.name,
                medians[semgrep].seconds / m.seconds
            ));
        }
    }
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
}

/// One run's figures.
#[derive(Clone, Copy, Debug)]
struct Sample {
    seconds: f64,
    peak_kib: Option<u64>,
    results: usize,
}

/// One command of the comparison.
struct Peer {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    /// Where the JSON report goes (its results are counted).
    report: PathBuf,
    /// The report's array of results.
    results_key: &'static str,
    /// The exit codes that mean it ran to the end.
    ok: &'static [i32],
}

impl Peer {
    fn run(&self) -> Sample {
        let timed = Path::new("/usr/bin/time").exists();
        let mut command = if timed {
            let mut c = Command::new("/usr/bin/time");
            c.args(["-f", "peak-kib %M"]).arg(&self.program);
            c
        } else {
            Command::new(&self.program)
        };
        let start = Instant::now();
        let out = command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let seconds = start.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code().unwrap_or(-1);
        assert!(
            self.ok.contains(&code),
            "{} exited with {code}: {}",
            self.name,
            stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        );
        let peak_kib = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("peak-kib "))
            .find_map(|k| k.trim().parse().ok());
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&self.report).unwrap()).unwrap();
        let results = report[self.results_key].as_array().map_or(0, Vec::len);
        Sample {
            seconds,
            peak_kib,
            results,
        }
    }
}

/// The commands to run: fanscan's raw scan and default gate, and Semgrep
/// where it and its rules are there (else a note says why not).
fn commands(tree: &Path, out: &Path) -> (Vec<Peer>, Vec<String>) {
    let fanscan = |name: &str, gate: &str| {
        let report = out.join(format!("{}.json", name.replace(' ', "-")));
        Peer {
            name: name.to_string(),
            program: PathBuf::from(env!("CARGO_BIN_EXE_fanscan")),
            args: vec![
                "scan".into(),
                tree.display().to_string(),
                "--fail-on".into(),
                gate.into(),
                "--no-store".into(),
                "--quiet".into(),
                "-o".into(),
                format!("json={}", report.display()),
            ],
            report,
            results_key: "findings",
            // 4: the gate failed; the run went to its end.
            ok: &[0, 4],
        }
    };
    let mut peers = vec![
        fanscan("fanscan raw", "never"),
        fanscan("fanscan gate", "high"),
    ];
    let mut notes = Vec::new();
    let semgrep =
        std::env::var_os("FANSCAN_SEMGREP").map_or_else(|| "semgrep".into(), PathBuf::from);
    let installed = Command::new(&semgrep)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match std::env::var_os("FANSCAN_PEER_RULES") {
        Some(rules) if installed => {
            let report = out.join("semgrep.json");
            peers.push(Peer {
                name: "semgrep".into(),
                program: semgrep,
                args: vec![
                    "scan".into(),
                    "--config".into(),
                    PathBuf::from(rules).display().to_string(),
                    "--metrics=off".into(),
                    "--disable-version-check".into(),
                    "--quiet".into(),
                    "--json".into(),
                    "--output".into(),
                    report.display().to_string(),
                    tree.display().to_string(),
                ],
                report,
                results_key: "results",
                ok: &[0, 1],
            });
        }
        _ if !installed => notes.push(format!(
            "semgrep skipped: {} does not run (pip install semgrep, or set FANSCAN_SEMGREP)",
            semgrep.display()
        )),
        _ => {
            notes.push("semgrep skipped: set FANSCAN_PEER_RULES to a directory of its rules".into())
        }
    }
    (peers, notes)
}

/// The sample of median time (its memory and results with it).
fn median(samples: &mut [Sample]) -> Sample {
    samples.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    samples[samples.len() / 2]
}

/// A few files with a flow, a safe twin and a weak hash: enough for every
/// command to do its work once.
fn write_small_tree(root: &Path) {
    let files = [
        (
            "web/app.py",
            "import os\nfrom flask import request\n\ndef run():\n    host = request.args['host']\n    os.system('ping ' + host)\n",
        ),
        (
            "web/safe.py",
            "import os, shlex\nfrom flask import request\n\ndef run():\n    host = shlex.quote(request.args['host'])\n    os.system('ping ' + host)\n",
        ),
        (
            "src/A.java",
            "class A {\n  String h(String s) throws Exception {\n    return new String(java.security.MessageDigest.getInstance(\"MD5\").digest(s.getBytes()));\n  }\n}\n",
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
