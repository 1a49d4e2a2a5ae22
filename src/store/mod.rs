//! The run store: one SQLite database per repository (by default
//! `.fanscan/store.db`) that is at once the cache, the journal and the
//! history of scans.
//!
//! Takes the run's settings and cache keys and each finished
//! [`GroupReport`]; gives the groups whose result is already known
//! ([`cache`]), a journal that commits every reviewed group the moment it
//! finishes, and the runs with their findings ([`runs`]) for "since the
//! last complete run", `fanscan history` and `fanscan diff`. Opening (with
//! its wait for another process) and the cache's lookups run off the async
//! threads.
//!
//! SQLite through rusqlite with its bundled library, WAL, a busy timeout and
//! short `BEGIN IMMEDIATE` transactions, so two processes (two CI jobs,
//! shards on one volume) can share one store. The schema carries an
//! `application_id` (a file of another program is refused, not altered) and
//! a `user_version` that the migrations below bring up to date.
//!
//! [`GroupReport`]: crate::agents::GroupReport

pub(crate) mod batches;
pub(crate) mod cache;
pub(crate) mod files;
pub(crate) mod runs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::agents::{AgentDefinition, AgentStatus, AgentTask, GroupReport};
use crate::config::Settings;
use crate::report::{Report, RunInfo};
use crate::stages::fanout::Journal;
use crate::stages::reduce::Reduced;
use crate::stages::verify::Checked;
use cache::{Session, Split};

/// `PRAGMA application_id` of a fanscan store ("FSCN").
const APPLICATION_ID: i64 = 0x4653_434E;

/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema, one migration per version; `user_version` is the number of
/// migrations applied. Never edit a shipped migration: add one.
const MIGRATIONS: &[&str] = &[
    // 1: group results (the cache and the journal), runs and their findings.
    "CREATE TABLE group_results (
         key TEXT PRIMARY KEY,
         kind TEXT NOT NULL,
         group_id TEXT NOT NULL,
         run_id INTEGER,
         body TEXT NOT NULL,
         bytes INTEGER NOT NULL,
         created_at TEXT NOT NULL,
         used_at INTEGER NOT NULL
     );
     CREATE INDEX group_results_used ON group_results(used_at);
     CREATE TABLE runs (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         started_at TEXT NOT NULL,
         ended_at TEXT,
         complete INTEGER NOT NULL DEFAULT 0,
         provider TEXT NOT NULL,
         model TEXT NOT NULL,
         manifest TEXT NOT NULL,
         settings TEXT NOT NULL,
         planned_files INTEGER NOT NULL DEFAULT 0,
         reviewed_files INTEGER NOT NULL DEFAULT 0,
         groups INTEGER NOT NULL DEFAULT 0,
         cached_groups INTEGER NOT NULL DEFAULT 0,
         cost_usd REAL
     );
     CREATE TABLE run_findings (
         run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
         fingerprint TEXT NOT NULL,
         severity TEXT NOT NULL,
         path TEXT NOT NULL,
         line INTEGER NOT NULL,
         title TEXT NOT NULL,
         PRIMARY KEY (run_id, fingerprint)
     );
     CREATE TABLE run_files (
         run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
         path TEXT NOT NULL,
         PRIMARY KEY (run_id, path)
     );",
    // 2: results per file (kind 'file', group_id is the file's slot), and
    // how many reviewed files a run carried over instead of auditing.
    "CREATE INDEX group_results_slot ON group_results(kind, group_id);
     ALTER TABLE runs ADD COLUMN carried_files INTEGER NOT NULL DEFAULT 0;",
    // 3: `--batch`: each batch created (state 'open' until its results
    // are read) and the requests sent in it, with their answers.
    "CREATE TABLE batches (
         provider TEXT NOT NULL,
         batch_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         state TEXT NOT NULL,
         created_at INTEGER NOT NULL,
         PRIMARY KEY (provider, batch_id)
     );
     CREATE TABLE batch_requests (
         provider TEXT NOT NULL,
         custom_id TEXT NOT NULL,
         batch_id TEXT NOT NULL,
         answer BLOB,
         updated_at INTEGER NOT NULL,
         PRIMARY KEY (provider, custom_id)
     );",
];

