//! A structure-aware fuzzer on the stable toolchain: seeded mutations of every bundled and
//! test scenario and experiment (`corpus.rs`, `mutate.rs`) and of trace CSV (`csv.rs`),
//! each driven through load → validate → short runs (`drive.rs`): no panic, every
//! invariant after every run, no infinite result, fingerprints that replay, stepping equal
//! to one go.
//!
//! - `cargo test -p experiments --test fuzz` (CI): a fixed-seed slice of [`SLICE`]
//!   executions, plus every committed regression input (`tests/fuzz_regressions/`, each
//!   with its expected outcome in `expected.txt`).
//! - `scripts/fuzz SECONDS [SEED]`: the same for a given time (`FUZZ_SECONDS`, `FUZZ_SEED`);
//!   `FUZZ_EXECUTIONS=N` instead stops after N executions, so a campaign is reproducible by
//!   its seed and count (`FUZZ_EXECUTIONS=1000000 scripts/fuzz 0 SEED`). A long hunt prints
//!   a progress line every [`PROGRESS_EVERY`] executions.
//!   A crashing input is minimised and written to `target/fuzz-crashes/` with its message;
//!   commit it under `tests/fuzz_regressions/` with the fix.
//!
//! Reach counters (outcomes per mutation kind) are printed and checked, so a slice that
//! never got past the parser would fail instead of passing vacuously.

mod corpus;
mod csv;
mod drive;
mod mutate;
mod tree;

