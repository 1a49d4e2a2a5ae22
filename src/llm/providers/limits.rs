//! Shared, adaptive rate limits: one [`RateLimits`] per provider (and so per
//! key and model), used by every agent of a run.
//!
//! Takes the configured requests and tokens per minute and what the server
//! says (429s with `retry-after`, `x-ratelimit-*` and `anthropic-ratelimit-*`
//! headers); gives `acquire`, which waits until a request may go. Requests
//! are spread evenly (a burst of one), never sent as a minute's quota at
//! once: servers enforce per-minute limits over shorter windows.

use crate::util::relock;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use reqwest::header::HeaderMap;
use tokio::time::Instant;

type Limiter = RateLimiter<NotKeyed, InMemoryState, DefaultClock>;

/// Requests-per-minute and tokens-per-minute limits shared by every agent.
pub(crate) struct RateLimits {
    rpm: Option<Limiter>,
    tpm: Option<(Limiter, NonZeroU32)>,
    clock: DefaultClock,
    /// Until when every agent waits: set by a 429's `retry-after` or by
    /// headers saying nothing is left before a reset.
    paused_until: Mutex<Option<Instant>>,
    /// The longest pause headers may impose (the run's `--max-retry-wait`):
    /// a server that names a reset far away cannot stall the run forever.
    max_pause: Duration,
}

impl RateLimits {
    /// `rpm` and `tpm` of 0 mean unlimited; no pause lasts longer than
    /// `max_pause`.
    pub(crate) fn new(rpm: u32, tpm: u64, max_pause: Duration) -> Self {
        let clock = DefaultClock::default();
        let rpm = NonZeroU32::new(rpm).and_then(|n| {
            // 2% under the limit: network and scheduling jitter can bring
            // two requests closer at the server than they left here.
            let period = Duration::from_secs_f64(61.2 / f64::from(n.get()));
            let quota = Quota::with_period(period)?.allow_burst(NonZeroU32::MIN);
            Some(RateLimiter::direct_with_clock(quota, clock.clone()))
        });
        let tpm = u32::try_from(tpm.min(u64::from(u32::MAX)))
            .ok()
            .and_then(NonZeroU32::new)
            .and_then(|n| {
                // Spread tokens over the minute too, with a burst of six
                // seconds' worth so that one large request still fits.
                let burst = NonZeroU32::new((n.get() / 10).max(1)).unwrap_or(NonZeroU32::MIN);
                let period = Duration::from_secs_f64(60.0 / f64::from(n.get()));
                let quota = Quota::with_period(period)?.allow_burst(burst);
                Some((RateLimiter::direct_with_clock(quota, clock.clone()), burst))
            });
        Self {
            rpm,
            tpm,
            clock,
            paused_until: Mutex::new(None),
            max_pause,
        }
    }

    /// No limits at all.
    #[cfg(test)]
    fn unlimited() -> Self {
        Self::new(0, 0, Duration::from_secs(120))
    }

    /// Waits until one request of about `tokens` tokens may be sent.
    pub(crate) async fn acquire(&self, tokens: u64) {
        self.wait_pause().await;
        if let Some(limiter) = &self.rpm {
            loop {
                match limiter.check() {
                    Ok(()) => break,
                    Err(not_until) => {
                        tokio::time::sleep(not_until.wait_time_from(self.clock.now())).await;
                    }
                }
            }
        }
        if let Some((limiter, burst)) = &self.tpm {
            // The whole estimate is reserved, in chunks of at most the
            // burst: a large request waits its full share of the minute.
            let mut left = tokens.max(1);
            while left > 0 {
                let chunk = u32::try_from(left.min(u64::from(burst.get())))
                    .ok()
                    .and_then(NonZeroU32::new)
                    .unwrap_or(*burst);
                loop {
                    match limiter.check_n(chunk) {
                        Ok(Ok(())) => break,
                        Ok(Err(not_until)) => {
                            tokio::time::sleep(not_until.wait_time_from(self.clock.now())).await;
                        }
                        // Cannot happen (chunk <= burst); never spin on it.
                        Err(_) => break,
                    }
                }
                left -= u64::from(chunk.get());
            }
        }
        // A 429 may have arrived while this request waited its turn.
        self.wait_pause().await;
    }

    async fn wait_pause(&self) {
        let mut waited = false;
        loop {
            let until = *relock(&self.paused_until);
            match until {
                Some(t) if t > Instant::now() => {
                    tokio::time::sleep_until(t).await;
                    waited = true;
                }
                _ => break,
            }
        }
        if waited {
            // Everyone a pause held would otherwise send at the same
            // instant, and most would be refused again: spread them.
            let spread = fastrand::u64(0..=250);
            tokio::time::sleep(Duration::from_millis(spread)).await;
        }
    }