/// A store that cannot be used. `Unavailable` is a warning (the run goes
/// on without the store); every other kind stops the run (exit code 2, or
/// 1 for a fanscan bug: [`StoreError::is_bug`]).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be created or written (a read-only checkout).
    #[error(
        "{path}: the run store cannot be written ({reason}); this run has no cache, resume or history (pass --store PATH to put it elsewhere, or --no-store)"
    )]
    Unavailable { path: String, reason: String },
    #[error(
        "{path}: not a fanscan run store ({reason}); move the file away, or pass --store PATH for another one, or --no-store"
    )]
    Foreign { path: String, reason: String },
    #[error(
        "{path}: the run store has schema version {found}, newer than this fanscan knows ({known}); upgrade fanscan or pass --store PATH for another store"
    )]
    Newer {
        path: String,
        found: i64,
        known: usize,
    },
    #[error("{path}: run store error: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{path}: a stored result cannot be encoded or decoded: {source}")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: the store's lock was poisoned by a panic (a fanscan bug, please report it)")]
    Poisoned { path: String },
    /// Opening the store panicked: a fanscan bug (exit code 1).
    #[error("{path}: opening the run store panicked ({detail}): a fanscan bug, please report it")]
    OpenPanicked { path: String, detail: String },
    /// Looking up stored results panicked: a fanscan bug (exit code 1).
    #[error(
        "{path}: looking up stored results panicked ({detail}): a fanscan bug, please report it; nothing was sent to a model (--no-store runs without the store)"
    )]
    Panicked { path: String, detail: String },
    #[error("{path}: no run {id} in the store; `fanscan history` lists the runs")]
    NoRun { path: String, id: i64 },
    #[error(
        "{path}: not a fanscan JSON report ({reason}); give two run ids (see `fanscan history`) or two files written by `fanscan scan --format json`"
    )]
    NotAReport { path: String, reason: String },
}

/// `fanscan history`: the runs of the store at `path`, as a table.
pub fn history_text(path: &Path) -> Result<String, StoreError> {
    let store = Store::open_existing(path)?;
    Ok(runs::render_history(&runs::history(&store)?))
}

/// `fanscan diff A B`: new and fixed findings from A to B, where each is a
/// run id of the store at `store` or a JSON report file.
pub fn diff_text(a: &str, b: &str, store: &Path) -> Result<String, StoreError> {
    let mut opened: Option<Store> = None;
    let mut side = |arg: &str| -> Result<crate::report::since::RunFindings, StoreError> {
        if let Ok(id) = arg.trim().parse::<i64>() {
            let store = match opened.take() {
                Some(s) => s,
                None => Store::open_existing(store)?,
            };
            let found = runs::findings_of(&store, id);
            opened = Some(store);
            return found;
        }
        let not_report = |reason: String| StoreError::NotAReport {
            path: arg.to_string(),
            reason,
        };
        let text = std::fs::read_to_string(arg).map_err(|e| not_report(e.to_string()))?;
        let report: Report = serde_json::from_str(&text).map_err(|e| not_report(e.to_string()))?;
        Ok(crate::report::since::RunFindings::of(&report))
    };
    let before = side(a)?;
    let after = side(b)?;
    let diff = crate::report::since::compare(&before, &after);
    Ok(crate::report::since::render_text(&diff, a, b))
}

/// An open store.
pub(crate) struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// Where a store lives, which decides whether fanscan may write a
/// `.gitignore` beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// `ROOT/.fanscan/store.db`, the default: fanscan's own directory, where
    /// a `.gitignore` with anchored lines keeps the store out of `git
    /// status` and out of the next scan's inventory.
    Own,
    /// A path the user chose (`--store`), or a store only read (`history`,
    /// `diff`): nothing is written beside it. A `.gitignore` in a directory
    /// the user picked would apply to everything below it.
    Chosen,
}

impl Placement {
    /// The placement of the settings' store at `path`.
    fn of(settings: &Settings, path: &Path) -> Self {
        if path == default_path(&settings.root) {
            Self::Own
        } else {
            Self::Chosen
        }
    }
}

/// What every key of a run shares.
#[derive(Clone, Debug)]
pub(crate) struct KeyBase {
    pub(crate) agent: String,
    pub(crate) agent_hash: String,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) rules_hash: String,
}

