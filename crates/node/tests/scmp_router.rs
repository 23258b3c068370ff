//! The router's SCMP slow path, sans-IO, on packets real routers dropped: an expired hop field
//! earns a Parameter Problem whose pointer is the hop field's ExpTime byte, sent towards the
//! source; the error budget holds back (and counts) what exceeds it; an SCMP error never earns
//! an error.

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::RouterParams;
use aviary_node::config::ScmpConfig;
use aviary_node::router::scmp::{Out, Responder, Trouble};
use aviary_qos::{DropReason, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::path::field as pf;
use aviary_scion::wire::scmp::{self, param_code, parse_packet, ScmpMessage};
use aviary_scion::wire::udp;
use aviary_scion::{HostAddr, ScionHeader};

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
