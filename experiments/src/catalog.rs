//! The bundled experiments (`stormglass list`, `stormglass run <name>`, the GUI's picker):
//! every `*.ron` of `experiments/` (quick start and examples), `experiments/incidents/` and
//! `experiments/studies/`, embedded at build time (`build.rs`). The group comes from the
//! folder; a scenario file that a bundled experiment names with `File("...")` is part of
//! that experiment, not an entry of its own.
//!
//! Names: `incidents/01-batch-flood` (folder and file stem), or a short name — the stem
//! (`01-batch-flood`) or the stem without its number (`batch-flood`) — when only one
//! bundled file has it.

use crate::locate::Locations;
use std::path::PathBuf;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

/// Groups, in display order: (folder, title).
pub const GROUPS: [(&str, &str); 3] =
    [("", "quick start"), ("incidents", "incidents"), ("studies", "studies")];

/// One bundled experiment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `quickstart`, `incidents/01-batch-flood`.
    pub name: &'static str,
    /// The group title (`quick start`, `incidents`, `studies`).
    pub group: &'static str,
    /// Its `description` field, else its first comment line.
    pub description: String,
    /// Path relative to `experiments/`.
    pub file: &'static str,
    pub text: &'static str,
}

impl Entry {
    /// The file in this source tree, when the binary runs where it was built (relative
    /// references — scenario files, traces — then resolve); `None` otherwise.
    pub fn source_path(&self) -> Option<PathBuf> {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(self.file);
        p.is_file().then_some(p)
    }
    /// The path shown in messages when the text is loaded from the binary.
    pub fn bundled_path(&self) -> PathBuf {
        PathBuf::from(format!("<bundled>/{}", self.file))
    }
    fn stem(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(self.name)
    }
}

fn description(text: &str) -> String {
    let loc = Locations::scan(text);
    if let Some(r) = loc.span("description")
        && let Ok(d) = ron::from_str::<String>(&text[r])
        && !d.is_empty()
    {
        return d.lines().next().unwrap_or("").trim().to_string();
    }
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("//") && l.len() > 2)
        .unwrap_or("")
        .trim_start_matches('/')
        .trim()
        .to_string()
}

/// Every bundled experiment, grouped (quick start, incidents, studies), by name within a
/// group.
pub fn entries() -> Vec<Entry> {
    let files = embedded::FILES;
    let referenced = |f: &str| {
        let (dir, base) = f.rsplit_once('/').unwrap_or(("", f));
        files.iter().any(|(o, t)| {
            o.rsplit_once('/').map_or("", |x| x.0) == dir
                && t.contains(&format!("File(\"{base}\")"))
        })
    };
    let mut out = Vec::new();
    for (folder, title) in GROUPS {
        for &(file, text) in files {
            let dir = file.rsplit_once('/').map_or("", |x| x.0);
            if dir != folder || referenced(file) {
                continue;
            }
            out.push(Entry {
                name: file.strip_suffix(".ron").unwrap_or(file),
                group: title,
                description: description(text),
                file,
                text,
            });
        }
    }
    out
}

/// The bundled experiment a name means; `Err` names the candidates of an ambiguous short
/// name.
pub fn find(name: &str) -> Result<Option<Entry>, String> {
    let all = entries();
    if let Some(e) = all.iter().find(|e| e.name == name) {
        return Ok(Some(e.clone()));
    }
    let unnumbered = |s: &str| -> String {
        match s.split_once('-') {
            Some((n, rest)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                rest.into()
            }
            _ => s.into(),
        }
    };
    let hits: Vec<&Entry> =
        all.iter().filter(|e| e.stem() == name || unnumbered(e.stem()) == name).collect();
    match hits.as_slice() {
        [] => Ok(None),
        [e] => Ok(Some((*e).clone())),
        many => Err(format!(
            "`{name}` could mean {}; use the full name",
            many.iter().map(|e| e.name).collect::<Vec<_>>().join(" or ")
        )),
    }
}

/// `stormglass list`: the entries by group, each with its description.
pub fn listing() -> String {
    let all = entries();
    let width = all.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (_, title) in GROUPS {
        let group: Vec<&Entry> = all.iter().filter(|e| e.group == title).collect();
        if group.is_empty() {
            continue;
        }
        out.push_str(&format!("{}{title}:\n", if out.is_empty() { "" } else { "\n" }));
        for e in group {
            out.push_str(&format!("  {:<width$}  {}\n", e.name, e.description));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_file_is_listed_or_part_of_one() {
        let all = entries();
        assert!(all.iter().any(|e| e.name == "quickstart" && e.group == "quick start"));
        for e in &all {
            assert!(!e.description.is_empty(), "{} has a description", e.name);
            assert_eq!(find(e.name), Ok(Some(e.clone())));
        }
        assert_eq!(find("no-such-experiment"), Ok(None));
    }

    #[test]
    fn descriptions_prefer_the_field() {
        assert_eq!(
            description("// first\nExperiment(name: \"x\", description: \"the field\")"),
            "the field"
        );
        assert_eq!(description("// first line\n// second\nScenario(name: \"x\")"), "first line");
    }
}
