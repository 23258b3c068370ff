//! `aviary lab pathval --json --quick`: the JSON has the documented shape and its figures
//! agree with equal-probability sampling within the statistical error of the run; the HTML
//! report holds both plots.

use std::process::Command;

use serde_json::Value;

#[test]
fn lab_pathval_json_has_the_figures_and_they_agree_with_the_sampling_theory() {
    let report = std::env::temp_dir().join(format!("aviary-lab-pathval-{}.html", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["lab", "pathval", "--json", "--quick", "--report"])
        .arg(&report)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_n = v["by_N"].as_object().unwrap();
    assert_eq!(by_n.len(), 11);
    for n in 2..=12usize {
        let l = &by_n[&n.to_string()];
        let packets = l["packets"].as_u64().unwrap();
        let counts: Vec<u64> = l["fig4_counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
        assert_eq!(counts.len(), n - 1, "one count per sampling node, N = {n}");
        assert_eq!(counts.iter().sum::<u64>(), packets, "N = {n}");
        // Each count is binomial(packets, 1/(N-1)): within 5 standard deviations.
        let p = 1.0 / (n - 1) as f64;
        let sd = (packets as f64 * p * (1.0 - p)).sqrt();
        for c in &counts {
            assert!((*c as f64 - packets as f64 * p).abs() <= 5.0 * sd + 1e-9, "N = {n}: {counts:?}");
        }
        // Samples per packet: mean H(N-1), variance sum of 1/k (1 - 1/k); the paper's
        // ln N + 0.5772 lies within 0.3 of H(N-1) for these N.
        let mean = l["fig10_mean_samples"].as_f64().unwrap();
        let exact: f64 = (1..n).map(|k| 1.0 / k as f64).sum();
        let var: f64 = (1..n).map(|k| (1.0 / k as f64) * (1.0 - 1.0 / k as f64)).sum();
        let tol = 5.0 * (var / packets as f64).sqrt();
        assert!((mean - exact).abs() <= tol + 1e-9, "N = {n}: {mean} against H(N-1) = {exact}");
        let paper = (n as f64).ln() + 0.5772;
        assert!((mean - paper).abs() <= 0.3 + tol, "N = {n}: {mean} against ln N + 0.5772 = {paper}");
        let t5 = &v["table5"][&n.to_string()];
        assert!(t5["mean_packets"].as_f64().unwrap() >= (n - 1) as f64 * 0.8, "N = {n}: {t5}");
    }
    assert_eq!(v["table5"]["2"]["mean_packets"].as_f64().unwrap(), 1.0, "the source samples every packet");
    let timing = v["timing_ns"].as_object().unwrap();
    for f in [
        "src_initialization",
        "ep_sampling",
        "construction",
        "verification_hidden_sample",
        "verification_validation_proof",
        "update",
        "dst_verification",
    ] {
        assert!(timing[f].as_f64().unwrap() > 0.0, "{f}");
    }
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    std::fs::remove_file(&report).unwrap();
}
