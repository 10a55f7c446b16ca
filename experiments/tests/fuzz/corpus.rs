//! The seed corpus: every bundled experiment, every bad-input and model test data file, the
//! fuzz regression inputs, and every scenario written inline in the model tests (raw
//! strings starting with `Scenario(`), each with the path it is loaded from (relative files
//! such as traces resolve from there).

use std::path::{Path, PathBuf};

pub struct SeedFile {
    pub path: PathBuf,
    pub text: String,
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn ron_files(dir: &Path, out: &mut Vec<SeedFile>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.extension().is_some_and(|e| e == "ron")
            && let Ok(text) = std::fs::read_to_string(&p)
        {
            out.push(SeedFile { path: p, text });
        }
    }
}

/// Raw strings (`r#"…"#`) of Rust test sources that hold a scenario.
fn inline_scenarios(dir: &Path, out: &mut Vec<SeedFile>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            inline_scenarios(&p, out);
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let Ok(src) = std::fs::read_to_string(&p) else { continue };
        for (k, piece) in src.split("r#\"").skip(1).enumerate() {
            let Some((body, _)) = piece.split_once("\"#") else { continue };
            // Bodies with `{…}` are format strings (a placeholder in place of a value).
            if body.trim_start().starts_with("Scenario(") && !body.contains('{') {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
                out.push(SeedFile {
                    path: dir.join(format!("{stem}-{k}.ron")),
                    text: body.to_string(),
                });
            }
        }
    }
}

/// The corpus, in a fixed order (the fuzzer is deterministic for a seed).
pub fn files() -> Vec<SeedFile> {
    let root = root();
    let mut out = Vec::new();
    ron_files(&root.join("experiments"), &mut out);
    ron_files(&root.join("experiments/tests/bad_input"), &mut out);
    ron_files(&root.join("experiments/tests/fuzz_regressions"), &mut out);
    ron_files(&root.join("models/tests/data"), &mut out);
    inline_scenarios(&root.join("models/tests"), &mut out);
    out
}
