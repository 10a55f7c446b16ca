//! What a search found, as text and as `rounds.parquet`: the best settings with their
//! confidence intervals, the survivors not separated from it, the Pareto front of the two
//! objectives, and one row per candidate per round.

use super::Search;
use super::drive::Outcome;
use super::race::{Fate, Row, stat};
use polars::prelude::*;
use std::fmt::Write;

/// `variant "fix" gate.llm.permits=80` for candidate `c`.
pub fn label(s: &Search, c: usize) -> String {
    let run = &s.plan.runs[c * s.plan.seeds.len()];
    let params: Vec<String> = s
        .plan
        .swept
        .iter()
        .zip(&run.params)
        .filter_map(|(p, v)| Some(format!("{p}={}", v.as_ref()?)))
        .collect();
    format!("{} {}", run.variant, params.join(" ")).trim_end().to_string()
}

/// The final row of each candidate (its most seeds).
fn last_rows(rows: &[Row], n: usize) -> Vec<Option<&Row>> {
    let mut last: Vec<Option<&Row>> = vec![None; n];
    for r in rows {
        last[r.candidate] = Some(r);
    }
    last
}

/// The best candidate: alive at the end, every constraint holding at its mean, the best
/// mean objective (the first on ties).
pub fn best(s: &Search, o: &Outcome) -> Option<usize> {
    let last = last_rows(&o.rows, s.candidates());
    let sign = if s.objective.maximize { 1.0 } else { -1.0 };
    (0..s.candidates())
        .filter(|&c| o.fates[c] == Fate::Alive)
        .filter_map(|c| {
            let r = last[c]?;
            let holds = s
                .constraints
                .iter()
                .zip(&r.constraints)
                .all(|(b, st)| st.is_some_and(|st| b.holds(st.mean)));
            Some((c, sign * r.objective?.mean)).filter(|_| holds)
        })
        .fold(None, |acc: Option<(usize, f64)>, (c, v)| match acc {
            Some((_, a)) if a >= v => acc,
            _ => Some((c, v)),
        })
        .map(|(c, _)| c)
}

/// A point of the Pareto front: candidate, (mean, half-width) of the objective and of
/// the second metric over the common seeds.
pub type FrontPoint = (usize, (f64, f64), (f64, f64));

/// The Pareto front of the objective and `s.pareto` over the candidates not failed or
/// infeasible, on the seeds every candidate ran; sorted by the objective, best first.
pub fn pareto(s: &Search, o: &Outcome) -> Vec<FrontPoint> {
    let Some(p2) = &s.pareto else { return vec![] };
    let k = 1 + s.constraints.len();
    let seeds = s.plan.seeds.len();
    let mut pts: Vec<FrontPoint> = Vec::new();
    for c in 0..s.candidates() {
        if matches!(o.fates[c], Fate::Failed { .. } | Fate::Infeasible { .. }) {
            continue;
        }
        let vals: Option<Vec<(f64, f64)>> = (0..o.common_seeds)
            .map(|j| {
                let v = o.samples.get(&(c * seeds + j))?.as_ref().ok()?;
                Some((v[0]?, v[k]?))
            })
            .collect();
        let Some(vals) = vals else { continue };
        let a: Vec<f64> = vals.iter().map(|v| v.0).collect();
        let b: Vec<f64> = vals.iter().map(|v| v.1).collect();
        let (sa, sb) = (stat(&a, s.confidence, 0.0), stat(&b, s.confidence, 0.0));
        pts.push((c, (sa.mean, sa.ci), (sb.mean, sb.ci)));
    }
    let better = |x: f64, y: f64, max: bool| if max { x > y } else { x < y };
    let no_worse = |x: f64, y: f64, max: bool| if max { x >= y } else { x <= y };
    let (m1, m2) = (s.objective.maximize, p2.maximize);
    let dominated = |p: &FrontPoint| {
        pts.iter().any(|q| {
            no_worse(q.1.0, p.1.0, m1)
                && no_worse(q.2.0, p.2.0, m2)
                && (better(q.1.0, p.1.0, m1) || better(q.2.0, p.2.0, m2))
        })
    };
    let mut front: Vec<FrontPoint> = pts.iter().filter(|p| !dominated(p)).cloned().collect();
    front.sort_by(|x, y| {
        let o = x.1.0.total_cmp(&y.1.0);
        if m1 { o.reverse() } else { o }
    });
    front
}

