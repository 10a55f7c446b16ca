//! The race: which candidates run on which seeds, and which leave after each round (the
//! statistics are in the module doc of `search`). Pure: it sees per-run metric values,
//! never files or runs, so its decisions are tested on made-up numbers.

use super::spec::{Bound, Objective};
use sim_core::stats::Replications;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A candidate's standing.
#[derive(Clone, Debug, PartialEq)]
pub enum Fate {
    Alive,
    /// Paired test against candidate `than`: worse on the objective.
    Worse {
        than: usize,
    },
    /// Constraint `constraint` cannot hold.
    Infeasible {
        constraint: usize,
    },
    /// A run ended with an error, or a metric is undefined (null) on some seed.
    Failed {
        why: String,
    },
}

impl Fate {
    /// Stable name for `rounds.parquet`.
    pub fn name(&self) -> &'static str {
        match self {
            Fate::Alive => "alive",
            Fate::Worse { .. } => "worse",
            Fate::Infeasible { .. } => "infeasible",
            Fate::Failed { .. } => "failed",
        }
    }
}

/// A metric over a candidate's seeds: mean, two-sided `confidence` half-width, and the
/// one-sided bounds at the round's corrected level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub ci: f64,
    pub low: f64,
    pub high: f64,
}

/// One candidate in one round.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub round: usize,
    pub candidate: usize,
    /// Seeds this candidate has run.
    pub seeds: usize,
    /// `None` when the candidate failed.
    pub objective: Option<Stat>,
    pub constraints: Vec<Option<Stat>>,
    /// The reference and the paired difference `reference − this` (turned for Minimize).
    pub versus: Option<(usize, Stat)>,
    /// Its standing after the round.
    pub fate: Fate,
}

/// One run's metrics in [`super::Search::metrics`] order, or why there are none.
pub type Sample = Result<Vec<Option<f64>>, String>;

/// The race's state.
pub struct Race {
    objective: Objective,
    constraints: Vec<Bound>,
    confidence: f64,
    first: usize,
    step: usize,
    seeds: usize,
    /// The seeds, for messages.
    seed_ids: Vec<u64>,
    pub fates: Vec<Fate>,
    /// Seeds run by every surviving candidate.
    pub done: usize,
    pub round: usize,
}

impl Race {
    pub fn new(s: &super::Search) -> Race {
        Self::with(s, s.first.min(s.plan.seeds.len()))
    }

    /// Every candidate on every seed in one round: the full grid, judged alike.
    pub fn grid(s: &super::Search) -> Race {
        Self::with(s, s.plan.seeds.len())
    }

    fn with(s: &super::Search, first: usize) -> Race {
        Race {
            objective: s.objective.clone(),
            constraints: s.constraints.clone(),
            confidence: s.confidence,
            first,
            step: s.step,
            seeds: s.plan.seeds.len(),
            seed_ids: s.plan.seeds.clone(),
            fates: vec![Fate::Alive; s.candidates()],
            done: 0,
            round: 0,
        }
    }

    /// The most rounds this race can have.
    pub fn max_rounds(&self) -> usize {
        1 + (self.seeds - self.first).div_ceil(self.step.max(1))
    }

    fn alive(&self) -> Vec<usize> {
        (0..self.fates.len()).filter(|&c| self.fates[c] == Fate::Alive).collect()
    }

    /// The next round's seed positions `[from, to)` for the survivors, or `None` when the
    /// race is over.
    pub fn next(&self) -> Option<(usize, usize, Vec<usize>)> {
        let alive = self.alive();
        if alive.is_empty() || self.done == self.seeds {
            return None;
        }
        let to = match (self.done, alive.len()) {
            (0, _) => self.first,
            (_, 1) => self.seeds,
            (d, _) => (d + self.step).min(self.seeds),
        };
        Some((self.done, to, alive))
    }

