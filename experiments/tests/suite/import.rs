//! `stormglass import` and a scenario's `import` list, on the libraries' own documented
//! examples (`experiments/examples/import/`: Resilience4j's Spring Boot example, Sentinel's
//! demo rule files, grpc-java's retrying and hedging service configs, the Kubernetes HPA
//! walkthrough's manifest) and on configurations
//! as teams write them: each imported, run and explained; the fragment the CLI prints, pasted into
//! the scenario, runs to the same fingerprint as the import; a changed value in the YAML
//! changes the fingerprint; unsupported fields are named by their path.

use experiments::experiment::{RunDefaults, load};
use experiments::runner::{Status, run_all};
use std::path::{Path, PathBuf};
use std::process::Command;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import")
}

fn stormglass() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
}

/// A fresh folder with copies of the example files.
fn scratch(name: &str, files: &[&str]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-import-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for f in files {
        std::fs::copy(examples().join(f), d.join(f)).unwrap();
    }
    d
}

/// (seed, fingerprint) of every run of an experiment file.
fn fingerprints(path: &Path) -> Vec<(u64, String)> {
    let exp = load(path, &RunDefaults::default()).unwrap_or_else(|e| panic!("{e}"));
    let all: Vec<usize> = (0..exp.runs.len()).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    run_all(&exp, &all, 2, &stop, &mut |_| {})
        .into_iter()
        .map(|r| {
            assert_eq!(r.status, Status::Ok);
            (r.seed, r.fingerprint.unwrap())
        })
        .collect()
}

/// Every example scenario loads with its imports, explains with the imported components'
/// parameters, and runs.
#[test]
fn each_example_is_imported_explained_and_run() {
    let cases = [
        ("resilience4j.ron", "circuit_breaker.llm.failure_rate_threshold"),
        ("resilience4j-docs.ron", "gate.backendB.permits"),
        ("resilience4j-docs.ron", "rate_limiter.backendA.limit_for_period"),
        ("resilience4j-docs.ron", "thread_pool_bulkhead.backendC.queue_capacity"),
        ("sentinel.ron", "sentinel_resource.POST__v1_chat.rule0.control_behavior"),
        ("grpc.ron", "retry.llm_Completions.budget_max_tokens"),
        ("grpc.ron", "retry.helloworld_Greeter_SayHello.backoff_max_wait"),
        ("sentinel-demo.ron", "sentinel_resource.abc1.rule0.count"),
        ("sentinel-degrade-demo.ron", "sentinel_resource.abc0.degrade0.time_window"),
        ("hpa.ron", "autoscaler.php-apache.target"),
    ];
    for (file, param) in cases {
        let path = examples().join(file);
        let o = stormglass().arg("explain").arg(&path).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{file}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(out.contains(param), "{file}: explain names {param}:\n{out}");
        let runs = fingerprints(&path);
        assert_eq!(runs.len(), 2, "{file}: two seeds");
        assert_ne!(runs[0].1, runs[1].1, "{file}: two seeds, two histories");
    }
}

/// The values the imports set are the configurations' own: Resilience4j's `configs`
/// inheritance (`llm` ← `slow-provider` ← `default`), kebab-case and ISO-8601 names.
#[test]
fn explain_shows_the_inherited_values() {
    let o = stormglass().arg("explain").arg(examples().join("resilience4j.ron")).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let value = |p: &str| {
        let line = out.lines().find(|l| l.trim_start().starts_with(&format!("{p} "))).unwrap();
        line.split('=').nth(1).unwrap().split_whitespace().next().unwrap().to_string()
    };
    // from `configs.default` through two baseConfig links
    assert_eq!(value("circuit_breaker.llm.sliding_window_size"), "50");
    assert_eq!(value("circuit_breaker.llm.wait_duration_in_open_state"), "\"10s\"");
    // from `configs.slow-provider` (`PT2S`)
    assert_eq!(value("circuit_breaker.llm.slow_call_duration_threshold"), "\"2s\"");
    // retry: `configs.default` beneath the instance, exponential from the instance
    assert_eq!(value("retry.llm.max_attempts"), "3");
    assert_eq!(value("retry.llm.backoff_multiplier"), "2");
    assert_eq!(value("gate.llm.permits"), "40");
    assert_eq!(value("gate.llm.acquire_timeout"), "\"250ms\"");
    assert_eq!(value("time_limiter.llm.timeout_duration"), "\"5s\"");
}

/// The fragments `stormglass import` prints, pasted in place of the `import` entry, are the
/// same scenario: the same fingerprints, seed by seed.
#[test]
fn the_printed_fragment_runs_like_the_import() {
    // (scenario, its import list, the list left after pasting, the file pasted, flags)
    let cases = [
        ("resilience4j.ron", "[\"llm-client.yml\"]", "[]", "llm-client.yml", &[][..]),
        (
            "grpc.ron",
            "[\"grpc-throttled.json\", \"grpc-retrying.json\"]",
            "[\"grpc-retrying.json\"]",
            "grpc-throttled.json",
            &[][..],
        ),
        (
            "sentinel.ron",
            "[(file: \"sentinel-dashboard.json\", hot_param: User)]",
            "[]",
            "sentinel-dashboard.json",
            &["--hot-param", "user"][..],
        ),
    ];
    for (scenario, entry, left, config, flags) in cases {
        let mut files = vec![scenario, config];
        if scenario == "grpc.ron" {
            files.push("grpc-retrying.json");
        }
        let d = scratch("paste", &files);
        let o = stormglass().arg("import").args(flags).arg(d.join(config)).output().unwrap();
        assert!(o.status.success(), "{config}: {}", String::from_utf8_lossy(&o.stderr));
        let fragment = String::from_utf8(o.stdout).unwrap();
        let text = std::fs::read_to_string(d.join(scenario)).unwrap();
        let pasted =
            text.replace(&format!("import: {entry},"), &format!("import: {left},\n{fragment}"));
        assert_ne!(pasted, text, "{scenario}: the import entry was replaced");
        std::fs::write(d.join("pasted.ron"), pasted).unwrap();
        assert_eq!(
            fingerprints(&d.join(scenario)),
            fingerprints(&d.join("pasted.ron")),
            "{scenario}"
        );
    }
}

