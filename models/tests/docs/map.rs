//! `docs/map.md`, the generated half of the map: every count, id table and file list that
//! ARCHITECTURE.md (durable facts only) leaves out, read from the sources themselves, so it
//! cannot drift. Regenerate with `UPDATE_EXPECT=1 cargo test -p models --test docs`.

use super::{generated_block, repo};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const MAP: &str = "docs/map.md";
/// The crates' source folders, in dependency order.
const CRATES: [&str; 4] = ["sim-core/src", "models/src", "experiments/src", "sim-gui/src"];

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `*.rs` file below `dir`, relative to it, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("a source folder") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root).expect("below").to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The first sentence of a file's `//!` module doc (cut at ~160 characters), or "—".
fn first_sentence(text: &str) -> String {
    let mut s = String::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("//!") else { break };
        let rest = rest.trim();
        if rest.is_empty() {
            break; // the end of the first paragraph
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(rest);
    }
    if let Some(i) = s.find(". ") {
        s.truncate(i + 1);
    }
    if s.chars().count() > 160 {
        let cut: String = s.chars().take(160).collect();
        s = format!("{}…", cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a));
    }
    if s.is_empty() { "—".into() } else { s.replace('|', "\\|") }
}

/// The keyed attribute ids of `models/src/world.rs`'s `attr` module: (id, name, doc).
pub fn attribute_ids() -> Vec<(u32, String, String)> {
    let world = read("models/src/world.rs");
    let a = world.find("pub mod attr {").expect("the attr module");
    let b = a + world[a..].find("\n}\n").expect("its end");
    let (mut doc, mut out) = (Vec::new(), Vec::new());
    for line in world[a..b].lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim().to_string());
        } else if let Some(c) = line.strip_prefix("pub const ") {
            let (name, rest) = c.split_once(": u32 = ").expect("`NAME: u32 = N;`");
            let id = rest.trim_end_matches(';').parse().expect("an integer id");
            out.push((id, name.to_string(), doc.join(" ").replace('|', "\\|")));
            doc.clear();
        }
    }
    out.sort();
    out
}

/// `(kind id, variant)` of every event of `world::Ev` (its `kind_id`).
pub fn event_kinds() -> Vec<(u16, String)> {
    let world = read("models/src/world.rs");
    let a = world.find("fn kind_id(&self) -> u16 {").expect("Ev::kind_id");
    let b = a + world[a..].find("\n    }\n").expect("its end");
    let mut out: Vec<(u16, String)> = world[a..b]
        .lines()
        .filter_map(|l| {
            let (lhs, id) = l.trim().strip_prefix("Ev::")?.split_once("=>")?;
            let name = lhs.split([' ', '{']).next()?.to_string();
            Some((id.trim().trim_end_matches(',').parse().ok()?, name))
        })
        .collect();
    out.sort();
    out
}

/// The invariants of `docs/invariants.md`: the labels of its `| I<n>… |` rows (`I17b`
/// included) and the highest number.
fn invariants() -> (usize, u32) {
    let text = read("docs/invariants.md");
    let labels: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| I")?.split(' ').next())
        .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    let n = |l: &str| l.chars().take_while(char::is_ascii_digit).collect::<String>();
    let hi = labels.iter().filter_map(|l| n(l).parse().ok()).max().expect("some");
    (labels.len(), hi)
}

/// The `.ron` files of a folder with the first line of their header comment.
fn experiment_files(rel: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(repo().join(rel))
        .expect("an experiments folder")
        .filter_map(|e| {
            let p = e.ok()?.path();
            if p.extension()? != "ron" {
                return None;
            }
            let text = std::fs::read_to_string(&p).ok()?;
            let head = text.lines().next()?.trim_start_matches('/').trim().replace('|', "\\|");
            Some((p.file_name()?.to_string_lossy().into_owned(), head))
        })
        .collect();
    out.sort();
    out
}

