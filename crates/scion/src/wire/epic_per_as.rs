//! aviary's EPIC path with a validation field per hop field (Z-Lane), path type
//! [`EPIC_PER_AS`](crate::wire::header::path_type::EPIC_PER_AS). Built on path type 3: the same
//! packet ID and MAC input, a standard path, but a hop validation field for every hop field
//! rather than for the last two, and a destination validation field (DVF) at the end.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       PktID: EpicTS (32)                      |
//! |                       PktID: Counter (32)                     |
//! |Q|  Flags RSV  |                    RSV                        |
//! |            standard path (type 1): meta, info, hop fields     |
//! |                           HVF 0 (32)                          |
//! |                              ...                              |
//! |                         HVF n-1 (32)                          |
//! |                             DVF (32)                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! `n` is the number of hop fields; HVF i belongs to hop field i. Q: the source AS's Z-Lane
//! gateway authorized the packet (its HVFs are AS-level authenticated). The validation fields
//! follow the standard path so that every offset in it is fixed.

use thiserror::Error;

use crate::wire::epic::{PktId, HVF_LEN};
use crate::wire::path::{field as path_field, num_info_fields, MetaHdr, PathError, StandardPath, HOP_LEN, INFO_LEN};
use crate::wire::path::{MAX_HOPS, META_LEN};
use crate::wire::path_view::StandardPathView;

/// Bytes in front of the standard path.
pub const PER_AS_PREFIX_LEN: usize = 12;

/// Field offsets of the per-AS EPIC path from the start of the path header: the one place
/// they are written down. Validation fields are at [`hvf_offset`].
pub mod field {
    use std::ops::Range;
    pub const PKT_ID: Range<usize> = 0..8;
    pub const FLAGS: usize = 8;
    pub const RSV: Range<usize> = 9..12;
    /// Start of the standard path.
    pub const STANDARD_PATH: usize = 12;
    /// Bit of [`FLAGS`]: authorized by the source AS's Z-Lane gateway.
    pub const QOS: u8 = 0x80;
}

