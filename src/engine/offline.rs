//! The offline provider: a deterministic rule engine that plays a
//! sub-agent's model through the same protocol, so `fanscan scan .` works
//! with no key and no network, and every stage of the pipeline runs in
//! tests.
//!
//! Takes a sub-agent's [`ChatRequest`] like any provider; gives what a
//! careful model would: `read_file` calls for the group's files (paging on
//! where a file is cut), then findings from the rule set applied to exactly
//! what the tools returned, ending with `[TASK_COMPLETE]`. Which files the
//! task names and where each read stopped come as data, beside the request
//! ([`crate::llm::conversation::Facts`], through [`Provider::turn`]), never
//! scraped from the prose. It plays the agents' turns only: the plan, the
//! brief, the reduction and `ask`'s lead are questions to the harness
//! (`agents::Harness::answer`), whose counted answers are the engine's.
//! Reports name it a rule engine, not a language model. Asked as the
//! skeptic (the findings come as data,
//! [`crate::llm::conversation::Facts::challenges`]), it first reads the
//! rest of each file beyond the window it was shown (a helper the value
//! comes from may be defined there), then answers each with the source
//! check of [`super::taint::judge`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use rayon::prelude::*;

use super::sources::{self, SourceTable};
use super::syntax::Unparsed;
use crate::engine::rules::RuleSet;
use crate::llm::conversation::{
    ChatRequest, ChatResponse, Facts, FileRead, FinishReason, LeadFact, MAX_CALLS_PER_TURN,
    Message, ToolCall, ToolChoice, Usage, lines_never_whole,
};
use crate::llm::prices::{Price, Prices};
use crate::llm::providers::stream::{OnText, Shown};
use crate::llm::providers::{EngineKind, Provider, ProviderError};
use crate::model::findings::{Finding, Severity, TASK_COMPLETE, render_block, render_structured};
use crate::tools::fence;
use crate::util::language::language_of;

/// Most files it reads when it has to explore (no file list given).
const EXPLORE_FILES: usize = 200;

/// Most lines of a file shown cut that it reads alone, to see more of
/// them; the others stay cut, and the run says so.
const LONG_LINES: usize = 32;

/// Most files the skeptic reads beyond the challenged ones: those its
/// searches for the classes a value is returned by name.
const FOUND_FILES: usize = 16;

/// The offline rule engine.
pub(crate) struct Offline {
    /// The rules, with the run's syntax trees and source-check regexes.
    rules: Arc<RuleSet>,
}

impl Offline {
    pub(crate) fn new(rules: Arc<RuleSet>) -> Self {
        Self { rules }
    }

    /// [`Offline::answer`] on rayon's pool (see [`on_pool`]).
    async fn answer_on_pool(
        &self,
        request: &ChatRequest,
        facts: &Facts,
    ) -> Result<ChatResponse, ProviderError> {
        let engine = Self::new(Arc::clone(&self.rules));
        let (request, facts) = (request.clone(), facts.clone());
        on_pool(move || engine.answer(&request, &facts)).await
    }

    /// The answer to one turn: `request` as sent, `facts` what the loop
    /// knows of its task (the files, the pages read, the findings put to
    /// the skeptic).
    fn answer(&self, request: &ChatRequest, facts: &Facts) -> Result<ChatResponse, ProviderError> {
        let seen = Conversation::read(&request.messages, &facts.reads);
        if !facts.challenges.is_empty() {
            // The rest of each file first: a helper the value comes from
            // is often defined below the window shown.
            let calls = skeptic_reads(request, facts, &seen);
            if !calls.is_empty() {
                return Ok(reply(None, calls));
            }
            let judged = skeptic_judge(&self.rules, facts, &seen);
            // A class the value is returned by that no file read declares,
            // and a value from a parameter (its callers, as the
            // `references` tool lists them, in the files they are in):
            // asked for in the same turn.
            let mut wanted = skeptic_searches(request, facts, &judged, &seen);
            let (judged, callers) = self.skeptic_callers(request, facts, judged, &seen);
            wanted.extend(callers);
            let calls = tool_calls(request, wanted);
            if !calls.is_empty() {
                return Ok(reply(None, calls));
            }
            return Ok(reply(Some(skeptic_answer(facts, &judged)), Vec::new()));
        }
        let calls = wanted_calls(request, facts, &seen);
        if !calls.is_empty() {
            return Ok(reply(None, calls));
        }
        Ok(reply(Some(self.report(request, facts, &seen)?), Vec::new()))
    }

