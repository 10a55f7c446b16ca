//! Probability distributions for durations and sizes, sampled by inverse CDF (or a fixed,
//! reproducible recipe) from a [`UniformSource`] with `libm` arithmetic.
//!
//! Design decision: sampling is written here, with `libm` for ln/exp/pow/cos, instead of
//! through `statrs`'s `rand`-based samplers. Two reasons: (1) the same sampler must run from a
//! keyed per-request source (common random numbers) and from a stream, and (2) platform libm
//! can differ by an ulp across machines, which would reorder events; `libm` is portable Rust.
//! `statrs` remains the reference for the analytic moments ([`Dist::mean`], used by
//! validation, documentation and the statistical tests) and for confidence intervals.
//!
//! Users think in mean + coefficient of variation, so log-normal and gamma are parameterised
//! that way; a latency known by its percentiles is a log-normal by `p50` and `p99` or by
//! `mean` and `p99` (solved in closed form), and arrivals known by their rate are
//! `Poisson(rate: "150/s")` ([`crate::rate`]). Every constructor validates its ranges; a
//! RON file with `cv: -1` fails to load with the file position (the check runs inside
//! `Deserialize`).

use crate::rate::Rate;
use crate::rng::UniformSource;
use crate::time::SimDuration;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use statrs::distribution as sd;
use statrs::statistics::Distribution as _;
use std::fmt::Debug;

/// A value a distribution can produce: durations (sampled in ns) or plain numbers (tokens).
pub trait DistValue: Copy + Debug + PartialEq + Serialize + DeserializeOwned {
    /// What the value is, for error messages.
    const WHAT: &'static str;
    fn to_base(self) -> f64;
    fn from_base(x: f64) -> Self;
    /// The value of a rate's mean gap ([`Rate::mean_gap`]); `None` where a rate means
    /// nothing (plain numbers: `Poisson(rate)` is a distribution of gaps).
    fn from_gap(gap: SimDuration) -> Option<Self>;
    /// A value in base units as a scenario writes it (`"100ms"`, `800`), for messages.
    fn show(x: f64) -> String;
}

impl DistValue for SimDuration {
    const WHAT: &'static str = "duration";
    fn to_base(self) -> f64 {
        self.0 as f64
    }
    fn from_base(x: f64) -> Self {
        SimDuration::from_ns_f64(x)
    }
    fn from_gap(gap: SimDuration) -> Option<Self> {
        Some(gap)
    }
    fn show(x: f64) -> String {
        format!("\"{}\"", SimDuration::from_ns_f64(x))
    }
}

impl DistValue for f64 {
    const WHAT: &'static str = "number";
    fn to_base(self) -> f64 {
        self
    }
    fn from_base(x: f64) -> Self {
        x
    }
    fn from_gap(_: SimDuration) -> Option<Self> {
        None
    }
    fn show(x: f64) -> String {
        x.to_string()
    }
}

