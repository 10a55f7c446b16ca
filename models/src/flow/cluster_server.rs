//! The token server of one cluster rule (Sentinel's `DefaultTokenService` →
//! `ClusterFlowChecker.acquireClusterToken`, not prioritized, acquire count 1): the
//! namespace limiter (`GlobalRequestLimiter`, `max_allowed_qps` over 10 × 100 ms), then
//! `globalThreshold − passes / (window in s) − 1 ≥ 0` → OK (counted), else BLOCKED.
//!
//! Architecture invariant: every request answered while up is counted once in `ok`,
//! `blocked` or `too_many`; its windows are fixed-size leap arrays.
//!
//! API boundary: [`TokenServer::request_token`] at a time; shared by the clients through
//! [`super::cluster::ClusterFlow`].

use super::cluster_spec::{ClusterFlowRuleSpec, ThresholdType};
use super::leap_array::LeapArray;
use super::now_ms;
use sim_core::SimTime;

/// The token server's answer (`TokenResultStatus`, the cases modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenStatus {
    Ok,
    Blocked,
    /// The namespace's `maxAllowedQps` was exceeded.
    TooManyRequest,
    /// The server could not be reached.
    Fail,
}

/// The token server's state for one cluster rule (shared by all its clients).
#[derive(Clone, Debug)]
pub struct TokenServer {
    pub(crate) count: f64,
    pub(crate) threshold_type: ThresholdType,
    pub(crate) exceed_count: f64,
    pub(crate) max_allowed_qps: f64,
    pub(crate) up: bool,
    /// Connected clients (`ConnectionManager.getConnectedCount`).
    pub(crate) connected: u64,
    /// PASS counts (`ClusterMetric`).
    window: LeapArray,
    /// `windowIntervalMs / 1000.0` (`getIntervalInSecond`).
    interval_s: f64,
    /// Every request admitted by the namespace limiter (`RequestLimiter`: 10 × 100 ms).
    requests: LeapArray,
    pub ok: u64,
    pub blocked: u64,
    pub too_many: u64,
}

impl TokenServer {
    pub fn new(spec: &ClusterFlowRuleSpec) -> Self {
        assert!(spec.check().is_ok(), "checked: the window divides evenly");
        TokenServer {
            count: spec.count,
            threshold_type: spec.threshold_type,
            exceed_count: spec.exceed_count,
            max_allowed_qps: spec.max_allowed_qps,
            up: spec.server_up,
            connected: 1,
            window: LeapArray::new(spec.sample_count as usize, spec.window_interval_ms),
            interval_s: spec.window_interval_ms as f64 / 1000.0,
            requests: LeapArray::new(10, 1000),
            ok: 0,
            blocked: 0,
            too_many: 0,
        }
    }

    /// `calcGlobalThreshold(rule) × exceedCount`.
    pub fn global_threshold(&self) -> f64 {
        let base = match self.threshold_type {
            ThresholdType::Global => self.count,
            ThresholdType::AvgLocal => self.count * self.connected as f64,
        };
        base * self.exceed_count
    }

    /// Passes in the server's window at `now` (`getSum(PASS)`).
    pub fn window_passes(&self, now: SimTime) -> u64 {
        self.window.pass(now_ms(now))
    }

    pub fn connected(&self) -> u64 {
        self.connected
    }
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// One token request (`acquireCount` 1, not prioritized).
    pub fn request_token(&mut self, now: SimTime) -> TokenStatus {
        if !self.up {
            return TokenStatus::Fail;
        }
        let t = now_ms(now);
        // GlobalRequestLimiter.tryPass: `qps + 1 ≤ maxAllowedQps` (1 s window), then count it.
        if self.requests.pass(t) as f64 + 1.0 > self.max_allowed_qps {
            self.too_many += 1;
            return TokenStatus::TooManyRequest;
        }
        self.requests.add_pass(t, 1);
        let latest_qps = self.window.pass(t) as f64 / self.interval_s;
        if self.global_threshold() - latest_qps - 1.0 >= 0.0 {
            self.window.add_pass(t, 1);
            self.ok += 1;
            TokenStatus::Ok
        } else {
            self.blocked += 1;
            TokenStatus::Blocked
        }
    }
}
