//! The router's SCMP slow path, sans-IO, on packets real routers dropped: an expired hop field
//! earns a Parameter Problem whose pointer is the hop field's ExpTime byte, sent towards the
//! source; the error budget holds back (and counts) what exceeds it; an SCMP error never earns
//! an error. On arbitrary and tampered packets, whatever the responder sends is a well-formed
//! SCMP packet from the router to the packet's source, by the way the packet came.

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::RouterParams;
use aviary_node::config::ScmpConfig;
use aviary_node::router::scmp::{Out, Responder, Trouble};
use aviary_qos::{DropReason, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::path::field as pf;
use aviary_scion::wire::scmp::{self, param_code, parse_packet, ScmpMessage, ScmpView, PROTOCOL_SCMP};
use aviary_scion::wire::udp;
use aviary_scion::{HostAddr, ScionHeader, ScionView, StandardPath};
use proptest::prelude::*;

const NOW_S: u32 = 1_750_000_000;
const NOW_NS: u64 = NOW_S as u64 * 1_000_000_000;

fn packet(chain: &Chain) -> Vec<u8> {
    let h = ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: udp::PROTOCOL_UDP,
        path_type: path_type::SCION,
        dst_ia: chain.dst_ia(),
        src_ia: chain.src_ia(),
        dst_host: HostAddr::V4("127.0.3.10".parse().unwrap()),
        src_host: HostAddr::V4("127.0.1.10".parse().unwrap()),
        path: chain.path.to_bytes().unwrap(),
    };
    udp::packet_to_vec(&h, 40001, 40000, &[7; 1500]).unwrap()
}

#[test]
fn an_expired_hop_earns_a_parameter_problem_pointing_at_its_exp_time() {
    // Hop fields issued three days ago have expired.
    let chain = Chain::new(3, NOW_S - 3 * 86_400);
    let pkt = packet(&chain);
    let mut first = pkt.clone();
    assert_eq!(
        chain.router(0, RouterParams::default()).process(&mut first, 0, NOW_NS),
        Verdict::Drop(DropReason::ExpiredHop)
    );
    let router_ip = "127.0.1.1".parse().unwrap();
    let mut r = Responder::new(chain.src_ia(), router_ip, ScmpConfig { errors_per_s: 0.0, error_burst: 2 });

    // From a host of the router's own AS: back to that host's UDP port, on the reversed path.
    let (bytes, out) = r.error(&first, 0, Trouble::Dropped(DropReason::ExpiredHop), NOW_NS).unwrap();
    assert_eq!(out, Out::Host("127.0.1.10:40001".parse().unwrap()));
    assert!(bytes.len() <= scmp::MAX_ERROR_PACKET_LEN);
    let (h, m) = parse_packet(&bytes).unwrap();
    assert_eq!((h.src_ia, h.dst_ia), (chain.src_ia(), chain.src_ia()));
    let ScmpMessage::ParameterProblem { code, pointer, quote } = m else { panic!("{m:?}") };
    assert_eq!(code, param_code::PATH_EXPIRED);
    // The pointer is the ExpTime byte of the first hop field, in the quoted packet.
    let hop0 = pkt.len() - 1508 - chain.path.hops.len() * 12;
    assert_eq!(usize::from(pointer), hop0 + pf::hop::EXP_TIME);
    assert_eq!(quote[..], pkt[..quote.len()]);
    assert_eq!(quote.len(), scmp::MAX_ERROR_PACKET_LEN - h.len() - 8, "as much as fits");

    // Further on the path (arriving from a neighbour): out the interface it came in by.
    let mut at1 = pkt.clone();
    let issued_ns = u64::from(NOW_S - 3 * 86_400 + 60) * 1_000_000_000;
    assert!(matches!(
        chain.router(0, RouterParams::default()).process(&mut at1, 0, issued_ns),
        Verdict::Forward { .. }
    ));
    let ingress = Chain::forward_ingress(1);
    assert_eq!(
        chain.router(1, RouterParams::default()).process(&mut at1, ingress, NOW_NS),
        Verdict::Drop(DropReason::ExpiredHop)
    );
    let mut r1 = Responder::new(chain.ases[1].ia, router_ip, ScmpConfig::default());
    let (_, out) = r1.error(&at1, ingress, Trouble::Dropped(DropReason::ExpiredHop), NOW_NS).unwrap();
    assert_eq!(out, Out::Interface(ingress));

    // The budget of two is spent after the second; the third is held back and counted.
    assert!(r.error(&first, 0, Trouble::Dropped(DropReason::ExpiredHop), NOW_NS).is_some());
    assert!(r.error(&first, 0, Trouble::Dropped(DropReason::ExpiredHop), NOW_NS).is_none());
    assert_eq!((r.counters.parameter_problems, r.counters.errors_rate_limited), (2, 1));

    // An error about an error is never sent; a broken header earns nothing.
    let mut about_error = Responder::new(chain.src_ia(), router_ip, ScmpConfig::default());
    assert!(about_error.error(&bytes, 0, Trouble::Dropped(DropReason::ExpiredHop), NOW_NS).is_none());
    assert_eq!(about_error.counters.errors_not_sendable, 1);
    assert!(about_error.error(&pkt[..40], 0, Trouble::Dropped(DropReason::Truncated), NOW_NS).is_none());
    assert!(about_error.error(&pkt, 0, Trouble::Dropped(DropReason::BadSrcIa), NOW_NS).is_none());
    assert_eq!(about_error.counters.parameter_problems, 0);
}