/// The user-facing form of a distribution, as written in RON files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Distribution")]
#[serde(bound(deserialize = "V: Deserialize<'de>", serialize = "V: Serialize"))]
pub enum DistSpec<V> {
    /// Always the same value.
    Constant(V),
    /// Exponential with the given mean (memoryless; CV 1).
    Exponential { mean: V },
    /// Poisson events at a rate (`Poisson(rate: "150/s")`): exponential gaps whose mean is
    /// the rate's mean gap to the nearest nanosecond ([`Rate::mean_gap`]); samples exactly
    /// as `Exponential(mean: <that gap>)`. Durations only.
    Poisson { rate: Rate },
    /// Log-normal by `mean` and `cv` (σ/μ of the value itself), or by percentiles: `p50`
    /// and `p99`, or `mean` and `p99` (the closed forms and their derivation:
    /// `log_normal_by_percentiles` in this module). Exactly one of the three pairs; the
    /// fields not given stay out of the written form.
    LogNormal {
        #[serde(default, deserialize_with = "present", serialize_with = "ser_present")]
        #[serde(skip_serializing_if = "Option::is_none")]
        mean: Option<V>,
        #[serde(default, deserialize_with = "present", serialize_with = "ser_present")]
        #[serde(skip_serializing_if = "Option::is_none")]
        cv: Option<f64>,
        #[serde(default, deserialize_with = "present", serialize_with = "ser_present")]
        #[serde(skip_serializing_if = "Option::is_none")]
        p50: Option<V>,
        #[serde(default, deserialize_with = "present", serialize_with = "ser_present")]
        #[serde(skip_serializing_if = "Option::is_none")]
        p99: Option<V>,
    },
    /// Gamma by mean and coefficient of variation (shape = 1/cv²).
    Gamma { mean: V, cv: f64 },
    /// Weibull with scale λ and shape k: λ·(−ln U)^(1/k).
    Weibull { scale: V, shape: f64 },
    /// Pareto (type I) with minimum `scale` and tail index `shape` (mean finite for shape > 1).
    Pareto { scale: V, shape: f64 },
    /// Uniform on [low, high].
    Uniform { low: V, high: V },
    /// Resampling of observed values, each equally likely.
    Empirical { samples: Vec<V> },
}

/// A validated distribution over `V`, ready to sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DistSpec<V>", into = "DistSpec<V>")]
#[serde(bound(deserialize = "V: DistValue", serialize = "V: DistValue"))]
pub struct Dist<V: DistValue> {
    spec: DistSpec<V>,
    sampler: Sampler,
}

#[derive(Clone, Debug, PartialEq)]
enum Sampler {
    Constant(f64),
    Exponential { mean: f64 },
    LogNormal { mu: f64, sigma: f64 },
    Gamma { shape: f64, scale: f64 },
    Weibull { scale: f64, inv_shape: f64 },
    Pareto { scale: f64, inv_shape: f64 },
    Uniform { low: f64, width: f64 },
    Empirical(Vec<f64>),
}

/// At most this many rejection rounds in the gamma sampler (the acceptance rate of
/// Marsaglia–Tsang is above 95%, so 64 rounds fail with probability < 1e-80).
const GAMMA_MAX_ROUNDS: u32 = 64;

impl<V: DistValue> From<Dist<V>> for DistSpec<V> {
    fn from(d: Dist<V>) -> Self {
        d.spec
    }
}

impl<V: DistValue> TryFrom<DistSpec<V>> for Dist<V> {
    type Error = String;
    fn try_from(spec: DistSpec<V>) -> Result<Self, String> {
        Dist::new(spec)
    }
}

fn check_value(what: &str, x: f64, allow_zero: bool) -> Result<f64, String> {
    if !x.is_finite() || x < 0.0 || (!allow_zero && x == 0.0) {
        let bound = if allow_zero { "≥ 0" } else { "> 0" };
        return Err(format!("{what} must be finite and {bound}, found {x}"));
    }
    Ok(x)
}

fn check_positive(what: &str, x: f64) -> Result<f64, String> {
    check_value(what, x, false)
}

