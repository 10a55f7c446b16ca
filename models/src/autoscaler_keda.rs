//! KEDA in front of the HPA: the checks that take a target from zero replicas to one and
//! back (`pkg/scaling/executor/scale_scaledobjects.go`, `RequestScale`), and the replica
//! calculator's path for the `External` metric KEDA serves (`GetExternalPerPodMetricReplicas`,
//! `pkg/controller/podautoscaler/replica_calculator.go`).
//!
//! Every `polling_interval` KEDA reads its trigger's metric at the instant; the trigger is
//! active while the metric is above `activation_threshold` (a scaler's `IsActive`, e.g.
//! `messages > activationValue`). Then, in `RequestScale`'s order:
//! - no replicas and active: scale to max(`min_replicas`, 1) (`scaleFromZero`);
//! - not active, replicas, `min_replicas` 0: scale to zero once the last active check is
//!   more than `cooldown_period` ago, or none was ever active (`scaleToZero`:
//!   `LastActiveTime == nil || LastActiveTime.Add(cooldownPeriod).Before(now)`);
//! - not active, fewer than `min_replicas`: scale to `min_replicas`;
//! - active: the last active check is now (`updateLastActiveTime`; also after a scale from
//!   zero).
//!
//! Between one and `max_replicas` the HPA KEDA made scales on the same metric, read at its
//! sync: `ceil(total ÷ target)` unless |1 − total ÷ (target × replicas)| is within the
//! tolerance, with the replicas the target has (ready and provisioning alike: an external
//! metric has no per-pod readiness).

use super::Hpa;
use sim_core::SimTime;

/// `GetExternalPerPodMetricReplicas`: `status` replicas, the metric's `total` and the
/// per-replica `target` (both milli-units). `None` with no replicas (the HPA is disabled).
pub fn external_replica_count(status: u32, total: i64, target: i64, tolerance: f64) -> Option<u32> {
    if status == 0 {
        return None;
    }
    let ratio = total as f64 / (target as f64 * status as f64);
    if (1.0 - tolerance) <= ratio && ratio <= (1.0 + tolerance) {
        return Some(status); // Tolerances.isWithin
    }
    Some(libm::ceil(total as f64 / target as f64).clamp(0.0, i32::MAX as f64) as u32)
}

/// What a KEDA check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KedaStep {
    /// Replicas stay.
    Keep,
    /// From zero to this many (`scaleFromZero`).
    Activate(u32),
    /// To zero (`scaleToZero` after the cooldown).
    ToZero,
    /// Up to `min_replicas` (no trigger active, fewer replicas than the minimum).
    ToMin(u32),
}

impl Hpa {
    /// One KEDA check at `now` with `current` replicas and the trigger's `value`.
    pub fn keda_check(&mut self, now: SimTime, current: u32, value: f64) -> KedaStep {
        let active = value > self.activation_threshold;
        if current == 0 && active {
            self.last_active = Some(now);
            return KedaStep::Activate(self.min.max(1));
        }
        if !active && current > 0 && self.min == 0 {
            let cooled = self.last_active.is_none_or(|t| t + self.cooldown_period < now);
            return if cooled { KedaStep::ToZero } else { KedaStep::Keep };
        }
        if !active && current < self.min {
            return KedaStep::ToMin(self.min);
        }
        if active {
            self.last_active = Some(now);
        }
        KedaStep::Keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscaler::AutoscalerSpec;
    use sim_core::SimDuration;

    fn s(n: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(n)
    }

    fn keda(min: u32) -> Hpa {
        let text = format!(
            r#"Autoscaler(name: "a", station: "s", min_replicas: {min}, max_replicas: 10,
                metric: QueueLength, target: 5.0, cooldown_period: "300s")"#
        );
        Hpa::new(&ron::from_str::<AutoscalerSpec>(&text).unwrap())
    }

