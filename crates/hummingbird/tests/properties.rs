//! Property tests of the Hummingbird router and source (the path's own properties are in
//! `path_properties.rs`):
//!
//! - no input makes the parser, the router or the source panic: arbitrary bytes, a valid
//!   header around an arbitrary path, and valid stamped packets with a byte changed;
//! - a stamped packet with a single bit flipped in its SCION header or path never gets
//!   priority at a reserved hop, unless the bit is one that no MAC covers at that hop (see
//!   [`unauthenticated`] for the exact list and why each entry is there).

#[path = "../../scion/tests/strategies/mod.rs"]
mod strategies;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

use aviary_hummingbird::crypto::ResInfo;
use aviary_hummingbird::path::{MetaHdr, FLYOVER_BIT, FLYOVER_LINES, HOP_LINES, META_LEN};
use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{HbirdPath, Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::path::{num_info_fields, INFO_LEN};
use aviary_scion::{HostAddr, InfoField, IsdAsn, ScionHeader, ScionPacket, ScionView};
use proptest::prelude::*;
use proptest::sample::Index;

use strategies::{arb_host, raw_packet};

const NOW_S: u32 = 1_750_000_000;
const NS: u64 = 1_000_000_000;
const NOW_NS: u64 = NOW_S as u64 * NS;

// ---------------------------------------------------------------------------------------
// Chains, reservations and stamped packets
// ---------------------------------------------------------------------------------------

/// Chains of 2 to 6 ASes (the key derivations are slow, so they are made once).
fn chain(n: usize) -> &'static Chain {
    static CHAINS: OnceLock<Vec<Chain>> = OnceLock::new();
    &CHAINS.get_or_init(|| (2..=6).map(|n| Chain::new(n, NOW_S - 60)).collect())[n - 2]
}

fn params() -> RouterParams {
    RouterParams { max_res_id: 4095, ..RouterParams::default() }
}

/// A fresh router (fresh policing state) of AS `i`.
fn router(c: &Chain, i: usize) -> Router {
    c.router(i, params())
}

/// What a reserved packet is made of.
#[derive(Clone, Debug)]
struct Spec {
    n: usize,
    /// Per AS: `Some((res_id, bw, started_s_ago, duration_s))` for a flyover.
    res: Vec<Option<(u32, u16, u32, u16)>>,
    dst_host: HostAddr,
    src_host: HostAddr,
    traffic_class: u8,
    flow_id: u32,
    payload_len: usize,
    /// Sending time after `NOW_NS`, and the delay to every router.
    send_off_ns: u64,
    delay_ns: u64,
}

fn arb_res() -> impl Strategy<Value = (u32, u16, u32, u16)> {
    // Rates of at least ~11 Mbit/s with a 50 ms burst admit any first packet; the
    // reservation is active from before sending until after the last router.
    (0u32..=4095, 300u16..=1023, 0u32..=3600)
        .prop_flat_map(|(id, bw, ago)| ((ago + 3) as u16..=u16::MAX).prop_map(move |d| (id, bw, ago, d)))
}

/// A reserved packet: 2–6 ASes, flyovers on a random non-empty subset of them.
fn arb_spec() -> impl Strategy<Value = Spec> {
    (2usize..=6)
        .prop_flat_map(|n| {
            (Just(n), prop::collection::vec(proptest::option::of(arb_res()), n), arb_res(), any::<Index>())
        })
        .prop_map(|(n, mut res, one, idx)| {
            if res.iter().all(Option::is_none) {
                res[idx.index(n)] = Some(one);
            }
            (n, res)
        })
        .prop_flat_map(|(n, res)| {
            (Just(n), Just(res), (arb_host(), arb_host(), any::<u8>(), 0u32..=0xf_ffff), (0usize..1400, 0..NS, 0..=NS))
        })
        .prop_map(|(n, res, (dst_host, src_host, traffic_class, flow_id), (payload_len, send, delay))| Spec {
            n,
            res,
            dst_host,
            src_host,
            traffic_class,
            flow_id,
            payload_len,
            send_off_ns: send,
            delay_ns: delay,
        })
}

fn reservations(s: &Spec) -> Vec<(usize, Reservation)> {
    let c = chain(s.n);
    s.res
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.map(|(id, bw, ago, d)| (i, c.grant(i, id, bw, NOW_S - ago, d))))
        .collect()
}

