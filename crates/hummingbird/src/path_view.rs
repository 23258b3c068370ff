//! Zero-copy view over a Hummingbird path, for routers and sources: the checked constructor
//! validates the meta header against the buffer and that CurrHF points at a hop field that fits
//! in the current segment; getters and setters then go through the field table
//! ([`crate::path::field`]).

use aviary_scion::forwarding::HopLayout;
use aviary_scion::wire::path::{num_info_fields, HopField, InfoField, HOP_LEN, INFO_LEN};

use crate::path::high_res_ts;
use crate::path::{
    field, Flyover, HbirdHop, HbirdPathError, MetaHdr, FLYOVER_BIT, FLYOVER_LEN, FLYOVER_LINES, HOP_LINES, META_LEN,
};

#[derive(Clone, Copy, Debug)]
pub struct HbirdPathView<T> {
    buf: T,
    /// The meta header's first word as the checked constructor read it (the timestamps
    /// are read from the buffer where asked for). Word-sized: a router's stage 1 builds the
    /// view in registers, and byte fields cost their packing and unpacking (callgrind,
    /// 2026-11-26: -28 instructions a flyover packet).
    curr_inf: usize,
    curr_hf: usize,
    seg_len: [u8; 3],
    num_inf: usize,
    /// Total hop-field lines (at most 3 · 127).
    lines: usize,
    /// Offset and lines of the current hop field, which the checked constructor found to lie
    /// within the current segment (and so within the buffer): read once, used by every later
    /// accessor of the current hop without checking again.
    curr_off: usize,
    curr_lines: usize,
    /// The line after the last one of the current segment, which the checks need: kept for
    /// the forwarder's crossover test ([`HopLayout::current_segment_end`]).
    curr_seg_end: usize,
}

impl<T: AsRef<[u8]>> HbirdPathView<T> {
    /// Inlined: a router's stage 1 calls it for every packet, and its result is best kept
    /// in registers.
    #[inline(always)]
    pub fn new_checked(buf: T) -> Result<Self, HbirdPathError> {
        let b = buf.as_ref();
        if b.len() < META_LEN {
            return Err(HbirdPathError::Truncated);
        }
        // The first word is all the checks need (what `hop_area` checks, without parsing
        // the meta header twice).
        let word = u32::from_be_bytes(b[field::meta::WORD].try_into().expect("4 bytes"));
        let (curr_inf, curr_hf, seg_len) = MetaHdr::decode_word0(word);
        let num_inf = num_info_fields(seg_len).ok().filter(|n| *n > 0).ok_or(HbirdPathError::Truncated)?;
        let lines: usize = seg_len.iter().map(|l| usize::from(*l)).sum();
        let hop_base = META_LEN + INFO_LEN * num_inf;
        if b.len() != hop_base + 4 * lines {
            return Err(HbirdPathError::Truncated);
        }
        let (ci, ch) = (usize::from(curr_inf), usize::from(curr_hf));
        // With a first segment and no gap, the segments below `num_inf` are not empty and
        // CurrHF is in CurrINF's exactly when it lies within that segment's lines: both ends
        // from one match, where `segment_of` and `segment_end` each went through the segments
        // (callgrind, 2026-11-26: -21 instructions a flyover packet).
        let [l0, l1, _] = seg_len.map(usize::from);
        let (curr_seg_start, curr_seg_end) = match ci {
            0 => (0, l0),
            1 => (l0, l0 + l1),
            _ => (l0 + l1, lines),
        };
        if ci >= num_inf || ch < curr_seg_start || ch >= curr_seg_end {
            return Err(HbirdPathError::IndexOutOfRange);
        }
        let curr_off = hop_base + 4 * ch;
        let curr_lines = if b[curr_off + field::flyover::FLAGS] & FLYOVER_BIT != 0 { FLYOVER_LINES } else { HOP_LINES };
        if ch + curr_lines > curr_seg_end {
            return Err(HbirdPathError::Misaligned(ci));
        }
        // At most 3 info fields, 381 lines, a path of 1560 bytes, 5 lines per hop field.
        Ok(Self { buf, curr_inf: ci, curr_hf: ch, seg_len, num_inf, lines, curr_off, curr_lines, curr_seg_end })
    }

