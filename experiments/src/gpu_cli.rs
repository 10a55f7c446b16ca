//! `stormglass gpu-model`: what the GPU step-time model assumes, for one step.
//!
//! Prints the step time of one server step (B decode sequences with C cached tokens each,
//! plus an optional prefill chunk of P tokens), its split by term, and the fit's error on
//! the profile, so a user can see what a GPU scenario assumes before trusting it. Uses the
//! coefficients shipped in `models::gpu`, or refits on a profile given with `--fit`.

use models::gpu::{
    H200_LLAMA3_8B_FIT, Phase, ProfileRow, StepBatch, StepModel, error_summary, fit,
    parse_profile_csv,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the profile the shipped coefficients were fitted to is looked for (the first that
/// exists): `data/` from the working directory (the repository root), then from where
/// the binary was built.
const PROFILE_CANDIDATES: &[&str] = &[
    "data/gpu-profile-h200/e2e.csv",
    concat!(env!("CARGO_MANIFEST_DIR"), "/../data/gpu-profile-h200/e2e.csv"),
];

/// Bounds on the arguments (far beyond any GPU's memory, well inside the clock's range).
const MAX_SEQS: i64 = 1 << 20;
const MAX_TOKENS: i64 = 1 << 24;

#[derive(clap::Args, Clone, Debug)]
pub struct GpuModelArgs {
    /// Refit on this profile CSV (columns phase, batch, context, ms_median, found by header
    /// name, as in e2e.csv) instead of using the shipped H200 coefficients.
    #[arg(long, value_name = "FILE")]
    pub fit: Option<PathBuf>,
    /// Decoding sequences in the step (one token each; 0 for a prefill-only step; ≤ 2²⁰).
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u32).range(0..=MAX_SEQS))]
    pub decode: u32,
    /// Tokens already cached per decoding sequence (≤ 2²⁴).
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u32).range(0..=MAX_TOKENS))]
    pub context: u32,
    /// A prefill chunk of P prompt tokens in the same step (a whole prompt, nothing cached;
    /// 1 ≤ P ≤ 2²⁴).
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=MAX_TOKENS))]
    pub prefill: Option<u32>,
}

/// Runs the subcommand: the report on stdout (exit 0), or an error on stderr (exit 2).
pub fn run(args: &GpuModelArgs) -> ExitCode {
    match report(args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpu-model: {e}");
            ExitCode::from(2)
        }
    }
}

fn read_profile(path: &Path) -> Result<Vec<ProfileRow>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse_profile_csv(&text).map_err(|e| {
        if e.line == 0 {
            format!("{}: {}", path.display(), e.message)
        } else {
            format!("{}:{}: {}", path.display(), e.line, e.message)
        }
    })
}

fn error_line(out: &mut String, source: &str, model: &StepModel, rows: &[ProfileRow]) {
    if let Some(e) = error_summary(model, rows) {
        let _ = writeln!(
            out,
            "fit error on {source}: {} rows, mean {:.2}%, worst {:.2}% (line {}: {})",
            e.rows,
            e.mean_abs_pct,
            e.worst_abs_pct,
            e.worst_row.line,
            e.worst_row.describe()
        );
    }
}

/// A note when the step is larger than anything measured (the model then extrapolates).
fn beyond_the_profile(
    out: &mut String,
    rows: &[ProfileRow],
    decode: u64,
    context: u64,
    tokens: u64,
) {
    let decodes = rows.iter().filter(|r| r.phase == Phase::Decode);
    let max_batch = decodes.clone().map(|r| r.batch).max().unwrap_or(0);
    let max_context = decodes.map(|r| r.context_tokens).max().unwrap_or(0);
    let max_tokens = rows.iter().map(|r| r.step_batch().tokens()).max().unwrap_or(0);
    if decode > max_batch || (decode > 0 && context > max_context) || tokens > max_tokens {
        let _ = writeln!(
            out,
            "note: this step is larger than the profiled ones (decode batch ≤ {max_batch}, \
             context ≤ {max_context}, ≤ {max_tokens} tokens per pass): the model extrapolates"
        );
    }
}

