//! Cross-checks aviary's SCION wire format, hop-field MACs, path reversal and router path
//! processing against an independent implementation, the `sciparse` crate (0.8.6, by
//! Anapaya). Every test compares concrete field values or bytes, so a disagreement fails.
//!
//! Known, intentional differences (the tests avoid or document them):
//! - sciparse's router helpers clear a set router-alert flag (and report an SCMP alert);
//!   aviary has no traceroute support and leaves the flags alone. Router walks use paths
//!   without alert flags.
//! - sciparse delivers locally when the *final hop field* is reached; aviary delivers when the
//!   *destination ISD-AS* is local and drops packets whose DstIA disagrees with the position on
//!   the path (scionproto semantics). On consistent packets, which the walks build, the two
//!   coincide.
//! - aviary's owned types drop the reserved flag bits; generated inputs keep them zero (the
//!   spec requires senders to do so).
//! - sciparse's `advance_ingress` refuses segments of a single hop field; aviary accepts them.
//!   Generated segments have at least two hops.

mod strategies;
use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_qos::Verdict;
use aviary_scion::{
    combine, path_type, AsForwarding, HopField, HopMacKey, HostAddr, InfoField, IsdAsn, ScionHeader, ScionPacket,
    Segment, StandardPath,
};
use proptest::prelude::*;
use proptest::sample::Index;
use sciparse::address::host_addr::{ServiceAddr, WireHostAddr};
use sciparse::core::convert::TryFromView;
use sciparse::core::encode::WireEncode;
use sciparse::core::view::View;
use sciparse::dataplane_path::model::DpPath;
use sciparse::dataplane_path::standard::mac::algo::{calculate_hop_mac, mac_chaining_beta};
use sciparse::dataplane_path::standard::mac::HopMacCalculate;
use sciparse::dataplane_path::standard::model as sp;
use sciparse::dataplane_path::standard::routing::{HopMacValidator, IngressAdvanceAction};
use sciparse::dataplane_path::standard::types::{HopFieldFlags, HopFieldMac, InfoFieldFlags};
use sciparse::dataplane_path::standard::view::StandardPathView;
use sciparse::dataplane_path::types::PathType;
use sciparse::dataplane_path::view::ScionDpPathViewRefMut;
use sciparse::header::model::{AddressHeader, CommonHeader, ScionPacketHeader};
use sciparse::identifier::isd_asn::IsdAsn as SpIa;
use sciparse::packet::model::ScionRawPacket;
use sciparse::packet::view::ScionRawPacketView;

// ---------------------------------------------------------------------------------------
// Random inputs (aviary types) and their translation into sciparse models
// ---------------------------------------------------------------------------------------

use strategies::{arb_hop, arb_info, arb_packet_with};

/// A valid standard path: 1–3 segments of 2–6 hops, CurrHF anywhere, CurrINF its segment.
fn arb_path() -> impl Strategy<Value = StandardPath> {
    prop::collection::vec((arb_info(), prop::collection::vec(arb_hop(), 2..=6)), 1..=3)
        .prop_flat_map(|segs| (Just(segs), any::<Index>()))
        .prop_map(|(segs, idx)| {
            let mut p = StandardPath::default();
            for (i, (info, hops)) in segs.into_iter().enumerate() {
                p.seg_len[i] = hops.len() as u8;
                p.info.push(info);
                p.hops.extend(hops);
            }
            p.curr_hf = idx.index(p.hops.len()) as u8;
            p.curr_inf = segment_index(&p.seg_len, p.curr_hf as usize) as u8;
            p
        })
}

fn segment_index(seg_len: &[u8; 3], hf: usize) -> usize {
    let mut end = 0;
    seg_len
        .iter()
        .position(|l| {
            end += usize::from(*l);
            hf < end
        })
        .unwrap()
}

/// A random packet carrying a random standard path; the path is returned alongside.
fn arb_packet() -> impl Strategy<Value = (ScionPacket, StandardPath)> {
    arb_packet_with(arb_path(), 200)
}