/// Offset of HVF `i` in a path whose standard path is `standard_len` bytes long.
pub const fn hvf_offset(standard_len: usize, i: usize) -> usize {
    field::STANDARD_PATH + standard_len + HVF_LEN * i
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PerAsPathError {
    #[error("path buffer too short")]
    Truncated,
    #[error("path length {actual} does not match the {expected} bytes its meta header describes")]
    LengthMismatch { expected: usize, actual: usize },
    #[error("embedded standard path: {0}")]
    Path(#[from] PathError),
    #[error("{hvfs} validation fields for a path of {hops} hop fields")]
    HvfCount { hvfs: usize, hops: usize },
}

/// Length of the standard path whose meta header opens `b`, and its number of hop fields.
fn standard_len(b: &[u8]) -> Result<(usize, usize), PerAsPathError> {
    let word = b.get(path_field::meta::WORD).ok_or(PerAsPathError::Truncated)?;
    let meta = MetaHdr::decode(word.try_into().expect("4 bytes"));
    let hops: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
    if hops > MAX_HOPS {
        return Err(PathError::TooManyHops(hops).into());
    }
    Ok((META_LEN + INFO_LEN * num_info_fields(meta.seg_len)? + HOP_LEN * hops, hops))
}

/// What [`PerAsPathView::new_checked`] proved of a buffer: its length and every length and
/// offset derived from it, so that a later stage can view the same bytes again
/// ([`PerAsPathView::with_layout`]), mutably if it was immutable, without checking them again.
#[derive(Clone, Copy, Debug)]
pub struct PerAsLayout {
    len: usize,
    standard: StandardPathView<()>,
    standard_len: usize,
    hops: usize,
}

/// Zero-copy view over a per-AS EPIC path whose lengths have been checked.
#[derive(Clone, Copy, Debug)]
pub struct PerAsPathView<T> {
    buf: T,
    layout: PerAsLayout,
}

impl<T: AsRef<[u8]>> PerAsPathView<T> {
    /// Checks the embedded standard path and that one HVF per hop field and the DVF fill the
    /// rest of the buffer exactly.
    pub fn new_checked(buf: T) -> Result<Self, PerAsPathError> {
        let b = buf.as_ref();
        let rest = b.get(field::STANDARD_PATH..).ok_or(PerAsPathError::Truncated)?;
        let (standard_len, hops) = standard_len(rest)?;
        let expected = hvf_offset(standard_len, hops + 1);
        if b.len() != expected {
            return Err(PerAsPathError::LengthMismatch { expected, actual: b.len() });
        }
        let standard = StandardPathView::new_checked(&rest[..standard_len])?.rebind(());
        Ok(Self { buf, layout: PerAsLayout { len: expected, standard, standard_len, hops } })
    }

    /// The view of `buf` that `layout` describes, checking only its length: the view's every
    /// offset derives from the lengths in `layout`, which were checked against a buffer of
    /// that length, so every access stays in bounds. The fields it reads are `buf`'s bytes as
    /// they are now; the view matches them when `buf` holds the bytes `layout` was taken from,
    /// as it does for a packet between the stages of one pass (the layout holds the meta
    /// header decoded: CurrINF, CurrHF and the segment lengths are those it was taken with).
    pub fn with_layout(buf: T, layout: PerAsLayout) -> Result<Self, PerAsPathError> {
        let actual = buf.as_ref().len();
        if actual != layout.len {
            return Err(PerAsPathError::LengthMismatch { expected: layout.len, actual });
        }
        Ok(Self { buf, layout })
    }

    /// The checked lengths, for [`PerAsPathView::with_layout`].
    pub fn layout(&self) -> PerAsLayout {
        self.layout
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn pkt_id(&self) -> PktId {
        PktId::from_bytes(self.b()[field::PKT_ID].try_into().expect("8 bytes"))
    }
    /// Whether the source AS's Z-Lane gateway authorized the packet.
    pub fn qos(&self) -> bool {
        self.b()[field::FLAGS] & field::QOS != 0
    }
    pub fn standard(&self) -> StandardPathView<&[u8]> {
        let end = field::STANDARD_PATH + self.layout.standard_len;
        self.layout.standard.rebind(&self.b()[field::STANDARD_PATH..end])
    }
    /// Number of hop fields, and of HVFs.
    pub fn num_hvfs(&self) -> usize {
        self.layout.hops
    }
    /// Offset of HVF `i` in the path; `i <= num_hvfs()` (`num_hvfs()` is the DVF's).
    pub fn hvf_offset(&self, i: usize) -> usize {
        assert!(i <= self.num_hvfs(), "HVF {i} of {}", self.num_hvfs());
        hvf_offset(self.layout.standard_len, i)
    }
    /// HVF `i`; panics if `i >= num_hvfs()`.
    pub fn hvf(&self, i: usize) -> [u8; HVF_LEN] {
        assert!(i < self.num_hvfs(), "HVF {i} of {}", self.num_hvfs());
        self.field_at(self.hvf_offset(i))
    }
    /// All HVFs, in hop-field order.
    pub fn hvfs(&self) -> &[u8] {
        &self.b()[self.hvf_offset(0)..self.hvf_offset(self.num_hvfs())]
    }
    /// The raw packet ID, as it enters the MAC input.
    pub fn pkt_id_bytes(&self) -> [u8; 8] {
        self.b()[field::PKT_ID].try_into().expect("8 bytes")
    }
    pub fn dvf(&self) -> [u8; HVF_LEN] {
        self.field_at(self.hvf_offset(self.num_hvfs()))
    }
    fn field_at(&self, off: usize) -> [u8; HVF_LEN] {
        self.b()[off..off + HVF_LEN].try_into().expect("4 bytes")
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PerAsPathView<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    pub fn set_pkt_id(&mut self, id: PktId) {
        self.b_mut()[field::PKT_ID].copy_from_slice(&id.to_bytes());
    }
    pub fn set_qos(&mut self, qos: bool) {
        let f = &mut self.b_mut()[field::FLAGS];
        *f = if qos { *f | field::QOS } else { *f & !field::QOS };
    }
    /// Sets HVF `i`; panics if `i >= num_hvfs()`.
    pub fn set_hvf(&mut self, i: usize, hvf: [u8; HVF_LEN]) {
        assert!(i < self.num_hvfs(), "HVF {i} of {}", self.num_hvfs());
        let off = self.hvf_offset(i);
        self.b_mut()[off..off + HVF_LEN].copy_from_slice(&hvf);
    }
    /// Every HVF, in hop-field order, [`HVF_LEN`] bytes each: one slice to rewrite them all
    /// without an offset and a bounds check per field.
    pub fn hvfs_mut(&mut self) -> &mut [u8] {
        let range = self.hvf_offset(0)..self.hvf_offset(self.num_hvfs());
        &mut self.b_mut()[range]
    }
    pub fn set_dvf(&mut self, dvf: [u8; HVF_LEN]) {
        let off = self.hvf_offset(self.num_hvfs());
        self.b_mut()[off..off + HVF_LEN].copy_from_slice(&dvf);
    }
}

/// Owned per-AS EPIC path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerAsPath {
    pub pkt_id: PktId,
    pub qos: bool,
    pub path: StandardPath,
    /// One per hop field.
    pub hvfs: Vec<[u8; HVF_LEN]>,
    pub dvf: [u8; HVF_LEN],
}

impl PerAsPath {
    /// A path with zeroed validation fields, to be filled by the source.
    pub fn unsealed(pkt_id: PktId, path: StandardPath) -> Self {
        let hvfs = vec![[0; HVF_LEN]; path.hops.len()];
        Self { pkt_id, qos: false, path, hvfs, dvf: [0; HVF_LEN] }
    }
    pub fn len(&self) -> usize {
        hvf_offset(self.path.len(), self.hvfs.len() + 1)
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Parses a path that fills `b` exactly (as the header's path bytes do).
    pub fn parse(b: &[u8]) -> Result<Self, PerAsPathError> {
        let v = PerAsPathView::new_checked(b)?;
        let standard_end = field::STANDARD_PATH + v.layout.standard_len;
        Ok(Self {
            pkt_id: v.pkt_id(),
            qos: v.qos(),
            path: StandardPath::parse(&b[field::STANDARD_PATH..standard_end])?,
            hvfs: (0..v.num_hvfs()).map(|i| v.hvf(i)).collect(),
            dvf: v.dvf(),
        })
    }
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, PerAsPathError> {
        if self.hvfs.len() != self.path.hops.len() {
            return Err(PerAsPathError::HvfCount { hvfs: self.hvfs.len(), hops: self.path.hops.len() });
        }
        let len = self.len();
        if out.len() < len {
            return Err(PerAsPathError::Truncated);
        }
        let standard_len = self.path.emit(&mut out[field::STANDARD_PATH..])?;
        out[field::PKT_ID].copy_from_slice(&self.pkt_id.to_bytes());
        out[field::FLAGS] = if self.qos { field::QOS } else { 0 };
        out[field::RSV].fill(0);
        for (i, h) in self.hvfs.iter().chain([&self.dvf]).enumerate() {
            let off = hvf_offset(standard_len, i);
            out[off..off + HVF_LEN].copy_from_slice(h);
        }
        Ok(len)
    }
    pub fn to_bytes(&self) -> Result<Vec<u8>, PerAsPathError> {
        let mut v = vec![0; self.len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::path::tests::arb_standard_path;
    use proptest::prelude::*;

    fn arb_per_as() -> impl Strategy<Value = PerAsPath> {
        (arb_standard_path(), any::<(u32, u32)>(), any::<bool>(), any::<[u8; 4]>(), any::<u8>()).prop_map(
            |(path, (epic_ts, counter), qos, dvf, seed)| {
                let hvfs = (0..path.hops.len()).map(|i| [seed, i as u8, 0xa5, !seed]).collect();
                PerAsPath { pkt_id: PktId { epic_ts, counter }, qos, path, hvfs, dvf }
            },
        )
    }

    proptest! {
        #[test]
        fn repr_round_trips(p in arb_per_as()) {
            let bytes = p.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), p.len());
            prop_assert_eq!(PerAsPath::parse(&bytes).unwrap(), p.clone());
            let v = PerAsPathView::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!((v.pkt_id(), v.qos(), v.dvf()), (p.pkt_id, p.qos, p.dvf));
            prop_assert_eq!(v.hvfs().len(), 4 * p.hvfs.len());
            prop_assert_eq!(v.standard().num_hops(), p.path.hops.len());
        }

        #[test]
        fn setters_write_only_their_field(p in arb_per_as(), at: prop::sample::Index, hvf: [u8; 4], qos: bool) {
            let mut bytes = p.to_bytes().unwrap();
            let i = at.index(p.hvfs.len());
            let mut v = PerAsPathView::new_checked(&mut bytes[..]).unwrap();
            v.set_hvf(i, hvf);
            v.set_qos(qos);
            v.set_dvf(hvf);
            let mut want = p.clone();
            (want.hvfs[i], want.qos, want.dvf) = (hvf, qos, hvf);
            prop_assert_eq!(PerAsPath::parse(&bytes).unwrap(), want);
        }

        #[test]
        fn wrong_lengths_are_rejected(p in arb_per_as(), cut in 1usize..8) {
            let bytes = p.to_bytes().unwrap();
            prop_assert!(PerAsPathView::new_checked(&bytes[..bytes.len() - cut]).is_err());
            let mut longer = bytes.clone();
            longer.extend_from_slice(&[0; 4]);
            let is_mismatch = matches!(PerAsPathView::new_checked(&longer[..]), Err(PerAsPathError::LengthMismatch { .. }));
            prop_assert!(is_mismatch);
        }

        #[test]
        fn a_layout_views_the_same_bytes_again(p in arb_per_as(), at: prop::sample::Index, hvf: [u8; 4], extra in 1usize..8) {
            let mut bytes = p.to_bytes().unwrap();
            let layout = PerAsPathView::new_checked(&bytes[..]).unwrap().layout();
            let i = at.index(p.hvfs.len());
            let mut v = PerAsPathView::with_layout(&mut bytes[..], layout).unwrap();
            prop_assert_eq!((v.pkt_id(), v.qos(), v.dvf(), v.hvf(i)), (p.pkt_id, p.qos, p.dvf, p.hvfs[i]));
            v.set_hvf(i, hvf);
            let mut want = p.clone();
            want.hvfs[i] = hvf;
            prop_assert_eq!(PerAsPath::parse(&bytes).unwrap(), want);
            let mismatch = |b: &[u8]| matches!(
                PerAsPathView::with_layout(b, layout),
                Err(PerAsPathError::LengthMismatch { .. })
            );
            prop_assert!(mismatch(&bytes[..bytes.len() - extra.min(bytes.len())]));
            bytes.extend_from_slice(&vec![0; extra]);
            prop_assert!(mismatch(&bytes));
        }

        /// A layout over other bytes of its length reads garbage, but never out of bounds.
        #[test]
        fn a_layout_over_other_bytes_never_panics(p in arb_per_as(), seed: u8) {
            let bytes = p.to_bytes().unwrap();
            let layout = PerAsPathView::new_checked(&bytes[..]).unwrap().layout();
            let other: Vec<u8> = (0..bytes.len()).map(|i| (i as u8).wrapping_mul(seed) ^ seed).collect();
            let v = PerAsPathView::with_layout(&other[..], layout).unwrap();
            let s = v.standard();
            let _ = (v.pkt_id(), v.qos(), v.dvf(), v.hvfs(), s.curr_hop(), s.curr_info());
            for h in 0..s.num_hops() {
                let _ = s.hop_interfaces(h);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(v) = PerAsPathView::new_checked(&b[..]) {
                let _ = (v.pkt_id(), v.qos(), v.dvf(), v.hvfs(), v.standard().curr_hop());
                prop_assert!(PerAsPath::parse(&b).is_ok());
            }
        }
    }
}
