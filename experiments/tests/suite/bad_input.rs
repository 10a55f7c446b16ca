//! Bad input is data: every `tests/bad_input/*.ron` file must fail to load with exactly the
//! message listed for it in `tests/bad_input/expected.txt` (`<file>:<line>:<col>: <field>:
//! <message>`, the folder written as `<dir>/` inside messages; a file with several errors
//! has one line per error).

use experiments::{RunDefaults, load};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn every_bad_file_fails_with_its_expected_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    // A file with several independent errors has one line per error, in order.
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for l in std::fs::read_to_string(dir.join("expected.txt")).unwrap().lines() {
        let (file, _) = l.split_once(':').expect("`file:line:col: message`");
        expected
            .entry(file.to_string())
            .and_modify(|e| {
                e.push('\n');
                e.push_str(l)
            })
            .or_insert_with(|| l.to_string());
    }
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".ron"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "at least twenty bad files");
    let prefix = format!("{}/", dir.display());
    let got: Vec<String> = files
        .iter()
        .map(|f| {
            let err = load(&dir.join(f), &RunDefaults::default()).expect_err(f).to_string();
            // Each error line starts with the file's own path; other paths are `<dir>/`.
            err.lines()
                .map(|l| l.replacen(&prefix, "", 1).replace(&prefix, "<dir>/"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    // Shown in full on a failure: a new file's line can be read (and checked) here.
    let want: Vec<&String> = files.iter().filter_map(|f| expected.get(f)).collect();
    assert_eq!(
        files.len(),
        expected.len(),
        "every bad file has an expected message and vice versa; the messages are:\n{}",
        got.join("\n")
    );
    for (f, (g, w)) in files.iter().zip(got.iter().zip(want)) {
        assert_eq!(g, w, "{f}");
    }
}