const ROUTER_IP: [u8; 4] = [127, 0, 1, 1];

/// A UDP packet, an echo request to the router and a traceroute request with a router alert
/// on its first hop field, each from a host of the chain's first AS.
fn honest_packets() -> &'static [Vec<u8>] {
    static PACKETS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    PACKETS.get_or_init(make_honest_packets)
}

fn make_honest_packets() -> Vec<Vec<u8>> {
    let chain = Chain::new(3, NOW_S - 60);
    let scmp_packet = |dst: HostAddr, path: StandardPath, msg: ScmpMessage| {
        let h = ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: PROTOCOL_SCMP,
            path_type: path_type::SCION,
            dst_ia: chain.src_ia(),
            src_ia: chain.src_ia(),
            dst_host: dst,
            src_host: HostAddr::V4("127.0.1.10".parse().unwrap()),
            path: path.to_bytes().unwrap(),
        };
        scmp::packet_to_vec(&h, &msg).unwrap()
    };
    let mut alert = chain.path.clone();
    alert.hops[0].egress_alert = true;
    vec![
        packet(&chain),
        scmp_packet(
            HostAddr::V4(ROUTER_IP.into()),
            chain.path.clone(),
            ScmpMessage::EchoRequest { id: 40001, seq: 3, data: vec![9; 64] },
        ),
        scmp_packet(
            HostAddr::V4("127.0.3.10".parse().unwrap()),
            alert,
            ScmpMessage::TracerouteRequest { id: 40001, seq: 4 },
        ),
    ]
}

const TROUBLES: [Trouble; 7] = [
    Trouble::Dropped(DropReason::ExpiredHop),
    Trouble::Dropped(DropReason::BadMac),
    Trouble::Dropped(DropReason::BadIngress),
    Trouble::Dropped(DropReason::UnknownEgress),
    Trouble::Dropped(DropReason::BadDstIa),
    Trouble::Dropped(DropReason::Truncated),
    Trouble::InterfaceDown(2),
];

