//! Call sites in the scenario: the fallback chains' cross-references and the call site's
//! registered parameter (`call_site.<name>.enabled`).

use crate::fallback::{SiteRef, check_chains};

impl<V> super::ScenarioSpec<V> {
    /// The fallback chains' cross-references ([`check_chains`]) with field paths.
    pub(crate) fn check_fallbacks(&self) -> Result<(), super::SpecError> {
        let sites: Vec<SiteRef> = self
            .call_sites
            .iter()
            .map(|c| SiteRef { name: &c.name, fallback: c.fallback.as_ref() })
            .collect();
        let caches: Vec<&str> = self.caches.iter().map(|c| c.name.as_str()).collect();
        check_chains(&sites, &caches).map_err(|(i, field, message)| super::SpecError {
            path: format!("call_sites[{i}].{field}"),
            message,
        })
    }
}

/// `call_site.<name>.enabled`: switch a model off (and on) at run time (SPEC §3.16).
impl crate::params::Params for super::CallSiteSpec {
    const KIND: &'static str = "call_site";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<crate::params::ParamDecl> {
        vec![crate::params::ParamDecl {
            name: "enabled",
            ty: crate::params::ParamType::Bool,
            unit: "",
            runtime: true,
            doc: "the model is on; off: every call goes straight to the site's fallback",
        }]
    }
    fn get(&self, p: &str) -> Option<crate::params::ParamValue> {
        match p {
            "enabled" => Some(crate::params::ParamValue::Bool(self.enabled)),
            _ => None,
        }
    }
    fn set(&mut self, p: &str, v: crate::params::ParamValue) -> Result<(), String> {
        match (p, v) {
            ("enabled", crate::params::ParamValue::Bool(b)) => self.enabled = b,
            (p, v) => return Err(format!("call_site has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}
