//! Deterministic, seeded mutations of RON inputs: structure-aware (numbers and strings to
//! edge values, deleted and duplicated elements, dangling references, swapped enum
//! variants, misspelt and transplanted fields, added sweeps, variants and timelines) and
//! byte-level (flips, insertions, deletions, duplications, truncation, invalid UTF-8).

use super::tree::{self, Item, V};
use models::params::ParamType;
use std::collections::BTreeMap;

/// SplitMix64: a seeded, portable generator (the fuzzer must replay from its seed).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> Option<&'a T> {
        if xs.is_empty() { None } else { xs.get(self.below(xs.len())) }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "0.5",
    "60.9",
    "1e3",
    "-0.0",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "1e-300",
    "NaN",
    "inf",
    "-inf",
    "1000000",
    "65536",
];

const EDGE_DURATIONS: &[&str] = &[
    "0s",
    "1ns",
    "1us",
    "1ms",
    "999ms",
    "1s",
    "5s",
    "24h",
    "10000d",
    "18446744073709551615ns",
    "18446744073709551616ns",
    "-1s",
    "1.5s",
    "0.0000000001s",
    "",
    "1 minute",
];

/// Token-count distributions at their edges: zero, huge, negative, a heavy tail.
const EDGE_NUMBER_DISTS: &[&str] = &[
    "Constant(0.0)",
    "Constant(-1.0)",
    "Constant(1e12)",
    "Exponential(mean: 0.0)",
    "LogNormal(mean: 800.0, cv: 50.0)",
    "LogNormal(p50: 1.0, p99: 5000.0)",
    "LogNormal(mean: 1.0, p99: 14.9)",
    "Poisson(rate: \"150/s\")",
    "Pareto(scale: 1.0, shape: 1.0)",
    "Uniform(low: 5.0, high: 1.0)",
    "Empirical(samples: [0.0])",
];

const EDGE_DISTS: &[&str] = &[
    "Constant(\"0s\")",
    "Constant(\"1ns\")",
    "Exponential(mean: \"1us\")",
    "Exponential(mean: \"100ms\")",
    "Exponential(mean: \"0s\")",
    "LogNormal(mean: \"1ms\", cv: 50.0)",
    "LogNormal(p50: \"1ns\", p99: \"5us\")",
    "LogNormal(mean: \"1ms\", p99: \"14ms\")",
    "Poisson(rate: \"2/ns\")",
    "Poisson(rate: \"1/1h\")",
    "Gamma(mean: \"10ms\", cv: 0.001)",
    "Weibull(scale: \"1ms\", shape: 0.01)",
    "Pareto(scale: \"1ms\", shape: 1.0)",
    "Uniform(low: \"0s\", high: \"0s\")",
    "Empirical(samples: [\"0s\"])",
    "Constant(\"10000d\")",
];

/// What the mutator draws from: names, fields, strings and values seen in the corpus, and
/// the parameters (path and type) of the scenarios that load.
#[derive(Default)]
pub struct Pools {
    pub names: Vec<String>,
    pub strings: Vec<String>,
    /// Values seen under each field name (type-compatible transplants).
    pub by_field: BTreeMap<String, Vec<V>>,
    /// Fields seen in each named struct (`Source` → its fields and values).
    pub fields_of: BTreeMap<String, Vec<(String, V)>>,
    pub params: Vec<(String, ParamType)>,
}

impl Pools {
    pub fn add_tree(&mut self, v: &V) {
        match v {
            V::Str(s) => self.strings.push(s.clone()),
            V::Paren { name, items } => {
                if let Some(n) = name {
                    self.names.push(n.clone());
                }
                for it in items {
                    if let Item::Field(f, x) = it {
                        self.by_field.entry(f.clone()).or_default().push(x.clone());
                        if let Some(n) = name {
                            self.fields_of
                                .entry(n.clone())
                                .or_default()
                                .push((f.clone(), x.clone()));
                        }
                    }
                }
            }
            _ => {}
        }
        for c in tree::children(v) {
            self.add_tree(c);
        }
    }
    pub fn finish(&mut self) {
        self.names.sort();
        self.names.dedup();
        self.strings.sort();
        self.strings.dedup();
        self.params.sort_by(|a, b| a.0.cmp(&b.0));
        self.params.dedup_by(|a, b| a.0 == b.0);
    }
}

