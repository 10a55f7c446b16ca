//! Min/max decimation of a plotted line: of the points in the visible time range, at most
//! two per pixel column are kept — the lowest and the highest, in time order — so a line of
//! hours of one-second buckets costs the plot what its width in pixels costs, and no peak
//! or trough disappears. The first point before and after the range are kept too, so the
//! line runs on to the plot's edges.

use egui_plot::PlotPoint;
use std::borrow::Cow;

/// `pts` (sorted by x) within `[x0, x1]` reduced to at most two points per column of
/// `columns` equal columns (plus the neighbours outside the range); borrowed as they are
/// when they are already that few.
pub fn decimate(pts: &[PlotPoint], x0: f64, x1: f64, columns: usize) -> Cow<'_, [PlotPoint]> {
    let lo = pts.partition_point(|p| p.x < x0).saturating_sub(1);
    let hi = (pts.partition_point(|p| p.x <= x1) + 1).min(pts.len());
    let visible = &pts[lo..hi];
    let columns = columns.max(1);
    if visible.len() <= 2 * columns + 2 || x1 <= x0 {
        return Cow::Borrowed(visible);
    }
    let width = (x1 - x0) / columns as f64;
    let column = |x: f64| (((x - x0) / width).floor().max(-1.0) as i64).min(columns as i64);
    let mut out = Vec::with_capacity(2 * columns + 2);
    let mut i = 0;
    while i < visible.len() {
        let c = column(visible[i].x);
        let (mut min, mut max) = (i, i);
        let mut j = i + 1;
        while j < visible.len() && column(visible[j].x) == c {
            if visible[j].y < visible[min].y {
                min = j;
            }
            if visible[j].y > visible[max].y {
                max = j;
            }
            j += 1;
        }
        out.push(visible[min.min(max)]);
        if min != max {
            out.push(visible[min.max(max)]);
        }
        i = j;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Vec<PlotPoint> {
        // A deterministic zig-zag with one spike: every column has a low and a high.
        (0..n)
            .map(|i| {
                let y = if i == 1234 { 1e6 } else { ((i * 37) % 101) as f64 };
                PlotPoint::new(i as f64, y)
            })
            .collect()
    }

    #[test]
    fn keeps_at_most_two_points_per_column_and_every_extreme() {
        let pts = line(36_000);
        let out = decimate(&pts, 0.0, 35_999.0, 1000);
        assert!(out.len() <= 2 * 1000 + 2, "{}", out.len());
        assert!(out.windows(2).all(|w| w[0].x < w[1].x), "time order");
        let max = |s: &[PlotPoint]| s.iter().map(|p| p.y).fold(f64::MIN, f64::max);
        let min = |s: &[PlotPoint]| s.iter().map(|p| p.y).fold(f64::MAX, f64::min);
        assert_eq!(max(&out), 1e6, "the spike survives");
        // Per column (36 points each), the column's extremes are kept.
        for c in pts.chunks(36).take(50) {
            let inside: Vec<PlotPoint> =
                out.iter().copied().filter(|p| p.x >= c[0].x && p.x <= c[35].x).collect();
            assert_eq!((min(&inside), max(&inside)), (min(c), max(c)));
        }
    }

    #[test]
    fn a_window_keeps_its_neighbours_and_few_points_stay_borrowed() {
        let pts = line(3600);
        let out = decimate(&pts, 3540.0, 3600.0, 1000);
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!((out[0].x, out[out.len() - 1].x), (3539.0, 3599.0));
        assert_eq!(out.len(), 61);
        assert!(decimate(&[], 0.0, 1.0, 10).is_empty());
    }
}
