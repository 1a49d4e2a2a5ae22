//! Progress events: each agent gets its own [`EventSink`] (passed in, never
//! global) and one consumer renders progress and writes transcripts, so
//! concurrent agents never interleave their output.

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::llm::conversation::Usage;

/// What an agent reports while it works.
#[derive(Clone, Debug)]
pub enum Event {
    /// An agent started on a group.
    Started { group: String, agent: String },
    /// A model round began.
    Round { group: String, round: u32 },
    /// A tool was called; `target` is its main argument (a path, a pattern).
    Tool {
        group: String,
        tool: String,
        target: String,
    },
    /// Tokens spent by one model call.
    Usage { group: String, usage: Usage },
    /// The agent finished.
    Finished {
        group: String,
        status: String,
        findings: usize,
    },
    /// One entry of the agent's conversation, for `--transcripts`.
    Transcript { group: String, entry: Value },
}

/// One agent's sender. A sink without a channel drops everything (tests,
/// `run-agent --quiet`).
#[derive(Clone, Debug)]
pub struct EventSink {
    group: String,
    tx: Option<UnboundedSender<Event>>,
    transcripts: bool,
}

impl EventSink {
    /// A sink for `group` that sends to `tx`; `transcripts` says whether
    /// conversation entries are wanted (they cost a copy).
    pub fn new(group: &str, tx: Option<UnboundedSender<Event>>, transcripts: bool) -> Self {
        Self {
            group: group.to_string(),
            tx,
            transcripts,
        }
    }

    /// A sink that drops everything.
    pub fn silent(group: &str) -> Self {
        Self::new(group, None, false)
    }

    /// The group this sink reports for.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Whether transcript entries are wanted.
    pub fn wants_transcript(&self) -> bool {
        self.transcripts && self.tx.is_some()
    }

    fn send(&self, event: Event) {
        if let Some(tx) = &self.tx {
            // A closed consumer means nobody is listening: not an error.
            let _ = tx.send(event);
        }
    }

    pub fn started(&self, agent: &str) {
        self.send(Event::Started {
            group: self.group.clone(),
            agent: agent.to_string(),
        });
    }

    pub fn round(&self, round: u32) {
        self.send(Event::Round {
            group: self.group.clone(),
            round,
        });
    }

    pub fn tool(&self, tool: &str, target: &str) {
        self.send(Event::Tool {
            group: self.group.clone(),
            tool: tool.to_string(),
            target: target.to_string(),
        });
    }

    pub fn usage(&self, usage: Usage) {
        self.send(Event::Usage {
            group: self.group.clone(),
            usage,
        });
    }

    pub fn finished(&self, status: &str, findings: usize) {
        self.send(Event::Finished {
            group: self.group.clone(),
            status: status.to_string(),
            findings,
        });
    }

    /// One transcript entry, built only when transcripts are wanted: the
    /// agent loop must not pay for copies nobody reads.
    pub fn transcript(&self, entry: impl FnOnce() -> Value) {
        if self.wants_transcript() {
            self.send(Event::Transcript {
                group: self.group.clone(),
                entry: entry(),
            });
        }
    }
}