    /// The meta header, as the buffer holds it now.
    pub fn meta(&self) -> MetaHdr {
        MetaHdr::from_bytes(self.buf.as_ref()[..META_LEN].try_into().expect("META_LEN bytes"))
    }
    pub fn num_info_fields(&self) -> usize {
        self.num_inf
    }
    /// Total lines of hop fields.
    pub fn lines(&self) -> usize {
        self.lines
    }
    /// The line after the last one of segment `s`.
    pub fn segment_end(&self, s: usize) -> usize {
        segment_end(self.seg_len, s)
    }
    pub fn info_offset(&self, i: usize) -> usize {
        META_LEN + INFO_LEN * i
    }
    /// Offset of the hop field starting at `line`.
    pub fn hop_offset(&self, line: usize) -> usize {
        META_LEN + INFO_LEN * self.num_info_fields() + 4 * line
    }
    /// Info field `i`; panics if `i >= num_info_fields()`.
    pub fn info(&self, i: usize) -> InfoField {
        assert!(i < self.num_info_fields(), "info field {i} of {}", self.num_inf);
        let off = self.info_offset(i);
        InfoField::from_bytes(self.buf.as_ref()[off..off + INFO_LEN].try_into().expect("INFO_LEN bytes"))
    }
    /// Lines of the hop field starting at `line` (by its F bit); panics past the path.
    pub fn lines_at(&self, line: usize) -> usize {
        if self.buf.as_ref()[self.hop_offset(line) + field::flyover::FLAGS] & FLYOVER_BIT != 0 {
            FLYOVER_LINES
        } else {
            HOP_LINES
        }
    }
    /// Whether the hop field starting at `line` lies within the path.
    fn fits(&self, line: usize) -> bool {
        line < self.lines() && line + self.lines_at(line) <= self.lines()
    }
    /// The hop field starting at `line`, if it lies within the path.
    pub fn hop(&self, line: usize) -> Option<HbirdHop> {
        self.fits(line).then(|| HbirdHop { hop: self.hop_field(line), flyover: self.flyover(line) })
    }
    /// The SCION hop field part of the hop field at `line`; panics past the path.
    fn hop_field(&self, line: usize) -> HopField {
        let off = self.hop_offset(line);
        HopField::from_bytes(self.buf.as_ref()[off..off + HOP_LEN].try_into().expect("HOP_LEN bytes"))
    }
    /// The reservation of the hop field at `line`, if it is a flyover within the path.
    pub fn flyover(&self, line: usize) -> Option<Flyover> {
        if !self.fits(line) || self.lines_at(line) != FLYOVER_LINES {
            return None;
        }
        let off = self.hop_offset(line);
        Some(Flyover::from_hop_bytes(self.buf.as_ref()[off..off + FLYOVER_LEN].try_into().expect("FLYOVER_LEN bytes")))
    }
    /// Whether the current hop field is a flyover (its offset and width were proven by the
    /// checked constructor).
    #[inline]
    pub fn current_is_flyover(&self) -> bool {
        self.curr_lines == FLYOVER_LINES
    }
    /// Offset of the current hop field.
    #[inline]
    pub fn current_hop_offset(&self) -> usize {
        self.curr_off
    }
    /// Lines of the path at which a flyover hop field starts, in path order.
    pub fn flyover_lines(&self) -> impl Iterator<Item = usize> + '_ {
        let mut line = 0;
        std::iter::from_fn(move || {
            while self.fits(line) {
                let (at, width) = (line, self.lines_at(line));
                line += width;
                if width == FLYOVER_LINES {
                    return Some(at);
                }
            }
            None
        })
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HbirdPathView<T> {
    fn hop_bytes_mut(&mut self, line: usize) -> &mut [u8] {
        let off = self.hop_offset(line);
        &mut self.buf.as_mut()[off..]
    }
    /// Sets BaseTimestamp, MillisTimestamp and Counter.
    pub fn set_timestamps(&mut self, base_ts: u32, millis: u16, counter: u32) {
        let b = self.buf.as_mut();
        b[field::meta::BASE_TS].copy_from_slice(&base_ts.to_be_bytes());
        b[field::meta::HIGH_RES_TS].copy_from_slice(&high_res_ts(millis, counter).to_be_bytes());
    }
    /// Overwrites the (Agg)MAC of the hop field at `line`; panics past the path.
    #[inline]
    pub fn set_hop_mac(&mut self, line: usize, mac: &[u8; 6]) {
        self.hop_bytes_mut(line)[field::flyover::MAC].copy_from_slice(mac);
    }
    /// Overwrites the reservation fields of the flyover at `line`; `false` (and nothing
    /// written) if there is no flyover there.
    #[inline]
    pub fn set_flyover(&mut self, line: usize, f: &Flyover) -> bool {
        if !self.fits(line) || self.lines_at(line) != FLYOVER_LINES {
            return false;
        }
        f.emit_into_hop(self.hop_bytes_mut(line));
        true
    }
}

/// The forwarder's view of the layout: positions are 4-byte lines, CurrHF has 8 bits.
/// The line after the last one of segment `s`.
#[inline]
fn segment_end(seg_len: [u8; 3], s: usize) -> usize {
    let [l0, l1, l2] = seg_len.map(usize::from);
    match s {
        0 => l0,
        1 => l0 + l1,
        _ => l0 + l1 + l2,
    }
}

// SAFETY: the checked constructor made sure that the buffer holds exactly the meta header,
// `num_info_fields()` info fields and `lines()` lines of hop fields, in that order (every hop
// field's offset is `hop_offset`'s, after the info fields), that CurrINF <
// `num_info_fields()`, and that the current hop field (`curr_off`, `curr_lines` of at least
// `HOP_LINES`) ends within its segment, so within the buffer; a crossover's hop field is
// given only where `fits` (it ends within the lines) and it is a plain one of `HOP_LEN` bytes.
// A shared slice's bytes do not change.
unsafe impl HopLayout for HbirdPathView<&[u8]> {
    const MAX_CURR_HF: usize = 255;

