//! The GPU step-time model against the measured H200 profile (`data/`): fit error
//! over every row, error on rows held out of the fit, physical sanity, and the shipped
//! coefficients staying in step with the fitter.
//!
//! Run with `--nocapture` to see the per-row table. To regenerate the shipped coefficients
//! after changing the fitter or the data:
//! `cargo test -p models --test suite -- --ignored gpu_fit::regenerate_shipped_coefficients`.

use models::gpu::{
    FitReport, H200_LLAMA3_8B, H200_LLAMA3_8B_FIT, Phase, ProfileRow, StepBatch, StepModel,
    error_summary, fit, parse_profile_csv, signed_error_pct,
};

const PROFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/gpu-profile-h200/e2e.csv");
/// How the shipped file names its source (relative to the repository root).
const PROFILE_SOURCE: &str = "data/gpu-profile-h200/e2e.csv";
const SHIPPED_RS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/gpu/shipped.rs");

fn profile() -> Vec<ProfileRow> {
    let text = std::fs::read_to_string(PROFILE).unwrap_or_else(|e| {
        panic!("{PROFILE}: {e} (the profile ships in the repository under data/gpu-profile-h200/)")
    });
    parse_profile_csv(&text).unwrap_or_else(|e| panic!("{PROFILE}: {e}"))
}

fn print_table(title: &str, model: &StepModel, rows: &[ProfileRow]) {
    println!("{title}");
    println!("  {:<32} {:>10} {:>10} {:>8}", "row", "measured", "model", "error");
    for r in rows {
        let p = model.step_time(&r.step_batch()).as_ms_f64();
        let e = signed_error_pct(model, r);
        println!("  {:<32} {:>8.3}ms {:>8.3}ms {:>+7.2}%", r.describe(), r.ms_median, p, e);
    }
}

fn ms(model: &StepModel, b: StepBatch) -> f64 {
    model.step_time(&b).as_ms_f64()
}

#[test]
fn fit_error_over_every_row() {
    let rows = profile();
    assert_eq!(rows.len(), 18, "the profile changed: review the bounds below");
    let f = fit(&rows).unwrap();
    print_table("fit on all rows", &f.model, &rows);
    println!("{:#?}", f.model);
    let e = f.errors;
    println!(
        "all {} rows: mean {:.2}%, worst {:.2}% ({})",
        e.rows,
        e.mean_abs_pct,
        e.worst_abs_pct,
        e.worst_row.describe()
    );
    assert!(e.mean_abs_pct <= 5.0, "mean error {:.2}% > 5%", e.mean_abs_pct);
    assert!(e.worst_abs_pct <= 12.0, "worst error {:.2}% > 12%", e.worst_abs_pct);
}

fn rel(a: f64, b: f64) -> f64 {
    if a == b { 0.0 } else { (a - b).abs() / a.abs().max(b.abs()) }
}

#[test]
fn shipped_coefficients_match_a_refit() {
    let f = fit(&profile()).unwrap();
    let (s, m) = (H200_LLAMA3_8B_FIT, H200_LLAMA3_8B);
    assert_eq!(s.model, m);
    let stale = "the shipped coefficients are stale: run \
                 `cargo test -p models --test suite -- --ignored gpu_fit::regenerate_shipped_coefficients`";
    assert_eq!(m.ridge_tokens, f.model.ridge_tokens, "{stale}");
    for (name, shipped, refit) in [
        ("fixed_ns", m.fixed_ns, f.model.fixed_ns),
        ("token_ns", m.token_ns, f.model.token_ns),
        ("compute_token_ns", m.compute_token_ns, f.model.compute_token_ns),
        ("kv_token_ns", m.kv_token_ns, f.model.kv_token_ns),
        ("attention_pair_ns", m.attention_pair_ns, f.model.attention_pair_ns),
        ("mean_abs_pct", s.mean_abs_pct, f.errors.mean_abs_pct),
        ("worst_abs_pct", s.worst_abs_pct, f.errors.worst_abs_pct),
    ] {
        assert!(rel(shipped, refit) <= 1e-9, "{name}: shipped {shipped}, refit {refit}: {stale}");
    }
    assert_eq!(s.rows, f.errors.rows, "{stale}");
    assert_eq!(s.worst_row, worst_row_text(&f), "{stale}");
    assert_eq!(s.source, PROFILE_SOURCE);
}

