//! The cache and the journal: group results keyed by everything that
//! determines them.
//!
//! Takes a run's tasks; gives those whose result is stored ([`Session::reuse`])
//! and commits each finished report the moment it finishes
//! ([`Journal::commit`]). A key hashes the group's file paths and content
//! hashes (taken here, before any agent runs), its focus, the agent
//! definition's hash, provider, model, the rule set's hash and
//! [`GROUP_FORMAT_VERSION`]. Only reviewed groups that ran to their own end
//! (`complete`, `max_rounds`) are kept: a `wrapped_up` group was cut short by
//! a budget or Ctrl-C, and `failed` or `interrupted` ones reviewed nothing,
//! so a re-run asks them again.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{KeyBase, Store, StoreError, files, now_ms, reusable};
use crate::agents::{AgentDefinition, AgentTask, GroupReport};
use crate::report::Reused;
use crate::stages::fanout::Journal;
use crate::stages::reduce::Reduced;
use crate::stages::verify::Checked;
use crate::util::relock;

/// Bumped whenever a stored `GroupReport` would mean something else
/// (fields, parsing of findings): old results are then never reused.
/// 2: the tool layer's injection and deceptive-text findings are part of
/// a group's findings. 3: a report lists the lines no read showed whole
/// (before, they were cut without a word).
pub(crate) const GROUP_FORMAT_VERSION: u32 = 3;

/// The key of `task` whose files have the content hashes `hashes`.
pub(crate) fn group_key(base: &KeyBase, task: &AgentTask, hashes: &[String]) -> String {
    let mut text = format!(
        "fanscan group v{GROUP_FORMAT_VERSION}\nagent {} {}\nprovider {}\nmodel {}\nrules {}\nfocus {}\n",
        base.agent,
        base.agent_hash,
        base.provider,
        base.model,
        base.rules_hash,
        task.focus.as_deref().unwrap_or_default()
    );
    for (file, hash) in task.files.iter().zip(hashes) {
        text.push_str(&format!("{}\0{hash}\n", file.path));
    }
    // Another tool's leads change what the agent is asked (none: the key
    // of a run without them, unchanged).
    for lead in &task.leads {
        text.push_str(&format!(
            "lead {}\0{}\0{}\0{}\0{}\n",
            lead.tool, lead.path, lead.line, lead.rule, lead.message
        ));
    }
    crate::util::sha256_hex(text.as_bytes())
}

/// SHA-256 of each file of `task` as the sub-agent will hash it (the same
/// bytes, the same confinement); empty when a file cannot be read.
pub(crate) fn hash_files(root: &Path, task: &AgentTask) -> Vec<String> {
    task.files
        .iter()
        .map(|f| {
            crate::tools::paths::resolve(root, &f.path)
                .ok()
                .filter(|r| r.real.is_file())
                .and_then(|r| std::fs::read(&r.real).ok())
                .map(|bytes| crate::util::sha256_hex(&bytes))
                .unwrap_or_default()
        })
        .collect()
}

/// The run store as one run uses it.
pub(crate) struct Session {
    pub(crate) store: Arc<Store>,
    pub(crate) run_id: i64,
    /// `--no-cache`: results are stored but none is reused.
    pub(crate) use_cache: bool,
    /// The key (empty for a group of changed files, kept only per file),
    /// file hashes and key base of every group sent to a model.
    pending: Mutex<HashMap<String, Pending>>,
    /// The token budget groups of changed files are packed under; none:
    /// a group with a changed file is run whole (`--samples` above 1,
    /// whose samples of a group are kept apart).
    group_tokens: Option<u64>,
    /// Commits that failed (the run goes on; the report says so).
    failures: Mutex<Vec<String>>,
}

/// A group sent to a model, and what its result is kept under.
#[derive(Clone, Debug)]
struct Pending {
    /// The group's key; empty for a group of changed files, whose result
    /// is kept per file only (its plan groups are kept when folded).
    key: String,
    hashes: Vec<String>,
    base: KeyBase,
}