    /// Each uncertain verdict whose value comes from a parameter, followed
    /// to the function's callers ([`crate::engine::taint::follow`]): the
    /// `references` calls and file reads that wants first (none once asked
    /// or when the tools are off), then the verdicts with what it found.
    fn skeptic_callers(
        &self,
        request: &ChatRequest,
        facts: &Facts,
        mut judged: Vec<sources::Judged>,
        seen: &Conversation,
    ) -> (Vec<sources::Judged>, Vec<Value>) {
        // Without the tools (switched off, or the last turn) it says what
        // the answers it has show.
        let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
        if !offered("references") || !offered("read_file") {
            return (judged, Vec::new());
        }
        let listed = |name: &str| seen.references.get(name).cloned();
        let followed: Vec<_> = facts
            .challenges
            .par_iter()
            .zip(judged.par_iter())
            .map(|(c, j)| {
                (j.verdict == "uncertain").then(|| {
                    crate::engine::taint::follow(
                        &self.rules.trees,
                        &seen.contents,
                        &c.path,
                        c.line,
                        c.rule.as_deref(),
                        &listed,
                    )
                })
            })
            .collect();
        let mut wanted: Vec<Value> = Vec::new();
        let mut names: BTreeSet<&str> = BTreeSet::new();
        let mut files: BTreeSet<&str> = BTreeSet::new();
        for f in followed.iter().flatten() {
            names.extend(f.names.iter().map(String::as_str));
            files.extend(f.files.iter().map(String::as_str));
        }
        for name in names {
            if !seen
                .calls
                .contains(&("references".into(), name.to_string(), 0))
            {
                wanted.push(json!({"tool": "references", "name": name}));
            }
        }
        // Each caller's file whole: the check reads a file's tree only
        // when all of it is read.
        let sites = seen
            .references
            .values()
            .flat_map(|l| l.sites.iter().map(|(p, _)| p.as_str()))
            .filter(|p| seen.contents.contains_key(*p));
        let files: BTreeSet<&str> = files.into_iter().chain(sites).collect();
        for path in files {
            wanted.extend(seen.whole_file_wanted(path));
        }
        if request.tool_choice == ToolChoice::Auto && !wanted.is_empty() {
            return (judged, wanted);
        }
        for ((c, j), f) in facts.challenges.iter().zip(judged.iter_mut()).zip(followed) {
            let Some(f) = f else {
                continue;
            };
            match f.outcome {
                crate::engine::taint::Outcome::Nothing => {}
                crate::engine::taint::Outcome::Confirmed(flow) => {
                    *j = flow.confirmed(8, "followed to its callers with the references tool");
                }
                crate::engine::taint::Outcome::Refuted(sites) => {
                    let calls = sites
                        .iter()
                        .map(|(p, l)| format!("{p}:{l}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    *j = sources::Judged {
                        verdict: "refuted",
                        confidence: 7,
                        why: format!(
                            "the value at line {} comes from a parameter; followed to every call with the references tool, each passes a literal, a constant, or a value checked or cleaned for this kind of sink ({calls})",
                            c.line
                        ),
                        flow: j.flow.clone(),
                        elsewhere: sites,
                        wants: BTreeSet::new(),
                    };
                }
                crate::engine::taint::Outcome::Uncertain(why) => {
                    j.why = format!(
                        "{}; its callers, followed with the references tool: {why}",
                        j.why
                    );
                }
            }
        }
        (judged, Vec::new())
    }

    /// The final report: the rule set applied to every line seen, and an
    /// answer to each lead its check on the syntax trees can give.
    fn report(
        &self,
        request: &ChatRequest,
        facts: &Facts,
        seen: &Conversation,
    ) -> Result<String, ProviderError> {
        let unusable = |e: &crate::engine::rules::RuleError| ProviderError::Engine(e.to_string());
        let rule_count = self.rules.rules().map_err(unusable)?.len();
        // Each file is parsed and matched on rayon's pool: CPU work over
        // many files, in file order whatever finishes first.
        let applied: Vec<_> = seen
            .contents
            .par_iter()
            .map(|(path, lines)| {
                let lines: Vec<(u32, String)> =
                    lines.iter().map(|(n, l)| (*n, l.clone())).collect();
                let applied = self.rules.apply_read(path, &lines).map_err(unusable)?;
                Ok::<_, ProviderError>((path, lines.len(), applied))
            })
            .collect::<Result<_, _>>()?;
        let mut findings: Vec<Finding> = Vec::new();
        let mut line_count = 0usize;
        let mut trees = 0usize;
        let mut by_lines: Vec<String> = Vec::new();
        let mut traced_in_part: Vec<String> = Vec::new();
        for (path, count, (found, read)) in applied {
            line_count += count;
            findings.extend(found);
            match read {
                // No rule's match needed the tree.
                None => {}
                Some(Ok(parsed)) => {
                    trees += 1;
                    if parsed.traces_cut > 0 {
                        traced_in_part
                            .push(format!("{path} ({} of its traces)", parsed.traces_cut));
                    }
                }
                // A language the engine has no grammar for is no news.
                Some(Err(Unparsed::NoGrammar)) => {}
                Some(Err(why)) => by_lines.push(format!("{path} ({why})")),
            }
        }
        // A lead's line is answered by the lead (confirmed, dismissed or
        // left standing), not repeated as a finding of the engine's own.
        let leads = &facts.leads;
        findings.retain(|f| !leads.iter().any(|l| l.path == f.path && l.line == f.line));
        let answers = self.lead_answers(leads, seen);
        let mut by_severity: BTreeMap<Severity, usize> = BTreeMap::new();
        for f in &findings {
            *by_severity.entry(f.severity).or_default() += 1;
        }
        let counts = Severity::DESCENDING
            .iter()
            .filter_map(|s| by_severity.get(s).map(|n| format!("{n} {}", s.as_str())))
            .collect::<Vec<_>>()
            .join(", ");
        let by_lines = if by_lines.is_empty() {
            String::new()
        } else {
            format!("; read by their lines alone: {}", by_lines.join(", "))
        };
        let by_lines = if traced_in_part.is_empty() {
            by_lines
        } else {
            format!(
                "{by_lines}; traced in part, each file's bound on its traces reached (a cut trace finds no flow and proves nothing safe): {}",
                traced_in_part.join(", ")
            )
        };
        let summary = format!(
            "Offline rule engine (not a language model): {} rules applied to {line_count} lines of {} files ({trees} parsed as syntax trees where a match needed one{by_lines}); {} findings{}.",
            rule_count,
            seen.contents.len(),
            findings.len(),
            if counts.is_empty() {
                String::new()
            } else {
                format!(" ({counts})")
            },
        );
        // Asked for a structured answer, it answers the schema a model's
        // structured output would; else a JSON block in text.
        Ok(if request.output_schema.is_some() {
            render_structured(&summary, &findings, &answers)
        } else {
            format!(
                "{summary}\n\n{}\n\n{TASK_COMPLETE}",
                render_block(&findings, &answers)
            )
        })
    }
}

impl Offline {
    /// The engine's answers to its task's leads: the verdict of its check on the syntax trees
    /// on each (see [`super::taint::judge`]): confirmed, dismissed (refuted,
    /// with its reason), or no answer when it cannot tell, so the lead stands
    /// as the analysis found it. Another tool's lead is judged as the
    /// engine's own rule of the same CWE would be.
    fn lead_answers(&self, leads: &[LeadFact], seen: &Conversation) -> Vec<Value> {
        // Without its table the check can tell nothing: every lead stays
        // unanswered, a finding as the analysis found it (the skeptic's own
        // use of the table reports the error).
        let Ok(table) = SourceTable::bundled() else {
            return Vec::new();
        };
        leads
            .par_iter()
            .filter_map(|l| {
                let rule = self.rule_like(l, table);
                let judged = crate::engine::taint::judge(
                    table,
                    &self.rules.trees,
                    self.rules.across(),
                    &l.path,
                    &seen.contents,
                    l.line,
                    rule.as_deref(),
                );
                let verdict = match judged.verdict {
                    "confirmed" => "confirmed",
                    "refuted" => "dismissed",
                    _ => return None,
                };
                Some(json!({"id": l.id, "verdict": verdict, "reason": judged.why}))
            })
            .collect()
    }

