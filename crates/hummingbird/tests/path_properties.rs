//! Property tests of the Hummingbird path (type 5):
//!
//! - parse/emit round trips of arbitrary valid paths mixing hop and flyover hop fields, and
//!   parse and emit accept the same paths;
//! - reversal yields a flyover-free path that matches the reversal of the standard path.

#[path = "../../scion/tests/strategies/mod.rs"]
mod strategies;

use aviary_hummingbird::path::{
    field, Flyover, HbirdHop, HbirdPathError, MetaHdr, FLYOVER_BIT, FLYOVER_LINES, HOP_LINES, MAX_SEG_LINES, META_LEN,
};
use aviary_hummingbird::path::{MAX_COUNTER, MAX_MILLIS, MAX_RES_ID};
use aviary_hummingbird::{HbirdPath, HbirdPathView};
use aviary_scion::forwarding::HopLayout;
use aviary_scion::wire::path::{num_info_fields, segment_of, INFO_LEN};
use aviary_scion::InfoField;
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------------------
// Strategies for paths
// ---------------------------------------------------------------------------------------

use strategies::{arb_hop, arb_info};

fn arb_flyover() -> impl Strategy<Value = Flyover> {
    (0..=MAX_RES_ID, 0u16..=0x3ff, any::<u16>(), any::<u16>())
        .prop_map(|(res_id, bw, res_start_offset, res_duration)| Flyover { res_id, bw, res_start_offset, res_duration })
}

fn arb_hbird_hop() -> impl Strategy<Value = HbirdHop> {
    (arb_hop(), proptest::option::of(arb_flyover())).prop_map(|(hop, flyover)| HbirdHop { hop, flyover })
}

/// One segment: 1 to 42 hop fields of either kind, cut to at most 127 lines. Short
/// segments are more likely, so that many paths stay within the 8-bit CurrHF.
fn arb_segment() -> impl Strategy<Value = Vec<HbirdHop>> {
    prop_oneof![
        3 => prop::collection::vec(arb_hbird_hop(), 1..=8),
        1 => prop::collection::vec(arb_hbird_hop(), 1..=42),
    ]
    .prop_map(|hops| {
        let mut lines = 0;
        hops.into_iter()
            .take_while(|h| {
                lines += h.lines();
                lines <= MAX_SEG_LINES
            })
            .collect()
    })
}

/// Line offset and segment of every hop field, in path order.
fn hop_lines(segments: &[Vec<HbirdHop>]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut line = 0;
    for (s, seg) in segments.iter().enumerate() {
        for h in seg {
            out.push((line, s));
            line += h.lines();
        }
    }
    out
}

/// A path as the brief of the wire format allows it: 1–3 segments of at most 127 lines
/// each, CurrHF ≤ 255 on a hop field of segment CurrINF. Hop fields after line 255 may
/// exist (they are unreachable by CurrHF).
fn arb_wire_path() -> impl Strategy<Value = HbirdPath> {
    (
        prop::collection::vec((arb_info(), arb_segment()), 1..=3),
        any::<u32>(),
        0..=MAX_MILLIS,
        0..=MAX_COUNTER,
        any::<Index>(),
    )
        .prop_map(|(segs, base_ts, millis, counter, idx)| {
            let (info, segments): (Vec<_>, Vec<_>) = segs.into_iter().unzip();
            let reachable: Vec<(usize, usize)> = hop_lines(&segments).into_iter().filter(|(l, _)| *l <= 255).collect();
            let (line, seg) = *idx.get(&reachable);
            HbirdPath { curr_inf: seg as u8, curr_hf: line as u8, base_ts, millis, counter, info, segments }
        })
}

