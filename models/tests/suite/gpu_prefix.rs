//! Prefix caching in a running world (`gpu/prefix.rs`, `prompt_prefix.rs`): a class's
//! shared system prompt skips its prefill and its TTFT falls as the step-time model says;
//! documents shared by Zipf keys are found exactly as often as their keys repeat while
//! nothing is evicted, and within the bound the segment sets when the pool is small.

use crate::support::{cfg, get, load, run_checked};
use models::gpu::{H200_LLAMA3_8B, StepBatch};
use std::collections::BTreeSet;

/// One request every 200 ms (the server idle at each arrival: a 2,048-token prefill is
/// 51.7 ms, a decode 4.7 ms), `prompt` tokens of which the first `system` are the class's
/// system prompt, 2 output tokens.
fn system_prompt(prompt: u32, system: u32, caching: bool, prefix: bool) -> String {
    let prefix = if prefix {
        format!("prefix: [Prefix(scope: Class, tokens: Fixed({system}))],")
    } else {
        String::new()
    };
    format!(
        r#"Scenario(
    name: "system-prompt",
    sources: [(name: "chat", interarrival: Constant("200ms"), target: "infer",
               prompt_tokens: Constant({prompt}.0), output_tokens: Constant(2.0), {prefix})],
    call_sites: [(name: "infer", upstream: "gpu")],
    stations: [],
    gpu_servers: [GpuServer(name: "gpu", enable_prefix_caching: {caching})],
)"#
    )
}

/// A class whose requests share an S-token system prompt (S = 1,536 of P = 2,048 tokens):
/// every request after the first finds it cached (`n − 1` of `n`: request hit rate
/// h = (n − 1)/n), so the prefill tokens per request fall by h·S/P of the prompt
/// (S/P = 0.75), and its TTFT — one prefill step at an idle server — falls from the
/// step-time model's t(prefill 2,048) to t(512 tokens after 1,536 cached):
///   t = fixed + token·T + compute·max(0, T − ridge) + attention·pairs,
///   miss: T = 2,048, pairs = 2,048·2,049/2 = 2,098,176;
///   hit:  T = 512, pairs = 512·1,536 + 512·513/2 = 917,760,
/// i.e. with the shipped coefficients 51.67 ms (4.66 fixed + 29.01 tokens + 15.92
/// compute-bound + 2.08 attention) → 14.32 ms (4.66 + 7.25 + 1.49 + 0.91): the per-token
/// terms carry the drop, the fixed cost stays. Mean TTFT over n = 100: (t_miss + 99·t_hit)/100.
#[test]
fn a_shared_system_prompt_skips_its_prefill_and_ttft_falls_by_the_model() {
    let (p, s) = (2048u64, 1536u64);
    // 19.9 s: arrivals at 0, 0.2, …, 19.8 s, each answered within 60 ms.
    let mut c = cfg(1, 20);
    c.duration = sim_core::SimDuration::from_ms(19_900);
    let run = |caching, prefix| {
        run_checked(&load(&system_prompt(p as u32, s as u32, caching, prefix)), &c)
    };
    let (on, own, off) = (run(true, true), run(true, false), run(false, true));
    let n = on.requests.len() as u64;
    assert_eq!(n, 100);
    // Prefill tokens: the first prompt whole, then P − S each; without a shared prefix
    // every prompt is whole.
    assert_eq!(get(&on, "gpu_server.gpu.prefill_tokens") as u64, p + (n - 1) * (p - s));
    assert_eq!(get(&own, "gpu_server.gpu.prefill_tokens") as u64, n * p);
    let h = (n - 1) as f64 / n as f64;
    assert_eq!(get(&on, "gpu_server.gpu.prefix_request_hit_rate"), h);
    let token_rate = ((n - 1) * s) as f64 / (n * p) as f64; // = h·S/P
    assert_eq!(get(&on, "gpu_server.gpu.prefix_hit_rate"), token_rate);
    assert_eq!(get(&own, "gpu_server.gpu.prefix_hit_rate"), 0.0);
    let fall = 1.0 - get(&on, "gpu_server.gpu.prefill_tokens") / (n * p) as f64;
    assert!((fall - h * s as f64 / p as f64).abs() < 1e-12, "fall {fall}");
    // Caching off: no prefix columns (the summary of a scenario without it is unchanged).
    assert!(off.summary.get("gpu_server.gpu.prefix_hit_rate").is_none());
    // TTFT of each request = its first token − its arrival, to the nanosecond.
    let miss = H200_LLAMA3_8B.step_time(&StepBatch::prefill(1, p)).as_ns();
    let mut hit_batch = StepBatch::EMPTY;
    hit_batch.add_prefill_chunk(p - s, s);
    let hit = H200_LLAMA3_8B.step_time(&hit_batch).as_ns();
    let ttft = |r: &models::RunOutput| -> Vec<u64> {
        r.requests.iter().map(|q| (q.start.expect("started") - q.arrival).as_ns()).collect()
    };
    let (t_on, t_own, t_off) = (ttft(&on), ttft(&own), ttft(&off));
    assert_eq!(t_on[0], miss);
    assert!(t_on[1..].iter().all(|&t| t == hit), "{:?}", &t_on[..4]);
    assert!(t_own.iter().chain(&t_off).all(|&t| t == miss));
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    let (m_on, m_off) = (mean(&t_on), mean(&t_off));
    eprintln!("TTFT mean {:.3} ms cached vs {:.3} ms uncached", m_on / 1e6, m_off / 1e6);
    assert!((m_on - (miss as f64 + (n - 1) as f64 * hit as f64) / n as f64).abs() < 1e-6);
    assert!((14.2e6..14.4e6).contains(&(hit as f64)) && (51.6e6..51.8e6).contains(&(miss as f64)));
}

