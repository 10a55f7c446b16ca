//! The typed parameter registry: one namespace for every configurable value.
//!
//! Every parameter of every component instance has a path (`gate.llm.permits`), a type with
//! its valid range, a unit, its value in the scenario (the default a sweep or timeline
//! overrides), whether it may change during a run, and a one-line doc. Sweeps, the run-time
//! timeline, validation, `stormglass explain` and the GUI's knobs all go through it.
//!
//! Architecture invariant: a parameter value is always parsed with its own type
//! ([`ParamType::deserialize_value`], a `DeserializeSeed`), never through an untyped
//! intermediate that would lose enum names (`Exponential(mean: "1s")` stays a
//! distribution). Range errors are raised inside deserialization so the format layer can
//! attach line:column.
//!
//! API boundary: the registry knows types and paths; components implement [`Params`] to
//! list, read and write their own parameters by name.

use serde::de::{DeserializeSeed, Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fmt;

/// The type (and valid range) of a parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    /// A whole number in `[min, max]`.
    Count { min: u64, max: u64 },
    /// `None` (unbounded) or `Some(n)` with `n` in `[min, max]`.
    OptCount { min: u64, max: u64 },
    /// A duration string in `[min, max]`.
    Duration { min: SimDuration, max: SimDuration },
    /// A distribution of durations (`Exponential(mean: "100ms")`).
    DurationDist,
    /// A distribution of numbers (token counts: `LogNormal(mean: 800.0, cv: 1.0)`).
    NumberDist,
    /// A real number in `[min, max]`.
    Float { min: f64, max: f64 },
    /// A real number in `(above, max]`: a lower bound the value must exceed (a percentage
    /// in (0, 100], a rate > 0), which a closed `[min, max]` can only approximate.
    FloatAbove { above: f64, max: f64 },
    /// `true` or `false`.
    Bool,
    /// One of a fixed set of named choices, written bare as in the scenario
    /// (`transition_to_state_after_wait_duration: CLOSED`): the names a [`ParamChoice`]
    /// enum's serde form uses, in declaration order.
    Enum { choices: &'static [&'static str] },
    /// One of a fixed set of names written as a string, as the scenario writes them
    /// (`retry_on: ["timeout", "upstream_5xx"]`: a reason's stable name).
    Name { choices: &'static [&'static str] },
    /// A list of `min_len..=max_len` values, each of type `of` (a dispatcher's per-class
    /// weights, the reasons a retry retries), written `[a, b, …]`; a sweep or a variant
    /// gives the whole list.
    List { of: &'static ParamType, min_len: usize, max_len: usize },
}

/// A typed parameter value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamValue {
    Count(u64),
    OptCount(Option<u64>),
    Duration(SimDuration),
    DurationDist(Dist<SimDuration>),
    NumberDist(Dist<f64>),
    Float(f64),
    Bool(bool),
    /// A choice of a [`ParamType::Enum`], by name (`"CLOSED"`).
    Enum(String),
    /// A name of a [`ParamType::Name`] (`"timeout"`).
    Name(String),
    /// The values of a [`ParamType::List`], in order.
    List(Vec<ParamValue>),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Count(n) => write!(f, "{n}"),
            ParamValue::OptCount(None) => write!(f, "None"),
            ParamValue::OptCount(Some(n)) => write!(f, "Some({n})"),
            ParamValue::Duration(d) => write!(f, "\"{d}\""),
            ParamValue::DurationDist(d) => write!(f, "{}", dist_to_text(d)),
            ParamValue::NumberDist(d) => write!(f, "{}", number_dist_to_text(d)),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Enum(c) => f.write_str(c),
            ParamValue::Name(n) => write!(f, "\"{n}\""),
            ParamValue::List(items) => {
                f.write_str("[")?;
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// A distribution of durations in scenario syntax, e.g. `Exponential(mean: "100ms")`.
pub fn dist_to_text(d: &Dist<SimDuration>) -> String {
    dist_text(d, |v| format!("\"{v}\""))
}

/// A distribution of numbers in scenario syntax, e.g. `LogNormal(mean: 800.0, cv: 1.0)`.
pub fn number_dist_to_text(d: &Dist<f64>) -> String {
    dist_text(d, |v| format!("{v:?}"))
}

/// A distribution written with each value as `value` writes it.
fn dist_text<V: sim_core::dist::DistValue>(d: &Dist<V>, value: impl Fn(&V) -> String) -> String {
    use sim_core::DistSpec as S;
    match d.spec() {
        S::Constant(v) => format!("Constant({})", value(v)),
        S::Exponential { mean } => format!("Exponential(mean: {})", value(mean)),
        S::Poisson { rate } => format!("Poisson(rate: \"{rate}\")"),
        S::LogNormal { mean, cv, p50, p99 } => {
            let fields: Vec<String> = [("mean", mean), ("p50", p50), ("p99", p99)]
                .into_iter()
                .filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}: {}", value(v))))
                .chain(cv.map(|cv| format!("cv: {cv}")))
                .collect();
            format!("LogNormal({})", fields.join(", "))
        }
        S::Gamma { mean, cv } => format!("Gamma(mean: {}, cv: {cv})", value(mean)),
        S::Weibull { scale, shape } => {
            format!("Weibull(scale: {}, shape: {shape})", value(scale))
        }
        S::Pareto { scale, shape } => format!("Pareto(scale: {}, shape: {shape})", value(scale)),
        S::Uniform { low, high } => format!("Uniform(low: {}, high: {})", value(low), value(high)),
        S::Empirical { samples } => format!("Empirical(samples: [{} values])", samples.len()),
    }
}

