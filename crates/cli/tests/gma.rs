//! `aviary lab gma` on the example topology: the JSON report, listed paths, and errors that
//! name the file and the field.

use std::path::{Path, PathBuf};
use std::process::Command;

use aviary_scratch::ScratchDir;
use serde_json::Value;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/gma/example.json")
}

fn gma(input: &Path, json: bool) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aviary"));
    cmd.args(["lab", "gma", "--input"]).arg(input).env("RUST_LOG", "off");
    if json {
        cmd.arg("--json");
    }
    cmd.output().unwrap()
}

/// `text` in a file `name` of a directory of its own: the directory and the file.
fn temp_input(name: &str, text: &str) -> (ScratchDir, PathBuf) {
    let dir = ScratchDir::new("gma");
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

#[test]
fn the_example_reports_every_path_and_pair_as_one_json_object() {
    let out = gma(&example(), true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 6, "every loop-free path of the three-AS line");
    // A to C, worked out by hand in crates/glwp/tests/hand_computed.rs.
    let a_to_c = paths.iter().find(|p| p["id"] == "1-ff00:0:110>1-ff00:0:112#1").unwrap();
    assert_eq!(
        a_to_c["hops"],
        serde_json::json!([["1-ff00:0:110", 0, 1], ["1-ff00:0:111", 1, 2], ["1-ff00:0:112", 1, 0]])
    );
    assert_eq!(a_to_c["G"], 42);
    assert_eq!(a_to_c["prelim"], serde_json::json!([100, 50, 42]));
    for p in paths {
        let prelim = p["prelim"].as_array().unwrap();
        assert_eq!(prelim.len(), p["hops"].as_array().unwrap().len(), "{p}");
        assert_eq!(prelim.last().unwrap(), &p["G"], "{p}");
    }
    let pairs = report["pair_load"].as_array().unwrap();
    assert_eq!(pairs.len(), 10, "every listed interface pair");
    let b10 = pairs.iter().find(|l| l["node"] == "1-ff00:0:111" && l["in"] == 1 && l["out"] == 0).unwrap();
    assert_eq!((&b10["load"], &b10["M"]), (&Value::from(30), &Value::from(30)));
    let a01 = pairs.iter().find(|l| l["node"] == "1-ff00:0:110" && l["in"] == 0 && l["out"] == 1).unwrap();
    assert_eq!((&a01["load"], &a01["M"]), (&Value::from(72), &Value::from(100)));
    for l in pairs {
        assert!(l["load"].as_u64().unwrap() <= l["M"].as_u64().unwrap(), "{l}");
    }

    let text = gma(&example(), false);
    assert!(text.status.success());
    let table = String::from_utf8(text.stdout).unwrap();
    assert!(table.contains("1-ff00:0:110>1-ff00:0:112#1") && table.contains("load/M"), "{table}");
}

#[test]
fn listed_paths_are_reported_under_their_ids() {
    let example = std::fs::read_to_string(example()).unwrap();
    let end = example.rfind('}').unwrap();
    let text = format!(
        "{}, \"paths\": [{{\"id\": \"c-a\", \"hops\": [[\"1-ff00:0:112\", 0, 1], [\"1-ff00:0:111\", 2, 1], [\"1-ff00:0:110\", 1, 0]]}}]}}",
        &example[..end]
    );
    let (_dir, input) = temp_input("paths.json", &text);
    let out = gma(&input, true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["paths"],
        serde_json::json!([{"id": "c-a", "hops": [["1-ff00:0:112", 0, 1], ["1-ff00:0:111", 2, 1], ["1-ff00:0:110", 1, 0]], "G": 37, "prelim": [60, 37, 37]}])
    );
}

#[test]
fn bad_input_names_the_file_and_the_field() {
    let example = std::fs::read_to_string(example()).unwrap();
    let cases = [
        (
            "matrix.json",
            example.replace("[2, 1, 50]", "[2, 1, \"fifty\"]"),
            "nodes.1-ff00:0:111.M[5][2]: expected a value in bit/s",
        ),
        (
            "link.json",
            example.replace("\"1-ff00:0:112\", 1]", "\"1-ff00:0:999\", 1]"),
            "links[1]: unknown AS 1-ff00:0:999",
        ),
        ("json.json", "{\"nodes\": ".to_string(), "not valid JSON"),
    ];
    for (name, text, want) in cases {
        let (_dir, file) = temp_input(name, &text);
        let out = gma(&file, true);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty(), "no report on bad input");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with(&format!("error: {}: {want}", file.display())), "{err}");
    }
}
