//! `StandardPath::parse` on arbitrary bytes: no panic; a parsed path emits to bytes of
//! the same length that parse to the same path; reversal keeps the length and reversing
//! twice is the identity.
#![no_main]

use aviary_scion::StandardPath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = StandardPath::parse(data) else {
        return;
    };
    let bytes = p.to_bytes().expect("a parsed path emits");
    assert_eq!(bytes.len(), data.len());
    assert_eq!(StandardPath::parse(&bytes).as_ref(), Ok(&p));

    let mut r = p.clone();
    r.reverse().expect("a parsed path reverses");
    assert_eq!(r.len(), p.len());
    let rb = r.to_bytes().expect("a reversed path emits");
    assert_eq!(StandardPath::parse(&rb).as_ref(), Ok(&r));
    r.reverse().expect("reverses back");
    assert_eq!(r, p);
});