    /// The rule the check on the syntax trees judges `lead` as: its own when the engine
    /// has it, else the engine's first rule of the lead's CWE.
    fn rule_like(&self, lead: &LeadFact, table: &SourceTable) -> Option<String> {
        let rules = self.rules.rules().ok()?;
        let taint_rule = self
            .rules
            .taint()
            .is_ok_and(|t| t.table().sink(&lead.rule).is_some());
        if taint_rule || rules.iter().any(|r| r.id == lead.rule) {
            return Some(lead.rule.clone());
        }
        let cwe = lead.cwe?;
        rules
            .iter()
            .filter(|r| r.cwe().first() == Some(&cwe))
            .map(|r| r.id.clone())
            .find(|id| table.is_sink_rule(Some(id)))
    }
}

/// The verdict on each challenged finding of the check on the syntax trees, from the files
/// shown of its file and the other files read (see [`super::taint::judge`]).
fn skeptic_judge(rules: &RuleSet, facts: &Facts, seen: &Conversation) -> Vec<sources::Judged> {
    // Each finding is judged on its own, on rayon's pool, in order.
    facts
        .challenges
        .par_iter()
        .map(|c| match SourceTable::bundled() {
            Ok(table) => crate::engine::taint::judge(
                table,
                &rules.trees,
                rules.across(),
                &c.path,
                &seen.contents,
                c.line,
                c.rule.as_deref(),
            ),
            Err(e) => sources::Judged {
                verdict: "uncertain",
                confidence: 1,
                why: e.to_string(),
                flow: Vec::new(),
                elsewhere: Vec::new(),
                wants: BTreeSet::new(),
            },
        })
        .collect()
}

/// The skeptic's answer: the verdicts of `judged` (one per challenge, in
/// order) as the verdicts schema; the flow's steps in other files first.
fn skeptic_answer(facts: &Facts, judged: &[sources::Judged]) -> String {
    let verdicts: Vec<Value> = facts
        .challenges
        .iter()
        .zip(judged)
        .map(|(c, judged)| {
            let mut flow: Vec<String> = Vec::new();
            let steps = judged
                .elsewhere
                .iter()
                .map(|(p, l)| format!("{p}:{l}"))
                .chain(judged.flow.iter().map(|l| format!("{}:{l}", c.path)));
            for step in steps {
                if !flow.contains(&step) {
                    flow.push(step);
                }
            }
            json!({
                "id": c.id,
                "verdict": judged.verdict,
                "confidence": judged.confidence,
                "why": judged.why,
                "flow": flow,
            })
        })
        .collect();
    json!({ "verdicts": verdicts }).to_string()
}

/// The searches the skeptic makes before it answers: for each class a
/// challenged value is returned by that no file read declares (see
/// [`sources::Judged::wants`]), its declaration and the classes that
/// implement or extend it, in files of the challenged file's language;
/// each searched for once, none when tools are off.
fn skeptic_searches(
    request: &ChatRequest,
    facts: &Facts,
    judged: &[sources::Judged],
    seen: &Conversation,
) -> Vec<Value> {
    let can_search =
        request.tool_choice == ToolChoice::Auto && request.tools.iter().any(|t| t.name == "grep");
    if !can_search {
        return Vec::new();
    }
    let mut wanted: Vec<Value> = Vec::new();
    for (c, judged) in facts.challenges.iter().zip(judged) {
        let glob = c.path.rsplit_once('.').map(|(_, ext)| format!("*.{ext}"));
        for class in &judged.wants {
            let class = regex::escape(class);
            // ASCII word boundaries: a Unicode one makes the search slow on
            // any file with non-ASCII text.
            let pattern = crate::util::ascii_word_boundaries(&format!(
                r"\b(class|interface|enum|record|struct)\s+{class}\b|\b(implements|extends)\b[^{{;]*\b{class}\b"
            ));
            if seen.calls.contains(&("grep".into(), pattern.clone(), 0))
                || wanted.iter().any(|w| w["pattern"] == pattern)
            {
                continue;
            }
            let mut call = json!({"tool": "grep", "pattern": pattern});
            if let Some(glob) = &glob {
                call["glob"] = json!(glob);
            }
            wanted.push(call);
        }
    }
    wanted
}

/// The reads a careful model would ask for next: the task's files not
/// seen yet (or, with none given, what exploring finds), then the later
/// pages of every file cut short; none when tools are off or all is read.
fn wanted_calls(request: &ChatRequest, facts: &Facts, seen: &Conversation) -> Vec<ToolCall> {
    let can_call = |name: &str| {
        request.tool_choice == ToolChoice::Auto && request.tools.iter().any(|t| t.name == name)
    };
    if !can_call("read_file") {
        return Vec::new();
    }
    let mut wanted: Vec<Value> = Vec::new();
    let targets: Vec<String> = if facts.files.is_empty() {
        // No list: explore, directory by directory, like a model would.
        if can_call("list_dir") {
            for dir in std::iter::once("").chain(seen.dirs.iter().map(String::as_str)) {
                if !seen
                    .calls
                    .contains(&("list_dir".into(), dir.to_string(), 0))
                {
                    wanted.push(json!({"tool": "list_dir", "path": dir}));
                }
            }
        }
        seen.listed_files
            .iter()
            .filter(|p| language_of(p).is_some())
            .take(EXPLORE_FILES)
            .cloned()
            .collect()
    } else {
        facts.files.clone()
    };
    for path in &targets {
        // A preloaded file is already seen: only its later pages are asked
        // for (below), as a careful model would.
        if !seen.contents.contains_key(path)
            && !seen
                .calls
                .iter()
                .any(|(n, p, _)| n == "read_file" && p == path)
        {
            wanted.push(json!({"tool": "read_file", "path": path}));
        }
    }
    for (path, offset) in &seen.continuations {
        if !seen
            .calls
            .contains(&("read_file".into(), path.clone(), *offset))
        {
            wanted.push(json!({"tool": "read_file", "path": path, "offset": offset}));
        }
    }
    wanted.extend(seen.long_lines_wanted(None));
    tool_calls(request, wanted)
}

/// The reads the skeptic's check on the syntax trees wants before it answers: each
/// challenged file from its top (the window shown starts below it) and
/// every later page not seen yet, so that helpers defined elsewhere in the
/// file can be followed, and the same of the files its searches found;
/// none when tools are off or all is read.
fn skeptic_reads(request: &ChatRequest, facts: &Facts, seen: &Conversation) -> Vec<ToolCall> {
    let can_read = request.tool_choice == ToolChoice::Auto
        && request.tools.iter().any(|t| t.name == "read_file");
    if !can_read {
        return Vec::new();
    }
    let mut paths: BTreeSet<&str> = facts.challenges.iter().map(|c| c.path.as_str()).collect();
    paths.extend(seen.found.iter().take(FOUND_FILES).map(String::as_str));
    let mut wanted: Vec<Value> = Vec::new();
    for path in paths {
        wanted.extend(seen.whole_file_wanted(path));
        wanted.extend(seen.long_lines_wanted(Some(path)));
    }
    tool_calls(request, wanted)
}

/// The calls of `wanted` (each `{"tool": name, ...arguments}`), at most
/// a turn's worth, with ids unique in the conversation.
fn tool_calls(request: &ChatRequest, wanted: Vec<Value>) -> Vec<ToolCall> {
    let round = request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    wanted
        .into_iter()
        .take(MAX_CALLS_PER_TURN)
        .enumerate()
        .map(|(i, mut w)| {
            let name = w["tool"].as_str().unwrap_or("read_file").to_string();
            if let Some(map) = w.as_object_mut() {
                map.remove("tool");
            }
            ToolCall::new(format!("offline_{round}_{i}"), name, w.to_string())
        })
        .collect()
}

fn reply(text: Option<String>, tool_calls: Vec<ToolCall>) -> ChatResponse {
    let finish = if tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    };
    ChatResponse {
        text,
        tool_calls,
        // No model ran: no tokens were spent.
        usage: Some(Usage::default()),
        finish,
    }
}

