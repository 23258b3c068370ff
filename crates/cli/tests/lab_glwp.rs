//! `aviary lab glwp --quick --json` as a user runs it, on real processes: the guaranteed flow
//! keeps its allocation through a best-effort flood of five times the bottleneck while two
//! other sources overuse theirs, which their ASes' monitors cut back to β (F4); the copies of
//! the guaranteed flow's packets are dropped as duplicates and never charged to it (F8).
//! Ports 52000-52499 (five ASes).

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

const ALLOCATION_BPS: u64 = 2_000_000;
const BOTTLENECK_BPS: f64 = 8_000_000.0;

/// What each AS's router's GLWP processor dropped, by reason.
fn drops(v: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    v["routers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let d = r["drops"].as_object().unwrap().iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap())).collect();
            (r["ia"].as_str().unwrap().to_owned(), d)
        })
        .collect()
}

#[test]
fn the_guaranteed_flow_keeps_its_allocation_and_overuse_and_replays_are_cut() {
    let dir = aviary_scratch::ScratchDir::new("it-lab-glwp");
    let out = Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["lab", "glwp", "--quick", "--json", "--port-base", "52000", "--dir"])
        .arg(dir.path())
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one object: {stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();

    // Three allocations discovered on the real services, each GMA's 2 Mbit/s of the matrices.
    let allocations = v["allocations"].as_array().unwrap();
    assert_eq!(allocations.len(), 3);
    for a in allocations {
        assert_eq!(a["guarantee_bps"].as_u64(), Some(ALLOCATION_BPS), "{a}");
        assert_eq!(a["beta_kbps"].as_u64(), Some(ALLOCATION_BPS / 1000), "{a}");
        assert_eq!(a["path"].as_array().unwrap().last().unwrap(), "2-ff00:0:211", "{a}");
    }

    let flows: BTreeMap<&str, &Value> =
        v["flows"].as_array().unwrap().iter().map(|f| (f["name"].as_str().unwrap(), f)).collect();
    let share = |name: &str| flows[name]["share_of_allocation"].as_f64().unwrap();
    let offered = |name: &str| flows[name]["offered_bps"].as_f64().unwrap();
    let goodput = |name: &str| flows[name]["goodput_bps"].as_f64().unwrap();
    assert_eq!(v["flows"][0]["name"], "guaranteed");
    let g = v["guaranteed_share"].as_f64().unwrap();
    assert!(g >= 0.95, "the guaranteed flow kept {g:.3} of its allocation");
    assert_eq!(g, share("guaranteed"));

    // F4: the overusing sources offered 3x and 2x their β and got about β through.
    let d = drops(&v);
    for (flow, times, source_as) in [("overuse-110", 3.0, "1-ff00:0:110"), ("overuse-210", 2.0, "2-ff00:0:210")] {
        let allocation = ALLOCATION_BPS as f64;
        assert!(offered(flow) >= allocation * times * 0.9, "{flow} offered {}", offered(flow));
        assert!(share(flow) <= 1.1, "{flow} got {:.3} of its allocation through", share(flow));
        assert!(share(flow) >= 0.8, "{flow} still gets its allocation: {:.3}", share(flow));
        let cut = d[source_as].get("overuse").copied().unwrap_or(0);
        assert!(cut > 0, "{source_as}'s monitor cut nothing back: {:?}", d[source_as]);
    }
    // The flood gets what the allocations leave of the bottleneck, and no more.
    let flood = goodput("flood");
    assert!(flood > 0.0 && flood <= BOTTLENECK_BPS * 1.05, "flood goodput {flood}");
    assert!(offered("flood") >= 5.0 * BOTTLENECK_BPS * 0.9, "flood offered {}", offered("flood"));

    // F8: every copy is a duplicate at the source's AS, and none was charged: the guaranteed
    // source never overused (with the copies charged, half its packets would have been cut).
    let replayed = v["replayed_packets"].as_u64().unwrap();
    let at_source = &d["1-ff00:0:111"];
    assert!(replayed > 100, "{replayed} copies");
    let duplicates = at_source.get("duplicate").copied().unwrap_or(0);
    assert!(duplicates >= replayed * 95 / 100 && duplicates <= replayed, "{duplicates} of {replayed} copies");
    assert_eq!(at_source.get("overuse"), None, "the replays were charged to the source: {at_source:?}");
    // Every packet that reached a router was authentic.
    for (ia, reasons) in &d {
        assert_eq!(reasons.get("bad_hop_authenticator"), None, "{ia}: {reasons:?}");
    }
    assert!(dir.join("report.html").exists());
}
