//! The fits: a distribution family to a sample (the scenario's own families, the one with
//! the smallest KS statistic), the arrival process (a step rate profile and the
//! burstiness of the time-rescaled process), and upstream latency as a linear function of
//! tokens and load (ordinary least squares).

use super::gof;
use super::log::Call;
use statrs::distribution::{ContinuousCDF, Exp, Gamma, LogNormal};

/// A scenario distribution family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Constant,
    Exponential,
    LogNormal,
    Gamma,
}

/// A fitted distribution (by mean and CV, as the scenario writes them) and its KS statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fitted {
    pub family: Family,
    pub mean: f64,
    pub cv: f64,
    pub ks: f64,
    pub n: usize,
}

impl Fitted {
    fn make(family: Family, mean: f64, cv: f64) -> Fitted {
        Fitted { family, mean, cv, ks: 0.0, n: 0 }
    }

    pub fn cdf(&self, x: f64) -> f64 {
        match self.family {
            Family::Constant => f64::from(x >= self.mean),
            Family::Exponential => Exp::new(1.0 / self.mean).map_or(f64::NAN, |d| d.cdf(x)),
            Family::LogNormal => {
                let (mu, s) = lognormal_params(self.mean, self.cv);
                LogNormal::new(mu, s).map_or(f64::NAN, |d| d.cdf(x))
            }
            Family::Gamma => {
                let k = 1.0 / (self.cv * self.cv);
                Gamma::new(k, k / self.mean).map_or(f64::NAN, |d| d.cdf(x))
            }
        }
    }

    pub fn quantile(&self, p: f64) -> f64 {
        match self.family {
            Family::Constant => self.mean,
            Family::Exponential => -self.mean * (1.0 - p).ln(),
            Family::LogNormal => {
                let (mu, s) = lognormal_params(self.mean, self.cv);
                LogNormal::new(mu, s).map_or(f64::NAN, |d| d.inverse_cdf(p))
            }
            Family::Gamma => {
                let k = 1.0 / (self.cv * self.cv);
                Gamma::new(k, k / self.mean).map_or(f64::NAN, |d| d.inverse_cdf(p))
            }
        }
    }

    /// The distribution in scenario syntax; `value` writes a mean (a duration string, or a
    /// number).
    pub fn ron(&self, value: &dyn Fn(f64) -> String) -> String {
        let cv = self.cv.clamp(0.001, 31.6);
        match self.family {
            Family::Constant => format!("Constant({})", value(self.mean)),
            Family::Exponential => format!("Exponential(mean: {})", value(self.mean)),
            Family::LogNormal => format!("LogNormal(mean: {}, cv: {cv:.4})", value(self.mean)),
            Family::Gamma => format!("Gamma(mean: {}, cv: {cv:.4})", value(self.mean)),
        }
    }
}

/// (μ, σ) of the log of a log-normal with this mean and CV.
fn lognormal_params(mean: f64, cv: f64) -> (f64, f64) {
    let s2 = (1.0 + cv * cv).ln();
    (mean.ln() - s2 / 2.0, s2.sqrt())
}

fn mean_cv(xs: &[f64]) -> (f64, f64) {
    let r = sim_core::stats::Replications::of(xs).expect("finite values");
    (r.mean, if r.mean > 0.0 { r.std_dev / r.mean } else { 0.0 })
}

/// The family (of those the scenario has) with the smallest KS statistic on `xs`:
/// exponential by its mean, gamma by mean and CV (moments), log-normal by maximum
/// likelihood on the logs (when every value is > 0); a constant when all are equal.
pub fn best_fit(xs: &[f64]) -> Fitted {
    let s = gof::sorted(xs.iter().copied());
    let (mean, cv) = mean_cv(&s);
    let n = s.len();
    if s[0] == s[n - 1] {
        return Fitted { ks: 0.0, n, ..Fitted::make(Family::Constant, mean, 0.0) };
    }
    let mut cands = vec![Fitted::make(Family::Exponential, mean, 1.0)];
    if cv > 0.0 {
        cands.push(Fitted::make(Family::Gamma, mean, cv));
    }
    if s[0] > 0.0 {
        let logs: Vec<f64> = s.iter().map(|x| x.ln()).collect();
        let r = sim_core::stats::Replications::of(&logs).expect("finite");
        // MLE σ uses the n denominator.
        let sigma = r.std_dev * (((n - 1) as f64) / n as f64).sqrt();
        let m = (r.mean + sigma * sigma / 2.0).exp();
        cands.push(Fitted::make(Family::LogNormal, m, ((sigma * sigma).exp() - 1.0).sqrt()));
    }
    cands
        .into_iter()
        .map(|f| Fitted { ks: gof::ks(&s, &|x| f.cdf(x)), n, ..f })
        .min_by(|a, b| a.ks.total_cmp(&b.ks))
        .expect("one candidate")
}

