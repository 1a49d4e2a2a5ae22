//! What the skeptic says of a finding, and how its answer is read.
//!
//! Takes the text of a skeptic's final answer and the ids it was asked
//! about; gives one [`Challenge`] per id: `confirmed`, `refuted` or
//! `uncertain`, a confidence from 1 to 10 (when the model gave one), one
//! sentence why and the data flow as `path:line` steps. An answer that is
//! no usable verdict for an id (not a list of verdicts, no entry, a broken
//! one) is `no_verdict` with why ([`NoVerdict`]): never `refuted`, never
//! lost, and kept like a verdict (the model answered). Read
//! leniently where a small model's answer still says what it means: an id
//! `F1` or `1` for `f1`, a confidence `"7"` or `7.0`, none at all (a
//! verdict without a confidence is still a verdict; the confidence is
//! left out, with a note when one was there but unusable). The data types sit here,
//! below verification and reduction, which carry them; the stage that asks
//! is [`crate::pipeline::skeptic`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::llm::conversation::OutputSchema;

/// The skeptic's call on one finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    /// Untrusted input reaches the line (or the defect is real as is).
    Confirmed,
    /// The value is constant or made safe, or the code cannot run: the
    /// finding leaves the gate, listed apart with the reason.
    Refuted,
    /// The skeptic could not tell.
    Uncertain,
    /// The skeptic gave no usable verdict (see [`NoVerdict`]), or its call
    /// failed: the finding keeps its place, and says so.
    NoVerdict,
}

impl Stance {
    /// The name in machine-read formats (JSON, SARIF).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Refuted => "refuted",
            Self::Uncertain => "uncertain",
            Self::NoVerdict => "no_verdict",
        }
    }

    /// The name in text read by people (Markdown, HTML, annotations).
    pub fn label(self) -> &'static str {
        match self {
            Self::NoVerdict => "no verdict",
            Self::Confirmed | Self::Refuted | Self::Uncertain => self.as_str(),
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "confirmed" => Some(Self::Confirmed),
            "refuted" => Some(Self::Refuted),
            "uncertain" => Some(Self::Uncertain),
            _ => None,
        }
    }
}

/// What the skeptic said of one finding, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Challenge {
    pub stance: Stance,
    /// 1 (a guess) to 10 (certain); `None` when the skeptic gave none
    /// (or none usable), and when no usable answer came.
    pub confidence: Option<u8>,
    /// One sentence why.
    pub reason: String,
    /// The data flow, `path:line` steps that exist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow: Vec<String>,
    /// What was wrong with the answer: steps dropped, a broken entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Why the skeptic's answer holds no verdict on a finding although the
/// model answered: what it said is its answer, kept in the run store like
/// a verdict and asked again only when what it rests on changes. A call
/// that failed is not one of these ([`Challenge::not_asked`]). A provider's
/// refusal is meant to be a further variant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoVerdict {
    /// The answer was no JSON object with a list of verdicts (prose, a
    /// list of findings), even after the repair turn.
    #[error("its answer was not a JSON object with a list of verdicts")]
    NotVerdicts,
    /// The list had no entry for this finding.
    #[error("it gave no verdict for this finding")]
    NoEntry,
    /// The entry for this finding was unusable.
    #[error("its entry was broken: {0}")]
    Broken(EntryError),
    /// The model refused to judge (a provider's safety filter), twice:
    /// what the loop said of it, with the provider's words.
    #[error("{0}")]
    Refused(String),
}

