//! Checks the shared test vectors `testdata/vectors/hummingbird.json` against the library:
//! every entry is recomputed from its inputs (keys from master secrets, MAC input blocks
//! from their fields, packets through freshly built routers), and the committed file must
//! be exactly what the generator (`cargo run -p aviary-hummingbird --example gen_vectors --
//! testdata/vectors`) writes.

mod vectors_gen;

use std::collections::HashMap;

use aviary_hummingbird::crypto::flyover_block;
use aviary_hummingbird::path::{MAX_COUNTER, MAX_MILLIS, MAX_RES_ID};
use aviary_hummingbird::{derive_sv, AuthKey, ResInfo, Router, RouterParams, SecretValue};
use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::mac::{derive_forwarding_key, mac_input};
use aviary_scion::wire::header::path_type;
use aviary_scion::{AsForwarding, HopMacKey, IsdAsn, ScionView};
use vectors_gen::{Vectors, FILE_NAME, FORMAT};

fn file_path() -> String {
    format!("{}/../../testdata/vectors/{FILE_NAME}", env!("CARGO_MANIFEST_DIR"))
}

fn read_file() -> String {
    std::fs::read_to_string(file_path()).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; generate it with `cargo run -p aviary-hummingbird --example gen_vectors -- \
             testdata/vectors`",
            file_path()
        )
    })
}

fn load() -> Vectors {
    let v: Vectors = serde_json::from_str(&read_file()).expect("vector file parses");
    assert_eq!(v.format, FORMAT);
    v
}