/// The arrival process.
#[derive(Clone, Debug)]
pub struct Arrivals {
    pub calls: usize,
    /// Seconds from the first to the last call.
    pub span: f64,
    /// Calls per second over the span.
    pub rate: f64,
    /// Step profile: bucket width (s) and each bucket's rate ÷ `rate`.
    pub bucket: f64,
    pub multipliers: Vec<f64>,
    /// Gaps of the time-rescaled process (unit rate if the profile is right): CV, their
    /// fit (exponential = Poisson), and the index of dispersion of counts in windows of
    /// `window` rescaled units (mean count ≈ 10).
    pub gaps: Fitted,
    pub gap_cv: f64,
    pub dispersion: f64,
    pub window: f64,
}

/// Fits the arrivals: `buckets` equal steps over the span.
pub fn arrivals(times: &[f64], buckets: usize) -> Arrivals {
    let n = times.len();
    let span = times[n - 1].max(f64::MIN_POSITIVE);
    let k = buckets.clamp(1, n / 2);
    let bucket = span / k as f64;
    let mut counts = vec![0usize; k];
    for &t in times {
        counts[((t / bucket) as usize).min(k - 1)] += 1;
    }
    let rate = n as f64 / span;
    let multipliers: Vec<f64> = counts.iter().map(|&c| c as f64 / bucket / rate).collect();
    // Λ(t) = ∫₀ᵗ rate·m(s) ds: piecewise linear, unit-rate time for a correct profile.
    let cum: Vec<f64> = std::iter::once(0.0)
        .chain(counts.iter().scan(0.0, |a, &c| {
            *a += c as f64;
            Some(*a)
        }))
        .collect();
    let lambda = |t: f64| {
        let b = ((t / bucket) as usize).min(k - 1);
        cum[b] + (t - b as f64 * bucket) / bucket * counts[b] as f64
    };
    let u: Vec<f64> = times.iter().map(|&t| lambda(t)).collect();
    let gaps: Vec<f64> = u.windows(2).map(|w| w[1] - w[0]).collect();
    let (_, gap_cv) = mean_cv(&gaps);
    let window = 10.0;
    let w = (u[n - 1] / window).floor().max(1.0) as usize;
    let mut wc = vec![0.0f64; w];
    for &x in &u {
        let i = (x / window) as usize;
        if i < w {
            wc[i] += 1.0;
        }
    }
    let (m, cv) = mean_cv(&wc);
    let dispersion = if m > 0.0 { cv * cv * m } else { f64::NAN };
    let s = gof::sorted(gaps.iter().copied());
    let exp1 = Fitted { n: s.len(), ..Fitted::make(Family::Exponential, 1.0, 1.0) };
    let ks = gof::ks(&s, &|x| exp1.cdf(x));
    Arrivals {
        calls: n,
        span,
        rate,
        bucket,
        multipliers,
        gaps: Fitted { ks, ..exp1 },
        gap_cv,
        dispersion,
        window,
    }
}

/// Least squares `latency = b0 + b1·prompt + b2·output + b3·load` over served calls, `load`
/// the other served calls in service when the call started. Coefficients in seconds (per
/// token, per call in service), with standard errors and R².
#[derive(Clone, Debug)]
pub struct Regression {
    pub beta: [f64; 4],
    pub se: [f64; 4],
    pub r2: f64,
    pub n: usize,
    /// The base service times: latency minus the token and load terms.
    pub base: Vec<f64>,
    pub max_load: usize,
}

/// Other served calls in service at each served call's start (in the order of `calls`,
/// which is by time; a call ending exactly when another starts is not counted, as the
/// simulator processes completions first).
pub fn loads(calls: &[&Call]) -> Vec<usize> {
    use std::cmp::Reverse;
    let mut ends: std::collections::BinaryHeap<Reverse<u64>> = Default::default();
    calls
        .iter()
        .map(|c| {
            let t = (c.t * 1e9).round() as u64;
            while ends.peek().is_some_and(|e| e.0 <= t) {
                ends.pop();
            }
            let l = ends.len();
            ends.push(Reverse(t + (c.latency.unwrap_or(0.0) * 1e9).round() as u64));
            l
        })
        .collect()
}

