//! Reduce: deduplicate and rank the verified findings, and let the reducer
//! agent write the executive summary.
//!
//! Takes the checked findings and the group reports; gives a [`Reduced`]:
//! findings deduplicated by a stable fingerprint (path, normalised rule or
//! title, evidence text; never raw line numbers, which drift), ranked, and
//! a summary. When the reducer's input exceeds its context budget it is
//! reduced in batches and the batch summaries are reduced again (a tree).
//! The reduction is a [`Question`] to the run's harness: the offline rule
//! engine answers it with a counted summary, as a language model run that
//! stopped early gets one; the summary says which of the two it is.
//! A finding the skeptic refuted is kept apart ([`Reduced::refuted`]): out
//! of the ranking and the gate, never out of the report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agents::{AgentDefinition, GroupReport, Harness, Question};
use crate::llm::conversation::{ChatRequest, FinishReason, Message, ToolChoice, Usage};
use crate::model::challenge::{Challenge, Stance};
use crate::model::findings::{Finding, Origin, Severity};
use crate::stages::verify::Checked;

/// A deduplicated finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    pub fingerprint: String,
    #[serde(flatten)]
    pub finding: Finding,
    /// Agents and groups that reported it (several after dedupe).
    pub agents: Vec<String>,
    pub groups: Vec<String>,
    pub verified: bool,
    pub note: Option<String>,
    /// A claim whose quote failed, taken at its cited lines and confirmed
    /// by the skeptic (or, unverified, one that was not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub located: bool,
    /// What the skeptic said of it (absent: not challenged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<Challenge>,
}

/// What reduce gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reduced {
    /// Verified findings, ranked.
    pub findings: Vec<Merged>,
    /// Findings that failed verification, sorted by path and line.
    pub unverified: Vec<Merged>,
    /// Verified findings the skeptic refuted: out of the gate, listed
    /// with its reason, sorted by path and line.
    #[serde(default)]
    pub refuted: Vec<Merged>,
    pub summary: String,
    /// Notes on how the summary was made (batches, failures).
    pub notes: Vec<String>,
    pub usage: Usage,
}

/// A shard's share, deduplicated but not reduced: no model is asked, the
/// reducer runs once in `fanscan merge` over every shard's reports.
pub(crate) fn partial(checked: &[Checked], shard: &str) -> Reduced {
    let (findings, unverified, refuted) = dedupe_all(checked);
    Reduced {
        summary: format!(
            "Partial report of shard {shard}: {} verified findings in this shard's groups. \
             The summary is written once, by `fanscan merge` over every shard's part.",
            findings.len()
        ),
        findings,
        unverified,
        refuted,
        notes: Vec::new(),
        usage: Usage::default(),
    }
}

/// The stable fingerprint of a finding: path, rule (or title), evidence
/// and which occurrence of that evidence in the file it is. The tool
/// layer's secrets quote no evidence (they must not be echoed): for them
/// `occurrence` is their rank among that rule's lines in the file, so that
/// lines inserted above do not change it either.
pub(crate) fn fingerprint(f: &Finding, occurrence: u32) -> String {
    let key = f
        .rule
        .as_deref()
        .map(normalize)
        .unwrap_or_else(|| normalize(&f.title));
    // Tool-layer findings have no evidence: the kind and its rank identify them.
    let anchor = match (&f.evidence, f.origin) {
        (Some(e), _) => normalize(e),
        (None, Origin::ToolLayer) => "tool layer".to_string(),
        (None, Origin::Agent) => normalize(&f.title),
    };
    let hash =
        crate::util::sha256_hex(format!("{}\n{key}\n{anchor}\n{occurrence}", f.path).as_bytes());
    hash[..16].to_string()
}

/// Lowercase, whitespace removed: reformatting does not change identity.
fn normalize(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
}

/// Deduplicates checked findings: the same fingerprint is one finding, at
/// its most serious severity, naming every agent and group that saw it.
/// Refuted findings are left out (see [`dedupe_all`]).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn dedupe(checked: &[Checked]) -> (Vec<Merged>, Vec<Merged>) {
    let (verified, unverified, _) = dedupe_all(checked);
    (verified, unverified)
}

