//! `--batch`: every agent's model calls through the providers' batch APIs
//! (OpenAI's Batch API, Anthropic's Message Batches), at their batch price.
//!
//! Takes the same [`ChatRequest`]s as the synchronous providers, from
//! agent loops that call [`Provider::chat`] and await as they always do;
//! gives each its own [`ChatResponse`] or its own error. The provider
//! *gathers*: a stage registers how many of its agents are live
//! ([`Rounds::hold`], one [`Member`] per running agent), and once every
//! live agent waits on a call, the calls are sent as ONE batch (a round).
//! Each request's `custom_id` names its group, agent and turn plus a hash
//! of what is sent, so the body of a batch line is exactly the body the
//! synchronous call would send ([`Wire::encode`]), and the same request
//! made again (a killed run started over) has the same id.
//!
//! A run store ([`Ledger`]) records each batch's id and requests before
//! the batch is polled, and each answer as it is read: a restarted run
//! finds its requests there, polls the batch already submitted instead of
//! submitting again, and takes the answers already read. A request whose
//! line cannot be read, that errored, expired, was cancelled or has no
//! line at all is sent once more in the next round, alone of its batch;
//! failing twice fails only its own agent. `--max-duration` ends the
//! waits: what is not answered by then fails with the batch's state.
//!
//! Polling waits here (doubling up to `--batch-poll`): a batch answers in
//! minutes to hours, which is no retry of a call; the HTTP layer under
//! each upload, poll and download still does the retries and rate limits.

pub(crate) mod anthropic;
pub(crate) mod openai;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use super::remote::{Features, Wire, settle};
use super::{EngineKind, Provider, ProviderError};
use crate::llm::conversation::{ChatRequest, ChatResponse, Message};
use crate::util::relock;

/// Submissions of one request at most: the first, and one more in the
/// next round after its line failed.
const MAX_TRIES: u32 = 2;

/// Where a batch is in its life, as both APIs say it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchPhase {
    /// OpenAI checks the input file.
    Validating,
    InProgress,
    /// OpenAI writes the output files.
    Finalizing,
    Cancelling,
    /// Every request has its outcome (completed, expired, failed or
    /// cancelled as a whole: see [`Status::end`]).
    Ended,
}

impl fmt::Display for BatchPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BatchPhase::Validating => "validating",
            BatchPhase::InProgress => "in progress",
            BatchPhase::Finalizing => "finalizing",
            BatchPhase::Cancelling => "cancelling",
            BatchPhase::Ended => "ended",
        })
    }
}

/// A batch's state as one poll saw it.
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub(crate) phase: BatchPhase,
    /// How it ended, when it has: `completed`, `expired`, `failed: …`,
    /// `cancelled`.
    pub(crate) end: Option<String>,
    /// Requests with an outcome (answered or failed).
    pub(crate) done: u64,
    pub(crate) total: u64,
    /// Where the results are: OpenAI's output and error file ids, or
    /// Anthropic's `results_url`.
    pub(crate) results: Vec<String>,
}

/// What a batch says of one request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The body the synchronous call would have answered with.
    Answer(Vec<u8>),
    /// An HTTP error inside the result, or the API's own error.
    Failed(String),
    /// Never run: the batch expired or was cancelled first.
    Unfinished(String),
}

/// One result line, read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    pub(crate) custom_id: String,
    pub(crate) outcome: Outcome,
}

/// A batch's results: the lines read and how many could not be read (no
/// JSON, no `custom_id`); the requests of those have no line and are
/// sent again.
#[derive(Debug, Default)]
pub(crate) struct Results {
    pub(crate) lines: Vec<Line>,
    pub(crate) unreadable: u64,
}

/// A provider's batch API over its synchronous wire format.
pub(crate) trait BatchApi: Send + Sync + 'static {
    /// The synchronous format whose bodies the batch lines carry.
    type Format: Wire + 'static;
    /// The wire format.
    fn wire(&self) -> &Self::Format;
    /// Creates a batch of `lines` (custom id, request body); gives its id.
    fn submit<'a>(
        &'a self,
        lines: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, ProviderError>>;
    /// Polls batch `id`.
    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status, ProviderError>>;
    /// Reads an ended batch's results.
    fn results<'a>(&'a self, status: &'a Status) -> BoxFuture<'a, Result<Results, ProviderError>>;
}

/// What the run store knows of one request (see [`Ledger`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stored {
    /// The batch it was last sent in.
    pub(crate) batch_id: String,
    /// Whether that batch had not ended when last seen.
    pub(crate) open: bool,
    /// Its answer, once read.
    pub(crate) answer: Option<Vec<u8>>,
}

