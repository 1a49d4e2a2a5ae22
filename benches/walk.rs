//! `fanscan plan` as a user runs it, against the tools that list a tree,
//! side by side in one run (the machine is shared and noisy, so absolute
//! times mean little and ratios of interleaved runs are what count):
//!
//! - `fanscan plan TREE` (the release binary: start-up, settings, agents,
//!   the walk with its ignore rules, size, binary and vendored checks, the
//!   plan, and printing it);
//! - `fd -H -t f --size +0b` (`fdfind` on Debian), which stats every file
//!   as a plan must (sizes feed the size cap and the token budgets): the
//!   target is ours ≤ 1.2× fd;
//! - `rg --files --hidden --no-require-git`, which lists without a `stat`.
//!
//! The tree is synthetic and built here: 14,000 files in 700 directories
//! of mixed languages and sizes (200 B to 12 KB), with binary images, files
//! of unknown extension (which the walk sniffs for NUL bytes), a
//! `.gitignore` with an ignored build directory, a `.gitattributes` that
//! marks a directory generated, and a `vendor/` directory. Set
//! `FANSCAN_WALK_TREE=DIR` to measure a real tree as well (the crate
//! sources under `~/.cargo/registry/src` are one).
//!
//! Run with `cargo bench --bench walk` (about 40 s after the build). Under
//! `cargo test --benches` it runs once on a small tree as a smoke test. A
//! tool that is not installed is skipped with a note (`apt-get install
//! fd-find ripgrep`). The lines after `== results ==` go into
//! docs/benchmarks.md, with the date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};

/// The files of the synthetic tree, and how many interleaved rounds.
struct Scale {
    dirs: usize,
    files_per_dir: usize,
    rounds: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let scale = if bench {
        Scale {
            dirs: 700,
            files_per_dir: 20,
            rounds: 21,
        }
    } else {
        Scale {
            dirs: 10,
            files_per_dir: 5,
            rounds: 1,
        }
    };
    let mut c = Criterion::default().configure_from_args();
    let dir = tempfile::tempdir().unwrap();
    let made = make_tree(dir.path(), &scale);
    let mut results = vec![format!(
        "synthetic tree: {made} files written in {} directories",
        scale.dirs
    )];
    results.extend(compare(&mut c, "synthetic", dir.path(), &scale));
    if let Some(real) = std::env::var_os("FANSCAN_WALK_TREE").filter(|_| bench) {
        results.extend(compare(&mut c, "real", Path::new(&real), &scale));
    }
    c.final_summary();
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
}

/// One command the comparison runs.
struct Tool {
    name: &'static str,
    program: PathBuf,
    args: Vec<&'static str>,
}

impl Tool {
    /// Runs it in `root`; its stdout's line count (it must succeed).
    fn run(&self, root: &Path) -> usize {
        let out = Command::new(&self.program)
            .args(&self.args)
            .current_dir(root)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{} failed in {root:?}", self.name);
        out.stdout.iter().filter(|b| **b == b'\n').count()
    }
}

/// The tools installed here, ours first.
fn tools() -> (Vec<Tool>, Vec<String>) {
    let ours = Tool {
        name: "fanscan plan",
        program: PathBuf::from(env!("CARGO_BIN_EXE_fanscan")),
        // A real tree can plan to more groups than a scan may start; the
        // plan is printed either way.
        args: vec!["plan", ".", "--max-groups", "1000000"],
    };
    let mut found = vec![ours];
    let mut notes = Vec::new();
    let fd = ["fd", "fdfind"].into_iter().find(|p| installed(p));
    match fd {
        Some(program) => found.push(Tool {
            name: "fd -H -t f --size +0b",
            program: program.into(),
            args: vec!["-H", "-t", "f", "--size", "+0b"],
        }),
        None => notes.push("fd is not installed: apt-get install fd-find".to_string()),
    }
    if installed("rg") {
        found.push(Tool {
            name: "rg --files --hidden",
            program: "rg".into(),
            args: vec!["--files", "--hidden", "--no-require-git"],
        });
    } else {
        notes.push("rg is not installed: apt-get install ripgrep".to_string());
    }
    (found, notes)
}

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Criterion's numbers for each tool, then the ratios of interleaved
/// rounds (each round runs every tool once, in turn).
fn compare(c: &mut Criterion, label: &str, root: &Path, scale: &Scale) -> Vec<String> {
    let (tools, mut lines) = tools();
    // Warm the page cache and check that each tool runs.
    for tool in &tools {
        tool.run(root);
    }
    let mut group = c.benchmark_group(format!("walk/{label}"));
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for tool in &tools {
        group.bench_function(tool.name, |b| b.iter(|| black_box(tool.run(root))));
    }
    group.finish();

    let mut times: Vec<Vec<f64>> = vec![Vec::new(); tools.len()];
    for _ in 0..scale.rounds {
        for (tool, samples) in tools.iter().zip(&mut times) {
            let start = Instant::now();
            black_box(tool.run(root));
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    let ours = median(&mut times[0].clone());
    lines.push(format!(
        "{label} ({}): {} {ours:.1} ms (median of {} interleaved rounds)",
        root.display(),
        tools[0].name,
        scale.rounds
    ));
    for (tool, samples) in tools.iter().zip(&mut times).skip(1) {
        let theirs = median(samples);
        lines.push(format!(
            "{label}: {} {theirs:.1} ms; fanscan plan / it = {:.2}{}",
            tool.name,
            ours / theirs,
            if tool.name.starts_with("fd") {
                " (target <= 1.2)"
            } else {
                ""
            }
        ));
    }
    lines
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

const KINDS: &[&str] = &[
    "rs", "py", "js", "ts", "go", "java", "c", "h", "md", "json", "toml", "yml", "txt", "html",
    "css", "sh", "dat", "cfg", "png",
];

/// Writes the synthetic tree; the number of files written.
fn make_tree(root: &Path, scale: &Scale) -> usize {
    let mut written = 0;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift: the same tree on every run.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for d in 0..scale.dirs {
        let dir = match d % 50 {
            // One directory in fifty is vendored, one is ignored build
            // output, one is marked generated in .gitattributes.
            0 => root.join(format!("vendor/lib{d}")),
            1 => root.join(format!("target/out{d}")),
            2 => root.join(format!("gen/g{d}")),
            _ => root.join(format!("pkg{}/mod{d}", d % 20)),
        };
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..scale.files_per_dir {
            let kind = KINDS[(next() % KINDS.len() as u64) as usize];
            let size = 200 + (next() % 12_000) as usize;
            let path = dir.join(format!("file{f}.{kind}"));
            let body = if kind == "png" {
                let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
                b.resize(size, 0);
                b
            } else {
                let line = format!("let value_{f} = compute({d}, \"text\") + {size};\n");
                line.repeat(size / line.len() + 1).into_bytes()
            };
            std::fs::write(path, body).unwrap();
            written += 1;
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::write(root.join(".gitattributes"), "gen/** linguist-generated\n").unwrap();
    written + 2
}