/// The unstamped template, with the spec's header fields.
fn template(s: &Spec) -> Vec<u8> {
    let c = chain(s.n);
    let pkt = c.hbird_packet(&reservations(s), NOW_S, s.payload_len).unwrap();
    let mut p = ScionPacket::parse(&pkt).unwrap();
    p.header.dst_host = s.dst_host;
    p.header.src_host = s.src_host;
    p.header.traffic_class = s.traffic_class;
    p.header.flow_id = s.flow_id;
    p.to_bytes().unwrap()
}

fn source(s: &Spec) -> Source {
    let res: Vec<Reservation> = reservations(s).into_iter().map(|r| r.1).collect();
    Source::new(&template(s), &res).unwrap()
}

/// The stamped packet and the time at which every router sees it.
fn stamped(s: &Spec) -> (Vec<u8>, u64) {
    let mut pkt = template(s);
    source(s).stamp(&mut pkt, NOW_NS + s.send_off_ns).unwrap();
    (pkt, NOW_NS + s.send_off_ns + s.delay_ns)
}

/// Walks the packet through ASes `0..k` (fresh routers), checking their verdicts.
fn arrive_at(s: &Spec, pkt: &mut [u8], k: usize, now: u64) {
    let c = chain(s.n);
    for i in 0..k {
        let class = if s.res[i].is_some() { Admission::RESERVED } else { Admission::UNAUTHENTICATED };
        let v = router(c, i).process(pkt, Chain::forward_ingress(i), now);
        assert_eq!(v, Verdict::Forward { egress: IF_NEXT, admission: class }, "AS {i} of {s:?}");
    }
}

/// The verdict of a fresh router of AS `k` for `pkt`.
fn verdict_at(s: &Spec, pkt: &[u8], k: usize, now: u64) -> Verdict {
    let mut p = pkt.to_vec();
    router(chain(s.n), k).process(&mut p, Chain::forward_ingress(k), now)
}

/// Where the router of the current hop reads its hop fields.
struct HopLayout {
    path_off: usize,
    ninf: usize,
    ci: usize,
    /// Line of the current hop field and its length in lines.
    ch: usize,
    hop_lines: usize,
    /// At a segment crossover, the line of the next hop field (also this AS's).
    next: Option<usize>,
    /// Whether the current hop field would be a peering hop if the current info field's
    /// peering flag were set on this (two-segment) path.
    peering_hop: bool,
}

