//! Path type 5 (the Hummingbird paper, App. A): a 12-byte meta header, up to three info fields and hop
//! fields of 12 bytes or flyover hop fields of 20 bytes. CurrHF and SegLen count 4-byte
//! lines.
//!
//! ```text
//! Meta:    | C(2) | CurrHF(8) | r | Seg0Len(7) | Seg1Len(7) | Seg2Len(7) |
//!          | BaseTimestamp(32)                                          |
//!          | MillisTimestamp(10) | Counter(22)                          |
//! Flyover: | hop field with AggMAC (12 B) | ResID(22) | BW(10) | ResStartOffset(16) | ResDuration(16) |
//! ```

use aviary_qos::DropReason;
use aviary_scion::wire::path::{num_info_fields, segment_of, HOP_LEN, INFO_LEN};
use aviary_scion::{HopField, InfoField, StandardPath};
use thiserror::Error;

pub const META_LEN: usize = 12;
pub const FLYOVER_LEN: usize = 20;

/// Field offsets of path type 5, each relative to the start of its part: the one place they are
/// written down. Info fields and the first 12 bytes of every hop field are SCION's
/// (`aviary_scion::wire::path::field`).
pub mod field {
    pub mod meta {
        use std::ops::Range;
        /// CurrINF (2 bits) | CurrHF (8) | reserved (1) | Seg0Len | Seg1Len | Seg2Len (7 each), one
        /// big-endian word.
        pub const WORD: Range<usize> = 0..4;
        pub const BASE_TS: Range<usize> = 4..8;
        /// MillisTimestamp (10 bits) | Counter (22 bits), one big-endian word.
        pub const HIGH_RES_TS: Range<usize> = 8..12;

        /// The bit fields of [`WORD`]: shift and mask (after the shift).
        pub const CURR_INF_SHIFT: u32 = 30;
        pub const CURR_INF_MASK: u32 = 0x3;
        pub const CURR_HF_SHIFT: u32 = 22;
        pub const CURR_HF_MASK: u32 = 0xff;
        pub const SEG_LEN_SHIFT: [u32; 3] = [14, 7, 0];
        pub const SEG_LEN_MASK: u32 = 0x7f;
        /// The three SegLens in place (the word's low 21 bits).
        pub const SEG_LENS: u32 = (SEG_LEN_MASK << SEG_LEN_SHIFT[0])
            | (SEG_LEN_MASK << SEG_LEN_SHIFT[1])
            | (SEG_LEN_MASK << SEG_LEN_SHIFT[2]);

        /// The bit fields of [`HIGH_RES_TS`].
        pub const MILLIS_SHIFT: u32 = 22;
        pub const MILLIS_MASK: u32 = 0x3ff;
        pub const COUNTER_MASK: u32 = (1 << MILLIS_SHIFT) - 1;
    }
    pub mod flyover {
        use std::ops::Range;
        /// The hop field's flags byte, which carries the flyover bit.
        pub const FLAGS: usize = aviary_scion::wire::path::field::hop::FLAGS;
        /// The (Agg)MAC.
        pub const MAC: Range<usize> = aviary_scion::wire::path::field::hop::MAC;
        /// ResID (22 bits) | BW (10 bits), one big-endian word.
        pub const RES: Range<usize> = 12..16;
        /// The bit fields of [`RES`].
        pub const RES_ID_SHIFT: u32 = 10;
        pub const BW_MASK: u32 = (1 << RES_ID_SHIFT) - 1;
        pub const RES_START_OFFSET: Range<usize> = 16..18;
        pub const RES_DURATION: Range<usize> = 18..20;
    }
}
/// Lines (4 bytes) of a hop field and of a flyover hop field.
pub const HOP_LINES: usize = 3;
pub const FLYOVER_LINES: usize = 5;
/// Bit of byte 0 of a hop field that marks a flyover.
pub const FLYOVER_BIT: u8 = 0x80;
/// Largest SegLen (7 bits).
pub const MAX_SEG_LINES: usize = field::meta::SEG_LEN_MASK as usize;
/// The largest ResID (22 bits).
pub const MAX_RES_ID: u32 = u32::MAX >> field::flyover::RES_ID_SHIFT;
/// The largest Counter (22 bits).
pub const MAX_COUNTER: u32 = field::meta::COUNTER_MASK;
/// The largest MillisTimestamp (10 bits).
pub const MAX_MILLIS: u16 = field::meta::MILLIS_MASK as u16;

