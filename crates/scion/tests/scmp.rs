//! SCMP: round trips of every message type, agreement with `sciparse` (an independent
//! implementation) in both directions, the quoting rule, checksums, robustness on arbitrary
//! bytes, and reply paths that lead back to the source through real forwarders.

mod strategies;

use aviary_qos::Verdict;
use aviary_scion::forwarding::reply::{reply_path, settle_forwarded, settle_untouched};
use aviary_scion::wire::scmp::{
    msg_type, packet_to_vec, parse_packet, ScmpError, ScmpMessage, ScmpView, MAX_ERROR_PACKET_LEN, PROTOCOL_SCMP,
};
use aviary_scion::{path_type, HostAddr, IsdAsn, ScionHeader, ScionView, StandardForwarder, StandardPath};
use proptest::prelude::*;
use sciparse::address::host_addr::{ServiceAddr, WireHostAddr};
use sciparse::checksum::ChecksumDigest;
use sciparse::core::encode::WireEncode;
use sciparse::dataplane_path::model::DpPath;
use sciparse::header::model::{AddressHeader, CommonHeader, ScionPacketHeader};
use sciparse::identifier::isd_asn::IsdAsn as SpIa;
use sciparse::packet::model::{ScionRawPacketRef, ScionScmpPacket};
use sciparse::payload::scmp::model as sp;
use sciparse::payload::scmp::types::{ScmpDestinationUnreachableCode, ScmpParameterProblemCode};
use sciparse::payload::ProtocolNumber;
use strategies::{arb_host, chain, chain_packet, forward_ingress, ia, NOW_NS};

fn arb_message() -> impl Strategy<Value = ScmpMessage> {
    let bytes = || prop::collection::vec(any::<u8>(), 0..300);
    let ia = || any::<u64>().prop_map(IsdAsn::from_u64);
    // The format has 8 bytes for an interface id; sciparse models them as u16, as SCION's are.
    let iface = || any::<u16>().prop_map(u64::from);
    prop_oneof![
        (0u8..=6, bytes()).prop_map(|(code, quote)| ScmpMessage::DestinationUnreachable { code, quote }),
        (any::<u16>(), bytes()).prop_map(|(mtu, quote)| ScmpMessage::PacketTooBig { mtu, quote }),
        (any::<u8>(), any::<u16>(), bytes()).prop_map(|(code, pointer, quote)| ScmpMessage::ParameterProblem {
            code,
            pointer,
            quote
        }),
        (ia(), iface(), bytes()).prop_map(|(ia, interface, quote)| ScmpMessage::ExternalInterfaceDown {
            ia,
            interface,
            quote
        }),
        (ia(), iface(), iface(), bytes()).prop_map(|(ia, ingress, egress, quote)| {
            ScmpMessage::InternalConnectivityDown { ia, ingress, egress, quote }
        }),
        (any::<u16>(), any::<u16>(), bytes()).prop_map(|(id, seq, data)| ScmpMessage::EchoRequest { id, seq, data }),
        (any::<u16>(), any::<u16>(), bytes()).prop_map(|(id, seq, data)| ScmpMessage::EchoReply { id, seq, data }),
        (any::<u16>(), any::<u16>()).prop_map(|(id, seq)| ScmpMessage::TracerouteRequest { id, seq }),
        (any::<u16>(), any::<u16>(), ia(), iface()).prop_map(|(id, seq, ia, interface)| ScmpMessage::TracerouteReply {
            id,
            seq,
            ia,
            interface
        }),
    ]
}

fn header(dst_host: HostAddr, src_host: HostAddr, dst: u64, src: u64) -> ScionHeader {
    ScionHeader {
        traffic_class: 0,
        flow_id: 7,
        next_hdr: PROTOCOL_SCMP,
        path_type: path_type::EMPTY,
        dst_ia: IsdAsn::from_u64(dst),
        src_ia: IsdAsn::from_u64(src),
        dst_host,
        src_host,
        path: vec![],
    }
}

