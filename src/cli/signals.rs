//! Ctrl-C: the first stops scheduling and lets running agents wrap up;
//! after the grace period or a second Ctrl-C they are cancelled. The report
//! is still written.

use std::time::Duration;

use fanscan::Ui;

/// Watches for Ctrl-C during a run shown and stopped through `ui`. The
/// handler is installed before this returns, so a Ctrl-C is never missed.
pub(crate) fn watch_interrupts(ui: &Ui, grace: Duration) -> tokio::task::JoinHandle<()> {
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!(
                "fanscan: warning: Ctrl-C cannot be caught ({e}); it will end the run without a report"
            );
            return tokio::spawn(async {});
        }
    };
    let ui = ui.clone();
    tokio::spawn(async move {
        if !interrupts.next().await {
            return;
        }
        ui.suspend(|| {
            eprintln!(
                "fanscan: interrupted: no new groups; running agents give their summary (Ctrl-C again, or {} s, cancels them)",
                grace.as_secs()
            );
        });
        let control = ui.control();
        control.wind_down("interrupted (Ctrl-C): no new group was started.");
        tokio::select! {
            _ = interrupts.next() => {}
            _ = tokio::time::sleep(grace) => {}
        }
        control.abort("interrupted (Ctrl-C): running agents were cancelled.");
    })
}

/// Ctrl-C, registered at once (on Unix a SIGINT stream; elsewhere tokio's
/// `ctrl_c`, registered on first poll).
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// The next Ctrl-C; false when none can come any more.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            self.signal.recv().await.is_some()
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}