/// What [`Session::reuse`] gives.
#[derive(Debug, Default)]
pub(crate) struct Split {
    /// Stored results, by group, with how they came.
    pub(crate) reused: Vec<(GroupReport, Reused)>,
    /// Tasks to send to a model.
    pub(crate) fresh: Vec<AgentTask>,
    /// Groups some of whose files changed: their unchanged files carried
    /// over, their changed ones among `fresh`, in groups of changed files.
    pub(crate) partials: Vec<files::Partial>,
    /// Each group of changed files, and a plan group its files come from
    /// (it runs with that group's agent).
    pub(crate) origins: HashMap<String, String>,
}

impl Split {
    /// The agents by group, with each group of changed files given the
    /// agent of the plan group its files come from.
    pub(crate) fn with_origins(
        &self,
        mut specialists: HashMap<String, Arc<AgentDefinition>>,
    ) -> HashMap<String, Arc<AgentDefinition>> {
        for (changed, origin) in &self.origins {
            if let Some(d) = specialists.get(origin).cloned() {
                specialists.insert(changed.clone(), d);
            }
        }
        specialists
    }
}

impl Session {
    pub(crate) fn new(
        store: Arc<Store>,
        run_id: i64,
        use_cache: bool,
        group_tokens: Option<u64>,
    ) -> Self {
        Self {
            store,
            run_id,
            use_cache,
            group_tokens,
            pending: Mutex::new(HashMap::new()),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// [`Session::reuse`] on a blocking thread. A panic in it, or a lock
    /// a panic poisoned, is a fanscan bug and an error: it comes before
    /// any model call, so stopping bills nothing, where running every
    /// group again as if none were stored would bill them all twice.
    pub(crate) async fn reuse_blocking(
        self: Arc<Self>,
        root: PathBuf,
        base: KeyBase,
        by_group: HashMap<String, KeyBase>,
        tasks: Vec<AgentTask>,
    ) -> Result<Split, StoreError> {
        let path = self.store.path().display().to_string();
        tokio::task::spawn_blocking(move || self.reuse(&root, &base, &by_group, tasks))
            .await
            .map_err(|e| StoreError::Panicked {
                path,
                detail: e.to_string(),
            })?
    }

    /// Splits `tasks` into stored results and tasks to run, hashing every
    /// file now, before any agent runs. A group whose lookup fails is run
    /// (the report says why); a poisoned lock is an error.
    pub(crate) fn reuse(
        &self,
        root: &Path,
        base: &KeyBase,
        by_group: &HashMap<String, KeyBase>,
        tasks: Vec<AgentTask>,
    ) -> Result<Split, StoreError> {
        let mut split = Split::default();
        for task in tasks {
            // A group the plan gives its own agent is keyed by that agent,
            // a further sample of a group by its number too.
            let base = &by_group
                .get(&task.group)
                .unwrap_or(base)
                .for_sample(task.sample);
            let hashes = hash_files(root, &task);
            // A file that cannot be read makes the group uncacheable.
            if hashes.iter().any(String::is_empty) {
                split.fresh.push(task);
                continue;
            }
            let key = group_key(base, &task, &hashes);
            let found = if self.use_cache {
                self.lookup(&key, &hashes)
            } else {
                Ok(None)
            };
            let partial = |store: &Store| {
                if self.use_cache && self.group_tokens.is_some() {
                    files::partial(store, root, base, &task, &hashes, &key)
                } else {
                    Ok(None)
                }
            };
            match found.and_then(|hit| match hit {
                Some(hit) => Ok(Ok(hit)),
                None => partial(&self.store).map(Err),
            }) {
                Ok(Ok(hit)) => split.reused.push(hit),
                Ok(Err(Some(partial))) => split.partials.push(partial),
                Ok(Err(None)) => {
                    relock(&self.pending).insert(
                        task.group.clone(),
                        Pending {
                            key,
                            hashes,
                            base: base.clone(),
                        },
                    );
                    split.fresh.push(task);
                }
                Err(e @ StoreError::Poisoned { .. }) => return Err(e),
                Err(e) => {
                    self.failed(format!("reading group {} from the store: {e}", task.group));
                    split.fresh.push(task);
                }
            }
        }
        let budget = self.group_tokens.unwrap_or(u64::MAX);
        for changed in files::changed_tasks(&split.partials, budget) {
            relock(&self.pending).insert(
                changed.task.group.clone(),
                Pending {
                    key: String::new(),
                    hashes: changed.hashes,
                    base: changed.base,
                },
            );
            split
                .origins
                .insert(changed.task.group.clone(), changed.origin);
            split.fresh.push(changed.task);
        }
        Ok(split)
    }

    /// A stored result of `key` whose file hashes are `hashes`, marked
    /// used now (the LRU clock).
    fn lookup(
        &self,
        key: &str,
        hashes: &[String],
    ) -> Result<Option<(GroupReport, Reused)>, StoreError> {
        let row: Option<(String, bool, Option<i64>)> = self.store.with(|conn| {
            let row = conn
                .query_row(
                    "SELECT g.body, coalesce(r.complete, 1) AND (r.id IS NULL OR r.ended_at IS NOT NULL), g.run_id
                     FROM group_results g LEFT JOIN runs r ON r.id = g.run_id
                     WHERE g.key = ?1 AND g.kind = 'group'",
                    params![key],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?, r.get(2)?)),
                )
                .optional()?;
            if row.is_some() {
                conn.execute(
                    "UPDATE group_results SET used_at = ?2 WHERE key = ?1",
                    params![key, now_ms()],
                )?;
            }
            Ok(row)
        })?;
        let Some((body, by_complete_run, run)) = row else {
            return Ok(None);
        };
        let mut report: GroupReport =
            serde_json::from_str(&body).map_err(|e| self.store.json_error(e))?;
        // The key says the content is the same; the report must agree.
        let agrees = report.files.len() == hashes.len()
            && report.files.iter().zip(hashes).all(|(f, h)| &f.sha256 == h);
        if !agrees || !reusable(report.status) {
            return Ok(None);
        }
        // Every file of it was audited by an earlier run: the one that
        // stored the group, unless it had carried the file itself.
        for f in &report.files {
            if !report.carried.contains_key(&f.path) {
                report.carried.insert(f.path.clone(), run.unwrap_or(0));
            }
        }
        let how = if by_complete_run {
            Reused::Cached
        } else {
            Reused::Resumed
        };
        Ok(Some((report, how)))
    }

