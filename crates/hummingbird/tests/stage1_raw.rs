//! Stage 1 of path type 5 over raw words (the router's [`HopExtension::prepare_raw`]) against
//! the views' route it replaces on the fast path and keeps for naming drop reasons: the common
//! header's checked view ([`ScionView::new_checked`]), then [`HopExtension::prepare`] (the
//! Hummingbird path view and the forwarder's hop checks over it). For valid packets and for
//! packets with lies and garbage in them, the raw pass must accept exactly what the views
//! accept, with the same record field for field; a packet it rejects must get the views' drop
//! reason from the router.

#[path = "../../scion/tests/strategies/mod.rs"]
mod strategies;

use std::cell::RefCell;

use aviary_hummingbird::path::{Flyover, HbirdHop, FLYOVER_BIT, HOP_LINES, META_LEN};
use aviary_hummingbird::path::{MAX_COUNTER, MAX_MILLIS, MAX_RES_ID};
use aviary_hummingbird::router::Flyovers;
use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{HbirdPath, Router, RouterParams, SecretValue, Source};
use aviary_qos::Verdict;
use aviary_scion::forwarding::{HopExtension, Staged};
use aviary_scion::wire::header::field as hdr;
use aviary_scion::wire::path::INFO_LEN;
use aviary_scion::{path_type, AsForwarding, HopMacKey, IsdAsn, ScionView};
use proptest::prelude::*;
use proptest::sample::Index;

use strategies::lies::{arb_header_lie, HeaderLie};
use strategies::{arb_hop, arb_host, arb_info, raw_packet};

type Record = Staged<<Flyovers as HopExtension>::Work>;

/// The views' route, as the forwarder takes it for a packet the raw pass rejects
/// (`StagedForwarder::prepare_view`): the record, or the packet's final verdict.
fn reference(r: &Router, pkt: &[u8], ingress: u16) -> Result<Record, Verdict> {
    let fwd = r.forwarding();
    let view = ScionView::new_checked(pkt).map_err(|e| Verdict::Drop(e.into()))?;
    if view.path_type() == path_type::EMPTY {
        return Err(fwd.process_empty(view.src_ia(), view.dst_ia(), ingress));
    }
    let (hop, ext) = r.flyovers().prepare(fwd, &view, ingress).map_err(Verdict::Drop)?;
    let layout_offset = r.flyovers().hop_layout_offset(view.path_type());
    Ok(Staged { path_start: view.path_range().start as u16, layout_offset, hop, ext })
}

/// The ASes of the three routers a packet may be at: its destination, its source or neither, so
/// that the source and destination checks, delivery and forwarding all occur.
const LOCAL: [(u16, u64); 3] = [(1, 0x11), (2, 0x22), (3, 0x33)];

thread_local! {
    static ROUTERS: RefCell<Vec<Router>> = RefCell::new(
        LOCAL
            .iter()
            .map(|(isd, asn)| {
                let fwd = AsForwarding::new(IsdAsn::new(*isd, *asn), HopMacKey::new(&[7; 16]), [1, 2, 3]);
                let params = RouterParams { max_res_id: 255, ..RouterParams::default() };
                Router::new(fwd, SecretValue::new(&[9; 16]), params).unwrap()
            })
            .collect(),
    );
}

/// Both routes for `pkt` at router `at`: the raw pass gives a record exactly when the views do,
/// the same one; a packet it rejects gets the views' verdict from the router itself.
fn check(at: usize, pkt: &[u8], ingress: u16) -> Result<(), TestCaseError> {
    ROUTERS.with(|routers| {
        let r = &mut routers.borrow_mut()[at];
        let raw = r.flyovers().prepare_raw(r.forwarding(), pkt, ingress);
        let views = reference(r, pkt, ingress);
        match (&raw, &views) {
            (Some(raw), Ok(views)) => prop_assert_eq!(raw, views),
            // The standard path's own raw pass has its own test (aviary-scion's stage1_raw).
            (None, Err(_)) if pkt.get(hdr::PATH_TYPE) == Some(&path_type::SCION) => {}
            (None, Err(verdict)) => {
                // Rejected in stage 1: the router's verdict is the views', nothing else runs.
                let mut copy = pkt.to_vec();
                prop_assert_eq!(r.process(&mut copy, ingress, 0), *verdict);
                prop_assert_eq!(&copy[..], pkt);
            }
            _ => prop_assert!(false, "raw pass {:?}, views {:?}", raw, views),
        }
        Ok(())
    })
}

fn arb_flyover() -> impl Strategy<Value = Flyover> {
    (0..=MAX_RES_ID, 0u16..=0x3ff, any::<u16>(), any::<u16>())
        .prop_map(|(res_id, bw, res_start_offset, res_duration)| Flyover { res_id, bw, res_start_offset, res_duration })
}