    /// `TestGetExternalPerPodMetricReplicas`-style cases: 3 replicas, target 10 per pod.
    #[test]
    fn external_per_pod_cases() {
        // 60 in all over 3 at 10 each: ratio 2 → ceil(60 / 10) = 6.
        assert_eq!(external_replica_count(3, 60_000, 10_000, 0.1), Some(6));
        // 32: ratio 1.067 within 0.1 → 3.
        assert_eq!(external_replica_count(3, 32_000, 10_000, 0.1), Some(3));
        // 5: ratio 0.167 → ceil(0.5) = 1.
        assert_eq!(external_replica_count(3, 5_000, 10_000, 0.1), Some(1));
        // 0: ceil(0) = 0; the HPA's minimum (≥ 1) holds it at one.
        assert_eq!(external_replica_count(3, 0, 10_000, 0.1), Some(0));
        assert_eq!(external_replica_count(0, 5_000, 10_000, 0.1), None);
    }

    /// `RequestScale`'s branches in order, checked every 30 s with a 300 s cooldown.
    #[test]
    fn keda_check_sequence() {
        let mut h = keda(0);
        // Never active, replicas at the start: LastActiveTime nil → to zero at once.
        assert_eq!(h.keda_check(s(30), 1, 0.0), KedaStep::ToZero);
        // Zero replicas, inactive: nothing.
        assert_eq!(h.keda_check(s(60), 0, 0.0), KedaStep::Keep);
        // A request waits: active → one replica, last active 90 s.
        assert_eq!(h.keda_check(s(90), 0, 1.0), KedaStep::Activate(1));
        assert_eq!(h.last_active, Some(s(90)));
        // Active with replicas: the last active time moves.
        assert_eq!(h.keda_check(s(120), 1, 3.0), KedaStep::Keep);
        assert_eq!(h.last_active, Some(s(120)));
        // Inactive from 150 s: 120 + 300 = 420 is not before 420, so 420 keeps; 450 scales.
        assert_eq!(h.keda_check(s(150), 2, 0.0), KedaStep::Keep);
        assert_eq!(h.keda_check(s(420), 2, 0.0), KedaStep::Keep);
        assert_eq!(h.keda_check(s(450), 2, 0.0), KedaStep::ToZero);
        assert_eq!(h.last_active, Some(s(120)), "an inactive check leaves it");
    }

    #[test]
    fn activation_threshold_and_minimum() {
        let mut h = keda(0);
        h.activation_threshold = 4.0;
        // Active is strictly above the threshold: 4 waiting is not.
        assert_eq!(h.keda_check(s(30), 0, 4.0), KedaStep::Keep);
        assert_eq!(h.keda_check(s(60), 0, 5.0), KedaStep::Activate(1));
        // min 2: from zero (scaled outside KEDA) it restores the minimum even when
        // inactive, activates to the minimum, and never goes to zero.
        let mut h = keda(2);
        assert_eq!(h.keda_check(s(30), 0, 0.0), KedaStep::ToMin(2));
        assert_eq!(h.keda_check(s(60), 0, 1.0), KedaStep::Activate(2));
        assert_eq!(h.keda_check(s(900), 2, 0.0), KedaStep::Keep);
        assert_eq!(h.keda_check(s(930), 1, 0.0), KedaStep::ToMin(2));
    }

    #[test]
    fn hpa_is_disabled_at_zero_and_floors_at_one() {
        let mut h = keda(0);
        assert_eq!(h.reconcile(s(15), 0, Some(4)), 0, "ScalingDisabled");
        // From 3, a proposal of 0 is held at the HPA's minimum of 1 (down policy 100 %).
        h.down.stabilization = SimDuration::ZERO;
        assert_eq!(h.reconcile(s(30), 3, Some(0)), 1);
    }

    #[test]
    fn zero_needs_a_keda_metric() {
        let text = r#"Autoscaler(name: "a", station: "s", min_replicas: 0, max_replicas: 10,
            target: 50.0)"#;
        let spec: AutoscalerSpec = ron::from_str(text).unwrap();
        let err = super::super::check_bounds(&spec).unwrap_err();
        assert!(err.contains("needs a KEDA metric"), "{err}");
        let mut h = keda(1);
        h.metric = crate::autoscaler::ScaleMetric::Utilization;
        assert!(h.set_min(0).is_err());
    }
}