fn worst_row_text(f: &FitReport) -> String {
    format!("line {}: {}", f.errors.worst_row.line, f.errors.worst_row.describe())
}

/// Writes `src/gpu/shipped.rs` from a fit to the profile.
#[test]
#[ignore = "writes src/gpu/shipped.rs; run by hand after changing the fitter or the data"]
fn regenerate_shipped_coefficients() {
    let f = fit(&profile()).unwrap();
    let m = f.model;
    let e = f.errors;
    let text = format!(
        r#"//! Generated — do not edit by hand. The coefficients of [`StepModel`] fitted by
//! [`super::fit()`] (relative non-negative least squares) to every row of
//! `{PROFILE_SOURCE}` (Llama-3-8B shapes, bf16, one H200), and the
//! fit's errors on those rows.
//!
//! Regenerate after changing the fitter or the data:
//! `cargo test -p models --test suite -- --ignored gpu_fit::regenerate_shipped_coefficients`.
//! The test `shipped_coefficients_match_a_refit` fails while this file is stale.

use super::step::{{ShippedFit, StepModel}};

/// One H200 serving Llama-3-8B (bf16): step-time coefficients.
pub const H200_LLAMA3_8B: StepModel = StepModel {{
    fixed_ns: {:?},
    token_ns: {:?},
    compute_token_ns: {:?},
    ridge_tokens: {},
    kv_token_ns: {:?},
    attention_pair_ns: {:?},
}};

/// [`H200_LLAMA3_8B`] with the errors of its fit.
pub const H200_LLAMA3_8B_FIT: ShippedFit = ShippedFit {{
    model: H200_LLAMA3_8B,
    source: "{PROFILE_SOURCE}",
    rows: {},
    mean_abs_pct: {:?},
    worst_abs_pct: {:?},
    worst_row: "{}",
}};
"#,
        m.fixed_ns,
        m.token_ns,
        m.compute_token_ns,
        m.ridge_tokens,
        m.kv_token_ns,
        m.attention_pair_ns,
        e.rows,
        e.mean_abs_pct,
        e.worst_abs_pct,
        worst_row_text(&f),
    );
    std::fs::write(SHIPPED_RS, text).unwrap();
    println!("wrote {SHIPPED_RS}: {m:#?}");
}

/// Extrapolation: fit on the rows whose passes and contexts are at most 2048 tokens, predict
/// the four rows at 8192 (a 4× longer context, 4× more prompt tokens).
#[test]
fn held_out_larger_shapes_are_predicted_within_6_percent() {
    let rows = profile();
    let big = |r: &ProfileRow| r.step_batch().tokens() >= 8192 || r.context_tokens >= 8192;
    let (test, train): (Vec<ProfileRow>, Vec<ProfileRow>) = rows.iter().partition(|r| big(r));
    assert_eq!((train.len(), test.len()), (14, 4));
    let f = fit(&train).unwrap();
    print_table("fit on ≤ 2048-token shapes, held-out 8192-token rows:", &f.model, &test);
    let e = error_summary(&f.model, &test).unwrap();
    println!("held out: mean {:.2}%, worst {:.2}%", e.mean_abs_pct, e.worst_abs_pct);
    assert!(e.worst_abs_pct <= 6.0, "{e:?}");
}

/// The largest decode batch (256), held out, from a fit on the others.
#[test]
fn held_out_largest_batch_is_predicted_within_5_percent() {
    let rows = profile();
    let (test, train): (Vec<ProfileRow>, Vec<ProfileRow>) =
        rows.iter().partition(|r| r.phase == Phase::Decode && r.batch == 256);
    assert_eq!(test.len(), 1);
    let f = fit(&train).unwrap();
    let e = signed_error_pct(&f.model, &test[0]);
    println!("held out {}: {e:+.2}%", test[0].describe());
    assert!(e.abs() <= 5.0, "{e}");
}

