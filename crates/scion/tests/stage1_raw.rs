//! Stage 1 of the standard path over raw words ([`AsForwarding::prepare_scion`]) against the
//! route it replaced, written here from the checked views: the common header's
//! ([`ScionView::new_checked`]), the standard path's ([`StandardPathView::new_checked`]) and
//! the hop checks over that view ([`AsForwarding::prepare_hop`]). For valid packets and for
//! packets with lies and garbage in them, both must give the same drop reason or the same
//! `HopWork`, field for field.

mod strategies;

use aviary_qos::DropReason;
use aviary_scion::forwarding::HopWork;
use aviary_scion::wire::header::field as hdr;
use aviary_scion::wire::path::{segment_of, MAX_HOPS};
use aviary_scion::{
    path_type, AsForwarding, HopMacKey, IsdAsn, ScionPacket, ScionView, StandardPath, StandardPathView,
};
use proptest::prelude::*;
use proptest::sample::Index;

use strategies::lies::{arb_header_lie, HeaderLie};
use strategies::{arb_hop, arb_info, arb_packet_with};

/// The checked views' route: what stage 1 did for path type SCION before the raw pass.
fn reference(fwd: &AsForwarding, pkt: &[u8], ingress: u16) -> Result<(u16, HopWork), DropReason> {
    let view = ScionView::new_checked(pkt).map_err(DropReason::from)?;
    if view.path_type() != path_type::SCION {
        return Err(DropReason::UnsupportedPathType);
    }
    let path = StandardPathView::new_checked(view.path()).map_err(DropReason::from)?;
    let mut work = fwd.prepare_hop(&path, view.src_ia(), view.dst_ia(), ingress)?;
    work.set_mac(work.mac());
    Ok((view.path_range().start as u16, work))
}

/// A standard path of 1–3 segments of 1–21 hops each (up to 63 in all, the most CurrHF can
/// name), CurrINF the segment of CurrHF, which is anywhere or (half the time) at the last hop
/// of a segment, where crossovers and delivery happen; peering flags in a quarter of the paths,
/// every direction.
fn arb_path() -> impl Strategy<Value = StandardPath> {
    prop::collection::vec((arb_info(), prop::collection::vec(arb_hop(), 1..=21)), 1..=3)
        .prop_flat_map(|segs| (Just(segs), any::<Index>(), any::<bool>(), prop::bool::weighted(0.25)))
        .prop_map(|(segs, idx, at_seg_end, peering)| {
            let mut p = StandardPath::default();
            let mut ends = Vec::new();
            for (i, (mut info, hops)) in segs.into_iter().enumerate() {
                info.peering &= peering;
                p.seg_len[i] = hops.len() as u8;
                p.info.push(info);
                p.hops.extend(hops);
                ends.push(p.hops.len());
            }
            assert!(p.hops.len() <= MAX_HOPS);
            let hf = if at_seg_end { ends[idx.index(ends.len())] - 1 } else { idx.index(p.hops.len()) };
            p.curr_hf = hf as u8;
            p.curr_inf = segment_of(p.seg_len, usize::from(p.curr_hf)) as u8;
            p
        })
}

/// What is done to a valid packet before stage 1 sees it.
#[derive(Clone, Debug)]
enum Lie {
    None,
    Header(HeaderLie),
    /// CurrINF (2 bits) and CurrHF (6 bits) replaced.
    Indices(u8),
    /// SegLens replaced by small values (gaps, empty segments, too many hops).
    SegLens([u8; 3]),
}

fn arb_lie() -> impl Strategy<Value = Lie> {
    prop_oneof![
        3 => Just(Lie::None),
        11 => arb_header_lie().prop_map(Lie::Header),
        2 => any::<u8>().prop_map(Lie::Indices),
        2 => [0u8..24, 0u8..24, 0u8..24].prop_map(Lie::SegLens),
    ]
}

