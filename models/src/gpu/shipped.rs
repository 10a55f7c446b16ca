//! Generated — do not edit by hand. The coefficients of [`StepModel`] fitted by
//! [`super::fit()`] (relative non-negative least squares) to every row of
//! `data/gpu-profile-h200/e2e.csv` (Llama-3-8B shapes, bf16, one H200), and the
//! fit's errors on those rows.
//!
//! Regenerate after changing the fitter or the data:
//! `cargo test -p models --test suite -- --ignored gpu_fit::regenerate_shipped_coefficients`.
//! The test `shipped_coefficients_match_a_refit` fails while this file is stale.

use super::step::{ShippedFit, StepModel};

/// One H200 serving Llama-3-8B (bf16): step-time coefficients.
pub const H200_LLAMA3_8B: StepModel = StepModel {
    fixed_ns: 4659279.138360228,
    token_ns: 14167.389233538359,
    compute_token_ns: 9389.992445718843,
    ridge_tokens: 353,
    kv_token_ns: 27.66715823112358,
    attention_pair_ns: 0.992752630695486,
};

/// [`H200_LLAMA3_8B`] with the errors of its fit.
pub const H200_LLAMA3_8B_FIT: ShippedFit = ShippedFit {
    model: H200_LLAMA3_8B,
    source: "data/gpu-profile-h200/e2e.csv",
    rows: 18,
    mean_abs_pct: 1.8485031196512998,
    worst_abs_pct: 6.8436612743479746,
    worst_row: "line 5: decode batch 64 context 512",
};