/// The result tables: `experiments/src/results.rs`'s `TABLES`.
fn result_tables() -> Vec<String> {
    let text = read("experiments/src/results.rs");
    let a = text.find("pub const TABLES").expect("TABLES");
    let line = text[a..].lines().next().expect("one line");
    let list = line.split_once("= [").expect("a list").1.trim_end_matches("];");
    list.split(',').map(|t| t.trim().trim_matches('"').to_string()).collect()
}

fn counts(out: &mut String, files: &BTreeMap<&str, Vec<String>>) {
    let inv = invariants();
    let incidents = experiment_files("experiments/incidents");
    let tables = result_tables();
    let attrs = attribute_ids();
    let events = event_kinds();
    let _ = writeln!(out, "## Counts\n\n| what | count | read from |\n|---|---|---|");
    for dir in CRATES {
        let _ = writeln!(out, "| source files in `{dir}` | {} | the folder |", files[dir].len());
    }
    let _ = writeln!(
        out,
        "| invariants | {} (I1–I{}, with lettered ones such as I17b) | `docs/invariants.md` |",
        inv.0, inv.1
    );
    let t = tables.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        out,
        "| result tables | {} ({t}) | `experiments/src/results.rs` (`TABLES`) |",
        tables.len()
    );
    let n = incidents.len();
    let _ = writeln!(
        out,
        "| incidents | {n} (18 from the sources, {} beyond) | `experiments/incidents/` |",
        n - 18
    );
    let studies = experiment_files("experiments/studies").len();
    let _ = writeln!(out, "| studies | {studies} | `experiments/studies/` |");
    let quick = experiment_files("experiments").len();
    let _ = writeln!(out, "| bundled top-level experiments | {quick} | `experiments/*.ron` |");
    let _ =
        writeln!(out, "| event kinds | {} | `models/src/world.rs` (`Ev::kind_id`) |", events.len());
    let next = attrs.iter().map(|a| a.0).max().expect("some") + 1;
    let _ = writeln!(
        out,
        "| keyed attribute ids | {} (next free: {next}) | `models/src/world.rs` (`attr`) |\n",
        attrs.len()
    );
}

/// The generated body of `docs/map.md`.
fn map() -> String {
    let files: BTreeMap<&str, Vec<String>> =
        CRATES.iter().map(|d| (*d, rust_files(&repo().join(d)))).collect();
    let mut out = String::new();
    counts(&mut out, &files);
    let _ = writeln!(
        out,
        "## Keyed attribute ids (`world::attr`)\n\nAn id selects which random number a request \
         (or a call) gets: never renumber one, take the next free id for a new draw.\n\n\
         | id | name | what it draws (its doc comment) |\n|---|---|---|"
    );
    for (id, name, doc) in attribute_ids() {
        let _ = writeln!(out, "| {id} | `{name}` | {doc} |");
    }
    let _ =
        writeln!(out, "\n## Source files\n\nEach file with the first sentence of its module doc.");
    for dir in CRATES {
        let _ = writeln!(out, "\n### `{dir}/`\n\n| file | module doc |\n|---|---|");
        for f in &files[dir] {
            let text = read(&format!("{dir}/{f}"));
            let _ = writeln!(out, "| `{f}` | {} |", first_sentence(&text));
        }
    }
    for (dir, what) in [
        ("experiments", "Bundled experiments (quick start)"),
        ("experiments/incidents", "Incidents"),
        ("experiments/studies", "Studies"),
    ] {
        let _ = writeln!(out, "\n## {what}: `{dir}/`\n\n| file | header |\n|---|---|");
        for (f, head) in experiment_files(dir) {
            let _ = writeln!(out, "| `{f}` | {head} |");
        }
    }
    out
}

#[test]
fn map_matches_the_sources() {
    let ids: Vec<u32> = attribute_ids().iter().map(|a| a.0).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "two keyed attributes share an id");
    generated_block(&repo().join(MAP), "map", &map());
}
