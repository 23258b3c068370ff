//! The pathval header (the paper's Table III, 101 bytes) and where it sits in a SCION packet.
//!
//! pathval has no deployed wire format. aviary carries the header as one option of SCION's
//! hop-by-hop options extension (NextHdr 200), the extension that SCION routers read on
//! every hop, so that the packet keeps whatever path type it has (see docs/pathval.md):
//!
//! ```text
//!  0               1               2               3
//! |    NextHdr    |  ExtLen = 26   | OptType = 0x50| OptDataLen=101|
//! |                  HiddenSample (32 B)                          |
//! |   HopCount    |          DataHash (16 B) ...                  |
//! |                  SessionID (16 B) ...                         |
//! |                  Timestamp (4 B, Unix s) ...                  |
//! |                  Concealment (16 B) ...                       |
//! |                  ValidationProof (16 B) ...   | PadN: 1, 1, 0 |
//! ```
//!
//! The upper-layer bytes after the hop-by-hop header are the payload that DataHash covers.

use std::ops::Range;

use aviary_scion::wire::extension::{self, HOP_BY_HOP, OPT_PADN};
use aviary_scion::ScionView;
use thiserror::Error;

/// Option type of the pathval header in the hop-by-hop options extension.
pub const OPT_PATHVAL: u8 = 0x50;
/// Length of the header (the option's data).
pub const HEADER_LEN: usize = 101;
/// Length of the hop-by-hop extension header that [`emit_extension`] writes: NextHdr, ExtLen,
/// the option (2 + 101 bytes) and a 3-byte PadN to the next multiple of 4.
pub const EXTENSION_LEN: usize = 108;
/// Length of a key-size field (SessionID, DataHash, proofs).
pub const BLOCK_LEN: usize = 16;
/// Length of HiddenSample (a SHA3-256 digest).
pub const HIDDEN_SAMPLE_LEN: usize = 32;

/// Offsets within the header, in the order of the paper's Table III: the one place they are
/// written down.
pub mod field {
    use std::ops::Range;
    pub const HIDDEN_SAMPLE: Range<usize> = 0..32;
    pub const HOP_COUNT: usize = 32;
    pub const DATA_HASH: Range<usize> = 33..49;
    pub const SESSION_ID: Range<usize> = 49..65;
    pub const TIMESTAMP: Range<usize> = 65..69;
    pub const CONCEALMENT: Range<usize> = 69..85;
    pub const VALIDATION_PROOF: Range<usize> = 85..101;
    /// PPV's plaintext sample mark (the index of the node that samples the packet), in the
    /// first byte of HiddenSample, which PPV does not otherwise use (see [`crate::scheme`]).
    pub const PPV_SAMPLED_NODE: usize = 0;
}

/// Why a packet's pathval header could not be read.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HeaderError {
    #[error("the SCION header is malformed")]
    BadScionHeader,
    #[error("the packet has no hop-by-hop options extension")]
    NoExtension,
    #[error("the hop-by-hop options extension is truncated")]
    TruncatedExtension,
    #[error("the hop-by-hop options extension has no pathval option")]
    NoOption,
    #[error("the pathval option carries {0} bytes instead of 101")]
    BadOptionLength(usize),
    #[error("buffer of {0} bytes is shorter than the 101-byte header")]
    Truncated(usize),
}

/// A checked view of the 101 header bytes.
#[derive(Debug)]
pub struct PathvalView<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> PathvalView<T> {
    /// A view of the first [`HEADER_LEN`] bytes of `buf`.
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let len = buf.as_ref().len();
        if len < HEADER_LEN {
            return Err(HeaderError::Truncated(len));
        }
        Ok(Self { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    fn block(&self, r: Range<usize>) -> [u8; BLOCK_LEN] {
        self.b()[r].try_into().expect("16-byte field")
    }

    pub fn hidden_sample(&self) -> [u8; HIDDEN_SAMPLE_LEN] {
        self.b()[field::HIDDEN_SAMPLE].try_into().expect("32-byte field")
    }
    pub fn hop_count(&self) -> u8 {
        self.b()[field::HOP_COUNT]
    }
    /// PPV only: the index of the node that samples the packet, in plaintext.
    pub fn ppv_sampled_node(&self) -> u8 {
        self.b()[field::PPV_SAMPLED_NODE]
    }
    pub fn data_hash(&self) -> [u8; BLOCK_LEN] {
        self.block(field::DATA_HASH)
    }
    pub fn session_id(&self) -> [u8; BLOCK_LEN] {
        self.block(field::SESSION_ID)
    }
    /// Creation time of the packet at the source, Unix seconds.
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes(self.b()[field::TIMESTAMP].try_into().expect("4-byte field"))
    }
    pub fn concealment(&self) -> [u8; BLOCK_LEN] {
        self.block(field::CONCEALMENT)
    }
    pub fn validation_proof(&self) -> [u8; BLOCK_LEN] {
        self.block(field::VALIDATION_PROOF)
    }
    /// The fields every proof covers, as one value.
    pub fn metadata(&self) -> Metadata {
        Metadata { session_id: self.session_id(), timestamp: self.timestamp(), data_hash: self.data_hash() }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PathvalView<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    pub fn set_hidden_sample(&mut self, v: &[u8; HIDDEN_SAMPLE_LEN]) {
        self.b_mut()[field::HIDDEN_SAMPLE].copy_from_slice(v);
    }
    pub fn set_hop_count(&mut self, v: u8) {
        self.b_mut()[field::HOP_COUNT] = v;
    }
    pub fn set_ppv_sampled_node(&mut self, v: u8) {
        self.b_mut()[field::PPV_SAMPLED_NODE] = v;
    }
    pub fn set_data_hash(&mut self, v: &[u8; BLOCK_LEN]) {
        self.b_mut()[field::DATA_HASH].copy_from_slice(v);
    }
    pub fn set_session_id(&mut self, v: &[u8; BLOCK_LEN]) {
        self.b_mut()[field::SESSION_ID].copy_from_slice(v);
    }
    pub fn set_timestamp(&mut self, v: u32) {
        self.b_mut()[field::TIMESTAMP].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_concealment(&mut self, v: &[u8; BLOCK_LEN]) {
        self.b_mut()[field::CONCEALMENT].copy_from_slice(v);
    }
    pub fn set_validation_proof(&mut self, v: &[u8; BLOCK_LEN]) {
        self.b_mut()[field::VALIDATION_PROOF].copy_from_slice(v);
    }
    /// Writes SessionID, Timestamp and DataHash.
    pub fn set_metadata(&mut self, m: &Metadata) {
        self.set_session_id(&m.session_id);
        self.set_timestamp(m.timestamp);
        self.set_data_hash(&m.data_hash);
    }
}

/// The paper's Metadata, `SessionID | Timestamp | DataHash`: constant along the path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub session_id: [u8; BLOCK_LEN],
    /// Unix seconds.
    pub timestamp: u32,
    pub data_hash: [u8; BLOCK_LEN],
}

impl Metadata {
    pub const LEN: usize = 2 * BLOCK_LEN + 4;

    /// The bytes the proofs cover, in the order `SessionID | Timestamp | DataHash`.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut out = [0; Self::LEN];
        out[..16].copy_from_slice(&self.session_id);
        out[16..20].copy_from_slice(&self.timestamp.to_be_bytes());
        out[20..].copy_from_slice(&self.data_hash);
        out
    }
}

/// Where the pathval header and the payload it covers are in a SCION packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The 101 header bytes.
    pub header: Range<usize>,
    /// Everything after the hop-by-hop options extension.
    pub payload: Range<usize>,
}