    /// Judges the round just run (every survivor now has seeds `0..to`); `sample(c, j)` is
    /// candidate `c`'s run on seed position `j`. Returns a row per candidate that was alive.
    pub fn judge(&mut self, to: usize, sample: &dyn Fn(usize, usize) -> Sample) -> Vec<Row> {
        self.round += 1;
        self.done = to;
        let m = self.constraints.len();
        let names: Vec<&str> = std::iter::once(&self.objective.metric)
            .chain(self.constraints.iter().map(|b| &b.metric))
            .map(|m| m.text.as_str())
            .collect();
        let mut rows = Vec::new();
        // Values per surviving candidate: [metric][seed].
        let mut vals: Vec<(usize, Vec<Vec<f64>>)> = Vec::new();
        for c in self.alive() {
            match columns(c, to, &names, &self.seed_ids, sample) {
                Ok(v) => vals.push((c, v)),
                Err(why) => {
                    self.fates[c] = Fate::Failed { why };
                    rows.push(self.row(c, to, None, vec![None; m], None));
                }
            }
        }
        let k = vals.len();
        let tests = (k.saturating_sub(1) + 2 * k * m).max(1);
        let alpha = (1.0 - self.confidence) / (self.max_rounds() * tests) as f64;
        let q = |n: usize| one_sided(alpha, n);
        let stat = |xs: &[f64]| stat(xs, self.confidence, q(xs.len()));
        let mut feasible = vec![true; k];
        let mut stats: Vec<(Stat, Vec<Stat>)> = Vec::new();
        for (i, (c, v)) in vals.iter().enumerate() {
            let cons: Vec<Stat> = (0..m).map(|j| stat(&v[1 + j])).collect();
            for (j, (b, s)) in self.constraints.iter().zip(&cons).enumerate() {
                // The bound past the limit: the true mean is past it too (at level alpha).
                let (beyond, inside) = if b.upper() { (s.low, s.high) } else { (s.high, s.low) };
                if !b.holds(beyond) && self.fates[*c] == Fate::Alive {
                    self.fates[*c] = Fate::Infeasible { constraint: j };
                }
                feasible[i] &= b.holds(inside);
            }
            stats.push((stat(&v[0]), cons));
        }
        let sign = if self.objective.maximize { 1.0 } else { -1.0 };
        // The reference: proven feasible, best mean (first on ties).
        let reference = (0..k)
            .filter(|&i| feasible[i] && self.fates[vals[i].0] == Fate::Alive)
            .max_by(|&a, &b| {
                (sign * stats[a].0.mean).total_cmp(&(sign * stats[b].0.mean)).then(b.cmp(&a))
            });
        for i in 0..k {
            let c = vals[i].0;
            let versus = reference.filter(|&r| r != i).map(|r| {
                let d: Vec<f64> =
                    vals[r].1[0].iter().zip(&vals[i].1[0]).map(|(a, b)| sign * (a - b)).collect();
                (vals[r].0, stat(&d))
            });
            if let Some((than, d)) = versus
                && d.low > 0.0
                && self.fates[c] == Fate::Alive
            {
                self.fates[c] = Fate::Worse { than };
            }
            let (obj, cons) = stats[i].clone();
            rows.push(self.row(c, to, Some(obj), cons.into_iter().map(Some).collect(), versus));
        }
        rows.sort_by_key(|r| r.candidate);
        rows
    }

    fn row(
        &self,
        c: usize,
        seeds: usize,
        objective: Option<Stat>,
        constraints: Vec<Option<Stat>>,
        versus: Option<(usize, Stat)>,
    ) -> Row {
        Row {
            round: self.round,
            candidate: c,
            seeds,
            objective,
            constraints,
            versus,
            fate: self.fates[c].clone(),
        }
    }
}

/// The values of the metrics `names` of candidate `c` on seeds `0..n`: `[metric][seed]`.
fn columns(
    c: usize,
    n: usize,
    names: &[&str],
    seeds: &[u64],
    sample: &dyn Fn(usize, usize) -> Sample,
) -> Result<Vec<Vec<f64>>, String> {
    let mut out = vec![Vec::with_capacity(n); names.len()];
    for (j, seed) in seeds.iter().enumerate().take(n) {
        let v = sample(c, j)?;
        for (k, col) in out.iter_mut().enumerate() {
            col.push(
                v[k].filter(|x| x.is_finite())
                    .ok_or_else(|| format!("{} is undefined (null) on seed {seed}", names[k]))?,
            );
        }
    }
    Ok(out)
}

/// The one-sided Student-t quantile at level `1 − alpha` with `n − 1` degrees of freedom.
fn one_sided(alpha: f64, n: usize) -> f64 {
    let t = StudentsT::new(0.0, 1.0, (n.max(2) - 1) as f64).expect("df ≥ 1");
    t.inverse_cdf(1.0 - alpha)
}

