//! Table tests of the parameter registry (types, choices, indexed rows).

use super::*;

param_choices! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    enum Mode {
        Fast = "FAST",
        /// A documented variant.
        Slow = "SLOW_START",
    }
}

/// A `param_choices!` enum: its serde names are the choices, and a value converts both
/// ways through `ParamField`; a checked value must be one of the choices.
#[test]
fn choices_are_the_serde_names() {
    assert_eq!(Mode::CHOICES, &["FAST", "SLOW_START"]);
    assert_eq!(ron::to_string(&Mode::Slow).unwrap(), "SLOW_START");
    assert_eq!(ron::from_str::<Mode>("FAST").unwrap(), Mode::Fast);
    assert_eq!(Mode::Slow.to_value(), ParamValue::Enum("SLOW_START".into()));
    assert_eq!(Mode::from_value(ParamValue::Enum("FAST".into())), Some(Mode::Fast));
    assert_eq!(Mode::from_value(ParamValue::Enum("fast".into())), None);
    assert_eq!(Mode::from_value(ParamValue::Bool(true)), None);
    let ty = ParamType::Enum { choices: Mode::CHOICES };
    assert_eq!(ty.describe(), "one of FAST, SLOW_START");
    assert!(ty.check(&ParamValue::Enum("FAST".into())).is_ok());
    assert_eq!(
        ty.check(&ParamValue::Enum("MEDIUM".into())),
        Err("expected one of FAST, SLOW_START, found MEDIUM".into())
    );
    assert!(ty.check(&ParamValue::Count(1)).is_err());
}

/// A list of one to three counts in [1, 9] (the list rows of the table below).
const LIST_OF_COUNTS: ParamType =
    ParamType::List { of: &ParamType::Count { min: 1, max: 9 }, min_len: 1, max_len: 3 };

#[test]
fn typed_parsing_keeps_enum_names_and_checks_ranges() {
    let dist = ParamType::DurationDist;
    let mut de = ron::Deserializer::from_str("Exponential(mean: \"1s\")").unwrap();
    let v = (&dist).deserialize(&mut de).unwrap();
    assert_eq!(v.to_string(), "Exponential(mean: \"1s\")");

    let cases: &[(ParamType, &str, Result<&str, &str>)] = &[
        (ParamType::Count { min: 1, max: 10 }, "3", Ok("3")),
        (ParamType::Count { min: 1, max: 10 }, "0", Err("expected an integer in [1, 10], found 0")),
        (ParamType::OptCount { min: 1, max: 10 }, "None", Ok("None")),
        (ParamType::OptCount { min: 1, max: 10 }, "Some(11)", Err("found Some(11)")),
        (
            ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) },
            "\"2m\"",
            Err("expected a duration string in [\"0s\", \"1m\"], found \"2m\""),
        ),
        (ParamType::Float { min: 0.0, max: 1.0 }, "0.5", Ok("0.5")),
        // A distribution of numbers is written back as it parses (a GUI text knob).
        (
            ParamType::NumberDist,
            "LogNormal(mean: 800.0, cv: 1.5)",
            Ok("LogNormal(mean: 800.0, cv: 1.5)"),
        ),
        // (and what it writes parses again: a whole `cv` is written `1`)
        (
            ParamType::NumberDist,
            "LogNormal(mean: 800.0, cv: 1)",
            Ok("LogNormal(mean: 800.0, cv: 1)"),
        ),
        (ParamType::NumberDist, "Constant(128.0)", Ok("Constant(128.0)")),
        (ParamType::NumberDist, "Exponential(mean: \"1s\")", Err("")),
        // An open lower bound: the bound itself is refused, anything above it is in range.
        (ParamType::FloatAbove { above: 0.0, max: 100.0 }, "1e-300", Ok("0.000")),
        (
            ParamType::FloatAbove { above: 0.0, max: 100.0 },
            "0",
            Err("expected a number in (0, 100], found 0"),
        ),
        (ParamType::FloatAbove { above: 0.0, max: 100.0 }, "100.5", Err("found 100.5")),
        // Whole numbers are read as written, never up to the decimal point.
        (
            ParamType::Count { min: 1, max: 100 },
            "60.9, 70]",
            Err(
                "expected an integer in [1, 100], found 60.9 (a fractional value is never rounded)",
            ),
        ),
        (ParamType::Count { min: 1, max: 100 }, "0.5", Err("found 0.5 (a fractional")),
        (ParamType::Count { min: 0, max: 100 }, "-3", Err("found -3")),
        (
            ParamType::OptCount { min: 1, max: 100 },
            "Some(2.5)",
            Err("found Some(2.5) (a fractional value is never rounded)"),
        ),
        (ParamType::OptCount { min: 1, max: 100 }, "Some(7)", Ok("Some(7)")),
        // A choice is a bare name, one of the declared ones.
        (ParamType::Enum { choices: &["OPEN", "CLOSED"] }, "CLOSED", Ok("CLOSED")),
        (
            ParamType::Enum { choices: &["OPEN", "CLOSED"] },
            "HALF_OPEN",
            Err("expected one of OPEN, CLOSED, found HALF_OPEN"),
        ),
        (ParamType::Enum { choices: &["OPEN", "CLOSED"] }, "3", Err("")),
        // A name is a string, one of the declared ones (a retry's reasons).
        (ParamType::Name { choices: &["timeout", "shed"] }, "\"shed\"", Ok("\"shed\"")),
        (
            ParamType::Name { choices: &["timeout", "shed"] },
            "\"oops\"",
            Err("expected one of \"timeout\", \"shed\", found \"oops\""),
        ),
        (ParamType::Name { choices: &["timeout", "shed"] }, "shed", Err("")),
        // A list: each entry with the element type, its length within the bounds.
        (LIST_OF_COUNTS, "[1, 3, 7]", Ok("[1, 3, 7]")),
        (LIST_OF_COUNTS, "[1, 0]", Err("expected an integer in [1, 9], found 0")),
        (
            LIST_OF_COUNTS,
            "[]",
            Err("expected a list of 1 to 3 entries, each an integer in [1, 9], found 0 entries"),
        ),
        (LIST_OF_COUNTS, "[1, 2, 3, 4]", Err("expected at most 3 entries, found more")),
        (LIST_OF_COUNTS, "7", Err("")),
        (
            ParamType::List {
                of: &ParamType::Enum { choices: &["a", "b"] },
                min_len: 0,
                max_len: 2,
            },
            "[b, a]",
            Ok("[b, a]"),
        ),
        (
            ParamType::DurationDist,
            "Exponential(mean: 5)",
            Err(
                "expected a duration string with a unit, such as \"5ms\" or \"5s\", found the bare number 5",
            ),
        ),
    ];
    for (ty, text, want) in cases {
        let mut de = ron::Deserializer::from_str(text).unwrap();
        let got = ty.deserialize_value(&mut de).map(|v| v.to_string()).map_err(|e| e.to_string());
        match (want, got) {
            (Ok(w), Ok(g)) => assert!(g.starts_with(w), "{text}: {g}"),
            (Err(w), Err(g)) => assert!(g.contains(w), "{text}: {g}"),
            (w, g) => panic!("{text}: wanted {w:?}, got {g:?}"),
        }
    }
}