    #[inline]
    fn bytes(&self) -> &[u8] {
        self.buf
    }
    #[inline]
    fn current(&self) -> (usize, usize) {
        (self.curr_inf, self.curr_hf)
    }
    #[inline]
    fn seg_len(&self) -> [u8; 3] {
        self.seg_len
    }
    #[inline]
    fn current_segment_end(&self) -> usize {
        self.curr_seg_end
    }
    #[inline]
    fn num_info_fields(&self) -> usize {
        self.num_inf
    }
    #[inline]
    fn len_units(&self) -> usize {
        self.lines
    }
    #[inline]
    fn info_offset(&self, i: usize) -> usize {
        HbirdPathView::info_offset(self, i)
    }
    #[inline]
    fn current_hop(&self) -> (usize, usize) {
        (self.curr_lines, self.curr_off)
    }
    /// A crossover's second hop field must be a plain one: a flyover belongs to one interface
    /// pair and the first hop field of the segment already carries it (A.5).
    #[inline]
    fn crossover_hop(&self, line: usize, seg_end: usize) -> Option<(usize, usize)> {
        (self.fits(line) && self.lines_at(line) == HOP_LINES && line + HOP_LINES <= seg_end)
            .then(|| (HOP_LINES, self.hop_offset(line)))
    }
    #[inline]
    fn advanced_word(&self, curr_inf: usize, curr_hf: usize) -> [u8; 4] {
        // The first word read again, its indices replaced (rather than the fields encoded again:
        // -2 instructions a flyover packet, callgrind, 2026-11-26); kept in the view from the
        // checks, it held a register through stage 1 (-4; 2026-11-29).
        // SAFETY: the checked constructor found the buffer to hold the meta header.
        let word = unsafe { aviary_scion::raw::be_u32(self.buf, field::meta::WORD.start) };
        MetaHdr::advance_word0(word, curr_inf, curr_hf)
    }
}