fn layout(pkt: &[u8]) -> HopLayout {
    let v = ScionView::new_checked(pkt).unwrap();
    let path = v.path();
    let meta = MetaHdr::parse(path).unwrap();
    let ninf = num_info_fields(meta.seg_len).unwrap();
    let (ci, ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
    let seg_end = |s: usize| meta.seg_len[..=s].iter().map(|l| usize::from(*l)).sum::<usize>();
    let hop_base = META_LEN + INFO_LEN * ninf;
    let hop_lines = if path[hop_base + 4 * ch] & FLYOVER_BIT != 0 { FLYOVER_LINES } else { HOP_LINES };
    let peering = InfoField::parse(&path[META_LEN + INFO_LEN * ci..]).unwrap().peering;
    assert!(!peering);
    let next = (ch + hop_lines == seg_end(ci) && ci + 1 < ninf).then_some(ch + hop_lines);
    let peering_hop = ninf == 2 && (ch + hop_lines == seg_end(0) || ch == seg_end(0));
    HopLayout { path_off: v.path_range().start, ninf, ci, ch, hop_lines, next, peering_hop }
}

/// Why the router of the packet's current hop may forward the packet with bit `mask` of
/// byte `i` flipped in priority: `None` for every bit that it must authenticate or check.
///
/// The entries are the bits that no MAC covers at this hop:
/// - TrafficClass, FlowID, NextHdr, RSV of the common header (not covered by design);
/// - the host addresses, and a DT/ST flip between IPv4 (0b0000) and SVC (0b0100), which
///   keeps the address length (the host addresses are not authenticated by design, and
///   neither is their type);
/// - SrcIA: the FlyoverMAC input is `DstIA | PktLen | ResStartOffset | HighResTS`, and
///   the hop-field MAC does not cover addresses; a transit AS only checks that SrcIA is
///   not its own (the first hop that it is);
/// - the reserved bit of the meta header and the reserved flag bits / RSV bytes of info
///   and hop fields (dropped on parse);
/// - the router-alert flags of a hop field: SCION's hop-field MAC does not cover them;
/// - the peering flag of the current info field on a two-segment path when the current
///   hop field is not one of the two peering hops: as in scionproto's `determinePeer`,
///   the flag only takes effect there (on other paths it makes the packet malformed);
/// - info and hop fields that another AS processes (the current AS cannot verify them,
///   their owner does), including the peering flag of the next segment's info field at
///   a crossover, which this AS does not read.
fn unauthenticated(pkt: &[u8], i: usize, mask: u8) -> Option<&'static str> {
    let l = layout(pkt);
    if i < l.path_off {
        return match i {
            0 if mask & 0xf0 != 0 => None,
            0..=3 => Some("TrafficClass/FlowID"),
            4 => Some("NextHdr"),
            5..=8 => None,
            9 => {
                let (dt, st) = (pkt[9] >> 4, pkt[9] & 0xf);
                if (mask == 0x40 && (dt == 0 || dt == 4)) || (mask == 0x04 && (st == 0 || st == 4)) {
                    Some("host address type IPv4 <-> SVC (same length)")
                } else {
                    None
                }
            }
            10 | 11 => Some("RSV"),
            12..=19 => None,
            20..=27 => Some("SrcIA"),
            _ => Some("host address"),
        };
    }
    let off = i - l.path_off;
    if off < META_LEN {
        return (off == 1 && mask == 0x20).then_some("meta header reserved bit");
    }
    let hop_base = META_LEN + INFO_LEN * l.ninf;
    if off < hop_base {
        let (j, b) = ((off - META_LEN) / INFO_LEN, (off - META_LEN) % INFO_LEN);
        return if (b == 0 && mask & 0xfc != 0) || b == 1 {
            Some("info field reserved bits")
        } else if j == l.ci {
            (b == 0 && mask == 0x02 && l.ninf == 2 && !l.peering_hop)
                .then_some("peering flag of the current info field away from the peering hops")
        } else if l.next.is_some() && j == l.ci + 1 {
            (b == 0 && mask == 0x02).then_some("peering flag of the next segment's info field")
        } else {
            Some("info field of another AS's segment")
        };
    }
    let line = (off - hop_base) / 4;
    let own = if (l.ch..l.ch + l.hop_lines).contains(&line) {
        Some(l.ch)
    } else {
        l.next.filter(|n| (*n..*n + HOP_LINES).contains(&line))
    };
    match own {
        Some(start) if off == hop_base + 4 * start => {
            if mask & 0x7c != 0 {
                Some("hop field reserved flag")
            } else if mask & 0x03 != 0 {
                Some("router-alert flag of this AS's hop field")
            } else {
                None
            }
        }
        Some(_) => None,
        None => Some("hop field of another AS"),
    }
}