impl Challenge {
    /// The challenge of a finding the skeptic answered without a usable
    /// verdict.
    pub(crate) fn no_verdict(why: &NoVerdict) -> Self {
        Self {
            stance: Stance::NoVerdict,
            confidence: None,
            // The stance says "no verdict"; the reason says why.
            reason: why.to_string(),
            flow: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The challenge of a finding whose call failed (a provider error, a
    /// stop): no verdict, and nothing of it is kept, so the next run asks.
    pub(crate) fn not_asked(error: &str) -> Self {
        Self {
            stance: Stance::NoVerdict,
            confidence: None,
            reason: format!("the skeptic's call failed ({error}); the next run asks again"),
            flow: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// One line for text formats: `refuted (confidence 8/10): why`.
    pub fn describe(&self) -> String {
        let confidence = self
            .confidence
            .map(|c| format!(" (confidence {c}/10)"))
            .unwrap_or_default();
        format!("{}{confidence}: {}", self.stance.label(), self.reason)
    }
}

/// The name of the skeptic's output schema.
pub(crate) const VERDICTS_TOOL: &str = "report_verdicts";

/// The skeptic's answer schema, its ids listed (strict), and relaxed
/// without the enums and bounds some servers refuse.
pub(crate) fn verdicts_output(ids: &[String]) -> OutputSchema {
    let schema = |strict: bool| {
        let mut item = json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "verdict": {"type": "string"},
                "confidence": {"type": "integer"},
                "why": {"type": "string"},
                "flow": {"type": "array", "items": {"type": "string"},
                         "description": "path:line steps from the source to the flagged line"}
            },
            "required": ["id", "verdict", "confidence", "why", "flow"],
            "additionalProperties": false
        });
        if strict {
            item["properties"]["id"]["enum"] = Value::from(ids.to_vec());
            item["properties"]["verdict"]["enum"] = json!(["confirmed", "refuted", "uncertain"]);
            item["properties"]["confidence"]["minimum"] = json!(1);
            item["properties"]["confidence"]["maximum"] = json!(10);
        }
        json!({
            "type": "object",
            "properties": {"verdicts": {"type": "array", "items": item}},
            "required": ["verdicts"],
            "additionalProperties": false
        })
    };
    OutputSchema {
        name: VERDICTS_TOOL.to_string(),
        description: "Give your verdict on every finding of the task, by id. Call it exactly once."
            .to_string(),
        schema: schema(true),
        relaxed: Some(schema(false)),
    }
}

/// One entry of an answer, before its flow is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Said {
    pub(crate) stance: Stance,
    /// None when the entry gave no usable confidence.
    pub(crate) confidence: Option<u8>,
    pub(crate) reason: String,
    pub(crate) flow: Vec<String>,
    /// What was left out of the entry (an unusable confidence).
    pub(crate) notes: Vec<String>,
}

/// Why an entry of an answer was unusable (its finding is then not
/// answered, and the report says why).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EntryError {
    #[error("its verdict {0:?} is none of confirmed, refuted, uncertain")]
    Verdict(String),
    #[error("it gives no reason")]
    NoReason,
}

/// A confidence an entry gave that is no whole number from 1 to 10: the
/// entry stands without it, and a note says so.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("its confidence {0} is not a number from 1 to 10: left out")]
struct UnusableConfidence(String);

/// A final answer as read: each id's entry, or why it was unusable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    /// Whether a JSON object with a `verdicts` list was found at all.
    pub(crate) parsed: bool,
    pub(crate) by_id: BTreeMap<String, Result<Said, EntryError>>,
    /// Entries for no id asked, or without an id.
    pub(crate) stray: Vec<String>,
}

/// Reads a skeptic's answer: the JSON object (bare, fenced, or the first
/// `{` to the last `}` of the text); each entry of `verdicts` checked on
/// its own, so one broken entry costs only its finding.
pub(crate) fn read_answer(text: &str, ids: &[String]) -> Answer {
    let mut answer = Answer::default();
    let Some(value) = json_object(text) else {
        return answer;
    };
    let Some(entries) = value.get("verdicts").and_then(Value::as_array) else {
        return answer;
    };
    answer.parsed = true;
    for entry in entries {
        let Some(id) = entry.get("id").and_then(|v| asked_id(v, ids)) else {
            answer
                .stray
                .push(format!("an entry for no finding asked: {}", short(entry)));
            continue;
        };
        let said = read_entry(entry);
        // A second entry for an id does not replace a usable first one.
        match answer.by_id.get(&id) {
            Some(Ok(_)) => {}
            Some(Err(_)) | None => {
                answer.by_id.insert(id, said);
            }
        }
    }
    answer
}

