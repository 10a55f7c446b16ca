//! Per-request attributes: token counts, a cache key from a skewed popularity, and the
//! rules that give trace rows a class, a user and a key.
//!
//! Token counts come from `Dist<f64>` distributions (the same syntax as durations, with
//! plain numbers: `LogNormal(mean: 800.0, cv: 1.2)`), rounded to the nearest whole token
//! and clamped to `[0, u32::MAX]`. A cache key is a popularity rank in `1..=n` drawn from a
//! Zipf law `P(r) ∝ r^-s` by inversion over a precomputed CDF (one binary search per
//! request). Key 0 is reserved for "no key"; equal ranks from two sources are the same key
//! (the same FAQ question asked through two front doors).
//!
//! Key design decision: every attribute is one keyed draw (`world::attr`) over the
//! request's `(seed, source, sequence)` — the row index for a trace, `(user, turn)` for a
//! closed-loop user — so adding an attribute never shifts the arrival times or any other
//! attribute (common random numbers), and a policy change never changes what a request
//! carries.
//!
//! Architecture invariant: a [`KeyTable`] holds at most [`MAX_KEYS`] entries (80 MB); the
//! CDF is non-decreasing and ends at exactly 1.
//!
//! API boundary: specs are plain serde data on `SourceSpec`; the world samples them
//! through [`KeyTable::sample`], [`sample_tokens`], [`AssignSpec::class_of`] and
//! [`hash_into`].

use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::Dist;
use sim_core::rng::{UniformSource, mix64};

/// Largest key space of a Zipf popularity (its CDF costs 8 bytes a key).
pub const MAX_KEYS: u64 = 10_000_000;

/// How a request's cache key is chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "KeySpecRaw", into = "KeySpecRaw")]
pub enum KeySpec {
    /// Rank `r` in `1..=n` with probability `r^-s / H(n, s)` (`s ≥ 0`; `s = 0` is uniform).
    Zipf { n: u64, s: f64 },
}