/// A struct's fields read through their rows: `Ranged` (the row's type and range),
/// `RangedSome` (present means `Some`, an `OptCount` row read as its count) and
/// `RangedOpt` (`None` or `Some(v)`); each error is the row's, and `check` agrees with it.
#[test]
fn fields_parse_with_their_rows() {
    #[derive(Clone, Debug, PartialEq, Deserialize)]
    struct Spec {
        name: String,
        #[serde(default = "D::rate", deserialize_with = "R::rate")]
        rate: f64,
        #[serde(default, deserialize_with = "RangedSome::<Spec>::cap")]
        cap: Option<u64>,
        #[serde(default, deserialize_with = "RangedOpt::<Spec>::wait")]
        wait: Option<SimDuration>,
    }
    type D = Defaults<Spec>;
    type R = Ranged<Spec>;
    declare_params! {
        Spec: "spec", name = |s| s.name, state = Spec;
        rate: FloatAbove { above: 0.0, max: 100.0 }, "%", runtime(apply = |s, x| s.rate = x),
            "a rate", default = 50.0;
        cap: OptCount { min: 1, max: 10 }, "calls", fixed, "a cap";
        wait: Duration { min: SimDuration(1), max: SimDuration::from_secs(60) }, "ns", fixed,
            "a wait", opt_get = |s| s.wait, set = |s, d| s.wait = Some(d);
    }
    let parse = |s: &str| ron::from_str::<Spec>(s).map_err(|e| e.to_string());
    let s = parse(r#"(name: "a", cap: 3, wait: Some("2s"))"#).unwrap();
    assert_eq!((s.rate, s.cap, s.wait), (50.0, Some(3), Some(SimDuration::from_secs(2))));
    assert_eq!(parse(r#"(name: "a", wait: None)"#).unwrap().wait, None);
    for (text, err) in [
        (r#"(name: "a", rate: 0)"#, "1:19-1:20: expected a number in (0, 100], found 0"),
        (r#"(name: "a", cap: 0)"#, "expected an integer in [1, 10], found 0"),
        (
            r#"(name: "a", wait: Some("0s"))"#,
            "expected a duration string in [\"1ns\", \"1m\"], found \"0s\"",
        ),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(err), "{text}: {e}");
    }
    for d in <Spec as Params>::decls() {
        if let Some(v) = d.default {
            d.ty.check(&v).unwrap();
        }
    }
    assert!(<Spec as Params>::decls()[0].ty.check(&ParamValue::Float(0.0)).is_err());
}
