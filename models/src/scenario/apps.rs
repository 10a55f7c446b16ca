//! The apps' scenario checks and their `set_param` arms (`app.*`, `dispatcher.*`, `pool.*`,
//! `dispatcher_queue.*`, `pool_queue.*`).

use crate::app::*;
use crate::components::{ComponentId, ComponentKind};
use crate::params::{ParamValue, Params};

impl<V> super::ScenarioSpec<V> {
    /// Cross-reference checks of apps: unique names (apps, dispatchers, pools), each app's
    /// own consistency, and every source's `app` naming one.
    pub(crate) fn check_apps(&self) -> Result<(), super::SpecError> {
        use super::SpecError;
        use std::collections::BTreeSet;
        let classes: Vec<String> = self.classes.iter().map(|c| c.name.clone()).collect();
        let mut seen = [BTreeSet::new(), BTreeSet::new(), BTreeSet::new()];
        for (i, a) in self.apps.iter().enumerate() {
            let at =
                |f: &str, message: String| SpecError { path: format!("apps[{i}].{f}"), message };
            let mut names = vec![(0, "name".to_string(), a.name.as_str())];
            if let Some(d) = &a.dispatcher {
                names.push((1, "dispatcher.name".into(), d.name.as_str()));
            }
            for (j, p) in a.pools().into_iter().enumerate() {
                names.push((2, format!("pool[{j}].name"), p.name.as_str()));
            }
            for (k, f, n) in names {
                if !seen[k].insert(n.to_string()) {
                    let what = ["apps", "dispatchers", "pools"][k];
                    return Err(at(&f, format!("duplicate name \"{n}\" (unique among {what})")));
                }
            }
            a.validate(&classes).map_err(|(f, m)| at(&f, m))?;
            if let Some(h) = &a.health_from {
                let known = self
                    .circuit_breakers
                    .iter()
                    .map(|b| format!("circuit_breaker.{}", b.name))
                    .chain(self.degrade_rules.iter().map(|d| format!("degrade_rule.{}", d.name)))
                    .collect::<Vec<_>>();
                if !known.contains(h) {
                    return Err(at(
                        "health_from",
                        format!(
                            "expected a breaker path (`circuit_breaker.<name>` or \
                             `degrade_rule.<name>`), found \"{h}\"; breakers: [{}]",
                            known.join(", ")
                        ),
                    ));
                }
                if a.dispatcher.is_none() {
                    return Err(at(
                        "health_from",
                        "expected a dispatcher (the health gates its deferred queue), found none"
                            .into(),
                    ));
                }
            }
            for (d, v) in AppSpec::decls().iter().filter_map(|d| a.get(d.name).map(|v| (d, v))) {
                d.ty.check(&v).map_err(|m| at(d.name, m))?;
            }
        }
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(app) = &s.app
                && !self.apps.iter().any(|a| &a.name == app)
            {
                return Err(SpecError {
                    path: format!("sources[{i}].app"),
                    message: format!(
                        "no app named \"{app}\"; apps: [{}]",
                        self.apps.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// `set_param` for the parts of an app (`app.*`, `dispatcher.*`, `pool.*`,
    /// `dispatcher_queue.*`, `pool_queue.*`; already checked).
    pub(crate) fn set_app_param(
        &mut self,
        c: ComponentId,
        param: &str,
        value: ParamValue,
    ) -> Result<(), String> {
        let a = &mut self.apps[c.index()];
        match c.kind {
            ComponentKind::App => a.set(param, value),
            ComponentKind::Dispatcher => {
                a.dispatcher.as_mut().expect("registered").set(param, value)
            }
            ComponentKind::Pool => a.pools_mut().swap_remove(c.part()).set(param, value),
            ComponentKind::DispatcherQueue => set_queue_param(a, false, c.part(), param, &value),
            ComponentKind::PoolQueue => set_queue_param(a, true, c.part(), param, &value),
            k => unreachable!("not a part of an app: {k:?}"),
        }
    }
}
