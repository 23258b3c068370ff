//! What a host parses of every datagram it receives, on arbitrary bytes: SCION/UDP
//! (`ScionUdpView` and its checksum) and SCMP (`parse_packet`, the message view, and the port
//! an SCMP message is for), each past any extension headers. No panic; a UDP packet whose
//! checksum verifies is emitted again from its parts to a packet that verifies and carries the
//! same ports and payload; an SCMP packet that parses emits to one that parses to the same
//! header and message, and so does a message on its own.
#![no_main]

use aviary_scion::wire::scmp::{self, ScmpMessage, ScmpView, PROTOCOL_SCMP};
use aviary_scion::wire::udp::{self, PROTOCOL_UDP};
use aviary_scion::{path_type, HostAddr, IsdAsn, ScionHeader, ScionUdpView, ScionView};
use libfuzzer_sys::fuzz_target;

/// An intra-AS header (empty path) from 10.0.0.1 to 10.0.0.2.
fn header() -> ScionHeader {
    let ia = IsdAsn::new(1, 0xff00_0000_0110);
    ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: PROTOCOL_UDP,
        path_type: path_type::EMPTY,
        dst_ia: ia,
        src_ia: ia,
        dst_host: HostAddr::V4([10, 0, 0, 2].into()),
        src_host: HostAddr::V4([10, 0, 0, 1].into()),
        path: Vec::new(),
    }
}

fn honest(which: u8) -> Vec<u8> {
    let datagram = udp::packet_to_vec(&header(), 40000, 40001, b"fuzzed payload").unwrap();
    let msg = match which {
        0 => return datagram,
        1 => ScmpMessage::EchoReply { id: 40000, seq: 7, data: b"echo".to_vec() },
        _ => ScmpMessage::DestinationUnreachable { code: 1, quote: datagram },
    };
    scmp::packet_to_vec(&header(), &msg).unwrap()
}

fuzz_target!(|input: &[u8]| {
    let Some((&sel, rest)) = input.split_first() else { return };
    let owned;
    let data = if sel & 1 == 0 {
        rest
    } else {
        let mut p = honest((sel >> 1) & 3);
        p.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
        owned = p;
        &owned[..]
    };
    if let Ok(v) = ScionUdpView::new_checked(data) {
        let _ = (v.udp_header(), v.udp_range(), v.compute_checksum());
        assert_eq!(v.payload_range().end, data.len());
        if v.verify().is_ok() {
            let header = ScionHeader::parse(&ScionView::new_checked(data).expect("checked by the UDP view"));
            let again =
                udp::packet_to_vec(&header, v.src_port(), v.dst_port(), v.payload()).expect("a verified packet emits");
            udp::verify(&again).expect("an emitted packet verifies");
            let w = ScionUdpView::new_checked(&again[..]).expect("an emitted packet parses");
            assert_eq!((w.src_port(), w.dst_port(), w.payload()), (v.src_port(), v.dst_port(), v.payload()));
            assert_eq!(ScionView::new_checked(&again[..]).unwrap().next_hdr(), PROTOCOL_UDP);
        }
    }

    if let Ok(m) = ScmpView::new_checked(data) {
        let _ = (scmp::destination_port(&m), m.checksum(), m.identifier(), m.sequence(), m.is_error());
        let msg = ScmpMessage::parse(&m);
        let mut out = vec![0; msg.len()];
        assert_eq!(msg.emit(&mut out), Ok(msg.len()));
        let again = ScmpMessage::parse(&ScmpView::new_checked(&out[..]).expect("an emitted message parses"));
        assert_eq!(again, msg);
    }

    if let Ok((header, msg)) = scmp::parse_packet(data) {
        let again = scmp::packet_to_vec(&header, &msg).expect("a parsed packet emits");
        let (h, m) = scmp::parse_packet(&again).expect("an emitted packet parses");
        assert_eq!(m, msg);
        assert_eq!(h, ScionHeader { next_hdr: PROTOCOL_SCMP, ..header });
    }
});
