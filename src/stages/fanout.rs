//! Fan-out: one tokio task per group, at most `jobs` sub-agents in flight,
//! every one sharing the provider (and so its rate limits).
//!
//! Takes the groups' tasks; gives one [`GroupReport`] per started group, in
//! plan order, and the tasks that never started. Groups are admitted one
//! at a time while the budget has room for their estimate beside the
//! groups in flight; one that has no room waits for running groups to end.
//! A group that fails is recorded as failed and never stops the others (a
//! panic included). The [`RunControl`] stops scheduling (Ctrl-C, a budget),
//! asks running agents to wrap up with their final summary, or cancels
//! them.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::agents::subagent::{Ready, prepare_group, run_ready};
use crate::agents::{AgentDefinition, AgentRun, AgentStatus, AgentTask, GroupReport, Harness};
use crate::llm::budget::{Admission, Spend};
use crate::llm::control::RunControl;
use crate::llm::events::{Event, EventSink};
use crate::llm::providers::batch::{Hold, Member};
use crate::tools::ToolContext;

/// What the fan-out runs with.
pub(crate) struct FanOut {
    pub definition: Arc<AgentDefinition>,
    /// The run's provider, output cap and `--jobs`.
    pub harness: Harness,
    pub tools: Arc<ToolContext>,
    pub events: Option<UnboundedSender<Event>>,
    pub transcripts: bool,
    pub control: RunControl,
    /// The run's budget, checked before each group and on each call.
    pub spend: Arc<Spend>,
    /// The agent of each group the plan names one for, by group id; the
    /// others get `definition`.
    pub specialists: HashMap<String, Arc<AgentDefinition>>,
    /// Where each finished report is committed before it is counted (the
    /// run store); none without a store.
    pub journal: Option<Arc<dyn Journal>>,
    /// The prompt-cache scope of every group (the plan's hash).
    pub cache_scope: Arc<str>,
}

/// Keeps each group's report the moment it finishes, so that a run killed
/// later loses only the groups in flight. Implemented by the run store;
/// a fan-out layer below it only knows this trait.
pub(crate) trait Journal: Send + Sync {
    /// Commits `report` (blocking I/O: called off the async threads).
    fn commit(&self, report: &GroupReport);
}

/// What the fan-out gives.
#[derive(Debug, Default)]
pub struct FanOutResult {
    /// One report per started group, in plan order.
    pub reports: Vec<GroupReport>,
    /// Groups that never started (stopped early).
    pub not_started: Vec<AgentTask>,
}

