//! The per-AS EPIC sender of a test network (`aviary host send --epic-secrets`): its packets,
//! sealed from the ASes' master secrets, pass every AS's EPIC check on a path with an up and a
//! down segment (the SegID chained both ways, the crossover AS owning two hop fields), with the
//! QoS flag when they go through the in-process gateway, and fail where a secret is wrong.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use aviary_hummingbird::as_hops;
use aviary_node::api::PathWire;
use aviary_node::host::epic::{EpicSealer, EpicSecretsFile};
use aviary_node::host::{FlowSpec, PacketFactory, ScionAddr};
use aviary_node::routes::AsOnRoute;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::ScionView;
use aviary_zlane::testbed::{Net, DST_HOST, PROTOCOL};

const NS: u64 = 1_000_000_000;
const NOW_NS: u64 = 1_750_000_000 * NS + 250_000_000;
const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 7);

fn path_wire(net: &Net) -> PathWire {
    let ases = as_hops(&net.path)
        .iter()
        .zip(&net.ases)
        .map(|(h, a)| AsOnRoute { ia: a.ia, ingress: h.ingress, egress: h.egress })
        .collect();
    PathWire { ases, path: hex::encode(net.path.to_bytes().unwrap()), expiry: u64::from(u32::MAX) }
}

/// The secrets file of `net` in `dir`, AS `wrong` (if any) with another AS's secret.
fn secrets(net: &Net, dir: &Path, wrong: Option<usize>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut ases = std::collections::BTreeMap::new();
    for (i, a) in net.ases.iter().enumerate() {
        let secret = if Some(i) == wrong { net.ases[(i + 1) % net.ases.len()].master_secret } else { a.master_secret };
        let file = dir.join(format!("secret-{i}.hex"));
        std::fs::write(&file, hex::encode(secret)).unwrap();
        ases.insert(a.ia.to_string(), file);
    }
    let file = dir.join("epic-secrets.json");
    let content = EpicSecretsFile { drkey_protocol: PROTOCOL, ases };
    std::fs::write(&file, serde_json::to_string(&content).unwrap()).unwrap();
    file
}

fn factory(net: &Net, secrets: &Path, gateway_rate_bps: Option<u64>) -> PacketFactory {
    let dst = net.ases.last().unwrap().ia;
    let spec = FlowSpec {
        name: "epic".into(),
        src_ia: net.src_ia(),
        src: (SRC, 40001).into(),
        dst: ScionAddr { ia: dst, host: (DST_HOST, 40000).into() },
        size: 600,
    };
    let path = path_wire(net);
    let sealer = EpicSealer::new(
        secrets,
        &path,
        (spec.src_ia, spec.src.ip()),
        (dst, spec.dst.host.ip()),
        gateway_rate_bps,
        NOW_NS,
    )
    .unwrap();
    PacketFactory::per_as_epic(&spec, &path, sealer).unwrap()
}

fn qos(pkt: &[u8]) -> bool {
    let view = ScionView::new_checked(pkt).unwrap();
    PerAsPathView::new_checked(view.path()).unwrap().qos()
}

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("aviary-epic-sender-{name}-{}", std::process::id()))
}

#[test]
fn sealed_packets_pass_every_as_with_and_without_the_gateway() {
    let net = Net::with_crossover(4, NOW_NS);
    assert_eq!(net.hop_fields(), 5, "the crossover AS holds two hop fields");
    let d = dir("ok");
    let file = secrets(&net, &d, None);
    for gateway in [None, Some(1_000_000)] {
        let mut f = factory(&net, &file, gateway);
        for seq in 0..3 {
            let now = NOW_NS + seq * 1000;
            let mut pkt = f.fill(seq, now).unwrap().to_vec();
            assert_eq!(qos(&pkt), gateway.is_some());
            assert_eq!(net.traverse(&mut pkt, now), Ok(()), "gateway {gateway:?}, packet {seq}");
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn over_the_gateway_rate_packets_leave_unflagged_and_still_pass() {
    let net = Net::with_crossover(3, NOW_NS);
    let d = dir("rate");
    let file = secrets(&net, &d, None);
    // 100 kbit/s and a 15 000-byte burst: 25 packets of 600 bytes at once exceed it.
    let mut f = factory(&net, &file, Some(100_000));
    let flagged: Vec<bool> = (0..40).map(|seq| qos(f.fill(seq, NOW_NS).unwrap())).collect();
    assert!(flagged[0] && !flagged[39], "{flagged:?}");
    let mut pkt = f.fill(40, NOW_NS).unwrap().to_vec();
    assert!(!qos(&pkt));
    assert_eq!(net.traverse(&mut pkt, NOW_NS), Ok(()));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_wrong_secret_fails_at_that_as() {
    let net = Net::with_crossover(4, NOW_NS);
    for wrong in 0..4 {
        let d = dir(&format!("wrong{wrong}"));
        let file = secrets(&net, &d, Some(wrong));
        let mut f = factory(&net, &file, None);
        let mut pkt = f.fill(0, NOW_NS).unwrap().to_vec();
        assert!(net.traverse(&mut pkt, NOW_NS).is_err(), "AS {wrong}'s wrong secret went unnoticed");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