impl ParamType {
    /// What a value of this type looks like, for error messages and `explain`.
    pub fn describe(&self) -> String {
        match self {
            ParamType::Count { min, max } => format!("an integer in [{min}, {max}]"),
            ParamType::OptCount { min, max } => {
                format!("None or Some(n) with n an integer in [{min}, {max}]")
            }
            ParamType::Duration { min, max } => {
                format!("a duration string in [\"{min}\", \"{max}\"]")
            }
            ParamType::DurationDist => {
                "a distribution of durations, e.g. Exponential(mean: \"100ms\")".into()
            }
            ParamType::NumberDist => {
                "a distribution of numbers, e.g. LogNormal(mean: 800.0, cv: 1.0)".into()
            }
            ParamType::Float { min, max } => format!("a number in [{min}, {max}]"),
            ParamType::FloatAbove { above, max } => format!("a number in ({above}, {max}]"),
            ParamType::Bool => "true or false".into(),
            ParamType::Enum { choices } => format!("one of {}", choices.join(", ")),
            ParamType::Name { choices } => format!("one of \"{}\"", choices.join("\", \"")),
            ParamType::List { of, min_len, max_len } => {
                format!("a list of {min_len} to {max_len} entries, each {}", of.describe())
            }
        }
    }

    /// Parses a value of this type from any serde deserializer, checking the range.
    pub fn deserialize_value<'de, D: Deserializer<'de>>(
        &self,
        d: D,
    ) -> Result<ParamValue, D::Error> {
        let out_of_range = |found: String| {
            D::Error::custom(format!("expected {}, found {found}", self.describe()))
        };
        Ok(match self {
            ParamType::Count { min, max } => {
                let n = match Number::deserialize(d)? {
                    Number::Whole(n) => n,
                    Number::Other(s, f) => {
                        return Err(out_of_range(not_whole(&s, f, |s| s.into())));
                    }
                };
                if n < *min || n > *max {
                    return Err(out_of_range(n.to_string()));
                }
                ParamValue::Count(n)
            }
            ParamType::OptCount { min, max } => {
                let n = match Option::<Number>::deserialize(d)? {
                    None => None,
                    Some(Number::Whole(n)) => Some(n),
                    Some(Number::Other(s, f)) => {
                        return Err(out_of_range(not_whole(&s, f, |s| format!("Some({s})"))));
                    }
                };
                if let Some(n) = n
                    && (n < *min || n > *max)
                {
                    return Err(out_of_range(format!("Some({n})")));
                }
                ParamValue::OptCount(n)
            }
            ParamType::Duration { min, max } => {
                let v = SimDuration::deserialize(d)?;
                if v < *min || v > *max {
                    return Err(out_of_range(format!("\"{v}\"")));
                }
                ParamValue::Duration(v)
            }
            ParamType::DurationDist => ParamValue::DurationDist(Dist::deserialize(d)?),
            ParamType::NumberDist => ParamValue::NumberDist(Dist::deserialize(d)?),
            ParamType::Float { min, max } => {
                let x = f64::deserialize(d)?;
                if !(x >= *min && x <= *max) {
                    return Err(out_of_range(float_text(x)));
                }
                ParamValue::Float(x)
            }
            ParamType::FloatAbove { above, max } => {
                let x = f64::deserialize(d)?;
                if !(x > *above && x <= *max) {
                    return Err(out_of_range(float_text(x)));
                }
                ParamValue::Float(x)
            }
            ParamType::Bool => ParamValue::Bool(bool::deserialize(d)?),
            ParamType::Enum { choices } => {
                let c = d.deserialize_enum("", choices, ChoiceVisitor)?;
                if !choices.contains(&c.as_str()) {
                    return Err(out_of_range(c));
                }
                ParamValue::Enum(c)
            }
            ParamType::Name { choices } => {
                let n = String::deserialize(d)?;
                if !choices.contains(&n.as_str()) {
                    return Err(out_of_range(format!("\"{n}\"")));
                }
                ParamValue::Name(n)
            }
            ParamType::List { of, min_len, max_len } => {
                let items = d.deserialize_seq(ListVisitor { of, max_len: *max_len })?;
                if items.len() < *min_len || items.len() > *max_len {
                    return Err(out_of_range(format!("{} entries", items.len())));
                }
                ParamValue::List(items)
            }
        })
    }

