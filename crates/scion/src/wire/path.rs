//! The standard SCION path (path type 1): meta header, info fields, hop fields.
//!
//! ```text
//! PathMetaHdr: | C(2) | CurrHF(6) | RSV(6) | Seg0Len(6) | Seg1Len(6) | Seg2Len(6) |
//! InfoField:   |r r r r r r P C| RSV | SegID(16) | Timestamp(32) |
//! HopField:    |r r r r r r I E| ExpTime | ConsIngress(16) | ConsEgress(16) | MAC(48) |
//! ```

use thiserror::Error;

use crate::mac::{HopMacKey, MAC_LEN};

pub const META_LEN: usize = 4;
pub const INFO_LEN: usize = 8;
pub const HOP_LEN: usize = 12;

/// Field offsets of the path header's parts, each relative to the start of its part: the one
/// place they are written down (Hummingbird's path shares the info and hop field layouts).
pub mod field {
    pub mod meta {
        use std::ops::Range;
        /// CurrINF, CurrHF and the SegLens in one big-endian word.
        pub const WORD: Range<usize> = 0..4;
        /// Where each field sits in [`WORD`] read as a big-endian `u32`: the shift that brings
        /// it to the low bits, and its mask there.
        pub const CURR_INF_SHIFT: u32 = 30;
        pub const CURR_INF_MASK: u32 = 0x3;
        pub const CURR_HF_SHIFT: u32 = 24;
        pub const CURR_HF_MASK: u32 = 0x3f;
        pub const SEG_LEN_SHIFT: [u32; 3] = [12, 6, 0];
        pub const SEG_LEN_MASK: u32 = 0x3f;
        /// The three SegLens together (what stays when CurrINF and CurrHF move; the reserved
        /// bits between them are written as zero).
        pub const SEG_LENS: u32 = (SEG_LEN_MASK << SEG_LEN_SHIFT[0])
            | (SEG_LEN_MASK << SEG_LEN_SHIFT[1])
            | (SEG_LEN_MASK << SEG_LEN_SHIFT[2]);
    }
    pub mod info {
        use std::ops::Range;
        pub const FLAGS: usize = 0;
        pub const RSV: usize = 1;
        pub const SEG_ID: Range<usize> = 2..4;
        pub const TIMESTAMP: Range<usize> = 4..8;
        /// Bits of [`FLAGS`].
        pub const PEERING: u8 = 0x02;
        pub const CONS_DIR: u8 = 0x01;
    }
    pub mod hop {
        use std::ops::Range;
        pub const FLAGS: usize = 0;
        pub const EXP_TIME: usize = 1;
        pub const CONS_INGRESS: Range<usize> = 2..4;
        pub const CONS_EGRESS: Range<usize> = 4..6;
        pub const MAC: Range<usize> = 6..12;
        /// Bits of [`FLAGS`].
        pub const INGRESS_ALERT: u8 = 0x02;
        pub const EGRESS_ALERT: u8 = 0x01;
    }
}
/// Maximum number of hop fields in a standard path (6-bit CurrHF and SegLen).
pub const MAX_HOPS: usize = 63;

/// Unit of ExpTime: 24 h / 256 = 337.5 s, in ns.
pub const EXP_TIME_UNIT_NS: u64 = 337_500_000_000;

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path buffer too short")]
    Truncated,
    #[error("segment lengths {0:?} leave a gap or describe no segment")]
    BadSegLens([u8; 3]),
    #[error("path length {actual} does not match the {expected} bytes its meta header describes")]
    LengthMismatch { expected: usize, actual: usize },
    #[error("CurrINF/CurrHF point outside the path or into different segments")]
    IndexOutOfRange,
    #[error("path has {0} hop fields, more than the format allows")]
    TooManyHops(usize),
    #[error("peering flag set on a path that is not a two-segment peering path")]
    BadPeering,
    #[error("cannot reverse a path whose hop or info count is zero")]
    Empty,
}

/// Number of info fields implied by the segment lengths; errors on a gap (`Seg1Len = 0`
/// with `Seg2Len > 0`, ...).
#[inline]
pub fn num_info_fields(seg_len: [u8; 3]) -> Result<usize, PathError> {
    // Segment by segment, the common shapes first: matched as a whole, a router's stage 1 of
    // path type 5 ran 6 instructions more a flyover packet (callgrind, 2026-11-26).
    let [a, b, c] = seg_len;
    let gap = Err(PathError::BadSegLens(seg_len));
    if a == 0 {
        return if b == 0 && c == 0 { Ok(0) } else { gap };
    }
    if b == 0 {
        return if c == 0 { Ok(1) } else { gap };
    }
    Ok(2 + usize::from(c != 0))
}