fn sp_host(h: HostAddr) -> WireHostAddr {
    match h {
        HostAddr::V4(a) => WireHostAddr::V4(a),
        HostAddr::V6(a) => WireHostAddr::V6(a),
        HostAddr::Svc(s) => WireHostAddr::Svc(ServiceAddr(s)),
    }
}

/// sciparse's model of one of our messages.
fn sp_message(m: &ScmpMessage) -> sp::ScmpMessage {
    let ia = |i: &IsdAsn| SpIa::from_u64(i.to_u64());
    match m.clone() {
        ScmpMessage::DestinationUnreachable { code, quote } => {
            sp::ScmpDestinationUnreachable::new(ScmpDestinationUnreachableCode::from(code), quote).into()
        }
        ScmpMessage::PacketTooBig { mtu, quote } => sp::ScmpPacketTooBig::new(mtu, quote).into(),
        ScmpMessage::ParameterProblem { code, pointer, quote } => {
            sp::ScmpParameterProblem::new(ScmpParameterProblemCode::from(code), pointer, quote).into()
        }
        ScmpMessage::ExternalInterfaceDown { ia: i, interface, quote } => {
            sp::ScmpExternalInterfaceDown::new(ia(&i), interface as u16, quote).into()
        }
        ScmpMessage::InternalConnectivityDown { ia: i, ingress, egress, quote } => {
            sp::ScmpInternalConnectivityDown::new(ia(&i), ingress as u16, egress as u16, quote).into()
        }
        ScmpMessage::EchoRequest { id, seq, data } => sp::ScmpEchoRequest::new(id, seq, data).into(),
        ScmpMessage::EchoReply { id, seq, data } => sp::ScmpEchoReply::new(id, seq, data).into(),
        ScmpMessage::TracerouteRequest { id, seq } => sp::ScmpTracerouteRequest::new(id, seq).into(),
        ScmpMessage::TracerouteReply { id, seq, ia: i, interface } => {
            sp::ScmpTracerouteReply::new(id, seq, ia(&i), interface as u16).into()
        }
        ScmpMessage::UnknownError { msg_type, code, body } => sp::ScmpMessageUnknown::new(msg_type, code, body).into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// emit → view → parse gives the message back; the packet's checksum verifies.
    #[test]
    fn round_trip(m in arb_message(), d in arb_host(), s in arb_host(), dst in any::<u64>(), src in any::<u64>()) {
        let h = header(d, s, dst, src);
        let pkt = packet_to_vec(&h, &m).unwrap();
        prop_assert_eq!(pkt.len(), h.len() + m.len());
        let (back_h, back) = parse_packet(&pkt).unwrap();
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back_h, h.clone());
        let v = ScmpView::new_checked(&pkt[h.len()..]).unwrap();
        prop_assert_eq!((v.msg_type(), v.code(), v.is_error()), (m.msg_type(), m.code(), m.is_error()));
        // Any single flipped bit of the message is caught by the checksum (or the parser).
        let mut bad = pkt.clone();
        let i = h.len() + (dst as usize % m.len());
        bad[i] ^= 1 << (src % 8);
        prop_assert!(parse_packet(&bad).map(|(_, x)| x) != Ok(m.clone()));
    }

    /// sciparse encodes the same packet byte for byte except the checksum field (its encoder
    /// sums the pseudo header alone, as for UDP; see tests/udp.rs), and its digest over the
    /// pseudo header and our message gives our checksum. sciparse parses our bytes back to the
    /// same message.
    #[test]
    fn sciparse_agrees(m in arb_message(), d in arb_host(), s in arb_host(), dst in any::<u64>(), src in any::<u64>()) {
        let h = header(d, s, dst, src);
        let ours = packet_to_vec(&h, &m).unwrap();
        let address = AddressHeader {
            dst_ia: SpIa::from_u64(dst),
            src_ia: SpIa::from_u64(src),
            dst_host_addr: sp_host(d),
            src_host_addr: sp_host(s),
        };
        let mut theirs = ScionScmpPacket {
            header: ScionPacketHeader {
                common: CommonHeader { traffic_class: 0, flow_id: 7, next_header: ProtocolNumber::Scmp },
                address: address.clone(),
                path: DpPath::Empty,
            },
            payload: sp_message(&m),
        }
        .try_encode_to_vec()
        .unwrap();
        let c = h.len() + 2;
        theirs[c..c + 2].fill(0);
        let digest = ChecksumDigest::with_pseudoheader(&address, PROTOCOL_SCMP, &theirs[h.len()..])
            .add_slice(&theirs[h.len()..])
            .checksum();
        theirs[c..c + 2].copy_from_slice(&digest.to_be_bytes());
        prop_assert_eq!(&ours, &theirs);

        let (raw, rest) = ScionRawPacketRef::try_from_slice(&ours).map(|(p, r)| (p.to_owned(), r.len())).unwrap();
        prop_assert_eq!(rest, 0);
        let parsed = ScionScmpPacket::try_from_raw(raw).unwrap();
        prop_assert_eq!(parsed.payload, sp_message(&m));
    }

    /// Arbitrary bytes never panic the view or the packet parser.
    #[test]
    fn arbitrary_bytes_are_rejected_not_panicked_on(b in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(v) = ScmpView::new_checked(&b[..]) {
            let _ = (ScmpMessage::parse(&v), v.body(), v.identifier());
        }
        let _ = parse_packet(&b);
    }
}