    fn failed(&self, message: String) {
        tracing::warn!("run store: {message}");
        relock(&self.failures).push(message);
    }

    /// The store failures of the run, for the report's notes.
    pub(crate) fn failures(&self) -> Vec<String> {
        relock(&self.failures).clone()
    }

    /// Stores one result in its own short transaction.
    fn put(&self, kind: &str, key: &str, group: &str, body: &str) -> Result<(), StoreError> {
        self.store.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT OR REPLACE INTO group_results (key, kind, group_id, run_id, body, bytes, created_at, used_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    key,
                    kind,
                    group,
                    self.run_id,
                    body,
                    body.len() as i64,
                    jiff::Timestamp::now().to_string(),
                    now_ms()
                ],
            )?;
            tx.commit()
        })
    }

    /// The reducer's key: its definition and model, and every group
    /// report it reduces (which pins the verified findings, since
    /// verification is a function of the reports and the files they hash).
    pub(crate) fn reducer_key(
        base: &KeyBase,
        reports: &[GroupReport],
        checked: &[Checked],
    ) -> Option<String> {
        // Where a result came from is not what was reduced.
        let reports: Vec<GroupReport> = reports
            .iter()
            .map(|r| GroupReport {
                carried: BTreeMap::new(),
                ..r.clone()
            })
            .collect();
        let reports = serde_json::to_string(&reports).ok()?;
        // What the skeptic said changes what is reduced (refuted findings
        // leave, located ones join): it is part of the key.
        let challenged: Vec<_> = checked
            .iter()
            .map(|c| {
                (
                    c.verified,
                    c.challenge.as_ref().map(|ch| (ch.stance, &ch.reason)),
                )
            })
            .collect();
        let challenged = serde_json::to_string(&challenged).ok()?;
        Some(crate::util::sha256_hex(
            format!(
                "fanscan reduce v{GROUP_FORMAT_VERSION}\nagent {} {}\nprovider {}\nmodel {}\n{reports}\n{challenged}",
                base.agent, base.agent_hash, base.provider, base.model
            )
            .as_bytes(),
        ))
    }

    /// A stored reduction of `key`; its usage is zero (nothing was asked).
    pub(crate) fn reduced(&self, key: &str) -> Option<Reduced> {
        if !self.use_cache {
            return None;
        }
        let body: Option<String> = match self.store.with(|conn| {
            conn.query_row(
                "SELECT body FROM group_results WHERE key = ?1 AND kind = 'reduce'",
                params![key],
                |r| r.get(0),
            )
            .optional()
        }) {
            Ok(body) => body,
            Err(e) => {
                self.failed(format!("reading the reduction: {e}"));
                None
            }
        };
        let mut reduced: Reduced = serde_json::from_str(&body?).ok()?;
        reduced.usage = crate::llm::conversation::Usage::default();
        Some(reduced)
    }

    /// The stored body of `kind` under `key` (none with `--no-cache`).
    pub(crate) fn stored(&self, kind: &str, key: &str) -> Option<String> {
        if !self.use_cache {
            return None;
        }
        match self.store.with(|conn| {
            conn.query_row(
                "SELECT body FROM group_results WHERE key = ?1 AND kind = ?2",
                params![key, kind],
                |r| r.get(0),
            )
            .optional()
        }) {
            Ok(body) => body,
            Err(e) => {
                self.failed(format!("reading a stored {kind}: {e}"));
                None
            }
        }
    }

    /// Keeps `body` of `kind` under `key`; a failure is a warning.
    pub(crate) fn keep(&self, kind: &str, key: &str, body: &str) {
        if let Err(e) = self.put(kind, key, "", body) {
            self.failed(format!("storing a {kind}: {e}"));
        }
    }

    /// Keeps a reduction unless the reducer failed or was not asked (its
    /// notes say so: "failed", "counted, not written").
    pub(crate) fn keep_reduced(&self, key: &str, reduced: &Reduced) {
        if reduced
            .notes
            .iter()
            .any(|n| n.contains("failed") || n.contains("not written"))
        {
            return;
        }
        let result = serde_json::to_string(reduced)
            .map_err(|e| self.store.json_error(e))
            .and_then(|body| self.put("reduce", key, "", &body));
        if let Err(e) = result {
            self.failed(format!("storing the reduction: {e}"));
        }
    }
}