fn atom(s: &str) -> V {
    tree::parse(s).unwrap_or_else(|| V::Atom(s.to_string()))
}

/// A value of a parameter type: usually valid, often at an edge, sometimes wrong.
pub fn typed_value(rng: &mut Rng, ty: &ParamType) -> V {
    let s: String = match ty {
        ParamType::Count { min, max } => match rng.below(4) {
            0 => min.to_string(),
            1 => max.to_string(),
            2 => (min.saturating_add(1)).min(*max).to_string(),
            _ => rng.pick(EDGE_NUMBERS).unwrap().to_string(),
        },
        ParamType::OptCount { min, max } => match rng.below(4) {
            0 => "None".into(),
            1 => format!("Some({min})"),
            2 => format!("Some({max})"),
            _ => format!("Some({})", rng.pick(EDGE_NUMBERS).unwrap()),
        },
        ParamType::Duration { min, max } => match rng.below(3) {
            0 => format!("\"{min}\""),
            1 => format!("\"{max}\""),
            _ => format!("\"{}\"", rng.pick(EDGE_DURATIONS).unwrap()),
        },
        ParamType::DurationDist => rng.pick(EDGE_DISTS).unwrap().to_string(),
        ParamType::NumberDist => rng.pick(EDGE_NUMBER_DISTS).unwrap().to_string(),
        // The bound itself: in range for a closed one, just out of it for an open one.
        ParamType::Float { min, max } | ParamType::FloatAbove { above: min, max } => {
            match rng.below(3) {
                0 => format!("{min:?}"),
                1 => format!("{max:?}"),
                _ => rng.pick(EDGE_NUMBERS).unwrap().to_string(),
            }
        }
        ParamType::Bool => if rng.chance(2) { "true" } else { "false" }.into(),
        // A choice, or now and then a name that is none of them.
        ParamType::Enum { choices } => match rng.below(4) {
            0 => "NO_SUCH_CHOICE".into(),
            _ => rng.pick(choices).unwrap().to_string(),
        },
        ParamType::Name { choices } => match rng.below(4) {
            0 => "\"no_such_name\"".into(),
            _ => format!("\"{}\"", rng.pick(choices).unwrap()),
        },
        // Empty, one entry, or one more than allowed; entries of the element type.
        ParamType::List { of, max_len, .. } => {
            let n = match rng.below(4) {
                0 => 0,
                1 => max_len + 1,
                _ => 1 + rng.below(3),
            };
            let items: Vec<String> = (0..n).map(|_| tree::print(&typed_value(rng, of))).collect();
            format!("[{}]", items.join(", "))
        }
    };
    atom(&s)
}

fn is_number(a: &str) -> bool {
    a.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.')
        || matches!(a, "NaN" | "inf")
}

/// `"150ms"` → (150, "ms").
fn split_duration(s: &str) -> Option<(f64, &str)> {
    let k = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (x, unit) = s.split_at(k);
    (["ns", "us", "ms", "s", "m", "h", "d"].contains(&unit)).then_some(())?;
    Some((x.parse().ok()?, unit))
}

/// Containers (nodes with children) among `paths`.
fn containers(root: &V, paths: &[Vec<usize>]) -> Vec<Vec<usize>> {
    paths
        .iter()
        .filter(|p| {
            matches!(tree::at(root, p), Some(V::List(xs)) if !xs.is_empty())
                || matches!(tree::at(root, p), Some(V::Paren { items, .. }) if !items.is_empty())
        })
        .cloned()
        .collect()
}