/// The checks of [`HbirdPathView::new_checked`] as the rule states them, one after the other
/// (CurrHF in CurrINF's segment as [`segment_of`] names it): the view's result, or its error.
fn view_reference(b: &[u8]) -> Result<(usize, usize, usize, bool), HbirdPathError> {
    if b.len() < META_LEN {
        return Err(HbirdPathError::Truncated);
    }
    let word = u32::from_be_bytes(b[field::meta::WORD].try_into().unwrap());
    let (curr_inf, curr_hf, seg_len) = MetaHdr::decode_word0(word);
    let num_inf = num_info_fields(seg_len).ok().filter(|n| *n > 0).ok_or(HbirdPathError::Truncated)?;
    let lines: usize = seg_len.iter().map(|l| usize::from(*l)).sum();
    let hop_base = META_LEN + INFO_LEN * num_inf;
    if b.len() != hop_base + 4 * lines {
        return Err(HbirdPathError::Truncated);
    }
    let (ci, ch) = (usize::from(curr_inf), usize::from(curr_hf));
    if ch >= lines || ci >= num_inf || segment_of(seg_len, ch) != ci {
        return Err(HbirdPathError::IndexOutOfRange);
    }
    let curr_off = hop_base + 4 * ch;
    let flyover = b[curr_off + field::flyover::FLAGS] & FLYOVER_BIT != 0;
    let width = if flyover { FLYOVER_LINES } else { HOP_LINES };
    let seg_end: usize = seg_len[..=ci].iter().map(|l| usize::from(*l)).sum();
    if ch + width > seg_end {
        return Err(HbirdPathError::Misaligned(ci));
    }
    Ok((ci, ch, curr_off, flyover))
}

/// A path that [`HbirdPath::validate`] accepts: no hop field beyond line 255.
fn arb_path() -> impl Strategy<Value = HbirdPath> {
    arb_wire_path().prop_filter("a hop field beyond line 255", |p| hop_lines(&p.segments).last().unwrap().0 <= 255)
}

/// Encodes a path without [`HbirdPath::validate`], as a sender that does not use aviary
/// could put it on the wire.
fn encode_unchecked(p: &HbirdPath) -> Vec<u8> {
    let mut out = vec![0u8; p.len()];
    MetaHdr {
        curr_inf: p.curr_inf,
        curr_hf: p.curr_hf,
        seg_len: p.seg_len(),
        base_ts: p.base_ts,
        millis: p.millis,
        counter: p.counter,
    }
    .emit(&mut out);
    let mut off = META_LEN;
    for i in &p.info {
        i.emit(&mut out[off..]);
        off += INFO_LEN;
    }
    for h in p.hops() {
        h.emit(&mut out[off..]);
        off += 4 * h.lines();
    }
    out
}

fn strip_flyovers(p: &HbirdPath) -> HbirdPath {
    let mut q = p.clone();
    let curr = q.curr_hop_index().unwrap();
    for h in q.segments.iter_mut().flatten() {
        h.flyover = None;
    }
    q.curr_hf = (HOP_LINES * curr) as u8;
    q
}