impl KeySpec {
    /// The key space's size (`source.<name>.keys_n`).
    pub fn n(&self) -> u64 {
        let KeySpec::Zipf { n, .. } = *self;
        n
    }
    /// The Zipf exponent (`source.<name>.keys_s`).
    pub fn s(&self) -> f64 {
        let KeySpec::Zipf { s, .. } = *self;
        s
    }
    /// Sets the size; the registry checked the range ([1, MAX_KEYS]).
    pub fn set_n(&mut self, to: u64) {
        let KeySpec::Zipf { n, .. } = self;
        *n = to;
    }
    /// Sets the exponent; the registry checked the range ([0, 10]).
    pub fn set_s(&mut self, to: f64) {
        let KeySpec::Zipf { s, .. } = self;
        *s = to;
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum KeySpecRaw {
    Zipf { n: u64, s: f64 },
}

impl TryFrom<KeySpecRaw> for KeySpec {
    type Error = String;
    fn try_from(r: KeySpecRaw) -> Result<Self, String> {
        let KeySpecRaw::Zipf { n, s } = r;
        if n == 0 || n > MAX_KEYS {
            return Err(format!("Zipf: expected n in [1, {MAX_KEYS}], found {n}"));
        }
        if !(s.is_finite() && (0.0..=10.0).contains(&s)) {
            return Err(format!("Zipf: expected s in [0, 10], found {s}"));
        }
        Ok(KeySpec::Zipf { n, s })
    }
}
impl From<KeySpec> for KeySpecRaw {
    fn from(k: KeySpec) -> Self {
        let KeySpec::Zipf { n, s } = k;
        KeySpecRaw::Zipf { n, s }
    }
}

/// The CDF of a key popularity, built once per source.
#[derive(Clone, Debug)]
pub struct KeyTable {
    cdf: Vec<f64>,
}

impl KeyTable {
    pub fn new(spec: &KeySpec) -> KeyTable {
        let KeySpec::Zipf { n, s } = *spec;
        assert!((1..=MAX_KEYS).contains(&n), "validated key space");
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for r in 1..=n {
            acc += libm::pow(r as f64, -s);
            cdf.push(acc);
        }
        let total = acc;
        cdf.iter_mut().for_each(|c| *c /= total);
        *cdf.last_mut().expect("n ≥ 1") = 1.0;
        assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "a CDF does not decrease");
        KeyTable { cdf }
    }
    /// The rank (1 = most popular) of uniform `u ∈ (0, 1)`.
    pub fn sample(&self, u: f64) -> u64 {
        let i = self.cdf.partition_point(|c| *c < u);
        (i.min(self.cdf.len() - 1) + 1) as u64
    }
    pub fn len(&self) -> usize {
        self.cdf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }
}

/// A token count from a distribution: rounded, clamped to `[0, u32::MAX]`.
pub fn sample_tokens(d: &Dist<f64>, u: &mut impl UniformSource) -> u32 {
    let x = d.sample(u);
    if x.is_nan() || x <= 0.0 { 0 } else { libm::round(x).min(u32::MAX as f64) as u32 }
}

/// `1..=n` from a row index by hashing (traces without user or key columns).
pub fn hash_into(row: u64, salt: u64, n: u64) -> u64 {
    assert!(n >= 1);
    mix64(row ^ mix64(salt)) % n + 1
}

/// A token-size band of a trace assignment: the first band a row matches gives its class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Band")]
pub struct Band {
    /// Matches rows with more prompt tokens than this (`None`: any).
    #[serde(default)]
    pub prompt_above: Option<u32>,
    /// Matches rows with more output tokens than this (`None`: any).
    #[serde(default)]
    pub output_above: Option<u32>,
    pub class: String,
}

/// Rules that give a trace's rows what the file lacks: a class, a user, a key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Assign")]
pub struct AssignSpec {
    /// Token-size bands, tried in order (e.g. prompt above 4000 → P2).
    #[serde(default)]
    pub bands: Vec<Band>,
    /// Rows no band matched: a class by share (a keyed draw per row); the shares must sum
    /// to 1. Empty: the source's class.
    #[serde(default)]
    pub class_shares: Vec<(String, f64)>,
    /// Users `1..=n` by hashing the row index (`None`: the scenario's population, if any).
    #[serde(default, deserialize_with = "validate::opt_at_least_one")]
    pub hash_users: Option<u64>,
    /// Keys `1..=n` by hashing the row index (`None`: the source's `keys`, if any).
    #[serde(default, deserialize_with = "validate::opt_at_least_one")]
    pub hash_keys: Option<u64>,
}

/// Most bands or shares in one assignment.
pub const MAX_RULES: usize = 64;

impl AssignSpec {
    /// Checks class names (against `classes`), the number of rules and the shares' sum.
    pub fn check(&self, classes: &[&str]) -> Result<(), (String, String)> {
        let known = |c: &str, at: String| {
            if classes.contains(&c) {
                Ok(())
            } else {
                Err((at, format!("no class named \"{c}\"; classes: [{}]", classes.join(", "))))
            }
        };
        if self.bands.len() > MAX_RULES || self.class_shares.len() > MAX_RULES {
            return Err(("bands".into(), format!("at most {MAX_RULES} bands and shares")));
        }
        for (i, b) in self.bands.iter().enumerate() {
            known(&b.class, format!("bands[{i}].class"))?;
        }
        let mut sum = 0.0;
        for (i, (c, x)) in self.class_shares.iter().enumerate() {
            known(c, format!("class_shares[{i}]"))?;
            if !(x.is_finite() && *x >= 0.0) {
                return Err((
                    format!("class_shares[{i}]"),
                    format!("expected a share ≥ 0, found {x}"),
                ));
            }
            sum += x;
        }
        if !self.class_shares.is_empty() && (sum - 1.0).abs() > 1e-9 {
            return Err(("class_shares".into(), format!("shares must sum to 1, found {sum}")));
        }
        Ok(())
    }

