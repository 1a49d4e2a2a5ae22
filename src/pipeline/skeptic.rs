//! The skeptic stage: after verification, a `skeptic` agent tries to
//! refute the findings that would gate.
//!
//! Takes the checked findings; gives them back with what the skeptic said
//! ([`Checked::challenge`]) and the run's notes on the stage. Each verified
//! finding at or above `--challenge` (default: `--fail-on`), and each
//! located claim at or above it, is put to the skeptic: the findings of one
//! file, a few per call, in a fresh context with the code around each
//! preloaded, through the one agent loop ([`Loop`]) and the provider's
//! structured output ([`verdicts_output`]). A located claim the skeptic
//! confirms becomes verified, its evidence the file's text at the cited
//! lines. Every answer the skeptic gave is kept in the run store by
//! finding fingerprint, the files read and their content, agent and model,
//! so that an unchanged re-scan asks nothing: a verdict (with a confidence
//! or without, a refutation counted as uncertain included), and an answer
//! that is no usable verdict (a findings list, a broken or missing entry:
//! `no_verdict`, the finding keeps its place). What stands for an answer
//! of a call that failed (a provider error, a stop) is not kept, and is
//! asked again. The calls count in the run's budget and progress
//! like any agent's; when the run is stopped (a budget, Ctrl-C), the
//! findings not yet challenged stay as they are, and the notes say so.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agents::AgentStatus;
use crate::agents::router::{ReadOnlyTools, ToolRouter};
use crate::agents::turns::{Finish, Loop, Reader, Start};
use crate::agents::{AgentDefinition, Harness, UnknownAgent};
use crate::engine::rules::RuleSet;
use crate::engine::sources::{Files, SourceTable};
use crate::llm::budget::Spend;
use crate::llm::conversation::{ChallengeFact, FileRead};
use crate::llm::events::EventSink;
use crate::model::challenge::{
    Answer, Challenge, NoVerdict, Stance, check, read_answer, verdicts_output,
};
use crate::model::findings::{Finding, Origin, Severity};
use crate::pipeline::context::Ui;
use crate::stages::verify::Checked;
use crate::store::ScanStore;
use crate::tools::ToolContext;
use crate::util::count;

/// The agent's name.
pub(crate) const SKEPTIC: &str = "skeptic";

/// Most findings put to the skeptic in one call.
const PER_CALL: usize = 6;

/// Most findings of one file it is asked about: the most severe first,
/// then in line order. A file of thousands of findings fails its gate
/// whatever is refuted, and asking about each would cost thousands of
/// calls; the findings past it stay as verification left them (in the
/// gate), and a note says how many of which files.
const MOST_PER_FILE: usize = 60;

/// Lines shown before and after each finding's line.
const BEFORE: usize = 40;
const AFTER: usize = 15;

/// Bumped whenever a stored answer would mean something else.
/// 2: every verdict is kept, also one without a confidence and a
/// refutation counted as uncertain (1 kept only those with a confidence).
/// 3: an answer in full that is no verdict is kept too, as `no_verdict`.
const FORMAT_VERSION: u32 = 3;

/// One finding as the skeptic is asked about it.
#[derive(Clone, Debug)]
struct Target {
    fingerprint: String,
    /// The finding, with the located text as its evidence for a located
    /// claim.
    finding: Finding,
    located: bool,
    /// The indices of the checked findings it stands for.
    indices: Vec<usize>,
}

/// A stored answer: the challenge and the files it rests on, with their
/// content hashes (a changed file makes it stale).
#[derive(Serialize, Deserialize)]
struct Stored {
    challenge: Challenge,
    files: Vec<(String, String)>,
}

/// What the stage gives: the findings, and notes for the report.
pub(crate) struct Challenged {
    pub(crate) checked: Vec<Checked>,
    pub(crate) notes: Vec<String>,
}