    /// Pauses every agent of this limiter for `wait` from now (a 429's
    /// `retry-after`). Never shortens a pause already in force.
    pub(crate) fn pause_for(&self, wait: Duration) {
        let now = Instant::now();
        let until = now.checked_add(wait.min(self.max_pause)).unwrap_or(now);
        let mut guard = relock(&self.paused_until);
        *guard = Some(guard.map_or(until, |t| t.max(until)));
    }

    /// Reads the server's rate-limit headers and, when one says nothing is
    /// left, pauses everyone until its reset. Values of `-1` or absent
    /// headers mean "unknown", never "zero left".
    pub(crate) fn observe_headers(&self, headers: &HeaderMap) {
        if let Some(wait) = exhausted_wait(headers) {
            self.pause_for(wait);
        }
    }
}

/// Requests in flight, adapted to the server: halved on a 429/529 burst,
/// one added back after a run of successes, never above the maximum
/// (`--jobs`). Additive increase, multiplicative decrease.
pub(crate) struct Concurrency {
    max: usize,
    state: Mutex<ConcurrencyState>,
    notify: tokio::sync::Notify,
}

struct ConcurrencyState {
    limit: usize,
    in_flight: usize,
    successes: usize,
    lowest: usize,
    last_cut: Option<Instant>,
}

/// A request slot; frees itself when dropped.
pub(crate) struct Slot<'a>(&'a Concurrency);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        {
            let mut s = relock(&self.0.state);
            s.in_flight = s.in_flight.saturating_sub(1);
        }
        self.0.notify.notify_waiters();
    }
}

impl Concurrency {
    /// At most `max` requests in flight (at least one).
    pub(crate) fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            max,
            state: Mutex::new(ConcurrencyState {
                limit: max,
                in_flight: 0,
                successes: 0,
                lowest: max,
                last_cut: None,
            }),
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Waits for a slot under the current limit.
    pub(crate) async fn acquire(&self) -> Slot<'_> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = relock(&self.state);
                if s.in_flight < s.limit {
                    s.in_flight += 1;
                    return Slot(self);
                }
            }
            notified.await;
        }
    }

    /// A success: after a run of them as long as twice the limit, one more
    /// request may be in flight.
    pub(crate) fn succeeded(&self) {
        let mut s = relock(&self.state);
        s.successes += 1;
        if s.successes >= 2 * s.limit && s.limit < self.max {
            s.limit += 1;
            s.successes = 0;
            drop(s);
            self.notify.notify_waiters();
        }
    }

    /// An overload answer (429, 529): halve the limit, once per burst (cuts
    /// closer than 250 ms apart count as one burst). Returns the new limit.
    pub(crate) fn overloaded(&self) -> usize {
        let mut s = relock(&self.state);
        let now = Instant::now();
        if s.last_cut
            .is_none_or(|t| now - t >= Duration::from_millis(250))
        {
            s.limit = (s.limit / 2).max(1);
            s.lowest = s.lowest.min(s.limit);
            s.last_cut = Some(now);
        }
        s.successes = 0;
        s.limit
    }

    /// The current limit and the lowest it has been.
    #[cfg(test)]
    fn limits(&self) -> (usize, usize) {
        let s = relock(&self.state);
        (s.limit, s.lowest)
    }
}

