//! The load check: the calls per second a scenario offers each call site at its peak,
//! against what each limit on the site's path can serve, before anything runs.
//!
//! * **Offered** (calls/s at a site): over the renewal sources (an `interarrival`, with or
//!   without a profile) whose requests reach the site, `1e9 / E[gap ns]` × the source's
//!   peak multiplier (`rate_multiplier` × the profile's highest point, as the rate guard
//!   computes it) × the mean calls one request makes there (1 for a source aimed at the
//!   site; the pipeline's steps' mean `calls` otherwise). First attempts only: retries,
//!   hedges and fallbacks add to it. Trace, scripted and closed-loop sources are left out
//!   (their rate is read at run time, or adapts to the answers), and said so.
//! * **Capacity** of a limit: a rate limit serves its rate (a Sentinel QPS rule `count`/s,
//!   a quota's `rpm`/60); a concurrency limit `L` held for a mean time `W` serves at most
//!   `L / W` (Little's law, `L = λ·W` at full occupancy): a station's `servers`, a
//!   quota's `max_concurrency`, a gate's `permits`, a Sentinel THREAD rule, a connection
//!   pool's `max_total`, each held at least for the upstream station's mean service
//!   (`service` mean × `latency_multiplier`; networks, queueing and the provider's load
//!   slope only lengthen it, so the capacity is an upper bound and the warning is never
//!   a false alarm from the bound itself). A site whose upstream is a GPU server or a
//!   split has no closed-form hold: its concurrency limits are not estimated. A governor
//!   listed in `per_instance` is one copy per instance of the app the site's sources
//!   enter: the copies' capacities add (4 instances × 20 permits).
//!
//! A site offered more than its tightest limit serves gets a warning (`stormglass
//! validate`, `run`); `explain` prints the whole table.
//!
//! Architecture invariant: a function of the scenario's declarations only (no run, no
//! registry, no randomness).

use super::{CallSiteSpec, GovernorRef, ScenarioSpec};
use crate::flow::rules::FlowGrade;

/// A concurrency limit's capacity by Little's law: `(limit, what)` → `(per second, basis)`
/// (`None`: no closed-form hold).
type ByLittle<'a> = dyn Fn(u64, &str) -> Option<(f64, String)> + 'a;

/// One limit on a site's path and what it can serve.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadLine {
    /// The call site.
    pub site: String,
    /// First-attempt calls per second the site is offered at its sources' peak.
    pub offered_per_s: f64,
    /// The limiting component's path (`gate.g`, `quota.openai`, `station.llm`).
    pub limit: String,
    /// The most calls per second the limit can serve.
    pub capacity_per_s: f64,
    /// How the capacity follows from the declaration (`8 permits / 50 ms mean hold`).
    pub basis: String,
}

impl LoadLine {
    /// Offered over capacity (> 1: beyond capacity).
    pub fn utilisation(&self) -> f64 {
        self.offered_per_s / self.capacity_per_s
    }
}

impl<V> ScenarioSpec<V> {
    /// Every limit of every call site the renewal sources reach, in call-site order and,
    /// within a site, from the entry of its stack to the upstream.
    pub fn load_check(&self) -> Vec<LoadLine> {
        let mut out = Vec::new();
        for site in &self.call_sites {
            let offered = self.offered_per_s(&site.name);
            if offered <= 0.0 {
                continue;
            }
            for (limit, capacity_per_s, basis) in self.site_limits(site) {
                let site = site.name.clone();
                out.push(LoadLine { site, offered_per_s: offered, limit, capacity_per_s, basis });
            }
        }
        out
    }

    /// One warning per call site offered more than its tightest limit serves.
    pub fn load_warnings(&self) -> Vec<String> {
        let lines = self.load_check();
        let mut out = Vec::new();
        for site in &self.call_sites {
            let tightest = lines
                .iter()
                .filter(|l| l.site == site.name)
                .min_by(|a, b| a.capacity_per_s.total_cmp(&b.capacity_per_s));
            // Beyond, not at: a tolerance for the rounding of a gap to whole nanoseconds.
            let Some(l) = tightest.filter(|l| l.utilisation() > 1.0 + 1e-9) else { continue };
            out.push(format!(
                "warning: load check: call site \"{}\" is offered {:.1} calls/s at its sources' peak, {:.2} × what {} can serve ({:.1}/s: {}); beyond capacity, queues and refusals grow until the load falls (first attempts only: retries add to it)",
                l.site,
                l.offered_per_s,
                l.utilisation(),
                l.limit,
                l.capacity_per_s,
                l.basis,
            ));
        }
        out
    }

    /// Renewal sources that cannot be counted (their rate is known only at run time).
    pub fn load_uncounted_sources(&self) -> Vec<&str> {
        let uncounted = |s: &&crate::source::SourceSpec| s.interarrival.is_none();
        self.sources.iter().filter(uncounted).map(|s| s.name.as_str()).collect()
    }