/// Wraps a bare scenario into an experiment (so sweeps and variants can be added).
fn as_experiment(root: &mut V) {
    if let V::Paren { name: Some(n), .. } = root
        && n == "Scenario"
    {
        let sc = root.clone();
        *root = V::Paren {
            name: Some("Experiment".into()),
            items: vec![
                Item::Field("name".into(), V::Str("fz".into())),
                Item::Field(
                    "scenario".into(),
                    V::Paren { name: Some("Inline".into()), items: vec![Item::Pos(sc)] },
                ),
                Item::Field("duration".into(), V::Str("2s".into())),
                Item::Field("seeds".into(), atom("Range(0, 2)")),
            ],
        };
    }
}

/// The list under field `field` of a parenthesised value, created empty if missing.
fn list_field<'a>(v: &'a mut V, field: &str) -> Option<&'a mut Vec<V>> {
    let V::Paren { items, .. } = v else { return None };
    if !items.iter().any(|i| matches!(i, Item::Field(f, _) if f == field)) {
        items.push(Item::Field(field.into(), V::List(Vec::new())));
    }
    items.iter_mut().find_map(|i| match i {
        Item::Field(f, V::List(xs)) if f == field => Some(xs),
        _ => None,
    })
}

fn scenario_of(root: &mut V) -> Option<&mut V> {
    match root {
        V::Paren { name: Some(n), .. } if n == "Scenario" => Some(root),
        V::Paren { name: Some(n), items } if n == "Experiment" => {
            items.iter_mut().find_map(|i| match i {
                Item::Field(f, V::Paren { items, .. }) if f == "scenario" => {
                    items.iter_mut().find_map(|i| match i {
                        Item::Pos(s @ V::Paren { .. }) => Some(s),
                        _ => None,
                    })
                }
                _ => None,
            })
        }
        _ => None,
    }
}