/// `x` to 4 significant digits (shares of 0.003 stay readable).
fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

fn pm(mean: f64, ci: f64) -> String {
    if ci.is_finite() { format!("{} ± {}", sig(mean), sig(ci)) } else { sig(mean) }
}

/// The console report of one race.
pub fn text(s: &Search, o: &Outcome, title: &str) -> String {
    let mut t = String::new();
    let seeds = s.plan.seeds.len();
    let level = s.confidence * 100.0;
    let _ = writeln!(
        t,
        "{title}: {} candidates × up to {seeds} seeds; {}; {} constraint(s)",
        s.candidates(),
        s.objective.label(),
        s.constraints.len()
    );
    let mut round = 0;
    for r in &o.rows {
        if r.round == round {
            continue;
        }
        round = r.round;
        let these: Vec<&Row> = o.rows.iter().filter(|x| x.round == round).collect();
        let count = |f: &str| these.iter().filter(|x| x.fate.name() == f).count();
        let _ = writeln!(
            t,
            "  round {round}: {} candidates on {} seeds → {} alive, {} worse, {} infeasible, {} failed",
            these.len(),
            these[0].seeds,
            count("alive"),
            count("worse"),
            count("infeasible"),
            count("failed")
        );
    }
    let _ = writeln!(
        t,
        "  runs: {} of the grid's {} ({:.0}%): {} made now, {} found done; wall {:.2} s",
        o.ran + o.reused,
        s.plan.runs.len(),
        100.0 * (o.ran + o.reused) as f64 / s.plan.runs.len() as f64,
        o.ran,
        o.reused,
        o.wall_seconds
    );
    for (c, f) in o.fates.iter().enumerate() {
        if let Fate::Failed { why } = f {
            let _ = writeln!(t, "  failed: {}: {why}", label(s, c));
        }
    }
    let last = last_rows(&o.rows, s.candidates());
    match best(s, o) {
        None => {
            let _ = writeln!(t, "no candidate satisfies the constraints at its mean");
        }
        Some(b) => {
            let r = last[b].expect("judged");
            let obj = r.objective.expect("alive");
            let _ = writeln!(t, "best: {}", label(s, b));
            let _ = writeln!(
                t,
                "  {} = {} ({level:.0}% CI, {} seeds)",
                s.objective.metric,
                pm(obj.mean, obj.ci),
                r.seeds
            );
            for (bd, st) in s.constraints.iter().zip(&r.constraints) {
                let st = st.expect("alive");
                let inside = if bd.upper() { st.high } else { st.low };
                let proven =
                    if bd.holds(inside) { "holds" } else { "holds at the mean, not proven" };
                let _ = writeln!(
                    t,
                    "  {} = {}: {} {proven}",
                    bd.metric,
                    pm(st.mean, st.ci),
                    bd.label()
                );
            }
            for c in (0..s.candidates()).filter(|&c| c != b && o.fates[c] == Fate::Alive) {
                let d = paired(s, o, b, c);
                let _ = writeln!(
                    t,
                    "  not separated from the best: {} (best − it = {}, paired, {} seeds)",
                    label(s, c),
                    pm(d.0, d.1),
                    last[c].map_or(0, |r| r.seeds)
                );
            }
        }
    }
    if let Some(p2) = &s.pareto {
        let _ = writeln!(
            t,
            "Pareto front ({}, {}; means ± {level:.0}% CI over the {} seeds every candidate ran):",
            s.objective.label(),
            p2.label(),
            o.common_seeds
        );
        for (c, a, b) in pareto(s, o) {
            let _ = writeln!(
                t,
                "  {:<40} {} = {}  {} = {}",
                label(s, c),
                s.objective.metric,
                pm(a.0, a.1),
                p2.metric,
                pm(b.0, b.1)
            );
        }
    }
    t
}

