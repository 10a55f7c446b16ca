//! Goodness of fit: Kolmogorov–Smirnov statistics (one and two samples), nearest-rank
//! quantiles and QQ points.

/// The one-sample KS statistic sup |F_n − F| of `sorted` (ascending) against `cdf`.
pub fn ks(sorted: &[f64], cdf: &dyn Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted.iter().enumerate().fold(0.0, |d: f64, (i, &x)| {
        let f = cdf(x);
        d.max(f - i as f64 / n).max((i + 1) as f64 / n - f)
    })
}

/// The two-sample KS statistic of two ascending samples.
pub fn ks2(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

/// The 5% critical value of the one-sample KS statistic for n values (asymptotic,
/// 1.358/√n), or of the two-sample one with `m` the other size (1.358·√((n+m)/(n·m))).
pub fn critical(n: usize, m: Option<usize>) -> f64 {
    let (n, m) = (n as f64, m.map(|m| m as f64));
    match m {
        None => 1.358 / n.sqrt(),
        Some(m) => 1.358 * ((n + m) / (n * m)).sqrt(),
    }
}

/// The nearest-rank quantile of an ascending sample (the k-th smallest, k = ⌈q·n⌉ ≥ 1).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

/// QQ points at the deciles and p95, p99: (probability, sample quantile, model quantile).
pub fn qq(sorted: &[f64], inv: &dyn Fn(f64) -> f64) -> Vec<(f64, f64, f64)> {
    [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
        .iter()
        .map(|&p| (p, quantile(sorted, p), inv(p)))
        .collect()
}

/// Sorted copy.
pub fn sorted(xs: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = xs.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_of_a_uniform_grid_and_of_two_samples() {
        // x_i = (i + 0.5)/n against U(0, 1): the largest gap is 0.5/n.
        let xs: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
        assert!((ks(&xs, &|x| x) - 0.005).abs() < 1e-12);
        assert_eq!(ks2(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 0.0);
        assert_eq!(ks2(&[1.0, 2.0], &[3.0, 4.0]), 1.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), 3.0);
        assert!((critical(100, None) - 0.1358).abs() < 1e-12);
    }
}
