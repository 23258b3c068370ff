//! The gateway against hosts and routers built here: what it authorizes verifies at every AS
//! of the path in the gateway's form (and classifies G at the source AS's router), what it
//! does not stays the host's; spoofed sources, replays, foreign sources and malformed
//! packets are dropped with their reason; rates hold per host and per prefix.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use aviary_qos::{Context, LinkState, Processor, RateBound, SeededRandom, Verdict};
use aviary_scion::drkey::RotatingSecret;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::{AsForwarding, HostAddr, IsdAsn, ScionView};
use proptest::prelude::*;

use super::*;
use crate::classes::{RateConfig, RouterClass, ZlaneConfig};
use crate::router::ZlaneRouter;
use crate::testbed::{Net, IF_NEXT, PROTOCOL};

const T0: u64 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const NOW: u64 = T0 * S;
pub(super) const PAYLOAD: usize = 500;

fn host(last: u16) -> Ipv4Addr {
    Net::host(last)
}

pub(super) fn config(hosts: &[(&str, Option<u64>)], guarantee_bps: u64, over_rate: OverRatePolicy) -> GatewayConfig {
    GatewayConfig {
        guarantee_bps,
        burst_bytes: 3_000,
        over_rate,
        drkey_protocol: PROTOCOL,
        suppress_duplicates: true,
        hosts: hosts.iter().map(|(p, r)| config::HostRateConfig { prefix: p.to_string(), rate_bps: *r }).collect(),
    }
}

pub(super) fn one(gw: &mut Gateway, pkt: &mut [u8], now: u64) -> GatewayVerdict {
    let mut v = [GatewayVerdict::Unflagged];
    gw.process_batch(&mut [pkt], now, &mut v);
    v[0]
}

fn qos(pkt: &[u8]) -> bool {
    let v = ScionView::new_checked(pkt).unwrap();
    PerAsPathView::new_checked(v.path()).unwrap().qos()
}

#[test]
fn an_authorized_packet_verifies_at_every_as_in_the_gateway_form() {
    for n in [2, 3, 5] {
        let mut net = if n == 2 { Net::new(n, NOW) } else { Net::with_crossover(n, NOW) };
        let mut gw = net.gateway(&config(&[("10.0.0.1", None)], 10_000_000, OverRatePolicy::Unflagged), NOW).unwrap();
        let mut pkt = net.packet(host(1), PAYLOAD, NOW);
        let original = pkt.clone();
        assert_eq!(one(&mut gw, &mut pkt, NOW), GatewayVerdict::Authorized);
        assert!(qos(&pkt));
        assert!(net.traverse(&mut pkt.clone(), NOW).is_ok(), "{n} ASes");
        // The same fields with the flag but not re-authenticated (a host setting Q itself)
        // fail, and so does the re-authenticated packet without the flag.
        let mut forged = original.clone();
        let range = ScionView::new_checked(&forged[..]).unwrap().path_range();
        PerAsPathView::new_checked(&mut forged[range.clone()]).unwrap().set_qos(true);
        assert!(net.traverse(&mut forged, NOW).is_err());
        let mut unflagged = pkt.clone();
        PerAsPathView::new_checked(&mut unflagged[range]).unwrap().set_qos(false);
        assert!(net.traverse(&mut unflagged, NOW).is_err());
        // The host's own packet verifies too: authenticated best effort.
        assert!(net.traverse(&mut original.clone(), NOW).is_ok());
    }
}

/// The Z-Lane router of AS 0 of `net` (every AS of `net` in its ISD, guaranteed `rates`; an
/// equal share without), on its link `IF_NEXT`.
pub(super) fn source_as_router(net: &Net, rates: BTreeMap<String, RateConfig>) -> ZlaneRouter {
    let a = &net.ases[0];
    let zcfg = ZlaneConfig {
        ases: net.ases.iter().map(|a| a.ia).collect(),
        isds: vec![],
        rates,
        burst_bytes: 15_000,
        drkey_protocol: PROTOCOL,
    };
    let fwd = AsForwarding::new(a.ia, a.mac_key.clone(), [IF_NEXT]);
    let secret = RotatingSecret::new(&a.master_secret).unwrap();
    ZlaneRouter::new(fwd, &secret, EpochSchedule::SCION_DEFAULT, zcfg, [(IF_NEXT, RateBound::Ppm(500_000))], NOW)
        .unwrap()
}