/// The report as text (everything `run` prints), or an error message.
pub fn report(args: &GpuModelArgs) -> Result<String, String> {
    let decode = u64::from(args.decode);
    let context = u64::from(args.context);
    let prefill = args.prefill.map_or(0, u64::from);
    if decode == 0 && prefill == 0 {
        return Err("empty step: --decode 0 and no --prefill; give decode sequences, a prefill \
                    chunk, or both"
            .into());
    }
    let mut out = String::new();
    // The model, and the rows to report its error on (or why there are none).
    let (model, profile) = match &args.fit {
        Some(path) => {
            let rows = read_profile(path)?;
            let f = fit(&rows).map_err(|e| format!("{}: {e}", path.display()))?;
            let _ = writeln!(out, "model: fitted to {} ({} rows)", path.display(), rows.len());
            (f.model, Ok((path.display().to_string(), rows)))
        }
        None => {
            let _ = writeln!(
                out,
                "model: shipped coefficients (one H200, Llama-3-8B shapes, bf16; fitted to {})",
                H200_LLAMA3_8B_FIT.source
            );
            let profile = match PROFILE_CANDIDATES.iter().map(Path::new).find(|p| p.is_file()) {
                Some(p) => {
                    let shown = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
                    read_profile(p).map(|rows| (shown.display().to_string(), rows))
                }
                None => Err(format!("{} not found", PROFILE_CANDIDATES[0])),
            };
            (H200_LLAMA3_8B_FIT.model, profile)
        }
    };
    let m = &model;
    let _ = writeln!(
        out,
        "  fixed {:.3} ms/step; {:.3} µs/token, +{:.3} µs/token beyond {} tokens \
         (compute-bound); KV read {:.2} ns/cached token; prefill attention {:.4} ns/query-key pair",
        m.fixed_ns / 1e6,
        m.token_ns / 1e3,
        m.compute_token_ns / 1e3,
        m.ridge_tokens,
        m.kv_token_ns,
        m.attention_pair_ns
    );

    let decode_batch = StepBatch::decode(decode, context);
    let prefill_batch = StepBatch::prefill(u64::from(prefill > 0), prefill);
    let step = decode_batch.with(prefill_batch);
    let mut what = vec![];
    if decode > 0 {
        what.push(format!("{decode} decode sequences × {context} cached tokens"));
    }
    if prefill > 0 {
        what.push(format!("prefill chunk of {prefill} tokens"));
    }
    let _ =
        writeln!(out, "step: {} = {} tokens in one forward pass", what.join(" + "), step.tokens());
    let ms = |b: &StepBatch| m.step_time(b).as_ms_f64();
    let _ = writeln!(out, "step time: {:.3} ms", ms(&step));
    let p = m.parts(&step);
    let _ = writeln!(
        out,
        "  = fixed {:.3} + tokens {:.3} + compute-bound {:.3} + KV read {:.3} + prefill \
         attention {:.3} (ms)",
        p.fixed_ns / 1e6,
        p.tokens_ns / 1e6,
        p.compute_bound_ns / 1e6,
        p.kv_read_ns / 1e6,
        p.prefill_attention_ns / 1e6
    );
    if decode > 0 && prefill > 0 {
        let (d, f) = (ms(&decode_batch), ms(&prefill_batch));
        let _ = writeln!(
            out,
            "  as separate steps: decode {d:.3} ms + prefill {f:.3} ms = {:.3} ms",
            d + f
        );
    }

    match profile {
        Ok((source, rows)) => {
            error_line(&mut out, &source, m, &rows);
            beyond_the_profile(&mut out, &rows, decode, context, step.tokens());
        }
        Err(why) => {
            let s = H200_LLAMA3_8B_FIT;
            let _ = writeln!(
                out,
                "fit error: not available here ({why}); when the coefficients were generated: \
                 {} rows, mean {:.2}%, worst {:.2}% ({})",
                s.rows, s.mean_abs_pct, s.worst_abs_pct, s.worst_row
            );
        }
    }
    Ok(out)
}
