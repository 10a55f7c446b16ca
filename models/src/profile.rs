//! Time-varying load: a rate multiplier over time that warps a source's arrival process.
//!
//! A source's inter-arrival distribution defines a renewal process in *operational time*;
//! the profile maps operational time to real time through the cumulative multiplier
//! `U(t) = ∫₀ᵗ m(s) ds`. With exponential gaps this is exactly a non-homogeneous Poisson
//! process of rate `λ·m(t)`; with bursty (gamma) gaps the burstiness is kept while the mean
//! rate follows the profile. This expresses diurnal cycles, a promotion surge (×10 ramped
//! over minutes), on/off traffic (multiplier 0 while off) — by inversion, exactly, with no
//! rejected draws, so arrivals stay a deterministic function of the source's stream.
//!
//! Points `(at, multiplier)` are joined by `Linear` ramps or held as `Step`s; before the
//! first point the first multiplier holds, after the last point the last one. With a
//! `period`, the profile repeats (points must then lie in `[0, period)`).
//!
//! A profile may be written in rates instead (`("90s", "1500/s")`, [`sim_core::Rate`]):
//! the rate itself over time. It becomes a multiplier profile when the world is built,
//! [`Profile::resolve`]: each rate times the mean gap of the source's `interarrival` as
//! declared (`Poisson(rate: "150/s")` and a point at `"1500/s"`: ×10). Rates and
//! multipliers do not mix in one profile, except `0` (off), which is both.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sim_core::{Rate, SimDuration, SimTime};

/// How points are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shape {
    /// The multiplier holds until the next point.
    Step,
    /// The multiplier ramps linearly to the next point.
    Linear,
}

/// A rate-multiplier profile, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Profile", try_from = "ProfileSpec", into = "ProfileSpec")]
pub struct Profile {
    /// Multipliers; in a profile written in rates, rates per second until [`Profile::resolve`].
    points: Vec<(SimDuration, f64)>,
    shape: Shape,
    period: Option<SimDuration>,
    /// The points' levels as written, when they are rates.
    rates: Option<Vec<Level>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Profile")]
struct ProfileSpec {
    points: Vec<(SimDuration, Level)>,
    shape: Shape,
    #[serde(default)]
    period: Option<SimDuration>,
}

/// A point's level: a multiplier (`10.0`) or a rate (`"1500/s"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    Multiplier(f64),
    Rate(Rate),
}

