//! A scenario check: every source whose calls can reach a GPU server carries prompt and
//! output tokens (a GPU server prices a sequence by its tokens; a call without them would
//! be answered `business_error`, every time, which is a configuration mistake, not luck).
//!
//! Reach: a source's `target` (a call site, or a pipeline's steps' call sites) → each call
//! site's `upstream`, its `split` upstreams and its `backup`; a GPU pool counts as a GPU
//! server (its replicas are).
//!
//! Architecture invariant: the check reads the scenario only; it never changes it.
//! API boundary: `ScenarioSpec::check` calls [`check_gpu_tokens`].

use super::{ScenarioSpec, SpecError};

/// The first source that reaches a GPU server without prompt or output tokens, as an error
/// at that source's token field.
pub(crate) fn check_gpu_tokens<V>(sc: &ScenarioSpec<V>) -> Result<(), SpecError> {
    if sc.gpu_servers.is_empty() && sc.gpu_pools.is_empty() {
        return Ok(());
    }
    let is_gpu = |n: &str| {
        sc.gpu_servers.iter().any(|g| g.name == n) || sc.gpu_pools.iter().any(|g| g.name == n)
    };
    let site_gpu = |site: &str| -> Option<String> {
        let c = sc.call_sites.iter().find(|c| c.name == site)?;
        std::iter::once(c.upstream.as_str())
            .chain(c.split.iter().map(|s| s.0.as_str()))
            .chain(c.backup.as_deref())
            .find(|u| is_gpu(u))
            .map(|u| format!("call site \"{site}\" reaches GPU server \"{u}\""))
    };
    for (i, s) in sc.sources.iter().enumerate() {
        let sites: Vec<String> = match sc.pipelines.iter().find(|p| p.name == s.target) {
            Some(p) => p.stages.iter().flat_map(|g| g.steps()).map(|st| st.call).collect(),
            None => vec![s.target.clone()],
        };
        let Some(why) = sites.iter().find_map(|c| site_gpu(c)) else { continue };
        let cols = s.trace.as_ref().map(|t| &t.columns);
        let prompt = s.prompt_tokens.is_some() || cols.is_some_and(|c| c.prompt_tokens.is_some());
        let output = s.output_tokens.is_some() || cols.is_some_and(|c| c.output_tokens.is_some());
        for (have, field) in [(prompt, "prompt_tokens"), (output, "output_tokens")] {
            if !have {
                return Err(SpecError {
                    path: format!("sources[{i}].{field}"),
                    message: format!(
                        "expected {field} (a distribution or a trace column): {why}, which \
                         prices every sequence by its tokens"
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::params::ParamValue;
    use crate::scenario::ScenarioSpec;

    fn check(source_tokens: &str, target: &str) -> Result<(), String> {
        let text = format!(
            r#"Scenario(name: "g",
            sources: [(name: "s", interarrival: Constant("10ms"), target: "{target}" {source_tokens})],
            pipelines: [(name: "rag", stages: [Step(name: "a", call: "cpu"), Step(name: "b", call: "llm")])],
            call_sites: [(name: "llm", upstream: "st", backup: "gpu"), (name: "cpu", upstream: "st")],
            stations: [(name: "st", servers: 1, service: Constant("1ms"))],
            gpu_servers: [(name: "gpu")])"#
        );
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).map_err(|e| e.to_string())?;
        sc.check().map_err(|e| e.to_string())
    }

    #[test]
    fn sources_reaching_a_gpu_need_tokens() {
        // (tokens of the source, target) → error or not.
        let table: [(&str, &str, Option<&str>); 5] = [
            ("", "cpu", None),
            ("", "llm", Some("sources[0].prompt_tokens: expected prompt_tokens")),
            ("", "rag", Some("sources[0].prompt_tokens: expected prompt_tokens")),
            (
                ", prompt_tokens: Constant(10.0)",
                "rag",
                Some("sources[0].output_tokens: expected output_tokens"),
            ),
            (", prompt_tokens: Constant(10.0), output_tokens: Constant(5.0)", "rag", None),
        ];
        for (tokens, target, want) in table {
            let got = check(tokens, target);
            match want {
                None => assert_eq!(got, Ok(()), "{tokens} → {target}"),
                Some(w) => {
                    let e = got.expect_err(w);
                    assert!(e.starts_with(w), "{e}");
                    assert!(e.contains("call site \"llm\" reaches GPU server \"gpu\""), "{e}");
                }
            }
        }
    }
}
