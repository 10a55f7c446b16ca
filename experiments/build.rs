//! Embeds every bundled experiment (`*.ron` in this folder, `incidents/`, `studies/`) in
//! the binary, so `stormglass list` and `stormglass run <name>` need no hand-kept list:
//! adding a file to one of those folders bundles it.

use std::path::Path;

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let root = Path::new(&root);
    let mut files: Vec<String> = Vec::new();
    for dir in ["", "incidents", "studies"] {
        let d = root.join(dir);
        println!("cargo:rerun-if-changed={}", d.display());
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".ron"))
            .collect();
        names.sort();
        for n in names {
            files.push(if dir.is_empty() { n } else { format!("{dir}/{n}") });
        }
    }
    let mut out = String::from("/// Bundled files: (path relative to `experiments/`, text).\n");
    out.push_str("pub(crate) const FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        let abs = root.join(f);
        out.push_str(&format!("    ({f:?}, include_str!({:?})),\n", abs.display().to_string()));
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("bundled.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