/// Tells `pkt` the lie; `path_start` is where its path begins.
fn tell(pkt: &mut Vec<u8>, path_start: usize, lie: &Lie) {
    let meta = path_start..path_start + 4;
    match lie {
        Lie::None => {}
        Lie::Header(lie) => lie.tell(pkt, path_start),
        Lie::Indices(i) => pkt[path_start] = *i,
        Lie::SegLens(s) => {
            let word = u32::from_be_bytes(pkt[meta.clone()].try_into().unwrap()) & 0xfffc_0000;
            let lens = u32::from(s[0] & 0x3f) << 12 | u32::from(s[1] & 0x3f) << 6 | u32::from(s[2] & 0x3f);
            pkt[meta].copy_from_slice(&(word | lens).to_be_bytes());
        }
    }
}

/// The AS the packet is at: its destination, its source or another one, so that the source
/// and destination checks, delivery and forwarding all occur.
fn forwarding(local: IsdAsn) -> AsForwarding {
    AsForwarding::new(local, HopMacKey::new(&[7; 16]), [1, 2, 3])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Valid packets, and the same packets with a lie told: the same outcome both ways.
    #[test]
    fn raw_stage1_matches_the_views(
        (pkt, path) in arb_packet_with(arb_path(), 40),
        lie in arb_lie(),
        local in 0usize..3,
        ingress_kind in 0usize..4,
        other_ingress: u16,
    ) {
        let mut bytes = pkt.to_bytes().unwrap();
        let path_start = bytes.len() - pkt.payload.len() - pkt.header.path.len();
        let hop = path.hops[usize::from(path.curr_hf)];
        // The current hop's interfaces in both directions, the AS itself, or anything.
        let ingress = [hop.cons_ingress, hop.cons_egress, 0, other_ingress][ingress_kind];
        let local = [pkt.header.dst_ia, pkt.header.src_ia, IsdAsn::new(9, 9)][local];
        tell(&mut bytes, path_start, &lie);
        let fwd = forwarding(local);
        prop_assert_eq!(fwd.prepare_scion(&bytes, ingress), reference(&fwd, &bytes, ingress));
    }

    /// Bytes that are mostly not a packet at all, with the standard path type more often than
    /// chance would give.
    #[test]
    fn raw_stage1_matches_the_views_on_garbage(
        mut bytes in prop::collection::vec(any::<u8>(), 0..200),
        scion: bool,
        small_hdr_len: bool,
        ingress in prop_oneof![Just(0u16), any::<u16>()],
        local: u64,
    ) {
        if scion && bytes.len() > hdr::PATH_TYPE {
            bytes[hdr::PATH_TYPE] = path_type::SCION;
            bytes[hdr::VERSION_TC] &= 0x0f;
        }
        if small_hdr_len && bytes.len() > hdr::HDR_LEN {
            // A header length the packet can hold, so that the path checks are reached.
            bytes[hdr::HDR_LEN] = (bytes.len() / 4) as u8;
        }
        let fwd = forwarding(IsdAsn::from_u64(local));
        prop_assert_eq!(fwd.prepare_scion(&bytes, ingress), reference(&fwd, &bytes, ingress));
    }
}

/// The test can fail: a packet whose CurrHF is moved by one gives a different `HopWork` (or a
/// drop) than the packet as it was, so the comparison above sees what it compares.
#[test]
fn a_moved_index_changes_the_outcome() {
    let c = strategies::chain(4);
    let pkt = strategies::chain_packet(&c, 10);
    let parsed = ScionPacket::parse(&pkt).unwrap();
    let path_start = pkt.len() - parsed.payload.len() - parsed.header.path.len();
    let fwd = &c.fwd[1];
    let mut walked = pkt.clone();
    let v = aviary_scion::StandardForwarder::standard(c.fwd[0].clone()).process(&mut walked, 0, strategies::NOW_NS);
    assert!(matches!(v, aviary_qos::Verdict::Forward { .. }), "{v:?}");
    let ingress = strategies::forward_ingress(1);
    let good = fwd.prepare_scion(&walked, ingress);
    assert!(good.is_ok(), "{good:?}");
    assert_eq!(good, reference(fwd, &walked, ingress));
    let mut moved = walked.clone();
    moved[path_start] ^= 1;
    assert_ne!(fwd.prepare_scion(&moved, ingress), good);
    assert_eq!(fwd.prepare_scion(&moved, ingress), reference(fwd, &moved, ingress));
}
