//! `HbirdPath::parse` on arbitrary bytes: no panic; a parsed path emits to bytes of the
//! same length that parse to the same path; its reversal is a valid flyover-free path
//! that agrees with the reversal of the standard path.
#![no_main]

use aviary_hummingbird::HbirdPath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = HbirdPath::parse(data) else {
        return;
    };
    assert!(p.curr_hop_index().is_some());
    let bytes = match p.to_bytes() {
        Ok(b) => b,
        Err(e) => panic!("a parsed path does not emit: {e:?}"),
    };
    assert_eq!(bytes.len(), data.len());
    assert_eq!(HbirdPath::parse(&bytes).as_ref(), Ok(&p));

    let mut r = p.clone();
    r.reverse().expect("a parsed path reverses");
    assert!(r.hops().all(|h| h.flyover.is_none()));
    let rb = r.to_bytes().expect("a reversed path emits");
    assert_eq!(HbirdPath::parse(&rb).as_ref(), Ok(&r));
    match p.to_standard() {
        Ok(mut s) => {
            s.reverse().expect("the standard path reverses");
            assert_eq!(r.to_standard().expect("the reversal is a standard path"), s);
        }
        Err(_) => assert!(r.to_standard().is_err()),
    }
});
