//! Checks every entry of testdata/vectors/glwp.json, which gen_glwp.py computes with an
//! independent Python implementation (`cryptography` AES-CMAC, SCION headers built by hand).

use aviary_glwp::{hop_authenticator, hop_key, AidMonitor, Freshness, HopKeyInput, Router, PATH_TYPE};
use aviary_qos::{drop_label, DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::IsdAsn;
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/glwp.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn bytes(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}
fn key(v: &Value) -> [u8; 16] {
    bytes(v).try_into().unwrap()
}
fn int(v: &Value) -> u64 {
    v.as_u64().unwrap()
}
fn ia(v: &Value) -> IsdAsn {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn hop_keys_match() {
    let v = vectors();
    assert_eq!(v["format"], "aviary-glwp-vectors/1");
    for e in v["hop_keys"].as_array().unwrap() {
        let input = HopKeyInput {
            src: ia(&e["src"]),
            aid: int(&e["aid"]),
            beta: int(&e["beta"]) as u32,
            ingress: int(&e["ingress"]) as u16,
            egress: int(&e["egress"]) as u16,
            ts_exp: int(&e["ts_exp"]) as u32,
        };
        assert_eq!(input.bytes().to_vec(), bytes(&e["input"]), "{e}");
        assert_eq!(hop_key(&key(&e["as_secret"]), &input), key(&e["hop_key"]), "{e}");
    }
}

#[test]
fn hop_authenticators_match() {
    for e in vectors()["hop_authenticators"].as_array().unwrap() {
        let ha = hop_authenticator(&key(&e["hop_key"]), ia(&e["src"]), int(&e["ts_pkt"]), int(&e["pkt_len"]) as u16);
        assert_eq!(ha.to_vec(), bytes(&e["ha"]), "{e}");
    }
}

fn verdict_text(r: &Router, v: Verdict) -> String {
    match v {
        Verdict::Forward { egress, .. } => format!("forward {egress}"),
        Verdict::Deliver => "deliver".into(),
        Verdict::Drop(reason) => format!("drop {}", drop_label(r, reason)),
    }
}

#[test]
fn walks_match() {
    let v = vectors();
    let p = &v["router_params"];
    assert_eq!(int(&p["path_type"]), u64::from(PATH_TYPE));
    let freshness = Freshness { lifetime_ns: int(&p["lifetime_ns"]), skew_ns: int(&p["skew_ns"]) };
    let burst = int(&p["burst_bytes"]) as u16;
    let walks = v["walks"].as_array().unwrap();
    assert!(walks.len() >= 10);
    for w in walks {
        let mut routers: Vec<([u8; 16], Router)> = Vec::new();
        for (n, step) in w["steps"].as_array().unwrap().iter().enumerate() {
            let secret = key(&step["as_secret"]);
            if !routers.iter().any(|(s, _)| *s == secret) {
                let dups = DuplicateFilter::new(
                    DuplicateFilterConfig {
                        window_ns: freshness.lifetime_ns + 2 * freshness.skew_ns,
                        expected_per_window: 1000,
                        false_positive_rate: 1e-12,
                    },
                    [3; 16],
                )
                .unwrap();
                routers.push((secret, Router::new(&secret, freshness, AidMonitor::new(16, burst, 5), dups)));
            }
            let router = &mut routers.iter_mut().find(|(s, _)| *s == secret).unwrap().1;
            let mut pkt = bytes(&step["before"]);
            let verdict = router.process(&mut pkt, int(&step["ingress"]) as u16, int(&step["now_ns"]));
            let name = format!("{} step {n}", w["name"]);
            assert_eq!(verdict_text(router, verdict), step["verdict"].as_str().unwrap(), "{name}");
            if let Some(after) = step.get("after") {
                assert_eq!(hex::encode(&pkt), after.as_str().unwrap(), "{name}");
            }
        }
    }
}