fn sp_host(h: HostAddr) -> WireHostAddr {
    match h {
        HostAddr::V4(a) => WireHostAddr::V4(a),
        HostAddr::V6(a) => WireHostAddr::V6(a),
        HostAddr::Svc(s) => WireHostAddr::Svc(ServiceAddr(s)),
    }
}

fn sp_info(i: &InfoField) -> sp::InfoField {
    let mut flags = InfoFieldFlags::empty();
    flags.set(InfoFieldFlags::PEERING, i.peering);
    flags.set(InfoFieldFlags::CONS_DIR, i.cons_dir);
    sp::InfoField { flags, segment_id: i.seg_id, timestamp: i.timestamp }
}

fn sp_hop(h: &HopField) -> sp::HopField {
    let mut flags = HopFieldFlags::empty();
    flags.set(HopFieldFlags::CONS_INGRESS_ROUTER_ALERT, h.ingress_alert);
    flags.set(HopFieldFlags::CONS_EGRESS_ROUTER_ALERT, h.egress_alert);
    sp::HopField {
        flags,
        expiration_units: h.exp_time,
        cons_ingress: h.cons_ingress,
        cons_egress: h.cons_egress,
        mac: HopFieldMac(h.mac),
    }
}

/// The same path as a sciparse model, built segment by segment.
fn sp_path(p: &StandardPath) -> sp::StandardPath {
    let mut hops = p.hops.iter();
    let segments = p
        .info
        .iter()
        .zip(p.seg_len)
        .map(|(info, n)| sp::Segment {
            info_field: sp_info(info),
            hop_fields: hops.by_ref().take(usize::from(n)).map(sp_hop).collect(),
        })
        .collect();
    sp::StandardPath { current_info_field: p.curr_inf, current_hop_field: p.curr_hf, segments }
}