impl KeyBase {
    /// The base of sample `sample` of a group: the first's is this one
    /// (a run with one sample keys as ever), a further one's names it.
    pub(crate) fn for_sample(&self, sample: u32) -> KeyBase {
        let mut base = self.clone();
        if sample > 0 {
            base.rules_hash = format!("{} sample {sample}", base.rules_hash);
        }
        base
    }
}

/// Whether a stored result may be reused. What reviewed nothing is asked
/// again: a blocked group too, since a provider's filter changes and a
/// `fallback_model` may be set since.
pub(crate) fn reusable(status: AgentStatus) -> bool {
    match status {
        AgentStatus::Complete | AgentStatus::MaxRounds => true,
        AgentStatus::WrappedUp
        | AgentStatus::Failed
        | AgentStatus::Unreviewed
        | AgentStatus::Interrupted
        | AgentStatus::Blocked => false,
    }
}

/// The last reduction of a reducer and model, and a hash of each group
/// report it was made of.
#[derive(serde::Serialize, serde::Deserialize)]
struct LastReduced {
    groups: std::collections::BTreeMap<String, String>,
    reduced: Reduced,
}

/// A group report's hash, without where its results came from.
fn report_hash(r: &GroupReport) -> String {
    let bare = GroupReport {
        carried: std::collections::BTreeMap::new(),
        ..r.clone()
    };
    crate::util::sha256_hex(serde_json::to_string(&bare).unwrap_or_default().as_bytes())
}

/// Now, in milliseconds: the clock of least-recently-used eviction.
pub(crate) fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// The default store of the repository at `root`.
fn default_path(root: &Path) -> PathBuf {
    root.join(OWN_DIR).join(OWN_FILE)
}

/// fanscan's own directory under the root, and the store's name in it.
const OWN_DIR: &str = ".fanscan";
const OWN_FILE: &str = "store.db";

impl Store {
    /// Opens (creating if need be) the store at `path`. In fanscan's own
    /// directory ([`Placement::Own`]) a `.gitignore` is written beside it
    /// that ignores the store's files and itself.
    pub(crate) fn open(path: &Path, placement: Placement) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let unavailable = |reason: String| StoreError::Unavailable {
            path: shown.clone(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| unavailable(e.to_string()))?;
            match placement {
                Placement::Own => write_gitignore(dir).map_err(|e| unavailable(e.to_string()))?,
                Placement::Chosen => {}
            }
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| classify(&shown, e))?;
        let store = Self {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        };
        // Switching a new file to WAL takes a lock that SQLite's busy
        // handler does not wait for: two processes creating one store at
        // once (two CI jobs) retry here instead of failing.
        let mut waited = Duration::ZERO;
        loop {
            match store.prepare() {
                Err(StoreError::Sqlite { source, .. })
                    if waited < BUSY_TIMEOUT
                        && matches!(
                            source.sqlite_error_code(),
                            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                        ) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                    waited += Duration::from_millis(20);
                }
                other => return other.map(|()| store),
            }
        }
    }

    /// Opens an existing store for reading (`history`, `diff`).
    pub(crate) fn open_existing(path: &Path) -> Result<Self, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Unavailable {
                path: path.display().to_string(),
                reason: "no such file: no scan has used this store yet".into(),
            });
        }
        Self::open(path, Placement::Chosen)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Busy timeout, WAL, the identity check and the migrations.
    fn prepare(&self) -> Result<(), StoreError> {
        let shown = self.path.display().to_string();
        self.with(|conn| {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            conn.pragma_update(None, "foreign_keys", true)?;
            Ok(())
        })?;
        // The first statement that reads the file tells a corrupted file
        // from a database; whose database it is, the migration's
        // transaction tells (below), so that a store another process is
        // creating this moment is not taken for a foreign file.
        self.with(|conn| conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)))
            .map_err(|e| match e {
                StoreError::Sqlite { source, .. } => classify(&shown, source),
                other => other,
            })?;
        self.with(|conn| {
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            tracing::debug!("run store journal mode: {mode}");
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            Ok(())
        })
        .map_err(|e| match e {
            StoreError::Sqlite { source, .. } => classify(&shown, source),
            other => other,
        })?;
        self.migrate()
    }

    /// Brings the schema up to date in one immediate transaction, so two
    /// processes opening a new store at once do not both create it.
    fn migrate(&self) -> Result<(), StoreError> {
        let shown = self.path.display().to_string();
        // Read and decided in one immediate transaction: two processes
        // opening a new store at once see it either empty or whole.
        let found = self.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let app_id: i64 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
            let tables: i64 =
                tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if app_id != APPLICATION_ID && (app_id != 0 || tables > 0) {
                return Ok(Err((app_id, tables)));
            }
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version >= 0 && (version as usize) < MIGRATIONS.len() {
                for (index, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                    tx.execute_batch(sql)?;
                    tx.pragma_update(None, "user_version", (index + 1) as i64)?;
                }
                tx.pragma_update(None, "application_id", APPLICATION_ID)?;
            }
            tx.commit()?;
            Ok(Ok(version))
        });
        let found = found.map_err(|e| match e {
            StoreError::Sqlite { source, .. } => classify(&shown, source),
            other => other,
        })?;
        let found = match found {
            Ok(version) => version,
            Err((app_id, tables)) => {
                return Err(StoreError::Foreign {
                    path: shown,
                    reason: format!(
                        "its application_id is {app_id:#x}, and it holds {tables} other tables"
                    ),
                });
            }
        };
        if found < 0 || found as usize > MIGRATIONS.len() {
            return Err(StoreError::Newer {
                path: shown,
                found,
                known: MIGRATIONS.len(),
            });
        }
        Ok(())
    }

    /// Runs `f` on the connection; short, one statement or transaction.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn.lock().map_err(|_| StoreError::Poisoned {
            path: self.path.display().to_string(),
        })?;
        f(&mut conn).map_err(|source| StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        })
    }

    pub(crate) fn json_error(&self, source: serde_json::Error) -> StoreError {
        StoreError::Json {
            path: self.path.display().to_string(),
            source,
        }
    }
}

