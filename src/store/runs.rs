//! Runs: one row per scan (manifest, the settings that matter, start,
//! end, complete or not) with its verified findings and reviewed files.
//!
//! Takes a run's start and its finished [`Report`]; gives the run's id,
//! the comparison with the last complete run ([`finish`]), the list of
//! runs (`fanscan history`) and one run's findings (`fanscan diff`). A run
//! killed mid-scan keeps its row with no end: it never counts as the last
//! complete run, and the groups it finished are reused as "resumed".

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use super::{Store, StoreError};
use crate::model::findings::Severity;
use crate::report::since::{FindingRef, RunFindings, SinceLastRun, compare};
use crate::report::{Manifest, Report};

/// Starts a run's row; returns its id.
pub(crate) fn begin(
    store: &Store,
    started_at: &str,
    provider: &str,
    model: &str,
    manifest: &Manifest,
    settings: &serde_json::Value,
) -> Result<i64, StoreError> {
    let manifest = serde_json::to_string(manifest).map_err(|e| store.json_error(e))?;
    let settings = settings.to_string();
    store.with(|conn| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (started_at, provider, model, manifest, settings) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![started_at, provider, model, manifest, settings],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    })
}

/// Ends run `run_id` with `report` (its findings and reviewed files) and
/// compares it with the last complete run before it.
pub(crate) fn finish(
    store: &Store,
    run_id: i64,
    report: &Report,
) -> Result<Option<SinceLastRun>, StoreError> {
    let current = RunFindings::of(report);
    let previous = last_complete(store, run_id)?;
    let planned: usize = report.plan.groups.iter().map(|g| g.files.len()).sum();
    store.with(|conn| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE runs SET ended_at = ?2, complete = ?3, planned_files = ?4, reviewed_files = ?5,
             groups = ?6, cached_groups = ?7, cost_usd = ?8, carried_files = ?9 WHERE id = ?1",
            params![
                run_id,
                jiff::Timestamp::now().to_string(),
                report.complete,
                planned as i64,
                report.coverage.reviewed.len() as i64,
                report.groups.len() as i64,
                report.stats.cached_groups as i64,
                report.stats.cost_usd,
                report.coverage.carried.len() as i64
            ],
        )?;
        {
            let mut finding = tx.prepare(
                "INSERT OR IGNORE INTO run_findings (run_id, fingerprint, severity, path, line, title)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for f in &current.findings {
                finding.execute(params![
                    run_id,
                    f.fingerprint,
                    f.severity.as_str(),
                    f.path,
                    f.line,
                    f.title
                ])?;
            }
            let mut file = tx.prepare("INSERT OR IGNORE INTO run_files (run_id, path) VALUES (?1, ?2)")?;
            for path in &current.reviewed {
                file.execute(params![run_id, path])?;
            }
        }
        tx.commit()
    })?;
    Ok(previous.map(|(id, started_at, findings)| {
        let mut since = compare(&findings, &current);
        since.previous_run = Some(id);
        since.previous_started_at = started_at;
        since
    }))
}

/// Ends run `run_id`, a shard's part (`scan --shard`): its counts, never
/// complete and with no findings, so no later run is compared with it.
pub(crate) fn end_part(store: &Store, run_id: i64, report: &Report) -> Result<(), StoreError> {
    let planned: usize = report.plan.groups.iter().map(|g| g.files.len()).sum();
    store.with(|conn| {
        conn.execute(
            "UPDATE runs SET ended_at = ?2, complete = 0, planned_files = ?3, reviewed_files = ?4,
             groups = ?5, cached_groups = ?6, cost_usd = ?7, carried_files = ?8 WHERE id = ?1",
            params![
                run_id,
                jiff::Timestamp::now().to_string(),
                planned as i64,
                report.coverage.reviewed.len() as i64,
                report.groups.len() as i64,
                report.stats.cached_groups as i64,
                report.stats.cost_usd,
                report.coverage.carried.len() as i64
            ],
        )
        .map(|_| ())
    })
}