/// Index of the segment that contains unit offset `hf` (hop index for the standard path,
/// 4-byte line for Hummingbird), given segment lengths in the same unit.
#[inline]
pub fn segment_of(seg_len: [u8; 3], hf: usize) -> usize {
    let (a, b) = (usize::from(seg_len[0]), usize::from(seg_len[1]));
    if hf < a {
        0
    } else if hf < a + b {
        1
    } else {
        2
    }
}

/// Absolute expiry of a hop field in ns since the Unix epoch.
#[inline]
pub fn hop_expiry_ns(info_timestamp: u32, exp_time: u8) -> u64 {
    u64::from(info_timestamp) * 1_000_000_000 + (u64::from(exp_time) + 1) * EXP_TIME_UNIT_NS
}

/// Standard path meta header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaHdr {
    pub curr_inf: u8,
    pub curr_hf: u8,
    pub seg_len: [u8; 3],
}

impl MetaHdr {
    pub fn decode(b: [u8; 4]) -> Self {
        use field::meta::*;
        let v = u32::from_be_bytes(b);
        let seg = |i: usize| ((v >> SEG_LEN_SHIFT[i]) & SEG_LEN_MASK) as u8;
        Self {
            curr_inf: ((v >> CURR_INF_SHIFT) & CURR_INF_MASK) as u8,
            curr_hf: ((v >> CURR_HF_SHIFT) & CURR_HF_MASK) as u8,
            seg_len: [seg(0), seg(1), seg(2)],
        }
    }
    pub fn encode(&self) -> [u8; 4] {
        use field::meta::*;
        let seg = |i: usize| (u32::from(self.seg_len[i]) & SEG_LEN_MASK) << SEG_LEN_SHIFT[i];
        let v = ((u32::from(self.curr_inf) & CURR_INF_MASK) << CURR_INF_SHIFT)
            | ((u32::from(self.curr_hf) & CURR_HF_MASK) << CURR_HF_SHIFT)
            | seg(0)
            | seg(1)
            | seg(2);
        v.to_be_bytes()
    }
}

/// An info field; the same in standard and Hummingbird paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InfoField {
    pub peering: bool,
    /// C: hop fields are in construction direction.
    pub cons_dir: bool,
    pub seg_id: u16,
    pub timestamp: u32,
}

impl InfoField {
    /// Parses the first 8 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, PathError> {
        let b = b.get(..INFO_LEN).ok_or(PathError::Truncated)?;
        Ok(Self::from_bytes(b.try_into().expect("INFO_LEN bytes")))
    }
    #[inline]
    pub fn from_bytes(b: &[u8; INFO_LEN]) -> Self {
        use field::info;
        Self {
            peering: b[info::FLAGS] & info::PEERING != 0,
            cons_dir: b[info::FLAGS] & info::CONS_DIR != 0,
            seg_id: u16::from_be_bytes(b[info::SEG_ID].try_into().expect("2 bytes")),
            timestamp: u32::from_be_bytes(b[info::TIMESTAMP].try_into().expect("4 bytes")),
        }
    }
    /// Writes the field into `out[..INFO_LEN]`; panics if `out` is shorter.
    pub fn emit(&self, out: &mut [u8]) {
        use field::info;
        let peering = if self.peering { info::PEERING } else { 0 };
        out[info::FLAGS] = peering | if self.cons_dir { info::CONS_DIR } else { 0 };
        out[info::RSV] = 0;
        out[info::SEG_ID].copy_from_slice(&self.seg_id.to_be_bytes());
        out[info::TIMESTAMP].copy_from_slice(&self.timestamp.to_be_bytes());
    }
}

/// Overwrites the SegID of the info field at `info_off` of `path`.
#[inline]
pub fn set_seg_id(path: &mut [u8], info_off: usize, seg_id: u16) {
    path[info_off..][field::info::SEG_ID].copy_from_slice(&seg_id.to_be_bytes());
}

