//! A user population: ids, a VIP share, segments, and the class each segment maps to.
//!
//! Every request of a scenario with `users: Some(Users(...))` carries a user id in
//! `1..=count` (a keyed draw per request; a closed-loop user `i` is population user
//! `i + 1`; a trace may hash its rows into users instead). Users `1..=⌈count·vip_share⌉`
//! are VIPs. A user's segment is a function of the run's seed and the user id (a hash
//! mapped through the cumulative shares; shares may sum to less than 1, the rest of the
//! users belong to no segment), so a user stays in one segment for the whole run.
//!
//! Key design decision: the class of a request is resolved once, at its arrival, by
//! precedence: the VIP class (if the user is a VIP and `vip_class` is set), else the class of
//! the user's segment (if set), else the source's class. A segment's class is the run-time
//! parameter `segment.<name>.class` (an `OptCount`: `None` = no override, `Some(k)` = the
//! scenario's k-th class, 0 = the first, P0). A promotion window is two timeline changes of
//! it; requests already in the system keep the class they arrived with.
//!
//! Architecture invariant: at most [`MAX_SEGMENTS`] segments and [`MAX_USERS`] users; the
//! segment shares sum to at most 1; every class index held is below the number of classes.
//!
//! API boundary: [`UsersSpec`] is scenario data; the world keeps a [`Population`] and asks
//! it [`Population::is_vip`], [`Population::segment_of`] and [`Population::class_of`].

use crate::params::{ParamValue, Params as _};
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::rng::{bits_to_open01, mix64};

/// Most users in a population.
pub const MAX_USERS: u64 = 1_000_000_000;
/// Most segments in a population.
pub const MAX_SEGMENTS: usize = 64;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Users")]
pub struct UsersSpec {
    /// Number of users (ids `1..=count`).
    #[serde(deserialize_with = "R::count")]
    pub count: u64,
    /// Share of users who are VIPs (the lowest ids).
    #[serde(default = "D::vip_share", deserialize_with = "R::vip_share")]
    pub vip_share: f64,
    /// The class of VIPs' requests (`None`: by segment or source).
    #[serde(default)]
    pub vip_class: Option<String>,
    #[serde(default)]
    pub segments: Vec<SegmentSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Segment")]
pub struct SegmentSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Share of users in this segment, in [0, 1].
    #[serde(deserialize_with = "crate::params::Ranged::<SegmentParams>::share")]
    pub share: f64,
    /// The class of this segment's requests (`None`: the source's).
    #[serde(default)]
    pub class: Option<String>,
}

impl UsersSpec {
    /// Cross-references and bounds: (field path relative to `users`, message).
    pub fn check(&self, classes: &[&str]) -> Result<(), (String, String)> {
        let known = |c: &Option<String>, at: String| match c {
            Some(c) if !classes.contains(&c.as_str()) => {
                Err((at, format!("no class named \"{c}\"; classes: [{}]", classes.join(", "))))
            }
            _ => Ok(()),
        };
        known(&self.vip_class, "vip_class".into())?;
        if self.segments.len() > MAX_SEGMENTS {
            return Err(("segments".into(), format!("at most {MAX_SEGMENTS} segments")));
        }
        let mut sum = 0.0;
        for (i, s) in self.segments.iter().enumerate() {
            known(&s.class, format!("segments[{i}].class"))?;
            if self.segments[..i].iter().any(|t| t.name == s.name) {
                return Err((
                    format!("segments[{i}].name"),
                    format!("duplicate segment \"{}\"", s.name),
                ));
            }
            sum += s.share;
        }
        if sum > 1.0 + 1e-9 {
            return Err(("segments".into(), format!("shares must sum to at most 1, found {sum}")));
        }
        Ok(())
    }

    /// The registry view of each segment (its class as an index into `classes`).
    pub fn segment_params(&self, classes: &[&str]) -> Vec<SegmentParams> {
        self.segments
            .iter()
            .map(|s| SegmentParams {
                name: s.name.clone(),
                share: s.share,
                class: s
                    .class
                    .as_ref()
                    .map(|c| classes.iter().position(|k| k == c).expect("checked") as u64),
            })
            .collect()
    }

