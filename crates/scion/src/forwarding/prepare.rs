//! Stage 1 of forwarding for every path type built on SCION's info and hop fields: find the
//! AS's hop field(s), run every check that needs no cryptography, and say what to verify and
//! write back. Written once, over the raw words of the path (the current info field as one
//! `u64`, the hop field's first 8 bytes as another): no per-field decoding into typed values,
//! no bounds checks the checked view has already made. A path type describes its layout
//! through [`HopLayout`].

use aviary_qos::DropReason;

use super::raw::{self, HopWord, InfoWord};
use super::{AsForwarding, CheckedHeader, HopWork, NextHop, PathEnds};
use crate::mac::MAC_LEN;
use crate::wire::header::{self, field as hdr, path_type};
use crate::wire::path::chain_seg_id;
use crate::wire::path::{field, segment_of, HOP_LEN, INFO_LEN, MAX_HOPS, META_LEN};
use crate::wire::path_view::StandardPathView;
use crate::IsdAsn;

/// What the forwarder needs of a checked path view. Positions count in the path type's own
/// unit (hop fields for the standard path, 4-byte lines for Hummingbird's).
///
/// # Safety
/// Stage 1 reads the fields at the offsets this gives without checking them again, so an
/// implementation promises, for as long as it lives:
/// - `bytes()` returns the same bytes on every call;
/// - `current()` is `(CurrINF, CurrHF)` with CurrINF `< num_info_fields()`, and
///   `info_offset(i) + INFO_LEN <= bytes().len()` for every `i < num_info_fields()`;
/// - `current_hop()` is the width and offset of a hop field with `offset + HOP_LEN <=
///   bytes().len()`, and so is every `Some` of `crossover_hop`;
/// - every hop field lies after every info field: `info_offset(i) + INFO_LEN <= offset` for
///   each such hop field's offset and every `i < num_info_fields()`.
pub unsafe trait HopLayout {
    /// The largest value the CurrHF field can hold.
    const MAX_CURR_HF: usize;

    /// The hop layout: the path's meta header, info fields and hop fields.
    fn bytes(&self) -> &[u8];
    /// CurrINF and CurrHF.
    fn current(&self) -> (usize, usize);
    /// Segment lengths in units.
    fn seg_len(&self) -> [u8; 3];
    /// The unit after the last one of CurrINF's segment, [`segment_end`] of it. A layout
    /// whose checks found it gives it here: computed again, a flyover packet ran 21
    /// instructions more (callgrind, 2026-11-26).
    #[inline]
    fn current_segment_end(&self) -> usize {
        segment_end(self.seg_len(), self.current().0)
    }
    fn num_info_fields(&self) -> usize;
    /// Units of all hop fields together.
    fn len_units(&self) -> usize;
    /// Offset of info field `i` in the path; `i < num_info_fields()`.
    fn info_offset(&self, i: usize) -> usize;
    /// The width in units and the offset in the path of the hop field at the current position.
    fn current_hop(&self) -> (usize, usize);
    /// The width and offset of the hop field at `pos`, the first of a segment ending at
    /// `seg_end`, as the second hop field of a crossover: `None` if it is not a plain hop field
    /// within that segment.
    fn crossover_hop(&self, pos: usize, seg_end: usize) -> Option<(usize, usize)>;
    /// The path's first word with CurrINF and CurrHF moved to `curr_inf`, `curr_hf`.
    fn advanced_word(&self, curr_inf: usize, curr_hf: usize) -> [u8; 4];
}

/// The unit after the last one of segment `s` (of the last segment for `s > 2`).
#[inline]
fn segment_end(seg_len: [u8; 3], s: usize) -> usize {
    seg_len[..=s.min(2)].iter().map(|l| usize::from(*l)).sum()
}

