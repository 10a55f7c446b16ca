//! Statistics across replications: mean, standard error, Student-t confidence intervals
//! (quantiles from `statrs`).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Summary of independent replications of one quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replications {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator); 0 when n < 2.
    pub std_dev: f64,
    /// Standard error of the mean; 0 when n < 2.
    pub std_err: f64,
}

impl Replications {
    /// `None` for an empty slice or one with a non-finite value.
    pub fn of(xs: &[f64]) -> Option<Self> {
        if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = xs.len();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let std_dev = if n > 1 {
            (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Replications { n, mean, std_dev, std_err: std_dev / (n as f64).sqrt() })
    }

    /// Half-width of the two-sided confidence interval at `level` (e.g. 0.95); `None` with
    /// fewer than two replications.
    pub fn ci_half_width(&self, level: f64) -> Option<f64> {
        if self.n < 2 || !(0.0..1.0).contains(&level) {
            return None;
        }
        let t = StudentsT::new(0.0, 1.0, (self.n - 1) as f64).ok()?;
        Some(t.inverse_cdf(0.5 + level / 2.0) * self.std_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_matches_tables() {
        // n = 10: t(0.975, 9) = 2.262157
        let xs: Vec<f64> = (1..=10).map(|i| i as f64).collect();
        let r = Replications::of(&xs).unwrap();
        assert_eq!(r.mean, 5.5);
        let sd = (82.5f64 / 9.0).sqrt();
        assert!((r.std_dev - sd).abs() < 1e-12);
        let hw = r.ci_half_width(0.95).unwrap();
        assert!((hw - 2.262157 * sd / 10f64.sqrt()).abs() < 1e-5, "{hw}");
        assert_eq!(Replications::of(&[1.0]).unwrap().ci_half_width(0.95), None);
        assert_eq!(Replications::of(&[]), None);
    }
}
