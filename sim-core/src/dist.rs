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
//! that way. Every constructor validates its ranges; a RON file with `cv: -1` fails to load
//! with the file position (the check runs inside `Deserialize`).

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
}

impl DistValue for SimDuration {
    const WHAT: &'static str = "duration";
    fn to_base(self) -> f64 {
        self.0 as f64
    }
    fn from_base(x: f64) -> Self {
        SimDuration::from_ns_f64(x)
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
}

/// The user-facing form of a distribution, as written in RON files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Distribution")]
pub enum DistSpec<V> {
    /// Always the same value.
    Constant(V),
    /// Exponential with the given mean (memoryless; CV 1).
    Exponential { mean: V },
    /// Log-normal by mean and coefficient of variation (σ/μ of the value itself).
    LogNormal { mean: V, cv: f64 },
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
            DistSpec::LogNormal { mean, cv } => {
                let m = check_positive("LogNormal mean", mean.to_base())?;
                let cv = check_positive("LogNormal cv", *cv)?;
                // σ² = ln(1 + cv²): beyond this bound cv² overflows, σ and μ become
                // infinite and draws NaN (found by the fuzzer with `cv: 1e308`).
                if cv > 1000.0 {
                    return Err(format!("LogNormal cv must lie in (0, 1000], found {cv:e}"));
                }
                let s2 = libm::log1p(cv * cv);
                Sampler::LogNormal { mu: libm::log(m) - s2 / 2.0, sigma: libm::sqrt(s2) }
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
            (DistSpec::LogNormal { mean, cv }, _) | (DistSpec::Gamma { mean, cv }, _) => {
                Some((mean.to_base() * cv).powi(2))
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
            DistSpec::LogNormal { mean: ms(800), cv: 0.5 },
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
        let cases: &[(DistSpec<f64>, &str)] = &[
            (DistSpec::Exponential { mean: 0.0 }, "Exponential mean must be finite and > 0"),
            (DistSpec::LogNormal { mean: 5.0, cv: -1.0 }, "LogNormal cv must be finite and > 0"),
            (DistSpec::LogNormal { mean: 5.0, cv: 1e308 }, "LogNormal cv must lie in (0, 1000]"),
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
        assert_eq!(d.spec(), &DistSpec::LogNormal { mean: ms(800), cv: 1.5 });
        let back = ron::to_string(&d).unwrap();
        assert_eq!(ron::from_str::<Dist<SimDuration>>(&back).unwrap(), d);
        let e = ron::from_str::<Dist<SimDuration>>("\n  Exponential(mean: \"0s\")").unwrap_err();
        assert_eq!(e.span.start.line, 2, "{e}");
        assert!(e.to_string().contains("Exponential mean must be finite and > 0"), "{e}");
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