/// A ledger's failure, said in the report's notes.
pub(crate) type LedgerError = Box<dyn std::error::Error + Send + Sync>;

/// Where batch ids, their requests and their answers are kept across
/// processes: the run store. Blocking (called off the async threads).
pub(crate) trait Ledger: Send + Sync {
    /// What is known of request `custom_id` of `provider`.
    fn lookup(&self, provider: &str, custom_id: &str) -> Result<Option<Stored>, LedgerError>;
    /// Batch `batch_id` was created in `round` with these requests.
    fn submitted(
        &self,
        provider: &str,
        batch_id: &str,
        round: u32,
        custom_ids: &[String],
    ) -> Result<(), LedgerError>;
    /// Request `custom_id`'s answer was read.
    fn answered(&self, provider: &str, custom_id: &str, body: &[u8]) -> Result<(), LedgerError>;
    /// Batch `batch_id` ended (its results were read).
    fn ended(&self, provider: &str, batch_id: &str, end: &str) -> Result<(), LedgerError>;
}

/// What the report says of the batches of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchStats {
    /// Rounds sent (each one batch, or none when every answer was stored).
    pub rounds: u32,
    /// Batches created.
    pub batches: u32,
    /// Requests sent in those batches (a request sent again counts again).
    pub requests: u64,
    /// Requests answered through a batch.
    pub answered: u64,
    /// Answers taken from the run store (read by an earlier process).
    pub from_store: u64,
    /// Batches an earlier process created that this one polled instead of
    /// submitting their requests again.
    pub picked_up: u32,
    /// Requests sent again after their line failed.
    pub resent: u64,
    /// Requests that got no answer: failed twice, or not sent once the
    /// time budget ran out (their agent failed).
    pub failed: u64,
    /// Lines that could not be read, and lines for a request never sent.
    pub bad_lines: u64,
    /// Batches not ended when the run stopped waiting, as last seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<OpenBatch>,
}

/// A batch the run stopped waiting for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenBatch {
    pub id: String,
    pub round: u32,
    pub phase: BatchPhase,
    pub done: u64,
    pub total: u64,
}

/// One step of a round, for the progress display.
#[derive(Clone, Debug, PartialEq)]
pub enum RoundEvent {
    /// Round `round` sent `requests` requests as batch `id` (`picked_up`:
    /// an earlier process's batch polled again).
    Submitted {
        round: u32,
        id: String,
        requests: u64,
        picked_up: bool,
    },
    /// A poll of batch `id`.
    Polled {
        round: u32,
        id: String,
        phase: BatchPhase,
        done: u64,
        total: u64,
    },
    /// Round `round` is read, `elapsed` after it was sent: how many of the
    /// run's requests were answered and failed so far, and how many of
    /// this round's go again.
    Done {
        round: u32,
        answered: u64,
        resent: u64,
        failed: u64,
        elapsed: Duration,
    },
}

/// Gets the rounds' steps.
pub type OnRound = Arc<dyn Fn(&RoundEvent) + Send + Sync>;

/// How often a batch is polled: first after `first`, doubling up to `max`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Poll {
    pub(crate) first: Duration,
    pub(crate) max: Duration,
}

tokio::task_local! {
    /// The agent a call comes from (`group-agent`), for its custom id.
    static LABEL: String;
}

/// The registration side of a batch provider, shared by the stages:
/// a [`Hold`] for the agents about to start, a [`Member`] per running one.
pub(crate) trait Rounds: Send + Sync {
    /// Counts `agents` agents as live before any of them starts, so no
    /// round leaves without them.
    fn hold(self: Arc<Self>, agents: usize) -> Hold;
    /// Keeps batch ids and answers in `ledger` from now on.
    fn set_ledger(&self, ledger: Arc<dyn Ledger>);
    /// Shows each round's steps through `on_round` (the progress display).
    fn set_observer(&self, on_round: OnRound);
    /// What the report says of the batches so far.
    fn stats(&self) -> BatchStats;
    /// Notes for the report (a ledger that failed, lines for requests
    /// never sent).
    fn notes(&self) -> Vec<String>;
    /// `delta` agents more (or fewer) are live.
    fn adjust(&self, delta: isize);
    /// How many rounds are still being driven. A round answers its calls
    /// before it ends (it records the batches' end and counts and shows
    /// itself after), so the report waits for this to reach 0.
    fn driving(&self) -> tokio::sync::watch::Receiver<usize>;
}

