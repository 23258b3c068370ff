//! `aviary lab forward --quick --json` as a user runs it, on real processes: a router and a bare
//! relay forward the generator's packets to the sink, every row has the documented shape, and
//! the lab fails (non-zero exit) if a packet reached the sink without the router's hop applied
//! (its path's CurrHF not one hop on). Ports 29100-29106 on 127.0.0.1, below the ephemeral
//! ports, where an earlier test's closed connection could hold the management port.

use std::process::Command;

use serde_json::Value;

const KEYS: [&str; 7] = ["name", "payload_bytes", "workers", "mpps", "gbps", "relay_mpps", "ratio_to_relay"];

#[test]
fn the_router_and_the_relay_forward_and_every_row_has_its_fields() {
    let dir = aviary_scratch::ScratchDir::new("it-lab-forward");
    let out = Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["lab", "forward", "--quick", "--json", "--workers", "2", "--port-base", "29100", "--dir"])
        .arg(dir.path())
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ids: Vec<(u64, &str, u64)> = rows
        .iter()
        .map(|r| (r["workers"].as_u64().unwrap(), r["name"].as_str().unwrap(), r["payload_bytes"].as_u64().unwrap()))
        .collect();
    let kinds =
        [("scion", 100), ("scion", 500), ("scion", 1500), ("flyover", 100), ("flyover", 500), ("flyover", 1500)];
    let want: Vec<(u64, &str, u64)> = [1, 2].iter().flat_map(|&w| kinds.iter().map(move |&(n, p)| (w, n, p))).collect();
    assert_eq!(ids, want);
    for r in &rows {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = KEYS.to_vec();
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{r}");
        let f = |k: &str| r[k].as_f64().unwrap();
        assert!(f("mpps") > 0.0 && f("relay_mpps") > 0.0, "{r}");
        assert!((f("ratio_to_relay") - f("mpps") / f("relay_mpps")).abs() < 1e-9, "{r}");
        // Bytes per packet at the sink: the payload and a SCION header (common and address
        // header, path), not more.
        let bytes = f("gbps") * 1e9 / 8.0 / (f("mpps") * 1e6);
        let payload = f("payload_bytes");
        assert!(bytes > payload + 40.0 && bytes < payload + 200.0, "{bytes} bytes per packet: {r}");
    }
    assert!(dir.join("report.html").exists());
}