impl<V: DistValue> Dist<V> {
    pub fn new(spec: DistSpec<V>) -> Result<Self, String> {
        let sampler = match &spec {
            DistSpec::Constant(v) => {
                Sampler::Constant(check_value("Constant value", v.to_base(), true)?)
            }
            DistSpec::Exponential { mean } => {
                Sampler::Exponential { mean: check_positive("Exponential mean", mean.to_base())? }
            }
            DistSpec::Poisson { rate } => {
                if V::from_gap(rate.mean_gap()).is_none() {
                    return Err(format!(
                        "Poisson(rate: \"{rate}\") is a distribution of gaps between events (durations); \
                         for a {} write Exponential(mean: …)",
                        V::WHAT
                    ));
                }
                Sampler::Exponential { mean: rate.mean_gap().0 as f64 }
            }
            DistSpec::LogNormal { mean, cv, p50, p99 } => {
                let (mu, sigma) = log_normal_params(
                    mean.map(V::to_base),
                    *cv,
                    p50.map(V::to_base),
                    p99.map(V::to_base),
                    V::show,
                )?;
                Sampler::LogNormal { mu, sigma }
            }
            DistSpec::Gamma { mean, cv } => {
                let m = check_positive("Gamma mean", mean.to_base())?;
                let cv = check_positive("Gamma cv", *cv)?;
                let shape = 1.0 / (cv * cv);
                if !(1e-3..=1e6).contains(&shape) {
                    return Err(format!(
                        "Gamma cv must lie in [0.001, 31.6] (shape 1/cv² in [1e-3, 1e6]), found {cv}"
                    ));
                }
                Sampler::Gamma { shape, scale: m / shape }
            }
            DistSpec::Weibull { scale, shape } => Sampler::Weibull {
                scale: check_positive("Weibull scale", scale.to_base())?,
                inv_shape: 1.0 / check_positive("Weibull shape", *shape)?,
            },
            DistSpec::Pareto { scale, shape } => Sampler::Pareto {
                scale: check_positive("Pareto scale", scale.to_base())?,
                inv_shape: 1.0 / check_positive("Pareto shape", *shape)?,
            },
            DistSpec::Uniform { low, high } => {
                let (l, h) = (
                    check_value("Uniform low", low.to_base(), true)?,
                    check_value("Uniform high", high.to_base(), true)?,
                );
                if l > h {
                    return Err(format!(
                        "Uniform low must be ≤ high, found low {:?} > high {:?}",
                        low, high
                    ));
                }
                Sampler::Uniform { low: l, width: h - l }
            }
            DistSpec::Empirical { samples } => {
                if samples.is_empty() {
                    return Err("Empirical needs at least one sample".into());
                }
                let mut xs = Vec::with_capacity(samples.len());
                for (i, s) in samples.iter().enumerate() {
                    xs.push(check_value(&format!("Empirical sample #{i}"), s.to_base(), true)?);
                }
                Sampler::Empirical(xs)
            }
        };
        Ok(Dist { spec, sampler })
    }

    pub fn constant(v: V) -> Self {
        Self::new(DistSpec::Constant(v)).expect("constant must be finite and ≥ 0")
    }
    /// A log-normal by mean and coefficient of variation.
    pub fn log_normal(mean: V, cv: f64) -> Result<Self, String> {
        Self::new(DistSpec::LogNormal { mean: Some(mean), cv: Some(cv), p50: None, p99: None })
    }
    pub fn exponential(mean: V) -> Self {
        Self::new(DistSpec::Exponential { mean }).expect("exponential mean must be > 0")
    }

    pub fn spec(&self) -> &DistSpec<V> {
        &self.spec
    }

    /// Draws one value. Uses one uniform (two for log-normal; a bounded number for gamma).
    pub fn sample(&self, u: &mut impl UniformSource) -> V {
        V::from_base(self.sample_base(u))
    }

    fn sample_base(&self, u: &mut impl UniformSource) -> f64 {
        match &self.sampler {
            Sampler::Constant(x) => *x,
            Sampler::Exponential { mean } => -mean * libm::log(u.next_open01()),
            Sampler::LogNormal { mu, sigma } => libm::exp(mu + sigma * std_normal(u)),
            Sampler::Gamma { shape, scale } => gamma(*shape, u) * scale,
            Sampler::Weibull { scale, inv_shape } => {
                scale * libm::pow(-libm::log(u.next_open01()), *inv_shape)
            }
            Sampler::Pareto { scale, inv_shape } => scale / libm::pow(u.next_open01(), *inv_shape),
            Sampler::Uniform { low, width } => low + width * u.next_open01(),
            Sampler::Empirical(xs) => {
                let i = ((u.next_open01() * xs.len() as f64) as usize).min(xs.len() - 1);
                xs[i]
            }
        }
    }