/// Agents counted as live before they start (see [`Rounds::hold`]).
pub(crate) struct Hold {
    rounds: Arc<dyn Rounds>,
    remaining: usize,
    suspended: bool,
}

impl Hold {
    /// One held agent starts: it is live as `label` until the returned
    /// member drops.
    pub(crate) fn member(&mut self, label: &str) -> Option<Member> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        if self.suspended {
            self.rounds.adjust(1);
        }
        Some(Member {
            rounds: Arc::clone(&self.rounds),
            label: sanitize(label),
        })
    }

    /// One held agent will not start.
    pub(crate) fn release_one(&mut self) {
        if self.remaining == 0 {
            return;
        }
        self.remaining -= 1;
        if !self.suspended {
            self.rounds.adjust(-1);
        }
    }

    /// The held agents do not count while the stage waits for running
    /// ones to end (a budget's admission): rounds go on without them.
    pub(crate) fn suspend(&mut self) {
        if !self.suspended {
            self.suspended = true;
            self.rounds.adjust(-(self.remaining as isize));
        }
    }

    /// The held agents count again.
    pub(crate) fn resume(&mut self) {
        if self.suspended {
            self.suspended = false;
            self.rounds.adjust(self.remaining as isize);
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.suspended && self.remaining > 0 {
            self.rounds.adjust(-(self.remaining as isize));
        }
    }
}

/// One running agent, live until it drops.
pub(crate) struct Member {
    rounds: Arc<dyn Rounds>,
    label: String,
}

impl Member {
    /// Runs `future` as this member: its calls carry the member's label,
    /// and the member leaves the rounds when `future` ends.
    pub(crate) async fn scope<F: Future>(self, future: F) -> F::Output {
        let label = self.label.clone();
        let output = LABEL.scope(label, future).await;
        drop(self);
        output
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.rounds.adjust(-1);
    }
}

/// `text` with only what a custom id may hold (`[A-Za-z0-9_-]`), at most
/// 40 characters.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// The custom id of a request: its agent, turn and a hash of what is
/// sent (64 characters at most, `[A-Za-z0-9_-]`, as Anthropic requires).
///
/// The run's random fence boundary (`boundary="…"`, 16 hex digits) is
/// hashed as zeros: it is new in every process, and the same request
/// made again after a kill must have the same id to find its batch.
fn custom_id(label: &str, turn: usize, provider: &str, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let boundary = text.find("boundary=\\\"").and_then(|at| {
        let start = at + "boundary=\\\"".len();
        let hex = text.get(start..start + 16)?;
        hex.bytes().all(|b| b.is_ascii_hexdigit()).then_some(hex)
    });
    let normal = match boundary {
        Some(hex) => text.replace(hex, "0000000000000000"),
        None => text.into_owned(),
    };
    let hash = crate::util::sha256_hex(&[provider.as_bytes(), b"\n", normal.as_bytes()].concat());
    format!("{label}-t{turn}-{}", &hash[..12])
}

/// A call waiting for its round.
struct Waiting {
    custom_id: String,
    body: Arc<Value>,
    tries: u32,
    answer: oneshot::Sender<Result<ChatResponse, ProviderError>>,
}

impl Waiting {
    /// Gives the call its `outcome`, consuming it.
    fn reply(self, outcome: Result<ChatResponse, ProviderError>) {
        // Sending fails only when the receiver is gone: the agent's call
        // (`BatchProvider::call`) no longer waits, as when its agent was
        // cancelled or stopped by a limit. Nobody is left to give the
        // outcome to, so dropping it is right.
        let _ = self.answer.send(outcome);
    }
}

/// The calls gathered for the next round.
#[derive(Default)]
struct Gather {
    /// Agents live (held or running).
    live: usize,
    waiting: Vec<Waiting>,
    round: u32,
    /// A gathering window for calls of no registered agent is open.
    window: bool,
}

/// What the gatherer does next.
enum Step {
    Wait,
    /// Open a gathering window (no agent is registered).
    Window,
    /// Send this round.
    Send(u32, Vec<Waiting>),
}

/// A batch provider over `A`.
pub(crate) struct BatchProvider<A: BatchApi> {
    inner: Arc<Inner<A>>,
}