pub fn latency(served: &[&Call]) -> Regression {
    let load = loads(served);
    let x: Vec<[f64; 4]> =
        served.iter().zip(&load).map(|(c, &l)| [1.0, c.prompt, c.output, l as f64]).collect();
    let y: Vec<f64> = served.iter().map(|c| c.latency.unwrap_or(0.0)).collect();
    // Columns without variation (a log without tokens) are left out: coefficient 0.
    let keep: Vec<usize> =
        (0..4).filter(|&j| j == 0 || x.iter().any(|r| r[j] != x[0][j])).collect();
    let p = keep.len();
    let mut a = vec![vec![0.0; p]; p];
    let mut b = vec![0.0; p];
    for (r, &yi) in x.iter().zip(&y) {
        for (i, &ki) in keep.iter().enumerate() {
            b[i] += r[ki] * yi;
            for (j, &kj) in keep.iter().enumerate() {
                a[i][j] += r[ki] * r[kj];
            }
        }
    }
    let inv = invert(&a);
    let mut beta = [0.0; 4];
    for (i, &ki) in keep.iter().enumerate() {
        beta[ki] = (0..p).map(|j| inv[i][j] * b[j]).sum();
    }
    let pred = |r: &[f64; 4]| (0..4).map(|j| beta[j] * r[j]).sum::<f64>();
    let rss: f64 = x.iter().zip(&y).map(|(r, yi)| (yi - pred(r)).powi(2)).sum();
    let (ym, _) = mean_cv(&y);
    let tss: f64 = y.iter().map(|yi| (yi - ym).powi(2)).sum();
    let n = y.len();
    let s2 = rss / (n.saturating_sub(p)).max(1) as f64;
    let mut se = [0.0; 4];
    for (i, &ki) in keep.iter().enumerate() {
        se[ki] = (s2 * inv[i][i]).sqrt();
    }
    let base: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(r, yi)| yi - beta[1] * r[1] - beta[2] * r[2] - beta[3] * r[3])
        .collect();
    Regression {
        beta,
        se,
        r2: if tss > 0.0 { 1.0 - rss / tss } else { 1.0 },
        n,
        base,
        max_load: load.iter().copied().max().unwrap_or(0),
    }
}

/// The inverse of a small symmetric positive-definite matrix (Gauss–Jordan with partial
/// pivoting).
fn invert(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let p = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| r.iter().copied().chain((0..p).map(|j| f64::from(i == j))).collect())
        .collect();
    for c in 0..p {
        let piv = (c..p).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs())).expect("rows");
        m.swap(c, piv);
        let d = m[c][c];
        for v in m[c].iter_mut() {
            *v /= d;
        }
        for r in 0..p {
            if r != c {
                let f = m[r][c];
                let row_c = m[c].clone();
                for (v, rc) in m[r].iter_mut().zip(row_c) {
                    *v -= f * rc;
                }
            }
        }
    }
    m.into_iter().map(|r| r[p..].to_vec()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_an_exact_plane() {
        let calls: Vec<Call> = (0..50)
            .map(|i| {
                let (p, o) = ((i * 7 % 13) as f64, (i * 3 % 11) as f64);
                // Calls 10 s apart never overlap: load 0, so b3 is left out.
                Call {
                    t: i as f64 * 10.0,
                    class: "P0".into(),
                    prompt: p,
                    output: o,
                    latency: Some(0.5 + 0.01 * p + 0.1 * o),
                    status: 200,
                }
            })
            .collect();
        let refs: Vec<&Call> = calls.iter().collect();
        let r = latency(&refs);
        for (got, want) in r.beta.iter().zip([0.5, 0.01, 0.1, 0.0]) {
            assert!((got - want).abs() < 1e-9, "{:?}", r.beta);
        }
        assert!((r.r2 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn loads_count_overlapping_calls() {
        let c = |t: f64, l: f64| Call {
            t,
            class: "P0".into(),
            prompt: 0.0,
            output: 0.0,
            latency: Some(l),
            status: 200,
        };
        let calls = [c(0.0, 2.0), c(1.0, 1.0), c(1.5, 1.0), c(2.0, 1.0)];
        let refs: Vec<&Call> = calls.iter().collect();
        // At 2.0 the first (0–2) and second (1–2) have ended; the third (1.5–2.5) has not.
        assert_eq!(loads(&refs), [0, 1, 2, 1]);
    }
}
