//! Why more threads are not free (docs/domain.md §3.4, incident 12: 200 → 300 → 600 threads gave
//! 1050 → 1200 → 1080 TPS).
//!
//! A task on a worker thread is `io` (blocking wait, no CPU) plus `cpu` (computation). Two
//! costs of threads, both pure functions here:
//! - every live thread adds context switching, lock contention and GC work, so the CPU part
//!   of a task is stretched by `service_multiplier(alive) = 1 + overhead_per_thread ·
//!   max(0, alive − knee_threads)`;
//! - only `cpu_cores` CPU parts run at once: with `k` tasks in their CPU part, each gets
//!   `cpu_cores / k` of a core (`cpu_stretch(k) = max(1, k / cpu_cores)`, processor sharing).
//!
//! So throughput is `min(threads / (io + cpu·m), cpu_cores / (cpu·m))` ([`analytic_throughput`]):
//! it grows with threads while threads are the bottleneck, then falls as `m` grows once the
//! CPU is. The documented fit ([`ThreadOverheadSpec::incident_12`]: 16 cores, 0.0004 per
//! thread, knee 0; tasks of 178 ms IO + 12 ms CPU) gives 1047 → 1190 → 1075 TPS.
//!
//! Architecture invariant: multipliers are ≥ 1 and non-decreasing in their argument.
//! API boundary: the world multiplies the CPU part of a task's service time by
//! `service_multiplier(pool.alive())` (and, if it tracks CPU phases, by `cpu_stretch`).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ThreadOverhead")]
pub struct ThreadOverheadSpec {
    /// Cores the CPU parts of tasks share (≥ 1).
    #[serde(default = "D::cpu_cores", deserialize_with = "R::cpu_cores")]
    pub cpu_cores: u64,
    /// Extra CPU-time fraction per live thread beyond the knee (context switching, locks, GC).
    #[serde(default = "D::overhead_per_thread", deserialize_with = "R::overhead_per_thread")]
    pub overhead_per_thread: f64,
    /// Threads that cost nothing extra.
    #[serde(default = "D::knee_threads", deserialize_with = "R::knee_threads")]
    pub knee_threads: u64,
}

/// The defaults declared in the rows below (those of [`ThreadOverheadSpec::incident_12`]).
type D = crate::params::Defaults<ThreadOverheadSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<ThreadOverheadSpec>;

// Listed under the app that holds it: `app.<name>.thread_overhead.<row>` (`part =` in
// `app.rs`'s table).
crate::params::declare_params! {
    rows ThreadOverheadSpec: "thread overhead";
    cpu_cores: Count { min: 1, max: 1_000_000 }, "cores", fixed,
        "cores the CPU parts of tasks share (processor sharing beyond them)", default = 16;
    overhead_per_thread: Float { min: 0.0, max: 1.0 }, "per thread", fixed,
        "extra CPU-time fraction per live thread beyond the knee (context switches, locks, GC)",
        default = 0.0004;
    knee_threads: Count { min: 0, max: 100_000_000 }, "threads", fixed,
        "live threads that cost nothing extra", default = 0;
}

impl Default for ThreadOverheadSpec {
    fn default() -> Self {
        Self::incident_12()
    }
}

impl ThreadOverheadSpec {
    /// The parameters fitted to docs/domain.md §6, incident 12 (see the module doc).
    pub fn incident_12() -> Self {
        ThreadOverheadSpec {
            cpu_cores: D::cpu_cores(),
            overhead_per_thread: D::overhead_per_thread(),
            knee_threads: D::knee_threads(),
        }
    }

    /// CPU-time multiplier with `alive` threads in the process.
    pub fn service_multiplier(&self, alive: u64) -> f64 {
        1.0 + self.overhead_per_thread * alive.saturating_sub(self.knee_threads) as f64
    }

    /// Slow-down of each CPU part when `in_cpu` tasks compute at once on `cpu_cores`.
    pub fn cpu_stretch(&self, in_cpu: u64) -> f64 {
        assert!(self.cpu_cores >= 1);
        (in_cpu as f64 / self.cpu_cores as f64).max(1.0)
    }
}

/// Saturation throughput (tasks/s) of `threads` always-busy threads: the thread bound
/// `threads / (io + cpu·m)` capped by the CPU bound `cpu_cores / (cpu·m)`.
pub fn analytic_throughput(o: &ThreadOverheadSpec, threads: u64, io_s: f64, cpu_s: f64) -> f64 {
    let cpu = cpu_s * o.service_multiplier(threads);
    let by_threads = threads as f64 / (io_s + cpu);
    let by_cpu = if cpu > 0.0 { o.cpu_cores as f64 / cpu } else { f64::INFINITY };
    by_threads.min(by_cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Incident 12 with 178 ms IO + 12 ms CPU per task, 16 cores, α = 0.0004, knee 0:
    /// 200: m = 1.08, cpu·m = 12.96 ms; threads 200 / 0.19096 = 1047.3, CPU 16 / 0.01296 =
    ///      1234.6 → 1047.3 (thread-bound);
    /// 300: m = 1.12, cpu·m = 13.44 ms; threads 300 / 0.19144 = 1567.1, CPU 16 / 0.01344 =
    ///      1190.5 → 1190.5 (CPU-bound);
    /// 600: m = 1.24, cpu·m = 14.88 ms; threads 3110.7, CPU 16 / 0.01488 = 1075.3 → 1075.3.
    #[test]
    fn more_threads_rise_then_fall() {
        let o = ThreadOverheadSpec::incident_12();
        let x = |n| analytic_throughput(&o, n, 0.178, 0.012);
        let expect = [(200, 1047.3), (300, 1190.5), (600, 1075.3)];
        for (n, want) in expect {
            assert!((x(n) - want).abs() < 0.1, "{n} threads: {} vs {want}", x(n));
        }
        assert!(x(200) < x(300) && x(600) < x(300));
        // Without the per-thread cost the curve never falls: 600 threads = the CPU cap 1333.3.
        let free = ThreadOverheadSpec { overhead_per_thread: 0.0, ..o.clone() };
        assert!((analytic_throughput(&free, 600, 0.178, 0.012) - 16.0 / 0.012).abs() < 1e-6);
    }

    #[test]
    fn multipliers() {
        let o = ThreadOverheadSpec { cpu_cores: 8, overhead_per_thread: 0.01, knee_threads: 100 };
        // 1 + 0.01·(150 − 100) = 1.5; below the knee 1.
        assert_eq!(o.service_multiplier(150), 1.5);
        assert_eq!(o.service_multiplier(50), 1.0);
        // 20 computing on 8 cores: each at 8/20 speed → 2.5× longer; 4 on 8 cores → 1.
        assert_eq!(o.cpu_stretch(20), 2.5);
        assert_eq!(o.cpu_stretch(4), 1.0);
    }
}