/// A path of 1–3 segments of 1–6 hop fields, each a flyover half the time, CurrHF on a hop
/// field anywhere or (half the time) on the last of a segment, where crossovers and delivery
/// happen; CurrINF its segment. Peering flags in a quarter of the paths, every direction.
fn arb_path() -> impl Strategy<Value = HbirdPath> {
    let hop = (arb_hop(), proptest::option::of(arb_flyover())).prop_map(|(hop, flyover)| HbirdHop { hop, flyover });
    (
        prop::collection::vec((arb_info(), prop::collection::vec(hop, 1..=6)), 1..=3),
        (any::<u32>(), 0..=MAX_MILLIS, 0..=MAX_COUNTER),
        any::<Index>(),
        any::<bool>(),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(segs, (base_ts, millis, counter), idx, at_seg_end, peering)| {
            let (mut info, segments): (Vec<_>, Vec<_>) = segs.into_iter().unzip();
            for i in &mut info {
                i.peering &= peering;
            }
            // Line and segment of every hop field, and of the last of each segment.
            let (mut all, mut last, mut line) = (Vec::new(), Vec::new(), 0);
            for (s, seg) in segments.iter().enumerate() {
                for h in seg {
                    all.push((line, s));
                    line += h.lines();
                }
                last.push(*all.last().unwrap());
            }
            let (line, seg) = if at_seg_end { *idx.get(&last) } else { *idx.get(&all) };
            HbirdPath { curr_inf: seg as u8, curr_hf: line as u8, base_ts, millis, counter, info, segments }
        })
}

/// What is done to a valid packet before stage 1 sees it.
#[derive(Clone, Debug)]
enum Lie {
    None,
    Header(HeaderLie),
    /// CurrINF (2 bits) and CurrHF (8 bits) replaced.
    Indices(u8, u8),
    /// SegLens (7 bits each) replaced by small values: gaps, empty segments, lengths that do
    /// not match the path or split a hop field.
    SegLens([u8; 3]),
    /// The flyover bit of the hop field at a line (from the hop fields' start) toggled: a
    /// flyover that runs past its segment's end, a crossover onto a flyover, hop fields out of
    /// step with CurrHF.
    FlyoverBit(Index),
}

fn arb_lie() -> impl Strategy<Value = Lie> {
    prop_oneof![
        10 => Just(Lie::None),
        8 => arb_header_lie().prop_map(Lie::Header),
        2 => (0u8..4, any::<u8>()).prop_map(|(ci, ch)| Lie::Indices(ci, ch)),
        2 => prop::array::uniform3(0u8..24).prop_map(Lie::SegLens),
        2 => any::<Index>().prop_map(Lie::FlyoverBit),
    ]
}