/// Mean, two-sided `confidence` half-width, and `mean ∓ q·se`.
pub fn stat(xs: &[f64], confidence: f64, q: f64) -> Stat {
    let r = Replications::of(xs).expect("finite values");
    let ci = r.ci_half_width(confidence).unwrap_or(f64::NAN);
    Stat { mean: r.mean, ci, low: r.mean - q * r.std_err, high: r.mean + q * r.std_err }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::metric::Metric;
    use crate::sweep::Op;

    fn race(cands: usize, seeds: usize, constraints: Vec<Bound>) -> Race {
        Race {
            objective: Objective {
                metric: Metric { text: "g".into(), num: "g".into(), den: None },
                maximize: true,
            },
            constraints,
            confidence: 0.95,
            first: 3,
            step: 2,
            seeds,
            seed_ids: (0..seeds as u64).collect(),
            fates: vec![Fate::Alive; cands],
            done: 0,
            round: 0,
        }
    }

    /// Three candidates whose objective is `level + noise(seed)`: the shared noise cancels
    /// in the paired differences, so a gap of 1 against noise of ±10 is decided at once.
    #[test]
    fn common_noise_cancels_and_the_worse_leave() {
        let mut r = race(3, 9, vec![]);
        assert_eq!(r.max_rounds(), 1 + 3); // 3, 5, 7, 9 seeds
        let noise = [7.0, -9.0, 3.0, 10.0, -4.0, 0.0, 2.0, -1.0, 5.0];
        let level = [10.0, 9.0, 8.0];
        let tiny = [0.01, -0.02, 0.015, 0.0, -0.01, 0.02, 0.0, 0.01, -0.01];
        let s = |c: usize, j: usize| Ok(vec![Some(level[c] + noise[j] + tiny[j] * c as f64)]);
        assert_eq!(r.next(), Some((0, 3, vec![0, 1, 2])));
        let rows = r.judge(3, &s);
        assert_eq!(r.fates, [Fate::Alive, Fate::Worse { than: 0 }, Fate::Worse { than: 0 }]);
        assert_eq!(rows[1].versus.unwrap().0, 0);
        assert!((rows[1].versus.unwrap().1.mean - 1.0).abs() < 0.05);
        // One survivor: all remaining seeds in one round.
        assert_eq!(r.next(), Some((3, 9, vec![0])));
        r.judge(9, &s);
        assert_eq!(r.next(), None);
    }

    /// Independent noise of the same size hides the same gap: nobody leaves in round 1.
    #[test]
    fn independent_noise_keeps_everyone() {
        let mut r = race(2, 9, vec![]);
        let noise = [[7.0, -9.0, 3.0], [-5.0, 8.0, 1.0]];
        r.judge(3, &|c, j| Ok(vec![Some([10.0, 9.0][c] + noise[c][j])]));
        assert_eq!(r.fates, [Fate::Alive, Fate::Alive]);
        assert_eq!(r.next(), Some((3, 5, vec![0, 1])));
    }

    /// The best objective is infeasible (its p99 is clearly above the limit): it leaves,
    /// and the reference is the proven-feasible one.
    #[test]
    fn infeasible_leave_and_the_reference_is_feasible() {
        let b = Bound {
            metric: Metric { text: "p99".into(), num: "p99".into(), den: None },
            op: Op::Le,
            value: 3000.0,
        };
        let mut r = race(3, 9, vec![b]);
        let p99 = [5000.0, 2000.0, 2000.0];
        let g = [20.0, 10.0, 5.0];
        let rows =
            r.judge(3, &|c, j| Ok(vec![Some(g[c] + j as f64 * 0.1), Some(p99[c] + j as f64)]));
        assert_eq!(
            r.fates,
            [Fate::Infeasible { constraint: 0 }, Fate::Alive, Fate::Worse { than: 1 }]
        );
        assert!(rows[0].versus.is_some_and(|(ref_, _)| ref_ == 1));
    }

    #[test]
    fn an_undefined_metric_or_error_fails_the_candidate() {
        let mut r = race(2, 5, vec![]);
        r.judge(3, &|c, j| {
            if c == 0 && j == 2 { Err("panicked".into()) } else { Ok(vec![Some(1.0)]) }
        });
        assert_eq!(r.fates[0], Fate::Failed { why: "panicked".into() });
        let mut r = race(2, 5, vec![]);
        r.judge(3, &|c, _| Ok(vec![(c == 0).then_some(1.0)]));
        assert!(matches!(&r.fates[1], Fate::Failed { why } if why.contains("undefined")));
    }
}
