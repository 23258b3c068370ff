//! Property tests of the SCION wire format and the standard-path router:
//!
//! - parse/emit round trips of arbitrary valid packets and standard paths;
//! - path reversal is an involution that keeps the length;
//! - no input makes the parsers, the zero-copy view or the router panic, whether it is
//!   arbitrary bytes, a valid header around an arbitrary path, or a valid (correctly
//!   MAC'd) packet with a byte changed somewhere on its way along a path.

mod strategies;
use aviary_qos::Verdict;
use aviary_scion::wire::header::field::ADDR_TYPES;
use aviary_scion::wire::path::{segment_of, MAX_HOPS};
use aviary_scion::{path_type, AsForwarding, HeaderError, ScionLayout, ScionPacket, ScionView, StandardPath};
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

use strategies::{
    arb_hop, arb_host, arb_info, arb_packet_with, chain, chain_packet, forward_ingress, raw_packet, IF_NEXT, NOW_NS,
};

/// A valid standard path: 1–3 segments of 1–20 hops each (at most 60 < 63 in all),
/// CurrHF anywhere, CurrINF its segment.
fn arb_path() -> impl Strategy<Value = StandardPath> {
    prop::collection::vec((arb_info(), prop::collection::vec(arb_hop(), 1..=20)), 1..=3)
        .prop_flat_map(|segs| (Just(segs), any::<Index>()))
        .prop_map(|(segs, idx)| {
            let mut p = StandardPath::default();
            for (i, (info, hops)) in segs.into_iter().enumerate() {
                p.seg_len[i] = hops.len() as u8;
                p.info.push(info);
                p.hops.extend(hops);
            }
            assert!(p.hops.len() <= MAX_HOPS);
            p.curr_hf = idx.index(p.hops.len()) as u8;
            p.curr_inf = segment_of(p.seg_len, usize::from(p.curr_hf)) as u8;
            p
        })
}

/// A valid packet with a valid standard path and arbitrary host addresses.
fn arb_packet() -> impl Strategy<Value = (ScionPacket, StandardPath)> {
    arb_packet_with(arb_path(), 300)
}

fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..2000)
}

/// A valid SCION header (random host address kinds and path type, mostly SCION) around
/// arbitrary path bytes whose length is a multiple of 4, so that the view accepts it and
/// the path parser and router see the garbage.
fn arb_garbage_path_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        arb_host(),
        arb_host(),
        prop_oneof![4 => Just(path_type::SCION), 1 => Just(path_type::EMPTY), 1 => any::<u8>()],
        prop::collection::vec(any::<u32>(), 0..=140),
        any::<u64>(),
        any::<u64>(),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(dst_host, src_host, ptype, words, dst, src, payload)| {
            let path = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            raw_packet((dst_host, src_host), (dst, src), ptype, path, payload)
        })
}

/// Calls every accessor of a checked view.
fn touch_view(buf: &mut [u8]) {
    if let Ok(mut v) = ScionView::new_checked(&mut *buf) {
        let _ = (
            v.traffic_class(),
            v.flow_id(),
            v.next_hdr(),
            v.hdr_len(),
            v.payload_len(),
            v.pkt_len_u16(),
            v.path_type(),
            v.dst_ia(),
            v.dst_ia_bytes(),
            v.src_ia(),
            v.dst_host(),
            v.src_host(),
            v.path_range(),
        );
        let (p, l) = (v.path().len(), v.payload().len());
        assert_eq!(v.path_range().len(), p);
        assert_eq!(v.path_mut().len(), p);
        assert_eq!(v.payload_mut().len(), l);
        assert_eq!(usize::from(v.payload_len()), l);
        assert_eq!(v.hdr_len() + l, v.into_inner().len());
    }
}