impl AsForwarding {
    /// The checks of one hop that need no cryptography, whatever the path type: the ingress
    /// interface, source and destination at the path's ends, a crossover to the next segment
    /// (whose first hop field this AS verifies too), and the indices after this AS. The hop
    /// field's MAC is left as it is on the wire: the caller sets the MAC to verify
    /// ([`HopWork::set_mac`]).
    // Forced: in Hummingbird's raw stage 1 LLVM kept it a call that took the view through
    // memory, +99 instructions a flyover packet (callgrind, 2026-11-26).
    #[inline(always)]
    pub fn prepare_hop<L: HopLayout>(
        &self,
        path: &L,
        src: IsdAsn,
        dst: IsdAsn,
        ingress: u16,
    ) -> Result<HopWork, DropReason> {
        let b = path.bytes();
        let (ci, ch) = path.current();
        let seg_len = path.seg_len();
        let seg_end = |s: usize| segment_end(seg_len, s);
        let units = path.len_units();
        let info_off = path.info_offset(ci);
        let (width, hop_off) = path.current_hop();
        debug_assert!(ci < path.num_info_fields());
        // SAFETY: CurrINF < num_info_fields(), whose info fields lie within `bytes()`, and the
        // current hop field does (the contract of `HopLayout`).
        let (info, hop) = unsafe { (InfoWord(raw::be_u64(b, info_off)), HopWord(raw::be_u64(b, hop_off))) };
        let peering = info.peering() && {
            if seg_len[0] == 0 || seg_len[1] == 0 || seg_len[2] != 0 {
                // A peering path has exactly two segments.
                return Err(DropReason::MalformedPath);
            }
            // The last hop field of segment 0 or the first of segment 1.
            ch + width == seg_end(0) || ch == seg_end(0)
        };
        let cons_dir = info.cons_dir();
        let (hop_in, mut egress) = hop.travel_interfaces(cons_dir);
        if ingress != 0 && ingress != hop_in {
            return Err(DropReason::BadIngress);
        }
        self.check_src_dst(src, dst, ingress, PathEnds { first_hop: ch == 0, last_hop: ch + width == units })?;
        let deliver = dst == self.local_ia;

        let mut next = NextHop::NONE;
        let mut advanced = ch + width;
        let mut end = hop_off + HOP_LEN;
        if !deliver && advanced == path.current_segment_end() && ci + 1 < path.num_info_fields() && !peering {
            // Segment crossover: the next segment's first hop field is this AS's too.
            let (nwidth, nhop_off) = path.crossover_hop(advanced, seg_end(ci + 1)).ok_or(DropReason::MalformedPath)?;
            let ninfo_off = path.info_offset(ci + 1);
            // SAFETY: ci + 1 < num_info_fields(), and a `Some` of `crossover_hop` lies within
            // `bytes()` (the contract of `HopLayout`).
            let (ninfo, nhop) = unsafe { (InfoWord(raw::be_u64(b, ninfo_off)), HopWord(raw::be_u64(b, nhop_off))) };
            egress = nhop.travel_interfaces(ninfo.cons_dir()).1;
            // Offsets within the path, which ends before byte 1020.
            debug_assert!(nhop_off > ninfo_off, "a hop field at offset 0 would read as no crossover");
            next = NextHop { info_off: ninfo_off as u16, hop_off: nhop_off as u16 };
            advanced += nwidth;
            end = end.max(nhop_off + HOP_LEN);
        }
        debug_assert!(info_off + INFO_LEN <= hop_off, "a hop field before an info field");
        // Read here, not with the hop word above: kept live through the checks, it was spilled
        // (as in the standard path's stage 1; callgrind, 2026-11-29).
        // SAFETY: the current hop field lies within `bytes()` (the contract of `HopLayout`).
        let mac = unsafe { raw::bytes::<MAC_LEN>(b, hop_off + field::hop::MAC.start) };
        Ok(HopWork {
            // Info fields are within the first 28 bytes of the path; hop fields end before
            // byte 1020.
            info_off: info_off as u16,
            hop_off: hop_off as u16,
            // Hop fields lie after the info fields (the contract of `HopLayout`): the current
            // info field ends before `end` (its `max` cost a flyover 4 instructions; callgrind,
            // 2026-11-29).
            end: end as u16,
            seg_id: info.seg_id(),
            mac,
            hop_ingress: hop_in,
            chain_before: !cons_dir && ingress != 0 && !peering,
            peering,
            deliver,
            next,
            egress,
            // A position CurrHF cannot hold cannot be pointed at.
            at_end: advanced >= units || advanced > L::MAX_CURR_HF,
            advanced_meta: path.advanced_word(segment_of(seg_len, advanced), advanced.min(L::MAX_CURR_HF)),
        })
    }
}

