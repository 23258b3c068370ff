//! EPIC-HP (path type 3): the shared vectors `testdata/vectors/epic.json` (generated
//! independently by `testdata/vectors/gen_epic.py`): MAC input, PHVF/LHVF, the path type 3
//! metadata, hop-field authenticators, EpicTS and the freshness check.

use std::net::IpAddr;

use aviary_scion::drkey::HostAddr as DrkeyHost;
use aviary_scion::epic::hvf::{hvf, MacInput};
use aviary_scion::epic::timestamp::{epic_timestamp, verify_timestamp, StaleTimestamp};
use aviary_scion::mac::mac_input;
use aviary_scion::wire::epic::{EpicPath, EpicPathView, PktId};
use aviary_scion::{HopMacKey, HostAddr, IsdAsn, StandardPath};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = format!("{}/../../testdata/vectors/epic.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("epic.json parses");
    assert_eq!(doc["schema"], "scion-epic-v1");
    doc["vectors"].as_array().expect("vectors is an array").clone()
}

fn int(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("{}: {field} is not an integer", v["name"]))
}

fn u32_of(v: &Value, field: &str) -> u32 {
    u32::try_from(int(v, field)).unwrap()
}

fn bytes<const N: usize>(v: &Value, field: &str) -> [u8; N] {
    let s = v[field].as_str().unwrap_or_else(|| panic!("{}: {field} is not a string", v["name"]));
    hex::decode(s).unwrap().try_into().unwrap_or_else(|_| panic!("{}: {field} is not {N} bytes", v["name"]))
}

/// A source host as the address header carries it.
fn src_host(text: &str) -> HostAddr {
    match DrkeyHost::parse_svc(text) {
        Some(svc) => HostAddr::Svc(svc),
        None => match text.parse::<IpAddr>().unwrap() {
            IpAddr::V4(a) => HostAddr::V4(a),
            IpAddr::V6(a) => HostAddr::V6(a),
        },
    }
}

/// The full CMAC of a hop field described by the vector.
fn hop_auth(h: &Value) -> [u8; 16] {
    let key = HopMacKey::new(&bytes(h, "key"));
    let n = |f: &str| h[f].as_u64().unwrap();
    key.cmac_block(&mac_input(
        n("seg_id") as u16,
        n("timestamp") as u32,
        n("exp_time") as u8,
        n("cons_ingress") as u16,
        n("cons_egress") as u16,
    ))
}

fn check_hvf(v: &Value) {
    let name = &v["name"];
    let (auth_ph, auth_lh) = (bytes::<16>(v, "auth_ph"), bytes::<16>(v, "auth_lh"));
    for (hop, auth) in [("hop_ph", auth_ph), ("hop_lh", auth_lh)] {
        if !v[hop].is_null() {
            assert_eq!(hop_auth(&v[hop]), auth, "{name}: {hop} authenticator");
        }
    }
    let id = PktId { epic_ts: u32_of(v, "epic_ts"), counter: u32_of(v, "counter") };
    let src_ia: IsdAsn = v["src_ia"].as_str().unwrap().parse().unwrap();
    let host = src_host(v["src_host"].as_str().unwrap());
    let input = MacInput::new(u32_of(v, "info_timestamp"), id, src_ia, &host, int(v, "payload_len") as u16);
    if let Some(want) = v["mac_input"].as_str() {
        assert_eq!(hex::encode(input.as_bytes()), want, "{name}: MAC input");
    }
    let (phvf, lhvf) = (hvf(&auth_ph, &input), hvf(&auth_lh, &input));
    assert_eq!(phvf, bytes::<4>(v, "phvf"), "{name}: PHVF");
    assert_eq!(lhvf, bytes::<4>(v, "lhvf"), "{name}: LHVF");
    // The metadata opens the path type 3 header; the view reads it back.
    let mut path = StandardPath { seg_len: [1, 0, 0], info: vec![Default::default()], ..Default::default() };
    path.hops.push(Default::default());
    let bytes_out = EpicPath { pkt_id: id, phvf, lhvf, path }.to_bytes().unwrap();
    assert_eq!(bytes_out[..16], bytes::<16>(v, "metadata"), "{name}: metadata");
    let view = EpicPathView::new_checked(&bytes_out[..]).unwrap();
    assert_eq!((view.pkt_id(), view.phvf(), view.lhvf()), (id, phvf, lhvf), "{name}: view");
}

fn check_timestamp(v: &Value) {
    let got = epic_timestamp(u32_of(v, "info_timestamp"), int(v, "now_ns")).ok();
    assert_eq!(got.map(u64::from), v["epic_ts"].as_u64(), "{}", v["name"]);
}

fn check_verify(v: &Value) {
    let got = match verify_timestamp(u32_of(v, "info_timestamp"), u32_of(v, "epic_ts"), int(v, "now_ns")) {
        Ok(()) => "ok",
        Err(StaleTimestamp::Future) => "future",
        Err(StaleTimestamp::Expired) => "expired",
    };
    assert_eq!(got, v["result"].as_str().unwrap(), "{}", v["name"]);
}

#[test]
fn every_vector_matches() {
    let vs = vectors();
    let mut kinds = [0usize; 3];
    for v in &vs {
        let kind = match v["kind"].as_str().unwrap() {
            "hvf" => {
                check_hvf(v);
                0
            }
            "timestamp" => {
                check_timestamp(v);
                1
            }
            "verify" => {
                check_verify(v);
                2
            }
            other => panic!("{}: unknown kind {other}", v["name"]),
        };
        kinds[kind] += 1;
    }
    assert!(kinds.iter().all(|k| *k > 0), "every kind is covered: {kinds:?}");
    let names: std::collections::HashSet<_> = vs.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), vs.len(), "names are unique");
}
