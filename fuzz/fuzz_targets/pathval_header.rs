//! pathval's header on arbitrary bytes: `locate` never panics, a located header lies inside
//! the packet before its payload, and the view reads back what its setters wrote.
#![no_main]

use aviary_pathval::header::{locate, PathvalView, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(at) = locate(data) {
        assert_eq!(at.header.len(), HEADER_LEN);
        assert!(at.header.end <= at.payload.start && at.payload.end == data.len());
    }
    let mut buf = data.to_vec();
    let Ok(mut v) = PathvalView::new_checked(&mut buf[..]) else {
        assert!(data.len() < HEADER_LEN);
        return;
    };
    let m = v.metadata();
    let (hs, hc, c, vp) = (v.hidden_sample(), v.hop_count(), v.concealment(), v.validation_proof());
    v.set_metadata(&m);
    v.set_hidden_sample(&hs);
    v.set_hop_count(hc);
    v.set_concealment(&c);
    v.set_validation_proof(&vp);
    assert_eq!(buf, data);
});