fn sp_packet(pkt: &ScionPacket, path: &StandardPath) -> ScionRawPacket {
    let h = &pkt.header;
    ScionRawPacket {
        header: ScionPacketHeader {
            common: CommonHeader { traffic_class: h.traffic_class, flow_id: h.flow_id, next_header: h.next_hdr.into() },
            address: AddressHeader {
                dst_ia: SpIa::from_u64(h.dst_ia.to_u64()),
                src_ia: SpIa::from_u64(h.src_ia.to_u64()),
                dst_host_addr: sp_host(h.dst_host),
                src_host_addr: sp_host(h.src_host),
            },
            path: DpPath::Standard(sp_path(path)),
        },
        payload: pkt.payload.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// Field-by-field comparison of aviary values with sciparse models
// ---------------------------------------------------------------------------------------

fn assert_host_eq(av: HostAddr, sp: &WireHostAddr, what: &str) {
    match (av, sp) {
        (HostAddr::V4(a), WireHostAddr::V4(b)) => assert_eq!(a, *b, "{what}"),
        (HostAddr::V6(a), WireHostAddr::V6(b)) => assert_eq!(a, *b, "{what}"),
        (HostAddr::Svc(a), WireHostAddr::Svc(b)) => assert_eq!(a, b.0, "{what}"),
        (a, b) => panic!("{what}: aviary {a:?} vs sciparse {b:?}"),
    }
}

fn assert_header_eq(av: &ScionHeader, sp: &ScionPacketHeader) {
    assert_eq!(av.traffic_class, sp.common.traffic_class, "traffic class");
    assert_eq!(av.flow_id, sp.common.flow_id, "flow id");
    assert_eq!(av.next_hdr, u8::from(sp.common.next_header), "next header");
    assert_eq!(av.path_type, u8::from(sp.path.path_type()), "path type");
    assert_eq!(av.dst_ia.to_u64(), sp.address.dst_ia.to_u64(), "dst ISD-AS");
    assert_eq!(av.src_ia.to_u64(), sp.address.src_ia.to_u64(), "src ISD-AS");
    assert_eq!(av.dst_ia.isd(), sp.address.dst_ia.isd().0, "dst ISD");
    assert_eq!(av.src_ia.asn(), sp.address.src_ia.asn().0, "src AS");
    assert_host_eq(av.dst_host, &sp.address.dst_host_addr, "dst host");
    assert_host_eq(av.src_host, &sp.address.src_host_addr, "src host");
}

fn assert_path_eq(av: &StandardPath, sp: &sp::StandardPath) {
    assert_eq!(av.curr_inf, sp.current_info_field, "CurrINF");
    assert_eq!(av.curr_hf, sp.current_hop_field, "CurrHF");
    assert_eq!(av.seg_len, sp.segment_sizes(), "SegLen");
    assert_eq!(av.info.len(), sp.info_field_count(), "info field count");
    assert_eq!(av.hops.len(), sp.hop_field_count(), "hop field count");
    for (i, (a, b)) in av.info.iter().zip(sp.iter_info_fields()).enumerate() {
        assert_eq!(a.peering, b.flags.peering(), "info {i} peering");
        assert_eq!(a.cons_dir, b.flags.cons_dir(), "info {i} C");
        assert_eq!(b.flags.bits() & !0b11, 0, "info {i} reserved flags");
        assert_eq!(a.seg_id, b.segment_id, "info {i} SegID");
        assert_eq!(a.timestamp, b.timestamp, "info {i} timestamp");
    }
    for (i, (a, b)) in av.hops.iter().zip(sp.iter_hop_fields()).enumerate() {
        assert_eq!(a.exp_time, b.expiration_units, "hop {i} ExpTime");
        assert_eq!(a.cons_ingress, b.cons_ingress, "hop {i} ConsIngress");
        assert_eq!(a.cons_egress, b.cons_egress, "hop {i} ConsEgress");
        assert_eq!(a.mac, b.mac.0, "hop {i} MAC");
        assert_eq!(a.ingress_alert, b.flags.cons_ingress_router_alert(), "hop {i} I flag");
        assert_eq!(a.egress_alert, b.flags.cons_egress_router_alert(), "hop {i} E flag");
        assert_eq!(b.flags.bits() & !0b11, 0, "hop {i} reserved flags");
    }
}

fn sp_standard(h: &ScionPacketHeader) -> &sp::StandardPath {
    h.path.standard().expect("sciparse decoded a non-standard path")
}

// ---------------------------------------------------------------------------------------
// 1 + 2: wire format in both directions
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// aviary emits, sciparse parses (model and view); sciparse re-encodes the same bytes.
    #[test]
    fn aviary_emits_sciparse_parses((pkt, path) in arb_packet()) {
        let bytes = pkt.to_bytes().unwrap();

        let (view, rest) = ScionRawPacketView::try_from_slice(&bytes).unwrap();
        prop_assert!(rest.is_empty());
        prop_assert_eq!(usize::from(view.header().header_len()), pkt.header.len());
        prop_assert_eq!(usize::from(view.header().payload_len()), pkt.payload.len());
        prop_assert_eq!(view.header().path_type(), PathType::Scion);
        prop_assert_eq!(view.header().version(), 0);
        prop_assert_eq!(view.payload(), &pkt.payload[..]);

        let (model, rest) = ScionRawPacket::try_from_slice(&bytes).unwrap();
        prop_assert!(rest.is_empty());
        assert_header_eq(&pkt.header, &model.header);
        assert_path_eq(&path, sp_standard(&model.header));
        prop_assert_eq!(&model.payload, &pkt.payload);
        prop_assert_eq!(model.try_encode_to_vec().unwrap(), bytes);
    }

    /// sciparse emits from its own models, aviary parses; aviary re-emits the same bytes.
    #[test]
    fn sciparse_emits_aviary_parses((pkt, path) in arb_packet()) {
        let model = sp_packet(&pkt, &path);
        let bytes = model.try_encode_to_vec().unwrap();

        let parsed = ScionPacket::parse(&bytes).unwrap();
        let parsed_path = StandardPath::parse(&parsed.header.path).unwrap();
        assert_header_eq(&parsed.header, &model.header);
        assert_path_eq(&parsed_path, sp_standard(&model.header));
        prop_assert_eq!(&parsed.payload, &model.payload);
        prop_assert_eq!(parsed.to_bytes().unwrap(), bytes);
        // Transitively, both sides built the same packet from the same values.
        prop_assert_eq!(parsed, pkt);
    }
}

// ---------------------------------------------------------------------------------------
// 3: hop-field MACs and SegID chaining
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn hop_mac_agrees(key: [u8; 16], seg_id: u16, ts: u32, exp: u8, ing: u16, eg: u16) {
        let ours = HopMacKey::new(&key).hop_mac(seg_id, ts, exp, ing, eg);
        prop_assert_eq!(ours, calculate_hop_mac(seg_id, ts, exp, ing, eg, &key));
        let hop = sp::HopField { expiration_units: exp, cons_ingress: ing, cons_egress: eg, ..sp::HopField::empty() };
        prop_assert_eq!(ours, hop.calculate_mac(seg_id, ts, &key).0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A segment beaconed hop by hop (each AS its own key) carries the MACs and betas
    /// sciparse computes for the same fields.
    #[test]
    fn segment_chaining_agrees(
        seg_id: u16,
        ts: u32,
        ases in prop::collection::vec((any::<[u8; 16]>(), any::<u8>(), any::<u16>(), any::<u16>()), 1..=10),
    ) {
        let mut seg = Segment::new(seg_id, ts);
        for (key, exp, ing, eg) in &ases {
            seg.push_hop(&HopMacKey::new(key), *exp, *ing, *eg);
        }
        let macs: Vec<[u8; 6]> = seg.hops.iter().map(|h| h.mac).collect();
        for (i, (key, exp, ing, eg)) in ases.iter().enumerate() {
            let beta = mac_chaining_beta(seg_id, macs[..i].iter().copied());
            prop_assert_eq!(seg.beta(i), beta, "beta {}", i);
            let want = sp::HopField { expiration_units: *exp, cons_ingress: *ing, cons_egress: *eg, ..sp::HopField::empty() }
                .with_calculated_mac(beta, ts, key);
            prop_assert_eq!(seg.hops[i].mac, want.mac.0, "MAC {}", i);
            prop_assert_eq!((seg.hops[i].exp_time, seg.hops[i].cons_ingress, seg.hops[i].cons_egress), (*exp, *ing, *eg));
        }
    }
}

// ---------------------------------------------------------------------------------------
// 4: path reversal
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reverse_agrees(path in arb_path()) {
        let mut ours = path.clone();
        ours.reverse().unwrap();
        let ours_bytes = ours.to_bytes().unwrap();

        // sciparse model reversal.
        let mut model = sp_path(&path);
        model.try_reverse().unwrap();
        prop_assert_eq!(model.try_encode_to_vec().unwrap(), ours_bytes.clone());

        // sciparse in-place view reversal of the bytes aviary emitted.
        let mut buf = path.to_bytes().unwrap();
        let (view, rest) = StandardPathView::try_from_mut_slice(&mut buf).unwrap();
        prop_assert!(rest.is_empty());
        view.try_reverse().unwrap();
        prop_assert_eq!(&buf, &ours_bytes);

        // Reversing twice is the identity.
        ours.reverse().unwrap();
        prop_assert_eq!(ours, path);
    }
}

// ---------------------------------------------------------------------------------------
// 5: router processing, AS by AS
// ---------------------------------------------------------------------------------------

/// A chain of ASes and the path between them, with real MACs.
struct Chain {
    ases: Vec<AsForwarding>,
    keys: Vec<[u8; 16]>,
    /// Link k joins AS k (interface `links[k].0`) and AS k+1 (interface `links[k].1`).
    links: Vec<(u16, u16)>,
    path: StandardPath,
    now_ns: u64,
}

fn ia(k: usize) -> IsdAsn {
    IsdAsn::new(1 + (k % 2) as u16, 0xff00_0000_0110 + k as u64)
}

/// Builds segments of `(hop count, C flag, SegID, timestamp)` over one chain of ASes: the
/// last hop of a segment and the first of the next belong to the same AS (crossover), as
/// up + core + down segments do. Each segment is beaconed in its construction direction
/// with `Segment::push_hop`, every AS MACing with its own key, then `combine`d.
fn build_chain(segs: &[(usize, bool, u16, u32)], keys: Vec<[u8; 16]>, links: Vec<(u16, u16)>, exp: u8) -> Chain {
    let mut segments = Vec::new();
    let mut as_idx = 0;
    for (s, &(n, cons_dir, seg_id, ts)) in segs.iter().enumerate() {
        if s > 0 {
            as_idx -= 1; // crossover AS: first hop of this segment is the previous one's AS
        }
        // Hop fields in travel order: (AS, ingress, egress); 0 at segment ends.
        let mut travel: Vec<(usize, u16, u16)> = (0..n)
            .map(|j| {
                let k = as_idx + j;
                let ing = if j == 0 { 0 } else { links[k - 1].1 };
                let eg = if j + 1 == n { 0 } else { links[k].0 };
                (k, ing, eg)
            })
            .collect();
        as_idx += n;
        if !cons_dir {
            travel.reverse();
        }
        let mut seg = Segment::new(seg_id, ts);
        for (k, ing, eg) in travel {
            let (ci, ce) = if cons_dir { (ing, eg) } else { (eg, ing) };
            seg.push_hop(&HopMacKey::new(&keys[k]), exp, ci, ce);
        }
        segments.push((seg, cons_dir));
    }
    let refs: Vec<(&Segment, bool)> = segments.iter().map(|(s, c)| (s, *c)).collect();
    let path = combine(&refs).unwrap();
    let ases = (0..as_idx)
        .map(|k| {
            let mut ifs = Vec::new();
            if k > 0 {
                ifs.push(links[k - 1].1);
            }
            if k < links.len() {
                ifs.push(links[k].0);
            }
            AsForwarding::new(ia(k), HopMacKey::new(&keys[k]), ifs)
        })
        .collect();
    let now_ns = u64::from(segs.iter().map(|s| s.3).min().unwrap()) * 1_000_000_000 + 1;
    Chain { ases, keys, links, path, now_ns }
}

enum SpAction {
    Egress(u16),
    Local,
}

/// sciparse's view of one AS: ingress advance (with SegID update and MAC check, and the
/// crossover) followed by the egress advance, both with its `HopMacValidator`.
fn sciparse_process(pkt: &mut [u8], key: [u8; 16], ingress: u16) -> SpAction {
    let (view, _) = ScionRawPacketView::try_from_mut_slice(pkt).unwrap();
    let ScionDpPathViewRefMut::Standard(path) = view.header_mut().path_mut() else {
        panic!("not a standard path");
    };
    let validator = HopMacValidator { key };
    let out = path
        .advance_ingress_with_validator(validator.clone(), ingress == 0)
        .unwrap()
        .into_result()
        .unwrap_or_else(|(o, e)| panic!("sciparse ingress validation failed: {e:?} ({o:?})"));
    if ingress != 0 {
        assert_eq!(out.ingress_interface, ingress, "sciparse ingress interface");
    }
    assert!(!out.scmp_alert);
    match out.action {
        IngressAdvanceAction::ForwardLocal => SpAction::Local,
        IngressAdvanceAction::ContinueEgress { egress_if } => {
            let eg = path
                .advance_egress_with_validator(validator)
                .unwrap()
                .into_result()
                .unwrap_or_else(|(o, e)| panic!("sciparse egress validation failed: {e} ({o:?})"));
            assert_eq!(eg.egress_interface, egress_if, "sciparse egress at ingress vs at egress");
            SpAction::Egress(eg.egress_interface)
        }
    }
}

/// Walks `pkt` through the ASes of `route` (`(AS, ingress, expected egress)`, egress 0 for
/// local delivery) with aviary on one copy and sciparse on another; after every AS the two
/// packets must be byte-identical and the decisions equal. Returns the delivered packet.
fn walk(chain: &Chain, pkt: Vec<u8>, route: &[(usize, u16, u16)]) -> Vec<u8> {
    let (mut ours, mut theirs) = (pkt.clone(), pkt);
    for &(k, ingress, want) in route {
        let verdict = forward(&chain.ases[k], &mut ours, ingress, chain.now_ns);
        let action = sciparse_process(&mut theirs, chain.keys[k], ingress);
        let path = StandardPath::parse(ScionPacket::parse(&ours).unwrap().header.path.as_slice()).unwrap();
        assert_eq!(ours, theirs, "packets differ after AS {k} ({verdict:?}); aviary path {path:?}");
        match (verdict, action) {
            (Verdict::Forward { egress, .. }, SpAction::Egress(e)) => {
                assert_eq!((egress, e), (want, want), "egress at AS {k}");
            }
            (Verdict::Deliver, SpAction::Local) => assert_eq!(want, 0, "early delivery at AS {k}"),
            (v, SpAction::Egress(e)) => panic!("AS {k}: aviary {v:?}, sciparse egress {e}"),
            (v, SpAction::Local) => panic!("AS {k}: aviary {v:?}, sciparse local delivery"),
        }
    }
    ours
}

fn packet(src: usize, dst: usize, path: &StandardPath) -> Vec<u8> {
    let header = ScionHeader {
        traffic_class: 0xb8,
        flow_id: 0xabcde,
        next_hdr: 17,
        path_type: path_type::SCION,
        dst_ia: ia(dst),
        src_ia: ia(src),
        dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, dst as u8)),
        src_host: HostAddr::V6(Ipv6Addr::LOCALHOST),
        path: path.to_bytes().unwrap(),
    };
    ScionPacket { header, payload: b"interop".to_vec() }.to_bytes().unwrap()
}