/// Opens the store at `path`. A store that cannot be written (a
/// read-only checkout) is one warning, returned for the report's notes,
/// and a run without the store; a foreign or corrupted file is an error.
fn open_at(
    path: &Path,
    placement: Placement,
) -> Result<(Option<Arc<Store>>, Option<String>), StoreError> {
    match Store::open(path, placement) {
        Ok(store) => Ok((Some(Arc::new(store)), None)),
        Err(e @ StoreError::Unavailable { .. }) => {
            let warning = e.to_string();
            tracing::warn!("{warning}");
            Ok((None, Some(warning)))
        }
        Err(e) => Err(e),
    }
}

/// What the cache keys of a run share beside the agent: the provider
/// (by name), the model an agent without its own runs on, and the rule
/// set's hash.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) rules_hash: String,
}

impl Keys {
    /// What the cache keys of groups audited by `d` share.
    fn base(&self, d: &AgentDefinition) -> KeyBase {
        KeyBase {
            agent: d.name.clone(),
            agent_hash: d.hash.clone(),
            provider: self.provider.clone(),
            model: d.model.clone().unwrap_or_else(|| self.model.clone()),
            rules_hash: self.rules_hash.clone(),
        }
    }
}

/// The run store as a scan uses it: its run row, the cache session and
/// the keys' shared parts.
pub(crate) struct ScanStore {
    session: Arc<Session>,
    keys: Keys,
    auditor: KeyBase,
    reducer: KeyBase,
    max_bytes: u64,
}