    /// Checks that a value has this type and lies in range.
    pub fn check(&self, v: &ParamValue) -> Result<(), String> {
        let ok = match (self, v) {
            (ParamType::Count { min, max }, ParamValue::Count(n)) => n >= min && n <= max,
            (ParamType::OptCount { min, max }, ParamValue::OptCount(n)) => {
                n.is_none_or(|n| n >= *min && n <= *max)
            }
            (ParamType::Duration { min, max }, ParamValue::Duration(d)) => d >= min && d <= max,
            (ParamType::DurationDist, ParamValue::DurationDist(_)) => true,
            (ParamType::NumberDist, ParamValue::NumberDist(_)) => true,
            (ParamType::Float { min, max }, ParamValue::Float(x)) => x >= min && x <= max,
            (ParamType::FloatAbove { above, max }, ParamValue::Float(x)) => x > above && x <= max,
            (ParamType::Bool, ParamValue::Bool(_)) => true,
            (ParamType::Enum { choices }, ParamValue::Enum(c)) => choices.contains(&c.as_str()),
            (ParamType::Name { choices }, ParamValue::Name(n)) => choices.contains(&n.as_str()),
            (ParamType::List { of, min_len, max_len }, ParamValue::List(items)) => {
                (*min_len..=*max_len).contains(&items.len())
                    && items.iter().all(|x| of.check(x).is_ok())
            }
            _ => false,
        };
        if ok { Ok(()) } else { Err(format!("expected {}, found {v}", self.describe())) }
    }
}

/// A number as an error message quotes it: in scientific notation when very large
/// (`1e308`, never 309 digits), as written otherwise.
fn float_text(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e16 { format!("{x:e}") } else { x.to_string() }
}

/// The entries of a list parameter, each parsed with the element type (its range checked
/// where it stands, so the error points at the entry); more than `max_len` is refused as
/// soon as one too many is read (a list has a bound like everything else).
struct ListVisitor<'a> {
    of: &'a ParamType,
    max_len: usize,
}

impl<'de> serde::de::Visitor<'de> for ListVisitor<'_> {
    type Value = Vec<ParamValue>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of values, each {}", self.of.describe())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(x) = seq.next_element_seed(self.of)? {
            if out.len() == self.max_len {
                return Err(A::Error::custom(format!(
                    "expected at most {} entries, found more",
                    self.max_len
                )));
            }
            out.push(x);
        }
        Ok(out)
    }
}

/// A choice read by its name: a bare identifier (`CLOSED`, a unit variant in RON), or a
/// string in formats that write enums as strings. The name is checked by the caller.
struct ChoiceVisitor;

impl<'de> serde::de::Visitor<'de> for ChoiceVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the name of a choice")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<String, A::Error> {
        use serde::de::VariantAccess as _;
        let (name, rest) = data.variant_seed(ChoiceName)?;
        rest.unit_variant()?;
        Ok(name)
    }
}

/// The variant name of an enum, read as an identifier (what a derived enum reads).
struct ChoiceName;

impl<'de> DeserializeSeed<'de> for ChoiceName {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_identifier(ChoiceVisitor)
    }
}