/// One structure-aware mutation, in place. Returns its name (for statistics).
pub fn mutate_tree(
    rng: &mut Rng,
    root: &mut V,
    pools: &Pools,
    own: &[(String, ParamType)],
) -> &'static str {
    let paths = tree::paths(root);
    let param = |rng: &mut Rng| -> Option<(String, ParamType)> {
        let from = if !own.is_empty() && !rng.chance(4) { own } else { &pools.params };
        rng.pick(from).cloned()
    };
    match rng.below(17) {
        14..=16 => {
            // Nudge a number or a duration (×0, ×0.1, ×0.5, ×2, ×3, ×10, ×100): mostly still
            // valid, so the run gets odd but accepted parameters.
            let cands: Vec<_> = paths
                .iter()
                .filter(|p| match tree::at(root, p) {
                    Some(V::Atom(a)) => a.parse::<f64>().is_ok(),
                    Some(V::Str(s)) => split_duration(s).is_some(),
                    _ => false,
                })
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&cands) {
                let f = [0.0, 0.1, 0.5, 2.0, 3.0, 10.0, 100.0][rng.below(7)];
                let node = tree::at_mut(root, p).unwrap();
                let new = match &*node {
                    V::Atom(a) if a.contains(['.', 'e']) => {
                        V::Atom(format!("{:?}", a.parse::<f64>().unwrap() * f))
                    }
                    V::Atom(a) => {
                        V::Atom(((a.parse::<f64>().unwrap() * f).round() as i128).to_string())
                    }
                    V::Str(s) => {
                        let (x, unit) = split_duration(s).unwrap();
                        V::Str(format!("{}{unit}", (x * f).round() as u64))
                    }
                    other => other.clone(),
                };
                *node = new;
            }
            "nudge"
        }
        0 | 1 => {
            // A number to an edge value.
            let nums: Vec<_> = paths
                .iter()
                .filter(|p| matches!(tree::at(root, p), Some(V::Atom(a)) if is_number(a)))
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&nums) {
                *tree::at_mut(root, p).unwrap() = atom(rng.pick(EDGE_NUMBERS).unwrap());
            }
            "number"
        }
        2 => {
            // A string to an edge duration, another string of the corpus (a dangling or
            // swapped reference), an empty, a long or a device name.
            let strs: Vec<_> = paths
                .iter()
                .filter(|p| matches!(tree::at(root, p), Some(V::Str(_))))
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&strs) {
                let s = match rng.below(5) {
                    0 => rng.pick(EDGE_DURATIONS).unwrap().to_string(),
                    1 => rng.pick(&pools.strings).cloned().unwrap_or_default(),
                    2 => "nope".into(),
                    3 => "x".repeat(300),
                    _ => ["/dev/zero", "../../../../../../dev/zero", "", ".", "..", "/"]
                        [rng.below(6)]
                    .to_string(),
                };
                *tree::at_mut(root, p).unwrap() = V::Str(s);
            }
            "string"
        }
        3 => {
            // Swap an enum variant (or struct) name.
            let named: Vec<_> = paths
                .iter()
                .filter(|p| matches!(tree::at(root, p), Some(V::Paren { name: Some(_), .. })))
                .cloned()
                .collect();
            if let (Some(p), Some(n)) = (rng.pick(&named), rng.pick(&pools.names))
                && let Some(V::Paren { name, .. }) = tree::at_mut(root, p)
            {
                *name = Some(n.clone());
            }
            "variant"
        }
        4 | 5 => {
            // Delete an element.
            if let Some(p) = rng.pick(&containers(root, &paths)) {
                match tree::at_mut(root, p).unwrap() {
                    V::List(xs) => {
                        let k = rng.below(xs.len());
                        xs.remove(k);
                    }
                    V::Paren { items, .. } => {
                        let k = rng.below(items.len());
                        items.remove(k);
                    }
                    _ => {}
                }
            }
            "delete"
        }
        6 => {
            // Duplicate an element (a duplicated name, field or list entry).
            if let Some(p) = rng.pick(&containers(root, &paths)) {
                match tree::at_mut(root, p).unwrap() {
                    V::List(xs) => {
                        let k = rng.below(xs.len());
                        let x = xs[k].clone();
                        xs.insert(k, x);
                    }
                    V::Paren { items, .. } => {
                        let k = rng.below(items.len());
                        let x = items[k].clone();
                        items.insert(k, x);
                    }
                    _ => {}
                }
            }
            "duplicate"
        }
        7 | 8 => {
            // Transplant a value seen under the same field name elsewhere in the corpus.
            let fields: Vec<_> = paths
                .iter()
                .filter(|p| !p.is_empty())
                .filter(|p| {
                    let (last, parent) = p.split_last().unwrap();
                    matches!(tree::at(root, parent),
                        Some(V::Paren { items, .. }) if matches!(items.get(*last), Some(Item::Field(..))))
                })
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&fields) {
                let (last, parent) = p.split_last().unwrap();
                if let Some(V::Paren { items, .. }) = tree::at_mut(root, parent)
                    && let Some(Item::Field(f, v)) = items.get_mut(*last)
                    && let Some(x) = pools.by_field.get(f.as_str()).and_then(|xs| rng.pick(xs))
                {
                    *v = x.clone();
                }
            }
            "transplant"
        }
        9 => {
            // Add a field seen in a struct of the same name (or misspell one).
            let named: Vec<_> = paths
                .iter()
                .filter(|p| matches!(tree::at(root, p), Some(V::Paren { .. })))
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&named)
                && let Some(V::Paren { name, items }) = tree::at_mut(root, p)
            {
                let seen = name.as_ref().and_then(|n| pools.fields_of.get(n));
                match (seen.and_then(|s| rng.pick(s)), rng.chance(3)) {
                    (Some((f, v)), false) => items.push(Item::Field(f.clone(), v.clone())),
                    _ => {
                        if let Some(Item::Field(f, _)) =
                            items.iter_mut().find(|i| matches!(i, Item::Field(..)))
                        {
                            f.push('x');
                        }
                    }
                }
            }
            "field"
        }
        10 => {
            // A timeline entry with an edge value.
            if let Some((path, ty)) = param(rng)
                && let Some(sc) = scenario_of(root)
                && let Some(tl) = list_field(sc, "timeline")
            {
                let at = ["0s", "1ms", "500ms", "1s"][rng.below(4)];
                tl.push(V::Paren {
                    name: None,
                    items: vec![
                        Item::Field("at".into(), V::Str(at.into())),
                        Item::Field("path".into(), V::Str(path)),
                        Item::Field("value".into(), typed_value(rng, &ty)),
                    ],
                });
            }
            "timeline"
        }
        11 => {
            // A sweep dimension.
            as_experiment(root);
            if let Some((path, ty)) = param(rng)
                && let Some(sw) = list_field(root, "sweep")
            {
                let values = (0..1 + rng.below(3)).map(|_| typed_value(rng, &ty)).collect();
                sw.push(V::Paren {
                    name: Some("Grid".into()),
                    items: vec![
                        Item::Field("path".into(), V::Str(path)),
                        Item::Field("values".into(), V::List(values)),
                    ],
                });
            }
            "sweep"
        }
        12 => {
            // A variant.
            as_experiment(root);
            if let Some((path, ty)) = param(rng) {
                let value = typed_value(rng, &ty);
                if let Some(vs) = list_field(root, "variants") {
                    let name = format!("v{}", vs.len());
                    vs.push(V::Paren {
                        name: None,
                        items: vec![
                            Item::Field("name".into(), V::Str(name)),
                            Item::Field(
                                "set".into(),
                                V::List(vec![V::Paren {
                                    name: None,
                                    items: vec![
                                        Item::Field("path".into(), V::Str(path)),
                                        Item::Field("value".into(), value),
                                    ],
                                }]),
                            ),
                        ],
                    });
                }
            }
            "variant_set"
        }
        _ => {
            // Some(x) ↔ None, true ↔ false.
            let toggles: Vec<_> = paths
                .iter()
                .filter(|p| {
                    matches!(tree::at(root, p),
                        Some(V::Atom(a)) if matches!(a.as_str(), "None" | "true" | "false"))
                        || matches!(tree::at(root, p),
                        Some(V::Paren { name: Some(n), .. }) if n == "Some")
                })
                .cloned()
                .collect();
            if let Some(p) = rng.pick(&toggles) {
                let node = tree::at_mut(root, p).unwrap();
                *node = match node {
                    V::Atom(a) if a == "None" => {
                        atom(&format!("Some({})", rng.pick(EDGE_NUMBERS).unwrap()))
                    }
                    V::Atom(a) if a == "true" => V::Atom("false".into()),
                    V::Atom(_) => V::Atom("true".into()),
                    _ => V::Atom("None".into()),
                };
            }
            "toggle"
        }
    }
}