fn bytes(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

fn b16(s: &str) -> [u8; 16] {
    bytes(s).try_into().unwrap_or_else(|_| panic!("{s:?} is not 16 bytes"))
}

fn parse_verdict(s: &str) -> Verdict {
    let parts: Vec<&str> = s.split(' ').collect();
    match parts.as_slice() {
        ["deliver"] => Verdict::Deliver,
        ["forward", class, egress] => {
            let class = match *class {
                "priority" => Admission::RESERVED,
                "best_effort" => Admission::UNAUTHENTICATED,
                c => panic!("unknown class {c:?}"),
            };
            Verdict::Forward { egress: egress.parse().expect("egress"), admission: class }
        }
        ["drop", reason] => Verdict::Drop(
            *DropReason::ALL
                .iter()
                .find(|r| r.label() == *reason)
                .unwrap_or_else(|| panic!("unknown reason {reason:?}")),
        ),
        _ => panic!("unparseable verdict {s:?}"),
    }
}

#[test]
fn committed_file_is_up_to_date() {
    let committed = read_file();
    let fresh = vectors_gen::render();
    if committed != fresh {
        let line = committed.lines().zip(fresh.lines()).position(|(a, b)| a != b).unwrap_or(0) + 1;
        panic!(
            "{} is stale (first difference at line {line}, {} vs {} bytes); regenerate it with `cargo run -p \
             aviary-hummingbird --example gen_vectors -- testdata/vectors`",
            file_path(),
            committed.len(),
            fresh.len()
        );
    }
}

#[test]
fn key_derivation() {
    let v = load();
    assert!(v.key_derivation.len() >= 3);
    for k in &v.key_derivation {
        let ms = bytes(&k.master_secret);
        let fk = b16(&k.forwarding_key);
        assert_eq!(derive_forwarding_key(&ms), fk, "forwarding key of {}", k.master_secret);
        assert_eq!(derive_sv(&ms), b16(&k.sv), "SV of {}", k.master_secret);
        // The key that routers expand from the master secret is the derived one.
        let block = mac_input(1, 2, 3, 4, 5);
        assert_eq!(HopMacKey::from_master_secret(&ms).mac(&block), HopMacKey::new(&fk).mac(&block));
    }
}

#[test]
fn hop_macs() {
    let v = load();
    assert!(v.hop_mac.len() >= 16);
    for h in &v.hop_mac {
        // The block, laid out field by field (docs/hummingbird-dataplane.md).
        let mut block = [0u8; 16];
        block[2..4].copy_from_slice(&h.seg_id.to_be_bytes());
        block[4..8].copy_from_slice(&h.timestamp.to_be_bytes());
        block[9] = h.exp_time;
        block[10..12].copy_from_slice(&h.cons_ingress.to_be_bytes());
        block[12..14].copy_from_slice(&h.cons_egress.to_be_bytes());
        assert_eq!(hex::encode(block), h.block, "{}", h.comment);
        assert_eq!(mac_input(h.seg_id, h.timestamp, h.exp_time, h.cons_ingress, h.cons_egress), block, "{}", h.comment);
        let key = HopMacKey::new(&b16(&h.key));
        let mac = key.hop_mac(h.seg_id, h.timestamp, h.exp_time, h.cons_ingress, h.cons_egress);
        assert_eq!(hex::encode(mac), h.mac, "{}", h.comment);
        assert_eq!(&key.cmac_block(&block)[..6], &mac[..]);
    }
    // Edge values of every field occur.
    let has = |f: &dyn Fn(&vectors_gen::HopMacVector) -> bool| v.hop_mac.iter().any(f);
    assert!(has(&|h| h.seg_id == 0) && has(&|h| h.seg_id == u16::MAX));
    assert!(has(&|h| h.timestamp == 0) && has(&|h| h.timestamp == u32::MAX));
    assert!(has(&|h| h.exp_time == 0) && has(&|h| h.exp_time == u8::MAX));
    assert!(has(&|h| h.cons_ingress == 0) && has(&|h| h.cons_ingress == u16::MAX));
    assert!(has(&|h| h.cons_egress == 0) && has(&|h| h.cons_egress == u16::MAX));
}

#[test]
fn flyover_macs() {
    let v = load();
    assert!(v.flyover.len() >= 16);
    for f in &v.flyover {
        let c = &f.comment;
        let ms = bytes(&f.master_secret);
        let sv = derive_sv(&ms);
        assert_eq!(hex::encode(sv), f.sv, "{c}");
        assert_eq!(f.base_ts.checked_sub(u32::from(f.res_start_offset)), Some(f.res_start), "{c}");
        assert!(f.res_id <= MAX_RES_ID && f.bw <= 1023 && f.millis <= MAX_MILLIS && f.counter <= MAX_COUNTER, "{c}");

        // A_K input, field by field.
        let mut ri = [0u8; 16];
        ri[0..2].copy_from_slice(&f.ingress.to_be_bytes());
        ri[2..4].copy_from_slice(&f.egress.to_be_bytes());
        ri[4..8].copy_from_slice(&((f.res_id << 10) | u32::from(f.bw)).to_be_bytes());
        ri[8..12].copy_from_slice(&f.res_start.to_be_bytes());
        ri[12..14].copy_from_slice(&f.res_duration.to_be_bytes());
        assert_eq!(hex::encode(ri), f.res_info_block, "{c}");
        let res = ResInfo {
            ingress: f.ingress,
            egress: f.egress,
            res_id: f.res_id,
            bw: f.bw,
            start: f.res_start,
            duration: f.res_duration,
        };
        assert_eq!(res.block(), ri, "{c}");
        let ak = SecretValue::new(&sv).auth_key(&res);
        assert_eq!(hex::encode(ak), f.ak, "{c}");
        assert_eq!(SecretValue::from_master_secret(&ms).auth_key(&res), ak, "{c}");

        // FlyoverMAC input, field by field.
        let dst: IsdAsn = f.dst_ia.parse().unwrap_or_else(|e| panic!("{c}: {e}"));
        let mut fb = [0u8; 16];
        fb[0..2].copy_from_slice(&dst.isd().to_be_bytes());
        fb[2..8].copy_from_slice(&dst.asn().to_be_bytes()[2..]);
        fb[8..10].copy_from_slice(&f.pkt_len.to_be_bytes());
        fb[10..12].copy_from_slice(&f.res_start_offset.to_be_bytes());
        fb[12..16].copy_from_slice(&((u32::from(f.millis) << 22) | f.counter).to_be_bytes());
        assert_eq!(hex::encode(fb), f.flyover_block, "{c}");
        assert_eq!(flyover_block(dst.to_bytes(), f.pkt_len, f.res_start_offset, f.millis, f.counter), fb, "{c}");
        let mac = AuthKey::new(&ak).flyover_mac(&fb);
        assert_eq!(hex::encode(mac), f.flyover_mac, "{c}");
    }
    let has = |p: &dyn Fn(&vectors_gen::FlyoverVector) -> bool| v.flyover.iter().any(p);
    assert!(has(&|f| f.res_id == 0) && has(&|f| f.res_id == MAX_RES_ID));
    assert!(has(&|f| f.bw == 0) && has(&|f| f.bw == 1023));
    assert!(has(&|f| f.counter == MAX_COUNTER));
    assert!(has(&|f| f.millis == 0) && has(&|f| f.millis == MAX_MILLIS));
    assert!(has(&|f| f.ingress == 0) && has(&|f| f.egress == 0));
    assert!(has(&|f| f.res_start_offset == u16::MAX));
}

fn router(ia: &str, master_secret: &str, interfaces: &[u16], params: RouterParams) -> Router {
    let ia: IsdAsn = ia.parse().expect("ISD-AS");
    let ms = bytes(master_secret);
    let fwd = AsForwarding::new(ia, HopMacKey::from_master_secret(&ms), interfaces.iter().copied());
    Router::new(fwd, SecretValue::from_master_secret(&ms), params).expect("router")
}

#[test]
fn packet_walks() {
    let v = load();
    assert_eq!(v.router_params, RouterParams::default());
    let mut names = std::collections::HashSet::new();
    for w in &v.packets {
        assert!(names.insert(&w.name), "duplicate walk {}", w.name);
        assert!(!w.steps.is_empty(), "{}", w.name);
        // Fresh routers per walk, kept across its steps (policing state).
        let mut routers: HashMap<(String, String), Router> = HashMap::new();
        let mut prev: Option<(&str, Verdict)> = None;
        for (k, s) in w.steps.iter().enumerate() {
            let ctx = format!("walk {} step {k} at {}", w.name, s.as_);
            // A forwarded packet is the next step's input.
            if let Some((after, Verdict::Forward { .. })) = prev {
                assert_eq!(s.before, after, "{ctx}: input is not the previous step's output");
            }
            let r = routers
                .entry((s.as_.clone(), s.master_secret.clone()))
                .or_insert_with(|| router(&s.as_, &s.master_secret, &s.interfaces, v.router_params));
            assert_eq!(r.forwarding().interfaces.iter().collect::<Vec<_>>(), s.interfaces, "{ctx}");
            let mut pkt = bytes(&s.before);
            let verdict = r.process(&mut pkt, s.ingress, s.now_ns);
            assert_eq!(verdict, parse_verdict(&s.verdict), "{ctx}");
            assert_eq!(hex::encode(&pkt), s.after, "{ctx}: packet after processing");
            prev = Some((&s.after, verdict));
        }
    }
    // What the walks must cover.
    let steps = || v.packets.iter().flat_map(|w| &w.steps);
    let ptype = |s: &vectors_gen::Step| ScionView::new_checked(bytes(&s.before)).unwrap().path_type();
    assert!(steps().any(|s| ptype(s) == path_type::SCION));
    assert!(steps().any(|s| ptype(s) == path_type::HUMMINGBIRD));
    for verdict in ["forward priority 1", "forward best_effort 1", "deliver", "drop bad_mac", "drop expired_hop"] {
        assert!(steps().any(|s| s.verdict == verdict), "no step with verdict {verdict}");
    }
    let ases = |w: &vectors_gen::PacketWalk| {
        w.steps.iter().map(|s| s.as_.clone()).collect::<std::collections::HashSet<_>>().len()
    };
    assert!(v.packets.iter().any(|w| ases(w) == 4));
    assert!(v.packets.iter().any(|w| ases(w) == 2));
}

#[test]
fn verdict_text_round_trips() {
    for v in [Verdict::reserved(1), Verdict::unauthenticated(65535), Verdict::Deliver]
        .into_iter()
        .chain(DropReason::ALL.iter().map(|r| Verdict::Drop(*r)))
    {
        assert_eq!(parse_verdict(&vectors_gen::verdict_text(&v)), v);
    }
}
