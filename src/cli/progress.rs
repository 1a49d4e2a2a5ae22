//! The terminal's progress display: the library's [`Reporter`] drawn with
//! indicatif on stderr.
//!
//! A scan's stage draws an overall bar (groups done/total, claims reported
//! so far, tokens, elapsed, ETA) and a line per running agent (hidden when
//! stderr is not a terminal or with `--quiet`); `ask` draws a line per
//! agent with its description. Logs print through [`LogWriter`], so a log
//! line never tears a bar.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use fanscan::{AgentLine, Event, Reporter, RoundEvent, StageReport, human_count};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Most agent lines drawn at once; the rest are counted on the main bar.
const MAX_AGENT_LINES: usize = 8;

/// The style of an agent's line.
fn agent_style() -> ProgressStyle {
    ProgressStyle::with_template("  {spinner} {prefix:.bold} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Progress bars on stderr, or drawn nowhere.
#[derive(Clone)]
pub(crate) struct Bars {
    multi: MultiProgress,
    /// Whether bars are drawn: without them, `--batch` prints one line
    /// per round instead.
    draw: bool,
    /// The line of `--batch`'s rounds, once the first is sent.
    batch: std::sync::Arc<std::sync::Mutex<Option<ProgressBar>>>,
}

impl Bars {
    /// Bars drawn on stderr when `draw` (a terminal, no `--quiet`), else
    /// hidden.
    pub(crate) fn new(draw: bool) -> Self {
        let target = if draw {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Self {
            multi: MultiProgress::with_draw_target(target),
            draw,
            batch: std::sync::Arc::default(),
        }
    }

    /// A log writer that prints through the bars.
    pub(crate) fn log_writer(&self) -> LogWriter {
        LogWriter(self.multi.clone())
    }
}

impl Reporter for Bars {
    fn stage(&self, groups: u64) -> Box<dyn StageReport> {
        let overall = self.multi.add(ProgressBar::new(groups));
        overall.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30.cyan/blue}] {pos}/{len} groups · {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        overall.enable_steady_tick(Duration::from_millis(250));
        Box::new(Stage {
            multi: self.multi.clone(),
            overall,
            style: agent_style(),
            lines: HashMap::new(),
            running: 0,
            claims: 0,
            tokens: 0,
        })
    }

    fn agent_line(&self, prefix: String) -> Box<dyn AgentLine> {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(agent_style());
        bar.set_prefix(prefix);
        bar.set_message("starting");
        bar.enable_steady_tick(Duration::from_millis(120));
        Box::new(Line {
            multi: self.multi.clone(),
            bar,
        })
    }

    fn suspend(&self, f: &mut dyn FnMut()) {
        self.multi.suspend(f);
    }

    fn batch(&self, event: &RoundEvent) {
        if !self.draw {
            // One line per round, for logs and --quiet.
            if let RoundEvent::Done {
                round,
                answered,
                resent,
                failed,
                elapsed,
            } = event
            {
                eprintln!(
                    "fanscan: batch round {round} read after {:.0} s: {answered} requests answered so far, {resent} to send again, {failed} failed",
                    elapsed.as_secs_f64()
                );
            }
            return;
        }
        let mut slot = self.batch.lock().unwrap_or_else(|p| p.into_inner());
        let bar = slot.get_or_insert_with(|| {
            let bar = self.multi.insert(0, ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} {spinner} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        bar.set_message(match event {
            RoundEvent::Submitted {
                round,
                id,
                requests,
                picked_up: false,
            } => format!("round {round}: batch {id} sent ({requests} requests)"),
            RoundEvent::Submitted { round, id, .. } => {
                format!("round {round}: batch {id} of an earlier run picked up")
            }
            RoundEvent::Polled {
                round,
                id,
                phase,
                done,
                total,
            } => format!("round {round}: batch {id} {phase} · {done}/{total} requests done"),
            RoundEvent::Done {
                round,
                answered,
                resent,
                failed,
                ..
            } => format!(
                "round {round} read: {answered} answered so far, {resent} to send again, {failed} failed"
            ),
        });
    }
}

/// A scan's stage: the overall bar and a line per running agent.
struct Stage {
    multi: MultiProgress,
    overall: ProgressBar,
    style: ProgressStyle,
    lines: HashMap<String, ProgressBar>,
    running: usize,
    /// The agents' own claims, before verification and dedupe.
    claims: usize,
    tokens: u64,
}

impl StageReport for Stage {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Started { group, agent } => {
                self.running += 1;
                if self.lines.len() < MAX_AGENT_LINES {
                    let bar = self.multi.add(ProgressBar::new_spinner());
                    bar.set_style(self.style.clone());
                    bar.set_prefix(group.clone());
                    bar.set_message(format!("{agent} starting"));
                    bar.enable_steady_tick(Duration::from_millis(120));
                    self.lines.insert(group.clone(), bar);
                }
            }
            Event::Round { group, round } => {
                if let Some(bar) = self.lines.get(group) {
                    bar.set_message(format!("round {round}"));
                }
            }
            Event::Tool {
                group,
                tool,
                target,
            } => {
                if let Some(bar) = self.lines.get(group) {
                    bar.set_message(format!("{tool} {target}"));
                }
            }
            Event::Usage { usage, .. } => {
                self.tokens = self.tokens.saturating_add(usage.total());
            }
            Event::Finished {
                group, findings, ..
            } => {
                self.running = self.running.saturating_sub(1);
                self.claims += findings;
                self.overall.inc(1);
                if let Some(bar) = self.lines.remove(group) {
                    bar.finish_and_clear();
                    self.multi.remove(&bar);
                }
            }
            Event::Transcript { .. } => {}
        }
        // Said as claims, since the report's verified count is known only
        // at the end.
        self.overall.set_message(format!(
            "{} claims reported (verified at the end) · {} tokens · {} running",
            self.claims,
            human_count(self.tokens),
            self.running
        ));
    }

    fn finish(self: Box<Self>) {
        for (_, bar) in self.lines {
            bar.finish_and_clear();
        }
        self.overall.finish_and_clear();
    }
}

/// One agent's line of `ask`.
struct Line {
    multi: MultiProgress,
    bar: ProgressBar,
}

impl AgentLine for Line {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Round { round, .. } => self.bar.set_message(format!("round {round}")),
            Event::Tool { tool, target, .. } => self.bar.set_message(format!("{tool} {target}")),
            Event::Finished {
                status, findings, ..
            } => {
                self.bar.finish_and_clear();
                self.multi.remove(&self.bar);
                // The line stays as a record when bars are drawn; hidden
                // (quiet, not a terminal), the summary at the end says it.
                if !self.multi.is_hidden() {
                    self.multi.suspend(|| {
                        eprintln!(
                            "  {} finished: {status}, {findings} claims",
                            self.bar.prefix()
                        );
                    });
                }
            }
            Event::Started { .. } | Event::Usage { .. } | Event::Transcript { .. } => {}
        }
    }

    fn finish(self: Box<Self>) {
        self.bar.finish_and_clear();
        self.multi.remove(&self.bar);
    }
}

/// A `tracing` writer that prints through the progress bars' `suspend`, so
/// logs never tear a bar.
#[derive(Clone)]
pub(crate) struct LogWriter(MultiProgress);

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