/// The longest reset among the limits the headers say are used up.
pub(crate) fn exhausted_wait(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let mut wait: Option<Duration> = None;
    let number = |name: &str| get(name).and_then(|v| v.parse::<i64>().ok());
    for kind in ["requests", "tokens"] {
        // OpenAI: remaining as a count, reset as a Go duration ("6m0s").
        if nearly_out(
            number(&format!("x-ratelimit-remaining-{kind}")),
            number(&format!("x-ratelimit-limit-{kind}")),
        ) && let Some(d) = get(&format!("x-ratelimit-reset-{kind}")).and_then(parse_go_duration)
        {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    for kind in ["requests", "tokens", "input-tokens", "output-tokens"] {
        // Anthropic: reset as an RFC 3339 instant.
        if nearly_out(
            number(&format!("anthropic-ratelimit-{kind}-remaining")),
            number(&format!("anthropic-ratelimit-{kind}-limit")),
        ) && let Some(d) =
            get(&format!("anthropic-ratelimit-{kind}-reset")).and_then(until_rfc3339)
        {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    wait
}

/// Whether what is left is under a 2% safety margin of the limit (zero
/// when the limit is unknown), so the limiter slows down before the server
/// says no. Negative values mean "unknown" (Azure sends -1).
fn nearly_out(remaining: Option<i64>, limit: Option<i64>) -> bool {
    match (remaining, limit) {
        (Some(r), _) if r < 0 => false,
        (Some(r), Some(l)) if l > 0 => r <= l / 50,
        (Some(r), _) => r == 0,
        (None, _) => false,
    }
}

/// Parses a Go-style duration as OpenAI sends it: `12ms`, `1s`, `6m0s`,
/// `39.9s`, `1h2m3.5s`.
pub(crate) fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut number = String::new();
    let mut chars = text.trim().chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let value: f64 = number.parse().ok()?;
        number.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            'u' | 'µ' if chars.peek() == Some(&'s') => {
                chars.next();
                0.000_001
            }
            'n' if chars.peek() == Some(&'s') => {
                chars.next();
                0.000_000_001
            }
            _ => return None,
        };
        total += value * unit;
        any = true;
    }
    if !number.is_empty() || !any || !total.is_finite() || total < 0.0 {
        return None;
    }
    Some(secs_f64(total))
}

/// Time from now until an RFC 3339 instant (zero when it is past).
fn until_rfc3339(text: &str) -> Option<Duration> {
    let at: jiff::Timestamp = text.parse().ok()?;
    let now = jiff::Timestamp::now();
    let span = at.duration_since(now);
    Some(Duration::try_from(span).unwrap_or(Duration::ZERO))
}

/// Seconds as a duration, clamped: a server may send any number, and a
/// huge one must become "too long", never a panic.
pub(crate) fn secs_f64(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.clamp(0.0, 1e9)).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_go_duration("12ms"), Some(Duration::from_millis(12)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(
            parse_go_duration("39.9s"),
            Some(Duration::from_secs_f64(39.9))
        );
        assert_eq!(parse_go_duration("1h2m3s"), Some(Duration::from_secs(3723)));
        assert_eq!(parse_go_duration("abc"), None);
        assert!(parse_go_duration(&format!("{}s", "9".repeat(300))).is_some());
        assert_eq!(parse_go_duration("12"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn exhausted_headers_give_a_wait_and_unknown_values_do_not() {
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining-requests", "0".parse().unwrap());
        h.insert("x-ratelimit-reset-requests", "2s".parse().unwrap());
        assert_eq!(exhausted_wait(&h), Some(Duration::from_secs(2)));
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining-requests", "-1".parse().unwrap());
        h.insert("x-ratelimit-reset-requests", "2s".parse().unwrap());
        assert_eq!(exhausted_wait(&h), None);
        // Under the 2% margin of a known limit: slow down already.
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-limit-tokens", "100000".parse().unwrap());
        h.insert("x-ratelimit-remaining-tokens", "1500".parse().unwrap());
        h.insert("x-ratelimit-reset-tokens", "6m0s".parse().unwrap());
        assert_eq!(exhausted_wait(&h), Some(Duration::from_secs(360)));
        h.insert("x-ratelimit-remaining-tokens", "50000".parse().unwrap());
        assert_eq!(exhausted_wait(&h), None);
    }

    #[tokio::test]
    async fn requests_are_spread_not_burst() {
        // 1200 per minute = one every 50 ms; five requests take >= 200 ms.
        let limits = RateLimits::new(1200, 0, Duration::from_secs(1));
        let start = std::time::Instant::now();
        for _ in 0..5 {
            limits.acquire(10).await;
        }
        assert!(
            start.elapsed() >= Duration::from_millis(190),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn concurrency_halves_on_overload_and_recovers_on_success() {
        let c = Concurrency::new(8);
        assert_eq!(c.overloaded(), 4);
        // A second 429 of the same burst does not cut again.
        assert_eq!(c.overloaded(), 4);
        for _ in 0..8 {
            c.succeeded();
        }
        assert_eq!(c.limits(), (5, 4));
        let a = c.acquire().await;
        let b = c.acquire().await;
        assert_eq!(c.state.lock().unwrap().in_flight, 2);
        drop((a, b));
        assert_eq!(c.state.lock().unwrap().in_flight, 0);
    }

    #[tokio::test]
    async fn large_requests_reserve_their_whole_estimate() {
        // 60,000 tokens a minute = 1,000 a second with a burst of 6,000:
        // 3,000 tokens past the burst take three seconds.
        let limits = RateLimits::new(0, 60_000, Duration::from_secs(1));
        let start = std::time::Instant::now();
        limits.acquire(6_000).await; // the 6000 burst
        limits.acquire(3_000).await; // 3000 more at 1000/s
        assert!(
            start.elapsed() >= Duration::from_millis(2_900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn a_pause_holds_every_caller() {
        let limits = RateLimits::unlimited();
        limits.pause_for(Duration::from_millis(120));
        let start = std::time::Instant::now();
        limits.acquire(1).await;
        assert!(start.elapsed() >= Duration::from_millis(110));
    }
}