    /// The class name of a row: the first matching band, else by share with uniform `u`,
    /// else `None` (the source's class).
    pub fn class_of(&self, prompt: Option<u32>, output: Option<u32>, u: f64) -> Option<&str> {
        let above = |lim: Option<u32>, v: Option<u32>| lim.is_none_or(|l| v.is_some_and(|v| v > l));
        if let Some(b) = self
            .bands
            .iter()
            .find(|b| above(b.prompt_above, prompt) && above(b.output_above, output))
        {
            return Some(&b.class);
        }
        let mut acc = 0.0;
        for (c, x) in &self.class_shares {
            acc += x;
            if u < acc {
                return Some(c);
            }
        }
        self.class_shares.last().map(|(c, _)| c.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_table_by_hand() {
        // n = 3, s = 1: weights 1, 1/2, 1/3; H = 11/6 → CDF 6/11, 9/11, 1.
        let t = KeyTable::new(&KeySpec::Zipf { n: 3, s: 1.0 });
        let cases = [(0.01, 1), (0.545, 1), (0.546, 2), (0.818, 2), (0.819, 3), (0.999_999, 3)];
        for (u, want) in cases {
            assert_eq!(t.sample(u), want, "u = {u}");
        }
        // s = 0 is uniform over 4 keys.
        let t = KeySpec::Zipf { n: 4, s: 0.0 };
        let t = KeyTable::new(&t);
        assert_eq!([0.2, 0.3, 0.6, 0.8].map(|u| t.sample(u)), [1, 2, 3, 4]);
    }

    #[test]
    fn key_spec_validation() {
        let e = |t: &str| ron::from_str::<KeySpec>(t).unwrap_err().to_string();
        assert!(e("Zipf(n: 0, s: 1.0)").contains("expected n in [1, 10000000]"));
        assert!(e("Zipf(n: 10000001, s: 1.0)").contains("expected n in"));
        assert!(e("Zipf(n: 10, s: -1.0)").contains("expected s in [0, 10]"));
        assert_eq!(
            ron::from_str::<KeySpec>("Zipf(n: 10, s: 1.1)").unwrap(),
            KeySpec::Zipf { n: 10, s: 1.1 }
        );
    }

    #[test]
    fn tokens_round_and_clamp() {
        struct U(f64);
        impl UniformSource for U {
            fn next_open01(&mut self) -> f64 {
                self.0
            }
        }
        let c = |x: f64| sample_tokens(&Dist::constant(x), &mut U(0.5));
        assert_eq!([c(799.5), c(800.49), c(0.0), c(1e12)], [800, 800, 0, u32::MAX]);
    }

    #[test]
    fn bands_then_shares() {
        let a: AssignSpec = ron::from_str(
            r#"Assign(bands: [(prompt_above: Some(4000), class: "P2"), (output_above: Some(500), class: "P1")],
                      class_shares: [("P0", 0.25), ("P1", 0.75)])"#,
        )
        .unwrap();
        assert_eq!(a.check(&["P0", "P1", "P2"]), Ok(()));
        let cases = [
            ((Some(4001), Some(10)), 0.1, "P2"),
            ((Some(4000), Some(501)), 0.1, "P1"), // 4000 is not above 4000
            ((Some(10), None), 0.1, "P0"),        // unknown output matches no output band
            ((Some(10), Some(10)), 0.25, "P1"),
            ((None, None), 0.9, "P1"),
        ];
        for ((p, o), u, want) in cases {
            assert_eq!(a.class_of(p, o, u), Some(want), "{p:?} {o:?} {u}");
        }
        let bad: AssignSpec = ron::from_str(r#"Assign(class_shares: [("P0", 0.5)])"#).unwrap();
        assert!(bad.check(&["P0"]).unwrap_err().1.contains("sum to 1"));
        let bad: AssignSpec = ron::from_str(r#"Assign(bands: [(class: "X")])"#).unwrap();
        assert_eq!(bad.check(&["P0"]).unwrap_err().0, "bands[0].class");
    }

    #[test]
    fn hashing_is_stable_and_in_range() {
        for row in 0..1000 {
            let u = hash_into(row, 7, 10);
            assert!((1..=10).contains(&u));
            assert_eq!(u, hash_into(row, 7, 10));
        }
    }
}
