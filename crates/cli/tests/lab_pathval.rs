//! `aviary lab pathval --json --quick`: the JSON has the documented shape and its figures
//! agree with equal-probability sampling within the statistical error of the run; the HTML
//! report holds both plots.

use std::process::Command;

use serde_json::Value;

#[test]
fn lab_pathval_json_has_the_figures_and_they_agree_with_the_sampling_theory() {
    let dir = aviary_scratch::ScratchDir::new("lab-pathval");
    let report = dir.join("report.html");
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
    check_detection(&v["detection"]);
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("Detection rate per attack") && html.contains("<td>ppv</td><td>deviation</td>"));
}

/// Every attack × scheme × N cell is within 4 binomial standard deviations of the predicted
/// rate (exact where the prediction is 0 or 1), and the selective attacker's guesses under
/// pathval are right no more often than chance.
fn check_detection(d: &Value) {
    let rates = d["rates"].as_object().unwrap();
    assert_eq!(rates.len(), 4);
    for (scheme, attacks) in rates {
        let attacks = attacks.as_object().unwrap();
        assert_eq!(attacks.len(), 6, "{scheme}");
        for (attack, by_n) in attacks {
            let by_n = by_n.as_object().unwrap();
            assert_eq!(by_n.len(), 10, "{scheme} {attack}: N = 3..12");
            for (n, c) in by_n {
                let (attacked, detected) = (c["attacked"].as_u64().unwrap(), c["detected"].as_u64().unwrap());
                assert_eq!(c["undetected"].as_u64().unwrap(), attacked - detected);
                if attacked == 0 {
                    continue;
                }
                let p = c["predicted"].as_f64().unwrap();
                let sd = (attacked as f64 * p * (1.0 - p)).sqrt();
                assert!(
                    (detected as f64 - attacked as f64 * p).abs() <= 4.0 * sd + 1e-9,
                    "{scheme} {attack} N = {n}: {c}"
                );
            }
        }
    }
    assert_eq!(rates["ppv"]["selective_misroute"]["12"]["detected"].as_u64().unwrap(), 0);
    let packets = d["packets"].as_u64().unwrap() as f64;
    for (n, g) in d["selective_guess"]["pathval"].as_object().unwrap() {
        let base = g["predicted_sampled_rate"].as_f64().unwrap();
        let precision = g["precision"].as_f64().unwrap();
        // Roughly half the packets are guessed sampled: 4 deviations of a binomial on half.
        let sd = (base * (1.0 - base) / (packets / 2.0)).sqrt();
        assert!((precision - base).abs() <= 4.0 * sd + 0.02, "N = {n}: {g}");
    }
    for g in d["selective_guess"]["ppv"].as_object().unwrap().values() {
        if let Some(p) = g["precision"].as_f64() {
            assert_eq!(p, 1.0, "PPV's mark is in plaintext: {g}");
        }
    }
}