/// `a − b` of the objective paired on the seeds both ran: (mean, two-sided half-width).
fn paired(s: &Search, o: &Outcome, a: usize, b: usize) -> (f64, f64) {
    let seeds = s.plan.seeds.len();
    let d: Vec<f64> = (0..seeds)
        .map_while(|j| {
            let x = o.samples.get(&(a * seeds + j))?.as_ref().ok()?[0]?;
            let y = o.samples.get(&(b * seeds + j))?.as_ref().ok()?[0]?;
            Some(x - y)
        })
        .collect();
    if d.len() < 2 {
        return (d.first().copied().unwrap_or(f64::NAN), f64::NAN);
    }
    let st = stat(&d, s.confidence, 0.0);
    (st.mean, st.ci)
}

/// `rounds.parquet`: one row per candidate alive at the start of each round.
pub fn rounds_frame(s: &Search, rows: &[Row]) -> PolarsResult<DataFrame> {
    let n = rows.len();
    let seeds = s.plan.seeds.len();
    let f = |g: &dyn Fn(&Row) -> Option<f64>| rows.iter().map(g).collect::<Vec<Option<f64>>>();
    let mut cols = vec![
        Column::new("round".into(), rows.iter().map(|r| r.round as u64).collect::<Vec<_>>()),
        Column::new(
            "variant".into(),
            rows.iter()
                .map(|r| s.plan.runs[r.candidate * seeds].variant.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "point".into(),
            rows.iter().map(|r| s.plan.runs[r.candidate * seeds].point as u64).collect::<Vec<_>>(),
        ),
        Column::new("label".into(), rows.iter().map(|r| label(s, r.candidate)).collect::<Vec<_>>()),
        Column::new("seeds".into(), rows.iter().map(|r| r.seeds as u64).collect::<Vec<_>>()),
        Column::new("objective.mean".into(), f(&|r| Some(r.objective?.mean))),
        Column::new("objective.ci".into(), f(&|r| Some(r.objective?.ci).filter(|x| x.is_finite()))),
        Column::new("objective.low".into(), f(&|r| Some(r.objective?.low))),
        Column::new("objective.high".into(), f(&|r| Some(r.objective?.high))),
        Column::new(
            "reference_point".into(),
            rows.iter()
                .map(|r| r.versus.map(|(c, _)| s.plan.runs[c * seeds].point as u64))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "reference_variant".into(),
            rows.iter()
                .map(|r| r.versus.map(|(c, _)| s.plan.runs[c * seeds].variant.clone()))
                .collect::<Vec<_>>(),
        ),
        Column::new("versus.mean".into(), f(&|r| Some(r.versus?.1.mean))),
        Column::new("versus.low".into(), f(&|r| Some(r.versus?.1.low))),
    ];
    for (j, b) in s.constraints.iter().enumerate() {
        let name = format!("constraint{j}");
        cols.push(Column::new(format!("{name}.mean").into(), f(&|r| Some(r.constraints[j]?.mean))));
        cols.push(Column::new(format!("{name}.low").into(), f(&|r| Some(r.constraints[j]?.low))));
        cols.push(Column::new(format!("{name}.high").into(), f(&|r| Some(r.constraints[j]?.high))));
        cols.push(Column::new(format!("{name}.bound").into(), vec![b.label(); n]));
    }
    cols.push(Column::new("fate".into(), rows.iter().map(|r| r.fate.name()).collect::<Vec<_>>()));
    cols.push(Column::new(
        "why".into(),
        rows.iter()
            .map(|r| match &r.fate {
                Fate::Failed { why } => Some(why.clone()),
                Fate::Infeasible { constraint } => Some(s.constraints[*constraint].label()),
                Fate::Worse { than } => Some(format!("worse than {}", label(s, *than))),
                Fate::Alive => None,
            })
            .collect::<Vec<_>>(),
    ));
    DataFrame::new(n, cols)
}
