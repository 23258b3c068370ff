//! The EPIC path types on arbitrary bytes: path type 3 (`EpicPath`) and the per-AS path
//! (`PerAsPath`). No panic; a parsed path emits to the same bytes but for reserved bits, and
//! its view reads the same fields.
#![no_main]

use aviary_scion::wire::epic::{EpicPath, EpicPathView};
use aviary_scion::wire::epic_per_as::{PerAsPath, PerAsPathView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = EpicPath::parse(data) {
        let bytes = p.to_bytes().expect("a parsed path emits");
        assert_eq!(bytes.len(), data.len());
        assert_eq!(EpicPath::parse(&bytes).as_ref(), Ok(&p));
        let v = EpicPathView::new_checked(data).expect("parse checked it");
        assert_eq!((v.pkt_id(), v.phvf(), v.lhvf()), (p.pkt_id, p.phvf, p.lhvf));
    }
    if let Ok(p) = PerAsPath::parse(data) {
        let bytes = p.to_bytes().expect("a parsed path emits");
        assert_eq!(bytes.len(), data.len());
        assert_eq!(PerAsPath::parse(&bytes).as_ref(), Ok(&p));
        let v = PerAsPathView::new_checked(data).expect("parse checked it");
        assert_eq!((v.pkt_id(), v.qos(), v.dvf(), v.num_hvfs()), (p.pkt_id, p.qos, p.dvf, p.hvfs.len()));
    }
});