/// A number read as written, for an integer parameter: `60.9` or `0.5` comes back as it
/// stands (to be refused) instead of being read up to its decimal point, as a `u64` parser
/// given the text `60.9, 70]` would (`60`, silently), and a negative number is quoted.
enum Number {
    Whole(u64),
    /// Not a whole number ≥ 0, as written (`60.9`, `-3`), and whether it is fractional.
    Other(String, bool),
}

/// `found …` for a number that is not a whole one, `wrap` putting it in context (`Some(…)`).
fn not_whole(text: &str, fractional: bool, wrap: impl Fn(&str) -> String) -> String {
    let note = if fractional { " (a fractional value is never rounded)" } else { "" };
    format!("{}{note}", wrap(text))
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Number, E> {
                Ok(Number::Whole(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Number, E> {
                Ok(u64::try_from(n)
                    .map_or_else(|_| Number::Other(n.to_string(), false), Number::Whole))
            }
            fn visit_u128<E: serde::de::Error>(self, n: u128) -> Result<Number, E> {
                Ok(u64::try_from(n)
                    .map_or_else(|_| Number::Other(n.to_string(), false), Number::Whole))
            }
            fn visit_i128<E: serde::de::Error>(self, n: i128) -> Result<Number, E> {
                Ok(u64::try_from(n)
                    .map_or_else(|_| Number::Other(n.to_string(), false), Number::Whole))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Number, E> {
                Ok(Number::Other(x.to_string(), true))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> DeserializeSeed<'de> for &ParamType {
    type Value = ParamValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParamValue, D::Error> {
        self.deserialize_value(d)
    }
}

/// One parameter of one component instance.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    /// `<kind>.<instance>.<name>`.
    pub path: String,
    /// The path's parts, typed at registration (never parsed back from `path`): the
    /// component kind (`gate`), the instance's name (`llm`), the parameter (`permits`).
    pub kind: &'static str,
    pub instance: String,
    pub name: &'static str,
    /// Whom it belongs to, typed at registration: what sweeps and changes dispatch on.
    pub owner: crate::components::Owner,
    pub ty: ParamType,
    /// Unit of the value (`"ns"` for durations, `"permits"`, `"servers"`…).
    pub unit: &'static str,
    /// The value the scenario gives it.
    pub value: ParamValue,
    /// May it change while a run is in progress (timeline, GUI)?
    pub runtime: bool,
    pub doc: &'static str,
}

impl ParamSpec {
    /// The choices of an enum parameter, in declaration order (`None` for other types):
    /// what a combo box lists.
    pub fn choices(&self) -> Option<&'static [&'static str]> {
        match self.ty {
            ParamType::Enum { choices } => Some(choices),
            _ => None,
        }
    }
    /// The scenario's choice of an enum parameter (`None` for other types).
    pub fn choice(&self) -> Option<&str> {
        match &self.value {
            ParamValue::Enum(c) => Some(c),
            _ => None,
        }
    }
}

/// The declaration of one parameter of a component kind (without instance path or value).
#[derive(Clone, Debug)]
pub struct ParamDecl {
    pub name: &'static str,
    pub ty: ParamType,
    pub unit: &'static str,
    pub runtime: bool,
    pub doc: &'static str,
    /// The value a scenario that does not write the field gets, when the row declares it
    /// (`default = …`; serde reads it through [`Defaults`]); `None`: required, or given by
    /// other fields.
    pub default: Option<ParamValue>,
}

/// The defaults declared in a kind's [`declare_params!`] rows, as the functions serde's
/// `default = "…"` names: with `type D = Defaults<FooSpec>;` a field says
/// `#[serde(default = "D::permits")]` and the value is written once, in the row
/// (`permits: Count { … }, …, default = 100`). Each function returns the field's type (any
/// [`ParamField`]).
pub struct Defaults<T>(std::marker::PhantomData<T>);

/// The parsers of a kind's fields with their [`declare_params!`] row's type and range, as
/// the functions serde's `deserialize_with = "…"` names: with `type R = Ranged<FooSpec>;` a
/// field says `#[serde(deserialize_with = "R::permits")]` and the range is stated once, in
/// the row; the error (`expected an integer in [1, 1000000], found 0`) gets line:column
/// from the format layer.
pub struct Ranged<T>(std::marker::PhantomData<T>);

/// [`Ranged`] for a field that is an `Option` written without `Some(…)` (present means
/// `Some`, as `crate::validate::present` reads it): `#[serde(default, deserialize_with =
/// "RangedSome::<FooSpec>::max_attempts")]` parses the value with the row's type and range
/// (a class's override of a kind's parameter, an optional cap).
pub struct RangedSome<T>(std::marker::PhantomData<T>);

/// Parses a field's value with its row's type ([`ParamType::deserialize_value`]).
pub fn deserialize_ranged<'de, D: Deserializer<'de>, T: ParamField>(
    ty: ParamType,
    d: D,
) -> Result<T, D::Error> {
    let v = ty.deserialize_value(d)?;
    let found = v.to_string();
    T::from_value(v)
        .ok_or_else(|| D::Error::custom(format!("expected {}, found {found}", ty.describe())))
}

/// Parses a present value (a field written without `Some(…)`) with its row's type: an
/// `OptCount` row's value as a `Count` of the same range ([`RangedSome`]).
pub fn deserialize_ranged_some<'de, D: Deserializer<'de>, T: ParamField>(
    ty: ParamType,
    d: D,
) -> Result<Option<T>, D::Error> {
    let ty = match ty {
        ParamType::OptCount { min, max } => ParamType::Count { min, max },
        ty => ty,
    };
    deserialize_ranged(ty, d).map(Some)
}

/// [`Ranged`] for an `Option` field written `None` or `Some(…)` whose row is the value's
/// own type (a queue-wait timeout, registered only where one is set): the value inside
/// `Some` is parsed with the row's type and range.
pub struct RangedOpt<T>(std::marker::PhantomData<T>);

/// Parses `None` or `Some(v)`, `v` with the row's type ([`RangedOpt`]).
pub fn deserialize_ranged_opt<'de, D: Deserializer<'de>, T: ParamField>(
    ty: ParamType,
    d: D,
) -> Result<Option<T>, D::Error> {
    struct V<T>(ParamType, std::marker::PhantomData<T>);
    impl<'de, T: ParamField> serde::de::Visitor<'de> for V<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "None or Some(v) with v {}", self.0.describe())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Option<T>, D2::Error> {
            deserialize_ranged(self.0, d).map(Some)
        }
    }
    d.deserialize_option(V(ty, std::marker::PhantomData))
}

/// Implemented by every component spec: list, read and write parameters by name.
pub trait Params {
    /// The path prefix kind, e.g. `"gate"`; instances live under `<kind>.<name>.`.
    const KIND: &'static str;
    fn instance_name(&self) -> &str;
    fn decls() -> Vec<ParamDecl>;
    /// `None` when the parameter is unknown or this instance does not have it.
    fn get(&self, param: &str) -> Option<ParamValue>;
    /// The field path (relative to the component in the scenario file) that holds a
    /// parameter, for error messages; by default the parameter's own name.
    fn field_of(param: &str) -> String {
        param.to_string()
    }
    /// Writes a value already checked against the declared type.
    fn set(&mut self, param: &str, value: ParamValue) -> Result<(), String>;
    /// The fields of the declaration that are set in the scenario only, not parameters,
    /// each with the reason (a reference to another component, a structure valid only as a
    /// whole): `scenario_only = [...]` in its `declare_params!` header. Every other field a
    /// declaration writes is a registered parameter ([`fields::unregistered_fields`]).
    const SCENARIO_ONLY: &'static [(&'static str, &'static str)] = &[];
}

/// The rows of a [`declare_params!`] table: a kind's parameters by name (what [`Params`]
/// of a kind declared with it reads), or a part's that its component lists under indexed
/// names (`rule3.count`: [`indexed_decls`]).
pub trait ParamRows {
    fn row_decls() -> Vec<ParamDecl>;
    fn row_get(&self, param: &str) -> Option<ParamValue>;
    fn row_set(&mut self, param: &str, value: ParamValue) -> Result<(), String>;
    /// The field path of a row declared with `field = "…"` (a value held in a sub-structure).
    fn row_field(param: &str) -> Option<&'static str>;
}

/// The declarations `<prefix><i>.<name>` for i < `n` of a part with declarations `rows`
/// (the 16 flow rules of `flow.<name>`), built once: the names are leaked into `cache`
/// (bounded: `n` × the rows, once per process), since declarations name parameters with
/// `&'static str`.
pub fn indexed_decls(
    prefix: &str,
    n: usize,
    rows: fn() -> Vec<ParamDecl>,
    cache: &'static std::sync::OnceLock<Vec<ParamDecl>>,
) -> Vec<ParamDecl> {
    cache
        .get_or_init(|| {
            let rows = rows();
            (0..n)
                .flat_map(|i| {
                    rows.iter().map(move |d| ParamDecl {
                        name: Box::leak(format!("{prefix}{i}.{}", d.name).into_boxed_str()),
                        ..d.clone()
                    })
                })
                .collect()
        })
        .clone()
}

/// The declarations `<field>.<name>` of an optional part held in the field `field`
/// (`thread_overhead.cpu_cores` of an app): listed where the part is present, since `get`
/// finds nothing in an absent one; built once, the names leaked into `cache` (bounded).
pub fn part_decls(
    field: &str,
    rows: fn() -> Vec<ParamDecl>,
    cache: &'static std::sync::OnceLock<Vec<ParamDecl>>,
) -> Vec<ParamDecl> {
    cache
        .get_or_init(|| {
            rows()
                .into_iter()
                .map(|d| ParamDecl {
                    name: Box::leak(format!("{field}.{}", d.name).into_boxed_str()),
                    ..d
                })
                .collect()
        })
        .clone()
}

/// `rule3.count` → (3, "count") for the prefix `rule`.
pub fn split_indexed<'a>(prefix: &str, p: &'a str) -> Option<(usize, &'a str)> {
    let (r, field) = p.split_once('.')?;
    Some((r.strip_prefix(prefix)?.parse().ok()?, field))
}