impl Journal for Session {
    fn commit(&self, report: &GroupReport) {
        if !reusable(report.status) {
            return;
        }
        let pending = relock(&self.pending).get(&report.group).cloned();
        let Some(Pending { key, hashes, base }) = pending else {
            return;
        };
        // A file changed while the agent ran: its report is not of the
        // content the key names, so it is not stored.
        let same = report.files.len() == hashes.len()
            && report
                .files
                .iter()
                .zip(&hashes)
                .all(|(f, h)| &f.sha256 == h);
        if !same {
            return;
        }
        self.keep_group(report, &key, &base);
    }
}

impl Session {
    /// Keeps `report` under `key` (none for a group of changed files) and
    /// a record of each file it audited (not those it carried over).
    fn keep_group(&self, report: &GroupReport, key: &str, base: &KeyBase) {
        if !key.is_empty() {
            let result = serde_json::to_string(report)
                .map_err(|e| self.store.json_error(e))
                .and_then(|body| self.put("group", key, &report.group, &body));
            if let Err(e) = result {
                self.failed(format!("committing group {}: {e}", report.group));
            }
        }
        for (path, hash, record) in files::records_of(report) {
            if report.carried.contains_key(&path) || hash.is_empty() {
                continue;
            }
            let slot = files::slot(base, &path);
            let result = serde_json::to_string(&record)
                .map_err(|e| self.store.json_error(e))
                .and_then(|body| self.put("file", &files::file_key(&slot, &hash), &slot, &body));
            if let Err(e) = result {
                self.failed(format!("committing the result of {path}: {e}"));
            }
        }
    }