impl ScanStore {
    /// Opens the settings' store and starts the run's row (after
    /// planning: the manifest names the plan), off the async threads (a
    /// store another process is creating is waited for). Without a store:
    /// none, and the warning why, when it could not be written.
    pub(crate) async fn open(
        s: &Settings,
        keys: Keys,
        auditor: &AgentDefinition,
        reducer: &AgentDefinition,
        run: &RunInfo,
    ) -> Result<(Option<Self>, Vec<String>), StoreError> {
        let Some(path) = s.store.clone() else {
            return Ok((None, Vec::new()));
        };
        let placement = Placement::of(s, &path);
        let settings = serde_json::json!({
            "agent": s.agent, "group_tokens": s.group_tokens, "planner": format!("{:?}", s.planner),
            "include": s.include, "exclude": s.exclude, "hidden": s.hidden,
            "max_file_bytes": s.max_file_bytes, "include_vendored": s.include_vendored,
            "cache": s.cache,
        });
        let run = run.clone();
        let shown = path.display().to_string();
        let opened = tokio::task::spawn_blocking(move || {
            let (store, warning) = open_at(&path, placement)?;
            let started = match store {
                Some(store) => {
                    let run_id = runs::begin(
                        &store,
                        &run.started_at,
                        &run.provider,
                        &run.model,
                        &run.manifest,
                        &settings,
                    )?;
                    Some((store, run_id))
                }
                None => None,
            };
            Ok::<_, StoreError>((started, warning))
        })
        .await
        .map_err(|e| StoreError::OpenPanicked {
            path: shown,
            detail: e.to_string(),
        })?;
        let (started, warning) = opened?;
        let started = started.map(|(store, run_id)| Self {
            session: Arc::new(Session::new(
                store,
                run_id,
                s.cache,
                // Samples of a group are kept apart: no file is carried
                // from one into another.
                (s.samples <= 1).then_some(s.group_tokens),
            )),
            auditor: keys.base(auditor),
            reducer: keys.base(reducer),
            keys,
            max_bytes: s.store_max_bytes,
        });
        Ok((started, warning.into_iter().collect()))
    }

    /// The key bases of the groups a plan gives their own agent, by group.
    fn key_bases(
        &self,
        specialists: &HashMap<String, Arc<AgentDefinition>>,
    ) -> HashMap<String, KeyBase> {
        specialists
            .iter()
            .map(|(group, d)| (group.clone(), self.keys.base(d)))
            .collect()
    }

    /// The journal the fan-out commits each finished group to.
    /// Where a `--batch` run keeps its batch ids and answers.
    pub(crate) fn ledger(&self) -> Arc<dyn crate::llm::providers::batch::Ledger> {
        Arc::clone(&self.session.store) as Arc<dyn crate::llm::providers::batch::Ledger>
    }

    pub(crate) fn journal(&self) -> Arc<dyn Journal> {
        Arc::clone(&self.session) as Arc<dyn Journal>
    }

    /// A stored reduction of exactly these reports.
    pub(crate) fn reduced(&self, reports: &[GroupReport], checked: &[Checked]) -> Option<Reduced> {
        Session::reducer_key(&self.reducer, reports, checked).and_then(|k| self.session.reduced(&k))
    }

    /// What the keys of the skeptic `d`'s answers share.
    pub(crate) fn skeptic_base(&self, d: &AgentDefinition) -> KeyBase {
        self.keys.base(d)
    }

    /// A stored skeptic's answer of `key`.
    pub(crate) fn challenge(&self, key: &str) -> Option<String> {
        self.session.stored("skeptic", key)
    }

    /// Keeps a skeptic's answer.
    pub(crate) fn keep_challenge(&self, key: &str, body: &str) {
        self.session.keep("skeptic", key, body);
    }

    /// Keeps the reduction of these reports (and of what the skeptic said
    /// of their findings).
    pub(crate) fn keep_reduced(
        &self,
        reports: &[GroupReport],
        checked: &[Checked],
        reduced: &Reduced,
    ) {
        if let Some(key) = Session::reducer_key(&self.reducer, reports, checked) {
            self.session.keep_reduced(&key, reduced);
        }
    }

    /// The groups whose reports differ from those the last stored
    /// reduction (of this reducer and model) was made of, and that
    /// reduction: when at most a quarter of the groups changed, a re-run
    /// updates it instead of reducing everything again. None with
    /// `--full`, without one, or when nothing or too much changed.
    pub(crate) fn changed_since_reduced(
        &self,
        reports: &[GroupReport],
    ) -> Option<(std::collections::BTreeSet<String>, Reduced)> {
        let body = self
            .session
            .stored("reduce-last", &self.last_reduced_key())?;
        let last: LastReduced = serde_json::from_str(&body).ok()?;
        let changed: std::collections::BTreeSet<String> = reports
            .iter()
            .filter(|r| last.groups.get(&r.group) != Some(&report_hash(r)))
            .map(|r| r.group.clone())
            .collect();
        let few = !changed.is_empty() && changed.len() * 4 <= reports.len();
        few.then_some((changed, last.reduced))
    }