    /// First-attempt calls per second offered to `site` at the peak of its sources.
    fn offered_per_s(&self, site: &str) -> f64 {
        let mut total = 0.0;
        for s in &self.sources {
            let Some(mean_gap) = s.interarrival.as_ref().and_then(|d| d.mean()) else { continue };
            if !(mean_gap > 0.0 && mean_gap.is_finite()) || s.closed_loop.is_some() {
                continue;
            }
            total += 1e9 / mean_gap * crate::source::peak_multiplier(s) * self.calls_at(s, site);
        }
        total
    }

    /// Mean calls one request of `s` makes at `site` when every call succeeds.
    fn calls_at(&self, s: &crate::source::SourceSpec, site: &str) -> f64 {
        match self.pipelines.iter().find(|p| p.name == s.target) {
            Some(p) => {
                let steps = p.stages.iter().flat_map(|g| g.steps());
                steps.filter(|st| st.call == site).map(|st| st.calls.mean()).sum()
            }
            None if s.target == site => 1.0,
            None => 0.0,
        }
    }

    /// Copies of a `per_instance` governor the site's load spreads over: the most instances
    /// of an app whose sources reach the site (1 without an app: the declared copy).
    fn instances_at(&self, site: &str) -> u64 {
        let app = |s: &crate::source::SourceSpec| {
            let a = self.apps.iter().find(|a| Some(&a.name) == s.app.as_ref())?;
            Some(a.instances)
        };
        let reaching = self.sources.iter().filter(|s| self.calls_at(s, site) > 0.0);
        reaching.filter_map(app).max().unwrap_or(1)
    }

    /// `(path, capacity per second, basis)` of each limit on the site's path.
    fn site_limits(&self, site: &CallSiteSpec) -> Vec<(String, f64, String)> {
        let station = match site.split.is_empty() {
            true => self.stations.iter().find(|s| s.name == site.upstream),
            false => None,
        };
        // The least mean time a concurrency permit is held: the station's mean service.
        let hold_ns = station
            .and_then(|s| Some(s.service.mean()? * s.latency_multiplier))
            .filter(|h| *h > 0.0 && h.is_finite());
        let mut out = Vec::new();
        let by_little = |n: u64, what: &str| {
            hold_ns.map(|h| (n as f64 * 1e9 / h, format!("{n} {what} / {} mean hold", ms(h))))
        };
        for g in &site.governors {
            let path = g.path();
            // A per-instance governor is one copy per app instance: their capacities add.
            let copies = match self.per_instance.contains(&path) {
                true => self.instances_at(&site.name),
                false => 1,
            };
            let mut limits = self.flow_rule_limits(g, &by_little);
            if let GovernorRef::Gate(name) = g
                && let Some(spec) = self.gates.iter().find(|x| &x.name == name)
                && let Some(l) = by_little(spec.permits, "permits")
            {
                limits.push(l);
            }
            for (c, b) in limits {
                let b = if copies > 1 { format!("{copies} instances × {b}") } else { b };
                out.push((path.clone(), c * copies as f64, b));
            }
        }
        if let Some(name) = &site.connection_pool
            && let Some(p) = self.connection_pools.iter().find(|p| &p.name == name)
            && let Some((c, b)) = by_little(p.max_total, "connections")
        {
            out.push((format!("connection_pool.{name}"), c, b));
        }
        if let Some(st) = station {
            out.extend(self.station_limits(st, &by_little));
        }
        out
    }

    /// A Sentinel flow-rule set's rules as limits (QPS: its count; THREAD: by Little's law).
    fn flow_rule_limits(&self, g: &GovernorRef, by_little: &ByLittle<'_>) -> Vec<(f64, String)> {
        let GovernorRef::FlowRules(name) = g else { return Vec::new() };
        let Some(spec) = self.flow_rules.iter().find(|x| &x.name == name) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, r) in spec.rules.iter().enumerate() {
            match r.grade {
                FlowGrade::Qps => out.push((r.count, format!("rule {i}: QPS count {}", r.count))),
                FlowGrade::Thread => {
                    let n = r.count.floor().max(0.0) as u64;
                    if let Some((c, b)) = by_little(n, "threads") {
                        out.push((c, format!("rule {i}: {b}")));
                    }
                }
            }
        }
        out
    }

    /// The station's servers and its provider quota (RPM, concurrency).
    fn station_limits(
        &self,
        st: &crate::station::StationSpec,
        by_little: &ByLittle<'_>,
    ) -> Vec<(String, f64, String)> {
        let mut out = Vec::new();
        if let Some(q) = st.quota.as_ref().and_then(|q| self.quotas.iter().find(|x| &x.name == q)) {
            let path = format!("quota.{}", q.name);
            if let Some(rpm) = q.rpm {
                out.push((path.clone(), rpm as f64 / 60.0, format!("{rpm} requests per minute")));
            }
            if let Some((c, b)) = q.max_concurrency.and_then(|n| by_little(n, "concurrent")) {
                out.push((path, c, b));
            }
        }
        if let Some((c, b)) = by_little(st.servers, "servers") {
            out.push((format!("station.{}", st.name), c, b));
        }
        out
    }
}