impl FanOut {
    /// Runs every task, `jobs` at a time, in plan order; each is admitted
    /// only while what it reserves (the larger of the plan's estimate and
    /// twice its first call as it will be sent) fits the budget beside what
    /// was spent and what the groups in flight have reserved.
    ///
    /// A group that does not fit waits for running groups to end (each
    /// frees what it did not spend of its reservation) and is tried again;
    /// it is never cancelled for want of room. A group that does not fit
    /// with no group running never will (spending only grows): it is set
    /// aside as not started and the plan goes on with the next group, so a
    /// smaller group later in the plan still uses what is left (a budget
    /// with room for any group runs one). Groups start in plan order, and
    /// one is set aside only when none runs: the choice of skipping ahead
    /// is deliberate, to spend what the user allowed rather than stop at
    /// the first group too large for what is left.
    ///
    /// Under `--batch` every group runs at once (a round of the batch is
    /// the unit, not `--jobs`), and every group is counted live with the
    /// batch provider before the first starts, so a round leaves only
    /// when each running group waits on its call.
    pub(crate) async fn run(&self, tasks: Vec<AgentTask>) -> FanOutResult {
        let rounds = self.harness.provider().rounds();
        let jobs = match rounds {
            Some(_) => tasks.len().max(1),
            None => self.harness.jobs().max(1),
        };
        let mut hold = rounds.map(|r| r.hold(tasks.len()));
        let semaphore = Arc::new(Semaphore::new(jobs));
        let mut flight = InFlight::default();
        let mut not_started: Vec<(usize, AgentTask)> = Vec::new();
        // Groups that did not fit with nothing running, and what each needs.
        let mut set_aside: Vec<(usize, AgentTask, u64)> = Vec::new();
        let mut pending = tasks.into_iter().enumerate();
        while let Some((index, task)) = pending.next() {
            let permit = tokio::select! {
                biased;
                _ = self.control.stop.cancelled() => None,
                p = Arc::clone(&semaphore).acquire_owned() => p.ok(),
            };
            // Collect what finished meanwhile, so memory follows the
            // agents in flight, not the plan's size.
            while let Some(joined) = flight.set.try_join_next_with_id() {
                let settled = self.settle(joined, &mut flight.started);
                flight.done.push(settled);
            }
            let group = self.group_run(&task);
            let Some(permit) = permit else {
                not_started.push((index, task));
                not_started.extend(pending.by_ref());
                break;
            };
            let prepared = group.prepare(&task).await;
            match self
                .admit(&task, &prepared, &mut flight, hold.as_mut())
                .await
            {
                Admit::Admitted => {}
                Admit::Never(reserve) => {
                    if let Some(hold) = hold.as_mut() {
                        hold.release_one();
                    }
                    set_aside.push((index, task, reserve));
                    continue;
                }
                Admit::Stopped => {
                    not_started.push((index, task));
                    not_started.extend(pending.by_ref());
                    break;
                }
            }
            let member = hold
                .as_mut()
                .and_then(|h| h.member(&format!("{}-{}", task.group, group.definition.name)));
            let handle = flight
                .set
                .spawn(group.run(index, task.clone(), prepared, permit, member));
            flight.started.insert(handle.id(), (index, task));
        }
        // Groups that will not start no longer hold a round back.
        drop(hold);
        self.finish(flight, not_started, set_aside).await
    }

    /// What one group's task runs with, cloned off the fan-out's.
    fn group_run(&self, task: &AgentTask) -> GroupRun {
        GroupRun {
            definition: Arc::clone(self.definition_of(&task.group)),
            harness: self.harness.clone(),
            tools: Arc::clone(&self.tools),
            sink: EventSink::new(&task.group, self.events.clone(), self.transcripts),
            control: self.control.clone(),
            spend: Arc::clone(&self.spend),
            journal: self.journal.clone(),
            cache_scope: Arc::clone(&self.cache_scope),
        }
    }

    /// Whether a prepared group may start: it reserves the larger of the
    /// plan's estimate and twice its first call, waiting for running
    /// groups to end while the budget says so. A group that failed to
    /// prepare spends nothing: its report is kept like any other.
    async fn admit(
        &self,
        task: &AgentTask,
        prepared: &Result<(Ready, u64), GroupReport>,
        flight: &mut InFlight,
        mut hold: Option<&mut Hold>,
    ) -> Admit {
        let first = match prepared {
            Err(_) if self.control.stop.is_cancelled() => return Admit::Stopped,
            Err(_) => return Admit::Admitted,
            Ok((_, first)) => *first,
        };
        let reserve = self.reserve_of(task).max(first.saturating_mul(2));
        // Weighed with the calibration of the agent's model's counter.
        let definition = self.definition_of(&task.group);
        let counter =
            crate::llm::tokens::TokenCounter::for_model(self.harness.model_for(definition));
        loop {
            if self.control.stop.is_cancelled() {
                return Admit::Stopped;
            }
            match self.spend.reserve(
                &task.group,
                crate::llm::budget::Tokens::counted(counter, reserve),
            ) {
                Admission::Admitted => return Admit::Admitted,
                Admission::Never(weighed) => return Admit::Never(weighed),
                Admission::Wait => {
                    // Waiting for running groups to end: the groups not
                    // started must not hold their rounds back meanwhile.
                    if let Some(hold) = hold.as_deref_mut() {
                        hold.suspend();
                    }
                    let joined = tokio::select! {
                        biased;
                        _ = self.control.stop.cancelled() => None,
                        j = flight.set.join_next_with_id() => j,
                    };
                    if let Some(hold) = hold.as_deref_mut() {
                        hold.resume();
                    }
                    match joined {
                        Some(joined) => {
                            let settled = self.settle(joined, &mut flight.started);
                            flight.done.push(settled);
                        }
                        // Reservations with no task left to end them
                        // cannot be: a fanscan bug, not a reason to wait
                        // forever.
                        None if !self.control.stop.is_cancelled() => {
                            return Admit::Never(reserve);
                        }
                        None => {}
                    }
                }
            }
        }
    }

