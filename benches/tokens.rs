//! Token counts against the real tokenizer: how far bytes / 3 is from
//! what an OpenAI model counts, how far a run's calibration brings it, and
//! what counting exactly costs.
//!
//! Over every file `fanscan plan` would audit in a tree (this repository by
//! default; `FANSCAN_TOKENS_TREE=DIR` for another, such as the crate
//! sources under `~/.cargo/registry/src`):
//!
//! - per language, bytes / 3 against `o200k_base` (GPT-4o's tokenizer) and
//!   `cl100k_base` (GPT-4's), as a signed error of the estimate;
//! - a run's calibration replayed: the files in plan order, in groups of
//!   8; the ratio learned from the first two groups' counts (as a scan
//!   learns it from its first two calls) with the 5% margin, applied to
//!   every later group; the error of each group's calibrated estimate
//!   (median and 90th percentile of its absolute value, and of the total);
//! - the cost: loading each tokenizer (first use in the process), counting
//!   (MB/s, criterion), and `fanscan plan --estimate` for `gpt-4o` (counts
//!   every file) against the same for a model counted as bytes / 3, side by
//!   side.
//!
//! Run with `cargo bench --bench tokens`; under `cargo test --benches` it
//! runs once over this repository's `src/` as a smoke test. The lines after
//! `== results ==` go into the README.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};

/// One file's text and counts.
struct File {
    language: String,
    text: String,
    o200k: u64,
    cl100k: u64,
}

impl File {
    fn bytes3(&self) -> u64 {
        (self.text.len() as u64).div_ceil(3)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = match std::env::var_os("FANSCAN_TOKENS_TREE") {
        Some(tree) if bench => PathBuf::from(tree),
        _ if bench => manifest.clone(),
        _ => manifest.join("src"),
    };
    let mut results = Vec::new();

    // First use of each tokenizer in this process: what a run pays once.
    let start = Instant::now();
    let o200k = bpe_openai::o200k_base();
    let load_o200k = start.elapsed();
    let start = Instant::now();
    let cl100k = bpe_openai::cl100k_base();
    let load_cl100k = start.elapsed();
    results.push(format!(
        "load: o200k_base {:.0} ms, cl100k_base {:.0} ms (first use in a process)",
        load_o200k.as_secs_f64() * 1e3,
        load_cl100k.as_secs_f64() * 1e3
    ));

    let inventory = fanscan::walk(&root, &fanscan::InventoryOptions::default()).unwrap();
    let files: Vec<File> = inventory
        .files
        .iter()
        .filter_map(|f| {
            let bytes = std::fs::read(root.join(&f.path)).ok()?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Some(File {
                language: f.language.clone().unwrap_or_else(|| "other".into()),
                o200k: o200k.count(text.as_str()) as u64,
                cl100k: cl100k.count(text.as_str()) as u64,
                text,
            })
        })
        .collect();
    let total_bytes: usize = files.iter().map(|f| f.text.len()).sum();
    results.push(format!(
        "tree: {} ({} files, {:.1} MB)",
        root.display(),
        files.len(),
        total_bytes as f64 / 1e6
    ));
    results.extend(by_language(&files));
    results.extend(calibration(&files));

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("tokens");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(if bench { 5 } else { 1 }))
        .throughput(Throughput::Bytes(total_bytes as u64));
    group.bench_function("o200k_base count", |b| {
        b.iter(|| {
            files
                .iter()
                .map(|f| o200k.count(black_box(f.text.as_str())) as u64)
                .sum::<u64>()
        })
    });
    group.finish();
    let start = Instant::now();
    for f in &files {
        black_box(o200k.count(f.text.as_str()));
    }
    let secs = start.elapsed().as_secs_f64();
    results.push(format!(
        "counting with o200k_base on one core: {:.1} MB/s ({:.0} ms for the tree)",
        total_bytes as f64 / 1e6 / secs,
        secs * 1e3
    ));
    results.extend(plan_estimate(&root, if bench { 7 } else { 1 }));
    c.final_summary();
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
}