/// Finds the pathval option in the hop-by-hop options extension of a SCION packet.
pub fn locate(pkt: &[u8]) -> Result<Located, HeaderError> {
    let scion = ScionView::new_checked(pkt).map_err(|_| HeaderError::BadScionHeader)?;
    if scion.next_hdr() != HOP_BY_HOP {
        return Err(HeaderError::NoExtension);
    }
    let ext_start = scion.hdr_len();
    let ext = &pkt[ext_start..];
    let ext_len = extension::header_len(ext).filter(|l| *l <= ext.len()).ok_or(HeaderError::TruncatedExtension)?;
    let area = &ext[extension::field::OPTIONS..ext_len];
    let (_, data) = extension::option_ranges(area).find(|(t, _)| *t == OPT_PATHVAL).ok_or(HeaderError::NoOption)?;
    if data.len() != HEADER_LEN {
        return Err(HeaderError::BadOptionLength(data.len()));
    }
    let base = ext_start + extension::field::OPTIONS;
    Ok(Located { header: base + data.start..base + data.end, payload: ext_start + ext_len..pkt.len() })
}

/// Writes a hop-by-hop options extension holding only a zeroed pathval header into
/// `out[..EXTENSION_LEN]` (panics if `out` is shorter); `next_hdr` is the header after it.
/// Returns the range of the header bytes within `out`.
pub fn emit_extension(next_hdr: u8, out: &mut [u8]) -> Range<usize> {
    let out = &mut out[..EXTENSION_LEN];
    out.fill(0);
    out[extension::field::NEXT_HDR] = next_hdr;
    out[extension::field::EXT_LEN] = (EXTENSION_LEN / 4 - 1) as u8;
    let opt = extension::field::OPTIONS;
    out[opt] = OPT_PATHVAL;
    out[opt + 1] = HEADER_LEN as u8;
    let pad = opt + 2 + HEADER_LEN;
    // PadN with one data byte fills the last three bytes of the 4-byte line.
    out[pad] = OPT_PADN;
    out[pad + 1] = 1;
    opt + 2..pad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tile_the_101_bytes() {
        let ranges = [
            field::HIDDEN_SAMPLE,
            field::HOP_COUNT..field::HOP_COUNT + 1,
            field::DATA_HASH,
            field::SESSION_ID,
            field::TIMESTAMP,
            field::CONCEALMENT,
            field::VALIDATION_PROOF,
        ];
        let mut at = 0;
        for r in ranges {
            assert_eq!(r.start, at);
            at = r.end;
        }
        assert_eq!(at, HEADER_LEN);
        assert_eq!(EXTENSION_LEN % 4, 0);
    }

    #[test]
    fn setters_and_getters_agree() {
        let mut buf = [0u8; HEADER_LEN];
        let mut v = PathvalView::new_checked(&mut buf[..]).unwrap();
        let m = Metadata { session_id: [1; 16], timestamp: 0xdead_beef, data_hash: [2; 16] };
        v.set_metadata(&m);
        v.set_hidden_sample(&[3; 32]);
        v.set_hop_count(7);
        v.set_concealment(&[4; 16]);
        v.set_validation_proof(&[5; 16]);
        assert_eq!(v.metadata(), m);
        assert_eq!((v.hidden_sample(), v.hop_count()), ([3; 32], 7));
        assert_eq!((v.concealment(), v.validation_proof()), ([4; 16], [5; 16]));
        assert_eq!(buf[field::TIMESTAMP], [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(PathvalView::new_checked(&buf[..100]).unwrap_err(), HeaderError::Truncated(100));
    }
}