    /// Keeps a plan group put back together after its changed files were
    /// audited ([`files::fold`]), when it ran to its own end and its files
    /// are still the content its key names.
    pub(crate) fn keep_folded(&self, report: &GroupReport, partial: &files::Partial) {
        let whole = report.files.len() == partial.hashes.len()
            && report
                .files
                .iter()
                .zip(&partial.hashes)
                .all(|(f, h)| &f.sha256 == h);
        if reusable(report.status) && whole {
            self.keep_group(report, &partial.key, &partial.base);
        }
    }
}

/// Drops the least recently used results until they take at most
/// `max_bytes`. Returns how many were dropped.
pub(crate) fn evict(store: &Store, max_bytes: u64) -> Result<usize, StoreError> {
    store.with(|conn| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let dropped = tx.execute(
            "DELETE FROM group_results WHERE key IN (
                 SELECT key FROM (
                     SELECT key, sum(bytes) OVER (ORDER BY used_at DESC, key) AS total
                     FROM group_results)
                 WHERE total > ?1)",
            params![i64::try_from(max_bytes).unwrap_or(i64::MAX)],
        )?;
        tx.commit()?;
        Ok(dropped)
    })
}

/// Reports in plan order: the stored ones and the fresh ones together.
pub(crate) fn in_plan_order(
    plan: &crate::stages::plan::Plan,
    reused: Vec<(GroupReport, Reused)>,
    fresh: Vec<GroupReport>,
) -> (Vec<GroupReport>, BTreeMap<String, Reused>) {
    let order: HashMap<&str, usize> = plan
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.id.as_str(), i))
        .collect();
    let mut marks = BTreeMap::new();
    let mut all: Vec<GroupReport> = Vec::with_capacity(reused.len() + fresh.len());
    for (report, how) in reused {
        marks.insert(report.group.clone(), how);
        all.push(report);
    }
    all.extend(fresh);
    all.sort_by_key(|r| order.get(r.group.as_str()).copied().unwrap_or(usize::MAX));
    (all, marks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::TaskFile;

    #[tokio::test]
    async fn a_lookup_after_a_panic_is_an_error_not_a_silent_rerun_of_every_group() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
        let store = Arc::new(
            Store::open(
                &dir.path().join(".fanscan/store.db"),
                crate::store::Placement::Own,
            )
            .unwrap(),
        );
        // A panic while the connection is held poisons its lock.
        let held = Arc::clone(&store);
        let panicked = std::thread::spawn(move || {
            let _conn = held.conn.lock().unwrap();
            panic!("a bug while the store was held");
        })
        .join();
        assert!(panicked.is_err());
        let session = Arc::new(Session::new(store, 1, true, Some(1000)));
        let base = KeyBase {
            agent: "auditor".into(),
            agent_hash: "h".into(),
            provider: "p".into(),
            model: "m".into(),
            rules_hash: "r".into(),
        };
        let task = AgentTask {
            group: "g1".into(),
            files: vec![TaskFile {
                path: "a.rs".into(),
                bytes: 10,
                language: None,
            }],
            focus: None,
            leads: Vec::new(),
            instructions: None,
            sample: 0,
        };
        let error = Arc::clone(&session)
            .reuse_blocking(dir.path().to_path_buf(), base, HashMap::new(), vec![task])
            .await
            .unwrap_err();
        assert!(error.is_bug(), "{error}");
        assert!(error.to_string().contains("a fanscan bug"), "{error}");
        assert!(session.failures().is_empty(), "not a note: an error");
    }
}