/// Signed error of bytes / 3 against each encoding, per language (the ten
/// with the most bytes) and over the tree.
fn by_language(files: &[File]) -> Vec<String> {
    let mut sums: BTreeMap<&str, (usize, u64, u64, u64, u64)> = BTreeMap::new();
    for f in files {
        let e = sums.entry(f.language.as_str()).or_default();
        e.0 += 1;
        e.1 += f.text.len() as u64;
        e.2 += f.bytes3();
        e.3 += f.o200k;
        e.4 += f.cl100k;
    }
    let mut rows: Vec<_> = sums.into_iter().collect();
    rows.sort_by_key(|(_, r)| std::cmp::Reverse(r.1));
    let total = rows.iter().fold((0, 0, 0, 0, 0), |t, (_, r)| {
        (t.0 + r.0, t.1 + r.1, t.2 + r.2, t.3 + r.3, t.4 + r.4)
    });
    let error = |estimate: u64, truth: u64| (estimate as f64 / truth.max(1) as f64 - 1.0) * 100.0;
    let mut lines = vec![
        "| language | files | bytes per o200k token | bytes / 3 vs o200k_base | bytes / 3 vs cl100k_base |".to_string(),
        "|---|---:|---:|---:|---:|".to_string(),
    ];
    for (language, (n, bytes, b3, o, c)) in rows
        .iter()
        .take(10)
        .map(|(l, r)| (*l, *r))
        .chain(std::iter::once(("all", total)))
    {
        lines.push(format!(
            "| {language} | {n} | {:.2} | {:+.1}% | {:+.1}% |",
            bytes as f64 / o.max(1) as f64,
            error(b3, o),
            error(b3, c),
        ));
    }
    lines
}

/// A run's calibration replayed over groups of 8 files in plan order.
fn calibration(files: &[File]) -> Vec<String> {
    const GROUP: usize = 8;
    const MARGIN: f64 = 1.05;
    let groups: Vec<(u64, u64)> = files
        .chunks(GROUP)
        .map(|g| {
            (
                g.iter().map(File::bytes3).sum::<u64>(),
                g.iter().map(|f| f.o200k).sum::<u64>(),
            )
        })
        .collect();
    if groups.len() < 3 {
        return vec!["calibration: fewer than 3 groups, not replayed".into()];
    }
    let (learned_est, learned_true) = groups[..2]
        .iter()
        .fold((0, 0), |(a, b), (e, t)| (a + e, b + t));
    let ratio = learned_true as f64 / learned_est as f64;
    let mut errors: Vec<f64> = Vec::new();
    let (mut raw_errors, mut est_sum, mut true_sum) = (Vec::new(), 0.0, 0.0);
    for &(estimate, truth) in &groups[2..] {
        if truth == 0 {
            continue;
        }
        let calibrated = estimate as f64 * ratio * MARGIN;
        errors.push((calibrated / truth as f64 - 1.0).abs() * 100.0);
        raw_errors.push((estimate as f64 / truth as f64 - 1.0).abs() * 100.0);
        est_sum += calibrated;
        true_sum += truth as f64;
    }
    let pct = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    vec![format!(
        "calibration on the first 2 groups of {GROUP} files (ratio {ratio:.3}, +5% margin), over the {} later groups: |error| median {:.1}%, p90 {:.1}%, total {:+.1}% (bytes / 3 alone: median {:.1}%, p90 {:.1}%)",
        errors.len(),
        pct(&mut errors, 0.5),
        pct(&mut errors, 0.9),
        (est_sum / true_sum - 1.0) * 100.0,
        pct(&mut raw_errors, 0.5),
        pct(&mut raw_errors, 0.9),
    )]
}

/// `fanscan plan --estimate` for a model counted exactly and one counted
/// as bytes / 3, in interleaved rounds.
fn plan_estimate(root: &Path, rounds: usize) -> Vec<String> {
    let run = |model: &str| {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_fanscan"))
            .args(["plan", ".", "--estimate", "--max-groups", "1000000"])
            .args(["--provider", "openai", "--model", model])
            .current_dir(root)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "fanscan plan --estimate failed");
        start.elapsed().as_secs_f64() * 1e3
    };
    let (mut exact, mut guessed) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        exact.push(run("gpt-4o"));
        guessed.push(run("llama-3.1-8b"));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (e, g) = (median(&mut exact), median(&mut guessed));
    vec![format!(
        "fanscan plan --estimate: gpt-4o (o200k_base over every file) {e:.0} ms, a bytes / 3 model {g:.0} ms: {:.2}x (median of {rounds} interleaved rounds)",
        e / g
    )]
}
