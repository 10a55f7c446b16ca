//! A provider quota (OpenAI-style): requests per minute, tokens per minute and concurrent
//! requests, enforced by the upstream; a refused request gets HTTP 429 with an optional
//! Retry-After (docs/domain.md §1, §3.5, incidents 5 and 6).
//!
//! Each request reserves one request of `rpm` and `prompt + max_tokens` tokens of `tpm` at
//! admission (OpenAI counts `max_tokens`, not the tokens finally generated); with
//! `refund_unused` the unused part is given back at completion. A request is admitted only
//! when every configured limit has room; otherwise it is answered 429
//! ([`crate::Reason::Upstream429`]) and consumes nothing.
//!
//! The key design decision: **the window is a continuously refilling bucket by default**
//! ([`QuotaWindow::Bucket`]): capacity = the per-minute limit, refilled at limit/60 s per
//! second, starting full. OpenAI documents that capacity is replenished continuously
//! rather than reset each minute. A rolling 60 s window ([`QuotaWindow::Rolling`]: a log of
//! admissions in `(now − 60 s, now]`) is the other option; it allows the same long-run rate
//! but releases capacity exactly 60 s after it was taken, in lumps. All arithmetic is
//! integer: bucket levels are kept in units of 1/60e9 of a request or token (one unit per
//! nanosecond per unit of the per-minute rate), so refills and Retry-After are exact.
//!
//! Retry-After ([`RetryAfter::Computed`]): the time until enough capacity frees for this
//! very request, over every limit that refused it, rounded up to whole seconds as providers
//! send it. It is `None` when the wait cannot be known (the concurrency cap refused it: it
//! depends on completions) or is infinite (the request alone exceeds `tpm`, OpenAI's
//! "request too large").
//!
//! Architecture invariant: `in_flight ≤ max_concurrency` (as of the last decrease);
//! bucket levels stay within `[0, capacity]`; the rolling logs hold only entries younger
//! than 60 s, at most `rpm` (resp. `tpm`, zero-token requests are not logged) entries; every
//! admitted request is completed exactly once (`admitted − completed = in_flight`).
//!
//! API boundary: the world calls [`Quota::admit`] when a call reaches the provider and
//! [`Quota::complete`] when the provider finishes it (answered, failed or cancelled), with
//! the [`Ticket`] it got. The quota never sees calls, only token counts and time.

use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Nanoseconds in the quota period (one minute).
const PERIOD_NS: u64 = 60_000_000_000;
const PERIOD: SimDuration = SimDuration::from_ns(PERIOD_NS);
const NS_PER_S: u64 = 1_000_000_000;

crate::params::param_choices! {
    /// How capacity comes back.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum QuotaWindow {
        /// Continuous refill at limit/60 s; capacity = the per-minute limit (OpenAI).
        #[default]
        Bucket = "Bucket",
        /// Admissions in the last 60 s, each released exactly 60 s after it was taken.
        Rolling = "Rolling",
    }
}

/// What a 429 says about when to come back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetryAfter {
    /// No Retry-After header.
    Off,
    /// Time until enough capacity frees, rounded up to whole seconds.
    #[default]
    Computed,
    /// Always this value.
    Fixed(SimDuration),
}

/// Configuration of a provider quota, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Quota")]
pub struct QuotaSpec {
    /// Name; parameters live under `quota.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Requests per minute (`None`: unlimited).
    #[serde(default = "D::rpm", deserialize_with = "R::rpm")]
    pub rpm: Option<u64>,
    /// Tokens per minute, counting prompt + max_tokens at admission (`None`: unlimited).
    #[serde(default = "D::tpm", deserialize_with = "R::tpm")]
    pub tpm: Option<u64>,
    /// Concurrent requests in progress at the provider (`None`: unlimited).
    #[serde(default = "D::max_concurrency", deserialize_with = "R::max_concurrency")]
    pub max_concurrency: Option<u64>,
    #[serde(default = "D::window")]
    pub window: QuotaWindow,
    /// Give back `reserved − used` tokens when a request completes (default: no, as
    /// OpenAI's documentation describes).
    #[serde(default = "D::refund_unused")]
    pub refund_unused: bool,
    #[serde(default)]
    pub retry_after: RetryAfter,
}

/// Proof of admission, handed back to [`Quota::complete`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub admitted_at: SimTime,
    /// Tokens reserved (prompt + max_tokens).
    pub reserved: u64,
}