#[test]
fn the_source_as_router_gives_authorized_traffic_g_and_the_rest_a() {
    let mut net = Net::new(2, NOW);
    let mut gw = net.gateway(&config(&[("10.0.0.1", None)], 400_000, OverRatePolicy::Unflagged), NOW).unwrap();
    let mut router = source_as_router(&net, Default::default());
    let links = [LinkState { id: IF_NEXT, up: true, rate_bps: 100_000_000, ..Default::default() }];
    let mut random = SeededRandom::new(1);
    let mut class = |pkt: &mut Vec<u8>, now: u64| {
        let mut ctx = Context { now_ns: now, ingress: 0, links: &links, random: &mut random };
        let mut v = [Verdict::Deliver];
        router.process_batch(&mut ctx, &mut [pkt.as_mut_slice()], &mut v);
        match v[0] {
            Verdict::Forward { admission, .. } => admission,
            other => panic!("{other:?}"),
        }
    };
    // 2 Mbit/s offered for one second against the host's 400 kbit/s at the gateway: what the
    // gateway authorizes is G at the router (its guarantee is far above), the rest A.
    let len = net.packet(host(1), PAYLOAD, NOW).len() as u64;
    let gap = len * 8 * S / 2_000_000;
    let (mut g, mut a, mut now) = (0u64, 0u64, NOW);
    while now < NOW + S {
        let mut pkt = net.packet(host(1), PAYLOAD, now);
        let verdict = one(&mut gw, &mut pkt, now);
        let admission = class(&mut pkt, now);
        match verdict {
            GatewayVerdict::Authorized => {
                assert_eq!(admission, RouterClass::Guaranteed.admission());
                g += len;
            }
            GatewayVerdict::Unflagged => {
                assert_eq!(admission, RouterClass::Authenticated.admission());
                a += len;
            }
            GatewayVerdict::Drop(d) => panic!("{d:?}"),
        }
        now += gap;
    }
    assert!(g <= 400_000 / 8 + 3_000 + len, "the host is held to its rate: {g} bytes");
    assert!(g >= 400_000 / 8 - len, "the host gets its rate: {g} bytes");
    assert!(a > 0);
    let c = gw.host(&HostAddr::V4(host(1))).unwrap();
    assert_eq!((c.compliant_bytes, c.over_rate_bytes, c.dropped_packets), (g, a, 0));
}

#[test]
fn a_spoofed_source_host_is_dropped_before_it_is_charged() {
    let mut net = Net::with_crossover(3, NOW);
    let mut gw = net
        .gateway(&config(&[("10.0.0.1", None), ("10.0.0.2", None)], 1_000_000, OverRatePolicy::Unflagged), NOW)
        .unwrap();
    // Host .2 claims to be .1: its keys are not .1's.
    for k in 0..50 {
        let mut pkt = net.packet_as(host(2), host(1), PAYLOAD, NOW + k);
        assert_eq!(one(&mut gw, &mut pkt, NOW + k), GatewayVerdict::Drop(GatewayDrop::BadSourceHvf));
        assert!(!qos(&pkt));
    }
    assert!(gw.host(&HostAddr::V4(host(1))).is_none(), "nothing was charged to the victim");
    let mut pkt = net.packet(host(1), PAYLOAD, NOW + 100);
    assert_eq!(one(&mut gw, &mut pkt, NOW + 100), GatewayVerdict::Authorized);
    assert_eq!(gw.drops().find(|(l, _)| *l == "bad_source_hvf").unwrap().1, 50);
}

#[test]
fn replays_foreign_sources_and_malformed_packets_are_dropped_with_their_reason() {
    let mut net = Net::with_crossover(3, NOW);
    let mut gw = net.gateway(&config(&[("10.0.0.0/24", None)], 10_000_000, OverRatePolicy::Unflagged), NOW).unwrap();
    let pkt = net.packet(host(1), PAYLOAD, NOW);
    let mut first = pkt.clone();
    assert_eq!(one(&mut gw, &mut first, NOW), GatewayVerdict::Authorized);
    let mut replay = pkt.clone();
    assert_eq!(one(&mut gw, &mut replay, NOW + 1000), GatewayVerdict::Drop(GatewayDrop::Duplicate));
    // Stale: after the freshness span.
    let mut late = net.packet(host(1), PAYLOAD, NOW);
    assert_eq!(one(&mut gw, &mut late, NOW + 10 * S), GatewayVerdict::Drop(GatewayDrop::TimestampExpired));
    // Another AS's source.
    let mut foreign = net.packet(host(1), PAYLOAD, NOW);
    ScionView::new_checked(&mut foreign[..]).unwrap().set_src_ia(IsdAsn::new(1, 0xff00_0000_0999));
    assert_eq!(one(&mut gw, &mut foreign, NOW), GatewayVerdict::Drop(GatewayDrop::ForeignSource));
    // Not at its first hop field.
    let mut moved = net.packet(host(1), PAYLOAD, NOW);
    let range = ScionView::new_checked(&moved[..]).unwrap().path_range();
    moved[range.start + aviary_scion::wire::epic_per_as::field::STANDARD_PATH] |= 0x01;
    assert_eq!(one(&mut gw, &mut moved, NOW), GatewayVerdict::Drop(GatewayDrop::NotFirstHop));
    // Truncated, and standard SCION.
    let mut short = pkt[..pkt.len() - PAYLOAD - 2].to_vec();
    assert!(matches!(one(&mut gw, &mut short, NOW), GatewayVerdict::Drop(_)));
    let mut garbage = vec![0xff; 40];
    assert_eq!(one(&mut gw, &mut garbage, NOW), GatewayVerdict::Drop(GatewayDrop::MalformedHeader));
    let labels: Vec<_> = gw.drops().filter(|(_, n)| *n > 0).map(|(l, _)| l).collect();
    for l in ["duplicate", "epic_timestamp_expired", "foreign_source", "not_first_hop", "malformed_header"] {
        assert!(labels.contains(&l), "{l} in {labels:?}");
    }
}