/// [`dedupe`], also giving the verified findings the skeptic refuted,
/// apart.
pub(crate) fn dedupe_all(checked: &[Checked]) -> (Vec<Merged>, Vec<Merged>, Vec<Merged>) {
    let mut verified: BTreeMap<String, Merged> = BTreeMap::new();
    let mut unverified: BTreeMap<String, Merged> = BTreeMap::new();
    let mut refuted: BTreeMap<String, Merged> = BTreeMap::new();
    let ranks = tool_layer_ranks(checked);
    for c in checked {
        let occurrence = match (&c.finding.evidence, c.finding.origin) {
            (None, Origin::ToolLayer) => ranks
                .get(&(
                    c.finding.path.as_str(),
                    rule_or_title(&c.finding),
                    c.finding.line,
                ))
                .copied()
                .unwrap_or(0),
            (Some(_), _) | (None, Origin::Agent) => c.occurrence,
        };
        let fp = fingerprint(&c.finding, occurrence);
        let stance = c.challenge.as_ref().map(|ch| ch.stance);
        let target = match (c.verified, stance) {
            (true, Some(Stance::Refuted)) => &mut refuted,
            (true, _) => &mut verified,
            (false, _) => &mut unverified,
        };
        let entry = target.entry(fp.clone()).or_insert_with(|| Merged {
            fingerprint: fp,
            finding: c.finding.clone(),
            agents: Vec::new(),
            groups: Vec::new(),
            verified: c.verified,
            note: c.note.clone(),
            located: c.located.is_some(),
            challenge: c.challenge.clone(),
        });
        if c.finding.severity > entry.finding.severity {
            entry.finding.severity = c.finding.severity;
        }
        // One report that names the weakness names it for all.
        if entry.finding.cwe.id.is_none() && c.finding.cwe.id.is_some() {
            entry.finding.cwe = c.finding.cwe.clone();
        }
        if !entry.agents.contains(&c.agent) {
            entry.agents.push(c.agent.clone());
        }
        if !entry.groups.contains(&c.group) {
            entry.groups.push(c.group.clone());
        }
    }
    let mut verified: Vec<Merged> = verified.into_values().collect();
    let mut unverified: Vec<Merged> = unverified.into_values().collect();
    let mut refuted: Vec<Merged> = refuted.into_values().collect();
    verified.sort_by(default_rank);
    unverified.sort_by(|a, b| position(a).cmp(&position(b)));
    refuted.sort_by(|a, b| position(a).cmp(&position(b)));
    (verified, unverified, refuted)
}

fn rule_or_title(f: &Finding) -> &str {
    f.rule.as_deref().unwrap_or(&f.title)
}

/// Each evidence-less tool-layer finding's rank among the distinct lines
/// of its rule in its file, by (path, rule, line).
fn tool_layer_ranks(checked: &[Checked]) -> BTreeMap<(&str, &str, u32), u32> {
    let mut lines: BTreeMap<(&str, &str), std::collections::BTreeSet<u32>> = BTreeMap::new();
    for c in checked {
        if c.finding.evidence.is_none() && c.finding.origin == Origin::ToolLayer {
            lines
                .entry((c.finding.path.as_str(), rule_or_title(&c.finding)))
                .or_default()
                .insert(c.finding.line);
        }
    }
    let mut ranks = BTreeMap::new();
    for ((path, rule), set) in lines {
        for (rank, line) in set.into_iter().enumerate() {
            ranks.insert((path, rule, line), u32::try_from(rank).unwrap_or(u32::MAX));
        }
    }
    ranks
}

fn position(m: &Merged) -> (&str, u32, &str) {
    (
        m.finding.path.as_str(),
        m.finding.line,
        m.finding.rule.as_deref().unwrap_or(&m.finding.title),
    )
}

/// Most serious first, then by path, line and rule.
fn default_rank(a: &Merged, b: &Merged) -> std::cmp::Ordering {
    b.finding
        .severity
        .cmp(&a.finding.severity)
        .then_with(|| position(a).cmp(&position(b)))
}

/// The reducer's input, as a JSON block in its task.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ReduceInput {
    pub groups: Vec<GroupNote>,
    pub findings: Vec<FindingNote>,
    /// Summaries of earlier batches (the upper levels of the tree).
    #[serde(default)]
    pub batch_summaries: Vec<String>,
    /// A re-run's reduction of only what changed ([`Reducer::reduce_since`]):
    /// the last run's summary, to update with the groups given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_summary: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct GroupNote {
    pub group: String,
    pub status: String,
    pub summary: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FindingNote {
    pub fingerprint: String,
    pub path: String,
    pub line: u32,
    pub severity: Severity,
    pub title: String,
    pub rule: Option<String>,
}