impl AsForwarding {
    /// Stage 1 of a standard SCION packet (path type 1) in one pass over its raw words: the
    /// checks of [`crate::ScionView::new_checked`] over the common and address header, those
    /// of [`StandardPathView::new_checked`] over the path and those of
    /// [`AsForwarding::prepare_hop`] over the current hop field, with the same outcome (the
    /// same drop reason, in the same order; a property test holds the two routes equal), but
    /// without building either view: what the checks prove is kept in a few integers.
    /// Returns the path's offset in the packet and the work of the hop. A packet of another
    /// path type is [`DropReason::UnsupportedPathType`] once its header has passed.
    ///
    /// Validity and diagnosis are apart: this tests, in three groups (each must pass before
    /// the next group's words can be read), whether every check passes, merging checks where
    /// one compare decides several; only a packet that fails goes to
    /// [`Self::scion_drop_reason`], which runs the checks one by one in the views' order to
    /// name the reason.
    #[inline(always)]
    pub fn prepare_scion(&self, pkt: &[u8], ingress: u16) -> Result<(u16, HopWork), DropReason> {
        use field::meta::{
            CURR_HF_MASK, CURR_HF_SHIFT, CURR_INF_MASK, CURR_INF_SHIFT, SEG_LENS, SEG_LEN_MASK, SEG_LEN_SHIFT,
        };

        // Group 1, the common and address header.
        let Some(header) = CheckedHeader::new(pkt, path_type::SCION, META_LEN) else {
            return Err(self.scion_drop_reason(pkt, ingress));
        };

        // Group 2, the path's meta header and indices.
        let path = header.path();
        let path_len = path.len();
        debug_assert!(META_LEN <= path_len);
        // SAFETY: the path holds at least META_LEN bytes (group 1).
        let meta = unsafe { raw::be_u32(path, field::meta::WORD.start) };
        let seg = |i: usize| ((meta >> SEG_LEN_SHIFT[i]) & SEG_LEN_MASK) as usize;
        let (s0, s1, s2) = (seg(0), seg(1), seg(2));
        let num_inf = 1 + usize::from(s1 != 0) + usize::from(s2 != 0);
        let (end0, end1) = (s0, s0 + s1);
        let num_hops = end1 + s2;
        let hops_at = META_LEN + INFO_LEN * num_inf;
        let ci = ((meta >> CURR_INF_SHIFT) & CURR_INF_MASK) as usize;
        let ch = ((meta >> CURR_HF_SHIFT) & CURR_HF_MASK) as usize;
        // The segment position `pos` lies in, if the segments are as group 2 requires (a
        // first one, no gap): the number of segment ends at or below it.
        let segment_of = |pos: usize| usize::from(pos >= end0) + usize::from(pos >= end1);
        // CurrHF within CurrINF's segment: with a first segment and no gap, every segment
        // below `num_inf` is not empty and each position below `num_hops` lies in exactly
        // one of them, the one `segment_of` names; CurrINF 3 is never named.
        if (segment_of(ch) != ci) | (ch >= num_hops)
            // A path without a first segment, or with a gap, is malformed.
            || (s0 == 0) | ((s1 == 0) & (s2 != 0))
            || num_hops > MAX_HOPS
            || path_len != hops_at + HOP_LEN * num_hops
        {
            return Err(self.scion_drop_reason(pkt, ingress));
        }
        // CurrHF lies in CurrINF's segment, which is therefore not empty: with no gap,
        // CurrINF < num_inf.
        debug_assert!(ci < num_inf && ch < num_hops);

        // Group 3, the hop (one hop field wide), as `prepare_hop` checks it.
        let info_off = META_LEN + INFO_LEN * ci;
        let hop_off = hops_at + HOP_LEN * ch;
        debug_assert!(info_off + INFO_LEN <= hops_at && hop_off + HOP_LEN <= path.len());
        // SAFETY: the path is exactly the meta header, `num_inf` info fields and `num_hops`
        // hop fields long (group 2), and ci < num_inf, ch < num_hops.
        let (info, hop) = unsafe { (InfoWord(raw::be_u64(path, info_off)), HopWord(raw::be_u64(path, hop_off))) };
        let cons_dir = info.cons_dir();
        let (hop_in, mut egress) = hop.travel_interfaces(cons_dir);
        let (dst, src) = header.dst_src();
        let (src_local, dst_local) = (src == self.local_ia, dst == self.local_ia);
        // A peering path has exactly two segments: with a first segment and no gap (group 2),
        // that is `num_inf == 2`. Ingress, source and destination as `check_src_dst`.
        let bad_hop = if ingress == 0 {
            (ch == 0 && !src_local) | dst_local
        } else {
            (ingress != hop_in) | src_local | ((ch + 1 == num_hops) != dst_local)
        };
        if bad_hop || (info.peering() && num_inf != 2) {
            return Err(self.scion_drop_reason(pkt, ingress));
        }
        // The last hop field of segment 0 or the first of segment 1.
        let peering = info.peering() && (ch + 1 == end0 || ch == end0);
        let deliver = dst_local;

        let mut next = NextHop::NONE;
        let mut advanced = ch + 1;
        // The segment of the advanced position, kept for the advanced meta word unless a
        // crossover moves it on (computed again for the word, a standard packet ran 7
        // instructions more; callgrind, 2026-11-26).
        let mut advanced_seg = segment_of(advanced);
        let mut end = hop_off + HOP_LEN;
        // Segment crossover: the next segment's first hop field is this AS's too. The next
        // position lies in another segment exactly when it is the end of CurrINF's; below
        // `num_hops`, that segment (ci + 1 < num_inf) exists and is not empty.
        if !deliver && advanced_seg != ci && advanced < num_hops && !peering {
            let ninfo_off = info_off + INFO_LEN;
            let nhop_off = hop_off + HOP_LEN;
            debug_assert!(advanced < num_hops && ninfo_off + INFO_LEN <= hops_at && nhop_off + HOP_LEN <= path.len());
            // SAFETY: ci + 1 < num_inf and advanced < num_hops (as above).
            let (ninfo, nhop) =
                unsafe { (InfoWord(raw::be_u64(path, ninfo_off)), HopWord(raw::be_u64(path, nhop_off))) };
            egress = nhop.travel_interfaces(ninfo.cons_dir()).1;
            next = NextHop { info_off: ninfo_off as u16, hop_off: nhop_off as u16 };
            advanced += 1;
            advanced_seg = segment_of(advanced);
            end = nhop_off + HOP_LEN;
        }
        // Against construction direction the SegID is chained with the MAC on the wire before
        // verification (`HopWork::set_mac`), except at a segment's first hop and for peering.
        let chain = !cons_dir && ingress != 0 && !peering;
        // Read here, not with the hop word above: kept live through the checks, it was spilled
        // (callgrind, 2026-11-26).
        // SAFETY: the hop field at `hop_off` lies within the path (group 3).
        let mac = unsafe { raw::bytes::<MAC_LEN>(path, hop_off + field::hop::MAC.start) };
        let seg_id = if chain { chain_seg_id(info.seg_id(), &mac) } else { info.seg_id() };
        // `advanced <= num_hops <= MAX_HOPS`: CurrHF can hold it; SegLens stay, the reserved
        // bits are written as zero.
        let advanced_meta =
            ((advanced_seg as u32) << CURR_INF_SHIFT) | ((advanced as u32) << CURR_HF_SHIFT) | (meta & SEG_LENS);
        Ok((
            // Below 1020: HdrLen counts 4-byte units in one byte.
            header.path_start() as u16,
            HopWork {
                // Within the path, which ends before byte 1020.
                info_off: info_off as u16,
                hop_off: hop_off as u16,
                end: end as u16,
                seg_id,
                mac,
                hop_ingress: hop_in,
                chain_before: false,
                peering,
                deliver,
                next,
                egress,
                at_end: advanced >= num_hops,
                advanced_meta: advanced_meta.to_be_bytes(),
            },
        ))
    }

