//! GLWP's transmission header on arbitrary bytes: the checked view never panics, a view
//! covers the header it claims, parse/emit reproduces its bytes, and `locate` on a whole
//! packet finds a header inside it.
#![no_main]

use aviary_glwp::{locate, Header, HeaderRepr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(at) = locate(data) {
        assert!(at.header.end <= data.len());
        assert!(Header::new_checked(&data[at.header]).is_ok());
    }
    let Ok(h) = Header::new_checked(data) else { return };
    let len = h.header_len();
    assert!(len <= data.len());
    let repr = HeaderRepr::parse(&h);
    let mut out = vec![0u8; len];
    assert_eq!(repr.emit(&mut out), Ok(len));
    assert_eq!(&out[..], &data[..len]);
});
