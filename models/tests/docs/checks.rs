//! Checks that keep the written map honest: no citation leaves the repository, every
//! relative Markdown link (and its `#anchor`) resolves, the maps name only files that
//! exist, the event-kind table of `docs/models-map.md` is the code's, and ARCHITECTURE.md
//! stays a map (≤ 20 KiB of durable facts; counts and lists live in `docs/map.md`).

use super::map::event_kinds;
use super::repo;
use std::path::{Path, PathBuf};

/// Text files of the repository (no build output, results, hidden folders or data).
fn text_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("a folder") {
            let p = e.expect("an entry").path();
            let name = p.file_name().expect("a name").to_string_lossy().into_owned();
            if name.starts_with('.') || ["target", "results", "node_modules"].contains(&&*name) {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
                continue;
            }
            let ext = p.extension().map(|x| x.to_string_lossy().into_owned());
            let text_ext = ["rs", "md", "ron", "py", "ipynb", "toml", "txt", "sh", "yml", "yaml"];
            let script = p.parent().is_some_and(|d| d.ends_with("scripts")) && ext.is_none();
            if script || ext.is_some_and(|x| text_ext.contains(&x.as_str())) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &mut out);
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap_or(p).display().to_string()
}

/// Is `word` at byte `i` of `line` a whole word (no letter, digit or `_` beside it)?
fn whole_word(line: &str, i: usize, word: &str) -> bool {
    let before = line[..i].chars().next_back();
    let after = line[i + word.len()..].chars().next();
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !part(before) && !part(after)
}

/// The catalogue and the design guide the project grew from live outside the repository:
/// the repository's own record of them is `docs/domain.md`, and nothing may cite them.
#[test]
fn no_citation_points_outside_the_repository() {
    // Spelled in pieces so that this file does not cite them itself.
    let words = [concat!("SP", "EC"), concat!("DES", "IGN")];
    let paths = [concat!("../sha", "red/"), concat!("/work/sha", "red")];
    let mut found = Vec::new();
    for p in text_files() {
        let Ok(text) = std::fs::read_to_string(&p) else { continue };
        for (n, line) in text.lines().enumerate() {
            let word =
                words.iter().any(|w| line.match_indices(w).any(|(i, _)| whole_word(line, i, w)));
            if word || paths.iter().any(|s| line.contains(s)) {
                found.push(format!("{}:{}: {}", rel(&p), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "citations of files outside the repository (cite docs/domain.md's sections instead):\n{}",
        found.join("\n")
    );
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    let h = heading.trim().to_lowercase();
    let kept = h.chars().filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '));
    kept.map(|c| if c == ' ' { '-' } else { c }).collect()
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn anchors(md: &str) -> Vec<String> {
    let headings =
        prose(md).lines().filter(|l| l.starts_with('#')).map(str::to_string).collect::<Vec<_>>();
    headings.iter().map(|l| slug(&l.trim_start_matches('#').replace('`', ""))).collect()
}

#[test]
fn markdown_links_resolve() {
    let mut broken = Vec::new();
    for p in text_files().into_iter().filter(|p| p.extension().is_some_and(|x| x == "md")) {
        let text = prose(&std::fs::read_to_string(&p).expect("a Markdown file"));
        for (i, _) in text.match_indices("](") {
            let dest: String =
                text[i + 2..].chars().take_while(|c| *c != ')' && !c.is_whitespace()).collect();
            if dest.is_empty() || dest.contains("://") || dest.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = dest.split_once('#').unwrap_or((&dest, ""));
            let target =
                if path.is_empty() { p.clone() } else { p.parent().expect("a folder").join(path) };
            if !target.exists() {
                broken.push(format!("{}: {dest} (no such file)", rel(&p)));
            } else if !anchor.is_empty() && target.extension().is_some_and(|x| x == "md") {
                let md = std::fs::read_to_string(&target).expect("a Markdown file");
                if !anchors(&md).iter().any(|a| a == anchor) {
                    broken.push(format!("{}: {dest} (no such heading)", rel(&p)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The maps name files by path: every `…​.rs` and every path under a top-level folder that
/// they quote must exist (a file may be named by its path's tail: `world/calls.rs`).
#[test]
fn maps_name_only_existing_files() {
    let all: Vec<String> = text_files().iter().map(|p| rel(p)).collect();
    let mut dirs: Vec<String> = all
        .iter()
        .flat_map(|f| f.match_indices('/').map(|(i, _)| f[..i].to_string()).collect::<Vec<_>>())
        .collect();
    dirs.sort();
    dirs.dedup();
    let exists = |t: &str| {
        let tail = |x: &String, t: &str| x == t || x.ends_with(&format!("/{t}"));
        match t.strip_suffix('/') {
            Some(d) => dirs.iter().any(|x| tail(x, d)),
            None => all.iter().any(|x| tail(x, t)),
        }
    };
    let top = [
        "sim-core/",
        "models/",
        "experiments/",
        "sim-gui/",
        "docs/",
        "scripts/",
        "notebooks/",
        "bench/",
    ];
    let mut missing = Vec::new();
    for doc in ["ARCHITECTURE.md", "docs/models-map.md", "docs/experiments-map.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).expect(doc);
        for quoted in text.split('`').skip(1).step_by(2) {
            let pathlike = quoted.chars().all(|c| c.is_alphanumeric() || "_./-".contains(c));
            let named = quoted.ends_with(".rs") || top.iter().any(|t| quoted.starts_with(t));
            // Hidden paths (`notebooks/.venv`) are made at run time, not kept in the tree.
            let hidden = quoted.split('/').any(|c| c.starts_with('.') && c != "." && c != "..");
            if pathlike && named && !hidden && !quoted.starts_with('_') && !exists(quoted) {
                missing.push(format!("{doc}: `{quoted}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files named in the maps that do not exist:\n{}",
        missing.join("\n")
    );
}

/// `docs/models-map.md`'s event table ("kind id | event | phase | what") lists exactly the
/// kinds of `world::Ev::kind_id`.
#[test]
fn event_table_matches_the_code() {
    let text = std::fs::read_to_string(repo().join("docs/models-map.md")).expect("models-map");
    let a = text.find("| kind id | event |").expect("the event table");
    let rows: Vec<(u16, String)> = text[a..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells[2].trim_matches('`').split([' ', '{']).next().expect("a name");
            (cells[1].parse().expect("a kind id"), name.to_string())
        })
        .collect();
    assert_eq!(rows, event_kinds(), "docs/models-map.md's event table differs from Ev::kind_id");
}

#[test]
fn architecture_stays_a_small_map() {
    let size = std::fs::metadata(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md").len();
    assert!(
        size <= 20 * 1024,
        "ARCHITECTURE.md is {size} bytes: keep it ≤ 20 KiB (details in docs/)"
    );
}
