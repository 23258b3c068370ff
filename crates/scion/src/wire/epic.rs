//! EPIC-HP, SCION path type 3: a packet ID and the hop validation fields of the last two
//! hops in front of a standard path (type 1), byte-compatible with scionproto's
//! `slayers/path/epic`.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       PktID: EpicTS (32)                      |
//! |                       PktID: Counter (32)                     |
//! |                            PHVF (32)                          |
//! |                            LHVF (32)                          |
//! |            standard path (type 1): meta, info, hop fields     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use thiserror::Error;

use crate::wire::path::{PathError, StandardPath};
use crate::wire::path_view::StandardPathView;

/// Bytes in front of the standard path.
pub const EPIC_PREFIX_LEN: usize = 16;
/// Length of a hop validation field (PHVF, LHVF).
pub const HVF_LEN: usize = 4;

/// Field offsets of path type 3 from the start of the path header: the one place they are
/// written down. The standard path's own fields are in `crate::wire::path::field`.
pub mod field {
    use std::ops::Range;
    /// The packet ID: EpicTS, then Counter.
    pub const PKT_ID: Range<usize> = 0..8;
    /// EpicTS: time since the first info field's timestamp, in 21 µs units, minus one.
    pub const EPIC_TS: Range<usize> = 0..4;
    pub const COUNTER: Range<usize> = 4..8;
    /// Hop validation field of the penultimate hop.
    pub const PHVF: Range<usize> = 8..12;
    /// Hop validation field of the last hop.
    pub const LHVF: Range<usize> = 12..16;
    /// Start of the standard path.
    pub const STANDARD_PATH: usize = 16;
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum EpicPathError {
    #[error("path buffer too short for the EPIC packet ID and validation fields")]
    Truncated,
    #[error("embedded standard path: {0}")]
    Path(#[from] PathError),
}

/// The packet ID: EpicTS and a counter that tells apart packets of the same source sent
/// within the same 21 µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PktId {
    pub epic_ts: u32,
    pub counter: u32,
}

impl PktId {
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[field::EPIC_TS].copy_from_slice(&self.epic_ts.to_be_bytes());
        b[field::COUNTER].copy_from_slice(&self.counter.to_be_bytes());
        b
    }
    pub fn from_bytes(b: [u8; 8]) -> Self {
        Self { epic_ts: be_u32(&b[field::EPIC_TS]), counter: be_u32(&b[field::COUNTER]) }
    }
}

/// Zero-copy view over a path type 3 header whose embedded standard path has been checked.
#[derive(Clone, Copy, Debug)]
pub struct EpicPathView<T> {
    buf: T,
    standard: StandardPathView<()>,
}