/// The quota's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Admit(Ticket),
    /// HTTP 429 (`Reason::Upstream429`), with the Retry-After to send, if any.
    Reject429 {
        retry_after: Option<SimDuration>,
    },
}

/// Counters worth exposing (stable names in the field names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuotaCounters {
    pub admitted: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Rejections per limit; a request refused by several limits counts in each.
    pub rejected_rpm: u64,
    pub rejected_tpm: u64,
    pub rejected_concurrency: u64,
    pub tokens_reserved: u64,
    pub tokens_refunded: u64,
}

/// One limit (rpm or tpm) with its window state.
#[derive(Clone, Debug)]
struct Limit {
    per_min: u64,
    /// Bucket: level in units of 1/60e9 (one unit per ns per unit of `per_min`).
    level: u128,
    /// Rolling: (admitted_at, amount), oldest first; `sum` is the total amount.
    log: VecDeque<(SimTime, u64)>,
    sum: u64,
    /// The highest `per_min` ever set: bounds the rolling log after a decrease.
    peak: u64,
}

impl Limit {
    fn new(per_min: u64) -> Limit {
        assert!(per_min >= 1);
        Limit { per_min, level: Self::cap(per_min), log: VecDeque::new(), sum: 0, peak: per_min }
    }
    fn cap(per_min: u64) -> u128 {
        per_min as u128 * PERIOD_NS as u128
    }
    #[inline]
    fn refill(&mut self, elapsed: SimDuration) {
        let cap = Self::cap(self.per_min);
        self.level = cap.min(self.level + elapsed.as_ns() as u128 * self.per_min as u128);
    }
    fn expire(&mut self, now: SimTime) {
        while let Some(&(t, n)) = self.log.front() {
            if t + PERIOD > now {
                break;
            }
            self.log.pop_front();
            self.sum -= n;
        }
    }
    /// `Ok(())` when `amount` fits now; otherwise the exact wait until it fits (`None`:
    /// never, the amount exceeds the limit).
    #[inline]
    fn check(&self, w: QuotaWindow, amount: u64, now: SimTime) -> Result<(), Option<SimDuration>> {
        if amount > self.per_min {
            return Err(None);
        }
        match w {
            QuotaWindow::Bucket => {
                let need = amount as u128 * PERIOD_NS as u128;
                if self.level >= need {
                    return Ok(());
                }
                let wait = (need - self.level).div_ceil(self.per_min as u128);
                Err(Some(SimDuration::from_ns(wait as u64)))
            }
            QuotaWindow::Rolling => {
                if self.sum + amount <= self.per_min {
                    return Ok(());
                }
                // Drop the oldest entries until the amount fits: the last one dropped
                // expires at its time + 60 s.
                let mut sum = self.sum;
                for &(t, n) in &self.log {
                    sum -= n;
                    if sum + amount <= self.per_min {
                        return Err(Some((t + PERIOD).since(now)));
                    }
                }
                unreachable!("amount ≤ per_min fits into an empty window")
            }
        }
    }
    #[inline]
    fn take(&mut self, w: QuotaWindow, amount: u64, now: SimTime) {
        match w {
            QuotaWindow::Bucket => self.level -= amount as u128 * PERIOD_NS as u128,
            QuotaWindow::Rolling => {
                if amount > 0 {
                    self.log.push_back((now, amount));
                    self.sum += amount;
                }
                assert!(self.log.len() as u64 <= self.sum && self.sum <= self.peak);
            }
        }
    }
    /// Gives back up to `amount` taken at `at` (a refund); returns what was given back.
    fn give_back(&mut self, w: QuotaWindow, at: SimTime, amount: u64, now: SimTime) -> u64 {
        match w {
            QuotaWindow::Bucket => {
                self.level += amount as u128 * PERIOD_NS as u128;
                self.level = self.level.min(Self::cap(self.per_min));
                amount
            }
            QuotaWindow::Rolling => {
                if at + PERIOD <= now {
                    return 0; // already out of the window
                }
                let mut left = amount;
                for e in self.log.iter_mut().filter(|e| e.0 == at) {
                    let d = left.min(e.1);
                    e.1 -= d;
                    left -= d;
                }
                self.sum -= amount - left;
                self.log.retain(|e| e.1 > 0);
                amount - left
            }
        }
    }
    fn remaining(&self, w: QuotaWindow) -> u64 {
        match w {
            QuotaWindow::Bucket => (self.level / PERIOD_NS as u128) as u64,
            QuotaWindow::Rolling => self.per_min.saturating_sub(self.sum),
        }
    }
    fn set(&mut self, per_min: u64) {
        assert!(per_min >= 1);
        self.per_min = per_min;
        self.peak = self.peak.max(per_min);
        self.level = self.level.min(Self::cap(per_min));
    }
}

