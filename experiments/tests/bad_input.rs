//! Bad input is data: every `tests/bad_input/*.ron` file must fail to load with exactly the
//! message listed for it in `tests/bad_input/expected.txt` (`<file>:<line>:<col>: <field>:
//! <message>`, the folder written as `<dir>/` inside messages).

use experiments::{RunDefaults, load};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn every_bad_file_fails_with_its_expected_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    let expected: BTreeMap<String, String> = std::fs::read_to_string(dir.join("expected.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let (file, _) = l.split_once(':').expect("`file:line:col: message`");
            (file.to_string(), l.to_string())
        })
        .collect();
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
            err.replacen(&prefix, "", 1).replace(&prefix, "<dir>/")
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
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w);
    }
}