impl<T: AsRef<[u8]>> EpicPathView<T> {
    /// Checks the prefix length and the embedded standard path (which must fill the rest).
    pub fn new_checked(buf: T) -> Result<Self, EpicPathError> {
        let b = buf.as_ref();
        let rest = b.get(field::STANDARD_PATH..).ok_or(EpicPathError::Truncated)?;
        let standard = StandardPathView::new_checked(rest)?.rebind(());
        Ok(Self { buf, standard })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn pkt_id(&self) -> PktId {
        PktId::from_bytes(self.b()[field::PKT_ID].try_into().expect("8 bytes"))
    }
    pub fn phvf(&self) -> [u8; HVF_LEN] {
        self.b()[field::PHVF].try_into().expect("4 bytes")
    }
    pub fn lhvf(&self) -> [u8; HVF_LEN] {
        self.b()[field::LHVF].try_into().expect("4 bytes")
    }
    /// The embedded standard path.
    pub fn standard(&self) -> StandardPathView<&[u8]> {
        self.standard.rebind(&self.b()[field::STANDARD_PATH..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EpicPathView<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    pub fn set_pkt_id(&mut self, id: PktId) {
        self.b_mut()[field::PKT_ID].copy_from_slice(&id.to_bytes());
    }
    pub fn set_phvf(&mut self, hvf: [u8; HVF_LEN]) {
        self.b_mut()[field::PHVF].copy_from_slice(&hvf);
    }
    pub fn set_lhvf(&mut self, hvf: [u8; HVF_LEN]) {
        self.b_mut()[field::LHVF].copy_from_slice(&hvf);
    }
    /// The embedded standard path, for its setters.
    pub fn standard_mut(&mut self) -> StandardPathView<&mut [u8]> {
        let s = self.standard;
        s.rebind(&mut self.b_mut()[field::STANDARD_PATH..])
    }
}

/// Owned path type 3.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EpicPath {
    pub pkt_id: PktId,
    pub phvf: [u8; HVF_LEN],
    pub lhvf: [u8; HVF_LEN],
    pub path: StandardPath,
}

impl EpicPath {
    pub fn len(&self) -> usize {
        EPIC_PREFIX_LEN + self.path.len()
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Parses a path that fills `b` exactly (as the header's path bytes do).
    pub fn parse(b: &[u8]) -> Result<Self, EpicPathError> {
        let v = EpicPathView::new_checked(b)?;
        Ok(Self {
            pkt_id: v.pkt_id(),
            phvf: v.phvf(),
            lhvf: v.lhvf(),
            path: StandardPath::parse(&b[field::STANDARD_PATH..])?,
        })
    }
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EpicPathError> {
        let len = self.len();
        if out.len() < len {
            return Err(EpicPathError::Truncated);
        }
        self.path.emit(&mut out[field::STANDARD_PATH..])?;
        out[field::PKT_ID].copy_from_slice(&self.pkt_id.to_bytes());
        out[field::PHVF].copy_from_slice(&self.phvf);
        out[field::LHVF].copy_from_slice(&self.lhvf);
        Ok(len)
    }
    pub fn to_bytes(&self) -> Result<Vec<u8>, EpicPathError> {
        let mut v = vec![0; self.len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().expect("a 4-byte field"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::path::tests::arb_standard_path;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn repr_round_trips(path in arb_standard_path(), ts: u32, counter: u32, phvf: [u8; 4], lhvf: [u8; 4]) {
            let p = EpicPath { pkt_id: PktId { epic_ts: ts, counter }, phvf, lhvf, path };
            let bytes = p.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), p.len());
            prop_assert_eq!(EpicPath::parse(&bytes).unwrap(), p.clone());
            let v = EpicPathView::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(v.pkt_id(), p.pkt_id);
            prop_assert_eq!((v.phvf(), v.lhvf()), (phvf, lhvf));
            prop_assert_eq!(v.standard().num_hops(), p.path.hops.len());
        }

        #[test]
        fn setters_write_only_their_field(path in arb_standard_path(), id: (u32, u32), hvfs: ([u8; 4], [u8; 4])) {
            let p = EpicPath { path, ..Default::default() };
            let mut bytes = p.to_bytes().unwrap();
            let mut v = EpicPathView::new_checked(&mut bytes[..]).unwrap();
            v.set_pkt_id(PktId { epic_ts: id.0, counter: id.1 });
            v.set_phvf(hvfs.0);
            v.set_lhvf(hvfs.1);
            let q = EpicPath::parse(&bytes).unwrap();
            prop_assert_eq!(q.path, p.path);
            prop_assert_eq!(q.pkt_id, PktId { epic_ts: id.0, counter: id.1 });
            prop_assert_eq!((q.phvf, q.lhvf), hvfs);
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(v) = EpicPathView::new_checked(&b[..]) {
                let _ = (v.pkt_id(), v.phvf(), v.lhvf(), v.standard().curr_hop());
                prop_assert!(EpicPath::parse(&b).is_ok());
            }
        }
    }

    #[test]
    fn short_or_bad_paths_are_typed_errors() {
        assert_eq!(EpicPathView::new_checked(&[0u8; 15][..]).unwrap_err(), EpicPathError::Truncated);
        assert!(matches!(EpicPathView::new_checked(&[0u8; 16][..]).unwrap_err(), EpicPathError::Path(_)));
    }
}