    /// Keeps `reduced` as the last reduction of these reports.
    pub(crate) fn keep_last_reduced(&self, reports: &[GroupReport], reduced: &Reduced) {
        if reduced
            .notes
            .iter()
            .any(|n| n.contains("failed") || n.contains("not written"))
        {
            return;
        }
        let last = LastReduced {
            groups: reports
                .iter()
                .map(|r| (r.group.clone(), report_hash(r)))
                .collect(),
            reduced: reduced.clone(),
        };
        if let Ok(body) = serde_json::to_string(&last) {
            self.session
                .keep("reduce-last", &self.last_reduced_key(), &body);
        }
    }

    fn last_reduced_key(&self) -> String {
        let b = &self.reducer;
        crate::util::sha256_hex(
            format!(
                "fanscan reduce-last v{}\nagent {} {}\nprovider {}\nmodel {}\n",
                cache::GROUP_FORMAT_VERSION,
                b.agent,
                b.agent_hash,
                b.provider,
                b.model
            )
            .as_bytes(),
        )
    }

    /// The auditors' keys after the brief went into their prompt.
    pub(crate) fn rekey_auditor(&mut self, auditor: &AgentDefinition) {
        self.auditor = self.keys.base(auditor);
    }

    /// Ends the run's row, sets the report's run id and "since the last
    /// complete run", and keeps the store within its bound.
    pub(crate) fn finish(&self, report: &mut Report) {
        let store = &self.session.store;
        report.run_id = Some(self.session.run_id);
        let recorded = if report.shard.is_some() {
            // A shard's part is not a run of the repository: never "the
            // last complete run" that the next one is compared with.
            runs::end_part(store, self.session.run_id, report).map(|()| None)
        } else {
            runs::finish(store, self.session.run_id, report)
        };
        match recorded {
            Ok(since) => report.since_last_run = since,
            Err(e) => report
                .notes
                .push(format!("the run could not be recorded in the store: {e}")),
        }
        if self.max_bytes > 0
            && let Err(e) = cache::evict(store, self.max_bytes)
        {
            report.notes.push(format!(
                "the store could not be trimmed to --store-max-mb: {e}"
            ));
        }
        report.notes.extend(
            self.session
                .failures()
                .into_iter()
                .map(|f| format!("run store: {f}")),
        );
    }
}

impl StoreError {
    /// Whether it is a fanscan bug (a panic), not the store's or the
    /// user's: exit code 1.
    pub fn is_bug(&self) -> bool {
        matches!(
            self,
            Self::Poisoned { .. } | Self::Panicked { .. } | Self::OpenPanicked { .. }
        )
    }
}

/// The store's part of a scan before the fan-out: the run's row (none
/// without a store), the warning why when it could not be written, and the
/// plan's tasks split into stored results and tasks to run.
pub(crate) struct Prepared {
    pub(crate) run: Option<ScanStore>,
    pub(crate) warnings: Vec<String>,
    pub(crate) split: Split,
}

/// Splits `tasks` (files under `root`) into stored results and tasks to
/// run; a group the plan gives its own agent (`specialists`) is cached
/// under that agent.
pub(crate) async fn prepare(
    root: &Path,
    run: Option<ScanStore>,
    warnings: Vec<String>,
    specialists: &HashMap<String, Arc<AgentDefinition>>,
    tasks: Vec<AgentTask>,
) -> Result<Prepared, StoreError> {
    let keys = run
        .as_ref()
        .map(|r| r.key_bases(specialists))
        .unwrap_or_default();
    let split = split(run.as_ref(), root, tasks, keys).await?;
    Ok(Prepared {
        run,
        warnings,
        split,
    })
}

