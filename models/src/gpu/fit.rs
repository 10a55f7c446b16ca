//! Fitting a [`StepModel`] to a profile, and its errors.
//!
//! The criterion is relative least squares, Σ ((predicted − measured) / measured)², because
//! errors are judged in percent and the rows span 4.7 ms to 230 ms. For a fixed ridge the
//! model is linear in its five other coefficients; those are found by non-negative least
//! squares (every coefficient is a physical cost, so none may be negative), solved exactly
//! by trying every subset of free coefficients on the normal equations (2⁵ − 1 small
//! systems). The ridge is searched over whole tokens: a geometric grid (1% apart) up to the
//! largest pass in the profile, then every integer around the best grid point.

use super::profile::ProfileRow;
use super::step::StepModel;

/// Unknowns: fixed, per token, compute-bound per token (the hinge), KV per token, attention
/// per pair.
const N: usize = 5;
const HINGE: usize = 2;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("no profile rows to fit")]
    NoRows,
    #[error("no fit with non-negative coefficients: the rows do not determine a step-time model")]
    NoFit,
}

/// How far a model is from a profile, in percent of the measured times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorSummary {
    pub rows: usize,
    /// Mean over rows of |predicted − measured| / measured × 100.
    pub mean_abs_pct: f64,
    /// The largest of those, and its row.
    pub worst_abs_pct: f64,
    pub worst_row: ProfileRow,
}

/// A fitted model and its errors on the rows it was fitted to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FitReport {
    pub model: StepModel,
    pub errors: ErrorSummary,
    /// The criterion at the optimum: Σ squared relative residuals.
    pub relative_sse: f64,
}

/// (predicted − measured) / measured × 100, with the prediction the simulator uses (the
/// step time in whole nanoseconds).
pub fn signed_error_pct(model: &StepModel, row: &ProfileRow) -> f64 {
    let predicted_ms = model.step_time(&row.step_batch()).as_ms_f64();
    (predicted_ms - row.ms_median) / row.ms_median * 100.0
}

/// Mean and worst absolute percentage error of `model` over `rows` (`None` if no rows).
pub fn error_summary(model: &StepModel, rows: &[ProfileRow]) -> Option<ErrorSummary> {
    let first = *rows.first()?;
    let mut s =
        ErrorSummary { rows: rows.len(), mean_abs_pct: 0.0, worst_abs_pct: -1.0, worst_row: first };
    let mut sum = 0.0;
    for r in rows {
        let e = signed_error_pct(model, r).abs();
        sum += e;
        if e > s.worst_abs_pct {
            s.worst_abs_pct = e;
            s.worst_row = *r;
        }
    }
    s.mean_abs_pct = sum / rows.len() as f64;
    Some(s)
}

/// The features of a row other than the hinge (which depends on the ridge), and its tokens.
fn features(row: &ProfileRow) -> ([f64; N], f64) {
    let b = row.step_batch();
    let tokens = b.tokens() as f64;
    ([1.0, tokens, 0.0, b.decode_context_tokens as f64, b.prefill_attention_pairs as f64], tokens)
}

/// The normal equations of the weighted, column-scaled problem for one ridge.
struct Normal {
    gram: [[f64; N]; N],
    rhs: [f64; N],
    /// Σ target² (the weighted targets are all 1, so this is the row count).
    yy: f64,
}