/// A component's run-time state as a change during a run reaches it (timeline, session,
/// GUI): generated by [`declare_params!`] from the rows whose run-time flag names the
/// setter (`runtime(apply = |g, n| g.set_permits(n))`), so a parameter's name is written
/// once, in its row.
pub trait ApplyParam {
    /// Applies a change already checked against the registry (a run-time parameter of this
    /// component, of the right type and range). `Err`: refused (no run-time parameter of
    /// that name here, or a cross-field rule); the value in force stays the old one.
    fn apply_param(&mut self, param: &str, v: ParamValue, now: SimTime) -> Result<(), String>;
}

/// What a row's run-time setter returns: nothing, or a refusal (a cross-field rule).
pub trait Applied {
    fn applied(self) -> Result<(), String>;
}
impl Applied for () {
    fn applied(self) -> Result<(), String> {
        Ok(())
    }
}
impl Applied for Result<(), String> {
    fn applied(self) -> Result<(), String> {
        self
    }
}

/// A governor kind's declaration (the `spec` of a row of the kind table,
/// `kinds.rs`): its parameters, plus the kind's static properties.
pub trait GovernorSpec: Params {
    /// Changes of its parameters may carry `reload: true` (a Sentinel rule reload).
    const RELOADABLE: bool = false;
    /// Why the kind cannot run in shadow mode (completes "Shadow(Kind(\"name\")): …"),
    /// or `None` when it can.
    const NOT_SHADOWABLE: Option<&'static str> = None;
    /// The reasons this governor refuses calls with on its own (a local gate's
    /// `gate_full`, a limiter's `rate_limited`, a breaker's `breaker_open`): refusals that
    /// climb back through the governors above it in a stack, for the check that a breaker
    /// there does not count them as failures (`ScenarioSpec::breaker_warnings`, in the schema).
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        Vec::new()
    }
    /// For a breaker: whether it records this outcome as a failure (by its
    /// `record_exceptions` and `ignore_exceptions`); `None` (the default) for other kinds.
    fn records_failure(&self, _o: crate::outcome::Outcome) -> Option<bool> {
        None
    }
}