    /// Why [`Self::prepare_scion`] drops a packet its fast checks rejected: the checks one by
    /// one, in the order of the views' route (`ScionView::new_checked`,
    /// `StandardPathView::new_checked`, `prepare_hop`), the first that fails naming the
    /// reason. Only rejected packets come here.
    #[cold]
    #[inline(never)]
    fn scion_drop_reason(&self, pkt: &[u8], ingress: u16) -> DropReason {
        match self.scion_checks_in_order(pkt, ingress) {
            Err(reason) => reason,
            Ok(()) => {
                // The fast checks are exact, so this is a mix-up in them; the packet is not
                // forwarded all the same (a test build says so).
                debug_assert!(false, "the fast checks rejected a packet the ordered checks pass");
                DropReason::MalformedPath
            }
        }
    }

    /// The checks of [`Self::prepare_scion`] one at a time, in the views' order.
    fn scion_checks_in_order(&self, pkt: &[u8], ingress: u16) -> Result<(), DropReason> {
        use field::meta::{CURR_HF_MASK, CURR_HF_SHIFT, CURR_INF_MASK, CURR_INF_SHIFT, SEG_LEN_MASK, SEG_LEN_SHIFT};

        // The common and address header, as `ScionView::new_checked` checks them.
        if pkt.len() < hdr::DST_HOST {
            return Err(DropReason::Truncated);
        }
        // SAFETY: `pkt` reaches DST_HOST.
        let header::CommonFields { version_tc: first, hdr_units, payload_len, path_type: ptype, addr_types } =
            unsafe { header::CommonFields::read_unchecked(pkt) };
        if header::version_of(first) != 0 {
            return Err(DropReason::BadVersion);
        }
        let (dl, sl) = header::host_lens(addr_types).ok_or(DropReason::BadAddressType)?;
        let path_start = hdr::DST_HOST + dl + sl;
        let hdr_len = usize::from(hdr_units) * 4;
        if hdr_len < path_start || pkt.len() < path_start {
            return Err(DropReason::Truncated);
        }
        if hdr_len + usize::from(payload_len) != pkt.len() {
            return Err(DropReason::LengthMismatch);
        }
        if ptype != path_type::SCION {
            return Err(DropReason::UnsupportedPathType);
        }

        // The path's meta header, as `StandardPathView::new_checked` checks it (every error
        // but the indices' is a malformed path).
        let path_len = hdr_len - path_start;
        if path_len < META_LEN {
            return Err(DropReason::MalformedPath);
        }
        // SAFETY: the path, `path_start..hdr_len`, lies within `pkt`: `hdr_len + PayloadLen`
        // is its length.
        let path = unsafe { pkt.get_unchecked(path_start..hdr_len) };
        // SAFETY: the path holds at least META_LEN bytes (just checked).
        let meta = unsafe { raw::be_u32(path, field::meta::WORD.start) };
        let seg = |i: usize| ((meta >> SEG_LEN_SHIFT[i]) & SEG_LEN_MASK) as usize;
        let (s0, s1, s2) = (seg(0), seg(1), seg(2));
        if s0 == 0 || (s1 == 0 && s2 != 0) {
            return Err(DropReason::MalformedPath);
        }
        let num_inf = 1 + usize::from(s1 != 0) + usize::from(s2 != 0);
        let (end0, end1) = (s0, s0 + s1);
        let num_hops = end1 + s2;
        let hops_at = META_LEN + INFO_LEN * num_inf;
        if num_hops > MAX_HOPS || path_len != hops_at + HOP_LEN * num_hops {
            return Err(DropReason::MalformedPath);
        }
        let ci = ((meta >> CURR_INF_SHIFT) & CURR_INF_MASK) as usize;
        let ch = ((meta >> CURR_HF_SHIFT) & CURR_HF_MASK) as usize;
        let (seg_start, seg_end) = match ci {
            0 => (0, end0),
            1 => (end0, end1),
            2 => (end1, num_hops),
            _ => return Err(DropReason::PathIndexOutOfRange),
        };
        if ch < seg_start || ch >= seg_end {
            return Err(DropReason::PathIndexOutOfRange);
        }

        // The hop, as `prepare_hop` checks it.
        let info_off = META_LEN + INFO_LEN * ci;
        let hop_off = hops_at + HOP_LEN * ch;
        debug_assert!(info_off + INFO_LEN <= hops_at && hop_off + HOP_LEN <= path.len());
        // SAFETY: the path is exactly the meta header, `num_inf` info fields and `num_hops`
        // hop fields long (checked), and ci < num_inf, ch < num_hops.
        let (info, hop) = unsafe { (InfoWord(raw::be_u64(path, info_off)), HopWord(raw::be_u64(path, hop_off))) };
        if info.peering() && (s1 == 0 || s2 != 0) {
            return Err(DropReason::MalformedPath);
        }
        let (hop_in, _) = hop.travel_interfaces(info.cons_dir());
        if ingress != 0 && ingress != hop_in {
            return Err(DropReason::BadIngress);
        }
        // SAFETY: `pkt` reaches DST_HOST (checked first), which both ISD-ASes end before.
        let (dst, src) = unsafe {
            (
                IsdAsn::from_u64(raw::be_u64(pkt, hdr::DST_IA.start)),
                IsdAsn::from_u64(raw::be_u64(pkt, hdr::SRC_IA.start)),
            )
        };
        self.check_src_dst(src, dst, ingress, PathEnds { first_hop: ch == 0, last_hop: ch + 1 == num_hops })
    }
}