// ---------------------------------------------------------------------------------------
// Path properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The view's checks of the indices and the current hop field decide as the rule does,
    /// for every CurrINF and CurrHF on a path's bytes, and for SegLens that do not match them.
    #[test]
    fn view_checks_indices_as_the_rule(p in arb_wire_path(), ci in 0u32..4, ch in 0u32..256, seg_lens in any::<Option<u32>>()) {
        let mut b = encode_unchecked(&p);
        let word = u32::from_be_bytes(b[field::meta::WORD].try_into().unwrap());
        // The SegLens are the word's low 21 bits, CurrHF the 8 above the reserved bit, CurrINF
        // the top 2.
        let lens = seg_lens.unwrap_or(word) & ((1 << 21) - 1);
        b[field::meta::WORD].copy_from_slice(&(ci << 30 | ch << 22 | lens).to_be_bytes());
        let view = HbirdPathView::new_checked(&b[..]).map(|v| {
            let (ci, ch) = HopLayout::current(&v);
            (ci, ch, v.current_hop_offset(), v.current_is_flyover())
        });
        prop_assert_eq!(view, view_reference(&b));
    }

    /// The router's advanced first word (the indices replaced in the word as read) is the
    /// encoding of the decoded fields with those indices, whatever the word's bits.
    #[test]
    fn advanced_word_encodes_the_fields(word: u32, curr_inf in 0usize..3, curr_hf in 0usize..256) {
        let (_, _, seg_len) = MetaHdr::decode_word0(word);
        let encoded = MetaHdr { curr_inf: curr_inf as u8, curr_hf: curr_hf as u8, seg_len, ..MetaHdr::default() }
            .encode_word0();
        prop_assert_eq!(MetaHdr::advance_word0(word, curr_inf, curr_hf), encoded);
    }

    /// emit → parse gives the same path; emit(parse(bytes)) gives the bytes.
    #[test]
    fn path_round_trip(p in arb_path()) {
        prop_assert!(p.validate().is_ok());
        let bytes = p.to_bytes().unwrap();
        prop_assert_eq!(bytes.len(), p.len());
        prop_assert_eq!(&bytes, &encode_unchecked(&p));
        let parsed = HbirdPath::parse(&bytes).unwrap();
        prop_assert_eq!(&parsed, &p);
        prop_assert_eq!(parsed.to_bytes().unwrap(), bytes);
    }

    /// Reversal drops the flyovers, gives a valid path, and agrees with the reversal of
    /// the standard path; reversing twice gives the flyover-free original.
    #[test]
    fn reverse_matches_standard(p in arb_path()) {
        let mut r = p.clone();
        r.reverse().unwrap();
        prop_assert!(r.hops().all(|h| h.flyover.is_none()));
        prop_assert!(r.validate().is_ok());
        prop_assert_eq!(r.hops().count(), p.hops().count());
        prop_assert_eq!(
            (r.base_ts, r.millis, r.counter),
            (p.base_ts, p.millis, p.counter)
        );
        prop_assert_eq!(HbirdPath::parse(&r.to_bytes().unwrap()).unwrap(), r.clone());
        match p.to_standard() {
            Ok(mut s) => {
                s.reverse().unwrap();
                prop_assert_eq!(r.to_standard().unwrap(), s);
            }
            // More than 63 hop fields: no standard path either way.
            Err(_) => prop_assert!(r.to_standard().is_err()),
        }
        let mut rr = r.clone();
        rr.reverse().unwrap();
        prop_assert_eq!(rr, strip_flyovers(&p));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Of the paths the wire format can carry (hop fields beyond line 255 included), the
    /// parser accepts exactly those that `emit` accepts, and they round-trip.
    #[test]
    fn parse_and_emit_accept_the_same_paths(p in arb_wire_path()) {
        let bytes = encode_unchecked(&p);
        match (HbirdPath::parse(&bytes), p.to_bytes()) {
            (Ok(q), Ok(b)) => {
                prop_assert_eq!(q, p);
                prop_assert_eq!(b, bytes);
            }
            (Err(_), Err(_)) => {}
            (parsed, emitted) => {
                prop_assert!(false, "parse: {:?}, emit: {:?}", parsed.map(|_| ()), emitted.map(|_| ()))
            }
        }
    }
}

/// Regression: the parser used to accept a path that `validate` (and so `emit`) rejects,
/// with hop fields after line 255, which CurrHF cannot reach. Parser and emitter must
/// agree either way.
#[test]
fn path_with_unreachable_hop_fields() {
    let fly = HbirdHop { flyover: Some(Flyover::default()), ..HbirdHop::default() };
    // Three segments of 25 flyovers (125 lines each): hop fields up to line 370.
    let p = HbirdPath { info: vec![InfoField::default(); 3], segments: vec![vec![fly; 25]; 3], ..HbirdPath::default() };
    let bytes = encode_unchecked(&p);
    assert_eq!(
        HbirdPath::parse(&bytes).is_ok(),
        p.validate().is_ok(),
        "parse: {:?}, validate: {:?}",
        HbirdPath::parse(&bytes).map(|_| ()),
        p.validate()
    );
    if let Ok(q) = HbirdPath::parse(&bytes) {
        assert_eq!(q.to_bytes(), Ok(bytes));
    }
}