#[test]
fn over_rate_packets_leave_unflagged_or_are_dropped_by_policy() {
    for policy in [OverRatePolicy::Unflagged, OverRatePolicy::Drop] {
        let mut net = Net::new(2, NOW);
        // Burst 3000 bytes, rate 0 for an unlisted host.
        let mut gw = net.gateway(&config(&[("10.0.0.1", None)], 1_000_000, policy), NOW).unwrap();
        let mut pkt = net.packet(host(7), PAYLOAD, NOW);
        let original = pkt.clone();
        let v = one(&mut gw, &mut pkt, NOW);
        match policy {
            OverRatePolicy::Unflagged => {
                assert_eq!(v, GatewayVerdict::Unflagged);
                assert_eq!(pkt, original, "the host's fields and no flag");
            }
            OverRatePolicy::Drop => assert_eq!(v, GatewayVerdict::Drop(GatewayDrop::OverRate)),
        }
        let c = gw.host(&HostAddr::V4(host(7))).unwrap();
        assert_eq!(c.over_rate_packets, 1);
        assert_eq!(c.dropped_packets, u64::from(policy == OverRatePolicy::Drop));
    }
}

#[test]
fn a_path_through_an_as_without_a_key_is_not_authorized() {
    let mut net = Net::with_crossover(3, NOW);
    let cfg = config(&[("10.0.0.1", None)], 1_000_000, OverRatePolicy::Unflagged);
    let secret = RotatingSecret::new(&net.ases[0].master_secret).unwrap();
    let mut gw = Gateway::new(net.src_ia(), &secret, EpochSchedule::SCION_DEFAULT, &cfg, NOW).unwrap();
    gw.path_keys_mut().add_link(net.ases[0].ia, IF_NEXT, net.ases[1].ia);
    let mut pkt = net.packet(host(1), PAYLOAD, NOW);
    assert_eq!(one(&mut gw, &mut pkt, NOW), GatewayVerdict::Unflagged);
    assert!(!qos(&pkt));
    assert_eq!(gw.no_path_keys(), 1);
}

#[test]
fn the_config_names_the_field_at_fault() {
    let bad =
        |hosts: &[(&str, Option<u64>)], g: u64| config(hosts, g, OverRatePolicy::Drop).plan().unwrap_err().field();
    assert_eq!(bad(&[("10.0.0.300", None)], 1), "hosts[0].prefix");
    assert_eq!(bad(&[("10.0.0.1", None), ("10.0.0.1/32", None)], 1), "hosts[1].prefix");
    assert_eq!(bad(&[("10.0.0.1/24", None)], 1), "hosts[0].prefix");
    assert_eq!(bad(&[("10.0.0.1", Some(u64::MAX))], u64::MAX), "hosts[0].rate_bps");
    assert_eq!(bad(&[("10.0.0.1", Some(3)), ("10.0.0.2", Some(3))], 5), "hosts");
    let text =
        "guarantee_bps = 1000000\ndrkey_protocol = 42\nover_rate = \"drop\"\n[[hosts]]\nprefix = \"fd00::/64\"\n";
    let c: GatewayConfig = toml::from_str(text).unwrap();
    assert_eq!(c.plan().unwrap().groups[0].1, aviary_qos::Rate::from_bps(1_000_000).unwrap());
    assert!(toml::from_str::<GatewayConfig>("guarantee_bps = 1\ndrkey_protocol = 1\nover_rate = \"maybe\"").is_err());
}

