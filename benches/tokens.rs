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
//!   8, each group a call; after two, each group's estimate scaled by the
//!   average ratio so far (the report's estimate) and as budgets weigh it
//!   (the average +5%, or the 90th percentile of the groups' ratios if
//!   more), then learned from: the errors (median and 90th percentile,
//!   and of the run's total) and how many groups budgets weighed below
//!   their true count;
//! - the cost: loading each tokenizer (first use in the process), counting
//!   (MB/s, criterion), and `fanscan plan --estimate` for `gpt-4o` (counts
//!   every file) against the same for a model counted as bytes / 3, side by
//!   side.
//!
//! Run with `cargo bench --bench tokens`; under `cargo test --benches` it
//! runs once over this repository's `src/` as a smoke test. The lines after
//! `== results ==` go into docs/benchmarks.md,
//! with the date they were measured.

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

/// A run's calibration replayed over groups of 8 files in plan order, as
/// `budget.rs` does it: once two groups are counted, each group's
/// estimate is its bytes / 3 times the average ratio so far (what the
/// report checks), and budgets weigh it at the larger of the average +5%
/// and the 90th percentile of the groups' own ratios so far (all held in
/// 0.5..4); then it is counted too.
fn calibration(files: &[File]) -> Vec<String> {
    const GROUP: usize = 8;
    let groups: Vec<(u64, u64)> = files
        .chunks(GROUP)
        .map(|g| {
            (
                g.iter().map(File::bytes3).sum::<u64>(),
                g.iter().map(|f| f.o200k).sum::<u64>(),
            )
        })
        .filter(|(estimate, truth)| *estimate > 0 && *truth > 0)
        .collect();
    if groups.len() < 3 {
        return vec!["calibration: fewer than 3 groups, not replayed".into()];
    }
    let (mut estimated, mut reported) = (0u64, 0u64);
    let mut ratios: Vec<f64> = Vec::new();
    let (mut errors, mut weighed, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    let (mut est_sum, mut true_sum, mut under) = (0.0, 0.0, 0usize);
    for (i, &(estimate, truth)) in groups.iter().enumerate() {
        if i >= 2 {
            let average = (reported as f64 / estimated as f64).clamp(0.5, 4.0);
            let mut sorted = ratios.clone();
            sorted.sort_by(f64::total_cmp);
            let p90 = sorted[((sorted.len() as f64 * 0.9).ceil() as usize).max(1) - 1];
            let budget = (average * 1.05).max(p90).clamp(0.5, 4.0);
            let truth = truth as f64;
            errors.push((estimate as f64 * average / truth - 1.0) * 100.0);
            weighed.push((estimate as f64 * budget / truth - 1.0) * 100.0);
            raw.push((estimate as f64 / truth - 1.0).abs() * 100.0);
            under += usize::from(estimate as f64 * budget < truth);
            est_sum += estimate as f64 * average;
            true_sum += truth;
        }
        estimated += estimate;
        reported += truth;
        ratios.push(truth as f64 / estimate as f64);
    }
    let pct = |v: &[f64], q: f64| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    vec![
        format!(
            "calibration replayed over {} groups of {GROUP} files (after the first two): the estimate's |error| median {:.1}%, p90 {:.1}%, and the run's total {:+.1}% (bytes / 3 alone: |error| median {:.1}%, p90 {:.1}%, total {:+.1}%)",
            errors.len(),
            pct(&abs, 0.5),
            pct(&abs, 0.9),
            (est_sum / true_sum - 1.0) * 100.0,
            pct(&raw, 0.5),
            pct(&raw, 0.9),
            (groups[2..].iter().map(|g| g.0).sum::<u64>() as f64
                / groups[2..].iter().map(|g| g.1).sum::<u64>() as f64
                - 1.0)
                * 100.0,
        ),
        format!(
            "as budgets weigh the groups: median {:+.1}%, p90 {:+.1}%; {under} of {} groups weighed below their count",
            pct(&weighed, 0.5),
            pct(&weighed, 0.9),
            weighed.len(),
        ),
    ]
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
