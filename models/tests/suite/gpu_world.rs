//! GPU inference servers and request batchers in the running world: scenarios in RON,
//! figures out (docs/domain.md §4, incident 16).

use crate::support::load;
use models::params::ParamValue;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

fn run(sc: &Scenario, seed: u64, secs: u64) -> RunOutput {
    let cfg = RunConfig::new(seed, SimDuration::from_secs(secs));
    let r = models::run(sc, &cfg);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let s = &r.summary;
    let g = |k: &str| s.get(&format!("source.chat.{k}")).unwrap();
    assert_eq!(
        g("offered"),
        g("completed") + g("failed") + g("rejected") + g("in_flight_end"),
        "conservation"
    );
    let again = models::run(sc, &cfg);
    assert_eq!(r.fingerprint, again.fingerprint, "determinism");
    r
}

/// Short prefill-heavy requests (128 prompt tokens, 1 output token) at 2,000/s, more than
/// either setup can serve (and enough to fill a batch of 8 within 5 ms). `batcher` is `None` (one request per forward pass: a gate of 1
/// in front of the server) or `Some((window, max))`.
fn incident16(batcher: Option<(&str, u64)>) -> String {
    let (decl, stack) = match batcher {
        None => (String::new(), r#"[Gate("one")]"#.to_string()),
        Some((w, n)) => (
            format!(r#"batchers: [Batcher(name: "b", window: "{w}", max_batch: {n})],"#),
            r#"[Batcher("b"), Gate("one")]"#.to_string(),
        ),
    };
    format!(
        r#"Scenario(
    name: "incident16",
    sources: [(name: "chat", interarrival: Exponential(mean: "500us"), target: "infer",
               prompt_tokens: Constant(128.0), output_tokens: Constant(1.0))],
    gates: [(name: "one", permits: 1, acquire_timeout: "2s", max_waiting: 100000)],
    {decl}
    call_sites: [(name: "infer", governors: {stack}, upstream: "gpu")],
    stations: [],
    gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 8)],
)"#
    )
}

/// docs/domain.md §6, incident 16: a 5 ms / 8-request batcher roughly doubles the requests a GPU serves
/// (the article: 100 → 210 QPS). The H200 fit prices one 128-token prefill step at
/// 6.48 ms (154 req/s) and a batch of 8 at 25.5 ms (313 req/s): measured 154.25 → 312.35
/// per second over 20 s (seed 1), a ratio of 2.025.
#[test]
fn batching_doubles_gpu_throughput() {
    let secs = 20;
    let single = run(&load(&incident16(None)), 1, secs);
    let batched = run(&load(&incident16(Some(("5ms", 8)))), 1, secs);
    let rate = |r: &RunOutput| r.summary.get("source.chat.completed").unwrap() / secs as f64;
    let (a, b) = (rate(&single), rate(&batched));
    eprintln!("unbatched {a}/s, batched {b}/s");
    assert!((150.0..158.0).contains(&a), "unbatched {a}/s");
    assert!((300.0..320.0).contains(&b), "batched {b}/s");
    let ratio = b / a;
    assert!((1.9..2.15).contains(&ratio), "ratio {ratio}");
    // One upstream call per batch: the server saw batches of up to 8 sequences (7.65 on
    // average: a Poisson stream sometimes leaves a batch short when its window ends).
    let mean_batch = batched.summary.get("gpu_server.gpu.mean_batch").unwrap();
    assert!((7.0..=8.0).contains(&mean_batch), "mean batch {mean_batch}");
    assert_eq!(single.summary.get("gpu_server.gpu.mean_batch").unwrap(), 1.0);
}

fn saturated(max_num_seqs: u64, kv: u64, max_queue: u64) -> Scenario {
    load(&format!(
        r#"Scenario(
    name: "gpu",
    sources: [(name: "chat", interarrival: Exponential(mean: "5ms"), target: "infer",
               prompt_tokens: Constant(512.0), output_tokens: Constant(128.0))],
    call_sites: [(name: "infer", upstream: "gpu")],
    stations: [],
    gpu_servers: [GpuServer(name: "gpu", max_num_seqs: {max_num_seqs},
                            kv_cache_tokens: {kv}, max_queue: {max_queue})],
)"#
    ))
}

/// Continuous batching: under saturating load (200 req/s of 512 → 128 tokens) the tokens
/// generated per second grow with the sequences allowed in a batch, along the profile's
/// shape (the fitted step time grows far slower than the batch).
#[test]
fn throughput_grows_with_batch_size() {
    let tps: Vec<f64> = [1, 8, 32]
        .iter()
        .map(|&n| {
            let r = run(&saturated(n, 870_000, 100_000), 2, 20);
            r.summary.get("gpu_server.gpu.tokens_per_s").unwrap()
        })
        .collect();
    assert!(tps[0] < tps[1] && tps[1] < tps[2], "{tps:?}");
    assert!(tps[1] / tps[0] > 5.0, "8 sequences per step ≫ 1: {tps:?}");
    assert!(tps[2] / tps[1] > 2.0, "32 ≫ 8: {tps:?}");
}

/// A KV budget of 4,000 tokens holds ~6 sequences of 640: running 32 at once is
/// impossible, the newest are preempted and recomputed; every request still ends once.
#[test]
fn kv_exhaustion_preempts_and_conserves() {
    let r = run(&saturated(32, 4_000, 100_000), 3, 10);
    let pre = r.summary.get("gpu_server.gpu.preemptions").unwrap();
    assert!(pre > 0.0, "preemptions {pre}");
}

/// A bounded server queue answers 429 when full, and none while it has room.
#[test]
fn full_server_queue_answers_429() {
    let full = run(&saturated(8, 870_000, 50), 4, 10);
    let rej = full.summary.get("source.chat.rejected_upstream_429").unwrap();
    assert!(rej > 100.0, "429s {rej}");
    assert_eq!(full.summary.get("gpu_server.gpu.rejected_429").unwrap(), rej);
    let roomy = run(&saturated(64, 870_000, 100_000), 4, 10);
    assert_eq!(roomy.summary.get("source.chat.rejected_upstream_429").unwrap(), 0.0);
}

/// A run-time change breaking a cross-field rule (batched tokens ≥ sequences) is refused
/// and recorded, never a panic; the value in force stays the old one.
#[test]
fn refused_runtime_change_is_recorded_and_keeps_the_old_value() {
    use models::scenario::SetParam;
    let mut sc = saturated(8, 870_000, 100_000);
    for (at, v) in [(1, 4), (2, 16)] {
        sc.timeline.push(SetParam {
            reload: false,
            at: SimDuration::from_secs(at),
            path: "gpu_server.gpu.max_num_batched_tokens".into(),
            value: ParamValue::Count(v),
        });
    }
    sc.check_timeline().unwrap();
    let r = run(&sc, 5, 3);
    let ev: Vec<_> = r.state_events.iter().map(|e| (e.kind, e.from.as_str())).collect();
    assert_eq!(
        ev,
        [
            ("config_change", "max_num_batched_tokens = 8192"),
            ("config_rejected", "max_num_batched_tokens"),
            ("config_change", "max_num_batched_tokens = 8192"),
        ]
    );
}
