//! The transmission header (Table I): a hand-built example, parse/emit round trips, and no
//! panic on arbitrary bytes.

use aviary_glwp::header::{field, header_len, EmitError};
use aviary_glwp::{hop_authenticator, hop_key, Header, HeaderError, HeaderRepr, HopKeyInput};
use aviary_scion::IsdAsn;
use proptest::prelude::*;

#[test]
fn two_on_path_ases_byte_by_byte() {
    let repr = HeaderRepr {
        src: IsdAsn::from_u64(0x0a0b_0c0d_0e0f_1011),
        hop_pointer: 1,
        path: vec![(0, 1), (2, 3), (4, 0)],
        beta: 0x0000_1000,
        aid: 0x0102_0304_0506_0708,
        ts_pkt: 0x1111_2222_3333_4444,
        ts_exp: 0x5555_6666,
        hop_authenticators: vec![[0xa1, 0xa2, 0xa3], [0xb1, 0xb2, 0xb3]],
    };
    assert_eq!(header_len(2), 38 + 7 * 2);
    let mut buf = vec![0u8; 60];
    assert_eq!(repr.emit(&mut buf), Ok(52));
    #[rustfmt::skip]
    let want: [u8; 52] = [
        0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 2, 1,
        0, 0, 0, 1,  0, 2, 0, 3,  0, 4, 0, 0,
        0, 0, 0x10, 0,
        1, 2, 3, 4, 5, 6, 7, 8,
        0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44,
        0x55, 0x55, 0x66, 0x66,
        0xa1, 0xa2, 0xa3, 0xb1, 0xb2, 0xb3,
    ];
    assert_eq!(&buf[..52], &want);
    let mut view = Header::new_checked(&mut buf[..52]).unwrap();
    assert_eq!(HeaderRepr::parse(&view), repr);
    assert_eq!((view.pair(2), view.pair(3)), (Some((4, 0)), None));
    assert_eq!((view.hop_authenticator(0), view.hop_authenticator(2)), (None, Some([0xb1, 0xb2, 0xb3])));
    view.advance_hop_pointer();
    view.advance_hop_pointer();
    assert_eq!(view.hop_pointer(), 2, "saturates at λ");
}

#[test]
fn malformed_headers_are_refused() {
    assert_eq!(Header::new_checked(&[0u8; 3][..]).unwrap_err(), HeaderError::Truncated { needed: 10, actual: 3 });
    assert_eq!(Header::new_checked(&[0u8; 60][..]).unwrap_err(), HeaderError::NoOnPathAs);
    let mut b = [0u8; 60];
    b[field::LAMBDA] = 4; // 38 + 28 bytes
    assert_eq!(Header::new_checked(&b[..]).unwrap_err(), HeaderError::Truncated { needed: 66, actual: 60 });
    b[field::LAMBDA] = 2;
    b[field::HOP_POINTER] = 3;
    assert_eq!(
        Header::new_checked(&b[..]).unwrap_err(),
        HeaderError::HopPointerOutOfRange { hop_pointer: 3, lambda: 2 }
    );
    let bad = HeaderRepr {
        src: IsdAsn::from_u64(0),
        hop_pointer: 0,
        path: vec![(0, 1), (1, 0)],
        beta: 0,
        aid: 0,
        ts_pkt: 0,
        ts_exp: 0,
        hop_authenticators: vec![],
    };
    assert_eq!(bad.emit(&mut [0u8; 64]), Err(EmitError::Shape { pairs: 2, has: 0 }));
    let ok = HeaderRepr { hop_authenticators: vec![[0; 3]], ..bad };
    assert_eq!(ok.emit(&mut [0u8; 44]), Err(EmitError::BufferTooShort { needed: 45, actual: 44 }));
    assert_eq!(
        HeaderRepr { hop_pointer: 2, ..ok }.emit(&mut [0u8; 64]),
        Err(EmitError::HopPointerOutOfRange { hop_pointer: 2, lambda: 1 })
    );
}

/// A source stamps the header, each on-path AS recomputes its hop key and checks its HA.
#[test]
fn on_path_ases_verify_what_the_source_stamped() {
    let secrets = [[1u8; 16], [2u8; 16]];
    let path = vec![(0u16, 1u16), (2, 3), (4, 0)];
    let (src, aid, beta, ts_exp, ts_pkt) = (IsdAsn::from_u64(42), 0xabcd, 1000, 3600, 123_456_789);
    let hop_keys: Vec<[u8; 16]> = secrets
        .iter()
        .zip(&path[1..])
        .map(|(s, &(ingress, egress))| hop_key(s, &HopKeyInput { src, aid, beta, ingress, egress, ts_exp }))
        .collect();
    let len = header_len(2) + 100;
    let repr = HeaderRepr {
        src,
        hop_pointer: 0,
        path: path.clone(),
        beta,
        aid,
        ts_pkt,
        ts_exp,
        hop_authenticators: hop_keys.iter().map(|hk| hop_authenticator(hk, src, ts_pkt, len as u16)).collect(),
    };
    let mut pkt = vec![0u8; len];
    repr.emit(&mut pkt).unwrap();
    let h = Header::new_checked(&pkt[..]).unwrap();
    for (k, secret) in secrets.iter().enumerate() {
        let (ingress, egress) = h.pair(k + 1).unwrap();
        let input = HopKeyInput { src: h.src(), aid: h.aid(), beta: h.beta(), ingress, egress, ts_exp: h.ts_exp() };
        let ha = hop_authenticator(&hop_key(secret, &input), h.src(), h.ts_pkt(), pkt.len() as u16);
        assert_eq!(h.hop_authenticator(k + 1), Some(ha), "AS {k}");
        // A larger β (or another AS's secret) yields another key: the HA no longer matches.
        let inflated = hop_key(secret, &HopKeyInput { beta: beta + 1, ..input });
        assert_ne!(
            h.hop_authenticator(k + 1),
            Some(hop_authenticator(&inflated, h.src(), h.ts_pkt(), pkt.len() as u16))
        );
    }
}

fn repr() -> impl Strategy<Value = HeaderRepr> {
    (1usize..=16).prop_flat_map(|lambda| {
        (
            any::<u64>().prop_map(IsdAsn::from_u64),
            0..=lambda as u8,
            prop::collection::vec(any::<(u16, u16)>(), lambda + 1),
            (any::<u32>(), any::<u64>(), any::<u64>(), any::<u32>()),
            prop::collection::vec(any::<[u8; 3]>(), lambda),
        )
            .prop_map(|(src, hop_pointer, path, (beta, aid, ts_pkt, ts_exp), hop_authenticators)| HeaderRepr {
                src,
                hop_pointer,
                path,
                beta,
                aid,
                ts_pkt,
                ts_exp,
                hop_authenticators,
            })
    })
}

proptest! {
    #[test]
    fn emit_then_parse_is_the_identity(r in repr(), extra in 0usize..8) {
        let len = r.emitted_len().unwrap();
        let mut buf = vec![0u8; len + extra];
        prop_assert_eq!(r.emit(&mut buf), Ok(len));
        let h = Header::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(h.header_len(), len);
        prop_assert_eq!(HeaderRepr::parse(&h), r);
    }

    #[test]
    fn parse_then_emit_reproduces_the_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(h) = Header::new_checked(&bytes[..]) {
            let r = HeaderRepr::parse(&h);
            let mut out = vec![0u8; h.header_len()];
            prop_assert_eq!(r.emit(&mut out), Ok(h.header_len()));
            prop_assert_eq!(&out[..], &bytes[..h.header_len()]);
        }
    }
}