/// What every message the responder sends must be: a checked SCMP packet from the router to
/// the source of `pkt`, with a path that parses, back by the way `pkt` came.
fn check_reply(r_ia: aviary_scion::IsdAsn, pkt: &[u8], ingress: u16, (bytes, out): &(Vec<u8>, Out)) {
    let original = ScionView::new_checked(pkt).expect("only a packet that parses earns a reply");
    let (h, msg) = parse_packet(bytes).expect("a reply is a well-formed SCMP packet, checksum included");
    assert_eq!((h.src_ia, h.dst_ia, h.dst_host), (r_ia, original.src_ia(), original.src_host()));
    assert_eq!(h.src_host, HostAddr::V4(ROUTER_IP.into()));
    match h.path_type {
        path_type::SCION => {
            StandardPath::parse(&h.path).expect("a reply's path parses");
        }
        t => assert_eq!((t, h.path.len()), (path_type::EMPTY, 0)),
    }
    if msg.is_error() {
        assert!(bytes.len() <= scmp::MAX_ERROR_PACKET_LEN, "an error fits the quoting rule");
        let quote = msg.quote().expect("an error quotes");
        assert_eq!(quote[..], pkt[..quote.len()], "the quote is the start of the packet");
    }
    match (ingress, *out) {
        (0, Out::Host(to)) => {
            let m = ScmpView::new_checked(&bytes[h.len()..]).unwrap();
            assert_eq!(Some(to.port()), scmp::destination_port(&m));
            assert_eq!(HostAddr::from(to.ip()), original.src_host());
        }
        (i, Out::Interface(o)) => assert_eq!(i, o, "a reply leaves by the interface the packet came in by"),
        other => panic!("a packet from inside answered {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn replies_to_arbitrary_and_tampered_packets_are_well_formed(
        base in 0usize..4,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..), 0..6),
        raw in proptest::collection::vec(any::<u8>(), 0..300),
        ingress in prop_oneof![Just(0u16), Just(1), Just(2)],
    ) {
        let honest = honest_packets();
        let mut pkt = honest.get(base).cloned().unwrap_or(raw);
        for (at, x) in &flips {
            if !pkt.is_empty() {
                let i = at.index(pkt.len());
                pkt[i] ^= x;
            }
        }
        let ia = ScionView::new_checked(&honest[0][..]).unwrap().src_ia();
        let mut r = Responder::new(ia, ROUTER_IP.into(), ScmpConfig { errors_per_s: 0.0, error_burst: 100 });
        let is_error = ScionView::new_checked(&pkt[..]).ok().and_then(|v| {
            let at = scmp::scmp_offset(&v).ok()?;
            Some(pkt.get(at).is_some_and(|t| *t < 128))
        }) == Some(true);
        if Responder::is_traceroute_here(&pkt) {
            if let Some(reply) = r.traceroute_reply(&pkt, ingress) {
                check_reply(ia, &pkt, ingress, &reply);
            }
        }
        if let Some(reply) = r.echo_reply(&pkt, ingress) {
            check_reply(ia, &pkt, ingress, &reply);
        }
        for trouble in TROUBLES {
            if let Some(reply) = r.error(&pkt, ingress, trouble, NOW_NS) {
                prop_assert!(!is_error, "an error about an SCMP error");
                check_reply(ia, &pkt, ingress, &reply);
            }
        }
        let c = r.counters;
        prop_assert!(c.parameter_problems + c.interface_down_errors <= 100, "the budget holds");
    }
}

#[test]
fn the_honest_packets_of_the_property_test_earn_their_replies() {
    // Without this the property test could pass by answering nothing.
    let ia = Chain::new(3, NOW_S - 60).src_ia();
    let mut r = Responder::new(ia, ROUTER_IP.into(), ScmpConfig::default());
    let [udp_pkt, echo, traceroute] = honest_packets() else { panic!("three packets") };
    let reply = r.error(&udp_pkt, 0, Trouble::Dropped(DropReason::BadMac), NOW_NS).expect("a parameter problem");
    check_reply(ia, &udp_pkt, 0, &reply);
    let reply = r.echo_reply(&echo, 0).expect("an echo reply");
    check_reply(ia, &echo, 0, &reply);
    assert!(Responder::is_traceroute_here(&traceroute));
    let reply = r.traceroute_reply(&traceroute, 0).expect("a traceroute reply");
    check_reply(ia, &traceroute, 0, &reply);
    assert_eq!((r.counters.parameter_problems, r.counters.echo_replies, r.counters.traceroute_replies), (1, 1, 1));
}
