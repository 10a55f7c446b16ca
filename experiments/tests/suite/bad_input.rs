//! Bad input is data: every `tests/bad_input/*.ron` file must fail to load with exactly the
//! message listed for it in `tests/bad_input/expected.txt` (`<file>:<line>:<col>: <field>:
//! <message>`, the folder written as `<dir>/` inside messages; a file with several errors
//! has one line per error). After a deliberate change of messages, regenerate the file with
//! `UPDATE_EXPECT=1 cargo test -p experiments --test suite bad_input` and read its diff.

use experiments::{RunDefaults, load};
use std::collections::BTreeMap;
use std::path::Path;

/// Written in `expected.txt` for the list of the Scenario's fields an unknown-field message
/// names: that list grows with every new component kind (its scenario list), so it is not
/// written out by hand; [`scenario_fields`] gives it.
const SCENARIO_FIELDS: &str = "<the Scenario's fields>";

/// The Scenario's fields as serde lists them after "expected one of" (`` `name`, …, or
/// `recovery` ``), read from the message serde gives for an unknown field.
fn scenario_fields() -> String {
    let err = ron::from_str::<models::scenario::ScenarioSpec<serde::de::IgnoredAny>>(
        "Scenario(name: \"s\", no_such_field: 0)",
    )
    .expect_err("an unknown field")
    .to_string();
    let (_, list) = err.split_once("expected one of ").expect("serde lists the fields");
    list.strip_suffix(" instead").unwrap_or(list).to_string()
}

#[test]
fn every_bad_file_fails_with_its_expected_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    // A file with several independent errors has one line per error, in order.
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    let text = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let text = text.replace(SCENARIO_FIELDS, &scenario_fields());
    for l in text.lines() {
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
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let fields = scenario_fields();
        let mut text: String = got.iter().map(|g| format!("{g}\n")).collect();
        text = text.replace(&fields, SCENARIO_FIELDS);
        std::fs::write(dir.join("expected.txt"), text).expect("write expected.txt");
        return;
    }
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
