//! The one event consumer, and the reporter the run's progress is shown
//! through.
//!
//! Takes the agents' [`Event`]s; keeps the tokens spent and appends each
//! agent's conversation to `<dir>/<group>.jsonl` with `--transcripts`, and
//! passes every event on to a [`Reporter`]'s [`StageReport`]. The library
//! draws nothing: the CLI implements [`Reporter`] with progress bars (as
//! uv's library crates define reporter traits and only its CLI draws);
//! [`Hidden`] shows nothing (tests, benches, batch work). Budgets are kept
//! by [`crate::llm::budget`], synchronously, not here.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::llm::conversation::Usage;
use crate::llm::events::Event;

/// How a run shows its progress. The library calls it; what is drawn, and
/// where, is the implementation's (the CLI's bars on stderr).
pub trait Reporter: Send + Sync {
    /// A stage of `groups` groups starts (a scan's fan-out); its events go
    /// to the returned report until it is finished.
    fn stage(&self, groups: u64) -> Box<dyn StageReport>;

    /// One line for one agent of `ask`, named `prefix`; its events go to
    /// the returned line until it is finished.
    fn agent_line(&self, prefix: String) -> Box<dyn AgentLine>;

    /// Runs `f` with the display cleared, for lines written to stderr or
    /// stdout (logs, notices, an answer's streamed text), so that a line
    /// never tears a bar.
    fn suspend(&self, f: &mut dyn FnMut());

    /// A step of a `--batch` round: sent, polled (the batch's state and
    /// counts), read. Shows nothing unless implemented.
    fn batch(&self, _event: &crate::llm::providers::batch::RoundEvent) {}
}

/// One stage's progress: every event of its agents, in order.
pub trait StageReport: Send {
    /// An agent's event (started, a round, a tool, tokens, finished, a
    /// transcript entry).
    fn event(&mut self, event: &Event);

    /// Every agent's sender is gone: the stage is over.
    fn finish(self: Box<Self>);
}

/// One agent's line: the events of that one agent.
pub trait AgentLine: Send {
    /// An event of the line's agent.
    fn event(&mut self, event: &Event);

    /// The agent's sender is gone.
    fn finish(self: Box<Self>);
}

/// A reporter that shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hidden;

impl Reporter for Hidden {
    fn stage(&self, _groups: u64) -> Box<dyn StageReport> {
        Box::new(Hidden)
    }

    fn agent_line(&self, _prefix: String) -> Box<dyn AgentLine> {
        Box::new(Hidden)
    }

    fn suspend(&self, f: &mut dyn FnMut()) {
        f();
    }
}

impl StageReport for Hidden {
    fn event(&mut self, _event: &Event) {}

    fn finish(self: Box<Self>) {}
}

impl AgentLine for Hidden {
    fn event(&mut self, _event: &Event) {}

    fn finish(self: Box<Self>) {}
}

/// A shared reporter, as a run's [`crate::Ui`] holds it.
pub(crate) type SharedReporter = Arc<dyn Reporter>;

/// What the consumer saw.
#[derive(Debug, Default)]
pub(crate) struct Consumed {
    pub(crate) usage: Usage,
    /// Transcript files that could not be written (said once each).
    pub(crate) transcript_errors: Vec<String>,
}

/// The event consumer.
pub(crate) struct Consumer {
    /// Where the stage's events are shown.
    pub(crate) report: Box<dyn StageReport>,
    pub(crate) transcripts: Option<PathBuf>,
}

/// A consumer running on its own task.
pub(crate) struct Running(JoinHandle<Consumed>);

impl Running {
    /// Waits until every sender is dropped. A consumer that died is said
    /// in the transcript errors, never passed over.
    pub(crate) async fn finish(self) -> Consumed {
        match self.0.await {
            Ok(consumed) => consumed,
            Err(e) => Consumed {
                usage: Usage::default(),
                transcript_errors: vec![format!(
                    "the progress and transcript writer failed ({e}); transcripts may be incomplete"
                )],
            },
        }
    }
}