/// Documents of 1,024 tokens shared by Zipf-popular keys, 1,200-token prompts (the
/// document, then the request's own 176), 300 requests at 20 a second, one output token
/// (a sequence ends with its prefill: no decode grows its KV, so none is preempted).
fn documents(kv_tokens: u64) -> String {
    format!(
        r#"Scenario(
    name: "documents",
    sources: [(name: "chat", interarrival: Exponential(mean: "50ms"), limit: Some(300), target: "infer",
               prompt_tokens: Constant(1200.0), output_tokens: Constant(1.0),
               keys: Zipf(n: 1000, s: 1.1),
               prefix: [Prefix(scope: Key, tokens: Fixed(1024))])],
    call_sites: [(name: "infer", upstream: "gpu")],
    stations: [],
    gpu_servers: [GpuServer(name: "gpu", enable_prefix_caching: true,
                            kv_cache_tokens: {kv_tokens})],
)"#
    )
}

/// While nothing is evicted (the default pool: 54,375 blocks, far more than 20 s of
/// documents need) a document is found by every request of its key but the first: hits =
/// n − distinct keys, each exactly its 64 blocks (1,024 tokens; the lookup covers 1,199
/// tokens, 74 blocks, but the 65th holds the request's own tokens). With a pool of 2,048
/// blocks (~27 documents) evictions start; hits per admission stay ≤ 1,024 tokens of the
/// 1,200 looked up, so the token hit rate ≤ 1,024/1,200 × the request hit rate, and it
/// falls below the big pool's.
#[test]
fn documents_shared_by_keys_are_found_as_often_as_keys_repeat() {
    let big = run_checked(&load(&documents(870_000)), &cfg(2, 20));
    assert_eq!(get(&big, "source.chat.in_flight_end"), 0.0, "every request admitted");
    let n = big.requests.len() as f64;
    let keys: BTreeSet<u64> = big.requests.iter().map(|r| r.key).collect();
    let repeats = n - keys.len() as f64;
    assert_eq!(get(&big, "gpu_server.gpu.prefix_evictions"), 0.0);
    assert_eq!(get(&big, "gpu_server.gpu.preemptions"), 0.0);
    assert_eq!(get(&big, "gpu_server.gpu.prefix_hit_tokens"), repeats * 1024.0);
    assert_eq!(get(&big, "gpu_server.gpu.prefix_request_hit_rate"), repeats / n);
    let small = run_checked(&load(&documents(2048 * 16)), &cfg(2, 20));
    let (hit, req_hit) = (
        get(&small, "gpu_server.gpu.prefix_hit_rate"),
        get(&small, "gpu_server.gpu.prefix_request_hit_rate"),
    );
    let evictions = get(&small, "gpu_server.gpu.prefix_evictions");
    eprintln!(
        "big pool: {n} requests, {} keys, hit rate {:.4}; small pool: hit rate {hit:.4}, \
         request hit rate {req_hit:.4}, {evictions} evictions",
        keys.len(),
        get(&big, "gpu_server.gpu.prefix_hit_rate")
    );
    assert!(evictions > 0.0);
    assert_eq!(get(&small, "gpu_server.gpu.preemptions"), 0.0);
    assert!(hit <= req_hit * 1024.0 / 1200.0 + 1e-12, "{hit} vs {req_hit}");
    assert!(hit < get(&big, "gpu_server.gpu.prefix_hit_rate"));
}

/// The switch and the block size are sweepable parameters, fixed for a run: a sweep point
/// sets them (checked against the pool's bounds), a timeline change of them is refused.
#[test]
fn prefix_caching_is_swept_not_changed_at_run_time() {
    use models::params::ParamValue;
    let mut sc = load(&system_prompt(2048, 1536, false, true));
    sc.set_param("gpu_server.gpu.enable_prefix_caching", ParamValue::Bool(true)).unwrap();
    sc.set_param("gpu_server.gpu.block_size", ParamValue::Count(32)).unwrap();
    assert_eq!(sc.gpu_servers[0].kv_blocks(), Some(870_000 / 32));
    let e = sc.set_param("gpu_server.gpu.block_size", ParamValue::Count(0)).unwrap_err();
    assert!(e.contains("block_size"), "{e}");
    let r = run_checked(&sc, &cfg(1, 2));
    // 32-token blocks: the 1,536-token system prompt is 48 whole blocks, found by every
    // request after the first: 11 arrivals at 0, 0.2, …, 2 s, each admitted as it arrives
    // (the last one's step starts at 2 s, inside the run).
    assert_eq!(get(&r, "gpu_server.gpu.prefix_hit_tokens"), 10.0 * 1536.0);
    sc.timeline.push(models::scenario::SetParam {
        reload: false,
        at: sim_core::SimDuration::from_secs(1),
        path: "gpu_server.gpu.block_size".into(),
        value: ParamValue::Count(16),
    });
    let e = sc.check_timeline().unwrap_err().to_string();
    assert!(e.contains("block_size"), "{e}");
}
