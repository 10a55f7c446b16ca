//! Integer-nanosecond simulated time.
//!
//! Architecture invariant: the simulated clock is a `u64` count of nanoseconds. There is no
//! floating-point clock anywhere in the engine or the models; floats appear only at the edges
//! (configuration parsing, reporting in milliseconds). `u64` nanoseconds cover 584 years.
//!
//! Durations in configuration files are strings with units: `"250us"`, `"300ms"`, `"30s"`,
//! `"5m"`, `"1h"`, `"1.5s"`, `"2d"`. A bare number is rejected: a duration without a unit is
//! ambiguous.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant on the simulated clock, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    pub fn as_s_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// `self - earlier`, saturating at zero.
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * NS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * NS_PER_MS)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * NS_PER_S)
    }
    pub fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    pub fn as_s_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// Rounds a non-negative number of nanoseconds to the nearest integer. Negative or NaN
    /// inputs are a bug in the caller (distributions are validated to be non-negative).
    pub fn from_ns_f64(ns: f64) -> Self {
        debug_assert!(ns >= 0.0, "negative duration {ns}");
        if ns >= u64::MAX as f64 {
            SimDuration::MAX
        } else if ns > 0.0 {
            SimDuration((ns + 0.5) as u64)
        } else {
            SimDuration::ZERO
        }
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, rhs: SimTime) -> SimDuration {
        debug_assert!(self >= rhs, "time went backwards: {self:?} - {rhs:?}");
        SimDuration(self.0 - rhs.0)
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

/// Why a duration string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationParseError {
    #[error("empty duration; expected a number with a unit such as \"300ms\", \"30s\", \"5m\"")]
    Empty,
    #[error(
        "duration \"{0}\" has no unit; expected one of ns, us, ms, s, m, h, d (e.g. \"300ms\")"
    )]
    NoUnit(String),
    #[error("duration \"{0}\" has an unknown unit \"{1}\"; expected one of ns, us, ms, s, m, h, d")]
    BadUnit(String, String),
    #[error("duration \"{0}\" does not start with a non-negative number")]
    BadNumber(String),
    #[error("duration \"{0}\" is too long (more than 584 years)")]
    Overflow(String),
    #[error("duration \"{0}\" is not a whole number of nanoseconds")]
    Fractional(String),
}

impl std::str::FromStr for SimDuration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s)
    }
}

/// Parses `"<number><unit>"`. The number may have a decimal fraction (`"1.5s"`); the result
/// must be a whole number of nanoseconds. Parsing is exact: the digits are combined in
/// integer arithmetic, never through `f64`.
pub fn parse_duration(text: &str) -> Result<SimDuration, DurationParseError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationParseError::Empty);
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(DurationParseError::BadNumber(text.to_string()));
    }
    let scale: u64 = match unit {
        "" => return Err(DurationParseError::NoUnit(text.to_string())),
        "ns" => 1,
        "us" | "µs" => NS_PER_US,
        "ms" => NS_PER_MS,
        "s" => NS_PER_S,
        "m" | "min" => 60 * NS_PER_S,
        "h" => 3600 * NS_PER_S,
        "d" => 86_400 * NS_PER_S,
        other => return Err(DurationParseError::BadUnit(text.to_string(), other.to_string())),
    };
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return Err(DurationParseError::BadNumber(text.to_string()));
    }
    let overflow = || DurationParseError::Overflow(text.to_string());
    let int: u64 =
        if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| overflow())? };
    let mut ns = int.checked_mul(scale).ok_or_else(overflow)?;
    // Fraction: frac_digits / 10^len * scale must be an integer.
    if !frac_part.is_empty() {
        if frac_part.len() > 18 {
            return Err(DurationParseError::Fractional(text.to_string()));
        }
        let digits: u128 = frac_part.parse().map_err(|_| overflow())?;
        let denom = 10u128.pow(frac_part.len() as u32);
        let scaled = digits * scale as u128;
        if !scaled.is_multiple_of(denom) {
            return Err(DurationParseError::Fractional(text.to_string()));
        }
        let add = u64::try_from(scaled / denom).map_err(|_| overflow())?;
        ns = ns.checked_add(add).ok_or_else(overflow)?;
    }
    Ok(SimDuration(ns))
}

impl fmt::Display for SimDuration {
    /// The shortest exact representation with the largest unit that divides it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        const UNITS: [(u64, &str); 6] = [
            (3600 * NS_PER_S, "h"),
            (60 * NS_PER_S, "m"),
            (NS_PER_S, "s"),
            (NS_PER_MS, "ms"),
            (NS_PER_US, "us"),
            (1, "ns"),
        ];
        if ns == 0 {
            return write!(f, "0s");
        }
        for (scale, unit) in UNITS {
            if ns.is_multiple_of(scale) {
                return write!(f, "{}{}", ns / scale, unit);
            }
        }
        unreachable!("1ns divides everything")
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}", SimDuration(self.0))
    }
}

impl Serialize for SimDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for SimDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SimDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a duration string with a unit, such as \"300ms\", \"30s\" or \"5m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SimDuration, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "expected a duration string with a unit, such as \"{v}ms\" or \"{v}s\", found the bare number {v}"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "expected a duration string with a unit, such as \"300ms\", found the number {v}"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "expected a duration string with a unit, such as \"{v}s\", found the bare number {v}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_table() {
        let ok: &[(&str, u64)] = &[
            ("0s", 0),
            ("1ns", 1),
            ("250us", 250_000),
            ("300ms", 300_000_000),
            ("30s", 30_000_000_000),
            ("1.5s", 1_500_000_000),
            ("0.001ms", 1_000),
            ("5m", 300_000_000_000),
            ("1h", 3_600_000_000_000),
            ("2d", 172_800_000_000_000),
            (" 10 ms ", 10_000_000),
            ("1_000ms", 1_000_000_000),
        ];
        for (text, ns) in ok {
            assert_eq!(parse_duration(text), Ok(SimDuration(*ns)), "{text}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "empty duration"),
            ("300", "has no unit"),
            ("3x", "unknown unit \"x\""),
            ("ms", "does not start with a non-negative number"),
            ("-1s", "does not start with a non-negative number"),
            ("1.5ns", "not a whole number of nanoseconds"),
            ("1.2.3s", "does not start"),
            ("999999999999h", "too long"),
        ];
        for (text, msg) in bad {
            let e = parse_duration(text).unwrap_err().to_string();
            assert!(e.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for ns in [0, 1, 1_000, 1_500_000_000, 300_000_000_000, 7_200_000_000_000, 123_456_789] {
            let d = SimDuration(ns);
            assert_eq!(parse_duration(&d.to_string()), Ok(d));
        }
    }
}