#[test]
fn the_default_splits_the_guarantee_equally_among_what_is_left() {
    let c = config(
        &[("10.0.0.1", Some(400_000)), ("10.0.1.0/24", None), ("10.0.2.0/24", None)],
        1_000_000,
        OverRatePolicy::Drop,
    );
    let rates: Vec<u64> = c.plan().unwrap().groups.iter().map(|(_, r)| r.bps()).collect();
    assert_eq!(rates, [400_000, 300_000, 300_000]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Hosts of one prefix share its rate, whatever they send: together they get at most
    /// rate · t + burst of authorized bytes, and a host of its own prefix keeps its rate
    /// however much the prefix's hosts send.
    #[test]
    fn a_prefix_shares_one_rate_and_cannot_drain_another_hosts(
        hosts in 1usize..5, kbps in 1_000u64..4_000, own_kbps in 200u64..1_000,
    ) {
        let mut net = Net::new(2, NOW);
        let (rate, own) = (300_000u64, 400_000u64);
        let c = config(&[("10.0.0.0/24", Some(rate)), ("10.0.1.1", Some(own))], 1_000_000, OverRatePolicy::Unflagged);
        let mut gw = net.gateway(&c, NOW).unwrap();
        let loner = Ipv4Addr::new(10, 0, 1, 1);
        let len = net.packet(host(1), PAYLOAD, NOW).len() as u64;
        let gap = len * 8 * S / (kbps * 1000);
        let loner_gap = len * 8 * S / (own_kbps * 1000);
        let (mut now, mut next_loner) = (NOW, NOW);
        let end = NOW + S / 2;
        while now < end {
            for h in 0..hosts {
                let mut pkt = net.packet(host(1 + h as u16), PAYLOAD, now);
                prop_assert_ne!(one(&mut gw, &mut pkt, now), GatewayVerdict::Drop(GatewayDrop::Duplicate));
            }
            while next_loner <= now {
                let mut pkt = net.packet(loner, PAYLOAD, next_loner);
                one(&mut gw, &mut pkt, next_loner);
                next_loner += loner_gap;
            }
            now += gap;
        }
        let prefix: u64 = (0..hosts).map(|h| gw.host(&HostAddr::V4(host(1 + h as u16))).unwrap().compliant_bytes).sum();
        prop_assert!(prefix <= rate / 8 / 2 + 3_000 + len, "prefix got {} bytes", prefix);
        let l = gw.host(&HostAddr::V4(loner)).unwrap();
        // Below its rate, the loner is never over it.
        if own_kbps * 1000 + len * 8 * 4 < own {
            prop_assert_eq!(l.over_rate_packets, 0);
        }
        prop_assert!(l.compliant_bytes + 2 * len >= (own_kbps * 1000).min(own) / 8 / 2);
    }
}

/// A new host in a batch can make the host table grow, which moves every host: the packets of
/// known hosts later in the same batch are still charged to their own entries.
#[test]
fn a_host_table_growing_within_a_batch_charges_every_host_its_own_packets() {
    let mut net = Net::new(2, NOW);
    // One group, its burst room for every packet here.
    let cfg = GatewayConfig {
        burst_bytes: 60_000,
        ..config(&[("10.0.0.0/16", None)], 100_000_000, OverRatePolicy::Unflagged)
    };
    let mut gw = net.gateway(&cfg, NOW).unwrap();
    let batch = |net: &mut Net, hosts: &[u16], now: u64| -> Vec<Vec<u8>> {
        hosts.iter().map(|h| net.packet(host(*h), PAYLOAD, now)).collect()
    };
    // 32 hosts fill the smallest table to its load bound; the 33rd, first in the next batch,
    // doubles it.
    let first: Vec<u16> = (1..=32).collect();
    let second: Vec<u16> = std::iter::once(33).chain(1..=31).collect();
    for (hosts, now) in [(&first, NOW), (&second, NOW + 1_000)] {
        let mut pkts = batch(&mut net, hosts, now);
        let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
        let mut v = vec![GatewayVerdict::Unflagged; refs.len()];
        gw.process_batch(&mut refs, now, &mut v);
        assert!(v.iter().all(|v| *v == GatewayVerdict::Authorized), "{v:?}");
    }
    for h in 1..=33u16 {
        let want = if h == 32 || h == 33 { 1 } else { 2 };
        assert_eq!(gw.host(&HostAddr::V4(host(h))).unwrap().compliant_packets, want, "host {h}");
    }
}
