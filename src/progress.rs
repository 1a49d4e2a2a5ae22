//! The one event consumer: renders progress, writes transcripts and watches
//! the run's token and cost budgets.
//!
//! Takes the agents' [`Event`]s; draws an overall bar (groups done/total,
//! claims reported so far, tokens, elapsed, ETA) and a line per running
//! agent on stderr (hidden when stderr is not a terminal or with
//! `--quiet`), and appends each agent's conversation to
//! `<dir>/<group>.jsonl` with `--transcripts`. Budgets are kept by
//! [`crate::llm::budget`], synchronously, not here.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use crate::llm::conversation::Usage;
use crate::llm::events::Event;
use crate::util::human_count;

/// Most agent lines drawn at once; the rest are counted on the main bar.
const MAX_AGENT_LINES: usize = 8;

/// What the consumer saw.
#[derive(Debug, Default)]
pub(crate) struct Consumed {
    pub(crate) usage: Usage,
    /// Transcript files that could not be written (said once each).
    pub(crate) transcript_errors: Vec<String>,
}

/// The event consumer.
pub(crate) struct Consumer {
    pub(crate) multi: MultiProgress,
    pub(crate) total_groups: u64,
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
    async fn run(self, mut rx: UnboundedReceiver<Event>) -> Consumed {
        let overall = self.multi.add(ProgressBar::new(self.total_groups));
        overall.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30.cyan/blue}] {pos}/{len} groups · {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        overall.enable_steady_tick(Duration::from_millis(250));
        let agent_style = ProgressStyle::with_template("  {spinner} {prefix:.bold} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let mut lines: HashMap<String, ProgressBar> = HashMap::new();
        let mut running = 0usize;
        let mut findings = 0usize;
        let mut consumed = Consumed::default();
        let mut files: HashMap<String, std::io::BufWriter<std::fs::File>> = HashMap::new();
        // The agents' own claims, before verification and dedupe: said as
        // such, since the report's verified count is known only at the end.
        let message = |claims: usize, usage: &Usage, running: usize| {
            format!(
                "{claims} claims reported (verified at the end) · {} tokens · {running} running",
                human_count(usage.total())
            )
        };
        while let Some(event) = rx.recv().await {
            match event {
                Event::Started { group, agent } => {
                    running += 1;
                    if lines.len() < MAX_AGENT_LINES {
                        let bar = self.multi.add(ProgressBar::new_spinner());
                        bar.set_style(agent_style.clone());
                        bar.set_prefix(group.clone());
                        bar.set_message(format!("{agent} starting"));
                        bar.enable_steady_tick(Duration::from_millis(120));
                        lines.insert(group, bar);
                    }
                }
                Event::Round { group, round } => {
                    if let Some(bar) = lines.get(&group) {
                        bar.set_message(format!("round {round}"));
                    }
                }
                Event::Tool {
                    group,
                    tool,
                    target,
                } => {
                    if let Some(bar) = lines.get(&group) {
                        bar.set_message(format!("{tool} {target}"));
                    }
                }
                Event::Usage { usage, .. } => {
                    consumed.usage.add(usage);
                }
                Event::Finished {
                    group, findings: n, ..
                } => {
                    running = running.saturating_sub(1);
                    findings += n;
                    overall.inc(1);
                    if let Some(bar) = lines.remove(&group) {
                        bar.finish_and_clear();
                        self.multi.remove(&bar);
                    }
                    if let Some(file) = files.remove(&group) {
                        self.close_transcript(&group, file, &mut consumed);
                    }
                }
                Event::Transcript { group, entry } => {
                    if let Some(dir) = &self.transcripts {
                        self.write_transcript(dir, &group, &entry, &mut files, &mut consumed);
                    }
                }
            }
            overall.set_message(message(findings, &consumed.usage, running));
        }
        for (group, file) in files {
            self.close_transcript(&group, file, &mut consumed);
        }
        for (_, bar) in lines {
            bar.finish_and_clear();
        }
        overall.finish_and_clear();
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

/// A `tracing` writer that prints through the progress bars' `suspend`, so
/// logs never tear a bar.
#[derive(Clone)]
pub struct LogWriter(pub(crate) MultiProgress);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.suspend(|| std::io::stderr().write_all(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