/// Run-time state of a provider quota.
#[derive(Clone, Debug)]
pub struct Quota {
    window: QuotaWindow,
    refund_unused: bool,
    retry_after: RetryAfter,
    rpm: Option<Limit>,
    tpm: Option<Limit>,
    max_concurrency: Option<u64>,
    in_flight: u64,
    last: SimTime,
    pub counters: QuotaCounters,
}

impl Quota {
    pub fn new(spec: &QuotaSpec) -> Quota {
        assert!(spec.rpm != Some(0) && spec.tpm != Some(0) && spec.max_concurrency != Some(0));
        Quota {
            window: spec.window,
            refund_unused: spec.refund_unused,
            retry_after: spec.retry_after,
            rpm: spec.rpm.map(Limit::new),
            tpm: spec.tpm.map(Limit::new),
            max_concurrency: spec.max_concurrency,
            in_flight: 0,
            last: SimTime::ZERO,
            counters: QuotaCounters::default(),
        }
    }

    /// Brings refills and expiries up to `now` (before reading the `remaining_*` gauges;
    /// every decision does it itself).
    ///
    /// At the instant of the last advance there is nothing to do: no time to refill for, and
    /// the expiries up to `now` are done (an entry taken since, at `now`, expires later).
    #[inline]
    pub fn advance(&mut self, now: SimTime) {
        assert!(now >= self.last, "time went backwards");
        if now == self.last {
            return;
        }
        let elapsed = now - self.last;
        self.last = now;
        // Written out, rpm then tpm (twice per call on the hot path: at admission and at
        // completion).
        match self.window {
            QuotaWindow::Bucket => {
                if let Some(l) = &mut self.rpm {
                    l.refill(elapsed);
                }
                if let Some(l) = &mut self.tpm {
                    l.refill(elapsed);
                }
            }
            QuotaWindow::Rolling => {
                if let Some(l) = &mut self.rpm {
                    l.expire(now);
                }
                if let Some(l) = &mut self.tpm {
                    l.expire(now);
                }
            }
        }
    }

    /// A request reserving `tokens` (prompt + max_tokens) reaches the provider.
    pub fn admit(&mut self, tokens: u64, now: SimTime) -> Admit {
        self.advance(now);
        let w = self.window;
        let conc = self.max_concurrency.is_some_and(|c| self.in_flight >= c);
        let r = self.rpm.as_ref().map_or(Ok(()), |l| l.check(w, 1, now));
        let t = self.tpm.as_ref().map_or(Ok(()), |l| l.check(w, tokens, now));
        if !conc && r.is_ok() && t.is_ok() {
            if let Some(l) = &mut self.rpm {
                l.take(w, 1, now);
            }
            if let Some(l) = &mut self.tpm {
                l.take(w, tokens, now);
            }
            self.in_flight += 1;
            self.counters.admitted += 1;
            self.counters.tokens_reserved += tokens;
            return Admit::Admit(Ticket { admitted_at: now, reserved: tokens });
        }
        let c = &mut self.counters;
        c.rejected += 1;
        c.rejected_concurrency += conc as u64;
        c.rejected_rpm += r.is_err() as u64;
        c.rejected_tpm += t.is_err() as u64;
        let retry_after = match self.retry_after {
            RetryAfter::Off => None,
            RetryAfter::Fixed(d) => Some(d),
            RetryAfter::Computed if conc => None,
            RetryAfter::Computed => {
                // Both waits must pass; an unknowable one (None) makes the whole unknown.
                let wait =
                    |x: Result<(), Option<SimDuration>>| x.err().unwrap_or(Some(SimDuration::ZERO));
                match (wait(r), wait(t)) {
                    (Some(a), Some(b)) => Some(whole_seconds_up(a.max(b))),
                    _ => None,
                }
            }
        };
        Admit::Reject429 { retry_after }
    }

