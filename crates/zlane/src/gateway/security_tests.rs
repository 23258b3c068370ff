//! The gateway and the source AS's router together against the paper's attackers (§4.4,
//! §5.4): an end host above its rate, a host key leaked to another AS, another AS spoofing
//! the source AS.

use aviary_qos::{Admission, Context, DropReason, LinkState, Processor, SeededRandom, Verdict};
use aviary_scion::epic::per_as::gateway_hvf;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::ScionView;

use super::tests::{config, one, source_as_router, PAYLOAD};
use super::*;
use crate::classes::{RateConfig, RouterClass};
use crate::router::ZlaneRouter;
use crate::testbed::{Net, IF_NEXT};

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_750_000_000 * S;

/// The Z-Lane router of AS 0 of `net`, guaranteeing AS 0 `as_bps` on its 100 Mbit/s link.
struct SourceRouter {
    router: ZlaneRouter,
    links: [LinkState; 1],
    random: SeededRandom,
}

impl SourceRouter {
    fn new(net: &Net, as_bps: u64) -> Self {
        let rates = [(net.ases[0].ia.to_string(), RateConfig::Bps(as_bps))].into();
        let router = source_as_router(net, rates);
        let links = [LinkState { id: IF_NEXT, up: true, rate_bps: 100_000_000, ..Default::default() }];
        Self { router, links, random: SeededRandom::new(1) }
    }

    fn admit(&mut self, pkt: &mut [u8], now: u64) -> Result<Admission, DropReason> {
        let mut ctx = Context { now_ns: now, ingress: 0, links: &self.links, random: &mut self.random };
        let mut v = [Verdict::Deliver];
        self.router.process_batch(&mut ctx, &mut [pkt], &mut v);
        match v[0] {
            Verdict::Forward { admission, .. } => Ok(admission),
            Verdict::Drop(r) => Err(r),
            Verdict::Deliver => panic!("delivered at the source AS"),
        }
    }
}

#[test]
fn a_host_above_its_gateway_rate_cannot_drain_its_as_guarantee() {
    let mut net = Net::new(2, NOW);
    // The AS hands out what the router guarantees it: 800 kbit/s, 400 each.
    let mut gw = net
        .gateway(&config(&[("10.0.0.1", None), ("10.0.0.2", None)], 800_000, OverRatePolicy::Unflagged), NOW)
        .unwrap();
    let mut router = SourceRouter::new(&net, 800_000);
    let g = RouterClass::Guaranteed.admission();
    let len = net.packet(Net::host(1), PAYLOAD, NOW).len() as u64;
    // Host 1 floods at 8 Mbit/s; host 2 sends 300 kbit/s, within its rate.
    let (flood_gap, fair_gap) = (len * 8 * S / 8_000_000, len * 8 * S / 300_000);
    let (mut now, mut next_fair, mut flood_g, mut fair) = (NOW, NOW, 0u64, 0u64);
    while now < NOW + S {
        let mut pkt = net.packet(Net::host(1), PAYLOAD, now);
        one(&mut gw, &mut pkt, now);
        if router.admit(&mut pkt, now) == Ok(g) {
            flood_g += len;
        }
        if next_fair <= now {
            let mut pkt = net.packet(Net::host(2), PAYLOAD, now);
            assert_eq!(one(&mut gw, &mut pkt, now), GatewayVerdict::Authorized);
            assert_eq!(router.admit(&mut pkt, now), Ok(g), "the fair host keeps G");
            fair += 1;
            next_fair += fair_gap;
        }
        now += flood_gap;
    }
    assert!(fair > 30);
    assert!(flood_g <= 400_000 / 8 + 3_000 + len, "the flooding host held to its rate: {flood_g} bytes");
}

