//! Checks every entry of testdata/vectors/pathval.json, which gen_pathval.py computes with an
//! independent Python implementation (hashlib SHA3-256, KangarooTwelve written out from RFC
//! 9861, `cryptography` AES-CMAC).

use aviary_pathval::header::{Metadata, HEADER_LEN};
use aviary_pathval::{
    data_hash, locate, Destination, EndToEndKey, Freshness, LinkKey, PathvalIssuer, PathvalView, Router, SamplingKey,
    Source, Verdict, PROTOCOL,
};
use aviary_qos::RandomSource;
use aviary_scion::drkey::{Epoch, HostAddr};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/vectors/pathval.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn bytes(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}
fn block(v: &Value) -> [u8; 16] {
    bytes(v).try_into().unwrap()
}
fn int(v: &Value) -> u64 {
    v.as_u64().unwrap()
}
fn meta(v: &Value) -> Metadata {
    Metadata {
        session_id: block(&v["session_id"]),
        timestamp: int(&v["timestamp"]) as u32,
        data_hash: block(&v["data_hash"]),
    }
}

/// Replays fixed bytes (the vector's "random" proof of Update).
struct Fixed(Vec<u8>);

impl RandomSource for Fixed {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        let n = out.len();
        out.copy_from_slice(&self.0[..n]);
        self.0.drain(..n);
    }
}

fn key_named(v: &Value, name: &str) -> [u8; 16] {
    let k = v["keys"].as_array().unwrap().iter().find(|k| k["name"] == name).unwrap();
    block(&k["key"])
}

#[test]
fn drkey_derivations_match() {
    let v = vectors();
    assert_eq!(int(&v["drkey_protocol"]), u64::from(PROTOCOL.0));
    let epoch = Epoch::new(int(&v["epoch"]["begin"]) as u32, int(&v["epoch"]["end"]) as u32).unwrap();
    let probe = Metadata { session_id: [7; 16], timestamp: 9, data_hash: [3; 16] };
    for k in v["keys"].as_array().unwrap() {
        let want = block(&k["key"]);
        if k["kind"] == "link" {
            let issuer = PathvalIssuer::new(&bytes(&k["downstream_master_secret"]), epoch).unwrap();
            let got = issuer.link_key_from(k["upstream_ia"].as_str().unwrap().parse().unwrap());
            // HiddenSample ends in the raw key, so equal digests mean equal keys.
            let want = LinkKey::new(want);
            assert_eq!(got.hidden_sample(true, &[1; 16], 2), want.hidden_sample(true, &[1; 16], 2), "{}", k["name"]);
        } else {
            let issuer = PathvalIssuer::new(&bytes(&k["dst_master_secret"]), epoch).unwrap();
            let host = |f: &str| HostAddr::from_ip(k[f].as_str().unwrap().parse().unwrap());
            let got = issuer.end_to_end_key(
                k["src_ia"].as_str().unwrap().parse().unwrap(),
                &host("src_host"),
                &host("dst_host"),
            );
            assert_eq!(got.concealment(&probe), EndToEndKey::new(want).concealment(&probe), "{}", k["name"]);
        }
    }
}

#[test]
fn primitives_match() {
    let v = vectors();
    for e in v["data_hash"].as_array().unwrap() {
        assert_eq!(data_hash(&bytes(&e["payload"])), block(&e["data_hash"]));
    }
    for e in v["hidden_sample"].as_array().unwrap() {
        let k = LinkKey::new(block(&e["key"]));
        let got = k.hidden_sample(e["flag"] == 1, &block(&e["data_hash"]), int(&e["hop_count"]) as u8);
        assert_eq!(got.to_vec(), bytes(&e["hidden_sample"]));
    }
    for e in v["validation_proof"].as_array().unwrap() {
        let k = LinkKey::new(block(&e["key"]));
        let got = k.validation_proof(&meta(e), int(&e["hop_count"]) as u8, &block(&e["concealment"]));
        assert_eq!(got, block(&e["validation_proof"]));
    }
    for e in v["concealment"].as_array().unwrap() {
        assert_eq!(EndToEndKey::new(block(&e["key"])).concealment(&meta(e)), block(&e["concealment"]));
    }
    for e in v["sampling"].as_array().unwrap() {
        let k = SamplingKey::new(block(&e["key"]));
        let hc = int(&e["hop_count"]) as u8;
        assert_eq!(u64::from(k.rho(&meta(e), hc)), int(&e["rho"]));
        assert_eq!(k.ep_sampling(&meta(e), hc), e["flag"].as_bool().unwrap());
    }
}

fn label(v: Verdict) -> String {
    match v {
        Verdict::Forward { sampled: true } => "forward sampled".into(),
        Verdict::Forward { sampled: false } => "forward unsampled".into(),
        Verdict::Deliver => "deliver".into(),
        Verdict::Drop(d) => format!("drop {}", d.label()),
    }
}

#[test]
fn walks_match() {
    let v = vectors();
    let (k01, k12, k0n) = (key_named(&v, "k01"), key_named(&v, "k12"), key_named(&v, "k0n"));
    let (k01, k12, k0n) = (LinkKey::new(k01), LinkKey::new(k12), EndToEndKey::new(k0n));
    let f = &v["freshness"];
    let freshness = Freshness { max_age_s: int(&f["max_age_s"]), max_future_s: int(&f["max_future_s"]) };
    let walks = v["walks"].as_array().unwrap();
    assert!(walks.len() >= 6);
    for w in walks {
        let name = w["name"].as_str().unwrap();
        for s in w["steps"].as_array().unwrap() {
            let mut pkt = bytes(&s["before"]);
            match s["node"].as_str().unwrap() {
                "source" => {
                    let at = locate(&pkt).unwrap();
                    let sid = PathvalView::new_checked(&bytes(&s["after"])[at.header.clone()]).unwrap().session_id();
                    assert_eq!(at.header.len(), HEADER_LEN);
                    let src = Source { session_id: sid, k0n: k0n.clone() };
                    src.send(&mut pkt, int(&s["timestamp"]) as u32, &k01).unwrap();
                    assert_eq!(hex::encode(&pkt), s["after"].as_str().unwrap(), "{name}: source");
                }
                "router" => {
                    let mut r = Router::new(SamplingKey::new(block(&v["router_sampling_key"])), freshness);
                    let verdict = r.process(&mut pkt, &k01, &k12, int(&s["now_s"]), &mut Fixed(bytes(&s["random"])));
                    assert_eq!(label(verdict), s["verdict"].as_str().unwrap(), "{name}: router");
                    if matches!(verdict, Verdict::Forward { .. }) {
                        assert_eq!(hex::encode(&pkt), s["after"].as_str().unwrap(), "{name}: router");
                    } else {
                        assert_eq!(r.stats.drops.total(), 1);
                    }
                }
                "destination" => {
                    let mut d = Destination::new(k0n.clone(), freshness);
                    let verdict = d.receive(&mut pkt, &k12, int(&s["now_s"]));
                    assert_eq!(label(verdict), s["verdict"].as_str().unwrap(), "{name}: destination");
                }
                other => panic!("unknown node {other}"),
            }
        }
    }
}