impl Level {
    /// The multiplier, or the rate per second.
    fn value(&self) -> f64 {
        match self {
            Level::Multiplier(m) => *m,
            Level::Rate(r) => r.per_second(),
        }
    }
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Level::Multiplier(m) => s.serialize_f64(*m),
            Level::Rate(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Level;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a rate multiplier such as 10.0 or a rate such as \"1500/s\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Level, E> {
                Ok(Level::Multiplier(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Level, E> {
                Ok(Level::Multiplier(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Level, E> {
                Ok(Level::Multiplier(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Level, E> {
                Rate::parse(v).map(Level::Rate).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl From<Profile> for ProfileSpec {
    fn from(p: Profile) -> Self {
        let points = match &p.rates {
            Some(levels) => p.points.iter().zip(levels).map(|(&(at, _), l)| (at, *l)).collect(),
            None => p.points.iter().map(|&(at, m)| (at, Level::Multiplier(m))).collect(),
        };
        ProfileSpec { points, shape: p.shape, period: p.period }
    }
}

/// Most points in one profile (TigerStyle bound; a day at one-minute resolution fits).
pub const MAX_POINTS: usize = 10_000;

impl TryFrom<ProfileSpec> for Profile {
    type Error = String;
    fn try_from(p: ProfileSpec) -> Result<Self, String> {
        let is_rate = |l: &Level| matches!(l, Level::Rate(_));
        let any_rate = p.points.iter().any(|(_, l)| is_rate(l));
        if let Some(i) =
            p.points.iter().position(|(_, l)| *l != Level::Multiplier(0.0) && !is_rate(l))
            && any_rate
        {
            return Err(format!(
                "point {i} is a multiplier in a profile written in rates: write every level as a \
                 rate (\"1500/s\") or every level as a multiplier (10.0); 0 (off) fits both"
            ));
        }
        let levels: Vec<(SimDuration, f64)> =
            p.points.iter().map(|(at, l)| (*at, l.value())).collect();
        if !any_rate {
            return Profile::new(levels, p.shape, p.period);
        }
        let mut profile =
            Profile::new(levels.iter().map(|&(at, _)| (at, 1.0)).collect(), p.shape, p.period)?;
        profile.points = levels;
        profile.rates = Some(p.points.into_iter().map(|(_, l)| l).collect());
        Ok(profile)
    }
}

impl Profile {
    pub fn new(
        points: Vec<(SimDuration, f64)>,
        shape: Shape,
        period: Option<SimDuration>,
    ) -> Result<Self, String> {
        if points.is_empty() || points.len() > MAX_POINTS {
            return Err(format!("expected 1 to {MAX_POINTS} points, found {}", points.len()));
        }
        for (i, w) in points.windows(2).enumerate() {
            if w[1].0 <= w[0].0 {
                return Err(format!(
                    "point times must increase: point {} at \"{}\" is not after point {i} at \"{}\"",
                    i + 1,
                    w[1].0,
                    w[0].0
                ));
            }
        }
        for (i, (_, m)) in points.iter().enumerate() {
            if !m.is_finite() || *m < 0.0 || *m > 1e6 {
                return Err(format!("multiplier of point {i} must be in [0, 1e6], found {m}"));
            }
        }
        if let Some(p) = period {
            if p.0 == 0 {
                return Err("period must be > 0".into());
            }
            if points.last().is_some_and(|l| l.0 >= p) {
                return Err(format!("with a period of \"{p}\", every point must lie before it"));
            }
        }
        let any_positive = points.iter().any(|(_, m)| *m > 0.0);
        if !any_positive {
            return Err("at least one multiplier must be > 0 (the source would never send)".into());
        }
        Ok(Profile { points, shape, period, rates: None })
    }

    /// Whether the profile is written in rates (it needs [`Profile::resolve`]).
    pub fn in_rates(&self) -> bool {
        self.rates.is_some()
    }

    /// The multiplier profile to run: itself, or for a profile written in rates, each rate
    /// times `mean_gap_ns`, the mean gap of the source's declared interarrival (a rate
    /// `r`/s over a mean gap `g` ns is the multiplier r·g/1e9: the gaps shrink by it).
    pub fn resolve(&self, mean_gap_ns: f64) -> Result<Profile, String> {
        if self.rates.is_none() {
            return Ok(self.clone());
        }
        let points = self.points.iter().map(|&(at, per_s)| (at, per_s * mean_gap_ns / 1e9));
        Profile::new(points.collect(), self.shape, self.period).map_err(|e| {
            format!(
                "its rates over the interarrival's mean gap of {:.6} ms give multipliers that fail: {e}",
                mean_gap_ns / 1e6
            )
        })
    }

    /// Multiplier at time `t` (within one period if periodic).
    pub fn multiplier(&self, t: SimTime) -> f64 {
        let t = self.fold(t.0);
        let p = &self.points;
        let i = p.partition_point(|(at, _)| at.0 <= t);
        if i == 0 {
            return match (self.period, self.shape) {
                // Periodic linear profiles wrap: ramp from the last point to the first.
                (Some(per), Shape::Linear) => {
                    let (a, ma) = (p[p.len() - 1].0.0 as f64 - per.0 as f64, p[p.len() - 1].1);
                    let (b, mb) = (p[0].0.0 as f64, p[0].1);
                    lerp(a, ma, b, mb, t as f64)
                }
                (Some(_), Shape::Step) => p[p.len() - 1].1,
                (None, _) => p[0].1,
            };
        }
        let (a, ma) = p[i - 1];
        match (self.shape, p.get(i)) {
            (Shape::Linear, Some(&(b, mb))) => lerp(a.0 as f64, ma, b.0 as f64, mb, t as f64),
            (Shape::Linear, None) => match self.period {
                Some(per) => lerp(a.0 as f64, ma, per.0 as f64 + p[0].0.0 as f64, p[0].1, t as f64),
                None => ma,
            },
            (Shape::Step, _) => ma,
        }
    }

    fn fold(&self, t: u64) -> u64 {
        self.period.map_or(t, |p| t % p.0)
    }

    /// The breakpoints of the multiplier after `t` (exclusive), in absolute time: the next
    /// instant at which the piecewise-linear form changes.
    fn next_break(&self, t: u64) -> u64 {
        let p = &self.points;
        match self.period {
            None => p.get(p.partition_point(|(at, _)| at.0 <= t)).map_or(u64::MAX, |(at, _)| at.0),
            Some(per) => {
                let base = t - t % per.0;
                let local = t % per.0;
                match p.get(p.partition_point(|(at, _)| at.0 <= local)).map(|(at, _)| at.0) {
                    Some(at) => base + at,
                    None => base + per.0 + p[0].0.0.min(per.0),
                }
                .max(t + 1)
            }
        }
    }

    /// The integral of the multiplier over `[t, next breakpoint)`, and that breakpoint
    /// (`u64::MAX` when the multiplier is constant from `t` on).
    fn segment(&self, t: u64) -> (u64, f64, f64) {
        let next = self.next_break(t);
        let m0 = self.multiplier(SimTime(t));
        // Linear profiles are continuous (periodic ones wrap with a ramp), so the value at
        // the next breakpoint is the end of this segment's ramp.
        let m1 = match (self.shape, next) {
            (Shape::Step, _) | (_, u64::MAX) => m0,
            (Shape::Linear, n) => self.multiplier(SimTime(n)),
        };
        (next, m0, m1)
    }

    /// The integral of the multiplier over one period (ns × multiplier), if periodic.
    fn period_area(&self) -> Option<f64> {
        let per = self.period?.0;
        let (mut t, mut area) = (0u64, 0.0);
        while t < per {
            let (next, m0, m1) = self.segment(t);
            let end = next.min(per);
            // Within one segment the multiplier is linear, so the clipped part is too.
            let m_end = if next == end {
                m1
            } else {
                m0 + (m1 - m0) * (end - t) as f64 / (next - t) as f64
            };
            area += (m0 + m_end) / 2.0 * (end - t) as f64;
            t = end;
        }
        Some(area)
    }

    /// Advances by `work` units of operational time (ns × multiplier) from real time
    /// `from`; returns the real time at which that much work has accumulated, or `None` if
    /// the multiplier stays 0 for ever after.
    pub fn advance(&self, from: SimTime, work: f64) -> Option<SimTime> {
        debug_assert!(work >= 0.0);
        let mut t = from.0;
        let mut left = work;
        // Whole periods at once: any window of one period accumulates the same area.
        if let (Some(per), Some(area)) = (self.period, self.period_area())
            && area > 0.0
            && left > 2.0 * area
        {
            let k = (left / area).floor() - 1.0;
            t = t.saturating_add((k * per.0 as f64) as u64);
            left -= k * area;
        }
        // Bounded: at most two periods' (or the whole profile's) breakpoints remain.
        for _ in 0..(4 * self.points.len() + 8) {
            let (next, m0, m1) = self.segment(t);
            if next == u64::MAX {
                // Constant for ever.
                if m0 <= 0.0 {
                    return None;
                }
                return Some(SimTime(t.saturating_add((left / m0).ceil() as u64)));
            }
            let dt = (next - t) as f64;
            let area = (m0 + m1) / 2.0 * dt;
            if area >= left && area > 0.0 {
                // Solve ∫₀ˣ (m0 + slope·s) ds = left for x ∈ (0, dt], in the form that is
                // stable for any slope (no cancellation, no threshold): x = 2·left / (m0 +
                // √(m0² + 2·slope·left)). sqrt is correctly rounded (IEEE 754) everywhere.
                let slope = (m1 - m0) / dt;
                let disc = (m0 * m0 + 2.0 * slope * left).max(0.0);
                let x = 2.0 * left / (m0 + disc.sqrt());
                return Some(SimTime(t + (x.ceil() as u64).min(next - t)));
            }
            left -= area;
            t = next;
        }
        unreachable!("a profile with positive area finishes within two periods of breakpoints")
    }

    /// The operational time (ns × multiplier) accumulated over `[from, to)`: the inverse of
    /// [`Profile::advance`] (a run-time rate change keeps the work left to a pending gap).
    pub fn work(&self, from: SimTime, to: SimTime) -> f64 {
        let (mut t, end) = (from.0, to.0.max(from.0));
        let mut acc = 0.0;
        if let (Some(per), Some(area)) = (self.period, self.period_area()) {
            let k = (end - t) / per.0;
            if k > 2 {
                acc += (k - 1) as f64 * area;
                t += (k - 1) * per.0;
            }
        }
        // Bounded: at most two periods' (or the whole profile's) breakpoints remain.
        for _ in 0..(4 * self.points.len() + 8) {
            if t >= end {
                return acc;
            }
            let (next, m0, m1) = self.segment(t);
            let stop = next.min(end);
            let m_end = if next == stop {
                m1
            } else {
                m0 + (m1 - m0) * (stop - t) as f64 / (next - t) as f64
            };
            acc += (m0 + m_end) / 2.0 * (stop - t) as f64;
            t = stop;
        }
        unreachable!("a span of at most three periods crosses a bounded number of breakpoints")
    }

    /// The profile's points: multipliers, or for a profile written in rates (before
    /// [`Profile::resolve`]) rates per second.
    pub fn points(&self) -> &[(SimDuration, f64)] {
        &self.points
    }
}

fn lerp(a: f64, ma: f64, b: f64, mb: f64, t: f64) -> f64 {
    if b <= a { mb } else { ma + (mb - ma) * (t - a) / (b - a) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> SimDuration {
        SimDuration::from_secs(x)
    }

    #[test]
    fn multiplier_table() {
        let lin = Profile::new(vec![(s(10), 1.0), (s(20), 11.0)], Shape::Linear, None).unwrap();
        let step = Profile::new(vec![(s(10), 1.0), (s(20), 11.0)], Shape::Step, None).unwrap();
        let per = Profile::new(vec![(s(0), 0.0), (s(5), 2.0)], Shape::Step, Some(s(10))).unwrap();
        let cases: &[(&Profile, u64, f64)] = &[
            (&lin, 0, 1.0),
            (&lin, 15, 6.0),
            (&lin, 20, 11.0),
            (&lin, 99, 11.0),
            (&step, 15, 1.0),
            (&step, 25, 11.0),
            (&per, 3, 0.0),
            (&per, 7, 2.0),
            (&per, 13, 0.0),
            (&per, 17, 2.0),
        ];
        for (p, t, m) in cases {
            assert_eq!(p.multiplier(SimTime::ZERO + s(*t)), *m, "t={t}");
        }
    }

    #[test]
    fn advance_inverts_the_cumulative_rate() {
        // Ramp 1 → 11 over [10 s, 20 s]: area 60 s. From 0: 10 s of work at ×1 ends at 10 s;
        // 70 s of work ends at 20 s; 81 s ends at 21 s (×11 after).
        let lin = Profile::new(vec![(s(10), 1.0), (s(20), 11.0)], Shape::Linear, None).unwrap();
        let ns = |x: f64| x * 1e9;
        let at = |w: f64| lin.advance(SimTime::ZERO, ns(w)).unwrap().as_s_f64();
        assert!((at(10.0) - 10.0).abs() < 1e-6);
        assert!((at(70.0) - 20.0).abs() < 1e-6);
        assert!((at(81.0) - 21.0).abs() < 1e-6);
        // Half of the ramp's area (30 s) is reached at x with x + x²/2 = 30 → x = 6.937 s.
        let x = -1.0 + (1.0f64 + 60.0).sqrt();
        assert!((at(40.0) - (10.0 + x)).abs() < 1e-6, "{}", at(40.0));
        // On/off: work only accumulates while on.
        let per = Profile::new(vec![(s(0), 0.0), (s(5), 2.0)], Shape::Step, Some(s(10))).unwrap();
        // 12 units: 10 during [5 s, 10 s) at ×2, the other 2 at ×2 from 15 s → 16 s.
        let t = per.advance(SimTime::ZERO, ns(12.0)).unwrap().as_s_f64();
        assert!((t - 16.0).abs() < 1e-6, "{t}");
        // A profile that ends at zero never sends again.
        let off = Profile::new(vec![(s(0), 1.0), (s(5), 0.0)], Shape::Step, None).unwrap();
        assert_eq!(off.advance(SimTime::ZERO + s(6), 1.0), None);
    }

    #[test]
    fn work_inverts_advance() {
        // Ramp 1 → 11 over [10 s, 20 s]: work over [0, 20 s) = 10 + 60 = 70 s; [15 s, 25 s)
        // = (6 + 11)/2 · 5 + 11 · 5 = 97.5 s.
        let lin = Profile::new(vec![(s(10), 1.0), (s(20), 11.0)], Shape::Linear, None).unwrap();
        let w = |a: u64, b: u64| lin.work(SimTime::ZERO + s(a), SimTime::ZERO + s(b)) / 1e9;
        assert!((w(0, 20) - 70.0).abs() < 1e-9);
        assert!((w(15, 25) - 97.5).abs() < 1e-9);
        // Periodic on/off (×2 on [5, 10) of every 10 s): 100 s hold 10 periods → 100 s of work.
        let per = Profile::new(vec![(s(0), 0.0), (s(5), 2.0)], Shape::Step, Some(s(10))).unwrap();
        assert!(
            (per.work(SimTime::ZERO + s(3), SimTime::ZERO + s(103)) / 1e9 - 100.0).abs() < 1e-9
        );
        let back = per
            .advance(SimTime::ZERO + s(3), per.work(SimTime::ZERO + s(3), SimTime::ZERO + s(57)));
        assert_eq!(back, Some(SimTime::ZERO + s(57)));
    }

    /// Review cases: a narrow periodic pulse over hours, and a ramp starting at zero.
    #[test]
    fn long_periodic_advances_and_ramps_from_zero() {
        let us = SimDuration::from_us;
        // ×1 for 1 µs of every 1 ms: 1 s of work takes 1e6 periods ≈ 1000 s.
        let pulse = Profile::new(
            vec![(s(0), 1.0), (us(1), 0.0)],
            Shape::Step,
            Some(SimDuration::from_ms(1)),
        )
        .unwrap();
        let t = pulse.advance(SimTime::ZERO, 1e9).unwrap();
        assert!((t.as_s_f64() - 999.999).abs() < 0.002, "{t}");
        // Ramp 0 → 4e-5 over 12 h: 1 ms of work is reached where 4e-5·x²/(2·43200 s) = 1 ms.
        let ramp = Profile::new(vec![(s(0), 0.0), (s(43_200), 4e-5)], Shape::Linear, None).unwrap();
        let x = ramp.advance(SimTime::ZERO, 1e6).unwrap().as_s_f64();
        let want = (2.0 * 1e-3 * 43_200.0 / 4e-5f64).sqrt();
        assert!((x - want).abs() < 1e-6 * want, "{x} vs {want}");
        // A nearly flat ramp is exact to the nanosecond.
        let flat =
            Profile::new(vec![(s(0), 1000.0), (s(3600), 1000.001)], Shape::Linear, None).unwrap();
        let t = flat.advance(SimTime::ZERO, 1000.0 * 1e9 * 1800.0).unwrap();
        // ∫₀ˣ (1000 + 1e-3·s/3600) ds = 1.8e6 s → x = 1800 s − (1e-3/7200·1800²)/1000 s.
        let want = 1800.0 - (1e-3 / 7200.0 * 1800.0f64.powi(2)) / 1000.0;
        assert!((t.as_s_f64() - want).abs() < 2e-9, "{} vs {want}", t.as_s_f64());
    }

    /// A profile written in rates is the rate itself: over a source of 150/s (mean gap
    /// 6,666,667 ns), "1500/s" is ×10 to the gap's rounding (at most 0.5 ns of 6.67 ms:
    /// 7.5e-8 relative) and 0 is off.
    #[test]
    fn rates_become_multipliers_of_the_mean_gap() {
        let text = r#"Profile(points: [("0s", "150/s"), ("30s", 0), ("90s", "9000/min"), ("2m", "1500/s")], shape: Linear)"#;
        let p: Profile = ron::from_str(text).unwrap();
        assert!(p.in_rates());
        assert_eq!(p.points()[3].1, 1500.0, "rates per second before resolving");
        let gap = 6_666_667.0;
        let m = p.resolve(gap).unwrap();
        assert!(!m.in_rates());
        let want = [1.0, 0.0, 1.0, 10.0];
        for ((_, got), want) in m.points().iter().zip(want) {
            assert!((got - want).abs() <= 7.5e-8 * want, "{got} vs {want}");
        }
        // Written back as written; a multiplier profile is written exactly as before.
        let back = ron::to_string(&p).unwrap();
        assert!(back.contains(r#"("90s","9000/m")"#), "{back}");
        assert_eq!(ron::from_str::<Profile>(&back).unwrap(), p);
        let old = r#"(points:[("0s",1.0),("30s",10.0)],shape:Linear,period:None)"#;
        let read = ron::from_str::<Profile>(&format!("Profile{old}")).unwrap();
        assert_eq!(ron::to_string(&read).unwrap(), old);
        // Multipliers beyond the bound once resolved: the rate over the gap says so.
        let e = p.resolve(1e12).unwrap_err();
        assert!(e.contains("must be in [0, 1e6]") && e.contains("mean gap"), "{e}");
    }

    #[test]
    fn rates_and_multipliers_do_not_mix() {
        let e = ron::from_str::<Profile>(
            r#"Profile(points: [("0s", "150/s"), ("1s", 2.0)], shape: Step)"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("point 1 is a multiplier in a profile written in rates"), "{e}");
        let e = ron::from_str::<Profile>(
            r#"Profile(points: [("0s", "150"), ("1s", 2.0)], shape: Step)"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("expected a rate such as"), "{e}");
    }

    #[test]
    fn validation() {
        let e =
            |pts: Vec<(SimDuration, f64)>, per| Profile::new(pts, Shape::Step, per).unwrap_err();
        assert!(e(vec![], None).contains("expected 1 to"));
        assert!(e(vec![(s(5), 1.0), (s(5), 2.0)], None).contains("must increase"));
        assert!(e(vec![(s(0), -1.0)], None).contains("must be in [0, 1e6]"));
        assert!(e(vec![(s(0), 0.0)], None).contains("at least one multiplier must be > 0"));
        assert!(e(vec![(s(10), 1.0)], Some(s(10))).contains("must lie before it"));
    }
}