/// All parameters of a scenario, by path (sorted: `explain` output is stable).
#[derive(Clone, Debug, Default)]
pub struct Registry {
    specs: BTreeMap<String, ParamSpec>,
}

impl Registry {
    pub fn add_component<P: Params>(&mut self, c: &P, owner: crate::components::Owner) {
        for d in P::decls() {
            let path = format!("{}.{}.{}", P::KIND, c.instance_name(), d.name);
            // A declared parameter this instance does not have (a trace source has no
            // inter-arrival distribution) is not listed.
            let Some(value) = c.get(d.name) else { continue };
            let prev = self.specs.insert(
                path.clone(),
                ParamSpec {
                    path,
                    kind: P::KIND,
                    instance: c.instance_name().to_string(),
                    name: d.name,
                    owner,
                    ty: d.ty,
                    unit: d.unit,
                    value,
                    runtime: d.runtime,
                    doc: d.doc,
                },
            );
            assert!(prev.is_none(), "duplicate parameter path");
        }
    }
    pub fn get(&self, path: &str) -> Option<&ParamSpec> {
        self.specs.get(path)
    }
    pub fn iter(&self) -> impl Iterator<Item = &ParamSpec> {
        self.specs.values()
    }
    pub fn len(&self) -> usize {
        self.specs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
    /// An error for an unknown path, naming the closest known paths.
    pub fn unknown(&self, path: &str) -> String {
        let prefix = path.rsplit_once('.').map(|(p, _)| p).unwrap_or(path);
        let near: Vec<&str> =
            self.specs.keys().filter(|k| k.starts_with(prefix)).map(|s| s.as_str()).collect();
        if near.is_empty() {
            let all: Vec<&str> = self.specs.keys().map(|s| s.as_str()).collect();
            format!("unknown parameter path `{path}`; known paths: {}", all.join(", "))
        } else {
            format!("unknown parameter path `{path}`; did you mean one of: {}", near.join(", "))
        }
    }
}

/// A Rust field type a parameter can have, with its [`ParamValue`] variant: what the
/// generated `get` and `set` of [`declare_params!`] convert through.
pub trait ParamField: Sized {
    fn to_value(&self) -> ParamValue;
    /// `None` when the value has another type.
    fn from_value(v: ParamValue) -> Option<Self>;
}

macro_rules! param_field {
    ($t:ty, $variant:ident) => {
        impl ParamField for $t {
            fn to_value(&self) -> ParamValue {
                ParamValue::$variant(self.clone())
            }
            fn from_value(v: ParamValue) -> Option<Self> {
                match v {
                    ParamValue::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}
param_field!(u64, Count);
param_field!(Option<u64>, OptCount);
param_field!(SimDuration, Duration);
param_field!(Dist<SimDuration>, DurationDist);
param_field!(Dist<f64>, NumberDist);
param_field!(f64, Float);
param_field!(bool, Bool);

/// A `u32` field (Sentinel's `coldFactor`) is a [`ParamType::Count`] whose row's range fits
/// in 32 bits.
impl ParamField for u32 {
    fn to_value(&self) -> ParamValue {
        ParamValue::Count(u64::from(*self))
    }
    fn from_value(v: ParamValue) -> Option<Self> {
        match v {
            ParamValue::Count(n) => u32::try_from(n).ok(),
            _ => None,
        }
    }
}

/// A reason as a parameter's value ([`ParamType::Name`] over its stable
/// names: a retry's `retry_on`).
impl ParamField for crate::outcome::Reason {
    fn to_value(&self) -> ParamValue {
        ParamValue::Name(self.name().to_string())
    }
    fn from_value(v: ParamValue) -> Option<Self> {
        match v {
            ParamValue::Name(n) => crate::outcome::Reason::from_name(&n),
            _ => None,
        }
    }
}

/// A list field ([`ParamType::List`]): each entry converts through its own type.
impl<T: ParamField> ParamField for Vec<T> {
    fn to_value(&self) -> ParamValue {
        ParamValue::List(self.iter().map(ParamField::to_value).collect())
    }
    fn from_value(v: ParamValue) -> Option<Self> {
        match v {
            ParamValue::List(items) => items.into_iter().map(T::from_value).collect(),
            _ => None,
        }
    }
}

/// A Rust enum whose value is a parameter ([`ParamType::Enum`]): its choices by the names
/// the scenario writes. Implemented by [`param_choices!`], which declares the enum.
pub trait ParamChoice: Sized + Copy + 'static {
    /// The names, in declaration order.
    const CHOICES: &'static [&'static str];
    fn choice(&self) -> &'static str;
    fn from_choice(name: &str) -> Option<Self>;
}

mod declare;
pub mod fields;
pub(crate) use declare::{declare_params, param_choices};

/// Splits `kind.name.param` (the instance name may not contain dots).
pub fn split_path(path: &str) -> Option<(&str, &str, &str)> {
    let (kind, rest) = path.split_once('.')?;
    let (name, param) = rest.split_once('.')?;
    Some((kind, name, param))
}

#[cfg(test)]
mod tests;