/// A hop field; the same 12 bytes open a Hummingbird (flyover) hop field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HopField {
    pub ingress_alert: bool,
    pub egress_alert: bool,
    pub exp_time: u8,
    pub cons_ingress: u16,
    pub cons_egress: u16,
    pub mac: [u8; MAC_LEN],
}

impl HopField {
    /// Parses the first 12 bytes of `b`; reserved flag bits are ignored.
    pub fn parse(b: &[u8]) -> Result<Self, PathError> {
        let b = b.get(..HOP_LEN).ok_or(PathError::Truncated)?;
        Ok(Self::from_bytes(b.try_into().expect("HOP_LEN bytes")))
    }
    #[inline]
    pub fn from_bytes(b: &[u8; HOP_LEN]) -> Self {
        use field::hop;
        Self {
            ingress_alert: b[hop::FLAGS] & hop::INGRESS_ALERT != 0,
            egress_alert: b[hop::FLAGS] & hop::EGRESS_ALERT != 0,
            exp_time: b[hop::EXP_TIME],
            cons_ingress: u16::from_be_bytes(b[hop::CONS_INGRESS].try_into().expect("2 bytes")),
            cons_egress: u16::from_be_bytes(b[hop::CONS_EGRESS].try_into().expect("2 bytes")),
            mac: b[hop::MAC].try_into().expect("MAC_LEN bytes"),
        }
    }
    /// Writes the field into `out[..HOP_LEN]`; panics if `out` is shorter. The flag bits this
    /// format does not define are cleared.
    pub fn emit(&self, out: &mut [u8]) {
        use field::hop;
        let ingress = if self.ingress_alert { hop::INGRESS_ALERT } else { 0 };
        out[hop::FLAGS] = ingress | if self.egress_alert { hop::EGRESS_ALERT } else { 0 };
        out[hop::EXP_TIME] = self.exp_time;
        out[hop::CONS_INGRESS].copy_from_slice(&self.cons_ingress.to_be_bytes());
        out[hop::CONS_EGRESS].copy_from_slice(&self.cons_egress.to_be_bytes());
        out[hop::MAC].copy_from_slice(&self.mac);
    }
    /// `(ingress, egress)` in the direction of travel.
    pub fn travel_interfaces(&self, cons_dir: bool) -> (u16, u16) {
        if cons_dir {
            (self.cons_ingress, self.cons_egress)
        } else {
            (self.cons_egress, self.cons_ingress)
        }
    }
    /// The MAC this hop field must carry under `seg_id` and the info field's timestamp.
    pub fn compute_mac(&self, key: &HopMacKey, seg_id: u16, timestamp: u32) -> [u8; MAC_LEN] {
        key.hop_mac(seg_id, timestamp, self.exp_time, self.cons_ingress, self.cons_egress)
    }
}

/// SegID chaining: the SegID after (construction direction) hop `mac`.
#[inline]
pub fn chain_seg_id(seg_id: u16, mac: &[u8; MAC_LEN]) -> u16 {
    seg_id ^ u16::from_be_bytes([mac[0], mac[1]])
}

/// Owned standard path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StandardPath {
    pub curr_inf: u8,
    pub curr_hf: u8,
    /// Hop fields per segment.
    pub seg_len: [u8; 3],
    pub info: Vec<InfoField>,
    pub hops: Vec<HopField>,
}

impl StandardPath {
    pub fn len(&self) -> usize {
        META_LEN + INFO_LEN * self.info.len() + HOP_LEN * self.hops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }

    /// Parses a path that fills `b` exactly (as the header's path bytes do).
    pub fn parse(b: &[u8]) -> Result<Self, PathError> {
        let v = crate::wire::path_view::StandardPathView::new_checked(b)?;
        let meta = v.meta();
        Ok(Self {
            curr_inf: meta.curr_inf,
            curr_hf: meta.curr_hf,
            seg_len: meta.seg_len,
            info: (0..v.num_info_fields()).map(|i| v.info(i)).collect(),
            hops: (0..v.num_hops()).map(|i| v.hop(i)).collect(),
        })
    }