/// The skeptic as the run sets it up.
pub(crate) struct Skeptic<'a> {
    /// The agent, or why there is none (the stage notes it and skips).
    pub(crate) definition: Result<&'a AgentDefinition, UnknownAgent>,
    /// The run's provider, output cap and `--jobs` (calls in flight).
    pub(crate) harness: &'a Harness,
    /// The run's rules, whose syntax trees and source-check regexes the
    /// weighing of a verdict reads (parsed and built once a run).
    pub(crate) rules: &'a RuleSet,
    /// `--challenge`'s level; none for `never` and for a shard (`fanscan
    /// merge` challenges the whole run).
    pub(crate) threshold: Option<Severity>,
    /// The samples a finding must be seen in to be challenged
    /// (`--quorum`): one seen in fewer does not gate, so it is not asked.
    pub(crate) quorum: u32,
}

/// Puts the findings at or above `--challenge` to the skeptic (see the
/// module's header). Never fails: a finding the skeptic could not judge
/// is `uncertain`, one it was never asked about stays as it was.
pub(crate) async fn challenge(
    skeptic: Skeptic<'_>,
    ui: &Ui,
    spend: &Spend,
    run: Option<&ScanStore>,
    tools: &Arc<ToolContext>,
    checked: Vec<Checked>,
    brief: Option<&crate::stages::brief::Brief>,
) -> Challenged {
    let Some(threshold) = skeptic.threshold else {
        return Challenged {
            checked,
            notes: Vec::new(),
        };
    };
    // The brief goes into its prefix as into the auditors' (and into its
    // hash, so stored verdicts of another brief are not reused).
    let definition = match skeptic.definition {
        Ok(d) => match brief {
            Some(brief) => std::borrow::Cow::Owned(crate::stages::brief::with_brief(d, brief)),
            None => std::borrow::Cow::Borrowed(d),
        },
        Err(e) => {
            return Challenged {
                checked,
                notes: vec![format!("the skeptic did not run: {e}")],
            };
        }
    };
    let stage = Stage {
        definition: &definition,
        harness: skeptic.harness,
        rules: skeptic.rules,
        ui,
        spend,
        run,
        tools,
    };
    stage.run(checked, threshold, skeptic.quorum).await
}

struct Stage<'a> {
    definition: &'a AgentDefinition,
    harness: &'a Harness,
    rules: &'a RuleSet,
    ui: &'a Ui,
    spend: &'a Spend,
    run: Option<&'a ScanStore>,
    tools: &'a Arc<ToolContext>,
}

/// What one call gave: each fingerprint's challenge (none: the call never
/// ran), and the files the skeptic was shown.
struct Called {
    answers: Option<Vec<Heard>>,
    files: BTreeSet<String>,
    complete: bool,
}

/// What one call said of one finding.
struct Heard {
    fingerprint: String,
    challenge: Challenge,
    /// Whether it is the model's answer, kept in the store: a verdict, or
    /// an answer in full that is none (a findings list, a broken or
    /// missing entry). Not kept: what stands for an answer of a call that
    /// failed or was cut short.
    kept: bool,
}