impl Consumer {
    /// Starts consuming on its own task; agents send to the returned sender.
    pub(crate) fn start(self) -> (UnboundedSender<Event>, Running) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (tx, Running(tokio::spawn(self.run(rx))))
    }

    /// Consumes events until every sender is dropped.
    async fn run(mut self, mut rx: UnboundedReceiver<Event>) -> Consumed {
        let mut consumed = Consumed::default();
        let mut files: HashMap<String, std::io::BufWriter<std::fs::File>> = HashMap::new();
        while let Some(event) = rx.recv().await {
            self.report.event(&event);
            match event {
                Event::Usage { usage, .. } => {
                    consumed.usage.add(usage);
                }
                Event::Finished { group, .. } => {
                    if let Some(file) = files.remove(&group) {
                        self.close_transcript(&group, file, &mut consumed);
                    }
                }
                Event::Transcript { group, entry } => {
                    if let Some(dir) = &self.transcripts {
                        self.write_transcript(dir, &group, &entry, &mut files, &mut consumed);
                    }
                }
                Event::Started { .. } | Event::Round { .. } | Event::Tool { .. } => {}
            }
        }
        for (group, file) in files {
            self.close_transcript(&group, file, &mut consumed);
        }
        self.report.finish();
        consumed
    }

    fn close_transcript(
        &self,
        group: &str,
        mut file: std::io::BufWriter<std::fs::File>,
        consumed: &mut Consumed,
    ) {
        if let Err(e) = file.flush()
            && let Some(dir) = &self.transcripts
        {
            consumed.transcript_errors.push(format!(
                "{}: cannot write the transcript: {e}",
                dir.join(format!("{group}.jsonl")).display()
            ));
        }
    }

    fn write_transcript(
        &self,
        dir: &std::path::Path,
        group: &str,
        entry: &serde_json::Value,
        files: &mut HashMap<String, std::io::BufWriter<std::fs::File>>,
        consumed: &mut Consumed,
    ) {
        let path = dir.join(format!("{group}.jsonl"));
        if consumed
            .transcript_errors
            .iter()
            .any(|e| e.starts_with(&path.display().to_string()))
        {
            return;
        }
        if !files.contains_key(group) {
            let opened = std::fs::create_dir_all(dir).and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            });
            match opened {
                Ok(f) => {
                    files.insert(group.to_string(), std::io::BufWriter::new(f));
                }
                Err(e) => {
                    consumed.transcript_errors.push(format!(
                        "{}: cannot write the transcript: {e}",
                        path.display()
                    ));
                    return;
                }
            }
        }
        if let Some(file) = files.get_mut(group) {
            let written = serde_json::to_string(entry)
                .map_err(std::io::Error::from)
                .and_then(|line| writeln!(file, "{line}"));
            if let Err(e) = written {
                consumed.transcript_errors.push(format!(
                    "{}: cannot write the transcript: {e}",
                    path.display()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A stage report that records what it was told.
    struct Recorded(Arc<Mutex<Vec<String>>>);

    impl StageReport for Recorded {
        fn event(&mut self, event: &Event) {
            let said = match event {
                Event::Started { group, .. } => format!("started {group}"),
                Event::Finished { group, .. } => format!("finished {group}"),
                Event::Usage { group, .. } => format!("usage {group}"),
                other => format!("{other:?}"),
            };
            self.0.lock().unwrap().push(said);
        }

        fn finish(self: Box<Self>) {
            self.0.lock().unwrap().push("stage over".into());
        }
    }

    #[tokio::test]
    async fn the_consumer_passes_every_event_to_the_report_and_finishes_it() {
        let said = Arc::new(Mutex::new(Vec::new()));
        let (tx, running) = Consumer {
            report: Box::new(Recorded(Arc::clone(&said))),
            transcripts: None,
        }
        .start();
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 2,
            ..Usage::default()
        };
        for event in [
            Event::Started {
                group: "g1".into(),
                agent: "auditor".into(),
            },
            Event::Usage {
                group: "g1".into(),
                usage,
            },
            Event::Finished {
                group: "g1".into(),
                status: "completed".into(),
                findings: 1,
            },
        ] {
            tx.send(event).unwrap();
        }
        drop(tx);
        let consumed = running.finish().await;
        assert_eq!(consumed.usage.total(), 7);
        assert_eq!(
            *said.lock().unwrap(),
            ["started g1", "usage g1", "finished g1", "stage over"]
        );
    }

    #[test]
    fn the_hidden_reporter_still_runs_what_it_suspends_for() {
        let mut ran = false;
        Hidden.suspend(&mut || ran = true);
        assert!(ran);
    }
}
