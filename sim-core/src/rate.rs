//! Rates as people write them: `"150/s"`, `"9000/min"`, `"2/ms"`, `"1.5/s"`, `"3/10s"`.
//!
//! A rate is a count per duration. It is parsed exactly (the count's decimal digits in
//! integer arithmetic, the duration by [`parse_duration`]), and turned into the
//! integer-nanosecond mean gap it implies, [`Rate::mean_gap`]:
//!
//! ```text
//! mean gap = per_ns / count, rounded to the nearest nanosecond (a tie rounds up)
//! ```
//!
//! so `"200/s"` is exactly 5 ms, and `"150/s"` (6,666,666.67 ns) is 6,666,667 ns: the
//! rounding error is at most 0.5 ns a gap, a relative error of at most `0.5 ns / gap`
//! (7.5e-8 at 150/s). A rate whose gap rounds to 0 ns (above 2 per nanosecond) is refused.
//! `Poisson(rate: r)` samples exactly as `Exponential(mean: <r's mean gap>)`
//! (in the distributions module), so writing a rate whose gap is a whole number of nanoseconds moves
//! nothing.

use crate::time::{NS_PER_S, SimDuration, parse_duration};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A count per duration, kept as written (digits, decimal places, the duration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// The count's digits without the decimal point (`1.5` → 15).
    digits: u64,
    /// Decimal places of the count (`1.5` → 1).
    places: u32,
    /// The duration the count is per (`/s` → 1 s, `/10s` → 10 s).
    per: SimDuration,
}

/// Most decimal places in a rate's count (10^18 still fits the arithmetic below).
const MAX_PLACES: u32 = 18;

impl Rate {
    /// Parses `"<count>/<duration>"`; a duration without a number counts 1 of its unit.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let expected = "expected a rate such as \"150/s\", \"9000/min\" or \"2/ms\"";
        let Some((count, per)) = text.trim().split_once('/') else {
            return Err(format!("{expected}, found \"{text}\" (no `/`)"));
        };
        let (count, per) = (count.trim(), per.trim());
        let per_text = if per.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            per.to_string()
        } else {
            format!("1{per}")
        };
        let per = parse_duration(&per_text).map_err(|e| format!("rate \"{text}\": {e}"))?;
        if per.0 == 0 {
            return Err(format!("rate \"{text}\": the duration after `/` must be > 0"));
        }
        let (int, frac) = count.split_once('.').unwrap_or((count, ""));
        let all_digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
            return Err(format!("{expected}, found \"{text}\" (the count is not a number)"));
        }
        let places = frac.len() as u32;
        let digits = format!("{int}{frac}").parse::<u64>().ok().filter(|_| places <= MAX_PLACES);
        let Some(digits) = digits else {
            return Err(format!("rate \"{text}\": the count has too many digits"));
        };
        if digits == 0 {
            return Err(format!("rate \"{text}\" must be > 0"));
        }
        let rate = Rate { digits, places, per };
        if rate.mean_gap().0 == 0 {
            return Err(format!(
                "rate \"{text}\" is above 2 per nanosecond (its mean gap rounds to 0 ns)"
            ));
        }
        Ok(rate)
    }

    /// The mean gap between events, `per / count`, to the nearest nanosecond (ties up).
    pub fn mean_gap(&self) -> SimDuration {
        // per_ns · 10^places / digits, in u128: at most 1.8e19 · 1e18 < 3.4e38.
        let num = self.per.0 as u128 * 10u128.pow(self.places);
        let den = self.digits as u128;
        let (q, r) = (num / den, num % den);
        let gap = if 2 * r >= den { q + 1 } else { q };
        SimDuration(u64::try_from(gap).unwrap_or(u64::MAX))
    }

    /// Events per second (for reports; sampling uses [`Rate::mean_gap`]).
    pub fn per_second(&self) -> f64 {
        self.digits as f64 / 10f64.powi(self.places as i32) * NS_PER_S as f64 / self.per.0 as f64
    }
}

impl fmt::Display for Rate {
    /// The rate as written, normalised: `150/s`, `1.5/s`, `3/10s`, `9000/m`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.digits.to_string();
        let p = self.places as usize;
        let count = if p == 0 {
            d
        } else {
            let d = format!("{d:0>width$}", width = p + 1);
            format!("{}.{}", &d[..d.len() - p], &d[d.len() - p..])
        };
        let per = self.per.to_string();
        let unit = per.strip_prefix('1').filter(|u| u.chars().all(|c| c.is_ascii_alphabetic()));
        write!(f, "{count}/{}", unit.unwrap_or(&per))
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a rate string such as \"150/s\", \"9000/min\" or \"2/ms\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
                Rate::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
                Err(E::custom(format!(
                    "expected a rate string with its duration, such as \"{v}/s\", found the bare number {v}"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
                Err(E::custom(format!(
                    "expected a rate string with its duration, such as \"{v}/s\", found the bare number {v}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(text: &str) -> u64 {
        Rate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).mean_gap().0
    }

    /// Exact gaps where the count divides the duration; elsewhere the nearest nanosecond.
    #[test]
    fn mean_gaps_are_exact_or_rounded_to_the_nearest_ns() {
        assert_eq!(gap("200/s"), 5_000_000);
        assert_eq!(gap("2/ms"), 500_000);
        assert_eq!(gap("9000/min"), 6_666_667, "60e9 / 9000 = 6,666,666.67 → up");
        assert_eq!(gap("150/s"), 6_666_667, "6,666,666.67 → up");
        assert_eq!(gap("55/s"), 18_181_818, "18,181,818.18 → down");
        assert_eq!(gap("3/s"), 333_333_333, "333,333,333.33 → down");
        assert_eq!(gap("1.5/s"), 666_666_667);
        assert_eq!(gap("3/10s"), 3_333_333_333);
        assert_eq!(gap("0.25/s"), 4_000_000_000);
        // A tie (x.5 ns) rounds up: 1 ns per 2 events.
        assert_eq!(gap("2/ns"), 1, "0.5 ns → 1 ns");
        assert_eq!(gap("4/3ns"), 1, "0.75 ns → 1 ns");
        assert_eq!(gap("1/1h"), 3_600_000_000_000);
    }

    #[test]
    fn bad_rates_say_what_was_expected() {
        let cases = [
            ("150", "no `/`"),
            ("x/s", "the count is not a number"),
            ("-1/s", "the count is not a number"),
            ("0/s", "must be > 0"),
            ("150/parsec", "unknown unit"),
            ("150/0s", "must be > 0"),
            ("3/ns", "above 2 per nanosecond"),
            ("1.0000000000000000001/s", "too many digits"),
        ];
        for (text, msg) in cases {
            let e = Rate::parse(text).unwrap_err();
            assert!(e.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn written_back_as_read() {
        for text in ["150/s", "1.5/s", "0.25/s", "3/10s", "2/ms", "7/m"] {
            assert_eq!(Rate::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Rate::parse("9000/min").unwrap().to_string(), "9000/m");
        assert_eq!(Rate::parse(" 150 / s ").unwrap().to_string(), "150/s");
        let r: Rate = ron::from_str("\"150/s\"").unwrap();
        assert_eq!(ron::to_string(&r).unwrap(), "\"150/s\"");
        let e = ron::from_str::<Rate>("150").unwrap_err().to_string();
        assert!(e.contains("such as \"150/s\""), "{e}");
        assert!((Rate::parse("9000/min").unwrap().per_second() - 150.0).abs() < 1e-9);
    }
}