    /// Checks the invariants that [`parse`](Self::parse) enforces.
    pub fn validate(&self) -> Result<(), PathError> {
        let ninf = num_info_fields(self.seg_len)?;
        let nhf: usize = self.seg_len.iter().map(|l| usize::from(*l)).sum();
        if ninf == 0 || ninf != self.info.len() || nhf != self.hops.len() {
            return Err(PathError::BadSegLens(self.seg_len));
        }
        if nhf > MAX_HOPS {
            return Err(PathError::TooManyHops(nhf));
        }
        let (ci, ch) = (usize::from(self.curr_inf), usize::from(self.curr_hf));
        if ch >= nhf || ci >= ninf || segment_of(self.seg_len, ch) != ci {
            return Err(PathError::IndexOutOfRange);
        }
        Ok(())
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, PathError> {
        self.validate()?;
        let len = self.len();
        if out.len() < len {
            return Err(PathError::Truncated);
        }
        let meta = MetaHdr { curr_inf: self.curr_inf, curr_hf: self.curr_hf, seg_len: self.seg_len };
        out[field::meta::WORD].copy_from_slice(&meta.encode());
        let mut off = META_LEN;
        for i in &self.info {
            i.emit(&mut out[off..]);
            off += INFO_LEN;
        }
        for h in &self.hops {
            h.emit(&mut out[off..]);
            off += HOP_LEN;
        }
        Ok(len)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, PathError> {
        let mut v = vec![0; self.len()];
        self.emit(&mut v)?;
        Ok(v)
    }

    /// Reverses the path for the way back: segments and hop fields in reverse order, the
    /// C flag of every info field flipped, the current indices mirrored.
    pub fn reverse(&mut self) -> Result<(), PathError> {
        self.validate()?;
        let ninf = self.info.len();
        self.info.reverse();
        for i in &mut self.info {
            i.cons_dir = !i.cons_dir;
        }
        self.hops.reverse();
        let mut seg_len = [0u8; 3];
        for (i, l) in self.seg_len[..ninf].iter().rev().enumerate() {
            seg_len[i] = *l;
        }
        self.seg_len = seg_len;
        self.curr_inf = (ninf - 1) as u8 - self.curr_inf;
        self.curr_hf = (self.hops.len() - 1) as u8 - self.curr_hf;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The info fields of every combination of empty, short and long segments, as the rule
    /// says them case by case: a first segment and no gap.
    #[test]
    fn num_info_fields_of_every_shape() {
        for seg_len in (0..27).map(|i: usize| [i % 3, i / 3 % 3, i / 9].map(|l| [0, 1, 0x7f][l])) {
            let expected = match seg_len {
                [0, 0, 0] => Ok(0),
                [a, 0, 0] if a > 0 => Ok(1),
                [a, b, 0] if a > 0 && b > 0 => Ok(2),
                [a, b, c] if a > 0 && b > 0 && c > 0 => Ok(3),
                _ => Err(PathError::BadSegLens(seg_len)),
            };
            assert_eq!(num_info_fields(seg_len), expected, "{seg_len:?}");
        }
    }

    /// A valid standard path: 1–3 segments of 1–8 hop fields, CurrHF anywhere, CurrINF its
    /// segment (for the path types that embed a standard path).
    pub(crate) fn arb_standard_path() -> impl Strategy<Value = StandardPath> {
        let info = (any::<bool>(), any::<u16>(), any::<u32>()).prop_map(|(cons_dir, seg_id, timestamp)| InfoField {
            peering: false,
            cons_dir,
            seg_id,
            timestamp,
        });
        let hop = (any::<u8>(), any::<u16>(), any::<u16>(), any::<[u8; MAC_LEN]>()).prop_map(
            |(exp_time, cons_ingress, cons_egress, mac)| HopField {
                exp_time,
                cons_ingress,
                cons_egress,
                mac,
                ..Default::default()
            },
        );
        (prop::collection::vec((info, prop::collection::vec(hop, 1..=8)), 1..=3), any::<prop::sample::Index>())
            .prop_map(|(segs, at)| {
                let mut seg_len = [0u8; 3];
                for (i, (_, h)) in segs.iter().enumerate() {
                    seg_len[i] = h.len() as u8;
                }
                let hops: Vec<HopField> = segs.iter().flat_map(|(_, h)| h.clone()).collect();
                let curr_hf = at.index(hops.len());
                StandardPath {
                    curr_inf: segment_of(seg_len, curr_hf) as u8,
                    curr_hf: curr_hf as u8,
                    seg_len,
                    info: segs.iter().map(|(i, _)| *i).collect(),
                    hops,
                }
            })
    }
}
