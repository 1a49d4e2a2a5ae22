//! Run control: how a run is stopped early, and why.
//!
//! One [`RunControl`] is shared by the scheduler, the agents, the budget,
//! the Ctrl-C handler and the time budget. It gives three signals (stop
//! scheduling, wrap up with a summary, cancel now) and the reasons the run
//! was stopped, which make the report incomplete. It sits below budget,
//! agents and fan-out and imports nothing of the crate.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How a run is stopped early. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct RunControl {
    /// No new group starts.
    pub stop: CancellationToken,
    /// Running agents stop calling tools and give their final summary.
    pub wrap_up: CancellationToken,
    /// Running agents are aborted.
    pub cancel: CancellationToken,
    reasons: Arc<Mutex<Vec<String>>>,
}

impl RunControl {
    /// Stops scheduling and asks running agents to wrap up, for `reason`
    /// (said once in the report).
    pub fn wind_down(&self, reason: &str) {
        {
            let mut reasons = crate::util::relock(&self.reasons);
            if !reasons.iter().any(|r| r == reason) {
                reasons.push(reason.to_string());
            }
        }
        self.stop.cancel();
        self.wrap_up.cancel();
    }

    /// Aborts everything now.
    pub fn abort(&self, reason: &str) {
        self.wind_down(reason);
        self.cancel.cancel();
    }

    /// Why the run was stopped early, if it was.
    pub fn reasons(&self) -> Vec<String> {
        crate::util::relock(&self.reasons).clone()
    }

    /// Winds the run down when `limit` has passed (`--max-duration`). The
    /// timer lives as long as the returned guard: it ends with the run.
    pub(crate) fn time_limit(&self, limit: Option<Duration>) -> TimeLimit {
        let handle = limit.map(|limit| {
            let control = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                control.wind_down(&format!(
                    "the time budget (--max-duration {}) ran out: no new group was started and running agents gave their summary",
                    crate::util::human_duration(limit)
                ));
            })
        });
        TimeLimit(handle)
    }
}

/// The running time budget of a run; dropping it stops the timer.
#[derive(Debug)]
pub(crate) struct TimeLimit(Option<tokio::task::JoinHandle<()>>);

impl Drop for TimeLimit {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_said_once_and_stop_everything() {
        let control = RunControl::default();
        control.wind_down("budget");
        control.wind_down("budget");
        assert_eq!(control.reasons(), vec!["budget".to_string()]);
        assert!(control.stop.is_cancelled() && control.wrap_up.is_cancelled());
        assert!(!control.cancel.is_cancelled());
        control.abort("ctrl-c");
        assert!(control.cancel.is_cancelled());
        assert_eq!(control.reasons().len(), 2);
    }

    // On the paused clock: a sleep returns when every task is idle and the
    // clock has jumped to its deadline, so a timer that would fire does.
    #[tokio::test(start_paused = true)]
    async fn the_time_limit_ends_with_its_guard() {
        let control = RunControl::default();
        let guard = control.time_limit(Some(Duration::from_millis(20)));
        drop(guard);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(control.reasons().is_empty(), "a dropped timer never fires");
        let _guard = control.time_limit(Some(Duration::from_millis(20)));
        tokio::time::timeout(Duration::from_secs(10), control.stop.cancelled())
            .await
            .unwrap();
        assert!(control.reasons()[0].contains("--max-duration 0s"));
    }
}
