//! Generated reference docs: the parameter table of `docs/scenario-reference.md` is the
//! registry's ([`models::reference::parameter_table`]). When a declaration changes,
//! regenerate with `UPDATE_EXPECT=1 cargo test -p models --test docs` and commit the doc.

use std::path::{Path, PathBuf};

#[path = "docs/checks.rs"]
mod checks;
#[path = "docs/map.rs"]
mod map;
#[path = "docs/replay.rs"]
mod replay;

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Checks the block of `path` between `<!-- BEGIN generated NAME: … -->` and
/// `<!-- END generated NAME -->` against `want`; with `UPDATE_EXPECT` set, rewrites it.
fn generated_block(path: &Path, name: &str, want: &str) {
    let begin = format!(
        "<!-- BEGIN generated {name}: UPDATE_EXPECT=1 cargo test -p models --test docs -->\n"
    );
    let end = format!("<!-- END generated {name} -->");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shown = path.strip_prefix(repo()).unwrap_or(path).display().to_string();
    let a =
        doc.find(&begin).unwrap_or_else(|| panic!("{shown}: no `{}`", begin.trim())) + begin.len();
    let b = a + doc[a..].find(&end).unwrap_or_else(|| panic!("{shown}: no `{end}`"));
    if doc[a..b] != *want {
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            let new = format!("{}{want}{}", &doc[..a], &doc[b..]);
            std::fs::write(path, new).expect("write the doc");
        } else {
            panic!(
                "{shown}: the generated {name} differs from the code; \
                 regenerate with `UPDATE_EXPECT=1 cargo test -p models --test docs`"
            );
        }
    }
}

#[test]
fn parameter_table_matches_the_registry() {
    let path = repo().join("docs/scenario-reference.md");
    generated_block(&path, "parameter table", &models::reference::parameter_table());
}

/// No import cycles between the top-level modules of `models` (the rule of the
/// structure tools' module-cycle check): a module's non-test code names
/// `crate::<module>` paths; the graph of those names must be acyclic, so the schema layer
/// (`scenario`) never depends back on the runtime that depends on it.
#[test]
fn no_import_cycles_between_modules() {
    use std::collections::{BTreeMap, BTreeSet};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut mods: BTreeMap<String, Vec<std::path::PathBuf>> = BTreeMap::new();
    for p in all {
        let rel = p.strip_prefix(&root).expect("under src").to_string_lossy().to_string();
        let top = rel.split('/').next().expect("a name").trim_end_matches(".rs").to_string();
        if top == "lib" || rel.ends_with("tests.rs") || rel.contains("_tests") {
            continue;
        }
        mods.entry(top).or_default().push(p);
    }
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, fs) in &mods {
        let e = edges.entry(m.as_str()).or_default();
        for f in fs {
            let text = std::fs::read_to_string(f).expect("read");
            let text = text.split("#[cfg(test)]").next().expect("code");
            for (i, _) in text.match_indices("crate::") {
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if let Some((k, _)) = mods.get_key_value(&name)
                    && k != m
                {
                    e.insert(k.as_str());
                }
            }
        }
    }
    // Depth-first search for a back edge, reporting the cycle.
    fn visit<'a>(
        m: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(at) = path.iter().position(|x| *x == m) {
            panic!("import cycle: {} -> {m}", path[at..].join(" -> "));
        }
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for n in &edges[m] {
            visit(n, edges, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for m in edges.keys() {
        visit(m, &edges, &mut Vec::new(), &mut done);
    }
    assert!(edges.len() > 30, "only {} modules found", edges.len());
}