/// `MillisTimestamp(10) | Counter(22)` as one word.
#[inline]
pub const fn high_res_ts(millis: u16, counter: u32) -> u32 {
    use field::meta::{COUNTER_MASK, MILLIS_MASK, MILLIS_SHIFT};
    ((millis as u32 & MILLIS_MASK) << MILLIS_SHIFT) | (counter & COUNTER_MASK)
}

/// The word `ResID | BW` of a flyover hop field and of A_K's input block (each cut to its
/// width).
#[inline]
pub(crate) fn res_word(res_id: u32, bw: u16) -> u32 {
    use field::flyover::{BW_MASK, RES_ID_SHIFT};
    ((res_id & MAX_RES_ID) << RES_ID_SHIFT) | (u32::from(bw) & BW_MASK)
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HbirdPathError {
    #[error("path buffer too short")]
    Truncated,
    #[error("segment lengths {0:?} leave a gap, describe no segment, or exceed 127 lines")]
    BadSegLens([u8; 3]),
    #[error("path length {actual} does not match the {expected} bytes its meta header describes")]
    LengthMismatch { expected: usize, actual: usize },
    #[error("hop fields do not tile segment {0} exactly")]
    Misaligned(usize),
    #[error("CurrINF/CurrHF do not point at a hop field of the current segment")]
    IndexOutOfRange,
    #[error("CurrHF {0} exceeds the 8-bit field")]
    CurrHfTooLarge(usize),
    #[error("{field} value {value} exceeds its bit width")]
    FieldOverflow { field: &'static str, value: u32 },
}

impl From<HbirdPathError> for DropReason {
    fn from(e: HbirdPathError) -> Self {
        match e {
            HbirdPathError::IndexOutOfRange => DropReason::PathIndexOutOfRange,
            _ => DropReason::MalformedPath,
        }
    }
}

/// `(offset of the first hop field, number of hop-field lines)` of a path whose length
/// matches its meta header.
pub fn hop_area(path: &[u8]) -> Option<(usize, usize)> {
    let meta = MetaHdr::parse(path).ok()?;
    let ninf = num_info_fields(meta.seg_len).ok().filter(|n| *n > 0)?;
    let lines: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
    let base = META_LEN + INFO_LEN * ninf;
    (path.len() == base + 4 * lines).then_some((base, lines))
}

/// The 12-byte meta header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaHdr {
    pub curr_inf: u8,
    /// Current hop field, in 4-byte lines.
    pub curr_hf: u8,
    /// Segment lengths in 4-byte lines.
    pub seg_len: [u8; 3],
    pub base_ts: u32,
    /// 10 bits.
    pub millis: u16,
    /// 22 bits.
    pub counter: u32,
}

impl MetaHdr {
    /// Decodes the first 12 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, HbirdPathError> {
        let b = b.get(..META_LEN).ok_or(HbirdPathError::Truncated)?;
        Ok(Self::from_bytes(b.try_into().expect("META_LEN bytes")))
    }
    #[inline]
    pub fn from_bytes(b: &[u8; META_LEN]) -> Self {
        let (curr_inf, curr_hf, seg_len) = Self::decode_word0(be_u32(&b[field::meta::WORD]));
        let t = be_u32(&b[field::meta::HIGH_RES_TS]);
        Self {
            curr_inf,
            curr_hf,
            seg_len,
            base_ts: be_u32(&b[field::meta::BASE_TS]),
            millis: ((t >> field::meta::MILLIS_SHIFT) & field::meta::MILLIS_MASK) as u16,
            counter: t & field::meta::COUNTER_MASK,
        }
    }
    /// CurrINF, CurrHF and the segment lengths of the first word.
    #[inline]
    pub fn decode_word0(w: u32) -> (u8, u8, [u8; 3]) {
        use field::meta::*;
        let seg = |i: usize| ((w >> SEG_LEN_SHIFT[i]) & SEG_LEN_MASK) as u8;
        (
            ((w >> CURR_INF_SHIFT) & CURR_INF_MASK) as u8,
            ((w >> CURR_HF_SHIFT) & CURR_HF_MASK) as u8,
            [seg(0), seg(1), seg(2)],
        )
    }
    /// The first word `w` with CurrINF and CurrHF replaced (the reserved bit written as zero),
    /// as [`Self::encode_word0`] of its decoded fields with those indices.
    #[inline]
    pub fn advance_word0(w: u32, curr_inf: usize, curr_hf: usize) -> [u8; 4] {
        use field::meta::*;
        ((((curr_inf as u32) & CURR_INF_MASK) << CURR_INF_SHIFT)
            | (((curr_hf as u32) & CURR_HF_MASK) << CURR_HF_SHIFT)
            | (w & SEG_LENS))
            .to_be_bytes()
    }
    /// The first word (indices and segment lengths) alone.
    pub fn encode_word0(&self) -> [u8; 4] {
        use field::meta::*;
        let seg = |i: usize| (u32::from(self.seg_len[i]) & SEG_LEN_MASK) << SEG_LEN_SHIFT[i];
        let w = ((u32::from(self.curr_inf) & CURR_INF_MASK) << CURR_INF_SHIFT)
            | ((u32::from(self.curr_hf) & CURR_HF_MASK) << CURR_HF_SHIFT)
            | seg(0)
            | seg(1)
            | seg(2);
        w.to_be_bytes()
    }
    /// Writes the meta header into `out[..META_LEN]`; panics if `out` is shorter.
    pub fn emit(&self, out: &mut [u8]) {
        out[field::meta::WORD].copy_from_slice(&self.encode_word0());
        out[field::meta::BASE_TS].copy_from_slice(&self.base_ts.to_be_bytes());
        out[field::meta::HIGH_RES_TS].copy_from_slice(&high_res_ts(self.millis, self.counter).to_be_bytes());
    }
}

