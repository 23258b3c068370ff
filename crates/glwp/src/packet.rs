//! The transmission header carried in a SCION packet: as the path of aviary's path type
//! [`PATH_TYPE`] (252), zero-padded to SCION's 4-byte header granularity. The header's Src is
//! the packet's SrcIA; `pkt_len`, which the hop authenticators bind, is the whole SCION packet
//! (common, address and path header and payload). docs/glwp.md has the field diagram.

use aviary_scion::{path_type, HeaderError as ScionHeaderError, IsdAsn, ScionHeader, ScionPacket, ScionView};

use crate::header::field::HA_LEN;
use crate::header::{header_len, EmitError, Header, HeaderError, HeaderRepr};
use crate::hop_key::hop_authenticators;
use crate::matrix::InterfaceId;

/// SCION path type of a packet carrying a GLWP header.
pub const PATH_TYPE: u8 = path_type::GLWP;

/// Length of the SCION path for λ on-path ASes: the header rounded up to 4 bytes.
pub const fn path_len(lambda: u8) -> usize {
    // Rounded with a mask (two instructions where `next_multiple_of` compiled to five in the
    // router's stage 1); at most 38 + 7 · 255 bytes, far from overflowing.
    (header_len(lambda) + 3) & !3
}

/// Why a SCION packet does not carry a well-formed GLWP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error(transparent)]
    Scion(#[from] ScionHeaderError),
    #[error("path type {0} is not GLWP's")]
    PathType(u8),
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("a path of {actual} bytes does not hold exactly one GLWP header of {needed} padded bytes")]
    PathLength { needed: usize, actual: usize },
    #[error("the header's Src is not the packet's source ISD-AS")]
    SrcMismatch,
    #[error("{keys} hop keys for {lambda} on-path ASes")]
    HopKeyCount { lambda: u8, keys: usize },
    #[error(transparent)]
    Emit(#[from] EmitError),
    #[error("the packet is longer than the 65535 bytes its hop authenticators can bind")]
    TooLong,
}

/// Where the GLWP header of a checked packet is, and what its authenticators bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// Byte range of the GLWP header (without padding) in the packet.
    pub header: std::ops::Range<usize>,
    pub src: IsdAsn,
    pub pkt_len: u16,
}

/// Checks the SCION headers of `pkt` and the GLWP header in its path.
pub fn locate(pkt: &[u8]) -> Result<Located, PacketError> {
    locate_header(pkt).map(|(_, at)| at)
}

/// [`locate`] with the checked view of the header, for a caller that reads it next.
pub fn locate_header(pkt: &[u8]) -> Result<(Header<&[u8]>, Located), PacketError> {
    let view = ScionView::new_checked(pkt)?;
    if view.path_type() != PATH_TYPE {
        return Err(PacketError::PathType(view.path_type()));
    }
    let path = view.path_range();
    let header = Header::new_checked(&pkt[path.clone()])?;
    let needed = path_len(header.lambda());
    if path.len() != needed {
        return Err(PacketError::PathLength { needed, actual: path.len() });
    }
    let src = header.src();
    if src != view.src_ia() {
        return Err(PacketError::SrcMismatch);
    }
    let pkt_len = view.pkt_len_u16().ok_or(PacketError::TooLong)?;
    let header_range = path.start..path.start + header.header_len();
    Ok((header, Located { header: header_range, src, pkt_len }))
}

/// The source's part of Alg. 2 (lines 4-6) on a packet whose header holds everything but the
/// hop authenticators: writes `HA_k` from `hop_keys[k - 1]` for each on-path AS k.
pub fn stamp(pkt: &mut [u8], hop_keys: &[[u8; 16]]) -> Result<(), PacketError> {
    let at = locate(pkt)?;
    let mut header = Header::new_checked(&mut pkt[at.header])?;
    if hop_keys.len() != usize::from(header.lambda()) {
        return Err(PacketError::HopKeyCount { lambda: header.lambda(), keys: hop_keys.len() });
    }
    let ts_pkt = header.ts_pkt();
    const CHUNK: usize = 8;
    for (c, keys) in hop_keys.chunks(CHUNK).enumerate() {
        let mut has = [[0u8; HA_LEN]; CHUNK];
        hop_authenticators(keys, at.src, ts_pkt, at.pkt_len, &mut has);
        for (i, ha) in has[..keys.len()].iter().enumerate() {
            header.set_hop_authenticator(CHUNK * c + i + 1, ha);
        }
    }
    Ok(())
}

/// What a source keeps of one allocation (Alg. 1 line 47): the path, AID, β, ts_exp and the
/// hop keys of on-path ASes 1 … λ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceAllocation {
    pub path: Vec<(InterfaceId, InterfaceId)>,
    pub aid: u64,
    pub beta: u32,
    pub ts_exp: u32,
    pub hop_keys: Vec<[u8; 16]>,
}

impl SourceAllocation {
    /// Alg. 2 lines 2-7: a SCION packet with the addresses of `scion` (its path type and path
    /// are replaced), this allocation's header at `ts_pkt` and `payload`, stamped.
    pub fn packet(&self, scion: &ScionHeader, ts_pkt: u64, payload: &[u8]) -> Result<Vec<u8>, PacketError> {
        let header =
            ScionHeader { path_type: PATH_TYPE, path: self.unstamped_path(scion.src_ia, ts_pkt)?, ..scion.clone() };
        let mut pkt = ScionPacket { header, payload: payload.to_vec() }.to_bytes()?;
        stamp(&mut pkt, &self.hop_keys)?;
        Ok(pkt)
    }

    /// The SCION path (of type [`PATH_TYPE`]) of a packet from `src` at `ts_pkt`, padded, with
    /// the hop authenticators still zero: a template a sender sets ts_pkt in and [`stamp`]s.
    pub fn unstamped_path(&self, src: IsdAsn, ts_pkt: u64) -> Result<Vec<u8>, PacketError> {
        let repr = HeaderRepr {
            src,
            hop_pointer: 0,
            path: self.path.clone(),
            beta: self.beta,
            aid: self.aid,
            ts_pkt,
            ts_exp: self.ts_exp,
            hop_authenticators: vec![[0; 3]; self.hop_keys.len()],
        };
        let mut path = vec![0u8; repr.emitted_len()?.next_multiple_of(4)];
        repr.emit(&mut path)?;
        Ok(path)
    }

    /// Sets ts_pkt of a packet built on [`Self::unstamped_path`] and stamps it.
    pub fn restamp(&self, pkt: &mut [u8], ts_pkt: u64) -> Result<(), PacketError> {
        let at = locate(pkt)?;
        Header::new_checked(&mut pkt[at.header])?.set_ts_pkt(ts_pkt);
        stamp(pkt, &self.hop_keys)
    }
}