    /// Sets a parameter of segment `i` (sweeps, variants): through its registry view
    /// (its rows), written back with the class index as a class name.
    pub fn set_segment_param(
        &mut self,
        i: usize,
        param: &str,
        v: ParamValue,
        classes: &[&str],
    ) -> Result<(), String> {
        let name = self.segments[i].name.clone();
        let mut view = self.segment_params(classes).swap_remove(i);
        view.set(param, v)?;
        let class = match view.class {
            None => None,
            Some(k) if (k as usize) < classes.len() => Some(classes[k as usize].to_string()),
            Some(k) => {
                return Err(format!(
                    "segment.{name}.{param}: expected None or Some(class index < {}), found Some({k})",
                    classes.len()
                ));
            }
        };
        let s = &mut self.segments[i];
        (s.share, s.class) = (view.share, class);
        Ok(())
    }
}

/// The defaults declared in the population's rows.
type D = crate::params::Defaults<UsersSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<UsersSpec>;

crate::params::declare_params! {
    // A scenario has one population: its instance is `all`.
    UsersSpec: "users", name = |_s| "all",
        scenario_only = [
            segments: "components of their own: `segment.<name>.share`",
            vip_class: "a reference to a class",
        ];
    count: Count { min: 1, max: MAX_USERS }, "users", fixed, "number of users (ids 1..=count)";
    vip_share: Float { min: 0.0, max: 1.0 }, "share", fixed,
        "share of users who are VIPs (the lowest ids)", default = 0.0;
}

/// A segment as the parameter registry sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentParams {
    pub name: String,
    pub share: f64,
    pub class: Option<u64>,
}

crate::params::declare_params! {
    SegmentParams: "segment", name = |s| s.name, state = SegmentRt<'_>;
    share: Float { min: 0.0, max: 1.0 }, "share", fixed,
        "share of users in this segment (the segments' shares sum to at most 1)";
    class: OptCount { min: 0, max: 63 }, "class index", runtime(apply = |s, k| s.set_class(k)),
        "class of the segment's requests from now on: None = the source's, Some(k) = the scenario's k-th class (0 = P0)";
}

/// One segment of the running population, as its run-time row sees it
/// ([`Population::segment_mut`]).
pub struct SegmentRt<'a> {
    class: &'a mut Option<u16>,
    classes: usize,
}

impl SegmentRt<'_> {
    /// The class of the segment's requests from now on (`Err`: not one of the scenario's
    /// classes; the timeline's check refuses such a change first).
    pub fn set_class(&mut self, k: Option<u64>) -> Result<(), String> {
        match k {
            Some(k) if k as usize >= self.classes => Err(format!(
                "expected None or Some(class index < {}), found Some({k})",
                self.classes
            )),
            k => {
                *self.class = k.map(|k| k as u16);
                Ok(())
            }
        }
    }
}

/// The run-time population.
#[derive(Clone, Debug)]
pub struct Population {
    pub count: u64,
    /// Users `1..=vips` are VIPs.
    pub vips: u64,
    pub vip_class: Option<u16>,
    pub names: Vec<String>,
    /// Upper ends of the cumulative segment shares.
    cum: Vec<f64>,
    /// Each segment's class override (run-time changeable).
    pub class: Vec<Option<u16>>,
    salt: u64,
}