/// Calls every accessor of a view rebuilt from `layout` over `buf`.
fn touch_layout_view(buf: &mut [u8], layout: ScionLayout) {
    let mut v = ScionView::with_layout(&mut *buf, layout).unwrap();
    let _ = (v.dst_host(), v.src_host(), v.payload_len(), v.path_mut().len(), v.payload_mut().len());
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// emit → parse gives the same packet and path; emit(parse(bytes)) gives the bytes.
    #[test]
    fn packet_round_trip((pkt, path) in arb_packet()) {
        let bytes = pkt.to_bytes().unwrap();
        prop_assert_eq!(bytes.len(), pkt.len());
        let parsed = ScionPacket::parse(&bytes).unwrap();
        prop_assert_eq!(&parsed, &pkt);
        prop_assert_eq!(parsed.to_bytes().unwrap(), bytes.clone());
        prop_assert_eq!(StandardPath::parse(&parsed.header.path).unwrap(), path.clone());

        let v = ScionView::new_checked(&bytes[..]).unwrap();
        prop_assert_eq!(v.traffic_class(), pkt.header.traffic_class);
        prop_assert_eq!(v.flow_id(), pkt.header.flow_id);
        prop_assert_eq!(v.next_hdr(), pkt.header.next_hdr);
        prop_assert_eq!(v.path_type(), path_type::SCION);
        prop_assert_eq!(v.dst_ia(), pkt.header.dst_ia);
        prop_assert_eq!(v.src_ia(), pkt.header.src_ia);
        prop_assert_eq!(v.dst_host(), pkt.header.dst_host);
        prop_assert_eq!(v.src_host(), pkt.header.src_host);
        prop_assert_eq!(v.hdr_len(), pkt.header.len());
        prop_assert_eq!(v.path(), &pkt.header.path[..]);
        prop_assert_eq!(v.payload(), &pkt.payload[..]);
        prop_assert_eq!(usize::from(v.pkt_len_u16().unwrap()), bytes.len());
    }

    /// A view rebuilt from a checked layout is the checked view, over the same bytes made
    /// mutable; over other bytes it never reads out of bounds, and it is refused for another
    /// length or other address types.
    #[test]
    fn a_layout_views_the_same_packet_again((pkt, _) in arb_packet(), seed: u8, cut in 1usize..8) {
        let mut bytes = pkt.to_bytes().unwrap();
        let checked = ScionView::new_checked(&bytes[..]).unwrap();
        let (layout, range, src) = (checked.layout(), checked.path_range(), checked.src_host());
        let mut v = ScionView::with_layout(&mut bytes[..], layout).unwrap();
        prop_assert_eq!((v.path_range(), v.src_host()), (range.clone(), src));
        prop_assert_eq!(v.path_mut().len(), range.len());
        let mut other: Vec<u8> = (0..bytes.len()).map(|i| (i as u8).wrapping_mul(seed) ^ seed).collect();
        other[ADDR_TYPES] = bytes[ADDR_TYPES];
        touch_layout_view(&mut other, layout);
        other[ADDR_TYPES] ^= 0x3;
        let changed = other[ADDR_TYPES];
        prop_assert_eq!(ScionView::with_layout(&other[..], layout).err(), Some(HeaderError::BadAddressType(changed)));
        let short = bytes.len() - cut;
        prop_assert_eq!(ScionView::with_layout(&bytes[..short], layout).err(), Some(HeaderError::LengthMismatch));
    }

    /// The same for the path alone.
    #[test]
    fn path_round_trip(path in arb_path()) {
        prop_assert!(path.validate().is_ok());
        let bytes = path.to_bytes().unwrap();
        prop_assert_eq!(bytes.len(), path.len());
        let parsed = StandardPath::parse(&bytes).unwrap();
        prop_assert_eq!(&parsed, &path);
        prop_assert_eq!(parsed.to_bytes().unwrap(), bytes);
    }

    /// Reversing twice is the identity; reversing keeps the length and validity.
    #[test]
    fn reverse_is_an_involution(path in arb_path()) {
        let mut r = path.clone();
        r.reverse().unwrap();
        prop_assert_eq!(r.len(), path.len());
        prop_assert_eq!(r.hops.len(), path.hops.len());
        prop_assert!(r.validate().is_ok());
        let bytes = r.to_bytes().unwrap();
        prop_assert_eq!(bytes.len(), path.to_bytes().unwrap().len());
        prop_assert_eq!(StandardPath::parse(&bytes).unwrap(), r.clone());
        r.reverse().unwrap();
        prop_assert_eq!(r, path);
    }

    /// Arbitrary bytes: no parser, view accessor or router call panics.
    #[test]
    fn arbitrary_bytes_do_not_panic(
        mut bytes in arb_bytes(),
        ingress: u16,
        now: u64,
        at in 0usize..4,
    ) {
        let _ = ScionPacket::parse(&bytes);
        if let Ok(mut p) = StandardPath::parse(&bytes) {
            let b = p.to_bytes().unwrap();
            prop_assert_eq!(StandardPath::parse(&b).unwrap(), p.clone());
            p.reverse().unwrap();
        }
        touch_view(&mut bytes);
        let c = chain(4);
        let _ = forward(&c.fwd[at], &mut bytes, ingress, now);
    }

    /// A valid header around an arbitrary path: no panic; anything parsed round-trips.
    #[test]
    fn garbage_paths_do_not_panic(
        mut bytes in arb_garbage_path_packet(),
        ingress: u16,
        now: u64,
        at in 0usize..4,
    ) {
        let pkt = ScionPacket::parse(&bytes).unwrap();
        prop_assert_eq!(pkt.to_bytes().unwrap(), bytes.clone());
        if let Ok(mut p) = StandardPath::parse(&pkt.header.path) {
            // The owned form drops reserved bits, so compare parsed values.
            prop_assert_eq!(StandardPath::parse(&p.to_bytes().unwrap()).unwrap(), p.clone());
            p.reverse().unwrap();
        }
        touch_view(&mut bytes);
        let c = chain(4);
        let ingress = if ingress % 2 == 0 { ingress % 4 } else { ingress };
        let _ = forward(&c.fwd[at], &mut bytes, ingress, now);
    }

    /// A correctly MAC'd packet walks its chain; a random byte changed before a random AS
    /// (with a random ingress and time there) makes no processor panic.
    #[test]
    fn mutated_valid_packets_do_not_panic(
        n in 2usize..=6,
        payload_len in 0usize..200,
        at: Index,
        pos: Index,
        xor in 1u8..=255,
        ingress in prop_oneof![Just(None), any::<u16>().prop_map(Some)],
        now in prop_oneof![Just(None), any::<u64>().prop_map(Some)],
    ) {
        let c = chain(n);
        let mut pkt = chain_packet(&c, payload_len);
        let at = at.index(n);
        for i in 0..at {
            let v = forward(&c.fwd[i], &mut pkt, forward_ingress(i), NOW_NS);
            prop_assert_eq!(v, Verdict::unauthenticated(IF_NEXT), "AS {}", i);
        }
        let mut good = pkt.clone();
        let v = forward(&c.fwd[at], &mut good, forward_ingress(at), NOW_NS);
        if at + 1 == n {
            prop_assert_eq!(v, Verdict::Deliver);
        } else {
            prop_assert_eq!(v, Verdict::unauthenticated(IF_NEXT));
        }

        let i = pos.index(pkt.len());
        pkt[i] ^= xor;
        touch_view(&mut pkt);
        let _ = ScionPacket::parse(&pkt);
        let ingress = ingress.unwrap_or(forward_ingress(at));
        let now = now.unwrap_or(NOW_NS);
        // The rest of the chain sees whatever the mutated packet became.
        for f in &c.fwd[at..] {
            if !matches!(forward(f, &mut pkt, ingress, now), Verdict::Forward { .. }) {
                break;
            }
        }
    }
}

/// One AS's standard forwarding of one packet (a fresh forwarder: standard SCION keeps no state).
fn forward(f: &AsForwarding, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
    aviary_scion::StandardForwarder::standard(f.clone()).process(pkt, ingress, now_ns)
}