    /// The analytic mean in base units (ns for durations), from `statrs` where it has the
    /// distribution; `None` when the mean is infinite (Pareto with shape ≤ 1).
    pub fn mean(&self) -> Option<f64> {
        match &self.sampler {
            Sampler::Constant(x) => Some(*x),
            Sampler::Exponential { mean } => sd::Exp::new(1.0 / mean).ok()?.mean(),
            Sampler::LogNormal { mu, sigma } => sd::LogNormal::new(*mu, *sigma).ok()?.mean(),
            Sampler::Gamma { shape, scale } => sd::Gamma::new(*shape, 1.0 / scale).ok()?.mean(),
            Sampler::Weibull { scale, inv_shape } => {
                sd::Weibull::new(1.0 / inv_shape, *scale).ok()?.mean()
            }
            Sampler::Pareto { scale, inv_shape } => {
                if *inv_shape >= 1.0 {
                    None
                } else {
                    sd::Pareto::new(*scale, 1.0 / inv_shape).ok()?.mean()
                }
            }
            Sampler::Uniform { low, width } => Some(low + width / 2.0),
            Sampler::Empirical(xs) => Some(xs.iter().sum::<f64>() / xs.len() as f64),
        }
    }

    /// The analytic variance in base units², where finite.
    pub fn variance(&self) -> Option<f64> {
        match (&self.spec, &self.sampler) {
            (DistSpec::Constant(_), _) => Some(0.0),
            (DistSpec::Exponential { mean }, _) => Some(mean.to_base().powi(2)),
            (DistSpec::Poisson { .. }, Sampler::Exponential { mean }) => Some(mean * mean),
            (DistSpec::LogNormal { mean: Some(mean), cv: Some(cv), .. }, _) => {
                Some((mean.to_base() * cv).powi(2))
            }
            (DistSpec::Gamma { mean, cv }, _) => Some((mean.to_base() * cv).powi(2)),
            (DistSpec::LogNormal { .. }, Sampler::LogNormal { mu, sigma }) => {
                sd::LogNormal::new(*mu, *sigma).ok()?.variance()
            }
            (DistSpec::Weibull { scale, shape }, _) => {
                sd::Weibull::new(*shape, scale.to_base()).ok()?.variance()
            }
            (DistSpec::Pareto { scale, shape }, _) => {
                if *shape <= 2.0 {
                    None
                } else {
                    sd::Pareto::new(scale.to_base(), *shape).ok()?.variance()
                }
            }
            (DistSpec::Uniform { low, high }, _) => {
                Some((high.to_base() - low.to_base()).powi(2) / 12.0)
            }
            (DistSpec::Empirical { .. }, Sampler::Empirical(xs)) => {
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                Some(xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64)
            }
            _ => None,
        }
    }
}

/// Reads an optional field written without `Some` (`p99: "2.5s"`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Writes an optional field the way [`present`] reads it.
fn ser_present<S: serde::Serializer, T: Serialize>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => x.serialize(s),
        None => s.serialize_none(),
    }
}

/// z₀.₉₉ = Φ⁻¹(0.99), the standard normal's 99th percentile (checked against statrs).
pub const Z99: f64 = 2.326_347_874_040_840_8;

/// Largest σ of a log-normal: that of `cv` 1000, √ln(1 + 10⁶). Beyond it draws overflow
/// towards infinity (the fuzzer found `cv: 1e308`).
const MAX_LOG_SIGMA: f64 = 3.716_922_323_369_668;