#[derive(Deserialize)]
struct ReduceAnswer {
    #[serde(default)]
    summary: String,
    #[serde(default)]
    ranking: Vec<String>,
}

fn render_task(input: &ReduceInput) -> Result<String, serde_json::Error> {
    let body = serde_json::to_string(input)?;
    if input.previous_summary.is_some() {
        return Ok(format!(
            "TASK: reduce\nUpdate the previous executive summary (`previous_summary`) with these groups, the only ones whose results changed since it was written (their findings are all given; the other groups' findings stand as they were), and rank these groups' findings.\n\n```json\n{body}\n```\n"
        ));
    }
    Ok(format!(
        "TASK: reduce\nMerge these audit results into the executive summary and a ranking of the fingerprints.\n\n```json\n{body}\n```\n"
    ))
}

/// Why a summary is counted rather than written by a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counted {
    /// The offline rule engine answered the reduction.
    RuleEngine,
    /// A language model ran, but the run stopped early (budget, Ctrl-C),
    /// so the reducer was not asked.
    StoppedEarly,
    /// The reducer model refused to write the summary.
    Refused,
}

/// How the reducer runs.
pub(crate) struct Reducer<'a> {
    pub definition: &'a AgentDefinition,
    /// The run's provider and output cap.
    pub harness: &'a Harness,
    /// Estimated input tokens one reducer call may take.
    pub context_tokens: u64,
    /// The run stopped early: spend nothing more, count the summary.
    pub stopped_early: bool,
}

/// The reducer's batch budget: its model's context (its own, else the
/// run's `context_tokens`), less its answer.
pub(crate) fn batch_tokens(
    definition: &AgentDefinition,
    context_tokens: u64,
    max_output_tokens: u32,
) -> u64 {
    definition
        .context_tokens
        .unwrap_or(context_tokens)
        .saturating_sub(u64::from(max_output_tokens))
}

/// The reduction as a question to the run's harness: a language model
/// is asked (in batches, or only what changed since `since`'s reduction);
/// the offline rule engine counts the whole of it.
struct Reduction<'a> {
    reducer: &'a Reducer<'a>,
    checked: &'a [Checked],
    reports: &'a [GroupReport],
    /// The groups whose results changed, and the last run's reduction.
    since: Option<(&'a std::collections::BTreeSet<String>, &'a Reduced)>,
}

impl Question for Reduction<'_> {
    type Answer = Reduced;

    async fn ask(&self) -> Reduced {
        match self.since {
            Some(since) => {
                self.reducer
                    .asked_since(self.checked, self.reports, since)
                    .await
            }
            None => self.reducer.asked(self.checked, self.reports).await,
        }
    }

    async fn counted(&self) -> Reduced {
        self.reducer.count(self.checked, self.reports)
    }
}

/// What the reducer is told of a group.
fn group_note(r: &GroupReport) -> GroupNote {
    GroupNote {
        group: r.group.clone(),
        status: r.status.as_str().to_string(),
        summary: clip(&prose_of(&r.summary), 1500),
    }
}

/// What the reducer is told of a finding.
fn finding_note(m: &Merged) -> FindingNote {
    FindingNote {
        fingerprint: m.fingerprint.clone(),
        path: m.finding.path.clone(),
        line: m.finding.line,
        severity: m.finding.severity,
        title: m.finding.title.clone(),
        rule: m.finding.rule.clone(),
    }
}

/// The note of a run that stopped early.
const STOPPED_NOTE: &str =
    "the run stopped early, so the reducer was not asked: the summary is counted, not written";

