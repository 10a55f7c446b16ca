//! The bundled experiments the workbench offers: every `experiments/*.ron` of the
//! repository (the same files `stormglass list` names, plus the GUI showcase), each with its
//! description (the file's first comment line).
//!
//! Files are read from the repository at run time, not embedded: an experiment names its
//! scenario and traces by paths relative to itself, and those must resolve.

use std::path::{Path, PathBuf};

/// The experiment the workbench opens at start.
pub const SHOWCASE: &str = "workbench";

/// One bundled experiment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// File stem (`quickstart`).
    pub name: String,
    /// The file's first `//` comment line.
    pub description: String,
    pub path: PathBuf,
}

/// The folder of bundled experiments (`experiments/` beside this crate).
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("experiments")
}

/// The bundled experiments, sorted by name. An unreadable folder gives an empty list (the
/// app still opens files by path).
pub fn list() -> Vec<Entry> {
    list_in(&folder())
}

/// The `*.ron` files of `dir`, sorted by name.
pub fn list_in(dir: &Path) -> Vec<Entry> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<Entry> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_string();
            let text = std::fs::read_to_string(&path).ok()?;
            Some(Entry { name, description: description(&text), path })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The first `//` comment line of a RON text, without the slashes.
pub fn description(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("//"))
        .unwrap_or("")
        .trim_start_matches('/')
        .trim()
        .to_string()
}

/// The path of a bundled experiment by name.
pub fn find(name: &str) -> Option<PathBuf> {
    list().into_iter().find(|e| e.name == name).map(|e| e.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_bundled_experiments_with_descriptions() {
        let l = list();
        let names: Vec<&str> = l.iter().map(|e| e.name.as_str()).collect();
        for want in ["quickstart", "gate-sizing", "gpu-batching", SHOWCASE] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        let q = l.iter().find(|e| e.name == "quickstart").unwrap();
        assert!(q.description.starts_with("An LLM provider"), "{}", q.description);
        assert!(find("no-such-thing").is_none());
    }
}