/// The last complete run before `before`: id, start and findings.
fn last_complete(
    store: &Store,
    before: i64,
) -> Result<Option<(i64, String, RunFindings)>, StoreError> {
    let row: Option<(i64, String)> = store.with(|conn| {
        conn.query_row(
            "SELECT id, started_at FROM runs WHERE complete = 1 AND ended_at IS NOT NULL AND id < ?1
             ORDER BY id DESC LIMIT 1",
            params![before],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    })?;
    match row {
        Some((id, started_at)) => Ok(Some((id, started_at, findings_of(store, id)?))),
        None => Ok(None),
    }
}

/// The verified findings and reviewed files of run `id`.
pub(crate) fn findings_of(store: &Store, id: i64) -> Result<RunFindings, StoreError> {
    let exists: bool = store.with(|conn| {
        conn.query_row(
            "SELECT count(*) > 0 FROM runs WHERE id = ?1",
            params![id],
            |r| r.get(0),
        )
    })?;
    if !exists {
        return Err(StoreError::NoRun {
            path: store.path().display().to_string(),
            id,
        });
    }
    store.with(|conn| {
        let mut out = RunFindings::default();
        let mut stmt = conn.prepare(
            "SELECT fingerprint, severity, path, line, title FROM run_findings WHERE run_id = ?1
             ORDER BY path, line, fingerprint",
        )?;
        let rows = stmt.query_map(params![id], |r| {
            let severity: String = r.get(1)?;
            Ok(FindingRef {
                fingerprint: r.get(0)?,
                severity: Severity::parse(&severity).unwrap_or(Severity::Info),
                path: r.get(2)?,
                line: r.get(3)?,
                title: r.get(4)?,
            })
        })?;
        for row in rows {
            out.findings.push(row?);
        }
        let mut stmt = conn.prepare("SELECT path FROM run_files WHERE run_id = ?1")?;
        let rows = stmt.query_map(params![id], |r| r.get::<_, String>(0))?;
        for row in rows {
            out.reviewed.insert(row?);
        }
        Ok(out)
    })
}

/// One run as `fanscan history` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct RunRow {
    pub(crate) id: i64,
    pub(crate) started_at: String,
    /// None: the run never ended (killed).
    pub(crate) ended_at: Option<String>,
    pub(crate) complete: bool,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) planned_files: i64,
    pub(crate) reviewed_files: i64,
    pub(crate) groups: i64,
    pub(crate) cached_groups: i64,
    /// Reviewed files carried over from earlier runs, not audited in this
    /// one.
    pub(crate) carried_files: i64,
    pub(crate) cost_usd: Option<f64>,
    /// Verified findings by severity.
    pub(crate) findings: BTreeMap<String, i64>,
}

/// Every run in the store, oldest first.
pub(crate) fn history(store: &Store) -> Result<Vec<RunRow>, StoreError> {
    store.with(|conn| {
        let mut stmt = conn.prepare(
            "SELECT id, started_at, ended_at, complete, provider, model, planned_files, reviewed_files,
                    groups, cached_groups, cost_usd, carried_files FROM runs ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(RunRow {
                id: r.get(0)?,
                started_at: r.get(1)?,
                ended_at: r.get(2)?,
                complete: r.get(3)?,
                provider: r.get(4)?,
                model: r.get(5)?,
                planned_files: r.get(6)?,
                reviewed_files: r.get(7)?,
                groups: r.get(8)?,
                cached_groups: r.get(9)?,
                cost_usd: r.get(10)?,
                carried_files: r.get(11)?,
                findings: BTreeMap::new(),
            })
        })?;
        let mut runs = Vec::new();
        for row in rows {
            runs.push(row?);
        }
        let mut stmt = conn.prepare(
            "SELECT run_id, severity, count(*) FROM run_findings GROUP BY run_id, severity",
        )?;
        let counts = stmt.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
        })?;
        for count in counts {
            let (id, severity, n) = count?;
            if let Some(run) = runs.iter_mut().find(|run| run.id == id) {
                run.findings.insert(severity, n);
            }
        }
        Ok(runs)
    })
}

/// The runs as a table.
pub(crate) fn render_history(runs: &[RunRow]) -> String {
    if runs.is_empty() {
        return "no runs in the store yet\n".into();
    }
    let mut out = String::from(
        "run  started                    status      model                 coverage        audited carried  groups (cached)  findings (c/h/m/l/i)  cost\n",
    );
    for r in runs {
        let status = match (&r.ended_at, r.complete) {
            (None, _) => "unfinished",
            (Some(_), true) => "complete",
            (Some(_), false) => "incomplete",
        };
        let count = |s: &str| r.findings.get(s).copied().unwrap_or(0);
        let cost = r
            .cost_usd
            .map_or_else(|| "n/a".to_string(), |c| format!("${c:.4}"));
        out.push_str(&format!(
            "{:<4} {:<26} {:<11} {:<21} {:>6}/{:<8} {:>7} {:>7}  {:>6} ({:>4})    {}/{}/{}/{}/{}{:width$}{cost}\n",
            r.id,
            truncate(&r.started_at, 26),
            status,
            truncate(&r.model, 21),
            r.reviewed_files,
            r.planned_files,
            r.reviewed_files - r.carried_files,
            r.carried_files,
            r.groups,
            r.cached_groups,
            count("critical"),
            count("high"),
            count("medium"),
            count("low"),
            count("info"),
            "",
            width = 2
        ));
    }
    out
}

fn truncate(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}