/// (μ, σ) of a log-normal from one of its three written forms.
fn log_normal_params(
    mean: Option<f64>,
    cv: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    show: fn(f64) -> String,
) -> Result<(f64, f64), String> {
    match (mean, cv, p50, p99) {
        (Some(m), Some(cv), None, None) => {
            let m = check_positive("LogNormal mean", m)?;
            let cv = check_positive("LogNormal cv", cv)?;
            // σ² = ln(1 + cv²): beyond this bound cv² overflows, σ and μ become
            // infinite and draws NaN (found by the fuzzer with `cv: 1e308`).
            if cv > 1000.0 {
                return Err(format!("LogNormal cv must lie in (0, 1000], found {cv:e}"));
            }
            let s2 = libm::log1p(cv * cv);
            Ok((libm::log(m) - s2 / 2.0, libm::sqrt(s2)))
        }
        (None, None, Some(p50), Some(p99)) => {
            let p50 = check_positive("LogNormal p50", p50)?;
            let p99 = check_positive("LogNormal p99", p99)?;
            log_normal_by_percentiles(Percentiles::P50 { p50 }, p99, show)
        }
        (Some(m), None, None, Some(p99)) => {
            let m = check_positive("LogNormal mean", m)?;
            let p99 = check_positive("LogNormal p99", p99)?;
            log_normal_by_percentiles(Percentiles::Mean { mean: m }, p99, show)
        }
        _ => {
            let given: Vec<&str> = [("mean", mean.is_some()), ("cv", cv.is_some())]
                .into_iter()
                .chain([("p50", p50.is_some()), ("p99", p99.is_some())])
                .filter_map(|(n, g)| g.then_some(n))
                .collect();
            Err(format!(
                "LogNormal takes exactly one of (mean, cv), (p50, p99) or (mean, p99); found ({})",
                given.join(", ")
            ))
        }
    }
}

/// What a log-normal given by its p99 is anchored to.
enum Percentiles {
    P50 { p50: f64 },
    Mean { mean: f64 },
}

/// (μ, σ) of the log-normal with the given p99 and median or mean, in closed form.
///
/// X = e^(μ + σZ) with Z standard normal, so its q-quantile is e^(μ + σ·z_q) and its mean
/// e^(μ + σ²/2). With z = z₀.₉₉ ([`Z99`]):
///
/// * **p50 and p99**: ln p50 = μ and ln p99 = μ + zσ, so μ = ln p50 and
///   σ = (ln p99 − ln p50) / z; it needs p99 > p50.
/// * **mean and p99**: ln mean = μ + σ²/2 and ln p99 = μ + zσ; subtracting,
///   d = ln p99 − ln mean = zσ − σ²/2, a quadratic σ²/2 − zσ + d = 0 with roots
///   σ = z ∓ √(z² − 2d). Real roots need d ≤ z²/2 (p99 ≤ e^(z²/2) · mean ≈ 14.97 × mean:
///   p99/mean = e^(zσ − σ²/2) peaks at σ = z), and a positive smaller root needs d > 0
///   (p99 above the mean). Both roots have the same mean and p99; the smaller is taken
///   (the larger, σ > z, puts the median below mean·e^(−z²/2) and a far heavier tail
///   beyond p99), computed as 2d / (z + √(z² − 2d)) to avoid cancellation for small d.
///   Then μ = ln mean − σ²/2.
fn log_normal_by_percentiles(
    by: Percentiles,
    p99: f64,
    show: fn(f64) -> String,
) -> Result<(f64, f64), String> {
    let (mu, sigma) = match by {
        Percentiles::P50 { p50 } => {
            if p99 <= p50 {
                return Err(format!(
                    "LogNormal p99 must exceed p50, found p50 {} ≥ p99 {}",
                    show(p50),
                    show(p99)
                ));
            }
            (libm::log(p50), (libm::log(p99) - libm::log(p50)) / Z99)
        }
        Percentiles::Mean { mean } => {
            let d = libm::log(p99) - libm::log(mean);
            let max_ratio = libm::exp(Z99 * Z99 / 2.0);
            if d <= 0.0 || d > Z99 * Z99 / 2.0 {
                return Err(format!(
                    "no log-normal has mean {} and p99 {}: p99 must lie in (mean, {max_ratio:.2} × mean] \
                     (p99/mean = e^(zσ − σ²/2) is at most e^(z²/2) = {max_ratio:.2}, at σ = z = 2.326); \
                     for a heavier tail give p50 and p99",
                    show(mean),
                    show(p99)
                ));
            }
            let sigma = 2.0 * d / (Z99 + libm::sqrt(Z99 * Z99 - 2.0 * d));
            (libm::log(mean) - sigma * sigma / 2.0, sigma)
        }
    };
    if sigma > MAX_LOG_SIGMA {
        return Err(format!(
            "LogNormal p99/p50 = {:.0} is beyond the largest spread, e^(z·{MAX_LOG_SIGMA:.3}) = {:.0} \
             (σ at most {MAX_LOG_SIGMA:.3}, that of cv 1000)",
            libm::exp(sigma * Z99),
            libm::exp(MAX_LOG_SIGMA * Z99)
        ));
    }
    Ok((mu, sigma))
}