/// Flips every bit of the header and path at AS `k` and returns, for every bit whose
/// flip still gets priority, its byte, mask and the reason it may (`None`: it may not).
fn priority_flips(s: &Spec, k: usize) -> Vec<(usize, u8, Option<&'static str>)> {
    let (mut pkt, now) = stamped(s);
    arrive_at(s, &mut pkt, k, now);
    let hdr_len = ScionView::new_checked(&pkt[..]).unwrap().hdr_len();
    let mut out = Vec::new();
    for i in 0..hdr_len {
        for bit in 0..8 {
            let mask = 1u8 << bit;
            let mut p = pkt.clone();
            p[i] ^= mask;
            if let Verdict::Forward { admission: Admission::RESERVED, .. } = verdict_at(s, &p, k, now) {
                out.push((i, mask, unauthenticated(&pkt, i, mask)));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// No panics
// ---------------------------------------------------------------------------------------

fn arb_reservation() -> impl Strategy<Value = Reservation> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u16>()),
        (prop_oneof![NOW_S - 3600..NOW_S, any::<u32>()], any::<u16>(), any::<[u8; 16]>()),
    )
        .prop_map(|((ingress, egress, res_id, bw), (start, duration, ak))| Reservation {
            info: ResInfo { ingress, egress, res_id, bw, start, duration },
            ak,
        })
}

/// Random path bytes whose segment lengths match their length (so that the path parser,
/// the router and the source get past the length checks), or any number of random
/// 4-byte words (also fewer than the meta header has).
fn arb_garbage_path() -> impl Strategy<Value = Vec<u8>> {
    let consistent = (
        prop_oneof![
            3 => (1u8..=20, 0u8..=20, 0u8..=20),
            1 => (1u8..=127, 0u8..=127, 0u8..=127),
        ],
        (any::<u8>(), any::<u8>()),
        prop::collection::vec(any::<u8>(), 1600),
    )
        .prop_map(|((a, b, c), (ci, ch), fill)| {
            let seg_len = if b == 0 { [a, 0, 0] } else { [a, b, c] };
            let ninf = num_info_fields(seg_len).unwrap();
            let lines: usize = seg_len.iter().map(|l| usize::from(*l)).sum();
            let mut path = fill[..META_LEN + INFO_LEN * ninf + 4 * lines].to_vec();
            let meta = MetaHdr { curr_inf: ci % 4, curr_hf: ch, seg_len, ..MetaHdr::parse(&path).unwrap() };
            path[..4].copy_from_slice(&meta.encode_word0());
            path
        });
    let words = prop::collection::vec(any::<u32>(), 0..=60)
        .prop_map(|w| w.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>());
    prop_oneof![3 => consistent, 1 => words]
}

/// A valid SCION header (random host address kinds, mostly path type 5) around a
/// garbage path.
fn arb_garbage_hbird_packet() -> impl Strategy<Value = Vec<u8>> {
    (
        (arb_host(), arb_host(), any::<u64>(), any::<u64>()),
        prop_oneof![6 => Just(path_type::HUMMINGBIRD), 1 => any::<u8>()],
        arb_garbage_path(),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|((dst_host, src_host, dst, src), ptype, mut path, payload)| {
            // Keep the header within 1020 bytes.
            let max = 1020 - 28 - dst_host.wire_len() - src_host.wire_len();
            path.truncate(max);
            raw_packet((dst_host, src_host), (dst, src), ptype, path, payload)
        })
}

/// Arbitrary bytes, or a valid header around a garbage path.
fn arb_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..2000),
        3 => arb_garbage_hbird_packet(),
    ]
}

/// Mostly around the time the test reservations are valid, sometimes any time.
fn arb_now() -> impl Strategy<Value = u64> {
    prop_oneof![3 => NOW_NS - 10 * NS..NOW_NS + 100 * NS, 1 => any::<u64>()]
}

/// The path parser and the routers on packet or path bytes; none of it may panic.
fn exercise(bytes: &[u8], at: usize, ingress: u16, now: u64) {
    let path = ScionView::new_checked(bytes).map_or(0..0, |v| v.path_range());
    for b in [bytes, &bytes[path]] {
        if let Ok(mut p) = HbirdPath::parse(b) {
            let _ = p.curr_hop_index();
            let _ = p.to_standard();
            if let Ok(e) = p.to_bytes() {
                assert_eq!(HbirdPath::parse(&e).as_ref(), Ok(&p));
            }
            let _ = p.reverse();
        }
    }
    let c = chain(4);
    let _ = router(c, at % 4).process(&mut bytes.to_vec(), ingress, now);
}

/// `Source::new` on `template`, then stamping the template; none of it may panic.
fn exercise_source(template: &[u8], res: &[Reservation], now: u64) {
    if let Ok(mut src) = Source::new(template, res) {
        let _ = src.stamp(&mut template.to_vec(), now);
    }
}