#[test]
fn a_leaked_host_key_or_a_spoofed_source_as_gets_no_g() {
    let mut net = Net::new(2, NOW);
    let mut router = SourceRouter::new(&net, 800_000);
    let range = ScionView::new_checked(&net.packet(Net::host(1), PAYLOAD, NOW)[..]).unwrap().path_range();
    // Another AS holding host 1's keys seals valid host-level packets: authenticated best
    // effort at most.
    let mut leaked = net.packet(Net::host(1), PAYLOAD, NOW);
    assert_eq!(router.admit(&mut leaked, NOW), Ok(RouterClass::Authenticated.admission()));
    // With the flag it set itself, over the host's fields: dropped.
    let mut flagged = net.packet(Net::host(1), PAYLOAD, NOW + 1);
    PerAsPathView::new_checked(&mut flagged[range.clone()]).unwrap().set_qos(true);
    assert_eq!(router.admit(&mut flagged, NOW + 1), Err(DropReason::BadHvf));
    // AS 1 authorizes a packet that claims AS 0 as its source with the Level-1 key AS 0 gave
    // AS 1 (the only one it has): AS 0's router checks K_{AS0→AS0}, so it is dropped.
    let k_to_as1 = net.ases[0].drkey.level1(net.ases[1].ia);
    let mut spoofed = net.packet(Net::host(1), PAYLOAD, NOW + 2);
    let mut view = PerAsPathView::new_checked(&mut spoofed[range]).unwrap();
    for i in 0..view.num_hvfs() {
        let h = view.hvf(i);
        view.set_hvf(i, gateway_hvf(&k_to_as1, &h));
    }
    view.set_qos(true);
    assert_eq!(router.admit(&mut spoofed, NOW + 2), Err(DropReason::BadHvf));
    // AS 0's gateway itself refuses packets of another AS's hosts.
    let mut gw = net.gateway(&config(&[("10.0.0.1", None)], 800_000, OverRatePolicy::Unflagged), NOW).unwrap();
    let mut foreign = net.packet(Net::host(1), PAYLOAD, NOW + 3);
    ScionView::new_checked(&mut foreign[..]).unwrap().set_src_ia(net.ases[1].ia);
    assert_eq!(one(&mut gw, &mut foreign, NOW + 3), GatewayVerdict::Drop(GatewayDrop::ForeignSource));
}

/// Hosts beyond the host table's room (here 32, at 64 slots) get no entry of their own, but
/// their packets still verify and are held to their group's rate, and are counted together.
#[test]
fn hosts_that_find_the_host_table_full_are_still_held_to_their_rate() {
    let mut net = Net::new(2, NOW);
    let listed: Vec<String> = (1..=40).map(|h| Net::host(h).to_string()).collect();
    let hosts: Vec<(&str, Option<u64>)> = listed.iter().map(|h| (h.as_str(), Some(100_000))).collect();
    let cfg = config(&hosts, 4_000_000, OverRatePolicy::Unflagged);
    let mut gw = net.gateway_with_max_host_slots(&cfg, NOW, 64).unwrap();
    for h in 1..=40 {
        let mut pkt = net.packet(Net::host(h), PAYLOAD, NOW);
        assert_eq!(one(&mut gw, &mut pkt, NOW), GatewayVerdict::Authorized, "host {h}");
    }
    assert_eq!(gw.hosts().count(), 32);
    assert_eq!(gw.untracked_hosts().compliant_packets, 8);
    // An untracked host's burst (3 000 bytes) runs out as a tracked one's does.
    let untracked = (1..=40).find(|h| gw.host(&HostAddr::V4(Net::host(*h))).is_none()).unwrap();
    let verdicts: Vec<_> = (1..20)
        .map(|k| {
            let mut pkt = net.packet(Net::host(untracked), PAYLOAD, NOW + k);
            one(&mut gw, &mut pkt, NOW + k)
        })
        .collect();
    assert!(verdicts.contains(&GatewayVerdict::Unflagged), "{verdicts:?}");
    assert!(gw.untracked_hosts().over_rate_packets > 0);
    // A spoofed source gets nothing from the full table either.
    let mut spoofed = net.packet_as(Net::host(1), Net::host(untracked), PAYLOAD, NOW + 50);
    assert_eq!(one(&mut gw, &mut spoofed, NOW + 50), GatewayVerdict::Drop(GatewayDrop::BadSourceHvf));
}
