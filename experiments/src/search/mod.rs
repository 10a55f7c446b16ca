//! `stormglass search FILE`: SLO-constrained search over a parameter space, by racing.
//!
//! An experiment's `search` block names a **space** (sweep dimensions of registered
//! parameters: `Range`, `Grid`, `Zip`, `List`; it replaces the experiment's sweep, the
//! variants and constraints stay), an **objective** (`Maximize("class.P0.goodput")` or
//! `Minimize(…)`, a numeric column of `runs` or a ratio of two), **constraints** on other
//! columns (`class.P0.latency_ms_p99 <= 3000`), a second objective for the **Pareto front**,
//! the **seeds** (the most a point gets) and the race's settings. Its plan — every
//! candidate (variant × space point) × every seed — is an experiment of its own, written
//! in the usual results layout under `OUT/<name>/search/`; the race makes a subset of its
//! runs, and `rounds.parquet` records every decision.
//!
//! # The statistics: racing with paired t tests on common random numbers
//!
//! Every point runs the same seeds, and a seed fixes the traffic and every request's luck
//! whatever the settings (keyed randomness): two points' runs on one seed differ only by
//! the settings. The race ([`race`]):
//!
//! 1. Round 1 runs every candidate on the first `first` seeds; each later round runs the
//!    survivors on the next `step` seeds (all remaining seeds at once when one survivor is
//!    left), until `seeds` are used up or nothing survives.
//! 2. After each round, with n seeds per survivor, every test is one-sided Student-t with
//!    n − 1 degrees of freedom at level α / (R·K): α = 1 − `confidence`, R the most rounds
//!    the race can have, K the tests of this round. By Bonferroni over the whole race, the
//!    probability that any elimination is wrong is at most α.
//!    * A point whose constraint metric has its lower (upper) bound past the limit is
//!      **infeasible** and leaves; one whose bound lies inside the limit is **proven
//!      feasible**.
//!    * The **reference** is the proven-feasible survivor with the best mean objective. For
//!      every other survivor the per-seed differences `reference − point` (sign turned for
//!      `Minimize`) are paired on the seeds; a point whose lower bound of the mean
//!      difference is above 0 is **worse** and leaves. Pairing removes the variance the
//!      points share (the traffic), which is most of it.
//! 3. The **best** is the survivor with the best mean objective among those whose
//!    constraints hold at the mean, reported with its two-sided `confidence` interval on
//!    all seeds: the same runs, hence the same interval, as the full grid gives that point.
//!
//! The t tests assume each point's per-seed values (and paired differences) are close to
//! normal; a run's goodput or p99 is itself an average or order statistic over thousands
//! of requests, so this holds well at the seed counts used.
//!
//! The Pareto front of the objective and the `pareto` metric is taken over every feasible
//! point (not proven infeasible, no error) on the `first` seeds, which every point ran:
//! the comparison stays on common random numbers.

//!
//! Layering: the block's schema (reading, checking, resolving it into a [`Search`], and its
//! metrics) belongs to the experiment file and lives under it (`experiment/search_spec.rs`,
//! `experiment/metric.rs`, re-exported here as `spec` and `metric`); this module is the
//! driver (racing, running batches, reports), which depends on the schema and never the
//! other way round (no module cycle).

pub mod cli;
pub mod drive;
pub mod race;
pub mod report;

pub use crate::experiment::metric;
pub use crate::experiment::search_spec as spec;
pub use spec::Search;