/// Runs `work`, CPU work, on rayon's pool (one thread a core) and waits
/// for it without holding the async runtime's worker: the turns a stage
/// runs side by side (the skeptic's loops share one task) use every core
/// instead of taking turns on one, and no more of them are under way at
/// once than there are cores to run them (each holds its files and trees
/// while it runs). A panic in it is an error that names the engine.
async fn on_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ProviderError> + Send + 'static,
) -> Result<T, ProviderError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        // The turn may have been given up: no one to tell.
        let _ = tx.send(answer);
    });
    let failed = |why: &str| {
        ProviderError::Engine(format!(
            "the rule engine's thread {why}: a fanscan bug, please report it"
        ))
    };
    rx.await
        .map_err(|_| failed("ended without an answer"))?
        .map_err(|_| failed("panicked"))?
}

impl Provider for Offline {
    fn name(&self) -> &str {
        "offline"
    }

    fn model(&self) -> &str {
        "rules"
    }

    fn engine(&self) -> EngineKind {
        EngineKind::RuleEngine
    }

    /// A request alone carries no facts: the engine answers it as a task
    /// that names no files.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move { self.answer_on_pool(request, &Facts::default()).await })
    }

    fn turn<'a>(
        &'a self,
        request: &'a ChatRequest,
        facts: &'a Facts,
        on_text: Option<OnText<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let response = self.answer_on_pool(request, facts).await?;
            // It cannot stream: what it says is shown whole, once.
            if let (Some(on_text), Some(text)) = (on_text, &response.text) {
                on_text(Shown::Text(text));
            }
            Ok(response)
        })
    }

    /// No model runs: nothing is billed.
    fn price(&self, _prices: &Prices, _model: &str) -> Option<Price> {
        Some(Price::default())
    }
}