/// A changed value in an imported file changes the run; the files unchanged keep it. Per
/// format: Resilience4j's breaker threshold of `configs.default` from 50% to 20% (inherited
/// by `llm` through two links: the breaker opens at a lower failure rate), Sentinel's QPS
/// rule from 40 to 20, gRPC's `maxAttempts` from 4 to 2, the HPA's utilisation target from
/// 50% to 20% (it scales up sooner).
#[test]
fn a_changed_value_in_the_yaml_changes_the_fingerprint() {
    let cases: [(&str, &[&str], &str, &str, &str); 4] = [
        (
            "resilience4j.ron",
            &["llm-client.yml"],
            "llm-client.yml",
            "failure-rate-threshold: 50",
            "failure-rate-threshold: 20",
        ),
        (
            "sentinel.ron",
            &["sentinel-dashboard.json"],
            "sentinel-dashboard.json",
            r#""count": 40"#,
            r#""count": 20"#,
        ),
        (
            "grpc.ron",
            &["grpc-throttled.json", "grpc-retrying.json"],
            "grpc-throttled.json",
            r#""maxAttempts": 4"#,
            r#""maxAttempts": 2"#,
        ),
        (
            "hpa.ron",
            &["hpa-php-apache.yaml"],
            "hpa-php-apache.yaml",
            "averageUtilization: 50",
            "averageUtilization: 20",
        ),
    ];
    for (ron, inputs, file, from, to) in cases {
        let mut files = vec![ron];
        files.extend_from_slice(inputs);
        let d = scratch(&format!("changed-{ron}"), &files);
        let before = fingerprints(&d.join(ron));
        assert_eq!(before, fingerprints(&examples().join(ron)), "{ron}: a copy runs alike");
        let text = std::fs::read_to_string(d.join(file)).unwrap();
        let changed = text.replacen(from, to, 1);
        assert_ne!(changed, text, "{file} holds `{from}`");
        std::fs::write(d.join(file), changed).unwrap();
        let after = fingerprints(&d.join(ron));
        for ((s0, f0), (s1, f1)) in before.iter().zip(&after) {
            assert_eq!(s0, s1);
            assert_ne!(f0, f1, "{ron} seed {s0}: `{to}` is part of the run");
        }
    }
}

/// Without `--partial` the documented Resilience4j example is refused, every field
/// stormglass does not model named by its path and line:column (its rate limiters and
/// thread-pool bulkhead are imported); with it, the fragment lists them as left out.
#[test]
fn unsupported_fields_are_named_with_their_path() {
    let file = examples().join("application.yml");
    let o = stormglass().arg("import").arg(&file).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let named = [
        ":17:37: resilience4j.circuitbreaker.instances.backendB.recordFailurePredicate: not modelled",
    ];
    for n in named {
        assert!(err.contains(n), "missing `{n}` in:\n{err}");
    }
    assert_eq!(err.lines().count(), named.len(), "{err}");
    let o = stormglass().args(["import", "--partial"]).arg(&file).output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for n in named {
        let left_out =
            format!("// {}", &n[1..]).replace("not modelled", "left out (partial import)");
        assert!(out.contains(&left_out), "missing `{left_out}` in:\n{out}");
    }
    for imported in [
        "rate_limiters: [",
        "name: \"backendB\",\n        limit_for_period: 6,",
        "thread_pool_bulkheads: [",
    ] {
        assert!(out.contains(imported), "missing `{imported}` in:\n{out}");
    }
    // grpc-java's hedging example: a hedge of 3 attempts 1 s apart, throttled by the
    // channel's bucket (gRFC A6), no non-fatal codes.
    let o = stormglass().arg("import").arg(examples().join("grpc-hedging.json")).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    for want in ["hedges: [", "max_attempts: 3,", "hedging_delay: \"1s\",", "non_fatal: [],"] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
}

/// The imported breaker acts on its imported settings: from 20 s to 40 s the provider fails
/// 80% of calls (`station.provider.error_rate` 0.8). The breaker `llm` (COUNT_BASED, window
/// 50, minimum 20 calls, failure threshold 50%, all from the YAML's `configs`) sees about
/// 20 calls a second; a window of 50 results at p = 0.8 holds 40 ± 2.8 failures, and fewer
/// than 25 (below the threshold) is a z = −5.1 event (~1e-7) — so within the 20 s outage
/// (~400 calls) it opens, on every seed, and refuses calls while open.
#[test]
fn the_imported_breaker_opens_in_the_outage() {
    let exp = load(&examples().join("resilience4j.ron"), &RunDefaults::default()).unwrap();
    let all: Vec<usize> = (0..exp.runs.len()).collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    for r in run_all(&exp, &all, 2, &stop, &mut |_| {}) {
        assert_eq!(r.status, Status::Ok);
        let changes = r.summary.get("circuit_breaker.llm.state_changes").unwrap();
        let refused = r.summary.get("circuit_breaker.llm.not_permitted").unwrap();
        assert!(
            changes >= 1.0 && refused > 0.0,
            "seed {}: {changes} changes, {refused} refused",
            r.seed
        );
    }
}