#[inline]
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().expect("a 4-byte field"))
}

#[inline]
fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes(b.try_into().expect("a 2-byte field"))
}

/// The reservation part of a flyover hop field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flyover {
    pub res_id: u32,
    pub bw: u16,
    /// BaseTimestamp − ResStart, seconds.
    pub res_start_offset: u16,
    pub res_duration: u16,
}

impl Flyover {
    /// Reads the reservation fields of the flyover hop field `b`.
    #[inline]
    pub fn from_hop_bytes(b: &[u8; FLYOVER_LEN]) -> Self {
        use field::flyover;
        let w = be_u32(&b[flyover::RES]);
        Self {
            res_id: w >> flyover::RES_ID_SHIFT,
            bw: (w & flyover::BW_MASK) as u16,
            res_start_offset: be_u16(&b[flyover::RES_START_OFFSET]),
            res_duration: be_u16(&b[flyover::RES_DURATION]),
        }
    }
    /// Writes the reservation fields into the flyover hop field `out[..FLYOVER_LEN]` (panics if
    /// shorter); the hop field part is left alone.
    pub fn emit_into_hop(&self, out: &mut [u8]) {
        use field::flyover;
        out[flyover::RES].copy_from_slice(&res_word(self.res_id, self.bw).to_be_bytes());
        out[flyover::RES_START_OFFSET].copy_from_slice(&self.res_start_offset.to_be_bytes());
        out[flyover::RES_DURATION].copy_from_slice(&self.res_duration.to_be_bytes());
    }
    fn check(&self) -> Result<(), HbirdPathError> {
        if self.res_id > MAX_RES_ID {
            return Err(HbirdPathError::FieldOverflow { field: "ResID", value: self.res_id });
        }
        if u32::from(self.bw) > field::flyover::BW_MASK {
            return Err(HbirdPathError::FieldOverflow { field: "BW", value: self.bw.into() });
        }
        Ok(())
    }
}

/// A hop field, with its reservation if it is a flyover. For a flyover, `hop.mac` holds
/// what is on the wire: the AggMAC in flight, the plain hop-field MAC once processed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HbirdHop {
    pub hop: HopField,
    pub flyover: Option<Flyover>,
}

impl HbirdHop {
    pub fn lines(&self) -> usize {
        if self.flyover.is_some() {
            FLYOVER_LINES
        } else {
            HOP_LINES
        }
    }
    /// Parses the hop field (12 bytes, or 20 for a flyover) that opens `b`.
    pub fn parse(b: &[u8]) -> Result<Self, HbirdPathError> {
        let first = b.first().ok_or(HbirdPathError::Truncated)?;
        let len = if first & FLYOVER_BIT != 0 { FLYOVER_LEN } else { HOP_LEN };
        let b = b.get(..len).ok_or(HbirdPathError::Truncated)?;
        let hop = HopField::from_bytes(b[..HOP_LEN].try_into().expect("HOP_LEN bytes"));
        let flyover = b.try_into().ok().map(Flyover::from_hop_bytes);
        Ok(Self { hop, flyover })
    }
    /// Writes the hop field into `out[..4 * self.lines()]`; panics if `out` is shorter.
    pub fn emit(&self, out: &mut [u8]) {
        self.hop.emit(out);
        if let Some(f) = &self.flyover {
            out[field::flyover::FLAGS] |= FLYOVER_BIT;
            f.emit_into_hop(out);
        }
    }
}