use drive::{Crash, Outcome};
use models::params::ParamType;
use mutate::{Pools, Rng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Executions of the CI slice (about half a minute in a debug build).
const SLICE: u64 = 6000;

/// A long hunt's progress line comes every this many executions.
const PROGRESS_EVERY: u64 = 50_000;

static INTERRUPT: AtomicBool = AtomicBool::new(false);

struct Seed {
    path: PathBuf,
    text: String,
    tree: Option<tree::V>,
    /// The registry of the scenario it loads into (empty if it does not load).
    params: Vec<(String, ParamType)>,
}

struct Fuzzer {
    seeds: Vec<Seed>,
    pools: Pools,
}

fn setup() -> Fuzzer {
    let mut pools = Pools::default();
    let mut seeds = Vec::new();
    let defaults = experiments::RunDefaults::default();
    for f in corpus::files() {
        let tree = tree::parse(&f.text).map(|mut t| {
            untype_timeline_values(&mut t);
            t
        });
        // The model tests write typed timeline values (`Count(3)`); the file format does not.
        let f = match &tree {
            Some(t) if tree::parse(&f.text).as_ref() != Some(t) => {
                corpus::SeedFile { path: f.path, text: tree::print(t) }
            }
            _ => f,
        };
        if let Some(t) = &tree {
            pools.add_tree(t);
        }
        let loaded = experiments::experiment::load_text(&f.path, &f.text, &defaults);
        if std::env::var_os("FUZZ_LIST_SEEDS").is_some()
            && let Err(e) = &loaded
        {
            eprintln!("seed {} does not load: {e}", f.path.display());
        }
        let params: Vec<(String, ParamType)> = loaded
            .map(|e| e.scenario.registry().iter().map(|p| (p.path.clone(), p.ty.clone())).collect())
            .unwrap_or_default();
        pools.params.extend(params.iter().cloned());
        seeds.push(Seed { path: f.path, text: f.text, tree, params });
    }
    pools.finish();
    if std::env::var_os("FUZZ_LIST_SEEDS").is_some() {
        for s in &seeds {
            eprintln!(
                "seed {} tree={} params={}",
                s.path.display(),
                s.tree.is_some(),
                s.params.len()
            );
        }
    }
    Fuzzer { seeds, pools }
}

/// `value: Count(3)` → `value: 3` (the model tests' typed `ParamValue`s, as files write them).
fn untype_timeline_values(v: &mut tree::V) {
    const TYPED: [&str; 7] =
        ["Count", "OptCount", "Duration", "DurationDist", "NumberDist", "Float", "Bool"];
    if let tree::V::Paren { items, .. } = v {
        for it in items.iter_mut() {
            if let tree::Item::Field(f, x) = it
                && f == "value"
                && let tree::V::Paren { name: Some(n), items: inner } = x
                && TYPED.contains(&n.as_str())
                && let [tree::Item::Pos(y)] = inner.as_slice()
            {
                *x = y.clone();
            }
        }
    }
    match v {
        tree::V::Paren { items, .. } => {
            items.iter_mut().for_each(|i| untype_timeline_values(i.value_mut()))
        }
        tree::V::List(xs) => xs.iter_mut().for_each(untype_timeline_values),
        tree::V::Map(kv) => kv.iter_mut().for_each(|(a, b)| {
            untype_timeline_values(a);
            untype_timeline_values(b);
        }),
        _ => {}
    }
}

/// One input: which seed, how it was mutated, the bytes.
struct Input {
    path: PathBuf,
    kind: String,
    bytes: Vec<u8>,
}

fn make_input(fz: &Fuzzer, rng: &mut Rng) -> Input {
    let seed = &fz.seeds[rng.below(fz.seeds.len())];
    let mut kinds = Vec::new();
    let mut bytes = match (&seed.tree, rng.chance(5)) {
        (Some(t), false) => {
            let mut t = t.clone();
            // Mostly one mutation: stacks of several are mostly refused at load.
            let n = if rng.chance(3) { 2 + rng.below(2) } else { 1 };
            for _ in 0..n {
                kinds.push(mutate::mutate_tree(rng, &mut t, &fz.pools, &seed.params));
            }
            tree::print(&t).into_bytes()
        }
        _ => seed.text.clone().into_bytes(),
    };
    if kinds.is_empty() || rng.chance(6) {
        for _ in 0..1 + rng.below(3) {
            kinds.push(mutate::mutate_bytes(rng, &mut bytes));
        }
    }
    Input { path: seed.path.clone(), kind: kinds.join("+"), bytes }
}

#[derive(Default)]
struct Stats {
    executions: u64,
    /// Per mutation kind (the first of a stack): [refused, run error, ran].
    reach: BTreeMap<String, [u64; 3]>,
    csv: [u64; 3],
    crashes: Vec<String>,
    /// Crashes of the [`KNOWN_OPEN`] kinds.
    known_open: u64,
}

impl Stats {
    fn count(&mut self, kind: &str, o: &Outcome) {
        let k = match o {
            Outcome::Refused(_) => 0,
            Outcome::RunError(_) => 1,
            Outcome::Ran => 2,
        };
        if kind == "csv" {
            self.csv[k] += 1;
        } else {
            let first = kind.split('+').next().unwrap_or(kind).to_string();
            self.reach.entry(first).or_default()[k] += 1;
        }
    }
    fn print(&self, seed: u64, secs: f64) {
        eprintln!(
            "fuzz: seed {seed:#x}: {} executions in {secs:.1}s, {} crashes, {} of a known open kind",
            self.executions,
            self.crashes.len(),
            self.known_open
        );
        eprintln!("  {:<16} {:>8} {:>9} {:>6}", "mutation", "refused", "run error", "ran");
        for (k, [a, b, c]) in &self.reach {
            eprintln!("  {k:<16} {a:>8} {b:>9} {c:>6}");
        }
        let [a, b, c] = self.csv;
        eprintln!("  {:<16} {a:>8} {b:>9} {c:>6}", "trace csv");
    }
}

/// Crashes owned by another open piece of work, counted and printed but not failing the
/// slice (prefixes of the crash message). Empty: the last one (a sweep or variant value
/// breaking a cross-field rule panicked in run planning, "values were checked at load") is
/// fixed by validating every resolved sweep point as a whole scenario at load.
const KNOWN_OPEN: &[&str] = &[];

/// The crash message without numbers, so that minimising keeps "the same" crash.
fn signature(c: &Crash) -> String {
    c.0.chars().filter(|ch| !ch.is_ascii_digit()).take(80).collect()
}

/// Greedy minimisation: drop tree elements, then byte ranges, while the crash stays.
fn minimise(path: &Path, bytes: &[u8], crash: &Crash) -> Vec<u8> {
    let sig = signature(crash);
    let still = |b: &[u8]| {
        let mut rng = Rng(1);
        matches!(drive::execute(path, b, &mut rng, &INTERRUPT), Err(c) if signature(&c) == sig)
    };
    let mut best = bytes.to_vec();
    let mut budget = 400;
    if let Some(mut t) = std::str::from_utf8(&best).ok().and_then(tree::parse) {
        let mut progress = true;
        while progress && budget > 0 {
            progress = false;
            // In reverse depth-first order a deletion never moves a path still to try.
            for p in tree::paths(&t).into_iter().rev() {
                if budget == 0 {
                    break;
                }
                let Some((last, parent)) = p.split_last() else { continue };
                let mut cand = t.clone();
                let removed = match tree::at_mut(&mut cand, parent) {
                    Some(tree::V::List(xs)) if *last < xs.len() => {
                        xs.remove(*last);
                        true
                    }
                    Some(tree::V::Paren { items, .. }) if *last < items.len() => {
                        items.remove(*last);
                        true
                    }
                    _ => false,
                };
                if removed {
                    budget -= 1;
                    if still(tree::print(&cand).as_bytes()) {
                        t = cand;
                        progress = true;
                    }
                }
            }
        }
        best = tree::print(&t).into_bytes();
    }
    let mut chunk = best.len() / 2;
    while chunk > 0 && budget > 0 {
        let mut i = 0;
        while i + chunk <= best.len() && budget > 0 {
            let mut cand = best.clone();
            cand.drain(i..i + chunk);
            budget -= 1;
            if still(&cand) {
                best = cand;
            } else {
                i += chunk;
            }
        }
        chunk /= 2;
    }
    best
}

fn save_crash(input: &Input, crash: &Crash) -> PathBuf {
    let dir = corpus::root().join("target/fuzz-crashes");
    std::fs::create_dir_all(&dir).expect("crash folder");
    let small = minimise(&input.path, &input.bytes, crash);
    let mut h = sim_core::Fingerprint::default();
    h.fold_str(&String::from_utf8_lossy(&small));
    let file = dir.join(format!("{}.ron", h.hex()));
    let mut text = format!(
        "// {}\n// from {} ({})\n",
        crash.0.replace('\n', " "),
        input.path.display(),
        input.kind
    )
    .into_bytes();
    text.extend_from_slice(&small);
    std::fs::write(&file, text).expect("crash file");
    file
}

/// Runs the fuzzer from `seed` for `count` executions or until `until`.
fn fuzz(seed: u64, count: u64, until: Option<Instant>) -> Stats {
    let fz = setup();
    assert!(fz.seeds.len() >= 40, "the corpus has {} files", fz.seeds.len());
    let mut rng = Rng(seed);
    let mut stats = Stats::default();
    let current = corpus::root().join("target/fuzz-current.ron");
    let started = Instant::now();
    while stats.executions < count && until.is_none_or(|u| Instant::now() < u) {
        stats.executions += 1;
        if count > SLICE && stats.executions.is_multiple_of(PROGRESS_EVERY) {
            eprintln!(
                "fuzz: {} executions, {:.0}s, {} crashes",
                stats.executions,
                started.elapsed().as_secs_f64(),
                stats.crashes.len()
            );
        }
        let (input, result) = if rng.chance(8) {
            let text = csv::generate(&mut rng);
            let bytes = text.clone().into_bytes();
            if until.is_some() || count > SLICE {
                let _ = std::fs::write(current.with_extension("csv"), &bytes);
            }
            let r = csv::execute(&text, &mut rng, &INTERRUPT);
            (Input { path: PathBuf::from("trace.csv"), kind: "csv".into(), bytes }, r)
        } else {
            let input = make_input(&fz, &mut rng);
            if until.is_some() || count > SLICE {
                // A long hunt keeps the input in progress: an abort (stack overflow, a
                // failed allocation) leaves it for `scripts/fuzz` to report.
                let _ = std::fs::write(&current, &input.bytes);
            }
            let r = drive::execute(&input.path, &input.bytes, &mut rng, &INTERRUPT);
            (input, r)
        };
        match result {
            Ok(o) => stats.count(&input.kind, &o),
            Err(c) if KNOWN_OPEN.iter().any(|k| c.0.starts_with(k)) => {
                stats.known_open += 1;
                if stats.known_open == 1 {
                    eprintln!("known open ({}): {}", input.kind, c.0);
                }
            }
            Err(c) => {
                let file = if input.kind == "csv" {
                    PathBuf::from(format!("{:?}", String::from_utf8_lossy(&input.bytes)))
                } else {
                    save_crash(&input, &c)
                };
                eprintln!("CRASH ({}) {}: {}", input.kind, file.display(), c.0);
                stats.crashes.push(format!("{}: {}", file.display(), c.0));
            }
        }
    }
    stats
}

#[test]
fn fuzz_slice() {
    let seed = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED);
    let secs: Option<u64> = std::env::var("FUZZ_SECONDS").ok().and_then(|s| s.parse().ok());
    let count: Option<u64> = std::env::var("FUZZ_EXECUTIONS").ok().and_then(|s| s.parse().ok());
    let started = Instant::now();
    let stats = match (count, secs) {
        (Some(n), _) => fuzz(seed, n, None),
        (None, Some(s)) => fuzz(seed, u64::MAX, Some(started + Duration::from_secs(s))),
        (None, None) => fuzz(seed, SLICE, None),
    };
    stats.print(seed, started.elapsed().as_secs_f64());
    assert!(stats.crashes.is_empty(), "crashes:\n{}", stats.crashes.join("\n"));
    // Reach: structured mutations get past the parser and run, and some are refused.
    let total = |k: usize| stats.reach.values().map(|r| r[k]).sum::<u64>();
    assert!(total(0) > 0 && total(2) > 0, "{:?}", stats.reach);
    for kind in ["number", "nudge", "sweep", "timeline", "variant_set", "transplant"] {
        let r = stats.reach.get(kind).copied().unwrap_or_default();
        assert!(r[1] + r[2] > 0, "no `{kind}` mutation loaded and ran: {r:?}");
    }
    assert!(stats.csv[0] > 0 && stats.csv[2] > 0, "trace csv reach {:?}", stats.csv);
}

