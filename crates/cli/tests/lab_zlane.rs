//! `aviary lab zlane --quick --json` as a user runs it, on real processes: the protected AS keeps
//! its guarantee through the flooded router under Z-Lane and loses most of it under FIFO, and
//! every class row is consistent with the congested link. Ports 53000-53899 (nine ASes).

use std::process::Command;

use serde_json::Value;

const CAPACITY_BPS: f64 = 10_000_000.0;

/// A class row: name, offered, forwarded and dropped bit/s.
type ClassRow<'a> = (&'a str, f64, f64, f64);

fn run(policy: &Value) -> (&str, f64, Vec<ClassRow<'_>>) {
    let name = policy["policy"].as_str().unwrap();
    let share = policy["protected_share"].as_f64().unwrap();
    let classes = policy["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let bps = |k: &str| c[k].as_f64().unwrap();
            (c["class"].as_str().unwrap(), bps("offered_bps"), bps("forwarded_bps"), bps("dropped_bps"))
        })
        .collect();
    (name, share, classes)
}

#[test]
fn the_protected_as_keeps_its_guarantee_under_zlane_and_not_under_fifo() {
    let dir = aviary_scratch::ScratchDir::new("it-lab-zlane");
    let out = Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["lab", "zlane", "--quick", "--json", "--port-base", "53000", "--dir"])
        .arg(dir.path())
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one object: {stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let runs: Vec<_> = v["runs"].as_array().unwrap().iter().map(run).collect();
    assert_eq!(runs.iter().map(|r| r.0).collect::<Vec<_>>(), ["zlane", "fifo"]);
    for (policy, _, classes) in &runs {
        let names: Vec<&str> = classes.iter().map(|c| c.0).collect();
        assert_eq!(names, ["R", "N", "G", "A", "U"], "{policy}");
        let mut forwarded = 0.0;
        for &(class, offered, fwd, dropped) in classes {
            assert!(fwd <= offered * 1.001 + 1.0, "{policy} {class}: forwarded {fwd} of {offered}");
            assert!((offered - fwd - dropped).abs() <= offered * 0.01 + 1.0, "{policy} {class}");
            forwarded += fwd;
        }
        // The link is congested: it forwards about its capacity, never much more.
        assert!(forwarded <= CAPACITY_BPS * 1.1, "{policy}: {forwarded} bit/s forwarded");
        assert!(forwarded >= CAPACITY_BPS * 0.8, "{policy}: {forwarded} bit/s forwarded");
    }
    let (zlane, fifo) = (&runs[0], &runs[1]);
    assert!(zlane.1 >= 0.95, "Z-Lane: the protected AS kept {:.3} of its guarantee", zlane.1);
    // FIFO shares the link among all arrivals in proportion: with 4x the capacity offered, the
    // protected AS keeps about a quarter (the senders are jittered, so no flow locks another
    // out of the drop-tail queue by its phase).
    assert!(fifo.1 <= 0.5, "FIFO: the protected AS kept {:.3} of its guarantee", fifo.1);
    // Under Z-Lane, G forwards what it is offered up to its bound (20 %), and U, with the
    // unused shares of R and N, gets what is left over, never more than the link minus G and A.
    let class = |c: &str| *zlane.2.iter().find(|r| r.0 == c).unwrap();
    let (g, a, u) = (class("G"), class("A"), class("U"));
    assert!(g.2 <= 0.2 * CAPACITY_BPS * 1.1, "G forwarded {}", g.2);
    assert!(g.2 >= 0.1 * CAPACITY_BPS * 0.95, "G forwarded at least the protected AS's guarantee: {}", g.2);
    assert!(u.2 <= CAPACITY_BPS * 1.05 - g.2 - a.2, "U forwarded {}", u.2);
    assert!(dir.join("report.html").exists());
}