struct Inner<A: BatchApi> {
    api: A,
    model: String,
    poll: Poll,
    /// When `--max-duration` ends the waits.
    deadline: Option<Instant>,
    gather: Mutex<Gather>,
    ledger: Mutex<Option<Arc<dyn Ledger>>>,
    observer: Mutex<Option<OnRound>>,
    stats: Mutex<BatchStats>,
    notes: Mutex<Vec<String>>,
    /// Rounds started and not ended (see [`Rounds::driving`]).
    driving: tokio::sync::watch::Sender<usize>,
    this: Weak<Inner<A>>,
}

/// A round being driven: counted in [`Inner::driving`] until it drops,
/// a panic in the round included.
struct Driven<A: BatchApi>(Arc<Inner<A>>);

impl<A: BatchApi> Drop for Driven<A> {
    fn drop(&mut self) {
        self.0.driving.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl<A: BatchApi> BatchProvider<A> {
    /// A batch provider over `api`, polling by `poll`, waiting until
    /// `deadline` at most.
    pub(crate) fn new(api: A, model: &str, poll: Poll, deadline: Option<Instant>) -> Self {
        Self {
            inner: Arc::new_cyclic(|this| Inner {
                api,
                model: model.to_string(),
                poll,
                deadline,
                gather: Mutex::new(Gather::default()),
                ledger: Mutex::new(None),
                observer: Mutex::new(None),
                stats: Mutex::new(BatchStats::default()),
                notes: Mutex::new(Vec::new()),
                driving: tokio::sync::watch::Sender::new(0),
                this: this.clone(),
            }),
        }
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let inner = &self.inner;
        let model = request.model.as_deref().unwrap_or(&inner.model);
        let features = Features {
            cache_key: true,
            response_format: true,
            // The batch APIs are the providers' own, which take
            // `max_completion_tokens` alone.
            legacy_max_tokens: false,
            schema_constraints: true,
        };
        let body = serde_json::to_value(inner.api.wire().encode(model, request, features))
            .map_err(ProviderError::Encode)?;
        let bytes = serde_json::to_vec(&body).map_err(ProviderError::Encode)?;
        let label = LABEL
            .try_with(String::clone)
            .unwrap_or_else(|_| "call".to_string());
        let turn = 1 + request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let (tx, rx) = oneshot::channel();
        let waiting = Waiting {
            custom_id: custom_id(&label, turn, inner.api.wire().name(), &bytes),
            body: Arc::new(body),
            tries: 0,
            answer: tx,
        };
        inner.enqueue(vec![waiting]);
        match rx.await {
            Ok(answer) => answer.map(|r| settle(r, request)),
            // The round's task ended without an answer: a panic in it.
            Err(_) => Err(ProviderError::Batch {
                provider: inner.api.wire().name().to_string(),
                message:
                    "the round's task ended without answering (a fanscan bug, please report it)"
                        .into(),
            }),
        }
    }
}

impl<A: BatchApi> Inner<A> {
    fn provider(&self) -> &'static str {
        self.api.wire().name()
    }

    /// Adds calls to the next round and starts it when every live agent
    /// waits.
    fn enqueue(&self, calls: Vec<Waiting>) {
        let round = {
            let mut g = relock(&self.gather);
            g.waiting.extend(calls);
            Self::ready(&mut g)
        };
        self.start(round);
    }

    /// What to do with the calls gathered (calls whose agent stopped
    /// waiting are dropped first): send them when every live agent waits;
    /// with no agent registered (a stage that runs its agents without
    /// counting them: the brief, the skeptic, the reducer), gather for one
    /// window first, so that the calls of its concurrent agents go as one
    /// batch.
    fn ready(g: &mut Gather) -> Step {
        g.waiting.retain(|w| !w.answer.is_closed());
        if g.waiting.is_empty() {
            return Step::Wait;
        }
        if g.live == 0 {
            if g.window {
                return Step::Wait;
            }
            g.window = true;
            return Step::Window;
        }
        if g.waiting.len() < g.live {
            return Step::Wait;
        }
        Self::take(g)
    }

    fn take(g: &mut Gather) -> Step {
        g.round += 1;
        Step::Send(g.round, std::mem::take(&mut g.waiting))
    }

    fn start(&self, step: Step) {
        let Some(this) = self.this.upgrade() else {
            return;
        };
        let (round, calls) = match step {
            Step::Wait => return,
            Step::Send(round, calls) => (round, calls),
            Step::Window => {
                let window = self.poll.first;
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        tokio::time::sleep(window).await;
                        let step = {
                            let mut g = relock(&this.gather);
                            g.window = false;
                            g.waiting.retain(|w| !w.answer.is_closed());
                            match (g.live, g.waiting.is_empty()) {
                                (_, true) => Step::Wait,
                                (0, false) => Self::take(&mut g),
                                _ => Self::ready(&mut g),
                            }
                        };
                        this.start(step);
                    });
                }
                return;
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                self.driving.send_modify(|n| *n += 1);
                let driven = Driven(Arc::clone(&this));
                handle.spawn(async move {
                    this.drive(round, calls).await;
                    drop(driven);
                });
            }
            Err(_) => {
                for call in calls {
                    call.reply(Err(ProviderError::Batch {
                        provider: self.provider().to_string(),
                        message: "no async runtime to send the round on (a fanscan bug, please report it)".into(),
                    }));
                }
            }
        }
    }

    fn note(&self, note: String) {
        tracing::warn!("{note}");
        let mut notes = relock(&self.notes);
        if !notes.contains(&note) {
            notes.push(note);
        }
    }

    /// Logs a step of a round and shows it to the observer.
    fn observe(&self, event: RoundEvent) {
        tracing::debug!(?event, "batch round");
        let observer = relock(&self.observer).clone();
        if let Some(observer) = observer {
            observer(&event);
        }
    }

    fn ledger(&self) -> Option<Arc<dyn Ledger>> {
        relock(&self.ledger).clone()
    }

    /// Runs `f` on the ledger off the async threads; a failure is a note.
    async fn with_ledger<T: Send + 'static>(
        &self,
        what: &str,
        f: impl FnOnce(&dyn Ledger) -> Result<T, LedgerError> + Send + 'static,
    ) -> Option<T> {
        let ledger = self.ledger()?;
        let joined = tokio::task::spawn_blocking(move || f(ledger.as_ref())).await;
        match joined {
            Ok(Ok(value)) => Some(value),
            Ok(Err(error)) => {
                self.note(format!(
                    "the run store could not {what} ({error}): a run started again could send those requests again"
                ));
                None
            }
            Err(error) => {
                self.note(format!(
                    "the run store panicked while it was to {what} ({error}): a fanscan bug, please report it"
                ));
                None
            }
        }
    }

    /// One round: answers from the store first, batches an earlier
    /// process created polled, the rest submitted as one batch; then
    /// polled until each ends (or the deadline), read, and every call
    /// answered or put back for the next round.
    async fn drive(self: Arc<Self>, round: u32, calls: Vec<Waiting>) {
        let started = Instant::now();
        let mut open: BTreeMap<String, Vec<Waiting>> = BTreeMap::new();
        for call in calls {
            open.entry(call.custom_id.clone()).or_default().push(call);
        }
        let mut retry = Vec::new();
        let (polled, mut fresh) = self.look_up(&mut open, &mut retry).await;
        let mut batches: Vec<(String, bool)> = polled.into_iter().map(|b| (b, true)).collect();
        if !fresh.is_empty() && self.deadline.is_some_and(|d| Instant::now() >= d) {
            // Nothing new is sent once the night is over: it would be
            // paid for and never read.
            let late = std::mem::take(&mut fresh);
            self.fail_unsent(
                &mut open,
                &late,
                &format!("not sent: the time budget (--max-duration) ran out before round {round}"),
            );
        }
        if !fresh.is_empty()
            && let Some(batch_id) = self.submit_fresh(round, &mut open, &fresh).await
        {
            batches.push((batch_id, false));
        }
        relock(&self.stats).rounds += 1;
        self.observe_picked_up(round, &batches);
        let waited = self.wait(round, &mut batches, &mut open, &mut retry).await;
        self.settle_missing(&mut open, waited, &mut retry).await;
        let (answered, failed) = {
            let s = relock(&self.stats);
            (s.answered, s.failed)
        };
        self.observe(RoundEvent::Done {
            round,
            answered,
            resent: retry.len() as u64,
            failed,
            elapsed: started.elapsed(),
        });
        self.enqueue(retry);
    }

    /// Takes a round's `open` calls (by custom id) to the run store: the
    /// calls whose answer is stored are answered and leave `open`. Gives
    /// the batches an earlier process created and has not seen end (each
    /// once, to be polled) and the ids the store knows nothing of (to be
    /// submitted), both in `open`'s order.
    async fn look_up(
        &self,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        retry: &mut Vec<Waiting>,
    ) -> (Vec<String>, Vec<String>) {
        let provider = self.provider();
        let mut polled: Vec<String> = Vec::new();
        let mut fresh: Vec<String> = Vec::new();
        for id in open.keys().cloned().collect::<Vec<_>>() {
            let key = id.clone();
            let stored = self
                .with_ledger("look up a request", move |l| l.lookup(provider, &key))
                .await
                .flatten();
            match stored {
                Some(Stored {
                    answer: Some(body), ..
                }) => {
                    relock(&self.stats).from_store += 1;
                    self.answer(open, &id, Outcome::Answer(body), retry, false)
                        .await;
                }
                Some(Stored {
                    batch_id,
                    open: true,
                    ..
                }) => {
                    if !polled.contains(&batch_id) {
                        polled.push(batch_id);
                    }
                }
                _ => fresh.push(id),
            }
        }
        (polled, fresh)
    }

    /// Fails every call of `open` waiting on one of `ids` with `message`,
    /// each counted as failed: requests that were never sent and will not
    /// be.
    fn fail_unsent(
        &self,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        ids: &[String],
        message: &str,
    ) {
        for id in ids {
            for call in open.remove(id).unwrap_or_default() {
                relock(&self.stats).failed += 1;
                call.reply(Err(ProviderError::Batch {
                    provider: self.provider().to_string(),
                    message: message.to_string(),
                }));
            }
        }
    }

    /// Submits the requests `fresh` (ids of `open`) as one batch of round
    /// `round`, counts it and records it in the ledger; gives its id. When
    /// creating it fails, their calls fail (the HTTP layer retried
    /// already) and leave `open`, and there is no id.
    async fn submit_fresh(
        &self,
        round: u32,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        fresh: &[String],
    ) -> Option<String> {
        let provider = self.provider();
        let lines: Vec<(String, Value)> = fresh
            .iter()
            .filter_map(|id| {
                let body = open.get(id)?.first()?.body.as_ref().clone();
                Some((id.clone(), body))
            })
            .collect();
        match self.api.submit(&lines).await {
            Ok(batch_id) => {
                {
                    let mut stats = relock(&self.stats);
                    stats.batches += 1;
                    stats.requests += lines.len() as u64;
                }
                let ids = fresh.to_vec();
                let recorded = batch_id.clone();
                self.with_ledger("record a batch", move |l| {
                    l.submitted(provider, &recorded, round, &ids)
                })
                .await;
                self.observe(RoundEvent::Submitted {
                    round,
                    id: batch_id.clone(),
                    requests: lines.len() as u64,
                    picked_up: false,
                });
                Some(batch_id)
            }
            Err(error) => {
                // The HTTP layer retried already: these calls fail.
                self.fail_unsent(open, fresh, &format!("creating the batch failed: {error}"));
                None
            }
        }
    }

    /// Counts the batches of `batches` an earlier process created
    /// (`picked_up`) and shows each to the observer as submitted in round
    /// `round` with no request of its own.
    fn observe_picked_up(&self, round: u32, batches: &[(String, bool)]) {
        for (id, picked_up) in batches {
            if *picked_up {
                relock(&self.stats).picked_up += 1;
                self.observe(RoundEvent::Submitted {
                    round,
                    id: id.clone(),
                    requests: 0,
                    picked_up: true,
                });
            }
        }
    }

    /// Settles the calls still in `open` once the round's batches were
    /// waited for (`waited`): their requests have no line in their
    /// batch's results, so they go to the next round if they may be sent
    /// once more (into `retry`); when the waiting stopped first
    /// (`Unanswered`), they fail with the batches' state.
    async fn settle_missing(
        &self,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        waited: Result<(), Unanswered>,
        retry: &mut Vec<Waiting>,
    ) {
        let provider = self.provider();
        let missing: Vec<String> = open.keys().cloned().collect();
        for id in missing {
            let why = match &waited {
                Ok(()) => Outcome::Unfinished("its batch's results have no line for it".into()),
                Err(unanswered) => {
                    for call in open.remove(&id).unwrap_or_default() {
                        call.reply(Err(unanswered.clone().into_error(provider)));
                    }
                    continue;
                }
            };
            self.answer(open, &id, why, retry, true).await;
        }
    }

    /// Polls `batches` until each ended, reading each one's results as it
    /// ends; `Err` with the first unended batch's state when the deadline
    /// came first or no caller waits any more.
    async fn wait(
        &self,
        round: u32,
        batches: &mut Vec<(String, bool)>,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        retry: &mut Vec<Waiting>,
    ) -> Result<(), Unanswered> {
        let provider = self.provider();
        let mut delay = self.poll.first;
        let mut last: HashMap<String, Status> = HashMap::new();
        loop {
            let mut still = Vec::new();
            for (id, picked_up) in batches.drain(..) {
                let status = match self.api.status(&id).await {
                    Ok(status) => status,
                    // An earlier process's batch the provider no longer
                    // has (results are kept 29 days at Anthropic): its
                    // requests are sent again.
                    Err(error) if picked_up => {
                        self.lost(&id, &format!("polling it failed: {error}")).await;
                        continue;
                    }
                    Err(error) => {
                        // The HTTP layer retried already: the calls of
                        // this round that are still open fail with it.
                        return Err(Unanswered::Failed(format!(
                            "polling batch {id} failed: {error}"
                        )));
                    }
                };
                self.observe(RoundEvent::Polled {
                    round,
                    id: id.clone(),
                    phase: status.phase.clone(),
                    done: status.done,
                    total: status.total,
                });
                if status.phase != BatchPhase::Ended {
                    last.insert(id.clone(), status);
                    still.push((id, picked_up));
                    continue;
                }
                let results = match self.api.results(&status).await {
                    Ok(results) => results,
                    Err(error) if picked_up => {
                        self.lost(&id, &format!("reading its results failed: {error}"))
                            .await;
                        continue;
                    }
                    Err(error) => {
                        return Err(Unanswered::Failed(format!(
                            "reading batch {id}'s results failed: {error}"
                        )));
                    }
                };
                if let Some(end) = &status.end
                    && end != "completed"
                {
                    self.note(format!(
                        "batch {id} (round {round}) ended {end}: its unanswered requests were sent again"
                    ));
                }
                self.read(&id, results, open, retry).await;
                let end = status.end.clone().unwrap_or_else(|| "ended".into());
                let ended = id.clone();
                self.with_ledger("record a batch's end", move |l| {
                    l.ended(provider, &ended, &end)
                })
                .await;
                last.remove(&id);
            }
            *batches = still;
            if batches.is_empty() {
                return Ok(());
            }
            let unanswered = || {
                let mut open_batches: Vec<OpenBatch> = batches
                    .iter()
                    .filter_map(|(id, _)| {
                        let s = last.get(id)?;
                        Some(OpenBatch {
                            id: id.clone(),
                            round,
                            phase: s.phase.clone(),
                            done: s.done,
                            total: s.total,
                        })
                    })
                    .collect();
                open_batches.sort_by(|a, b| a.id.cmp(&b.id));
                open_batches
            };
            let nobody_waits = open.values().flatten().all(|w| w.answer.is_closed());
            let now = Instant::now();
            let past_deadline = self.deadline.is_some_and(|d| now >= d);
            if nobody_waits || past_deadline {
                let open_batches = unanswered();
                relock(&self.stats)
                    .open
                    .extend(open_batches.iter().cloned());
                return Err(Unanswered::Open(open_batches));
            }
            let mut sleep = delay;
            if let Some(deadline) = self.deadline {
                sleep = sleep.min(deadline.saturating_duration_since(now));
            }
            // The wait ends early when the last caller stops waiting (a
            // stopped run): the report waits for this round to end.
            let callers_gone =
                futures::future::join_all(open.values_mut().flatten().map(|w| w.answer.closed()));
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                _ = callers_gone => {}
            }
            delay = (delay * 2).min(self.poll.max).max(self.poll.first);
        }
    }

    /// Gives up batch `id` of an earlier process: its requests have no
    /// line, so they are sent again in the next round.
    async fn lost(&self, id: &str, why: &str) {
        self.note(format!(
            "batch {id} of an earlier run could not be picked up ({why}): its requests were sent again"
        ));
        let (batch, end, provider) = (id.to_string(), format!("lost: {why}"), self.provider());
        self.with_ledger("record a batch's end", move |l| {
            l.ended(provider, &batch, &end)
        })
        .await;
    }

    /// Matches a batch's lines to the open calls.
    async fn read(
        &self,
        batch_id: &str,
        results: Results,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        retry: &mut Vec<Waiting>,
    ) {
        if results.unreadable > 0 {
            relock(&self.stats).bad_lines += results.unreadable;
            self.note(format!(
                "batch {batch_id} had {} result lines that could not be read: their requests were sent again",
                results.unreadable
            ));
        }
        for line in results.lines {
            if !open.contains_key(&line.custom_id) {
                // A line for no request of this round: counted, and an
                // answer kept where the store knows its request (an earlier
                // process's, asked again later).
                relock(&self.stats).bad_lines += 1;
                self.note(format!(
                    "batch {batch_id} answered a request this round did not send ({}): not used",
                    line.custom_id
                ));
                if let Outcome::Answer(body) = line.outcome {
                    let (id, provider) = (line.custom_id.clone(), self.provider());
                    self.with_ledger("keep an answer", move |l| l.answered(provider, &id, &body))
                        .await;
                }
                continue;
            }
            self.answer(open, &line.custom_id, line.outcome, retry, true)
                .await;
        }
    }

    /// Gives the calls waiting on `id` their outcome, or puts them back for
    /// the next round when it failed and they may be sent once more.
    async fn answer(
        &self,
        open: &mut BTreeMap<String, Vec<Waiting>>,
        id: &str,
        outcome: Outcome,
        retry: &mut Vec<Waiting>,
        keep: bool,
    ) {
        let Some(calls) = open.remove(id) else {
            return;
        };
        let provider = self.provider();
        let failure = match outcome {
            Outcome::Answer(body) => match self.api.wire().decode(&body) {
                Ok(response) => {
                    if keep {
                        let (key, body) = (id.to_string(), body.clone());
                        self.with_ledger("keep an answer", move |l| {
                            l.answered(provider, &key, &body)
                        })
                        .await;
                        relock(&self.stats).answered += calls.len() as u64;
                    }
                    for call in calls {
                        call.reply(Ok(response.clone()));
                    }
                    return;
                }
                Err(error) => format!("its answer cannot be read ({error})"),
            },
            Outcome::Failed(message) => message,
            Outcome::Unfinished(why) => why,
        };
        for mut call in calls {
            call.tries += 1;
            if call.tries < MAX_TRIES {
                relock(&self.stats).resent += 1;
                retry.push(call);
            } else {
                relock(&self.stats).failed += 1;
                call.reply(Err(ProviderError::Batch {
                    provider: provider.to_string(),
                    message: format!(
                        "request {id} failed in two batches, the last time: {failure}"
                    ),
                }));
            }
        }
    }
}

