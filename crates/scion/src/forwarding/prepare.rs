//! Stage 1 of forwarding for every path type built on SCION's info and hop fields: find the
//! AS's hop field(s), run every check that needs no cryptography, and say what to verify and
//! write back. Written once, over the raw words of the path (the current info field as one
//! `u64`, the hop field's first 8 bytes as another): no per-field decoding into typed values,
//! no bounds checks the checked view has already made. A path type describes its layout
//! through [`HopLayout`].

use aviary_qos::DropReason;

use super::raw::{self, HopWord, InfoWord};
use super::{AsForwarding, HopWork, NextHop, PathEnds};
use crate::mac::MAC_LEN;
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
///   bytes().len()`, and so is every `Some` of `crossover_hop`.
pub unsafe trait HopLayout {
    /// The largest value the CurrHF field can hold.
    const MAX_CURR_HF: usize;

    /// The hop layout: the path's meta header, info fields and hop fields.
    fn bytes(&self) -> &[u8];
    /// CurrINF and CurrHF.
    fn current(&self) -> (usize, usize);
    /// Segment lengths in units.
    fn seg_len(&self) -> [u8; 3];
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

impl AsForwarding {
    /// The checks of one hop that need no cryptography, whatever the path type: the ingress
    /// interface, source and destination at the path's ends, a crossover to the next segment
    /// (whose first hop field this AS verifies too), and the indices after this AS. The hop
    /// field's MAC is left as it is on the wire: the caller sets the MAC to verify
    /// ([`HopWork::set_mac`]).
    #[inline]
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
        let seg_end = |s: usize| seg_len[..=s.min(2)].iter().map(|l| usize::from(*l)).sum::<usize>();
        let units = path.len_units();
        let info_off = path.info_offset(ci);
        let (width, hop_off) = path.current_hop();
        debug_assert!(ci < path.num_info_fields());
        // SAFETY: CurrINF < num_info_fields(), whose info fields lie within `bytes()`, and the
        // current hop field does (the contract of `HopLayout`).
        let (info, hop, mac) = unsafe {
            (
                InfoWord(raw::be_u64(b, info_off)),
                HopWord(raw::be_u64(b, hop_off)),
                raw::bytes::<MAC_LEN>(b, hop_off + field::hop::MAC.start),
            )
        };
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

        let mut next = None;
        let mut advanced = ch + width;
        let mut end = hop_off + HOP_LEN;
        if !deliver && advanced == seg_end(ci) && ci + 1 < path.num_info_fields() && !peering {
            // Segment crossover: the next segment's first hop field is this AS's too.
            let (nwidth, nhop_off) = path.crossover_hop(advanced, seg_end(ci + 1)).ok_or(DropReason::MalformedPath)?;
            let ninfo_off = path.info_offset(ci + 1);
            // SAFETY: ci + 1 < num_info_fields(), and a `Some` of `crossover_hop` lies within
            // `bytes()` (the contract of `HopLayout`).
            let (ninfo, nhop) = unsafe { (InfoWord(raw::be_u64(b, ninfo_off)), HopWord(raw::be_u64(b, nhop_off))) };
            egress = nhop.travel_interfaces(ninfo.cons_dir()).1;
            // Offsets within the path, which ends before byte 1020.
            next = Some(NextHop { info_off: ninfo_off as u16, hop_off: nhop_off as u16 });
            advanced += nwidth;
            end = end.max(nhop_off + HOP_LEN);
        }
        Ok(HopWork {
            // Info fields are within the first 28 bytes of the path; hop fields end before
            // byte 1020.
            info_off: info_off as u16,
            hop_off: hop_off as u16,
            end: end.max(info_off + INFO_LEN) as u16,
            seg_id: info.seg_id(),
            mac,
            hop_ingress: hop_in,
            cons_dir,
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

// SAFETY: `bytes()` is exactly the meta header, `num_info_fields()` info fields and
// `num_hops()` hop fields long (or panics), and the checked constructor made sure that
// CurrINF < `num_info_fields()` and CurrHF < `num_hops()`; a shared slice's bytes do not
// change. Every offset below is that of an info field below `num_info_fields()` or a hop
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