/// Leave-one-out: each row predicted by a fit on the other 17.
#[test]
fn leave_one_out_mean_within_4_percent_worst_within_10() {
    let rows = profile();
    let mut errors = vec![];
    for i in 0..rows.len() {
        let mut train = rows.clone();
        let held = train.remove(i);
        let f = fit(&train).unwrap();
        let e = signed_error_pct(&f.model, &held);
        println!("  {:<32} {e:+6.2}%  (ridge {})", held.describe(), f.model.ridge_tokens);
        errors.push(e.abs());
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let worst = errors.iter().copied().fold(0.0, f64::max);
    println!("leave-one-out: mean {mean:.2}%, worst {worst:.2}%");
    assert!(mean <= 4.0 && worst <= 10.0, "mean {mean:.2}%, worst {worst:.2}%");
}

#[test]
fn spec_anchors_within_3_percent() {
    let m = H200_LLAMA3_8B;
    for (what, got, want) in [
        ("decode batch 1, context 512", ms(&m, StepBatch::decode(1, 512)), 4.75),
        ("decode batch 256, context 512", ms(&m, StepBatch::decode(256, 512)), 11.8),
        ("prefill of 2048 tokens", ms(&m, StepBatch::prefill(1, 2048)), 51.0),
    ] {
        println!("{what}: {got:.3} ms (the sources' {want} ms)");
        assert!(rel(got, want) <= 0.03, "{what}: {got} ms vs {want} ms");
    }
}

#[test]
fn step_time_grows_with_batch_context_and_prompt() {
    let m = H200_LLAMA3_8B;
    assert!(m.check().is_ok());
    for context in [0, 1, 512, 2048, 8192, 32768] {
        let mut last = 0.0;
        for b in 1..=1024 {
            let t = ms(&m, StepBatch::decode(b, context));
            assert!(t >= last, "decode batch {b} context {context}: {t} < {last}");
            last = t;
        }
    }
    for b in [1, 16, 256] {
        let mut last = 0.0;
        for context in (0..=65536).step_by(64) {
            let t = ms(&m, StepBatch::decode(b, context));
            assert!(t >= last, "decode batch {b} context {context}");
            last = t;
        }
        assert!(ms(&m, StepBatch::decode(b, 8192)) > ms(&m, StepBatch::decode(b, 512)));
    }
    let mut last = 0.0;
    for len in 1..=16384 {
        let t = ms(&m, StepBatch::prefill(1, len));
        assert!(t >= last, "prefill {len}");
        last = t;
    }
    // Quadratic attention: one long prompt costs more than the same tokens as short ones.
    assert!(ms(&m, StepBatch::prefill(1, 8192)) > ms(&m, StepBatch::prefill(16, 512)));
}

/// A mixed step (chunked prefill + decodes in one pass) pays the fixed cost once: it costs
/// less than the two steps run separately — at least the fixed cost not hidden by the
/// roofline less — and no less than either alone.
#[test]
fn mixed_steps_cost_less_than_separate_steps() {
    let m = H200_LLAMA3_8B;
    let saving_ms = (m.fixed_ns - m.implied_weight_read_ns()) / 1e6;
    assert!(
        saving_ms > 0.5,
        "fixed {} ns vs implied weight read {} ns",
        m.fixed_ns,
        m.implied_weight_read_ns()
    );
    for (b, c) in [(1, 512), (16, 2048), (64, 2048), (256, 512), (512, 4096), (1024, 8192)] {
        for p in [1, 64, 256, 512, 2048, 8192] {
            let d = StepBatch::decode(b, c);
            let mut chunk = StepBatch::EMPTY;
            chunk.add_prefill_chunk(p, 1024);
            let (td, tp, tm) = (ms(&m, d), ms(&m, chunk), ms(&m, d.with(chunk)));
            assert!(tm <= td + tp - saving_ms + 1e-6, "{b}×{c} + {p}: {tm} vs {td} + {tp}");
            assert!(tm >= td.max(tp), "{b}×{c} + {p}: {tm} < max({td}, {tp})");
        }
    }
    let (d, p) = (StepBatch::decode(64, 2048), StepBatch::prefill(1, 512));
    println!(
        "decode 64×2048 {:.3} ms + prefill 512 {:.3} ms separately; mixed {:.3} ms",
        ms(&m, d),
        ms(&m, p),
        ms(&m, d.with(p))
    );
}

/// The fitted coefficients, read as hardware rates, stay under the H200's peaks (4.8 TB/s
/// HBM, 989 TFLOPS dense bf16) and within a factor two of them.
#[test]
fn coefficients_are_physically_plausible() {
    let m = H200_LLAMA3_8B;
    // Llama-3-8B shapes (info.json): 32 layers, hidden 4096, 8 kv heads × 128, ffn 14336,
    // vocab 128256.
    let (layers, hidden, kv, ffn, vocab) = (32.0, 4096.0, 8.0 * 128.0, 14336.0, 128256.0);
    let per_layer = hidden * hidden * 2.0 + hidden * kv * 2.0 + 3.0 * hidden * ffn;
    let params = layers * per_layer + vocab * hidden; // read each step (lm_head included)
    let kv_bytes_per_token = 2.0 * layers * kv * 2.0; // K and V, bf16
    assert_eq!(kv_bytes_per_token, 131072.0);
    let kv_tb_s = kv_bytes_per_token / m.kv_token_ns / 1e3;
    let weight_tb_s = params * 2.0 / m.implied_weight_read_ns() / 1e3;
    let gemm_tflops = 2.0 * params / (m.token_ns + m.compute_token_ns) / 1e3;
    let attention_tflops = 4.0 * 128.0 * 32.0 * layers / m.attention_pair_ns / 1e3;
    println!(
        "KV read {kv_tb_s:.2} TB/s, weight read {weight_tb_s:.2} TB/s ({:.2} ms), \
         compute-bound GEMMs {gemm_tflops:.0} TFLOPS, prefill attention {attention_tflops:.0} TFLOPS",
        m.implied_weight_read_ns() / 1e6
    );
    assert!((2.4..=4.8).contains(&kv_tb_s), "{kv_tb_s}");
    assert!((2.4..=4.8).contains(&weight_tb_s), "{weight_tb_s}");
    assert!((300.0..=989.0).contains(&gemm_tflops), "{gemm_tflops}");
    assert!((250.0..=989.0).contains(&attention_tflops), "{attention_tflops}");
}

/// The per-operator profile (`ops.csv`, one layer, kernels timed one by one) is independent
/// of the whole-pass rows the model was fitted to; its slopes must agree with the fitted
/// terms within 20%: KV read per cached token (attn_decode), prefill attention per pair
/// (attn_prefill) and the compute-bound cost per token (the layer's GEMMs and elementwise
/// kernels, 2048 → 8192 tokens), each × 32 layers.
#[test]
fn per_operator_profile_corroborates_the_terms() {
    let path = PROFILE.replace("e2e.csv", "ops.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (op, tokens, batch, context, us) =
        (col("op"), col("tokens"), col("batch"), col("context"), col("us_median"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let us_of = |name: &str, t: &str, b: &str, c: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[op] == name && r[tokens] == t && r[batch] == b && r[context] == c)
            .unwrap_or_else(|| panic!("ops.csv has no {name} {t} {b} {c}"));
        r[us].parse().unwrap()
    };
    let layers = 32.0;
    let m = H200_LLAMA3_8B;
    // KV read: batch 256, context 512 → 8192.
    let kv_ns = (us_of("attn_decode", "256", "256", "8192")
        - us_of("attn_decode", "256", "256", "512"))
        * 1e3
        / (256.0 * (8192.0 - 512.0))
        * layers;
    // Prefill attention: one prompt, 2048 → 8192 tokens.
    let pairs = |l: f64| l * (l + 1.0) / 2.0;
    let pair_ns = (us_of("attn_prefill", "8192", "1", "8192")
        - us_of("attn_prefill", "2048", "1", "2048"))
        * 1e3
        / (pairs(8192.0) - pairs(2048.0))
        * layers;
    // Compute-bound tokens: everything but attention in a layer (two norms), 2048 → 8192.
    let layer_us = |t: &str| -> f64 {
        ["qkv_proj", "o_proj", "gate_up_proj", "down_proj", "silu_mul", "rms_norm", "rms_norm"]
            .iter()
            .map(|o| us_of(o, t, "", ""))
            .sum()
    };
    let token_ns = (layer_us("8192") - layer_us("2048")) * 1e3 / (8192.0 - 2048.0) * layers;
    for (what, ops, fitted) in [
        ("KV read per cached token", kv_ns, m.kv_token_ns),
        ("prefill attention per pair", pair_ns, m.attention_pair_ns),
        ("compute-bound token", token_ns, m.token_ns + m.compute_token_ns),
    ] {
        println!("{what}: ops.csv {ops:.4} ns, fitted {fitted:.4} ns");
        assert!(rel(ops, fitted) <= 0.2, "{what}: ops.csv {ops} ns vs fitted {fitted} ns");
    }
}