impl Population {
    pub fn new(spec: &UsersSpec, classes: &[&str], seed: u64) -> Population {
        let idx = |c: &String| classes.iter().position(|k| k == c).expect("checked") as u16;
        let mut acc = 0.0;
        Population {
            count: spec.count,
            vips: libm::ceil(spec.count as f64 * spec.vip_share) as u64,
            vip_class: spec.vip_class.as_ref().map(idx),
            names: spec.segments.iter().map(|s| s.name.clone()).collect(),
            cum: spec
                .segments
                .iter()
                .map(|s| {
                    acc += s.share;
                    acc
                })
                .collect(),
            class: spec.segments.iter().map(|s| s.class.as_ref().map(idx)).collect(),
            salt: mix64(seed ^ 0x5345_474d_454e_5453), // "SEGMENTS"
        }
    }
    /// Segment `i` (scenario order) for a run-time change, in a scenario of `classes` classes.
    pub fn segment_mut(&mut self, i: usize, classes: usize) -> SegmentRt<'_> {
        SegmentRt { class: &mut self.class[i], classes }
    }
    /// A user id in `1..=count` from a uniform.
    pub fn user_of(&self, u: f64) -> u64 {
        ((u * self.count as f64) as u64).min(self.count - 1) + 1
    }
    pub fn is_vip(&self, user: u64) -> bool {
        user >= 1 && user <= self.vips
    }
    /// The segment of a user (a fixed function of the run's seed and the id).
    pub fn segment_of(&self, user: u64) -> Option<usize> {
        let u = bits_to_open01(mix64(self.salt ^ user));
        self.cum.iter().position(|c| u < *c)
    }
    /// The class of a request of `user` sent by a source of class `source_class`.
    pub fn class_of(&self, user: u64, source_class: u16) -> u16 {
        if self.is_vip(user)
            && let Some(c) = self.vip_class
        {
            return c;
        }
        self.segment_of(user).and_then(|s| self.class[s]).unwrap_or(source_class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> UsersSpec {
        ron::from_str(text).unwrap()
    }

    #[test]
    fn vip_ids_and_class_precedence() {
        let s = spec(
            r#"Users(count: 10, vip_share: 0.25, vip_class: Some("P0"),
                     segments: [(name: "all", share: 1.0, class: Some("P2"))])"#,
        );
        let p = Population::new(&s, &["P0", "P1", "P2"], 1);
        // ⌈10 · 0.25⌉ = 3 VIPs: ids 1, 2, 3.
        assert_eq!((1..=10).map(|u| p.is_vip(u)).filter(|v| *v).count(), 3);
        assert!(p.is_vip(3) && !p.is_vip(4) && !p.is_vip(0));
        // VIP class beats the segment's; the segment's beats the source's.
        assert_eq!(p.class_of(2, 1), 0);
        assert_eq!(p.class_of(7, 1), 2);
        assert_eq!(p.user_of(0.000_001), 1);
        assert_eq!(p.user_of(0.999_999), 10);
    }

    #[test]
    fn checks() {
        let c = ["P0", "P1"];
        let e = |t: &str| spec(t).check(&c).unwrap_err();
        assert_eq!(e(r#"Users(count: 5, vip_class: Some("X"))"#).0, "vip_class");
        assert!(
            e(r#"Users(count: 5, segments: [(name: "a", share: 0.7), (name: "b", share: 0.4)])"#)
                .1
                .contains("at most 1")
        );
        assert_eq!(
            e(r#"Users(count: 5, segments: [(name: "a", share: 0.1), (name: "a", share: 0.1)])"#).0,
            "segments[1].name"
        );
        assert!(ron::from_str::<UsersSpec>("Users(count: 0)").is_err());
        assert!(ron::from_str::<UsersSpec>("Users(count: 3, vip_share: 1.5)").is_err());
        let mut s = spec(r#"Users(count: 5, segments: [(name: "promo", share: 0.2)])"#);
        let view = SegmentParams { name: "promo".into(), share: 0.2, class: None };
        assert_eq!(s.segment_params(&c), vec![view]);
        s.set_segment_param(0, "class", ParamValue::OptCount(Some(0)), &c).unwrap();
        assert_eq!(s.segments[0].class.as_deref(), Some("P0"));
        assert!(s.set_segment_param(0, "class", ParamValue::OptCount(Some(2)), &c).is_err());
        s.set_segment_param(0, "share", ParamValue::Float(0.5), &c).unwrap();
        assert_eq!((s.segments[0].share, s.segments[0].class.as_deref()), (0.5, Some("P0")));
    }
}
