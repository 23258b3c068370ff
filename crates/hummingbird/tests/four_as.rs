//! A packet from a source through the processing of four ASes with flyovers on two of
//! them, and back on the reversed path.

use aviary_hummingbird::path::HbirdPath;
use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{Router, RouterParams, Source};
use aviary_qos::{Admission, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::{ScionPacket, ScionView};

const NOW_S: u32 = 1_750_000_000;
const NOW_NS: u64 = NOW_S as u64 * 1_000_000_000 + 250_000_000;

fn routers(chain: &Chain) -> Vec<Router> {
    (0..chain.ases.len()).map(|i| chain.router(i, RouterParams::default())).collect()
}

fn hbird_path(pkt: &[u8]) -> HbirdPath {
    HbirdPath::parse(ScionView::new_checked(pkt).unwrap().path()).unwrap()
}

#[test]
fn reserved_hops_get_priority_and_the_reversed_path_travels_back() {
    let chain = Chain::new(4, NOW_S - 60);
    // Flyovers on ASes 1 and 2: both are segment crossovers, so this also checks A.5.
    // ResID 100000 is the last slot of the default policing array.
    let reservations =
        [(1, chain.grant(1, 7, 600, NOW_S - 10, 3600)), (2, chain.grant(2, 100_000, 600, NOW_S - 30, 120))];
    let mut pkt = chain.hbird_packet(&reservations, NOW_S, 500).unwrap();
    let plain_macs: Vec<[u8; 6]> = hbird_path(&pkt).hops().map(|h| h.hop.mac).collect();
    let mut src = Source::new(&pkt, &[reservations[0].1, reservations[1].1]).unwrap();
    src.stamp(&mut pkt, NOW_NS).unwrap();

    // In flight, the flyover hops carry AggMACs, the others plain MACs.
    let in_flight = hbird_path(&pkt);
    let flyover_at: Vec<bool> = in_flight.hops().map(|h| h.flyover.is_some()).collect();
    // Path order: up [AS0, AS1], core [AS1, AS2], down [AS2, AS3]; flyovers on the first
    // hop field of each crossover AS.
    assert_eq!(flyover_at, [false, true, false, true, false, false]);
    for (h, plain) in in_flight.hops().zip(&plain_macs) {
        assert_eq!(h.flyover.is_some(), h.hop.mac != *plain);
    }

    let mut rs = routers(&chain);
    let mut classes = Vec::new();
    for (i, r) in rs.iter_mut().enumerate() {
        match r.process(&mut pkt, Chain::forward_ingress(i), NOW_NS) {
            Verdict::Forward { egress, admission } => {
                assert_eq!(egress, IF_NEXT, "AS {i}");
                classes.push(admission);
            }
            Verdict::Deliver => assert_eq!(i, 3, "delivered early"),
            Verdict::Drop(reason) => panic!("dropped at AS {i}: {reason:?}"),
        }
    }
    assert_eq!(classes, [Admission::UNAUTHENTICATED, Admission::RESERVED, Admission::RESERVED]);

    // Every AggMAC has been replaced by its hop-field MAC.
    let arrived = hbird_path(&pkt);
    let macs: Vec<[u8; 6]> = arrived.hops().map(|h| h.hop.mac).collect();
    assert_eq!(macs, plain_macs);

    // The reversal is a valid type-5 path without reservations ...
    let mut back = arrived.clone();
    back.reverse().unwrap();
    assert!(back.hops().all(|h| h.flyover.is_none()));
    assert_eq!(back.curr_hf, 0);
    let bytes = back.to_bytes().unwrap();
    assert_eq!(HbirdPath::parse(&bytes).unwrap(), back);
    // ... that travels back through the same four processors.
    let mut reply = ScionPacket::parse(&pkt).unwrap();
    std::mem::swap(&mut reply.header.src_ia, &mut reply.header.dst_ia);
    std::mem::swap(&mut reply.header.src_host, &mut reply.header.dst_host);
    reply.header.path = bytes;
    assert_eq!(reply.header.path_type, path_type::HUMMINGBIRD);
    let mut reply = reply.to_bytes().unwrap();
    for i in (0..4).rev() {
        let ingress = if i == 3 { 0 } else { IF_NEXT };
        let v = rs[i].process(&mut reply, ingress, NOW_NS + 1_000_000);
        if i == 0 {
            assert_eq!(v, Verdict::Deliver);
        } else {
            assert_eq!(v, Verdict::unauthenticated(aviary_hummingbird::testbed::IF_PREV), "AS {i} on the way back");
        }
    }
    // Only the two flyover hops counted a reserved packet; nothing was demoted.
    let reserved: Vec<u64> = rs.iter().map(|r| r.counters().reserved).collect();
    assert_eq!(reserved, [0, 1, 1, 0]);
    assert!(rs.iter().all(|r| r.counters().stale + r.counters().inactive + r.counters().over_rate == 0));
}

#[test]
fn standard_scion_packets_take_the_same_pipeline() {
    for n in [2, 3, 4, 6] {
        let chain = Chain::new(n, NOW_S - 60);
        let mut rs = routers(&chain);
        let mut pkt = chain.standard_packet(100);
        for (i, r) in rs.iter_mut().enumerate() {
            let v = r.process(&mut pkt, Chain::forward_ingress(i), NOW_NS);
            if i + 1 == n {
                assert_eq!(v, Verdict::Deliver, "n={n}");
            } else {
                assert_eq!(v, Verdict::unauthenticated(IF_NEXT), "n={n} AS {i}");
            }
        }
        // And back over the reversed standard path.
        let mut reply = ScionPacket::parse(&pkt).unwrap();
        std::mem::swap(&mut reply.header.src_ia, &mut reply.header.dst_ia);
        let mut p = aviary_scion::StandardPath::parse(&reply.header.path).unwrap();
        p.reverse().unwrap();
        reply.header.path = p.to_bytes().unwrap();
        let mut reply = reply.to_bytes().unwrap();
        for i in (0..n).rev() {
            let ingress = if i + 1 == n { 0 } else { IF_NEXT };
            let v = rs[i].process(&mut reply, ingress, NOW_NS);
            assert!(matches!(v, Verdict::Deliver | Verdict::Forward { .. }), "n={n} AS {i} back: {v:?}");
        }
    }
}

#[test]
fn flyovers_on_every_as_including_source_and_destination() {
    for n in [2, 3, 4, 5] {
        let chain = Chain::new(n, NOW_S - 60);
        let res: Vec<_> = (0..n).map(|i| (i, chain.grant(i, i as u32, 800, NOW_S - 5, 60))).collect();
        let mut pkt = chain.hbird_packet(&res, NOW_S, 1200).unwrap();
        let mut src = Source::new(&pkt, &res.iter().map(|r| r.1).collect::<Vec<_>>()).unwrap();
        src.stamp(&mut pkt, NOW_NS).unwrap();
        let mut rs = routers(&chain);
        for (i, r) in rs.iter_mut().enumerate() {
            let v = r.process(&mut pkt, Chain::forward_ingress(i), NOW_NS);
            if i + 1 == n {
                assert_eq!(v, Verdict::Deliver);
            } else {
                assert_eq!(v, Verdict::reserved(IF_NEXT), "n={n} AS {i}");
            }
        }
    }
}