/// What the conversation so far holds, as the engine needs it.
#[derive(Default)]
struct Conversation {
    /// (tool, path, offset) of every call made.
    calls: BTreeSet<(String, String, u64)>,
    /// Numbered lines seen, per file.
    contents: BTreeMap<String, BTreeMap<u32, String>>,
    /// Where a read that stopped before its file's end goes on.
    continuations: BTreeSet<(String, u64)>,
    /// Lines shown cut and not yet whole, per file: each is read alone,
    /// which shows more of it (up to [`LONG_LINES`] a file).
    long_lines: BTreeSet<(String, u64)>,
    /// (path, line) of every read of one line alone.
    alone: BTreeSet<(String, u64)>,
    /// Directories and files seen in `list_dir` results.
    dirs: BTreeSet<String>,
    listed_files: BTreeSet<String>,
    /// Files named by `grep` hits.
    found: BTreeSet<String>,
    /// `references` answers by the name asked for.
    references: BTreeMap<String, crate::engine::taint::Listed>,
}

impl Conversation {
    fn read(messages: &[Message], reads: &[FileRead]) -> Self {
        let mut c = Self::default();
        for read in reads {
            c.pages_after(read);
        }
        for (path, lines) in lines_never_whole(reads) {
            for line in lines.into_iter().take(LONG_LINES) {
                c.long_lines.insert((path.clone(), line));
            }
        }
        // The name each `references` call asked for, by the call's id.
        let mut asked: BTreeMap<&str, String> = BTreeMap::new();
        for message in messages {
            match message {
                Message::User { text } => c.blocks(text),
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls {
                        let args: Value =
                            serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                        // A search is known by its pattern, a symbol by its
                        // name.
                        let key = match call.name.as_str() {
                            "grep" => "pattern",
                            "references" | "definition" => "name",
                            _ => "path",
                        };
                        if call.name == "references"
                            && let Some(name) = args["name"].as_str()
                        {
                            asked.insert(&call.id, name.to_string());
                        }
                        let path = args[key].as_str().unwrap_or_default().to_string();
                        let offset = args["offset"].as_u64().unwrap_or(0);
                        if call.name == "read_file" && args["limit"].as_u64() == Some(1) {
                            c.alone.insert((path, offset));
                        } else {
                            c.calls.insert((call.name.clone(), path, offset));
                        }
                    }
                }
                Message::ToolResult {
                    name,
                    content,
                    is_error: false,
                    ..
                } if name == "read_file" => c.blocks(content),
                Message::ToolResult {
                    name,
                    content,
                    is_error: false,
                    ..
                } if name == "list_dir" => c.list_result(content),
                Message::ToolResult {
                    name,
                    content,
                    is_error: false,
                    ..
                } if name == "grep" => c.grep_result(content),
                Message::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error: false,
                } if name == "references" => {
                    if let Some(asked) = asked.get(call_id.as_str()) {
                        c.references.insert(
                            asked.clone(),
                            crate::engine::taint::read_references(content),
                        );
                    }
                }
                _ => {}
            }
        }
        c
    }

    /// The reads that show all of `path` not asked for yet: from its top
    /// unless its first line is shown, and each later page not shown.
    fn whole_file_wanted(&self, path: &str) -> Vec<Value> {
        let shown = self.contents.get(path);
        let read = |offset: u64| {
            self.calls
                .contains(&("read_file".into(), path.to_string(), offset))
        };
        let mut wanted = Vec::new();
        if !shown.is_some_and(|s| s.contains_key(&1)) && !read(0) && !read(1) {
            wanted.push(json!({"tool": "read_file", "path": path}));
        }
        for (p, offset) in &self.continuations {
            let line = u32::try_from(*offset).unwrap_or(u32::MAX);
            if p == path && !shown.is_some_and(|s| s.contains_key(&line)) && !read(*offset) {
                wanted.push(json!({"tool": "read_file", "path": path, "offset": offset}));
            }
        }
        wanted
    }

    /// A read of each line shown cut (of `only`, else of every file) not
    /// yet read alone.
    fn long_lines_wanted(&self, only: Option<&str>) -> Vec<Value> {
        self.long_lines
            .iter()
            .filter(|(p, _)| only.is_none_or(|o| o == p))
            .filter(|key| !self.alone.contains(*key))
            .map(|(path, line)| json!({"tool": "read_file", "path": path, "offset": line, "limit": 1}))
            .collect()
    }

    /// The fenced file blocks of a task message or a `read_file` result:
    /// each holds what `read_file` returned (or the error it gave). A block
    /// closes only with its own boundary, which no file could write.
    fn blocks(&mut self, text: &str) {
        for block in fence::blocks(text) {
            if !block.body.starts_with("error: ") {
                self.read_block(&block.path, block.body);
            }
        }
    }

    /// The numbered lines of one block (its first line is the header
    /// `path (N lines)`, which holds no line of the file).
    fn read_block(&mut self, path: &str, body: &str) {
        let entry = self.contents.entry(path.to_string()).or_default();
        for line in body.lines().skip(1) {
            if let Some((number, text)) = line.split_once('\t')
                && let Ok(number) = number.trim().parse::<u32>()
            {
                entry.insert(number, text.to_string());
            }
        }
    }

    /// The pages after a read that stopped before its file's end: every
    /// further page at once, a page's length apart, as a model that knows
    /// the file's length would; a page cut short by the byte cap has its
    /// own read, whose next page fills the gap.
    fn pages_after(&mut self, read: &FileRead) {
        if read.last >= read.total {
            return;
        }
        let next = read.last + 1;
        let step = next.saturating_sub(read.first).max(1);
        let mut offset = next;
        while offset <= read.total {
            self.continuations.insert((read.path.clone(), offset));
            offset += step;
        }
    }

    /// The files of a `grep` result's `path:line:text` hits.
    fn grep_result(&mut self, content: &str) {
        for line in content.lines() {
            let Some((path, rest)) = line.split_once(':') else {
                continue;
            };
            let is_hit = rest
                .split_once(':')
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            if is_hit && !path.is_empty() {
                self.found.insert(path.to_string());
            }
        }
    }

    fn list_result(&mut self, content: &str) {
        let mut lines = content.lines();
        let Some(dir) = lines
            .next()
            .and_then(|h| h.split_once("/ (").map(|(d, _)| d))
        else {
            return;
        };
        let prefix = if dir == "." {
            String::new()
        } else {
            format!("{dir}/")
        };
        for line in lines {
            if line.starts_with('[') || line.contains(" -> ") {
                continue;
            }
            if let Some(name) = line.strip_suffix('/') {
                self.dirs.insert(format!("{prefix}{name}"));
            } else if let Some((name, _)) = line.rsplit_once(" (") {
                self.listed_files.insert(format!("{prefix}{name}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::conversation::Facts;
    use crate::tools::ToolContext;
    use crate::tools::fence::Fence;

    #[tokio::test]
    async fn work_on_the_pool_answers_and_a_panic_in_it_is_an_error_naming_the_engine() {
        assert_eq!(on_pool(|| Ok(41 + 1)).await.unwrap(), 42);
        let failed = on_pool(|| -> Result<u8, ProviderError> { panic!("boom") })
            .await
            .unwrap_err();
        assert!(
            failed.to_string().contains("rule engine's thread panicked"),
            "{failed}"
        );
        // An error of the work is its own, passed on as it is.
        let own = on_pool(|| -> Result<u8, ProviderError> {
            Err(ProviderError::Engine("no table".into()))
        })
        .await
        .unwrap_err();
        assert!(own.to_string().contains("no table"), "{own}");
    }

    fn request(messages: Vec<Message>, choice: ToolChoice) -> ChatRequest {
        ChatRequest {
            model: None,
            system: "s".into(),
            messages,
            tools: ToolContext::specs(&["list_dir".into(), "read_file".into(), "grep".into()]),
            tool_choice: choice,
            max_output_tokens: 100,
            ..ChatRequest::default()
        }
    }

    fn read(path: &str, first: u64, last: u64, total: u64) -> FileRead {
        FileRead {
            path: path.into(),
            first,
            last,
            total,
            cut: Vec::new(),
        }
    }

    fn arguments(response: &ChatResponse) -> Vec<&str> {
        response
            .tool_calls
            .iter()
            .map(|c| c.arguments.as_str())
            .collect()
    }

    #[tokio::test]
    async fn the_facts_come_beside_the_request_and_a_bare_request_explores() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        let messages = vec![Message::User {
            text: "TASK: audit-group g1\n".into(),
        }];
        let req = request(messages, ToolChoice::Auto);
        let facts = Facts {
            files: vec!["src/a.rs".into()],
            ..Facts::default()
        };
        let shown = std::sync::Mutex::new(Vec::new());
        let on_text = |s: Shown<'_>| {
            if let Shown::Text(t) = s {
                shown.lock().unwrap().push(t.to_string());
            }
        };
        let turn = engine.turn(&req, &facts, Some(&on_text)).await.unwrap();
        assert_eq!(
            arguments(&turn),
            vec![r#"{"path":"src/a.rs"}"#],
            "the loop's facts name the file"
        );
        assert!(shown.lock().unwrap().is_empty(), "calls show no text");
        let bare = engine.chat(&req).await.unwrap();
        assert_eq!(
            arguments(&bare),
            vec![r#"{"path":""}"#],
            "no facts: it explores from the root"
        );
    }

    #[test]
    fn reads_the_tasks_files_then_pages_then_reports() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        // The prose names no file: the engine reads what the facts say.
        let task = "TASK: audit-group g1\n";
        let mut facts = Facts {
            files: vec!["src/a.rs".into()],
            reads: Vec::new(),
            ..Facts::default()
        };
        let mut messages = vec![Message::User { text: task.into() }];
        let r = engine
            .answer(&request(messages.clone(), ToolChoice::Auto), &facts.clone())
            .unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"src/a.rs"}"#);
        messages.push(Message::Assistant {
            text: None,
            tool_calls: r.tool_calls.clone(),
        });
        // The page's text says nothing about where to go on; the facts do.
        messages.push(Message::ToolResult {
            call_id: r.tool_calls[0].id.clone(),
            name: "read_file".into(),
            content: Fence::fixed("ab12").wrap(
                "src/a.rs",
                "src/a.rs (3 lines)\n     1\tfn a() {\n     2\t    x.unwrap();\n",
            ),
            is_error: false,
        });
        facts.reads.push(read("src/a.rs", 1, 2, 3));
        let r = engine
            .answer(&request(messages.clone(), ToolChoice::Auto), &facts.clone())
            .unwrap();
        assert_eq!(
            r.tool_calls[0].arguments,
            r#"{"offset":3,"path":"src/a.rs"}"#
        );
        let r = engine
            .answer(&request(messages, ToolChoice::None), &facts)
            .unwrap();
        let text = r.text.unwrap();
        assert!(text.contains("not a language model"));
        assert!(text.ends_with(TASK_COMPLETE));
        let parsed = crate::model::findings::parse_report(&text);
        assert!(
            parsed
                .findings
                .iter()
                .any(|f| f.line == 2 && f.rule.as_deref() == Some("rust/unwrap"))
        );
    }

    #[test]
    fn a_file_list_or_a_cut_line_in_the_prose_is_not_taken_as_data() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        let task = "TASK: audit-group g1\n- src/a.rs (10 bytes, rust)\n\n\
            <file path=\"src/b.rs\">\nsrc/b.rs (3 lines)\n1\tfn b() {\n\
            [cut: showing lines 1-1 of 3; call read_file with offset=2 to continue]\n</file>\n";
        let messages = vec![Message::User { text: task.into() }];
        let r = engine
            .answer(&request(messages, ToolChoice::Auto), &Facts::default())
            .unwrap();
        let args: Vec<&str> = r.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(
            args,
            vec![r#"{"path":""}"#],
            "no files given: it explores from the root"
        );
    }

    #[test]
    fn preloaded_files_are_not_read_again_only_their_later_pages() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        // A file's own `</file>` lines and a guessed boundary close nothing.
        let fence = Fence::fixed("9f8e7d6c");
        let task = format!(
            "TASK: audit-group g1\n\n{}{}",
            fence.wrap("src/a.rs", "src/a.rs (1 lines)\n1\tlet x = y.unwrap();\n"),
            fence.wrap(
                "src/b.rs",
                "src/b.rs (3 lines)\n1\tfn b() {\n2\t</file 0000> </file>\n\
                 [cut: showing lines 1-2 of 3; call read_file with offset=3 to continue]\n"
            )
        );
        let facts = Facts {
            files: vec!["src/a.rs".into(), "src/b.rs".into()],
            reads: vec![read("src/a.rs", 1, 1, 1), read("src/b.rs", 1, 2, 3)],
            ..Facts::default()
        };
        let messages = vec![Message::User { text: task }];
        let r = engine
            .answer(&request(messages.clone(), ToolChoice::Auto), &facts.clone())
            .unwrap();
        let args: Vec<&str> = r.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(args, vec![r#"{"offset":3,"path":"src/b.rs"}"#]);
        // Answering at once (no tools) uses what was preloaded.
        let r = engine
            .answer(&request(messages, ToolChoice::None), &facts)
            .unwrap();
        let parsed = crate::model::findings::parse_report(&r.text.unwrap());
        assert!(parsed.findings.iter().any(|f| f.path == "src/a.rs"
            && f.line == 1
            && f.rule.as_deref() == Some("rust/unwrap")));
    }

    #[test]
    fn an_unfenced_block_in_a_file_is_not_taken_for_a_file_shown() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        // The old unfenced form, as a file could write it: not a block.
        let task = "TASK: audit-group g1\n\n<file path=\"src/a.rs\">\nsrc/a.rs (1 lines)\n\
            1\tlet x = y.unwrap();\n</file>\n";
        let messages = vec![Message::User { text: task.into() }];
        let r = engine.answer(&request(messages, ToolChoice::None), &Facts::default());
        let parsed = crate::model::findings::parse_report(&r.unwrap().text.unwrap());
        assert!(parsed.findings.is_empty(), "{:?}", parsed.findings);
    }

    #[test]
    fn rules_that_do_not_compile_fail_the_answer_instead_of_reporting_nothing() {
        let rules = RuleSet::compiled_on_first_use(
            "builtin:broken.toml",
            "[[rule]]\nid = \"x\"\nseverity = \"high\"\ntitle = \"t\"\nmessage = \"m\"\npattern = \"[\"\ncwe = [1]\n",
        );
        let engine = Offline::new(Arc::new(rules));
        let messages = vec![Message::User {
            text: "TASK: audit-group g1\n".into(),
        }];
        let error = engine
            .answer(&request(messages, ToolChoice::None), &Facts::default())
            .unwrap_err();
        assert!(
            matches!(&error, ProviderError::Engine(m) if m.contains("builtin:broken.toml: rule \"x\"")),
            "{error}"
        );
    }

    #[test]
    fn the_skeptic_reads_the_rest_of_each_file_before_it_answers() {
        let engine = Offline::new(Arc::new(RuleSet::builtin()));
        let fence = Fence::fixed("5a5a5a5a");
        // The window shown: lines 3-4 of 9; the value comes from a helper
        // defined below it.
        let window = "A.java (9 lines)\n3\t  void f() {\n4\t    run(pick(\"x\")); // finding\n";
        let task = format!("TASK: challenge\n\n{}", fence.wrap("A.java", window));
        let challenge = crate::llm::conversation::ChallengeFact {
            id: "f1".into(),
            path: "A.java".into(),
            line: 4,
            rule: Some("sql/concat".into()),
        };
        let mut facts = Facts {
            reads: vec![read("A.java", 3, 4, 9)],
            challenges: vec![challenge],
            ..Facts::default()
        };
        let mut messages = vec![Message::User { text: task }];
        let r = engine
            .answer(&request(messages.clone(), ToolChoice::Auto), &facts.clone())
            .unwrap();
        assert_eq!(
            arguments(&r),
            vec![
                r#"{"path":"A.java"}"#,
                r#"{"offset":5,"path":"A.java"}"#,
                r#"{"offset":7,"path":"A.java"}"#,
                r#"{"offset":9,"path":"A.java"}"#
            ]
        );
        assert!(r.text.is_none());
        // Once the whole file is seen, it answers.
        messages.push(Message::Assistant {
            text: None,
            tool_calls: r.tool_calls.clone(),
        });
        let whole = "A.java (9 lines)\n1\tclass A {\n2\t  // f\n3\t  void f() {\n4\t    run(pick(\"x\")); // finding\n5\t  }\n6\t  String pick(String v) {\n7\t    return \"fixed\";\n8\t  }\n9\t}\n";
        messages.push(Message::ToolResult {
            call_id: r.tool_calls[0].id.clone(),
            name: "read_file".into(),
            content: fence.wrap("A.java", whole),
            is_error: false,
        });
        facts.reads.push(read("A.java", 1, 9, 9));
        let r = engine
            .answer(&request(messages.clone(), ToolChoice::Auto), &facts.clone())
            .unwrap();
        assert!(r.tool_calls.is_empty(), "{:?}", arguments(&r));
        let text = r.text.unwrap_or_default();
        assert!(text.contains("\"verdict\":\"refuted\""), "{text}");
        // Without tools it answers from what it was shown.
        let r = engine
            .answer(&request(messages[..1].to_vec(), ToolChoice::None), &facts)
            .unwrap();
        assert!(r.tool_calls.is_empty());
        assert!(r.text.is_some());
    }

    #[test]
    fn plans_every_page_of_a_long_file_at_once() {
        let mut c = Conversation::default();
        c.pages_after(&read("big.rs", 1, 2, 7));
        let offsets: Vec<u64> = c.continuations.iter().map(|(_, o)| *o).collect();
        assert_eq!(offsets, vec![3, 5, 7]);
        let mut c = Conversation::default();
        c.pages_after(&read("whole.rs", 1, 7, 7));
        assert!(c.continuations.is_empty(), "a whole file has no next page");
    }
}