/// Fits the step-time model to `rows` by relative non-negative least squares.
pub fn fit(rows: &[ProfileRow]) -> Result<FitReport, FitError> {
    if rows.is_empty() {
        return Err(FitError::NoRows);
    }
    // Weighted rows: features / measured, target 1 (relative residuals).
    let weighted: Vec<([f64; N], f64)> = rows
        .iter()
        .map(|r| {
            let (mut f, tokens) = features(r);
            for v in &mut f {
                *v /= r.ms_median;
            }
            (f, tokens)
        })
        .collect();
    let max_tokens = weighted.iter().map(|w| w.1).fold(0.0, f64::max);
    // Column scales (the hinge is at most the token column, so it shares its scale).
    let mut scale = [0.0f64; N];
    for (f, _) in &weighted {
        for j in 0..N {
            scale[j] = scale[j].max(f[j].abs());
        }
    }
    scale[HINGE] = scale[1];
    // The block that does not depend on the ridge.
    let mut base = Normal { gram: [[0.0; N]; N], rhs: [0.0; N], yy: rows.len() as f64 };
    for (f, _) in &weighted {
        for i in (0..N).filter(|&i| i != HINGE && scale[i] > 0.0) {
            let fi = f[i] / scale[i];
            base.rhs[i] += fi;
            for j in (0..N).filter(|&j| j != HINGE && scale[j] > 0.0) {
                base.gram[i][j] += fi * f[j] / scale[j];
            }
        }
    }

    let solve_at = |ridge: u64| -> Option<(f64, [f64; N])> {
        let mut ne = Normal { gram: base.gram, rhs: base.rhs, yy: base.yy };
        if scale[HINGE] > 0.0 {
            let r = ridge as f64;
            for (row, (f, tokens)) in rows.iter().zip(&weighted) {
                if *tokens <= r {
                    continue;
                }
                let h = (tokens - r) / row.ms_median / scale[HINGE];
                ne.rhs[HINGE] += h;
                for j in (0..N).filter(|&j| j != HINGE && scale[j] > 0.0) {
                    let v = h * f[j] / scale[j];
                    ne.gram[HINGE][j] += v;
                    ne.gram[j][HINGE] += v;
                }
                ne.gram[HINGE][HINGE] += h * h;
            }
        }
        nnls(&ne)
    };

    // Ridge search: a geometric grid, then every integer near the best point.
    let top = max_tokens.max(1.0) as u64;
    let mut best: Option<(f64, u64, [f64; N])> = None;
    let consider = |ridge: u64, best: &mut Option<(f64, u64, [f64; N])>| {
        if let Some((sse, x)) = solve_at(ridge)
            && best.as_ref().is_none_or(|b| sse < b.0)
        {
            *best = Some((sse, ridge, x));
        }
    };
    let mut r = 1.0f64;
    let mut last = 0;
    while r <= top as f64 {
        let ridge = r.round() as u64;
        if ridge != last {
            consider(ridge, &mut best);
            last = ridge;
        }
        r *= 1.01;
    }
    let (_, coarse, _) = best.ok_or(FitError::NoFit)?;
    let lo = ((coarse as f64 / 1.02).floor() as u64).max(1);
    let hi = ((coarse as f64 * 1.02).ceil() as u64).min(top);
    for ridge in lo..=hi {
        consider(ridge, &mut best);
    }
    let (_, ridge, x) = best.ok_or(FitError::NoFit)?;

    // Back to physical units: the fit is in ms per (scaled) unit.
    let c = |j: usize| if scale[j] > 0.0 { x[j] / scale[j] * 1e6 } else { 0.0 };
    let model = StepModel {
        fixed_ns: c(0),
        token_ns: c(1),
        compute_token_ns: c(HINGE),
        ridge_tokens: ridge,
        kv_token_ns: c(3),
        attention_pair_ns: c(4),
    };
    model.check().map_err(|_| FitError::NoFit)?;
    let relative_sse = rows
        .iter()
        .map(|r| {
            let e = (model.step_ms(&r.step_batch()) - r.ms_median) / r.ms_median;
            e * e
        })
        .sum();
    let errors = error_summary(&model, rows).ok_or(FitError::NoRows)?;
    Ok(FitReport { model, errors, relative_sse })
}

/// Non-negative least squares on normal equations: the best of the unconstrained solutions
/// over every subset of free unknowns that comes out non-negative (the constrained optimum
/// is one of them). Returns (Σ squared residuals, solution); `None` if no subset is usable.
fn nnls(ne: &Normal) -> Option<(f64, [f64; N])> {
    let mut best: Option<(f64, [f64; N])> = None;
    for mask in 1u32..(1 << N) {
        let mut idx = [0usize; N];
        let mut n = 0;
        for j in (0..N).filter(|&j| mask & (1 << j) != 0) {
            idx[n] = j;
            n += 1;
        }
        let Some(sol) = solve_subset(ne, &idx[..n]) else { continue };
        if sol[..n].iter().any(|&v| v < 0.0) {
            continue;
        }
        let mut x = [0.0; N];
        for (k, &j) in idx[..n].iter().enumerate() {
            x[j] = sol[k];
        }
        // ‖Ax − y‖² = yᵀy − 2xᵀAᵀy + xᵀAᵀAx
        let mut sse = ne.yy;
        for (i, xi) in x.iter().enumerate() {
            sse -= 2.0 * xi * ne.rhs[i];
            sse += xi * ne.gram[i].iter().zip(&x).map(|(g, xj)| g * xj).sum::<f64>();
        }
        if best.as_ref().is_none_or(|b| sse < b.0) {
            best = Some((sse, x));
        }
    }
    best
}