/// Every committed regression input ends as `expected.txt` says: `<file>: refused: <part
/// of the message>`, `<file>: run error: <part>` or `<file>: ran`.
#[test]
fn fuzz_regressions() {
    let dir = corpus::root().join("experiments/tests/fuzz_regressions");
    let expected = std::fs::read_to_string(dir.join("expected.txt")).expect("expected.txt");
    let mut n = 0;
    for line in expected.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let (file, want) = line.split_once(": ").expect("`file: outcome`");
        let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut rng = Rng(7);
        let got = drive::execute(&dir.join(file), &bytes, &mut rng, &INTERRUPT)
            .unwrap_or_else(|c| panic!("{file}: crash: {}", c.0));
        let ok = match (want.split_once(": "), &got) {
            (Some(("refused", part)), Outcome::Refused(m)) => m.contains(part),
            (Some(("run error", part)), Outcome::RunError(m)) => m.contains(part),
            (None, Outcome::Ran) => want == "ran",
            _ => false,
        };
        assert!(ok, "{file}: expected `{want}`, got {got:?}");
        n += 1;
    }
    let files = std::fs::read_dir(&dir).unwrap().filter(|e| {
        e.as_ref().unwrap().path().extension().is_some_and(|x| x == "ron" || x == "csv")
    });
    assert_eq!(files.count(), n, "every regression input has an expected outcome");
}