impl Reducer<'_> {
    /// Batches exist for a model's context; a counted summary takes
    /// everything at once.
    fn budget(&self) -> u64 {
        if self.stopped_early {
            u64::MAX
        } else {
            self.context_tokens
        }
    }

    /// Dedupes, has the reduction answered, applies its ranking.
    pub(crate) async fn reduce(&self, checked: &[Checked], reports: &[GroupReport]) -> Reduced {
        self.harness
            .answer(&Reduction {
                reducer: self,
                checked,
                reports,
                since: None,
            })
            .await
    }

    /// The offline rule engine's reduction: everything at once, counted.
    fn count(&self, checked: &[Checked], reports: &[GroupReport]) -> Reduced {
        let (mut findings, unverified, refuted) = dedupe_all(checked);
        let input = ReduceInput {
            groups: reports.iter().map(group_note).collect(),
            findings: findings.iter().map(finding_note).collect(),
            ..ReduceInput::default()
        };
        let notes = if self.stopped_early {
            vec![STOPPED_NOTE.to_string()]
        } else {
            Vec::new()
        };
        let answer = counted_summary(&input, Counted::RuleEngine);
        apply_ranking(&mut findings, &answer.ranking);
        Reduced {
            findings,
            unverified,
            refuted,
            summary: answer.summary,
            notes,
            usage: Usage::default(),
        }
    }

    /// The reducer model's reduction: asked in batches within its context.
    async fn asked(&self, checked: &[Checked], reports: &[GroupReport]) -> Reduced {
        let (mut findings, unverified, refuted) = dedupe_all(checked);
        let groups: Vec<GroupNote> = reports.iter().map(group_note).collect();
        let notes_of: Vec<FindingNote> = findings.iter().map(finding_note).collect();
        let mut usage = Usage::default();
        let mut notes = Vec::new();
        let answer = self.tree(groups, notes_of, &mut usage, &mut notes, 0).await;
        let summary = match answer {
            Some(a) => {
                apply_ranking(&mut findings, &a.ranking);
                a.summary
            }
            None => String::new(),
        };
        Reduced {
            findings,
            unverified,
            refuted,
            summary,
            notes,
            usage,
        }
    }

    /// A re-run's reduction when only the groups `changed` differ from
    /// those `previous` reduced: the reducer is given the last summary and
    /// only the changed groups and their findings, and the ranking keeps the
    /// last one's order with the newly ranked findings interleaved. What a
    /// 1% change costs then follows the change, not the repository. The
    /// rule engine's reduction, or a run stopped early, covers everything
    /// (counted).
    pub(crate) async fn reduce_since(
        &self,
        checked: &[Checked],
        reports: &[GroupReport],
        changed: &std::collections::BTreeSet<String>,
        previous: &Reduced,
    ) -> Reduced {
        self.harness
            .answer(&Reduction {
                reducer: self,
                checked,
                reports,
                since: Some((changed, previous)),
            })
            .await
    }

    /// The reducer model's update of `previous` with the groups `changed`.
    async fn asked_since(
        &self,
        checked: &[Checked],
        reports: &[GroupReport],
        (changed, previous): (&std::collections::BTreeSet<String>, &Reduced),
    ) -> Reduced {
        if self.stopped_early || previous.summary.is_empty() {
            return self.asked(checked, reports).await;
        }
        let (mut findings, unverified, refuted) = dedupe_all(checked);
        let groups: Vec<GroupNote> = reports
            .iter()
            .filter(|r| changed.contains(&r.group))
            .map(group_note)
            .collect();
        let findings_of: Vec<FindingNote> = findings
            .iter()
            .filter(|m| m.groups.iter().any(|g| changed.contains(g)))
            .map(finding_note)
            .collect();
        let input = ReduceInput {
            groups,
            findings: findings_of,
            previous_summary: Some(previous.summary.clone()),
            ..ReduceInput::default()
        };
        let mut usage = Usage::default();
        let mut notes = Vec::new();
        let answer = self.ask(&input, &mut usage, &mut notes).await;
        let summary = match answer {
            Some(a) => {
                let before: Vec<String> = previous
                    .findings
                    .iter()
                    .map(|m| m.fingerprint.clone())
                    .collect();
                let longest = a.ranking.len().max(before.len());
                let ranking: Vec<String> = (0..longest)
                    .flat_map(|i| {
                        [a.ranking.get(i), before.get(i)]
                            .into_iter()
                            .flatten()
                            .cloned()
                    })
                    .collect();
                apply_ranking(&mut findings, &ranking);
                a.summary
            }
            None => String::new(),
        };
        notes.push(format!(
            "the summary was updated from the last run's with the {} groups whose results changed",
            changed.len()
        ));
        Reduced {
            findings,
            unverified,
            refuted,
            summary,
            notes,
            usage,
        }
    }

    /// Reduces `groups` and `findings`, in batches when they are over the
    /// context budget.
    async fn tree(
        &self,
        groups: Vec<GroupNote>,
        findings: Vec<FindingNote>,
        usage: &mut Usage,
        notes: &mut Vec<String>,
        depth: u32,
    ) -> Option<ReduceAnswer> {
        let input = ReduceInput {
            groups,
            findings,
            ..ReduceInput::default()
        };
        let size =
            crate::util::estimate_tokens(render_task(&input).map_or(u64::MAX, |t| t.len() as u64));
        let budget = self.budget();
        if size <= budget || depth >= 4 || (input.groups.len() <= 1 && input.findings.len() <= 1) {
            return self.ask(&input, usage, notes).await;
        }
        // Split in batches that each fit, reduce each, then reduce the
        // batch summaries with the full ranking list kept compact.
        let batches = (size / budget.max(1) + 1) as usize;
        let group_chunk = input.groups.len().div_ceil(batches).max(1);
        let finding_chunk = input.findings.len().div_ceil(batches).max(1);
        let mut group_parts = input.groups.chunks(group_chunk).map(<[GroupNote]>::to_vec);
        let mut finding_parts = input
            .findings
            .chunks(finding_chunk)
            .map(<[FindingNote]>::to_vec);
        let mut summaries = Vec::new();
        let mut rankings = Vec::new();
        for _ in 0..batches {
            let g = group_parts.next().unwrap_or_default();
            let f = finding_parts.next().unwrap_or_default();
            if g.is_empty() && f.is_empty() {
                continue;
            }
            if let Some(a) = Box::pin(self.tree(g, f, usage, notes, depth + 1)).await {
                summaries.push(a.summary);
                rankings.push(a.ranking);
            }
        }
        notes.push(format!(
            "the reducer's input was over its {budget} token budget: reduced in {} batches, then merged",
            summaries.len()
        ));
        let top = ReduceInput {
            batch_summaries: summaries,
            ..ReduceInput::default()
        };
        let mut merged = self.ask(&top, usage, notes).await?;
        // Interleave batch rankings by position: each batch's order is kept.
        let longest = rankings.iter().map(Vec::len).max().unwrap_or(0);
        merged.ranking = (0..longest)
            .flat_map(|i| rankings.iter().filter_map(move |r| r.get(i).cloned()))
            .collect();
        Some(merged)
    }

    async fn ask(
        &self,
        input: &ReduceInput,
        usage: &mut Usage,
        notes: &mut Vec<String>,
    ) -> Option<ReduceAnswer> {
        if self.stopped_early {
            if !notes.iter().any(|n| n.contains("counted, not written")) {
                notes.push(STOPPED_NOTE.into());
            }
            return Some(counted_summary(input, Counted::StoppedEarly));
        }
        let task = match render_task(input) {
            Ok(task) => task,
            Err(e) => {
                notes.push(format!(
                    "the reducer's input could not be encoded ({e}); the summary is counted, not written"
                ));
                return Some(counted_summary(input, Counted::StoppedEarly));
            }
        };
        let request = ChatRequest {
            model: self.definition.model.clone(),
            system: self.definition.prompt.clone(),
            messages: vec![Message::User { text: task }],
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
            max_output_tokens: self.harness.max_output_tokens(),
            counter: crate::llm::tokens::TokenCounter::for_model(
                self.harness.model_for(self.definition),
            ),
            ..ChatRequest::default()
        };
        match self.harness.provider().chat(&request).await {
            Ok(response) if response.finish == FinishReason::Refusal => {
                usage.add(response.usage_or_estimate(&request));
                let words = response.text.as_deref().map(str::trim).unwrap_or_default();
                notes.push(format!(
                    "the reducer model refused to write the summary (\"{}\"); the summary is counted, not written",
                    words.chars().take(300).collect::<String>()
                ));
                Some(counted_summary(input, Counted::Refused))
            }
            Ok(response) => {
                usage.add(response.usage_or_estimate(&request));
                let text = response.text.unwrap_or_default();
                match parse_answer(&text) {
                    Some(a) => Some(a),
                    None => {
                        notes.push("the reducer's answer had no JSON block; its text is used as the summary".into());
                        Some(ReduceAnswer {
                            summary: text.trim().to_string(),
                            ranking: Vec::new(),
                        })
                    }
                }
            }
            Err(e) => {
                notes.push(format!(
                    "the reducer failed ({e}); findings keep the default ranking"
                ));
                None
            }
        }
    }
}