/// A duration in ns as milliseconds for a message (`50 ms`, `2.5 ms`).
fn ms(ns: f64) -> String {
    let ms = ns / 1e6;
    if (ms - ms.round()).abs() < 1e-9 {
        format!("{} ms", ms.round())
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    fn scenario(source: &str, quota: &str) -> crate::Scenario {
        let text = format!(
            r#"Scenario(name: "load",
                sources: [{source}],
                pipelines: [(name: "agent", stages: [Step(name: "llm", call: "chat", calls: Uniform(min: 1, max: 5))])],
                gates: [(name: "g", permits: 8)],
                flow_rules: [(name: "f", rules: [(count: 120), (grade: THREAD, count: 30)])],
                call_sites: [(name: "chat", governors: [Gate("g"), FlowRules("f")], upstream: "llm")],
                stations: [(name: "llm", servers: 10, service: Constant("100ms"), quota: "q")],
                quotas: [(name: "q"{quota})],
            )"#
        );
        ron::from_str::<crate::Scenario>(&text).unwrap()
    }

    /// 150 requests/s into the site: the gate serves 8 / 0.1 s = 80/s, the QPS rule 120/s,
    /// the THREAD rule 30 / 0.1 s = 300/s, the quota 6000 / 60 = 100/s and 5 / 0.1 s =
    /// 50/s, the station 10 / 0.1 s = 100/s (Little's law with the 100 ms service as the
    /// hold). The tightest is the quota's concurrency: 150 / 50 = 3 × its capacity.
    #[test]
    fn every_limit_of_the_path_by_littles_law_and_the_tightest_warned() {
        let sc = scenario(
            r#"(name: "s", interarrival: Poisson(rate: "150/s"), target: "chat")"#,
            ", rpm: Some(6000), max_concurrency: Some(5)",
        );
        let lines = sc.load_check();
        let got: Vec<(&str, f64)> =
            lines.iter().map(|l| (l.limit.as_str(), l.capacity_per_s)).collect();
        let want = [
            ("gate.g", 80.0),
            ("flow.f", 120.0),
            ("flow.f", 300.0),
            ("quota.q", 100.0),
            ("quota.q", 50.0),
            ("station.llm", 100.0),
        ];
        assert_eq!(got.len(), want.len(), "{lines:#?}");
        for ((l, c), (wl, wc)) in got.iter().zip(want) {
            assert_eq!(*l, wl);
            assert!((c - wc).abs() < 1e-9, "{l}: {c} vs {wc}");
        }
        // 150/s is a mean gap of 6,666,667 ns (integer time): 149.99999… calls/s.
        assert!(lines.iter().all(|l| (l.offered_per_s - 150.0).abs() < 1e-4), "{lines:#?}");
        let w = sc.load_warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains(
                "3.00 × what quota.q can serve (50.0/s: 5 concurrent / 100 ms mean hold)"
            ),
            "{}",
            w[0]
        );
    }

    /// A pipeline making Uniform(1, 5) calls (mean 3) per request at 10 requests/s with a
    /// profile peaking at 2×: 10 × 2 × 3 = 60 calls/s, under every limit (the tightest is
    /// the gate's 80/s): no warning.
    #[test]
    fn a_pipelines_fan_out_and_the_profile_peak_count_and_under_capacity_is_quiet() {
        let sc = scenario(
            r#"(name: "s", interarrival: Poisson(rate: "10/s"), target: "agent",
                profile: Some((points: [("0s", 1.0), ("10s", 2.0)], shape: Step)))"#,
            "",
        );
        let lines = sc.load_check();
        assert!(!lines.is_empty());
        assert!(lines.iter().all(|l| (l.offered_per_s - 60.0).abs() < 1e-4), "{lines:#?}");
        assert!(sc.load_warnings().is_empty());
    }

    /// A per-instance gate of 8 permits on 4 instances serves 4 × 8 / 0.1 s = 320/s; the
    /// same gate shared (not listed) serves 80/s.
    #[test]
    fn per_instance_copies_add_their_capacities() {
        let text = |per: &str| {
            format!(
                r#"Scenario(name: "load",
                    sources: [(name: "s", interarrival: Poisson(rate: "100/s"), target: "chat", app: "api")],
                    apps: [(name: "api", instances: 4)],
                    gates: [(name: "g", permits: 8)],
                    {per}
                    call_sites: [(name: "chat", governors: [Gate("g")], upstream: "llm")],
                    stations: [(name: "llm", servers: 1000, service: Constant("100ms"))],
                )"#
            )
        };
        let gate = |t: String| {
            let sc = ron::from_str::<crate::Scenario>(&t).unwrap();
            let l = sc.load_check().into_iter().find(|l| l.limit == "gate.g").unwrap();
            (l.capacity_per_s, sc.load_warnings().len())
        };
        assert_eq!(gate(text(r#"per_instance: ["gate.g"],"#)), (320.0, 0));
        assert_eq!(gate(text("")), (80.0, 1));
    }
}