#[test]
fn short_and_unknown_messages_are_typed_errors() {
    assert_eq!(ScmpView::new_checked(&[][..]).err(), Some(ScmpError::Truncated { msg_type: 0, need: 4, have: 0 }));
    assert_eq!(
        ScmpView::new_checked(&[msg_type::TRACEROUTE_REPLY, 0, 0, 0, 0, 0, 0, 0][..]).err(),
        Some(ScmpError::Truncated { msg_type: msg_type::TRACEROUTE_REPLY, need: 24, have: 8 })
    );
    assert_eq!(
        ScmpView::new_checked(&[200, 0, 0, 0, 0, 0, 0, 0][..]).err(),
        Some(ScmpError::UnknownInformational(200))
    );
    // An unknown error type is passed on with its body.
    let v = ScmpView::new_checked(&[9, 3, 0, 0, 1, 2, 3, 4, 5][..]).unwrap();
    assert_eq!(ScmpMessage::parse(&v), ScmpMessage::UnknownError { msg_type: 9, code: 3, body: vec![5] });
}

/// A known answer computed by hand from the specification: an echo request 1-ff00:0:110,10.0.0.1
/// -> 1-ff00:0:112,10.0.0.2, identifier 0x1234, sequence 1, data "ping".
#[test]
fn known_answer_echo_request() {
    let v4 = |s: &str| HostAddr::V4(s.parse().unwrap());
    let mut h = header(v4("10.0.0.2"), v4("10.0.0.1"), 0, 0);
    h.dst_ia = "1-ff00:0:112".parse().unwrap();
    h.src_ia = "1-ff00:0:110".parse().unwrap();
    let pkt = packet_to_vec(&h, &ScmpMessage::EchoRequest { id: 0x1234, seq: 1, data: b"ping".to_vec() }).unwrap();
    // Pseudo header words: 0001 ff00 0000 0112 0001 ff00 0000 0110 0a00 0002 0a00 0001
    // 0000 000c 0000 00ca; message 8000 0000 1234 0001 7069 6e67.
    let words: [u32; 18] = [
        0x0001,
        0xff00,
        0,
        0x0112,
        0x0001,
        0xff00,
        0,
        0x0110,
        0x0a00,
        0x0002,
        0x0a00,
        0x0001,
        0,
        0x000c,
        0,
        0x00ca,
        0x8000,
        0x1234 + 0x0001 + 0x7069 + 0x6e67,
    ];
    let mut sum: u32 = words.iter().sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(&pkt[h.len()..h.len() + 4], &[128, 0, (!sum as u16 >> 8) as u8, !sum as u16 as u8]);
}