fn parse_answer(text: &str) -> Option<ReduceAnswer> {
    for block in text.split("```").skip(1).step_by(2) {
        let body = block.trim_start_matches("json").trim();
        if let Ok(a) = serde_json::from_str::<ReduceAnswer>(body) {
            return Some(a);
        }
    }
    let (a, b) = (text.find('{')?, text.rfind('}')?);
    serde_json::from_str(text.get(a..=b)?).ok()
}

/// Reorders by the reducer's ranking: named fingerprints first in its
/// order, the rest after in the default order. Unknown names are ignored.
fn apply_ranking(findings: &mut Vec<Merged>, ranking: &[String]) {
    let position: BTreeMap<&str, usize> = ranking
        .iter()
        .enumerate()
        .rev()
        .map(|(i, fp)| (fp.as_str(), i))
        .collect();
    let mut indexed: Vec<(usize, Merged)> = findings
        .drain(..)
        .map(|m| {
            (
                position
                    .get(m.fingerprint.as_str())
                    .copied()
                    .unwrap_or(usize::MAX),
                m,
            )
        })
        .collect();
    indexed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| default_rank(&a.1, &b.1)));
    findings.extend(indexed.into_iter().map(|(_, m)| m));
}

/// The prose part of an agent summary (without its JSON block).
fn prose_of(summary: &str) -> String {
    summary
        .split("```")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The counted summary: counts, the most frequent rules, the most affected
/// files, and the default ranking. Its first line says what made it: the
/// offline rule engine, or counting because the run stopped early.
fn counted_summary(input: &ReduceInput, counted: Counted) -> ReduceAnswer {
    let mut summary = match counted {
        Counted::RuleEngine => String::from(
            "Offline rule engine (not a language model): this summary is counted, not written.\n\n",
        ),
        Counted::StoppedEarly => String::from(
            "Counted summary: the run stopped early, so the reducer model was not asked; these counts are not a model's words.\n\n",
        ),
        Counted::Refused => String::from(
            "Counted summary: the reducer model refused to write one; these counts are not a model's words.\n\n",
        ),
    };
    if !input.batch_summaries.is_empty() {
        let parts: Vec<String> = input
            .batch_summaries
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let body = b
                    .lines()
                    .filter(|l| {
                        !l.starts_with("Offline rule engine") && !l.starts_with("Counted summary:")
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                format!("Batch {}:\n{}", i + 1, body.trim())
            })
            .collect();
        summary.push_str(&parts.join("\n\n"));
    } else {
        let mut by_severity: BTreeMap<Severity, usize> = BTreeMap::new();
        let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
        let mut by_file: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &input.findings {
            *by_severity.entry(f.severity).or_default() += 1;
            *by_rule
                .entry(f.rule.clone().unwrap_or_else(|| f.title.clone()))
                .or_default() += 1;
            *by_file.entry(f.path.as_str()).or_default() += 1;
        }
        let severities = Severity::DESCENDING
            .iter()
            .filter_map(|s| by_severity.get(s).map(|n| format!("{n} {}", s.as_str())))
            .collect::<Vec<_>>()
            .join(", ");
        summary.push_str(&format!(
            "- {} in {} from {}{}.\n",
            crate::util::count(input.findings.len(), "verified finding"),
            crate::util::count(by_file.len(), "file"),
            crate::util::count(input.groups.len(), "group"),
            if severities.is_empty() {
                String::new()
            } else {
                format!(" ({severities})")
            }
        ));
        let mut rules: Vec<(usize, String)> = by_rule.into_iter().map(|(r, n)| (n, r)).collect();
        rules.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        if !rules.is_empty() {
            let top: Vec<String> = rules
                .iter()
                .take(5)
                .map(|(n, r)| format!("`{r}` ({n})"))
                .collect();
            summary.push_str(&format!("- Most frequent: {}.\n", top.join(", ")));
        }
        let mut files: Vec<(usize, &str)> = by_file.into_iter().map(|(p, n)| (n, p)).collect();
        files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        if !files.is_empty() {
            let top: Vec<String> = files
                .iter()
                .take(5)
                .map(|(n, p)| format!("`{p}` ({n})"))
                .collect();
            summary.push_str(&format!("- Most affected files: {}.\n", top.join(", ")));
        }
        if let Some(f) = input.findings.iter().max_by(|a, b| {
            a.severity
                .cmp(&b.severity)
                .then_with(|| b.path.cmp(&a.path))
        }) {
            summary.push_str(&format!(
                "- Fix first: {} at `{}:{}` ({}).\n",
                f.title,
                f.path,
                f.line,
                f.severity.as_str()
            ));
        }
    }
    let mut ranked: Vec<&FindingNote> = input.findings.iter().collect();
    ranked.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.line.cmp(&b.line))
    });
    ReduceAnswer {
        summary: summary.trim_end().to_string(),
        ranking: ranked.iter().map(|f| f.fingerprint.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(path: &str, line: u32, evidence: &str, severity: Severity, group: &str) -> Checked {
        Checked {
            finding: Finding {
                path: path.into(),
                line,
                end_line: None,
                severity,
                title: "Unwrap".into(),
                detail: String::new(),
                evidence: Some(evidence.into()),
                rule: Some("rust/unwrap".into()),
                cwe: crate::model::findings::FindingCwe::default(),
                origin: Origin::Agent,
                seen: None,
            },
            group: group.into(),
            agent: "auditor".into(),
            verified: true,
            note: None,
            occurrence: 0,
            located: None,
            challenge: None,
        }
    }

    #[test]
    fn fingerprints_ignore_line_drift_and_whitespace() {
        let a = checked("a.rs", 3, "x.unwrap()", Severity::Low, "g1");
        let b = checked("a.rs", 9, "x.unwrap( )", Severity::Low, "g1");
        let c = checked("a.rs", 9, "y.unwrap()", Severity::Low, "g1");
        assert_eq!(fingerprint(&a.finding, 0), fingerprint(&b.finding, 0));
        assert_ne!(fingerprint(&a.finding, 0), fingerprint(&c.finding, 0));
        assert_ne!(
            fingerprint(&a.finding, 0),
            fingerprint(&a.finding, 1),
            "a second identical line"
        );
        let mut moved = a.finding.clone();
        moved.path = "b.rs".into();
        assert_ne!(fingerprint(&a.finding, 0), fingerprint(&moved, 0));
    }

    /// An evidence-less secret of the tool layer at `line`.
    fn secret(line: u32, group: &str) -> Checked {
        let mut c = checked("k.py", line, "", Severity::High, group);
        c.finding.evidence = None;
        c.finding.origin = Origin::ToolLayer;
        c.finding.rule = Some("secret/password".into());
        c
    }

    #[test]
    fn tool_layer_secrets_keep_their_fingerprints_when_lines_are_inserted_above() {
        let fps = |list: &[Checked]| -> Vec<String> {
            let (verified, _) = dedupe(list);
            let mut by_line: Vec<(u32, String)> = verified
                .into_iter()
                .map(|m| (m.finding.line, m.fingerprint))
                .collect();
            by_line.sort();
            by_line.into_iter().map(|(_, fp)| fp).collect()
        };
        let before = fps(&[secret(3, "g"), secret(8, "g")]);
        // Five lines inserted at the top; the same secret seen by two groups.
        let after = fps(&[secret(8, "g"), secret(13, "g"), secret(13, "h")]);
        assert_eq!(before.len(), 2);
        assert_eq!(before, after);
        assert_ne!(before[0], before[1], "two secrets stay two findings");
    }

    #[test]
    fn dedupe_merges_and_keeps_the_highest_severity() {
        let list = vec![
            checked("a.rs", 3, "x.unwrap()", Severity::Low, "g1"),
            checked("a.rs", 4, "x.unwrap()", Severity::High, "g2"),
            checked("b.rs", 1, "y.unwrap()", Severity::Medium, "g1"),
        ];
        let (verified, unverified) = dedupe(&list);
        assert!(unverified.is_empty());
        assert_eq!(verified.len(), 2);
        assert_eq!(verified[0].finding.severity, Severity::High);
        assert_eq!(verified[0].groups, vec!["g1", "g2"]);
    }

    #[test]
    fn ranking_puts_named_first_and_ignores_unknown() {
        let list = vec![
            checked("a.rs", 3, "x", Severity::High, "g"),
            checked("b.rs", 3, "y", Severity::Low, "g"),
        ];
        let (mut verified, _) = dedupe(&list);
        let low = verified[1].fingerprint.clone();
        apply_ranking(&mut verified, &["nope".into(), low.clone()]);
        assert_eq!(verified[0].fingerprint, low);
    }

    #[test]
    fn counted_summaries_are_deterministic_and_say_what_made_them() {
        let input = ReduceInput {
            groups: vec![],
            findings: vec![FindingNote {
                fingerprint: "f1".into(),
                path: "a.rs".into(),
                line: 1,
                severity: Severity::High,
                title: "t".into(),
                rule: Some("r".into()),
            }],
            batch_summaries: vec![],
            previous_summary: None,
        };
        let a = counted_summary(&input, Counted::RuleEngine);
        let b = counted_summary(&input, Counted::RuleEngine);
        assert_eq!((&a.summary, &a.ranking), (&b.summary, &b.ranking));
        assert_eq!(a.ranking, vec!["f1"]);
        assert!(
            a.summary
                .contains("- 1 verified finding in 1 file from 0 groups (1 high)."),
            "{}",
            a.summary
        );
        assert!(
            a.summary
                .starts_with("Offline rule engine (not a language model)")
        );
        // A language model's run stopped early is not called a rule engine.
        let stopped = counted_summary(&input, Counted::StoppedEarly);
        assert!(
            stopped
                .summary
                .starts_with("Counted summary: the run stopped early")
        );
        assert!(!stopped.summary.contains("rule engine"));
    }

    /// A language model stand-in for the tree test: it answers a reducer
    /// task with the counted summary of what it was given.
    struct CountingModel;

    impl crate::llm::providers::Provider for CountingModel {
        fn name(&self) -> &str {
            "counting"
        }
        fn model(&self) -> &str {
            "counting"
        }
        fn engine(&self) -> crate::llm::providers::EngineKind {
            crate::llm::providers::EngineKind::Llm
        }
        fn chat<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> futures::future::BoxFuture<
            'a,
            Result<crate::llm::conversation::ChatResponse, crate::llm::providers::ProviderError>,
        > {
            let Some(Message::User { text }) = request.messages.first() else {
                panic!("the reducer sends one user message");
            };
            let body = text
                .split("```json")
                .nth(1)
                .unwrap()
                .split("```")
                .next()
                .unwrap();
            let input: ReduceInput = serde_json::from_str(body.trim()).unwrap();
            let a = counted_summary(&input, Counted::RuleEngine);
            let text = serde_json::json!({"summary": a.summary, "ranking": a.ranking}).to_string();
            Box::pin(async move {
                Ok(crate::llm::conversation::ChatResponse {
                    text: Some(text),
                    tool_calls: Vec::new(),
                    usage: None,
                    finish: crate::llm::conversation::FinishReason::Stop,
                })
            })
        }
    }

    #[tokio::test]
    async fn input_over_the_budget_is_reduced_in_batches_as_a_tree() {
        let provider = CountingModel;
        let dir = tempfile::tempdir().unwrap();
        let agents = crate::agents::AgentSet::load(dir.path()).unwrap();
        let list: Vec<Checked> = (0..200)
            .map(|i| checked(&format!("f{i}.rs"), 1, "x.unwrap()", Severity::Low, "g"))
            .collect();
        let harness = crate::agents::Harness::new(std::sync::Arc::new(provider), 1000, 1);
        let reducer = Reducer {
            definition: agents.get("reducer").unwrap(),
            harness: &harness,
            context_tokens: 2_000,
            stopped_early: false,
        };
        let reduced = reducer.reduce(&list, &[]).await;
        assert_eq!(reduced.findings.len(), 200);
        assert!(
            reduced.notes.iter().any(|n| n.contains("batches")),
            "{:?}",
            reduced.notes
        );
        assert!(reduced.summary.contains("verified findings"));
        // Every fingerprint keeps its place in some batch's ranking.
        let mut fps: Vec<&str> = reduced
            .findings
            .iter()
            .map(|m| m.fingerprint.as_str())
            .collect();
        fps.sort();
        fps.dedup();
        assert_eq!(fps.len(), 200);
    }
}