    /// The provider finished an admitted request that used `tokens_used` tokens.
    pub fn complete(&mut self, ticket: Ticket, tokens_used: u64, now: SimTime) {
        self.advance(now);
        assert!(self.in_flight > 0, "quota completed more requests than it admitted");
        self.in_flight -= 1;
        self.counters.completed += 1;
        if self.refund_unused && tokens_used < ticket.reserved {
            let w = self.window;
            if let Some(l) = &mut self.tpm {
                let back = l.give_back(w, ticket.admitted_at, ticket.reserved - tokens_used, now);
                self.counters.tokens_refunded += back;
            }
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    /// Requests that could be admitted now (`x-ratelimit-remaining-requests`); `None`:
    /// unlimited. As of the last decision or [`Quota::advance`].
    pub fn remaining_requests(&self) -> Option<u64> {
        self.rpm.as_ref().map(|l| l.remaining(self.window))
    }
    /// Tokens that could be reserved now (`x-ratelimit-remaining-tokens`).
    pub fn remaining_tokens(&self) -> Option<u64> {
        self.tpm.as_ref().map(|l| l.remaining(self.window))
    }
    pub fn rpm(&self) -> Option<u64> {
        self.rpm.as_ref().map(|l| l.per_min)
    }
    pub fn tpm(&self) -> Option<u64> {
        self.tpm.as_ref().map(|l| l.per_min)
    }
    pub fn max_concurrency(&self) -> Option<u64> {
        self.max_concurrency
    }

    /// Run-time change. Lowering clamps the stored capacity; raising does not add any (a
    /// limit switched on from unlimited starts full).
    pub fn set_rpm(&mut self, rpm: Option<u64>, now: SimTime) {
        self.advance(now);
        set_limit(&mut self.rpm, rpm);
    }
    pub fn set_tpm(&mut self, tpm: Option<u64>, now: SimTime) {
        self.advance(now);
        set_limit(&mut self.tpm, tpm);
    }
    /// Lowering never revokes requests in progress; new ones wait for room.
    pub fn set_max_concurrency(&mut self, c: Option<u64>) {
        assert!(c != Some(0));
        self.max_concurrency = c;
    }
    pub fn set_refund_unused(&mut self, on: bool) {
        self.refund_unused = on;
    }
    pub fn set_retry_after(&mut self, r: RetryAfter) {
        self.retry_after = r;
    }
}

fn set_limit(slot: &mut Option<Limit>, v: Option<u64>) {
    match (slot.as_mut(), v) {
        (Some(l), Some(n)) => l.set(n),
        (None, Some(n)) => *slot = Some(Limit::new(n)),
        (_, None) => *slot = None,
    }
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<QuotaSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<QuotaSpec>;

/// Rounds up to whole seconds, as a Retry-After header carries them.
pub fn whole_seconds_up(d: SimDuration) -> SimDuration {
    SimDuration::from_ns(d.as_ns().div_ceil(NS_PER_S) * NS_PER_S)
}

crate::params::declare_params! {
    QuotaSpec: "quota", name = |s| s.name,
        scenario_only = [
            retry_after: "a choice carrying a value (Off, Computed, Fixed(d)): no parameter type for it",
        ],
        state = Quota;
    rpm: OptCount { min: 1, max: 1_000_000_000_000 }, "requests/min",
        runtime(apply = |q, n, now| q.set_rpm(n, now)),
        "requests per minute (None = unlimited)", default = None;
    tpm: OptCount { min: 1, max: 1_000_000_000_000 }, "tokens/min",
        runtime(apply = |q, n, now| q.set_tpm(n, now)),
        "tokens per minute, prompt + max_tokens (None = unlimited)", default = None;
    max_concurrency: OptCount { min: 1, max: 1_000_000_000_000 }, "requests",
        runtime(apply = |q, n| q.set_max_concurrency(n)),
        "concurrent requests (None = unlimited)", default = None;
    window: Enum { choices: QuotaWindow::CHOICES }, "", fixed,
        "how capacity comes back: Bucket (continuous refill, OpenAI) or Rolling (each admission released 60 s later)",
        default = "Bucket";
    refund_unused: Bool, "",
        runtime(apply = |q, on| q.set_refund_unused(on)),
        "give back unused reserved tokens at completion",
        default = false;
}

#[cfg(test)]
mod tests;