#[test]
fn errors_quote_as_much_as_fits_in_1232_bytes() {
    let v4 = HostAddr::V4("10.0.0.1".parse().unwrap());
    let h = header(v4, v4, 1, 2);
    for len in [0, 100, 1000, 1500, 9000] {
        let offending: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let m = ScmpMessage::error_quoting(&offending, h.len(), |quote| ScmpMessage::ParameterProblem {
            code: 52,
            pointer: 3,
            quote,
        });
        let pkt = packet_to_vec(&h, &m).unwrap();
        assert_eq!(pkt.len(), (h.len() + 8 + len).min(MAX_ERROR_PACKET_LEN), "{len}");
        let q = m.quote().unwrap();
        assert_eq!(q, &offending[..q.len()]);
    }
}

// ---------------------------------------------------------------------------------------
// Reply paths through real forwarders
// ---------------------------------------------------------------------------------------

/// Walks `pkt` from AS `from` towards AS 0 (the source); the verdict where it ends and there.
fn walk_back(c: &strategies::Chain, pkt: &mut [u8], from: usize) -> (usize, Verdict) {
    for i in (0..from).rev() {
        let v = StandardForwarder::standard(c.fwd[i].clone()).process(pkt, 1, NOW_NS);
        if v != Verdict::forward(2, aviary_qos::Admission::UNAUTHENTICATED) || i == 0 {
            return (i, v);
        }
    }
    unreachable!("AS 0 ends every walk")
}

/// A reply from AS `at` to the source of `pkt`, on the reply path of its settled path.
fn reply_from(pkt: &[u8], at: usize, settled: StandardPath) -> Vec<u8> {
    let v = ScionView::new_checked(pkt).unwrap();
    let rev = reply_path(&settled).unwrap();
    let h = ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: PROTOCOL_SCMP,
        path_type: path_type::SCION,
        dst_ia: v.src_ia(),
        src_ia: ia(at),
        dst_host: v.src_host(),
        src_host: HostAddr::V4("127.0.0.9".parse().unwrap()),
        path: rev.to_bytes().unwrap(),
    };
    packet_to_vec(&h, &ScmpMessage::EchoReply { id: 1, seq: 2, data: vec![] }).unwrap()
}

/// For every AS on 2- to 5-AS paths (one, two and three segments): a reply to a packet that
/// AS dropped untouched (as for an expired hop), that it forwarded (as onto a link that is
/// down), or that was delivered to it, goes back and is delivered to the source AS.
#[test]
fn replies_reach_the_source_from_every_as() {
    for n in 2..=5 {
        let c = chain(n);
        for at in 1..n {
            let mut pkt = chain_packet(&c, 40);
            for i in 0..at {
                let v = StandardForwarder::standard(c.fwd[i].clone()).process(&mut pkt, forward_ingress(i), NOW_NS);
                assert!(matches!(v, Verdict::Forward { .. }), "{n} ASes, AS {i}: {v:?}");
            }
            // Untouched: the packet as it arrives at `at`.
            let mut untouched = StandardPath::parse(ScionView::new_checked(&pkt[..]).unwrap().path()).unwrap();
            settle_untouched(&mut untouched, forward_ingress(at)).unwrap();
            let mut r = reply_from(&pkt, at, untouched);
            assert_eq!(walk_back(&c, &mut r, at), (0, Verdict::Deliver), "untouched, {n} ASes, at {at}");

            let mut after = pkt.clone();
            let v = StandardForwarder::standard(c.fwd[at].clone()).process(&mut after, forward_ingress(at), NOW_NS);
            let path = StandardPath::parse(ScionView::new_checked(&after[..]).unwrap().path()).unwrap();
            if at + 1 == n {
                // Delivered here: already settled.
                assert_eq!(v, Verdict::Deliver);
                let mut r = reply_from(&after, at, path);
                assert_eq!(walk_back(&c, &mut r, at), (0, Verdict::Deliver), "delivered, {n} ASes");
            } else {
                assert!(matches!(v, Verdict::Forward { .. }));
                let mut forwarded = path;
                settle_forwarded(&mut forwarded).unwrap();
                let mut r = reply_from(&after, at, forwarded);
                assert_eq!(walk_back(&c, &mut r, at), (0, Verdict::Deliver), "forwarded, {n} ASes, at {at}");
            }
        }
    }
}