/// A standard normal from two uniforms (Box–Muller, cosine branch).
fn std_normal(u: &mut impl UniformSource) -> f64 {
    let r = libm::sqrt(-2.0 * libm::log(u.next_open01()));
    r * libm::cos(std::f64::consts::TAU * u.next_open01())
}

/// Gamma(shape, 1) by Marsaglia–Tsang; shape < 1 via the boost Gamma(shape+1)·U^(1/shape).
fn gamma(shape: f64, u: &mut impl UniformSource) -> f64 {
    if shape < 1.0 {
        let boost = libm::pow(u.next_open01(), 1.0 / shape);
        return gamma(shape + 1.0, u) * boost;
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / libm::sqrt(9.0 * d);
    for _ in 0..GAMMA_MAX_ROUNDS {
        let z = std_normal(u);
        let v = 1.0 + c * z;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let x = u.next_open01();
        if libm::log(x) < 0.5 * z * z + d - d * v + d * libm::log(v) {
            return d * v;
        }
    }
    // Unreachable in practice (probability < 1e-80): the mean of Gamma(shape, 1) keeps the
    // run going, deterministically.
    shape
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{DrawKey, Stream};

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_ms(x)
    }

    /// Sample mean and variance of 200k keyed draws against the analytic values.
    fn check_moments(d: &Dist<SimDuration>, n: u64) {
        let (mut s, mut s2) = (0.0, 0.0);
        for i in 0..n {
            let x = d.sample(&mut DrawKey::request(3, 5, i).attribute(0)).0 as f64;
            s += x;
            s2 += x * x;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        let (m, v) = (d.mean().unwrap(), d.variance().unwrap());
        let se = (v / n as f64).sqrt();
        assert!((mean - m).abs() <= 4.0 * se + 1.0, "{:?}: mean {mean} vs {m} (se {se})", d.spec());
        assert!((var - v).abs() / v < 0.05, "{:?}: var {var} vs {v}", d.spec());
    }

    #[test]
    fn moments_match_statrs() {
        let specs = [
            DistSpec::Exponential { mean: ms(800) },
            DistSpec::LogNormal { mean: Some(ms(800)), cv: Some(0.5), p50: None, p99: None },
            DistSpec::LogNormal { mean: None, cv: None, p50: Some(ms(300)), p99: Some(ms(2500)) },
            DistSpec::LogNormal { mean: Some(ms(800)), cv: None, p50: None, p99: Some(ms(2500)) },
            DistSpec::Poisson { rate: Rate::parse("150/s").unwrap() },
            DistSpec::Gamma { mean: ms(800), cv: 2.0 },
            DistSpec::Gamma { mean: ms(800), cv: 0.3 },
            DistSpec::Weibull { scale: ms(500), shape: 1.5 },
            DistSpec::Pareto { scale: ms(100), shape: 4.5 },
            DistSpec::Uniform { low: ms(100), high: ms(300) },
            DistSpec::Empirical { samples: vec![ms(1), ms(2), ms(10)] },
        ];
        for s in specs {
            check_moments(&Dist::new(s).unwrap(), 200_000);
        }
    }

    #[test]
    fn validation_messages() {
        let ln = |mean, cv, p50, p99| DistSpec::LogNormal { mean, cv, p50, p99 };
        let cases: &[(DistSpec<f64>, &str)] = &[
            (DistSpec::Exponential { mean: 0.0 }, "Exponential mean must be finite and > 0"),
            (ln(Some(5.0), Some(-1.0), None, None), "LogNormal cv must be finite and > 0"),
            (ln(Some(5.0), Some(1e308), None, None), "LogNormal cv must lie in (0, 1000]"),
            (ln(None, None, Some(5.0), Some(5.0)), "LogNormal p99 must exceed p50"),
            (ln(None, None, Some(0.0), Some(5.0)), "LogNormal p50 must be finite and > 0"),
            (ln(None, None, Some(1.0), Some(1e10)), "beyond the largest spread"),
            (ln(Some(5.0), None, None, Some(4.0)), "no log-normal has mean 5 and p99 4"),
            (ln(Some(1.0), None, None, Some(15.0)), "p99 must lie in (mean, 14.97 × mean]"),
            (ln(Some(1.0), Some(1.0), None, Some(15.0)), "found (mean, cv, p99)"),
            (
                ln(None, None, None, Some(15.0)),
                "exactly one of (mean, cv), (p50, p99) or (mean, p99)",
            ),
            (DistSpec::Poisson { rate: Rate::parse("1/s").unwrap() }, "distribution of gaps"),
            (DistSpec::Gamma { mean: 5.0, cv: 100.0 }, "Gamma cv must lie in"),
            (DistSpec::Uniform { low: 3.0, high: 1.0 }, "low must be ≤ high"),
            (DistSpec::Empirical { samples: vec![] }, "at least one sample"),
            (DistSpec::Constant(f64::NAN), "Constant value must be finite"),
        ];
        for (spec, msg) in cases {
            let e = Dist::new(spec.clone()).unwrap_err();
            assert!(e.contains(msg), "{spec:?}: {e}");
        }
    }

    #[test]
    fn ron_round_trip_and_errors_carry_position() {
        let d: Dist<SimDuration> = ron::from_str("LogNormal(mean: \"800ms\", cv: 1.5)").unwrap();
        let want = DistSpec::LogNormal { mean: Some(ms(800)), cv: Some(1.5), p50: None, p99: None };
        assert_eq!(d.spec(), &want);
        let back = ron::to_string(&d).unwrap();
        assert_eq!(ron::from_str::<Dist<SimDuration>>(&back).unwrap(), d);
        let e = ron::from_str::<Dist<SimDuration>>("\n  Exponential(mean: \"0s\")").unwrap_err();
        assert_eq!(e.span.start.line, 2, "{e}");
        assert!(e.to_string().contains("Exponential mean must be finite and > 0"), "{e}");
    }

    /// Poisson(rate) is Exponential(mean: the rate's gap) draw for draw: the same stream
    /// gives the same gaps, bit for bit, whether the gap divides exactly (200/s: 5 ms) or
    /// is rounded (55/s: 18,181,818.18 ns → 18,181,818 ns).
    #[test]
    fn poisson_rate_draws_exactly_as_its_exponential() {
        for (rate, gap) in [("200/s", 5_000_000), ("55/s", 18_181_818), ("9000/min", 6_666_667)] {
            let p =
                Dist::<SimDuration>::new(DistSpec::Poisson { rate: Rate::parse(rate).unwrap() })
                    .unwrap();
            let e = Dist::exponential(SimDuration(gap));
            let (mut a, mut b) = (Stream::new(7, "arrivals/chat"), Stream::new(7, "arrivals/chat"));
            for _ in 0..10_000 {
                assert_eq!(p.sample(&mut a), e.sample(&mut b), "{rate}");
            }
            assert_eq!(p.mean(), e.mean(), "{rate}");
        }
        let d: Dist<SimDuration> = ron::from_str("Poisson(rate: \"150/s\")").unwrap();
        assert_eq!(ron::to_string(&d).unwrap(), "Poisson(rate:\"150/s\")");
    }

    /// The percentile forms put their percentiles where they were written. With n keyed
    /// draws, the number at or below the true q-quantile is Binomial(n, q) (each draw is
    /// independent and falls below it with probability q): its fraction has mean q and
    /// standard deviation √(q(1 − q)/n). At n = 200,000 that is 0.00112 at q = 0.5 and
    /// 0.000222 at q = 0.99; the fractions below the written p50 and p99 must lie within
    /// 5 standard deviations of q (a false alarm with probability < 6e-7 per check). A σ
    /// 5% too large puts Φ(z/1.05) = 0.9866 below the written p99, 15 standard deviations
    /// off; the larger root (σ > z) puts the median far from it. The mean form's mean is
    /// analytic: μ + σ²/2 gives
    /// the written mean back (statrs' mean, to 1e-12 relative); its drawn mean is
    /// `moments_match_statrs`'.
    #[test]
    fn percentile_forms_hit_their_percentiles() {
        use statrs::distribution::ContinuousCDF;
        let z = sd::Normal::new(0.0, 1.0).unwrap().inverse_cdf(0.99);
        assert!((z - Z99).abs() < 1e-9, "statrs z99 {z} vs {Z99}");
        let n = 200_000u64;
        let frac_below = |d: &Dist<SimDuration>, x: SimDuration| {
            let below =
                (0..n).filter(|&i| d.sample(&mut DrawKey::request(11, 2, i).attribute(1)) <= x);
            below.count() as f64 / n as f64
        };
        let within = |f: f64, q: f64| (f - q).abs() <= 5.0 * (q * (1.0 - q) / n as f64).sqrt();
        let by_median: Dist<SimDuration> =
            ron::from_str("LogNormal(p50: \"300ms\", p99: \"2.5s\")").unwrap();
        let (f50, f99) = (frac_below(&by_median, ms(300)), frac_below(&by_median, ms(2500)));
        assert!(within(f50, 0.5) && within(f99, 0.99), "p50/p99 form: {f50}, {f99}");
        let by_mean: Dist<SimDuration> =
            ron::from_str("LogNormal(mean: \"800ms\", p99: \"2.5s\")").unwrap();
        let f99 = frac_below(&by_mean, ms(2500));
        assert!(within(f99, 0.99), "mean/p99 form: {f99}");
        let m = by_mean.mean().unwrap();
        assert!((m - 8e8).abs() / 8e8 < 1e-12, "analytic mean {m}");
        // Written back as written.
        let text = ron::to_string(&by_mean).unwrap();
        assert_eq!(text, "LogNormal(mean:\"800ms\",p99:\"2500ms\")");
        // The smaller root: σ < z, and at the bound p99 = e^(z²/2)·mean the two meet at z.
        let near = libm::exp(Z99 * Z99 / 2.0 - 1e-12);
        let at_bound =
            log_normal_params(Some(1.0), None, None, Some(near), <f64 as DistValue>::show).unwrap();
        assert!(at_bound.1 < Z99 && Z99 - at_bound.1 < 1e-5, "σ {}", at_bound.1);
    }

    #[test]
    fn stream_and_keyed_sources_both_work() {
        let d = Dist::<f64>::new(DistSpec::Gamma { mean: 10.0, cv: 1.0 }).unwrap();
        let mut s = Stream::new(1, "x");
        let a = d.sample(&mut s);
        let b = d.sample(&mut DrawKey::request(1, 2, 3).attribute(9));
        assert!(a > 0.0 && b > 0.0);
        assert_eq!(b, d.sample(&mut DrawKey::request(1, 2, 3).attribute(9)));
    }
}