impl Stage<'_> {
    async fn run(&self, mut checked: Vec<Checked>, threshold: Severity, quorum: u32) -> Challenged {
        let mut targets = targets(&checked, threshold, quorum);
        let over = keep_most_per_file(&mut targets);
        if targets.is_empty() {
            return Challenged {
                checked,
                notes: Vec::new(),
            };
        }
        let mut answers: BTreeMap<String, Challenge> = BTreeMap::new();
        let mut fresh: Vec<&Target> = Vec::new();
        let mut hashes: BTreeMap<String, String> = BTreeMap::new();
        for target in targets.values() {
            match self.stored(target, &mut hashes) {
                Some(challenge) => {
                    answers.insert(target.fingerprint.clone(), challenge);
                }
                None => fresh.push(target),
            }
        }
        let cached = answers.len();
        // The findings of one file, a few per call.
        let mut by_path: BTreeMap<&str, Vec<&Target>> = BTreeMap::new();
        for target in fresh {
            by_path
                .entry(target.finding.path.as_str())
                .or_default()
                .push(target);
        }
        let batches: Vec<Vec<&Target>> = by_path
            .into_values()
            .flat_map(|list| {
                list.chunks(PER_CALL)
                    .map(<[&Target]>::to_vec)
                    .collect::<Vec<_>>()
            })
            .collect();
        let (events, progress) = self.ui.progress(batches.len());
        let called: Vec<(Vec<&Target>, Called)> =
            futures::stream::iter(batches.into_iter().enumerate().map(|(n, batch)| {
                let events = events.clone();
                async move {
                    let sink = EventSink::new(
                        &format!("skeptic-{}", n + 1),
                        Some(events),
                        self.ui.transcripts.is_some(),
                    );
                    let called = self.ask(&batch, &sink).await;
                    (batch, called)
                }
            }))
            .buffer_unordered(self.harness.jobs().max(1))
            .collect()
            .await;
        drop(events);
        let _ = progress.finish().await;
        let mut not_asked = 0usize;
        for (batch, called) in called {
            let Some(list) = called.answers else {
                not_asked += batch.len();
                continue;
            };
            for heard in list {
                // The model's answer is kept, a verdict (whatever its
                // confidence) or none; a failed call's is not, so the next
                // run asks again.
                if called.complete && heard.kept {
                    self.keep(
                        &heard.fingerprint,
                        &batch,
                        &heard.challenge,
                        &called.files,
                        &mut hashes,
                    );
                }
                answers.insert(heard.fingerprint, heard.challenge);
            }
        }
        for target in targets.values() {
            let Some(challenge) = answers.get(&target.fingerprint) else {
                continue;
            };
            for &i in &target.indices {
                if let Some(c) = checked.get_mut(i) {
                    apply(c, target, challenge.clone());
                }
            }
        }
        let mut notes = notes(&answers, cached, not_asked);
        notes.extend(over_note(&over));
        Challenged { checked, notes }
    }

    /// A stored answer for `target` whose files are unchanged.
    fn stored(&self, target: &Target, hashes: &mut BTreeMap<String, String>) -> Option<Challenge> {
        let run = self.run?;
        let key = self.key(target, hashes)?;
        let stored: Stored = serde_json::from_str(&run.challenge(&key)?).ok()?;
        let unchanged = stored
            .files
            .iter()
            .all(|(path, hash)| self.hash(path, hashes).as_deref() == Some(hash.as_str()));
        unchanged.then_some(stored.challenge)
    }

    /// Keeps an answer with the files it rests on: those the skeptic was
    /// shown, and those its flow's steps name (each was checked against
    /// the file's lines: a changed file could make a step wrong).
    fn keep(
        &self,
        fingerprint: &str,
        batch: &[&Target],
        challenge: &Challenge,
        files: &BTreeSet<String>,
        hashes: &mut BTreeMap<String, String>,
    ) {
        let (Some(run), Some(target)) = (
            self.run,
            batch.iter().find(|t| t.fingerprint == fingerprint),
        ) else {
            return;
        };
        let Some(key) = self.key(target, hashes) else {
            return;
        };
        let mut rests_on = files.clone();
        rests_on.extend(
            challenge
                .flow
                .iter()
                .filter_map(|step| step.rsplit_once(':').map(|(path, _)| path.to_string())),
        );
        let files: Option<Vec<(String, String)>> = rests_on
            .iter()
            .map(|p| Some((p.clone(), self.hash(p, hashes)?)))
            .collect();
        let Some(files) = files else { return };
        let stored = Stored {
            challenge: challenge.clone(),
            files,
        };
        if let Ok(body) = serde_json::to_string(&stored) {
            run.keep_challenge(&key, &body);
        }
    }

    /// The store key: the finding's fingerprint, its file's content, the
    /// agent and the model, and the engine's check's identity (a new
    /// fanscan's check answers, and weighs refutations, differently).
    fn key(&self, target: &Target, hashes: &mut BTreeMap<String, String>) -> Option<String> {
        let run = self.run?;
        let base = run.skeptic_base(self.definition);
        let hash = self.hash(&target.finding.path, hashes)?;
        // The taint rules and the skeptic's check answer for the rule engine
        // and weigh a model's refutations: a new check may answer
        // differently.
        let check = crate::engine::taint::identity();
        Some(crate::util::sha256_hex(
            format!(
                "fanscan skeptic v{FORMAT_VERSION}\nagent {} {}\nprovider {}\nmodel {}{check}\nfinding {} {}\nfile {}\0{hash}\n",
                base.agent,
                base.agent_hash,
                base.provider,
                base.model,
                target.fingerprint,
                target.located,
                target.finding.path,
            )
            .as_bytes(),
        ))
    }

    /// SHA-256 of a file's bytes, once per run; `None` when unreadable.
    fn hash(&self, path: &str, hashes: &mut BTreeMap<String, String>) -> Option<String> {
        if let Some(h) = hashes.get(path) {
            return Some(h.clone());
        }
        let real = crate::tools::paths::resolve(self.tools.root(), path).ok()?;
        let bytes = std::fs::read(&real.real).ok()?;
        let hash = crate::util::sha256_hex(&bytes);
        hashes.insert(path.to_string(), hash.clone());
        Some(hash)
    }

    /// One call: the findings of `batch` (one file) to the skeptic.
    async fn ask(&self, batch: &[&Target], events: &EventSink) -> Called {
        let control = &self.ui.control;
        if control.stop.is_cancelled() {
            return Called {
                answers: None,
                files: BTreeSet::new(),
                complete: false,
            };
        }
        let path = batch
            .first()
            .map(|t| t.finding.path.clone())
            .unwrap_or_default();
        let (preloaded, reads, seen) = self.preload(&path, batch).await;
        let ids: Vec<String> = (1..=batch.len()).map(|i| format!("f{i}")).collect();
        let text = render_task(&path, batch, &ids, &preloaded);
        let tools: Arc<dyn ReadOnlyTools> = Arc::new(self.tools.for_task([path.clone()]));
        let router = ToolRouter::new(tools, &self.definition.tools);
        let schema_ids = ids.clone();
        let schema = move |_: &[String]| verdicts_output(&schema_ids);
        events.started(SKEPTIC);
        let outcome = Loop {
            agent: self.definition,
            provider: self.harness.provider(),
            router: &router,
            events,
            wrap_up: &control.wrap_up,
            cancel: &control.cancel,
            spend: self.spend,
            group: None,
            max_output_tokens: self.harness.max_output_tokens(),
            cache_key: None,
            on_text: None,
            finish: Finish::Summary {
                request: verdict_request(&ids),
                schema: Some(&schema),
            },
        }
        .run(
            Start {
                text,
                files: vec![path.clone()],
                seen,
                reads,
                challenges: batch
                    .iter()
                    .zip(&ids)
                    .map(|(t, id)| ChallengeFact {
                        id: id.clone(),
                        path: t.finding.path.clone(),
                        line: t.finding.line,
                        rule: t.finding.rule.clone(),
                    })
                    .collect(),
                leads: Vec::new(),
                sample: 0,
            },
            &VerdictReader { ids: ids.clone() },
        )
        .await;
        events.finished(outcome.status.as_str(), batch.len());
        if outcome.counts.rounds == 0 {
            // Never called (a budget, Ctrl-C): the findings stay as they are.
            return Called {
                answers: None,
                files: BTreeSet::new(),
                complete: false,
            };
        }
        let answer = outcome.answer.unwrap_or_default();
        let failed = outcome.error.clone();
        let exists = |p: &str, line: u32| self.line_exists(p, line);
        // The batch's file, read once, if a refutation is to be weighed.
        let text = std::cell::OnceCell::new();
        // The model answered in full: what it said is kept, a verdict or
        // not. A call that failed, or was hurried by a budget or an
        // interrupt, keeps only its verdicts.
        let in_full = failed.is_none()
            && matches!(
                outcome.status,
                AgentStatus::Complete | AgentStatus::MaxRounds
            );
        // A refusal is the model's answer, and never a refutation: every
        // finding of the batch is kept with no verdict, and the refusal is
        // stored like any answer that is none (a night that changed
        // nothing asks nothing again).
        let refused = (outcome.status == AgentStatus::Blocked).then(|| {
            NoVerdict::Refused(failed.clone().unwrap_or_else(|| "the model refused".into()))
        });
        let answers = batch
            .iter()
            .zip(&ids)
            .map(|(t, id)| {
                let (challenge, kept) = match (answer.by_id.get(id), &failed) {
                    _ if let Some(refused) = &refused => (Challenge::no_verdict(refused), true),
                    (Some(Ok(said)), _) => (
                        self.against_trace(
                            &t.finding,
                            check(said.clone(), &exists),
                            self.rules,
                            &text,
                        ),
                        true,
                    ),
                    (Some(Err(why)), _) => (
                        Challenge::no_verdict(&NoVerdict::Broken(why.clone())),
                        in_full,
                    ),
                    (None, Some(error)) => (Challenge::not_asked(error), false),
                    (None, None) if !answer.parsed => {
                        (Challenge::no_verdict(&NoVerdict::NotVerdicts), in_full)
                    }
                    (None, None) => (Challenge::no_verdict(&NoVerdict::NoEntry), in_full),
                };
                Heard {
                    fingerprint: t.fingerprint.clone(),
                    challenge,
                    kept,
                }
            })
            .collect();
        Called {
            answers: Some(answers),
            files: outcome.files_read,
            complete: outcome.status.reviewed(),
        }
    }

    /// A refutation of a finding whose value the rule engine's source
    /// check traces from a source of untrusted input to its line (in its
    /// file alone) is not trusted: it counts as uncertain, with the trace
    /// in a note. A model that calls a traced flow safe has most often
    /// mislabelled its answer (a small one refutes with a reason that
    /// argues the finding), and a refutation takes the finding out of the
    /// gate; the check is a heuristic, so this keeps the finding, never
    /// drops one.
    fn against_trace(
        &self,
        finding: &Finding,
        challenge: Challenge,
        rules: &crate::engine::rules::RuleSet,
        text: &std::cell::OnceCell<Option<Files>>,
    ) -> Challenge {
        if challenge.stance != Stance::Refuted {
            return challenge;
        }
        let table = match SourceTable::bundled() {
            Ok(table) => table,
            Err(e) => {
                let mut challenge = challenge;
                challenge.notes.push(format!(
                    "the refutation was not checked against the rule engine's check on the syntax trees: {e}"
                ));
                return challenge;
            }
        };
        let files = text.get_or_init(|| {
            let lines = self.tools.numbered_lines(&finding.path).ok()?;
            Some(Files::from([(finding.path.clone(), lines)]))
        });
        let Some(files) = files.as_ref().filter(|f| f.contains_key(&finding.path)) else {
            return challenge;
        };
        let traced = crate::engine::taint::judge(
            table,
            &rules.trees,
            rules.across(),
            &finding.path,
            files,
            finding.line,
            finding.rule.as_deref(),
        );
        if traced.verdict != "confirmed" {
            return challenge;
        }
        let mut challenge = challenge;
        challenge.notes.push(format!(
            "a refutation is not trusted where the rule engine's check on the syntax trees traces the value ({}): counted as uncertain",
            traced.why
        ));
        challenge.stance = Stance::Uncertain;
        challenge.confidence = None;
        challenge
    }

    /// Whether `path` is a file of the scan with a line `line`.
    fn line_exists(&self, path: &str, line: u32) -> bool {
        let args = json!({"path": path, "offset": line, "limit": 1}).to_string();
        self.tools.call("read_file", &args).is_ok()
    }

    /// The code around each finding, as read_file shows it: one block per
    /// window (overlapping windows joined).
    async fn preload(
        &self,
        path: &str,
        batch: &[&Target],
    ) -> (Vec<String>, Vec<FileRead>, BTreeSet<String>) {
        let mut windows: Vec<(usize, usize)> = batch
            .iter()
            .map(|t| {
                let line = t.finding.line as usize;
                let end = t.finding.end_line.map_or(line, |e| e as usize).max(line);
                (line.saturating_sub(BEFORE).max(1), end + AFTER)
            })
            .collect();
        windows.sort_unstable();
        let mut joined: Vec<(usize, usize)> = Vec::new();
        for (start, end) in windows {
            match joined.last_mut() {
                Some(last) if start <= last.1 + 1 => last.1 = last.1.max(end),
                _ => joined.push((start, end)),
            }
        }
        let tools = Arc::clone(self.tools);
        let path = path.to_string();
        let read = tokio::task::spawn_blocking(move || {
            joined
                .into_iter()
                .map(|(start, end)| {
                    let args = json!({"path": path, "offset": start, "limit": end - start + 1});
                    tools.call("read_file", &args.to_string())
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut blocks = Vec::new();
        let mut reads = Vec::new();
        let mut seen = BTreeSet::new();
        for output in read.into_iter().flatten() {
            blocks.push(output.text);
            reads.extend(output.read);
            seen.extend(output.files_read);
        }
        (blocks, reads, seen)
    }
}

/// The findings to challenge, by fingerprint: agents' findings at or above
/// `threshold`, verified or located, seen in at least `quorum` samples.
fn targets(checked: &[Checked], threshold: Severity, quorum: u32) -> BTreeMap<String, Target> {
    let mut targets: BTreeMap<String, Target> = BTreeMap::new();
    for (i, c) in checked.iter().enumerate() {
        if c.finding.origin != Origin::Agent
            || c.finding.severity < threshold
            || c.finding.seen.is_some_and(|s| !s.reaches(quorum))
        {
            continue;
        }
        let finding = match (&c.located, c.verified) {
            (_, true) => c.finding.clone(),
            (Some(text), false) => Finding {
                evidence: Some(text.clone()),
                ..c.finding.clone()
            },
            (None, false) => continue,
        };
        let located = !c.verified;
        let occurrence = if located { 0 } else { c.occurrence };
        let fingerprint = crate::stages::reduce::fingerprint(&finding, occurrence);
        targets
            .entry(format!("{fingerprint}/{located}"))
            .or_insert_with(|| Target {
                fingerprint: fingerprint.clone(),
                finding,
                located,
                indices: Vec::new(),
            })
            .indices
            .push(i);
    }
    targets
}

/// Sets what the skeptic said on a checked finding. A located claim it
/// confirmed is verified: its evidence is the file's text at the lines.
fn apply(c: &mut Checked, target: &Target, challenge: Challenge) {
    if target.located && challenge.stance == Stance::Confirmed {
        c.verified = true;
        c.finding.evidence = target.finding.evidence.clone();
        c.note = Some(format!(
            "located: {}; its evidence is the file at the cited lines, and the skeptic confirmed it",
            c.note.as_deref().unwrap_or("its quote did not match")
        ));
        c.occurrence = 0;
    }
    c.challenge = Some(challenge);
}

/// The stage's notes: what was asked and said, and what was not asked.
/// Keeps at most [`MOST_PER_FILE`] of each file's targets (the most
/// severe, then the first lines); gives how many each file had over it.
fn keep_most_per_file(targets: &mut BTreeMap<String, Target>) -> BTreeMap<String, usize> {
    let mut by_path: BTreeMap<&str, Vec<(&String, &Target)>> = BTreeMap::new();
    for (key, t) in targets.iter() {
        by_path
            .entry(t.finding.path.as_str())
            .or_default()
            .push((key, t));
    }
    let mut dropped: Vec<String> = Vec::new();
    let mut over: BTreeMap<String, usize> = BTreeMap::new();
    for (path, mut list) in by_path {
        if list.len() <= MOST_PER_FILE {
            continue;
        }
        list.sort_by(|(ka, a), (kb, b)| {
            (b.finding.severity, a.finding.line, ka).cmp(&(a.finding.severity, b.finding.line, kb))
        });
        over.insert(path.to_string(), list.len() - MOST_PER_FILE);
        dropped.extend(list[MOST_PER_FILE..].iter().map(|(k, _)| (*k).clone()));
    }
    for key in dropped {
        targets.remove(&key);
    }
    over
}

/// What to say of the findings not asked about because their file had
/// more than [`MOST_PER_FILE`].
fn over_note(over: &BTreeMap<String, usize>) -> Option<String> {
    if over.is_empty() {
        return None;
    }
    let total: usize = over.values().sum();
    let files: Vec<String> = over
        .iter()
        .take(10)
        .map(|(path, n)| format!("{path} ({n})"))
        .collect();
    let more = match over.len() {
        n if n > 10 => format!(" and {} more files", n - 10),
        _ => String::new(),
    };
    Some(
        not_challenged(
            total,
            &format!(
                "the skeptic is asked about at most {MOST_PER_FILE} findings of a file (the most severe first)"
            ),
        ) + &format!(": {}{more}", files.join(", ")),
    )
}

/// "N findings were not challenged: WHY, so they stay as verification
/// left them".
fn not_challenged(n: usize, why: &str) -> String {
    let (were, stay, them) = match n {
        1 => ("1 finding was".to_string(), "it stays", "it"),
        n => (format!("{n} findings were"), "they stay", "them"),
    };
    format!("{were} not challenged: {why}, so {stay} as verification left {them}")
}

fn notes(answers: &BTreeMap<String, Challenge>, cached: usize, not_asked: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if !answers.is_empty() {
        let of = |s: Stance| answers.values().filter(|c| c.stance == s).count();
        let none = of(Stance::NoVerdict);
        notes.push(format!(
            "the skeptic challenged {}: {} confirmed, {} refuted, {} uncertain{}{}",
            count(answers.len(), "finding"),
            of(Stance::Confirmed),
            of(Stance::Refuted),
            of(Stance::Uncertain),
            if none > 0 {
                format!(", {none} without a verdict")
            } else {
                String::new()
            },
            if cached > 0 {
                format!(" ({} from the run store)", count(cached, "answer"))
            } else {
                String::new()
            }
        ));
    }
    if not_asked > 0 {
        notes.push(not_challenged(
            not_asked,
            "the run was stopped early (a budget or an interrupt)",
        ));
    }
    notes
}

/// The task message: the findings, then the code around them.
fn render_task(path: &str, batch: &[&Target], ids: &[String], preloaded: &[String]) -> String {
    let mut text = format!(
        "TASK: challenge {} findings in {path}\n\nAnother agent reported the findings below. Try to refute each one: \
         does untrusted input reach the flagged line, is the value constant, sanitized or checked first, is the \
         code reachable? The code around them follows, exactly as read_file returns it (numbered lines); use \
         read_file and grep to follow a value to its callers or other files.\n\nFindings:\n",
        batch.len()
    );
    for (target, id) in batch.iter().zip(ids) {
        let f = &target.finding;
        let lines = match f.end_line {
            Some(end) if end > f.line => format!("lines {}-{end}", f.line),
            _ => format!("line {}", f.line),
        };
        text.push_str(&format!(
            "- id {id}: {lines}, {}{}: {}\n",
            f.severity.as_str(),
            // The weakness, not the rule's id: an id such as a rule
            // engine's `family/name` reads like a path to a small model.
            f.cwe.id.map(|c| format!(" ({c})")).unwrap_or_default(),
            f.title
        ));
        if !f.detail.is_empty() {
            text.push_str(&format!("  Detail: {}\n", f.detail));
        }
        if let Some(evidence) = &f.evidence {
            text.push_str(&format!("  Code: {}\n", evidence.trim()));
        }
    }
    // Each block is what read_file returned: fenced with the run's
    // boundary already.
    for block in preloaded {
        text.push('\n');
        text.push_str(block);
    }
    text
}

/// The final turn's request.
fn verdict_request(ids: &[String]) -> String {
    // One literal per line: the same text, easier to read than `\`
    // continuations inside a string full of braces.
    format!(
        concat!(
            "Give your verdict on every finding ({}) as ONE JSON object ",
            "{{\"verdicts\": [{{\"id\", \"verdict\": \"confirmed\" | \"refuted\" | \"uncertain\", ",
            "\"confidence\": 1-10, \"why\": one sentence, \"flow\": [\"path:line\", ...]}}]}}. ",
            "Do not call tools."
        ),
        ids.join(", ")
    )
}

/// Reads the skeptic's answer; a repair turn when it is not JSON with a
/// list of verdicts.
struct VerdictReader {
    ids: Vec<String>,
}

impl Reader for VerdictReader {
    type Read = Answer;

    fn read(&self, text: &str) -> Answer {
        read_answer(text, &self.ids)
    }

    fn repair(&self, answer: &Answer) -> Option<String> {
        (!answer.parsed).then(|| {
            format!(
                "Your answer could not be read: it is not a JSON object with a \"verdicts\" list. {}",
                verdict_request(&self.ids)
            )
        })
    }

    fn keep(&self, first: Answer, second: Answer) -> Answer {
        if second.parsed || !first.parsed {
            second
        } else {
            first
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(
        severity: Severity,
        verified: bool,
        located: Option<&str>,
        origin: Origin,
    ) -> Checked {
        Checked {
            finding: Finding {
                path: "a.py".into(),
                line: 3,
                end_line: None,
                severity,
                title: "t".into(),
                detail: String::new(),
                evidence: Some("quoted".into()),
                rule: Some("sql/concat".into()),
                cwe: crate::model::findings::FindingCwe::default(),
                origin,
                seen: None,
            },
            group: "g".into(),
            agent: "auditor".into(),
            verified,
            note: Some("the quoted evidence is not at a.py:3".into()),
            occurrence: 0,
            located: located.map(str::to_string),
            challenge: None,
        }
    }

    /// A target of `path` at `line` with `severity`.
    fn target(path: &str, line: u32, severity: Severity) -> Target {
        let mut c = checked(severity, true, None, Origin::Agent);
        c.finding.path = path.into();
        c.finding.line = line;
        Target {
            fingerprint: format!("{path}:{line}"),
            finding: c.finding,
            located: false,
            indices: vec![0],
        }
    }

    #[test]
    fn a_file_s_findings_past_the_cap_are_not_asked_the_most_severe_kept_and_said() {
        let mut targets: BTreeMap<String, Target> = BTreeMap::new();
        // Keyed as the stage keys them: fingerprint and whether located.
        let mut add = |t: Target| {
            targets.insert(format!("{}/false", t.fingerprint), t);
        };
        for line in 1..=100 {
            add(target("big.py", line, Severity::High));
        }
        // Below the others in the file, yet more severe: kept.
        add(target("big.py", 500, Severity::Critical));
        add(target("small.py", 1, Severity::High));
        let over = keep_most_per_file(&mut targets);
        assert_eq!(over, BTreeMap::from([("big.py".to_string(), 41)]));
        let big: Vec<u32> = targets
            .values()
            .filter(|t| t.finding.path == "big.py")
            .map(|t| t.finding.line)
            .collect();
        assert_eq!(big.len(), MOST_PER_FILE);
        assert!(big.contains(&500));
        assert!(big.contains(&1) && big.contains(&59) && !big.contains(&60));
        assert!(targets.contains_key("small.py:1/false"));
        let note = over_note(&over).unwrap();
        assert!(
            note.starts_with("41 findings were not challenged") && note.ends_with("big.py (41)"),
            "{note}"
        );
        assert_eq!(over_note(&BTreeMap::new()), None);
    }

    #[test]
    fn only_agents_findings_at_or_above_the_threshold_verified_or_located_are_asked() {
        let list = vec![
            checked(Severity::High, true, None, Origin::Agent),
            checked(Severity::Medium, true, None, Origin::Agent),
            checked(Severity::Critical, true, None, Origin::ToolLayer),
            checked(Severity::High, false, Some("cur.execute(q)"), Origin::Agent),
            checked(Severity::High, false, None, Origin::Agent),
            // The same finding from another group: asked once.
            checked(Severity::High, true, None, Origin::Agent),
        ];
        let targets = targets(&list, Severity::High, 1);
        let mut asked: Vec<(Vec<usize>, bool)> = targets
            .values()
            .map(|t| (t.indices.clone(), t.located))
            .collect();
        asked.sort();
        assert_eq!(asked, vec![(vec![0, 5], false), (vec![3], true)]);
        let located = targets.values().find(|t| t.located).unwrap();
        assert_eq!(located.finding.evidence.as_deref(), Some("cur.execute(q)"));
    }

    #[test]
    fn a_confirmed_located_claim_is_verified_with_the_files_text_and_a_refuted_one_is_not() {
        let list = vec![checked(
            Severity::High,
            false,
            Some("cur.execute(q)"),
            Origin::Agent,
        )];
        let targets = targets(&list, Severity::High, 1);
        let target = targets.values().next().unwrap();
        let said = |stance| Challenge {
            stance,
            confidence: Some(7),
            reason: "r".into(),
            flow: Vec::new(),
            notes: Vec::new(),
        };
        let mut c = list[0].clone();
        apply(&mut c, target, said(Stance::Confirmed));
        assert!(c.verified);
        assert_eq!(c.finding.evidence.as_deref(), Some("cur.execute(q)"));
        assert!(c.note.unwrap().starts_with("located: the quoted evidence"));
        let mut c = list[0].clone();
        apply(&mut c, target, said(Stance::Refuted));
        assert!(!c.verified);
        assert_eq!(c.finding.evidence.as_deref(), Some("quoted"));
    }
}
