//! Stage 1 of forwarding for every path type built on SCION's info and hop fields: find the
//! AS's hop field(s), run every check that needs no cryptography, and say what to verify and
//! write back. Written once; a path type describes its layout through [`HopLayout`].

use aviary_qos::DropReason;

use super::{is_peering, AsForwarding, HopWork, NextHop, PathEnds};
use crate::wire::path::{segment_of, HopField, InfoField, MAX_HOPS};
use crate::wire::path_view::StandardPathView;
use crate::IsdAsn;

/// What the forwarder needs of a checked path view. Positions count in the path type's own
/// unit (hop fields for the standard path, 4-byte lines for Hummingbird's); the view's checked
/// constructor has made sure CurrINF and CurrHF point at a hop field of the current segment.
pub trait HopLayout {
    /// The largest value the CurrHF field can hold.
    const MAX_CURR_HF: usize;

    /// CurrINF and CurrHF.
    fn current(&self) -> (usize, usize);
    /// Segment lengths in units.
    fn seg_len(&self) -> [u8; 3];
    fn num_info_fields(&self) -> usize;
    /// Units of all hop fields together.
    fn len_units(&self) -> usize;
    /// Offset of info field `i` in the path; `i < num_info_fields()`.
    fn info_offset(&self, i: usize) -> usize;
    /// Info field `i`; `i < num_info_fields()`.
    fn info(&self, i: usize) -> InfoField;
    /// The hop field at the current position, its width in units and its offset in the path.
    fn current_hop(&self) -> (HopField, usize, usize);
    /// The hop field at `pos`, the first of a segment ending at `seg_end`, as the second hop
    /// field of a crossover, with its width and offset: `None` if it is not a plain hop field
    /// within that segment.
    fn crossover_hop(&self, pos: usize, seg_end: usize) -> Option<(HopField, usize, usize)>;
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
        let (ci, ch) = path.current();
        let seg_len = path.seg_len();
        let seg_end = |s: usize| seg_len[..=s.min(2)].iter().map(|l| usize::from(*l)).sum::<usize>();
        let units = path.len_units();
        let info = path.info(ci);
        let (hop, width, hop_off) = path.current_hop();
        let peering = is_peering(&info, seg_len, ch + width == seg_end(0), ch == seg_end(0))?;
        let (hop_in, mut egress) = hop.travel_interfaces(info.cons_dir);
        if ingress != 0 && ingress != hop_in {
            return Err(DropReason::BadIngress);
        }
        self.check_src_dst(src, dst, ingress, PathEnds { first_hop: ch == 0, last_hop: ch + width == units })?;
        let deliver = dst == self.local_ia;

        let mut next = None;
        let mut advanced = ch + width;
        if !deliver && advanced == seg_end(ci) && ci + 1 < path.num_info_fields() && !peering {
            // Segment crossover: the next segment's first hop field is this AS's too.
            let (nhop, nwidth, nhop_off) =
                path.crossover_hop(advanced, seg_end(ci + 1)).ok_or(DropReason::MalformedPath)?;
            egress = nhop.travel_interfaces(path.info(ci + 1).cons_dir).1;
            // Offsets within the path, which ends before byte 1020.
            next = Some(NextHop { info_off: path.info_offset(ci + 1) as u16, hop_off: nhop_off as u16 });
            advanced += nwidth;
        }
        Ok(HopWork {
            // Info fields are within the first 28 bytes of the path; hop fields end before
            // byte 1020.
            info_off: path.info_offset(ci) as u16,
            hop_off: hop_off as u16,
            seg_id: info.seg_id,
            mac: hop.mac,
            hop_ingress: hop_in,
            cons_dir: info.cons_dir,
            chain_before: HopWork::chains_before_verifying(&info, ingress, peering),
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

impl<T: AsRef<[u8]>> HopLayout for StandardPathView<T> {
    const MAX_CURR_HF: usize = MAX_HOPS;

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
    fn info(&self, i: usize) -> InfoField {
        StandardPathView::info(self, i)
    }
    #[inline]
    fn current_hop(&self) -> (HopField, usize, usize) {
        (self.curr_hop(), 1, self.hop_offset(usize::from(self.meta().curr_hf)))
    }
    #[inline]
    fn crossover_hop(&self, pos: usize, seg_end: usize) -> Option<(HopField, usize, usize)> {
        (pos < seg_end && pos < self.num_hops()).then(|| (self.hop(pos), 1, self.hop_offset(pos)))
    }
    #[inline]
    fn advanced_word(&self, curr_inf: usize, curr_hf: usize) -> [u8; 4] {
        let mut m = self.meta();
        (m.curr_inf, m.curr_hf) = (curr_inf as u8, curr_hf as u8);
        m.encode()
    }
}
