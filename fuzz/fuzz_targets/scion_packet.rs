//! `ScionPacket::parse` and the zero-copy view on arbitrary bytes: no panic, and a
//! parsed packet emits to bytes of the same length that parse to the same packet.
#![no_main]

use aviary_scion::{ScionPacket, ScionView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = ScionView::new_checked(data) {
        let _ = (v.traffic_class(), v.flow_id(), v.next_hdr(), v.payload_len(), v.pkt_len_u16());
        let _ = (v.path_type(), v.dst_ia(), v.dst_ia_bytes(), v.src_ia(), v.dst_host(), v.src_host());
        assert_eq!(v.path_range().len(), v.path().len());
        assert_eq!(v.hdr_len() + v.payload().len(), data.len());
    }
    let Ok(p) = ScionPacket::parse(data) else {
        return;
    };
    let bytes = p.to_bytes().expect("a parsed packet emits");
    assert_eq!(bytes.len(), data.len());
    let q = ScionPacket::parse(&bytes).expect("an emitted packet parses");
    assert_eq!(p, q);
    assert_eq!(q.to_bytes().expect("emits again"), bytes);
});