    /// Waits for the groups in flight and gives the reports and the groups
    /// that never started, both in plan order.
    async fn finish(
        &self,
        mut flight: InFlight,
        mut not_started: Vec<(usize, AgentTask)>,
        set_aside: Vec<(usize, AgentTask, u64)>,
    ) -> FanOutResult {
        while let Some(joined) = flight.set.join_next_with_id().await {
            let settled = self.settle(joined, &mut flight.started);
            flight.done.push(settled);
        }
        // Said once the groups are done, so the numbers are the run's
        // final ones: spent, nothing left reserved, and what the smallest
        // group that did not fit needs.
        if let Some(need) = set_aside.iter().map(|(_, _, need)| *need).min()
            && let Some(reason) = self.spend.shortfall(set_aside.len(), need)
        {
            self.control.wind_down(&reason);
        }
        not_started.extend(set_aside.into_iter().map(|(i, task, _)| (i, task)));
        not_started.sort_by_key(|(i, _)| *i);
        let mut done = flight.done;
        done.sort_by_key(|(i, _)| *i);
        FanOutResult {
            reports: done.into_iter().map(|(_, r)| r).collect(),
            not_started: not_started.into_iter().map(|(_, t)| t).collect(),
        }
    }

    /// The plan's estimate of what `task` costs at the low end.
    fn reserve_of(&self, task: &AgentTask) -> u64 {
        let content = crate::util::estimate_tokens(task.files.iter().map(|f| f.bytes).sum());
        crate::stages::plan::estimate::group(
            content,
            self.definition_of(&task.group).preload,
            self.harness.max_output_tokens(),
        )
        .reserve()
    }

    /// The agent that audits `group`.
    fn definition_of(&self, group: &str) -> &Arc<AgentDefinition> {
        self.specialists.get(group).unwrap_or(&self.definition)
    }

    /// A finished task's report; a panicked one becomes a failed report.
    fn settle(
        &self,
        joined: Result<(tokio::task::Id, (usize, GroupReport)), tokio::task::JoinError>,
        started: &mut HashMap<tokio::task::Id, (usize, AgentTask)>,
    ) -> (usize, GroupReport) {
        match joined {
            Ok((id, result)) => {
                started.remove(&id);
                result
            }
            Err(error) => {
                let (index, task) = started.remove(&error.id()).unwrap_or_else(|| {
                    (
                        usize::MAX,
                        AgentTask {
                            group: "unknown".into(),
                            files: Vec::new(),
                            focus: None,
                            instructions: None,
                            leads: Vec::new(),
                            sample: 0,
                        },
                    )
                });
                self.spend.release(&task.group);
                let reason = if error.is_panic() {
                    "the agent task panicked (a fanscan bug: please report it)"
                } else {
                    "the agent task was aborted"
                };
                EventSink::new(&task.group, self.events.clone(), false)
                    .finished(AgentStatus::Failed.as_str(), 0);
                (
                    index,
                    failed_report(
                        &task,
                        self.definition_of(&task.group),
                        self.harness.provider(),
                        reason,
                    ),
                )
            }
        }
    }
}

/// The groups running and those done, by their place in the plan.
#[derive(Default)]
struct InFlight {
    set: JoinSet<(usize, GroupReport)>,
    started: HashMap<tokio::task::Id, (usize, AgentTask)>,
    done: Vec<(usize, GroupReport)>,
}