/// Why a round's calls were not answered.
#[derive(Clone, Debug)]
enum Unanswered {
    /// The run stopped waiting with these batches not ended.
    Open(Vec<OpenBatch>),
    /// Polling or reading failed after the HTTP layer's retries.
    Failed(String),
}

impl Unanswered {
    fn into_error(self, provider: &str) -> ProviderError {
        match self {
            Unanswered::Open(batches) => ProviderError::BatchOpen {
                provider: provider.to_string(),
                state: batches
                    .iter()
                    .map(|b| {
                        format!(
                            "batch {} of round {}: {}, {} of {} requests done",
                            b.id, b.round, b.phase, b.done, b.total
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            },
            Unanswered::Failed(message) => ProviderError::Batch {
                provider: provider.to_string(),
                message,
            },
        }
    }
}

impl<A: BatchApi> Rounds for Inner<A> {
    fn hold(self: Arc<Self>, agents: usize) -> Hold {
        self.adjust(agents as isize);
        Hold {
            rounds: self,
            remaining: agents,
            suspended: false,
        }
    }

    fn set_ledger(&self, ledger: Arc<dyn Ledger>) {
        *relock(&self.ledger) = Some(ledger);
    }

    fn set_observer(&self, on_round: OnRound) {
        *relock(&self.observer) = Some(on_round);
    }

    fn stats(&self) -> BatchStats {
        relock(&self.stats).clone()
    }

    fn notes(&self) -> Vec<String> {
        relock(&self.notes).clone()
    }

    fn driving(&self) -> tokio::sync::watch::Receiver<usize> {
        self.driving.subscribe()
    }

    fn adjust(&self, delta: isize) {
        let round = {
            let mut g = relock(&self.gather);
            g.live = g.live.saturating_add_signed(delta);
            Self::ready(&mut g)
        };
        self.start(round);
    }
}

impl<A: BatchApi> Provider for BatchProvider<A> {
    fn name(&self) -> &str {
        self.inner.provider()
    }

    fn model(&self) -> &str {
        &self.inner.model
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Llm
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.call(request))
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }

    /// Every request of a `--batch` run goes through a batch: billed at
    /// the table's batch price.
    fn price(
        &self,
        prices: &crate::llm::prices::Prices,
        model: &str,
    ) -> Option<crate::llm::prices::Price> {
        prices.get(model).map(|p| p.batched())
    }

    fn rounds(&self) -> Option<Arc<dyn Rounds>> {
        Some(Arc::clone(&self.inner) as Arc<dyn Rounds>)
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