/// One byte-level mutation of the text.
pub fn mutate_bytes(rng: &mut Rng, text: &mut Vec<u8>) -> &'static str {
    const BYTES: &[u8] = b"()[]{},:\"0123456789.-_aZ \n/\\#";
    let n = text.len().max(1);
    match rng.below(7) {
        0 if !text.is_empty() => {
            let k = rng.below(text.len());
            text[k] = BYTES[rng.below(BYTES.len())];
            "byte_flip"
        }
        1 => {
            let k = rng.below(n);
            text.insert(k.min(text.len()), BYTES[rng.below(BYTES.len())]);
            "byte_insert"
        }
        2 if !text.is_empty() => {
            let a = rng.below(text.len());
            let b = (a + 1 + rng.below(16)).min(text.len());
            text.drain(a..b);
            "byte_delete"
        }
        3 if !text.is_empty() => {
            let a = rng.below(text.len());
            let b = (a + 1 + rng.below(64)).min(text.len());
            let piece = text[a..b].to_vec();
            let at = rng.below(text.len());
            text.splice(at..at, piece);
            "byte_duplicate"
        }
        4 => {
            let k = rng.below(n);
            text.truncate(k);
            "truncate"
        }
        5 => {
            let k = rng.below(n).min(text.len());
            let junk: &[u8] = [&b"\xff"[..], b"\xc3", b"\xef\xbb\xbf", b"\0", b"\r"][rng.below(5)];
            text.splice(k..k, junk.iter().copied());
            "invalid_utf8"
        }
        _ => {
            let k = rng.below(n).min(text.len());
            let deep = "(".repeat(200 + rng.below(400));
            text.splice(k..k, deep.bytes());
            "deep_nesting"
        }
    }
}