/// Splits `tasks` into stored results and tasks to run (all to run
/// without a store). Hashes every file, off the async threads; a panic
/// there is an error (a fanscan bug), never a silent re-run.
pub(crate) async fn split(
    run: Option<&ScanStore>,
    root: &Path,
    tasks: Vec<AgentTask>,
    by_group: HashMap<String, KeyBase>,
) -> Result<Split, StoreError> {
    let Some(run) = run else {
        return Ok(Split {
            reused: Vec::new(),
            fresh: tasks,
            partials: Vec::new(),
            origins: HashMap::new(),
        });
    };
    Arc::clone(&run.session)
        .reuse_blocking(root.to_path_buf(), run.auditor.clone(), by_group, tasks)
        .await
}

/// The fresh reports with each partly changed group put back together
/// ([`files::fold`]), the folded groups kept in the store (off the async
/// threads), and a note of the earlier findings whose evidence is gone.
pub(crate) async fn fold(
    run: Option<&ScanStore>,
    partials: Vec<files::Partial>,
    fresh: Vec<GroupReport>,
) -> (Vec<GroupReport>, Vec<String>) {
    if partials.is_empty() {
        return (fresh, Vec::new());
    }
    let fixed: usize = partials.iter().map(|p| p.fixed).sum();
    let carried: usize = partials.iter().map(|p| p.carried.len()).sum();
    let changed: usize = partials.iter().map(|p| p.changed.len()).sum();
    let mut notes = vec![format!(
        "{changed} changed files of {} groups were audited again in groups of changed files; {carried} unchanged files of those groups were carried over",
        partials.iter().filter(|p| !p.changed.is_empty()).count()
    )];
    if fixed > 0 {
        notes.push(format!(
            "{fixed} earlier findings on changed files left: their evidence is no longer there (fixed)"
        ));
    }
    let folded = files::fold(partials, fresh);
    let session = run.map(|r| Arc::clone(&r.session));
    let kept = tokio::task::spawn_blocking(move || {
        if let Some(session) = session {
            for (report, partial) in &folded {
                if let Some(partial) = partial {
                    session.keep_folded(report, partial);
                }
            }
        }
        folded
    })
    .await;
    match kept {
        Ok(folded) => (folded.into_iter().map(|(r, _)| r).collect(), notes),
        Err(e) => {
            notes.push(format!(
                "keeping the re-assembled groups failed ({e}): a fanscan bug, please report it"
            ));
            (Vec::new(), notes)
        }
    }
}

/// A SQLite error on opening: read-only and cannot-open are warnings; a
/// file that is not a database is a foreign file.
fn classify(path: &str, error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::Unavailable {
                path: path.to_string(),
                reason: error.to_string(),
            }
        }
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Foreign {
            path: path.to_string(),
            reason: format!("{error}: corrupted, or another program's file"),
        },
        _ => StoreError::Sqlite {
            path: path.to_string(),
            source: error,
        },
    }
}

/// What fanscan writes to `.fanscan/.gitignore`. Every line is anchored
/// (a leading `/`), so it matches only the store's own files in that
/// directory and never a file deeper down or of another name; `/.gitignore`
/// keeps this file itself out of `git status` and out of the next scan (the
/// first scan planned before it existed, so a plan with it would differ).
const GITIGNORE: &str = "# Written by fanscan: the run store is local state, not source.\n/.gitignore\n/store.db\n/store.db-*\n";

/// What fanscan before anchored patterns wrote there: it is rewritten.
const GITIGNORE_UNANCHORED: &str = "# Written by fanscan: the run store is local state, not source.\n.gitignore\nstore.db\nstore.db-*\n";

