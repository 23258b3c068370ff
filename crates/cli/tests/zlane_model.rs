//! `aviary lab zlane-model` as a user runs it: the JSON object's shape and a few of Fig. 4's
//! values, the report file, `--j`, and a bad `--j` named in one error line.

use std::path::Path;
use std::process::{Command, Output};

use aviary_scratch::ScratchDir;
use serde_json::Value;

fn aviary(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["lab", "zlane-model"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("RUST_LOG", "off")
        .output()
        .unwrap()
}

fn json(args: &[&str], dir: &Path) -> Value {
    let out = aviary(args, dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one object: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn curve(v: &Value, mechanism: &str, rate: &str) -> Vec<f64> {
    v["curves"][mechanism][rate].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect()
}

#[test]
fn json_has_the_documented_shape_and_fig4_values() {
    let dir = ScratchDir::new("zlane-model-json");
    let v = json(&["--json"], &dir);
    let params = v["params"].as_object().unwrap();
    let keys: Vec<&str> = params.keys().map(String::as_str).collect();
    let mut want = vec!["C", "mu_A", "mu_G", "T", "r_S", "r_I", "D", "j", "n_routers", "F"];
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(params["C"], 40.0);
    assert_eq!(params["D"], 40.0);
    assert_eq!(params["j"], 4);
    assert_eq!(params["n_routers"], 8);
    let rates: Vec<f64> = params["F"].as_array().unwrap().iter().map(|f| f.as_f64().unwrap()).collect();
    assert_eq!(rates, [0.5, 1.0, 1.5, 2.0]);

    let curves = v["curves"].as_object().unwrap();
    let mut mechanisms: Vec<&str> = curves.keys().map(String::as_str).collect();
    mechanisms.sort();
    assert_eq!(mechanisms, ["fifo", "local_isolation", "per_flow", "zlane"]);
    for (mechanism, by_rate) in curves {
        let rates: Vec<&str> = by_rate.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(rates, ["0.5", "1", "1.5", "2"], "{mechanism}");
        for rate in &rates {
            assert_eq!(curve(&v, mechanism, rate).len(), 8, "{mechanism} {rate}");
        }
    }
    // Z-Lane: no loss at F <= 1; F = 2 keeps 1 + 6/41 at router 1 (Eq. (1)) and never below 1.
    assert!(curve(&v, "zlane", "0.5").iter().all(|&t| t == 0.5));
    assert!(curve(&v, "zlane", "1").iter().all(|&t| t == 1.0));
    let z2 = curve(&v, "zlane", "2");
    assert!((z2[0] - (1.0 + 6.0 / 41.0)).abs() < 1e-12);
    assert!(z2.iter().all(|&t| (1.0..=2.0).contains(&t)));
    // FIFO at F = 1, router 1: 14 Gbit/s of G and A shared with 7 + 40 Gbit/s.
    assert!((curve(&v, "fifo", "1")[0] - 14.0 / 48.0).abs() < 1e-12);
    // Per-flow: 14/88 (the attack counts twice); local isolation: all of F at router 1.
    assert!((curve(&v, "per_flow", "1")[0] - 14.0 / 88.0).abs() < 1e-12);
    assert_eq!(curve(&v, "local_isolation", "1.5")[0], 1.5);

    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(report.contains("<svg") && report.matches("<polyline").count() == 16);
}

#[test]
fn j_moves_routers_out_of_the_source_isd() {
    let dir = ScratchDir::new("zlane-model-j");
    let v = json(&["--json", "--j", "0"], &dir);
    assert_eq!(v["params"]["j"], 0);
    // Eq. (2) at router 1: 4 * 2/5 + 6/41 * 2/5.
    assert!((curve(&v, "zlane", "2")[0] - (1.6 + 12.0 / 205.0)).abs() < 1e-12);

    let out = aviary(&["--j", "9"], &dir);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim(), "error: j = 9 exceeds the path's n_routers = 8");

    let out = aviary(&[], &dir);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("F = 1.5 Gbit/s") && table.contains("up to 30 times"), "{table}");
}