/// Solves the normal equations restricted to the unknowns `idx` by Gaussian elimination
/// with partial pivoting; the solution is in the first `idx.len()` places. `None` if the
/// system is (numerically) singular.
fn solve_subset(ne: &Normal, idx: &[usize]) -> Option<[f64; N]> {
    let n = idx.len();
    let mut a = [[0.0f64; N]; N];
    let mut b = [0.0f64; N];
    for (r, &i) in idx.iter().enumerate() {
        b[r] = ne.rhs[i];
        for (c, &j) in idx.iter().enumerate() {
            a[r][c] = ne.gram[i][j];
        }
    }
    let largest = (0..n).map(|i| a[i][i].abs()).fold(0.0, f64::max);
    if largest.is_nan() || largest <= 0.0 {
        return None;
    }
    for col in 0..n {
        let p = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        let pivot = a[p][col].abs();
        if pivot.is_nan() || pivot <= 1e-12 * largest {
            return None;
        }
        a.swap(col, p);
        b.swap(col, p);
        let top = a[col];
        for r in col + 1..n {
            let f = a[r][col] / top[col];
            for (v, t) in a[r][col..n].iter_mut().zip(&top[col..n]) {
                *v -= f * t;
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = [0.0f64; N];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[i][k] * x[k]).sum();
        x[i] = (b[i] - s) / a[i][i];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::profile::Phase;

    fn row(phase: Phase, batch: u64, context_tokens: u64, ms_median: f64) -> ProfileRow {
        ProfileRow { line: 0, phase, batch, context_tokens, ms_median }
    }

    /// Rows generated by a known model are fitted back to it.
    #[test]
    fn recovers_a_known_model() {
        let truth = StepModel {
            fixed_ns: 4_500_000.0,
            token_ns: 12_000.0,
            compute_token_ns: 9_000.0,
            ridge_tokens: 300,
            kv_token_ns: 28.0,
            attention_pair_ns: 1.1,
        };
        let mut rows = vec![];
        for (phase, b, c) in [
            (Phase::Decode, 1, 512),
            (Phase::Decode, 64, 512),
            (Phase::Decode, 256, 512),
            (Phase::Decode, 512, 2048),
            (Phase::Decode, 32, 4096),
            (Phase::Prefill, 1, 128),
            (Phase::Prefill, 1, 1000),
            (Phase::Prefill, 1, 4096),
            (Phase::Prefill, 8, 512),
            (Phase::Prefill, 1, 8192),
        ] {
            let mut r = row(phase, b, c, 1.0);
            r.ms_median = truth.step_ms(&r.step_batch());
            rows.push(r);
        }
        let f = fit(&rows).unwrap();
        assert_eq!(f.model.ridge_tokens, 300);
        for (got, want) in [
            (f.model.fixed_ns, truth.fixed_ns),
            (f.model.token_ns, truth.token_ns),
            (f.model.compute_token_ns, truth.compute_token_ns),
            (f.model.kv_token_ns, truth.kv_token_ns),
            (f.model.attention_pair_ns, truth.attention_pair_ns),
        ] {
            assert!((got - want).abs() <= 1e-6 * want, "{got} vs {want}");
        }
        assert!(f.errors.worst_abs_pct < 1e-4, "{:?}", f.errors);
    }

    #[test]
    fn undetermined_terms_are_zero_not_negative() {
        // Decode rows only, one context: nothing tells KV from tokens or prefill attention.
        let rows = [row(Phase::Decode, 1, 0, 5.0), row(Phase::Decode, 8, 0, 5.5)];
        let f = fit(&rows).unwrap();
        assert!(f.model.check().is_ok());
        assert_eq!(f.model.attention_pair_ns, 0.0);
        assert_eq!(f.model.kv_token_ns, 0.0);
        assert!(f.errors.worst_abs_pct < 1e-6);
        // One row: a constant.
        let f = fit(&rows[..1]).unwrap();
        assert!((f.model.step_ms(&rows[0].step_batch()) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn no_rows_is_an_error() {
        assert_eq!(fit(&[]), Err(FitError::NoRows));
        assert!(error_summary(&crate::gpu::H200_LLAMA3_8B, &[]).is_none());
    }
}