/// Writes `dir/.gitignore` (`dir` is fanscan's own `.fanscan/`) ignoring
/// the store's files and itself, as ruff does for its cache, unless the
/// directory already has one of its own.
fn write_gitignore(dir: &Path) -> std::io::Result<()> {
    let ignore = dir.join(".gitignore");
    match std::fs::read(&ignore) {
        Ok(text) if text != GITIGNORE_UNANCHORED.as_bytes() => return Ok(()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // Something is there that is not ours to replace.
        Err(e) => {
            tracing::debug!("{}: left as it is: {e}", ignore.display());
            return Ok(());
        }
    }
    std::fs::write(ignore, GITIGNORE)
}

impl crate::stages::brief::Stored for ScanStore {
    fn brief(&self, key: &str) -> Option<crate::stages::brief::Kept> {
        // A body that no longer reads (another version's) is written anew.
        serde_json::from_str(&self.session.stored("brief", key)?).ok()
    }

    fn keep_brief(&self, key: &str, kept: &crate::stages::brief::Kept) {
        if let Ok(body) = serde_json::to_string(kept) {
            self.session.keep("brief", key, &body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_is_migrated_and_ignored_by_git() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".fanscan/store.db");
        let store = Store::open(&path, Placement::Own).unwrap();
        let version: i64 = store
            .with(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let ignore = std::fs::read_to_string(dir.path().join(".fanscan/.gitignore")).unwrap();
        assert_eq!(ignore, GITIGNORE);
        drop(store);
        // Opening again changes nothing.
        Store::open(&path, Placement::Own).unwrap();
    }

    #[test]
    fn the_gitignore_is_anchored_and_written_only_in_fanscans_own_directory() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join(".fanscan/store.db");
        Store::open(&own, Placement::Own).unwrap();
        let text = std::fs::read_to_string(dir.path().join(".fanscan/.gitignore")).unwrap();
        let patterns: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(patterns, vec!["/.gitignore", "/store.db", "/store.db-*"]);
        // Git reads it so: the store's files in that directory, not a
        // `.gitignore` or `store.db` deeper down.
        let mut builder = ignore::gitignore::GitignoreBuilder::new(dir.path().join(".fanscan"));
        assert!(
            builder
                .add(dir.path().join(".fanscan/.gitignore"))
                .is_none()
        );
        let matcher = builder.build().unwrap();
        for (path, ignored) in [
            (".fanscan/store.db", true),
            (".fanscan/store.db-wal", true),
            (".fanscan/.gitignore", true),
            (".fanscan/agents/.gitignore", false),
            (".fanscan/agents/store.db", false),
            (".fanscan/baseline.json", false),
        ] {
            let matched = matcher.matched(dir.path().join(path), false).is_ignore();
            assert_eq!(matched, ignored, "{path}");
        }

        // A store the user placed: nothing beside it.
        let audits = dir.path().join("audits");
        Store::open(&audits.join("app.db"), Placement::Chosen).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&audits)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(names.iter().all(|n| n.starts_with("app.db")), "{names:?}");
    }

    #[test]
    fn a_users_gitignore_is_kept_and_an_unanchored_one_of_ours_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let ignore = dir.path().join(".fanscan/.gitignore");
        std::fs::create_dir_all(ignore.parent().unwrap()).unwrap();
        std::fs::write(&ignore, "mine\n").unwrap();
        Store::open(&dir.path().join(".fanscan/store.db"), Placement::Own).unwrap();
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "mine\n");

        let dir = tempfile::tempdir().unwrap();
        let ignore = dir.path().join(".fanscan/.gitignore");
        std::fs::create_dir_all(ignore.parent().unwrap()).unwrap();
        std::fs::write(&ignore, GITIGNORE_UNANCHORED).unwrap();
        Store::open(&dir.path().join(".fanscan/store.db"), Placement::Own).unwrap();
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), GITIGNORE);
    }

    #[test]
    fn only_the_default_store_is_fanscans_own() {
        let root = tempfile::tempdir().unwrap();
        let settings = |store: Option<PathBuf>| {
            let scan = crate::config::ScanArgs {
                store,
                ..crate::config::ScanArgs::default()
            };
            Settings::resolve(
                root.path(),
                &crate::config::ProviderArgs::default(),
                &scan,
                None,
                &|_| None,
            )
            .unwrap()
        };
        let default = settings(None);
        let path = default.store.clone().unwrap();
        assert_eq!(Placement::of(&default, &path), Placement::Own);
        let chosen = settings(Some(root.path().join("elsewhere/app.db")));
        let path = chosen.store.clone().unwrap();
        assert_eq!(Placement::of(&chosen, &path), Placement::Chosen);
    }

    #[test]
    fn a_foreign_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        drop(conn);
        let error = Store::open(&path, Placement::Chosen).unwrap_err();
        assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
    }

    #[test]
    fn garbage_is_refused_as_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let error = Store::open(&path, Placement::Chosen).unwrap_err();
        assert!(matches!(error, StoreError::Foreign { .. }), "{error}");
        assert!(error.to_string().contains("--no-store"));
    }
}