/// The id asked that an entry's `id` names: `f1` as asked, or written
/// `F1`, ` f1 `, `1` or `"1"` (small models number the findings).
fn asked_id(value: &Value, ids: &[String]) -> Option<String> {
    let raw = value
        .as_str()
        .map(|s| s.trim().to_string())
        .or_else(|| value.as_u64().map(|n| n.to_string()))?;
    let lower = raw.to_ascii_lowercase();
    let numbered = raw.parse::<u64>().ok().map(|n| format!("f{n}"));
    [Some(raw), Some(lower), numbered]
        .into_iter()
        .flatten()
        .find(|id| ids.contains(id))
}

/// An entry's confidence: a whole number from 1 to 10, as a number, a
/// string or a float that rounds to one. `Ok(None)` when it gives none,
/// `Err` with the value when it gives one that is unusable.
fn confidence_of(entry: &Value) -> Result<Option<u8>, UnusableConfidence> {
    let Some(value) = entry.get("confidence").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let number = value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
    number
        .map(f64::round)
        .filter(|n| (1.0..=10.0).contains(n))
        // In 1..=10 after the filter: the cast is exact.
        .map(|n| Some(n as u8))
        .ok_or_else(|| UnusableConfidence(value.to_string()))
}

fn read_entry(entry: &Value) -> Result<Said, EntryError> {
    let verdict = entry.get("verdict").and_then(Value::as_str).unwrap_or("");
    let stance = Stance::parse(verdict).ok_or_else(|| EntryError::Verdict(verdict.to_string()))?;
    // A verdict without a (usable) confidence is still a verdict.
    let mut notes = Vec::new();
    let confidence = confidence_of(entry).unwrap_or_else(|unusable| {
        notes.push(unusable.to_string());
        None
    });
    let reason = entry
        .get("why")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .ok_or(EntryError::NoReason)?
        .to_string();
    let flow = entry
        .get("flow")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s.as_str().map(|s| s.trim().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Ok(Said {
        stance,
        confidence,
        reason,
        flow,
        notes,
    })
}

/// The first JSON object the text holds.
fn json_object(text: &str) -> Option<Value> {
    let text = crate::model::findings::strip_marker(text);
    let trimmed = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str(trimmed) {
        return Some(v);
    }
    if let Some(start) = trimmed.find("```") {
        let rest = &trimmed[start + 3..];
        let body = rest.split_once('\n').map_or(rest, |(_, b)| b);
        if let Some(end) = body.find("```")
            && let Ok(v @ Value::Object(_)) = serde_json::from_str(body[..end].trim())
        {
            return Some(v);
        }
    }
    let (start, end) = (trimmed.find('{')?, trimmed.rfind('}')?);
    match serde_json::from_str(trimmed.get(start..=end)?) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// Checks an entry's flow like evidence: each `path:line` step must name
/// a file of the scan (`exists(path, line)` says whether the line is
/// there). Bad steps are dropped and noted; a refutation that cites one is
/// not trusted and counts as uncertain (a made-up step makes its
/// argument worthless, and a refutation takes a finding out of the gate).
pub(crate) fn check(said: Said, exists: &dyn Fn(&str, u32) -> bool) -> Challenge {
    let mut flow = Vec::new();
    let mut notes = said.notes;
    let mut dropped = false;
    for step in &said.flow {
        let parsed = step
            .rsplit_once(':')
            .and_then(|(path, line)| Some((path.trim(), line.trim().parse::<u32>().ok()?)));
        match parsed {
            Some((path, line)) if line > 0 && exists(path, line) => {
                flow.push(format!("{path}:{line}"));
            }
            _ => {
                dropped = true;
                notes.push(format!(
                    "flow step {step:?} dropped: no such line in a file of the scan"
                ));
            }
        }
    }
    let mut stance = said.stance;
    let mut confidence = said.confidence;
    if stance == Stance::Refuted && dropped {
        notes.push(
            "a refutation citing a step that does not exist is not trusted: counted as uncertain"
                .into(),
        );
        stance = Stance::Uncertain;
        confidence = None;
    }
    Challenge {
        stance,
        confidence,
        reason: said.reason,
        flow,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<String> {
        vec!["f1".into(), "f2".into()]
    }

    #[test]
    fn reads_each_entry_on_its_own() {
        let text = r#"{"verdicts": [
            {"id": "f1", "verdict": "refuted", "confidence": 8, "why": "constant", "flow": ["a.py:3"]},
            {"id": "f2", "verdict": "maybe", "confidence": 4, "why": "x", "flow": []},
            {"id": "f9", "verdict": "confirmed", "confidence": 4, "why": "x", "flow": []}
        ]}"#;
        let a = read_answer(text, &ids());
        assert!(a.parsed);
        let f1 = a.by_id["f1"].clone().unwrap();
        assert_eq!((f1.stance, f1.confidence), (Stance::Refuted, Some(8)));
        assert!(
            a.by_id["f2"]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("maybe")
        );
        assert_eq!(a.stray.len(), 1);
    }

    #[test]
    fn garbage_fences_and_bad_confidence() {
        assert!(!read_answer("no json here", &ids()).parsed);
        assert!(!read_answer(r#"{"findings": []}"#, &ids()).parsed);
        let fenced = "Here:\n```json\n{\"verdicts\": [{\"id\": \"f2\", \"verdict\": \"Confirmed\", \"confidence\": \"7\", \"why\": \"argv\", \"flow\": []}]}\n```\n[TASK_COMPLETE]";
        let a = read_answer(fenced, &ids());
        assert_eq!(a.by_id["f2"].clone().unwrap().stance, Stance::Confirmed);
        // An unusable confidence is left out, with a note; the verdict stands.
        let a = read_answer(
            r#"{"verdicts":[{"id":"f1","verdict":"refuted","confidence":11,"why":"w"}]}"#,
            &ids(),
        );
        let f1 = a.by_id["f1"].clone().unwrap();
        assert_eq!((f1.stance, f1.confidence), (Stance::Refuted, None));
        assert_eq!(
            f1.notes,
            vec!["its confidence 11 is not a number from 1 to 10: left out"]
        );
    }

    /// Issue 26: a small model's answers, read as what they mean (they
    /// were "broken entries", never kept, and asked again every run).
    #[test]
    fn a_verdict_without_a_confidence_or_with_a_numbered_id_is_a_verdict() {
        let text = r#"{"verdicts": [
            {"id": 1, "verdict": "confirmed", "why": "argv reaches it", "flow": []},
            {"id": "F2", "verdict": "refuted", "confidence": 7.6, "why": "constant"}
        ]}"#;
        let a = read_answer(text, &ids());
        assert!(a.stray.is_empty(), "{:?}", a.stray);
        let f1 = a.by_id["f1"].clone().unwrap();
        assert_eq!((f1.stance, f1.confidence), (Stance::Confirmed, None));
        assert!(f1.notes.is_empty(), "none given is not a fault");
        let f2 = a.by_id["f2"].clone().unwrap();
        assert_eq!((f2.stance, f2.confidence), (Stance::Refuted, Some(8)));
        for (given, read) in [
            (json!(null), Ok(None)),
            (json!("7"), Ok(Some(7))),
            (json!(10), Ok(Some(10))),
            (json!(0), Err(UnusableConfidence("0".to_string()))),
            (
                json!("high"),
                Err(UnusableConfidence("\"high\"".to_string())),
            ),
        ] {
            assert_eq!(confidence_of(&json!({"confidence": given})), read);
        }
    }

    #[test]
    fn an_invented_step_is_dropped_and_a_refutation_citing_one_is_uncertain() {
        let exists = |p: &str, l: u32| p == "a.py" && l <= 10;
        let said = |stance| Said {
            stance,
            confidence: Some(9),
            reason: "r".into(),
            flow: vec!["a.py:3".into(), "a.py:99".into(), "nope".into()],
            notes: Vec::new(),
        };
        let c = check(said(Stance::Confirmed), &exists);
        assert_eq!(c.stance, Stance::Confirmed);
        assert_eq!(c.flow, vec!["a.py:3"]);
        assert_eq!(c.notes.len(), 2);
        let r = check(said(Stance::Refuted), &exists);
        assert_eq!((r.stance, r.confidence), (Stance::Uncertain, None));
        assert_eq!(r.notes.len(), 3);
    }
}