/// Owned Hummingbird path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HbirdPath {
    pub curr_inf: u8,
    /// Current hop field in lines.
    pub curr_hf: u8,
    pub base_ts: u32,
    pub millis: u16,
    pub counter: u32,
    pub info: Vec<InfoField>,
    /// Hop fields per segment.
    pub segments: Vec<Vec<HbirdHop>>,
}

fn seg_lines(hops: &[HbirdHop]) -> usize {
    hops.iter().map(HbirdHop::lines).sum()
}

impl HbirdPath {
    pub fn seg_len(&self) -> [u8; 3] {
        let mut s = [0u8; 3];
        for (i, seg) in self.segments.iter().enumerate().take(3) {
            s[i] = seg_lines(seg).min(255) as u8;
        }
        s
    }
    pub fn len(&self) -> usize {
        META_LEN + INFO_LEN * self.info.len() + 4 * self.segments.iter().map(|s| seg_lines(s)).sum::<usize>()
    }
    pub fn is_empty(&self) -> bool {
        self.segments.iter().all(Vec::is_empty)
    }
    pub fn hops(&self) -> impl Iterator<Item = &HbirdHop> {
        self.segments.iter().flatten()
    }

    /// Line offset of every hop field, in path order, with its segment.
    fn hop_lines(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut line = 0;
        for (s, seg) in self.segments.iter().enumerate() {
            for h in seg {
                out.push((line, s));
                line += h.lines();
            }
        }
        out
    }

    pub fn validate(&self) -> Result<(), HbirdPathError> {
        let n = self.segments.len();
        if n == 0 || n > 3 || self.info.len() != n || self.segments.iter().any(Vec::is_empty) {
            return Err(HbirdPathError::BadSegLens(self.seg_len()));
        }
        if self.segments.iter().any(|s| seg_lines(s) > MAX_SEG_LINES) {
            return Err(HbirdPathError::BadSegLens(self.seg_len()));
        }
        for f in self.hops().filter_map(|h| h.flyover.as_ref()) {
            f.check()?;
        }
        if self.millis > MAX_MILLIS {
            return Err(HbirdPathError::FieldOverflow { field: "MillisTimestamp", value: self.millis.into() });
        }
        if self.counter > MAX_COUNTER {
            return Err(HbirdPathError::FieldOverflow { field: "Counter", value: self.counter });
        }
        let lines = self.hop_lines();
        let last = lines.last().map(|l| l.0).unwrap_or(0);
        if last > 255 {
            return Err(HbirdPathError::CurrHfTooLarge(last));
        }
        match lines.iter().find(|(l, _)| *l == usize::from(self.curr_hf)) {
            Some((_, s)) if *s == usize::from(self.curr_inf) => Ok(()),
            _ => Err(HbirdPathError::IndexOutOfRange),
        }
    }

