//! Structural variants as data: every experiment in `tests/variants/` loads, and what its
//! variants are — `explain`'s description, the components of each variant's resolved
//! scenario, the planned runs — equals `tests/variants/<name>.txt`. (Bad variants are in
//! `tests/bad_input/variant_*.ron`.)

use experiments::{RunDefaults, load};
use std::collections::BTreeSet;
use std::path::Path;

/// The text compared with `<name>.txt`.
fn render(e: &experiments::Experiment) -> String {
    let mut out =
        format!("variants:\n{}components:\n", experiments::variant::describe(&e.variants));
    for v in &e.variants {
        let sc = v.scenario_or(&e.scenario);
        let parts: BTreeSet<String> = sc
            .registry()
            .iter()
            .filter_map(|p| p.path.rsplit_once('.').map(|(c, _)| c.to_string()))
            .collect();
        let parts: Vec<String> = parts.into_iter().collect();
        out.push_str(&format!("  {} (scenario \"{}\"): {}\n", v.name, sc.name, parts.join(", ")));
    }
    out.push_str("runs:\n");
    for r in &e.runs {
        let ps: Vec<String> = e
            .swept
            .iter()
            .zip(&r.params)
            .map(|(p, v)| format!("{p}={}", v.as_ref().map_or("-".to_string(), |v| v.to_string())))
            .collect();
        out.push_str(&format!("  {} {} {} {}\n", r.variant, r.point, r.seed, ps.join(" ")));
    }
    out
}

#[test]
fn every_variant_experiment_resolves_as_expected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/variants");
    let mut n = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for f in names.iter().filter(|p| p.extension().is_some_and(|x| x == "ron")) {
        let text = std::fs::read_to_string(f).unwrap();
        if !text.lines().any(|l| l.starts_with("Experiment(")) {
            continue; // a scenario file an experiment refers to
        }
        let e = load(f, &RunDefaults::default()).unwrap_or_else(|e| panic!("{e}"));
        let want = std::fs::read_to_string(f.with_extension("txt"))
            .unwrap_or_else(|_| panic!("{} has no .txt beside it", f.display()));
        assert_eq!(render(&e), want, "{}", f.display());
        n += 1;
    }
    assert!(n >= 1, "at least one variant experiment");
}

#[test]
fn structural_variants_share_seeds_and_differ_in_run_ids() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/variants/structural.ron");
    let e = load(&f, &RunDefaults::default()).unwrap();
    let ids: BTreeSet<&str> = e.runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids.len(), e.runs.len(), "every run has its own id");
    let seeds = |v: &str| -> Vec<u64> {
        e.runs.iter().filter(|r| r.variant == v).map(|r| r.seed).collect()
    };
    assert_eq!(seeds("failure"), seeds("fix"), "common random numbers: the same seeds");
    // The fix's call site `llm` was replaced in place: still the first call site.
    let fix = e.variants.iter().find(|v| v.name == "fix").unwrap();
    let sc = fix.scenario.as_ref().unwrap();
    assert_eq!(sc.call_sites[0].name, "llm");
}

/// `remove_governors` in one line resolves to exactly the scenario written the long way
/// (`remove` plus a patch repeating each call site without the governor): the same
/// canonical text, so the same runs. Out of one stack only, the other stack keeps it.
#[test]
fn remove_governors_is_the_long_way_in_one_line() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/variants/unstack.ron");
    let e = load(&f, &RunDefaults::default()).unwrap();
    let sc = |name: &str| {
        let v = e.variants.iter().find(|v| v.name == name).unwrap();
        v.scenario_or(&e.scenario).clone()
    };
    let canon = |name: &str| experiments::experiment::canonical(&sc(name));
    assert_eq!(canon("one-line"), canon("long-way"));
    assert_ne!(canon("one-line"), canon("base"));
    let sum_only = sc("sum-only");
    let stack = |site: &str| {
        let c = sum_only.call_sites.iter().find(|c| c.name == site).unwrap();
        c.governors.iter().map(|g| g.path()).collect::<Vec<_>>()
    };
    assert_eq!(stack("chat"), ["retry.r", "circuit_breaker.global"]);
    assert!(stack("sum").is_empty());
}