/// Tells `lie` in `pkt`, whose path of `num_inf` info fields and `lines` lines of hop fields
/// starts at `path_start`.
fn tell(pkt: &mut Vec<u8>, path_start: usize, (num_inf, lines): (usize, usize), lie: &Lie) {
    let meta = path_start..path_start + 4;
    let word = |pkt: &[u8]| u32::from_be_bytes(pkt[meta.clone()].try_into().unwrap());
    match lie {
        Lie::None => {}
        Lie::Header(lie) => lie.tell(pkt, path_start),
        Lie::Indices(ci, ch) => {
            let w = (word(pkt) & ((1 << 22) - 1)) | u32::from(*ci) << 30 | u32::from(*ch) << 22;
            pkt[meta].copy_from_slice(&w.to_be_bytes());
        }
        Lie::SegLens(s) => {
            let lens = u32::from(s[0]) << 14 | u32::from(s[1]) << 7 | u32::from(s[2]);
            let w = (word(pkt) & !((1 << 21) - 1)) | lens;
            pkt[meta].copy_from_slice(&w.to_be_bytes());
        }
        Lie::FlyoverBit(at) => {
            let line = at.index(lines);
            pkt[path_start + META_LEN + INFO_LEN * num_inf + 4 * line] ^= FLYOVER_BIT;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Valid packets, and the same packets with a lie told: the same outcome both ways.
    #[test]
    fn raw_stage1_matches_the_views(
        path in arb_path(),
        hosts in (arb_host(), arb_host()),
        ends in (0usize..4, 0usize..4, any::<u64>()),
        payload in prop::collection::vec(any::<u8>(), 0..40),
        lie in arb_lie(),
        at in 0usize..3,
        ingress_kind in prop::sample::select(vec![0usize, 0, 0, 1, 2, 2, 3]),
        other_ingress: u16,
    ) {
        let bytes = path.to_bytes().unwrap();
        // Destination and source: the AS the packet is at, another router's, or elsewhere.
        let ia = |k: usize| match k {
            0 => IsdAsn::new(LOCAL[at].0, LOCAL[at].1).to_u64(),
            1 => IsdAsn::new(LOCAL[(at + 1) % 3].0, LOCAL[(at + 1) % 3].1).to_u64(),
            _ => ends.2,
        };
        let mut pkt = raw_packet(hosts, (ia(ends.0), ia(ends.1)), path_type::HUMMINGBIRD, bytes.clone(), payload.clone());
        let path_start = pkt.len() - payload.len() - bytes.len();
        let hop = path.hops().nth(path.curr_hop_index().unwrap()).unwrap().hop;
        // The current hop's ingress in the direction of travel, its other interface, the AS
        // itself, or anything.
        let (travel_in, travel_out) = if path.info[usize::from(path.curr_inf)].cons_dir {
            (hop.cons_ingress, hop.cons_egress)
        } else {
            (hop.cons_egress, hop.cons_ingress)
        };
        let ingress = [travel_in, travel_out, 0, other_ingress][ingress_kind];
        let lines = path.seg_len().iter().map(|l| usize::from(*l)).sum();
        tell(&mut pkt, path_start, (path.info.len(), lines), &lie);
        check(at, &pkt, ingress)?;
    }

    /// Bytes that are mostly not a packet at all, with path type 5 more often than chance
    /// would give.
    #[test]
    fn raw_stage1_matches_the_views_on_garbage(
        mut bytes in prop::collection::vec(any::<u8>(), 0..200),
        hbird: bool,
        small_hdr_len: bool,
        ingress in prop_oneof![Just(0u16), any::<u16>()],
        at in 0usize..3,
    ) {
        if hbird && bytes.len() > hdr::PATH_TYPE {
            bytes[hdr::PATH_TYPE] = path_type::HUMMINGBIRD;
            bytes[hdr::VERSION_TC] &= 0x0f;
        }
        if small_hdr_len && bytes.len() > hdr::HDR_LEN {
            // A header length the packet can hold, so that the path checks are reached.
            bytes[hdr::HDR_LEN] = (bytes.len() / 4) as u8;
        }
        check(at, &bytes, ingress)?;
    }
}

const NOW_S: u32 = 1_750_000_000;
const NS: u64 = 1_000_000_000;

/// A flyover packet as it arrives at the transit AS of a three-AS chain: the raw pass takes it
/// with a flyover record (so the comparison above sees flyovers pass), and a flyover whose
/// packet is longer than its 16-bit length field can say is the views' drop.
#[test]
fn a_real_flyover_passes_and_an_oversized_one_is_dropped_alike() {
    let c = Chain::new(3, NOW_S - 60);
    let params = RouterParams { max_res_id: 255, ..RouterParams::default() };
    let res = [(1, c.grant(1, 7, 100, NOW_S - 10, 3600))];
    let sent = u64::from(NOW_S) * NS;
    let make = |payload_len: usize| {
        let mut pkt = c.hbird_packet(&res, NOW_S, payload_len).unwrap();
        Source::new(&pkt, &[res[0].1]).unwrap().stamp(&mut pkt, sent).unwrap();
        c.router(0, params).process(&mut pkt, Chain::forward_ingress(0), sent);
        pkt
    };
    let r = c.router(1, params);
    let ingress = Chain::forward_ingress(1);
    let pkt = make(100);
    let raw = r.flyovers().prepare_raw(r.forwarding(), &pkt, ingress);
    assert!(raw.is_some_and(|s| s.ext.is_some()), "{raw:?}");
    assert_eq!(raw, reference(&r, &pkt, ingress).ok());

    // The same packet with its payload grown to the most PayloadLen can say.
    let mut big = pkt.clone();
    let hdr_len = usize::from(big[hdr::HDR_LEN]) * 4;
    big.resize(hdr_len + usize::from(u16::MAX), 0xab);
    big[hdr::PAYLOAD_LEN].copy_from_slice(&u16::MAX.to_be_bytes());
    assert!(big.len() > usize::from(u16::MAX));
    assert_eq!(r.flyovers().prepare_raw(r.forwarding(), &big, ingress), None);
    let verdict = reference(&r, &big, ingress);
    assert_eq!(verdict, Err(Verdict::Drop(aviary_qos::DropReason::PktLenOverflow)));
    assert_eq!(Err(c.router(1, params).process(&mut big, ingress, sent)), verdict);
}

/// The comparison can fail: a packet whose CurrHF is moved to the next hop field's line gives
/// a different record (or a drop) than the packet as it was.
#[test]
fn a_moved_index_changes_the_outcome() {
    let c = Chain::new(3, NOW_S - 60);
    let params = RouterParams { max_res_id: 255, ..RouterParams::default() };
    let pkt = c.hbird_packet(&[], NOW_S, 10).unwrap();
    let r = c.router(0, params);
    let good = r.flyovers().prepare_raw(r.forwarding(), &pkt, 0);
    assert!(good.is_some());
    let path_start = usize::from(good.unwrap().path_start);
    let mut moved = pkt.clone();
    // CurrHF (bits 22..30 of the first word) one hop field on.
    let w = u32::from_be_bytes(moved[path_start..path_start + 4].try_into().unwrap()) + ((HOP_LINES as u32) << 22);
    moved[path_start..path_start + 4].copy_from_slice(&w.to_be_bytes());
    let other = r.flyovers().prepare_raw(r.forwarding(), &moved, 0);
    assert_ne!(other, good);
    assert_eq!(other, reference(&r, &moved, 0).ok());
}