    /// Parses a path that fills `b` exactly.
    pub fn parse(b: &[u8]) -> Result<Self, HbirdPathError> {
        let meta = MetaHdr::parse(b)?;
        let ninf = num_info_fields(meta.seg_len).map_err(|_| HbirdPathError::BadSegLens(meta.seg_len))?;
        if ninf == 0 {
            return Err(HbirdPathError::BadSegLens(meta.seg_len));
        }
        let total: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
        let expected = META_LEN + INFO_LEN * ninf + 4 * total;
        if b.len() != expected {
            return Err(HbirdPathError::LengthMismatch { expected, actual: b.len() });
        }
        let info = (0..ninf)
            .map(|i| InfoField::parse(&b[META_LEN + INFO_LEN * i..]).map_err(|_| HbirdPathError::Truncated))
            .collect::<Result<_, _>>()?;
        let base = META_LEN + INFO_LEN * ninf;
        let mut segments = Vec::with_capacity(ninf);
        let mut line = 0;
        for (s, len) in meta.seg_len[..ninf].iter().enumerate() {
            let end = line + usize::from(*len);
            let mut hops = Vec::new();
            while line < end {
                let lines = if b[base + 4 * line] & FLYOVER_BIT != 0 { FLYOVER_LINES } else { HOP_LINES };
                if line + lines > end {
                    return Err(HbirdPathError::Misaligned(s));
                }
                hops.push(HbirdHop::parse(&b[base + 4 * line..])?);
                line += lines;
            }
            segments.push(hops);
        }
        let path = Self {
            curr_inf: meta.curr_inf,
            curr_hf: meta.curr_hf,
            base_ts: meta.base_ts,
            millis: meta.millis,
            counter: meta.counter,
            info,
            segments,
        };
        // Index and alignment checks; field widths hold by construction.
        let hop_lines = path.hop_lines();
        if let Some((last, _)) = hop_lines.last().filter(|(l, _)| *l > 255) {
            return Err(HbirdPathError::CurrHfTooLarge(*last));
        }
        let (ci, ch) = (usize::from(path.curr_inf), usize::from(path.curr_hf));
        if ci >= ninf || segment_of(meta.seg_len, ch) != ci || !hop_lines.iter().any(|(l, _)| *l == ch) {
            return Err(HbirdPathError::IndexOutOfRange);
        }
        Ok(path)
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, HbirdPathError> {
        self.validate()?;
        let len = self.len();
        if out.len() < len {
            return Err(HbirdPathError::Truncated);
        }
        let meta = MetaHdr {
            curr_inf: self.curr_inf,
            curr_hf: self.curr_hf,
            seg_len: self.seg_len(),
            base_ts: self.base_ts,
            millis: self.millis,
            counter: self.counter,
        };
        meta.emit(out);
        let mut off = META_LEN;
        for i in &self.info {
            i.emit(&mut out[off..]);
            off += INFO_LEN;
        }
        for h in self.hops() {
            h.emit(&mut out[off..]);
            off += 4 * h.lines();
        }
        Ok(len)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, HbirdPathError> {
        let mut v = vec![0; self.len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// Index (in path order) of the current hop field.
    pub fn curr_hop_index(&self) -> Option<usize> {
        self.hop_lines().iter().position(|(l, _)| *l == usize::from(self.curr_hf))
    }

    /// Path reversal (A.8): flyovers become plain hop fields, then segments, hop fields,
    /// C flags and indices are reversed as for the standard path. Timestamps are kept.
    pub fn reverse(&mut self) -> Result<(), HbirdPathError> {
        self.validate()?;
        let curr = self.curr_hop_index().ok_or(HbirdPathError::IndexOutOfRange)?;
        let nhops = self.hops().count();
        for h in self.segments.iter_mut().flatten() {
            h.flyover = None;
        }
        self.segments.reverse();
        for s in &mut self.segments {
            s.reverse();
        }
        self.info.reverse();
        for i in &mut self.info {
            i.cons_dir = !i.cons_dir;
        }
        let new_curr = nhops - 1 - curr;
        self.curr_hf = (HOP_LINES * new_curr) as u8;
        self.curr_inf = (self.info.len() - 1) as u8 - self.curr_inf;
        Ok(())
    }

    /// The same path as a standard SCION path (flyover fields dropped).
    pub fn to_standard(&self) -> Result<StandardPath, HbirdPathError> {
        self.validate()?;
        let mut seg_len = [0u8; 3];
        for (i, s) in self.segments.iter().enumerate() {
            seg_len[i] = s.len() as u8;
        }
        let p = StandardPath {
            curr_inf: self.curr_inf,
            curr_hf: self.curr_hop_index().ok_or(HbirdPathError::IndexOutOfRange)? as u8,
            seg_len,
            info: self.info.clone(),
            hops: self.hops().map(|h| h.hop).collect(),
        };
        p.validate().map_err(|_| HbirdPathError::BadSegLens(self.seg_len()))?;
        Ok(p)
    }

    /// A Hummingbird path without reservations that follows `p`.
    pub fn from_standard(p: &StandardPath) -> Self {
        let mut segments = Vec::new();
        let mut idx = 0;
        for len in p.seg_len.iter().take(p.info.len()) {
            let n = usize::from(*len);
            segments.push(p.hops[idx..idx + n].iter().map(|h| HbirdHop { hop: *h, flyover: None }).collect());
            idx += n;
        }
        Self {
            curr_inf: p.curr_inf,
            curr_hf: (HOP_LINES * usize::from(p.curr_hf)) as u8,
            info: p.info.clone(),
            segments,
            ..Default::default()
        }
    }
}