// SAFETY: `bytes()` is exactly the meta header, `num_info_fields()` info fields and
// `num_hops()` hop fields long (or panics), in that order, and the checked constructor made
// sure that CurrINF < `num_info_fields()` and CurrHF < `num_hops()`; a shared slice's bytes do
// not change. Every offset below is that of an info field below `num_info_fields()` or a hop
// field below `num_hops()`.
unsafe impl HopLayout for StandardPathView<&[u8]> {
    const MAX_CURR_HF: usize = MAX_HOPS;

    /// Cut to the length the checked constructor proved, once more: a view rebound to the
    /// buffer of an embedding path (EPIC's) keeps the counts it checked, and the contract must
    /// not rest on that buffer's `AsRef` giving the same bytes again.
    #[inline]
    fn bytes(&self) -> &[u8] {
        let len = META_LEN + INFO_LEN * self.num_info_fields() + HOP_LEN * self.num_hops();
        &StandardPathView::bytes(self)[..len]
    }
    #[inline]
    fn current(&self) -> (usize, usize) {
        let m = self.meta();
        (usize::from(m.curr_inf), usize::from(m.curr_hf))
    }
    #[inline]
    fn seg_len(&self) -> [u8; 3] {
        self.meta().seg_len
    }
    #[inline]
    fn num_info_fields(&self) -> usize {
        StandardPathView::num_info_fields(self)
    }
    #[inline]
    fn len_units(&self) -> usize {
        self.num_hops()
    }
    #[inline]
    fn info_offset(&self, i: usize) -> usize {
        StandardPathView::info_offset(self, i)
    }
    #[inline]
    fn current_hop(&self) -> (usize, usize) {
        (1, self.hop_offset(usize::from(self.meta().curr_hf)))
    }
    #[inline]
    fn crossover_hop(&self, pos: usize, seg_end: usize) -> Option<(usize, usize)> {
        (pos < seg_end && pos < self.num_hops()).then(|| (1, self.hop_offset(pos)))
    }
    #[inline]
    fn advanced_word(&self, curr_inf: usize, curr_hf: usize) -> [u8; 4] {
        let mut m = self.meta();
        (m.curr_inf, m.curr_hf) = (curr_inf as u8, curr_hf as u8);
        m.encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HopMacKey;

    /// A packet with the standard path of the given SegLens (CurrINF 0, CurrHF 0, every info
    /// field in construction direction), sent by `src` (the forwarder's AS) to another AS.
    fn packet(seg_lens: [usize; 3], src: IsdAsn) -> Vec<u8> {
        use field::meta::SEG_LEN_SHIFT;
        let num_inf = seg_lens.iter().filter(|l| **l != 0).count();
        let path_start = header::path_start_of(0);
        let hdr_len = path_start + META_LEN + INFO_LEN * num_inf + HOP_LEN * seg_lens.iter().sum::<usize>();
        let mut p = vec![0; hdr_len];
        p[hdr::HDR_LEN] = (hdr_len / 4) as u8;
        p[hdr::PATH_TYPE] = path_type::SCION;
        p[hdr::DST_IA].copy_from_slice(&IsdAsn::new(1, 99).to_u64().to_be_bytes());
        p[hdr::SRC_IA].copy_from_slice(&src.to_u64().to_be_bytes());
        let meta = (0..3).fold(0, |m, i| m | (seg_lens[i] as u32) << SEG_LEN_SHIFT[i]);
        p[path_start..path_start + META_LEN].copy_from_slice(&meta.to_be_bytes());
        for i in 0..num_inf {
            p[path_start + META_LEN + INFO_LEN * i + field::info::FLAGS] = field::info::CONS_DIR;
        }
        p
    }

    /// The fast checks must reject what only one of the ordered checks catches: a path of more
    /// hop fields than CurrHF can point at, its length otherwise exact (the property test's
    /// packets never have one).
    #[test]
    fn more_than_max_hops_is_malformed() {
        let local = IsdAsn::new(1, 1);
        let fwd = AsForwarding::new(local, HopMacKey::new(&[7; 16]), [1, 2]);
        let (a, b) = (MAX_HOPS / 2, MAX_HOPS - MAX_HOPS / 2);
        assert!(fwd.prepare_scion(&packet([a, b, 0], local), 0).is_ok());
        assert_eq!(fwd.prepare_scion(&packet([a, b + 1, 0], local), 0), Err(DropReason::MalformedPath));
        assert_eq!(fwd.prepare_scion(&packet([a, b, 1], local), 0), Err(DropReason::MalformedPath));
    }
}