/// Whether a group may start.
enum Admit {
    Admitted,
    /// It does not fit with no group running: set aside with what it needs.
    Never(u64),
    /// The run is stopping.
    Stopped,
}

/// What one group's tokio task owns.
struct GroupRun {
    definition: Arc<AgentDefinition>,
    harness: Harness,
    tools: Arc<ToolContext>,
    sink: EventSink,
    control: RunControl,
    spend: Arc<Spend>,
    journal: Option<Arc<dyn Journal>>,
    cache_scope: Arc<str>,
}

impl GroupRun {
    fn agent_run(&self) -> AgentRun<'_> {
        AgentRun {
            definition: &self.definition,
            provider: self.harness.provider(),
            tools: &self.tools,
            events: &self.sink,
            wrap_up: &self.control.wrap_up,
            cancel: &self.control.cancel,
            spend: &self.spend,
            max_output_tokens: self.harness.max_output_tokens(),
            cache_scope: &self.cache_scope,
            rule_leads: self.harness.rule_leads(),
        }
    }

    /// Prepared (files read) before it is admitted, so that what it
    /// reserves covers its first call as sent (its own prompt, the task
    /// text, its files) and never less than the plan's estimate.
    async fn prepare(&self, task: &AgentTask) -> Result<(Ready, u64), GroupReport> {
        let run = self.agent_run();
        prepare_group(&run, task).await.map(|prepared| {
            let first = prepared.first_call_tokens(&run);
            (prepared, first)
        })
    }

    /// Runs the admitted group and commits its report to the journal
    /// before the fan-out counts it.
    async fn run(
        self,
        index: usize,
        task: AgentTask,
        prepared: Result<(Ready, u64), GroupReport>,
        permit: OwnedSemaphorePermit,
        member: Option<Member>,
    ) -> (usize, GroupReport) {
        let _permit = permit;
        let report = match prepared {
            Ok((prepared, _)) => {
                let agent = self.audit(&task, prepared);
                let report = match member {
                    Some(member) => member.scope(agent).await,
                    None => agent.await,
                };
                self.spend.release(&task.group);
                report
            }
            Err(report) => report,
        };
        let Some(journal) = self.journal.clone() else {
            return (index, report);
        };
        // Committed before the fan-out counts it: the store is the
        // journal a re-run resumes from.
        let committed = tokio::task::spawn_blocking(move || {
            journal.commit(&report);
            report
        })
        .await;
        match committed {
            Ok(report) => (index, report),
            Err(e) => {
                let mut report =
                    GroupReport::empty(&task, &self.definition, self.harness.provider());
                report.status = AgentStatus::Failed;
                report.error = Some(format!(
                    "committing the group's result failed ({e}): a fanscan bug, please report it"
                ));
                (index, report)
            }
        }
    }
}

impl GroupRun {
    /// The group's audit; a group the run's model refused twice is sent
    /// once to `fallback_model`, under the same reservation, and its
    /// report counts both tries.
    async fn audit(&self, task: &AgentTask, prepared: Ready) -> GroupReport {
        let report = run_ready(self.agent_run(), task, Some(prepared)).await;
        let fallback = match self.harness.fallback_model() {
            Some(model) if report.status == AgentStatus::Blocked && report.model != model => {
                model.to_string()
            }
            Some(_) | None => return report,
        };
        let definition = AgentDefinition {
            model: Some(fallback.clone()),
            ..(*self.definition).clone()
        };
        let run = AgentRun {
            definition: &definition,
            ..self.agent_run()
        };
        let again = match prepare_group(&run, task).await {
            Ok(ready) => run_ready(run, task, Some(ready)).await,
            Err(failed) => failed,
        };
        again.after_blocked(&report, &fallback)
    }
}

/// A report for a group that produced nothing.
fn failed_report(
    task: &AgentTask,
    definition: &AgentDefinition,
    provider: &dyn crate::llm::providers::Provider,
    reason: &str,
) -> GroupReport {
    let mut report = GroupReport::empty(task, definition, provider);
    report.status = AgentStatus::Failed;
    report.error = Some(reason.to_string());
    report
}