/// The Spec of a valid reserved packet of the four-AS chain.
fn four_as_spec() -> Spec {
    Spec {
        n: 4,
        res: vec![Some((1, 600, 10, 3600)), None, Some((2, 600, 10, 3600)), None],
        dst_host: HostAddr::Svc(1),
        src_host: HostAddr::V4(Ipv4Addr::LOCALHOST),
        traffic_class: 0,
        flow_id: 0,
        payload_len: 100,
        send_off_ns: 0,
        delay_ns: 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary bytes and garbage paths through the path parser and the router.
    #[test]
    fn parser_and_router_do_not_panic(
        bytes in arb_input(),
        at: usize,
        ingress in prop_oneof![0u16..4, any::<u16>()],
        now in arb_now(),
    ) {
        exercise(&bytes, at, ingress, now);
    }

    /// A stamped packet walks its chain; a random byte changed before a random AS (with a
    /// random ingress and time there, or the right ones) makes nothing panic.
    #[test]
    fn mutated_valid_packets_do_not_panic(
        s in arb_spec(),
        at: Index,
        pos: Index,
        xor in 1u8..=255,
        ingress in prop_oneof![Just(None), any::<u16>().prop_map(Some)],
        now in prop_oneof![Just(None), any::<u64>().prop_map(Some)],
    ) {
        let (mut pkt, t) = stamped(&s);
        let k = at.index(s.n);
        arrive_at(&s, &mut pkt, k, t);
        let i = pos.index(pkt.len());
        pkt[i] ^= xor;
        let now = now.unwrap_or(t);
        exercise(&pkt, k, ingress.unwrap_or(Chain::forward_ingress(k)), now);
        let c = chain(s.n);
        for j in k..s.n {
            let ingress = ingress.unwrap_or(Chain::forward_ingress(j));
            if !matches!(router(c, j).process(&mut pkt, ingress, now), Verdict::Forward { .. }) {
                break;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `Source::new` on arbitrary bytes and garbage paths, then stamping the template.
    #[test]
    fn source_new_does_not_panic(
        bytes in arb_input(),
        res in prop::collection::vec(arb_reservation(), 0..4),
        now in arb_now(),
    ) {
        exercise_source(&bytes, &res, now);
    }

    /// A valid source stamping arbitrary bytes and garbage paths.
    #[test]
    fn stamping_does_not_panic(bytes in arb_input(), now in arb_now()) {
        let mut b = bytes;
        let _ = source(&four_as_spec()).stamp(&mut b, now);
    }

    /// A reserved template with a random byte changed: `Source::new` on it, and stamping
    /// it with the source of the unchanged template.
    #[test]
    fn source_on_mutated_templates_does_not_panic(
        s in arb_spec(),
        pos: Index,
        xor in 1u8..=255,
        now in arb_now(),
    ) {
        let mut t = template(&s);
        let i = pos.index(t.len());
        t[i] ^= xor;
        let res: Vec<Reservation> = reservations(&s).into_iter().map(|r| r.1).collect();
        exercise_source(&t, &res, now);
        let _ = source(&s).stamp(&mut t, now);
    }
}

/// A packet with a Hummingbird path of the given meta word 0 and hop-field lines (each
/// line `[first byte, 0, 0, 0]`); one info field per segment.
fn hbird_bytes(seg_len: [u8; 3], lines: &[u8]) -> Vec<u8> {
    let ninf = num_info_fields(seg_len).unwrap();
    let mut path = vec![0u8; META_LEN + INFO_LEN * ninf];
    path[..4].copy_from_slice(&MetaHdr { seg_len, ..MetaHdr::default() }.encode_word0());
    path[4..8].copy_from_slice(&NOW_S.to_be_bytes());
    for l in lines {
        path.extend([*l, 0, 0, 0]);
    }
    ScionPacket {
        header: ScionHeader {
            traffic_class: 0,
            flow_id: 0,
            next_hdr: 17,
            path_type: path_type::HUMMINGBIRD,
            dst_ia: IsdAsn::new(1, 2),
            src_ia: IsdAsn::new(1, 1),
            dst_host: HostAddr::V4(Ipv4Addr::LOCALHOST),
            src_host: HostAddr::V4(Ipv4Addr::LOCALHOST),
            path,
        },
        payload: Vec::new(),
    }
    .to_bytes()
    .unwrap()
}

/// Regression: a one-line hop area whose only line has the flyover bit; `Source::new`
/// used to read 12 bytes of a hop field that has 4 and panic ("range start index 26 out
/// of range for slice of length 24").
#[test]
fn source_new_on_a_truncated_flyover() {
    let t = hbird_bytes([1, 0, 0], &[FLYOVER_BIT]);
    let res = Reservation { info: ResInfo::default(), ak: [0; 16] };
    assert!(Source::new(&t, &[res]).is_err());
}

/// Regression: three lines of which the first has the flyover bit; `Source::new` used to
/// accept it (it reads only the 12-byte hop field), and stamping the template then wrote
/// the 20-byte flyover hop field past the end of the path ("range end index 40 out of
/// range for slice of length 32").
#[test]
fn source_stamp_on_a_truncated_flyover() {
    let mut t = hbird_bytes([3, 0, 0], &[FLYOVER_BIT, 0, 0]);
    let res = Reservation { info: ResInfo { start: NOW_S - 10, duration: 60, ..ResInfo::default() }, ak: [0; 16] };
    if let Ok(mut src) = Source::new(&t, &[res]) {
        assert!(src.stamp(&mut t, NOW_NS).is_err());
    }
}

/// Regression: a valid source stamping a packet whose path is empty (or shorter than the
/// template's) used to panic in `MetaHdr::decode` or when writing a flyover.
#[test]
fn source_stamp_on_a_short_path() {
    let mut src = source(&four_as_spec());
    let mut p = ScionPacket::parse(&template(&four_as_spec())).unwrap();
    p.header.path.clear();
    let mut pkt = p.to_bytes().unwrap();
    assert!(src.stamp(&mut pkt, NOW_NS).is_err());
    let mut p = ScionPacket::parse(&template(&four_as_spec())).unwrap();
    p.header.path.truncate(40);
    let mut pkt = p.to_bytes().unwrap();
    assert!(src.stamp(&mut pkt, NOW_NS).is_err());
}

// ---------------------------------------------------------------------------------------
// Bit flips never earn priority
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A stamped packet gets priority (or is delivered) at every reserved hop; with one
    /// bit of its header or path flipped it does not, unless the bit is unauthenticated.
    #[test]
    fn bit_flips_never_earn_priority(s in arb_spec(), at: Index, pos: Index, bit in 0u8..8) {
        let reserved: Vec<usize> = (0..s.n).filter(|i| s.res[*i].is_some()).collect();
        let k = *at.get(&reserved);
        let (mut pkt, now) = stamped(&s);
        arrive_at(&s, &mut pkt, k, now);
        let expected = if k + 1 == s.n { Verdict::Deliver } else { Verdict::reserved(IF_NEXT) };
        prop_assert_eq!(verdict_at(&s, &pkt, k, now), expected);

        let hdr_len = ScionView::new_checked(&pkt[..]).unwrap().hdr_len();
        let i = pos.index(hdr_len);
        let mask = 1u8 << bit;
        let mut p = pkt.clone();
        p[i] ^= mask;
        let v = verdict_at(&s, &p, k, now);
        if matches!(v, Verdict::Forward { admission: Admission::RESERVED, .. }) {
            let why = unauthenticated(&pkt, i, mask);
            prop_assert!(
                why.is_some() && k + 1 < s.n,
                "flipping bit {:#04x} of byte {} (path at {}) at AS {} gives {:?}",
                mask, i, layout(&pkt).path_off, k, v
            );
        }
    }
}

/// Every bit of the header and path, at every AS, for chains of 2 to 5 ASes with
/// flyovers on every AS: the only flips that keep priority are unauthenticated bits, and
/// the destination never forwards. Prints which unauthenticated fields keep priority.
#[test]
fn exhaustive_bit_flips_at_every_reserved_hop() {
    let mut kept: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut bad = Vec::new();
    for n in 2..=5 {
        let s = Spec {
            n,
            res: (0..n).map(|i| Some((i as u32 + 1, 700, 30, 3600))).collect(),
            dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            src_host: HostAddr::Svc(2),
            traffic_class: 0,
            flow_id: 1,
            payload_len: 500,
            send_off_ns: 250_000_000,
            delay_ns: 100_000_000,
        };
        for k in 0..n {
            for (i, mask, why) in priority_flips(&s, k) {
                match why {
                    Some(w) if k + 1 < n => *kept.entry(w).or_default() += 1,
                    _ => bad.push((n, k, i, mask)),
                }
            }
        }
    }
    eprintln!("single-bit flips that keep priority, by unauthenticated field: {kept:#?}");
    assert!(bad.is_empty(), "(chain length, AS, byte, mask) of flips that keep priority: {bad:?}");
}