/// Forward walk from the first AS to the last, then the reply on the reversed path back.
fn walk_there_and_back(chain: &Chain) {
    let n = chain.ases.len();
    let route: Vec<_> = (0..n)
        .map(|k| {
            let ing = if k == 0 { 0 } else { chain.links[k - 1].1 };
            let eg = if k + 1 == n { 0 } else { chain.links[k].0 };
            (k, ing, eg)
        })
        .collect();
    let delivered = walk(chain, packet(0, n - 1, &chain.path), &route);

    // The destination replies on the reversed path; the SegIDs the routers left behind are
    // exactly what the way back needs.
    let mut back = StandardPath::parse(&ScionPacket::parse(&delivered).unwrap().header.path).unwrap();
    back.reverse().unwrap();
    let route: Vec<_> = (0..n)
        .rev()
        .map(|k| {
            let ing = if k + 1 == n { 0 } else { chain.links[k].0 };
            let eg = if k == 0 { 0 } else { chain.links[k - 1].1 };
            (k, ing, eg)
        })
        .collect();
    walk(chain, packet(n - 1, 0, &back), &route);
}

#[test]
fn router_up_down_crossover() {
    // A (leaf) -> B (core) -> C (leaf): up-segment B->A used against construction direction,
    // down-segment B->C in construction direction; B crosses over.
    let keys = vec![[0x11; 16], [0x22; 16], [0x33; 16]];
    let chain = build_chain(
        &[(2, false, 0x1234, 1_700_000_000), (2, true, 0xbeef, 1_700_000_100)],
        keys,
        vec![(7, 3), (9, 4)],
        63,
    );
    assert_eq!(chain.ases.len(), 3);
    assert_eq!(chain.path.seg_len, [2, 2, 0]);
    walk_there_and_back(&chain);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Random chains: 1–3 segments of 2–5 hops in random directions, random SegIDs,
    /// timestamps, keys and interface ids.
    #[test]
    fn router_walk_agrees(
        segs in prop::collection::vec((2usize..=5, any::<bool>(), any::<u16>(), 1_500_000_000u32..2_000_000_000), 1..=3),
        exp in any::<u8>(),
        seed in prop::collection::vec((any::<[u8; 16]>(), 1u16..=u16::MAX, 1u16..=u16::MAX), 13),
    ) {
        let n_as = segs.iter().map(|s| s.0).sum::<usize>() - (segs.len() - 1);
        let keys = seed.iter().take(n_as).map(|s| s.0).collect();
        let links = seed.iter().take(n_as - 1).map(|s| (s.1, s.2)).collect();
        let chain = build_chain(&segs, keys, links, exp);
        walk_there_and_back(&chain);
    }
}

/// One AS's standard forwarding of one packet (a fresh forwarder: standard SCION keeps no state).
fn forward(f: &AsForwarding, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
    aviary_scion::StandardForwarder::standard(f.clone()).process(pkt, ingress, now_ns)
}
