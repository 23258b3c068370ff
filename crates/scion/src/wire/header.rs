//! SCION common header and address header: a zero-copy view for routers and an owned
//! representation for endpoints.
//!
//! ```text
//!  0       4               12                      32
//! |Version|  TrafficClass |         FlowID        |
//! |    NextHdr    |    HdrLen     |          PayloadLen           |
//! |    PathType   |DT |DL |ST |SL |              RSV              |
//! |            DstISD             |            DstAS ...          |
//! |            SrcISD             |            SrcAS ...          |
//! |   DstHostAddr (4/16 B)  |  SrcHostAddr (4/16 B)  |  Path ...   |
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};

use thiserror::Error;

use crate::IsdAsn;

/// Field offsets of the common and address header: the one place they are written down.
pub mod field {
    use std::ops::Range;

    /// Version (4 bits) and the high nibble of TrafficClass.
    pub const VERSION_TC: usize = 0;
    /// Low nibble of TrafficClass and the 20-bit FlowID.
    pub const TC_FLOW: Range<usize> = 0..4;
    pub const NEXT_HDR: usize = 4;
    /// HdrLen in 4-byte units.
    pub const HDR_LEN: usize = 5;
    pub const PAYLOAD_LEN: Range<usize> = 6..8;
    pub const PATH_TYPE: usize = 8;
    /// DT|DL (high nibble) and ST|SL (low nibble).
    pub const ADDR_TYPES: usize = 9;
    pub const RSV: Range<usize> = 10..12;
    pub const DST_IA: Range<usize> = 12..20;
    pub const SRC_IA: Range<usize> = 20..28;
    /// The destination host address; the source host address follows it.
    pub const DST_HOST: usize = 28;
}

/// Length of the common header.
pub const COMMON_LEN: usize = 12;
/// Offset of the address header (and of DstISD).
pub const ADDR_OFFSET: usize = field::DST_IA.start;
/// Length of the ISD-AS part of the address header.
pub const IA_PAIR_LEN: usize = 16;
/// Largest header the 8-bit HdrLen (4-byte units) can describe.
pub const MAX_HDR_LEN: usize = 255 * 4;

/// Path type numbers of the common header.
pub mod path_type {
    pub const EMPTY: u8 = 0;
    pub const SCION: u8 = 1;
    pub const ONE_HOP: u8 = 2;
    pub const EPIC: u8 = 3;
    pub const COLIBRI: u8 = 4;
    pub const HUMMINGBIRD: u8 = 5;
    /// Not SCION's: aviary's EPIC path with a validation field per hop field (Z-Lane), from
    /// the range SCION leaves unassigned (see docs/epic.md).
    pub const EPIC_PER_AS: u8 = 253;
    /// Not SCION's: aviary's GLWP transmission header (the GLWP paper, Table I) as the path,
    /// from the same unassigned range (see docs/glwp.md).
    pub const GLWP: u8 = 252;
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HeaderError {
    #[error("buffer too short for the SCION header")]
    Truncated,
    #[error("unsupported SCION version {0}")]
    BadVersion(u8),
    #[error("HdrLen and PayloadLen do not add up to the packet length")]
    LengthMismatch,
    #[error("unsupported host address type/length {0:#x}")]
    BadAddressType(u8),
    #[error("path of {0} bytes is not a multiple of 4 or makes the header exceed 1020 bytes")]
    BadPathLength(usize),
    #[error("payload of {0} bytes exceeds 65535")]
    PayloadTooLong(usize),
}

/// A host address in the address header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostAddr {
    V4(Ipv4Addr),
    V6(Ipv6Addr),
    /// A service address (anycast/multicast to an AS service), 2 bytes + 2 bytes padding.
    Svc(u16),
}

impl From<std::net::IpAddr> for HostAddr {
    fn from(ip: std::net::IpAddr) -> Self {
        match ip {
            std::net::IpAddr::V4(a) => HostAddr::V4(a),
            std::net::IpAddr::V6(a) => HostAddr::V6(a),
        }
    }
}

impl HostAddr {
    /// The 4-bit type/length code (T << 2 | L).
    pub const fn type_len(&self) -> u8 {
        match self {
            HostAddr::V4(_) => 0x0,
            HostAddr::V6(_) => 0x3,
            HostAddr::Svc(_) => 0x4,
        }
    }
    pub const fn wire_len(&self) -> usize {
        match self {
            HostAddr::V6(_) => 16,
            _ => 4,
        }
    }
    /// The address bytes as on the wire, in a buffer, and how many of them there are.
    pub fn to_wire(&self) -> ([u8; 16], usize) {
        let mut b = [0u8; 16];
        self.emit(&mut b);
        (b, self.wire_len())
    }
    fn emit(&self, out: &mut [u8]) {
        match self {
            HostAddr::V4(a) => out[..4].copy_from_slice(&a.octets()),
            HostAddr::V6(a) => out[..16].copy_from_slice(&a.octets()),
            HostAddr::Svc(s) => {
                out[..2].copy_from_slice(&s.to_be_bytes());
                out[2..4].fill(0);
            }
        }
    }
    fn parse(type_len: u8, b: &[u8]) -> Self {
        match type_len {
            0x0 => HostAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])),
            0x3 => HostAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&b[..16]).unwrap())),
            _ => HostAddr::Svc(u16::from_be_bytes([b[0], b[1]])),
        }
    }
}

/// The version, from the first byte of the common header (its high nibble).
#[inline(always)]
pub(crate) const fn version_of(first_byte: u8) -> u8 {
    first_byte >> 4
}

/// The destination's and the source's host address lengths from the address types byte
/// (DT|DL high, ST|SL low), if both types are supported.
/// One shift and mask per address instead of [`host_len`]'s branches: the stage 1 of the
/// standard path reads it for every packet.
#[inline(always)]
pub(crate) fn host_lens(addr_types: u8) -> Option<(usize, usize)> {
    let units = |code: u8| ((HOST_UNITS >> (4 * u32::from(code))) & 0xf) as usize;
    match (units(addr_types >> 4), units(addr_types & 0xf)) {
        (0, _) | (_, 0) => None,
        (d, s) => Some((4 * d, 4 * s)),
    }
}

/// The common header's fields a router checks before any other, read at once without bounds
/// checks (stage 1 of the forwarder and of GLWP's router, on their fast and their diagnosing
/// paths).
#[derive(Clone, Copy, Debug)]
pub struct CommonFields {
    /// The first byte: the version (high nibble, [`version_of`]) and the traffic class's top.
    pub version_tc: u8,
    /// HdrLen, in 4-byte units.
    pub hdr_units: u8,
    pub payload_len: u16,
    pub path_type: u8,
    /// DT/DL (high nibble) and ST/SL (low).
    pub addr_types: u8,
}

const _: () = assert!(
    field::VERSION_TC < field::DST_HOST
        && field::HDR_LEN < field::DST_HOST
        && field::PAYLOAD_LEN.end <= field::DST_HOST
        && field::PATH_TYPE < field::DST_HOST
        && field::ADDR_TYPES < field::DST_HOST
);

impl CommonFields {
    /// # Safety
    /// `pkt.len() >= field::DST_HOST`.
    #[inline(always)]
    pub unsafe fn read_unchecked(pkt: &[u8]) -> Self {
        debug_assert!(pkt.len() >= field::DST_HOST);
        // SAFETY: every field read ends before DST_HOST (the assertion above), which the caller
        // proves `pkt` reaches.
        unsafe {
            Self {
                version_tc: crate::raw::byte(pkt, field::VERSION_TC),
                hdr_units: crate::raw::byte(pkt, field::HDR_LEN),
                payload_len: crate::raw::be_u16(pkt, field::PAYLOAD_LEN.start),
                path_type: crate::raw::byte(pkt, field::PATH_TYPE),
                addr_types: crate::raw::byte(pkt, field::ADDR_TYPES),
            }
        }
    }
}

/// Where the path starts for an address types byte: the end of the host addresses, or
/// [`NO_PATH_START`] if either type is unsupported. One load for stage 1's fast check, which
/// tests only that the header reaches past the path's start (so an unsupported type fails the
/// same compare as a short header; naming which is the slow path's job).
#[inline(always)]
pub fn path_start_of(addr_types: u8) -> usize {
    usize::from(PATH_START[usize::from(addr_types)])
}

/// Larger than any header HdrLen can describe, so that no header reaches past it.
pub const NO_PATH_START: u16 = 0xffff;
const _: () = assert!(NO_PATH_START as usize > MAX_HDR_LEN);

/// [`path_start_of`]'s table, derived from [`host_lens`]'s.
static PATH_START: [u16; 256] = {
    let mut table = [NO_PATH_START; 256];
    let mut types = 0;
    while types < 256 {
        let d = ((HOST_UNITS >> (4 * (types >> 4))) & 0xf) as usize;
        let s = ((HOST_UNITS >> (4 * (types & 0xf))) & 0xf) as usize;
        if d != 0 && s != 0 {
            table[types] = (field::DST_HOST + 4 * d + 4 * s) as u16;
        }
        types += 1;
    }
    table
};

/// [`host_len`] as a table: the length in 4-byte units of each type/length code, one nibble
/// per code (0: unsupported).
const HOST_UNITS: u64 = {
    let mut table = 0;
    let mut code = 0;
    while code < 16 {
        if let Some(len) = host_len(code as u8) {
            assert!(len % 4 == 0 && len / 4 < 16);
            table |= ((len / 4) as u64) << (4 * code);
        }
        code += 1;
    }
    table
};

/// Host address length in bytes for a type/length code (a nibble of the address types
/// byte), if supported.
const fn host_len(type_len: u8) -> Option<usize> {
    match type_len {
        0x0 | 0x4 => Some(4),
        0x3 => Some(16),
        _ => None,
    }
}

/// The source ISD-AS of a packet a processor has already checked (a flow key for egress
/// scheduling); `None` if the buffer is too short to hold one.
pub fn src_ia_of(pkt: &[u8]) -> Option<IsdAsn> {
    pkt.get(field::SRC_IA).map(|b| IsdAsn::from_bytes(b.try_into().expect("an ISD-AS is 8 bytes")))
}

/// What [`ScionView::new_checked`] proved of a packet: its length, address types and the
/// offsets derived from them, so that a later stage can view the same bytes again
/// ([`ScionView::with_layout`]), mutably if it was immutable, without checking them again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScionLayout {
    len: usize,
    addr_types: u8,
    path_offset: usize,
    hdr_len: usize,
}

/// Zero-copy view over a whole SCION packet whose header lengths have been checked:
/// every accessor is in bounds.
#[derive(Clone, Copy, Debug)]
pub struct ScionView<T> {
    buf: T,
    path_offset: usize,
    hdr_len: usize,
}

impl<T: AsRef<[u8]>> ScionView<T> {
    /// Checks version, address types and that HdrLen and PayloadLen match the buffer.
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        if b.len() < field::DST_HOST {
            return Err(HeaderError::Truncated);
        }
        let version = version_of(b[field::VERSION_TC]);
        if version != 0 {
            return Err(HeaderError::BadVersion(version));
        }
        let hdr_len = usize::from(b[field::HDR_LEN]) * 4;
        let payload_len = usize::from(u16_at(b, field::PAYLOAD_LEN));
        let (dt, st) = (b[field::ADDR_TYPES] >> 4, b[field::ADDR_TYPES] & 0xf);
        let dl = host_len(dt).ok_or(HeaderError::BadAddressType(dt))?;
        let sl = host_len(st).ok_or(HeaderError::BadAddressType(st))?;
        let path_offset = field::DST_HOST + dl + sl;
        if hdr_len < path_offset || b.len() < path_offset {
            return Err(HeaderError::Truncated);
        }
        if hdr_len + payload_len != b.len() {
            return Err(HeaderError::LengthMismatch);
        }
        Ok(Self { buf, path_offset, hdr_len })
    }

    /// The view of `buf` that `layout` describes, checking only its length
    /// ([`HeaderError::LengthMismatch`]) and its address types byte
    /// ([`HeaderError::BadAddressType`]): the view's offsets are the layout's, checked against
    /// a buffer of that length, and the host addresses' lengths (read from the bytes) are the
    /// ones checked, so every access stays in bounds. The fields it reads are `buf`'s bytes as
    /// they are now; they are the checked ones when `buf` holds the bytes `layout` was taken
    /// from, as it does for a packet between the stages of one pass.
    pub fn with_layout(buf: T, layout: ScionLayout) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        if b.len() != layout.len {
            return Err(HeaderError::LengthMismatch);
        }
        match b.get(field::ADDR_TYPES) {
            Some(t) if *t == layout.addr_types => {}
            t => return Err(HeaderError::BadAddressType(t.copied().unwrap_or_default())),
        }
        Ok(Self { buf, path_offset: layout.path_offset, hdr_len: layout.hdr_len })
    }

    /// The checked lengths, for [`ScionView::with_layout`].
    pub fn layout(&self) -> ScionLayout {
        let b = self.b();
        ScionLayout {
            len: b.len(),
            addr_types: b[field::ADDR_TYPES],
            path_offset: self.path_offset,
            hdr_len: self.hdr_len,
        }
    }

    pub fn into_inner(self) -> T {
        self.buf
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn traffic_class(&self) -> u8 {
        let b = &self.b()[field::TC_FLOW];
        (b[0] << 4) | (b[1] >> 4)
    }
    pub fn flow_id(&self) -> u32 {
        u32::from_be_bytes(self.b()[field::TC_FLOW].try_into().expect("4 bytes")) & 0xf_ffff
    }
    pub fn next_hdr(&self) -> u8 {
        self.b()[field::NEXT_HDR]
    }
    /// Header length in bytes (HdrLen × 4).
    pub fn hdr_len(&self) -> usize {
        self.hdr_len
    }
    pub fn payload_len(&self) -> u16 {
        u16_at(self.b(), field::PAYLOAD_LEN)
    }
    /// The whole packet length as the Hummingbird MAC sees it, `PayloadLen + 4·HdrLen`;
    /// `None` when it does not fit in 16 bits.
    pub fn pkt_len_u16(&self) -> Option<u16> {
        self.payload_len().checked_add(self.hdr_len as u16)
    }
    pub fn path_type(&self) -> u8 {
        self.b()[field::PATH_TYPE]
    }
    pub fn dst_ia(&self) -> IsdAsn {
        IsdAsn::from_bytes(self.dst_ia_bytes())
    }
    /// The raw DstISD|DstAS bytes, as they enter the flyover MAC.
    pub fn dst_ia_bytes(&self) -> [u8; 8] {
        self.b()[field::DST_IA].try_into().expect("8 bytes")
    }
    pub fn src_ia(&self) -> IsdAsn {
        IsdAsn::from_bytes(self.b()[field::SRC_IA].try_into().expect("8 bytes"))
    }
    fn dst_len(&self) -> usize {
        host_len(self.b()[field::ADDR_TYPES] >> 4).expect("checked by new_checked")
    }
    pub fn dst_host(&self) -> HostAddr {
        HostAddr::parse(self.b()[field::ADDR_TYPES] >> 4, &self.b()[field::DST_HOST..])
    }
    pub fn src_host(&self) -> HostAddr {
        HostAddr::parse(self.b()[field::ADDR_TYPES] & 0xf, &self.b()[field::DST_HOST + self.dst_len()..])
    }
    /// The source's 4-bit type/length code.
    pub fn src_type_len(&self) -> u8 {
        self.b()[field::ADDR_TYPES] & 0xf
    }
    /// The raw SrcISD|SrcAS bytes.
    pub fn src_ia_bytes(&self) -> [u8; 8] {
        self.b()[field::SRC_IA].try_into().expect("8 bytes")
    }
    /// The source address's bytes as on the wire (4 or 16): the last of the address header,
    /// just before the path.
    pub fn src_host_bytes(&self) -> &[u8] {
        let len = host_len(self.src_type_len()).expect("checked by new_checked");
        &self.b()[self.path_offset - len..self.path_offset]
    }
    /// Byte range of the path header within the packet.
    pub fn path_range(&self) -> std::ops::Range<usize> {
        self.path_offset..self.hdr_len
    }
    pub fn path(&self) -> &[u8] {
        &self.b()[self.path_offset..self.hdr_len]
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.hdr_len..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScionView<T> {
    fn b_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    pub fn path_mut(&mut self) -> &mut [u8] {
        let r = self.path_offset..self.hdr_len;
        &mut self.b_mut()[r]
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.hdr_len;
        &mut self.b_mut()[h..]
    }
    pub fn set_traffic_class(&mut self, tc: u8) {
        let b = &mut self.b_mut()[field::TC_FLOW];
        b[0] = (b[0] & 0xf0) | (tc >> 4);
        b[1] = (tc << 4) | (b[1] & 0x0f);
    }
    pub fn set_next_hdr(&mut self, next_hdr: u8) {
        self.b_mut()[field::NEXT_HDR] = next_hdr;
    }
    pub fn set_dst_ia(&mut self, ia: IsdAsn) {
        self.b_mut()[field::DST_IA].copy_from_slice(&ia.to_bytes());
    }
    pub fn set_src_ia(&mut self, ia: IsdAsn) {
        self.b_mut()[field::SRC_IA].copy_from_slice(&ia.to_bytes());
    }
}

fn u16_at(b: &[u8], r: std::ops::Range<usize>) -> u16 {
    u16::from_be_bytes(b[r].try_into().expect("a 2-byte field"))
}

/// Owned SCION header (common + address header) with the raw path bytes; the path is
/// decoded by the crate of its path type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScionHeader {
    pub traffic_class: u8,
    /// 20-bit flow label.
    pub flow_id: u32,
    pub next_hdr: u8,
    pub path_type: u8,
    pub dst_ia: IsdAsn,
    pub src_ia: IsdAsn,
    pub dst_host: HostAddr,
    pub src_host: HostAddr,
    pub path: Vec<u8>,
}

impl ScionHeader {
    /// Header length in bytes.
    pub fn len(&self) -> usize {
        ADDR_OFFSET + IA_PAIR_LEN + self.dst_host.wire_len() + self.src_host.wire_len() + self.path.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    fn check(&self, payload_len: usize) -> Result<(), HeaderError> {
        if !self.path.len().is_multiple_of(4) || self.len() > MAX_HDR_LEN {
            return Err(HeaderError::BadPathLength(self.path.len()));
        }
        if payload_len > usize::from(u16::MAX) {
            return Err(HeaderError::PayloadTooLong(payload_len));
        }
        Ok(())
    }

    /// Writes the header for a payload of `payload_len` bytes into `out[..self.len()]`.
    pub fn emit(&self, payload_len: usize, out: &mut [u8]) -> Result<(), HeaderError> {
        self.check(payload_len)?;
        let len = self.len();
        if out.len() < len {
            return Err(HeaderError::Truncated);
        }
        let tc_flow = (u32::from(self.traffic_class) << 20) | (self.flow_id & 0xf_ffff);
        out[field::TC_FLOW].copy_from_slice(&tc_flow.to_be_bytes());
        out[field::NEXT_HDR] = self.next_hdr;
        out[field::HDR_LEN] = (len / 4) as u8;
        out[field::PAYLOAD_LEN].copy_from_slice(&(payload_len as u16).to_be_bytes());
        out[field::PATH_TYPE] = self.path_type;
        out[field::ADDR_TYPES] = (self.dst_host.type_len() << 4) | self.src_host.type_len();
        out[field::RSV].fill(0);
        out[field::DST_IA].copy_from_slice(&self.dst_ia.to_bytes());
        out[field::SRC_IA].copy_from_slice(&self.src_ia.to_bytes());
        let dl = self.dst_host.wire_len();
        self.dst_host.emit(&mut out[field::DST_HOST..]);
        self.src_host.emit(&mut out[field::DST_HOST + dl..]);
        out[len - self.path.len()..len].copy_from_slice(&self.path);
        Ok(())
    }

    pub fn parse<T: AsRef<[u8]>>(v: &ScionView<T>) -> Self {
        Self {
            traffic_class: v.traffic_class(),
            flow_id: v.flow_id(),
            next_hdr: v.next_hdr(),
            path_type: v.path_type(),
            dst_ia: v.dst_ia(),
            src_ia: v.src_ia(),
            dst_host: v.dst_host(),
            src_host: v.src_host(),
            path: v.path().to_vec(),
        }
    }
}

/// An owned SCION packet: header plus payload (the L4 header is part of the payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScionPacket {
    pub header: ScionHeader,
    pub payload: Vec<u8>,
}

impl ScionPacket {
    pub fn parse(buf: &[u8]) -> Result<Self, HeaderError> {
        let v = ScionView::new_checked(buf)?;
        Ok(Self { header: ScionHeader::parse(&v), payload: v.payload().to_vec() })
    }
    pub fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, HeaderError> {
        let h = self.header.len();
        if out.len() < h + self.payload.len() {
            return Err(HeaderError::Truncated);
        }
        self.header.emit(self.payload.len(), out)?;
        out[h..h + self.payload.len()].copy_from_slice(&self.payload);
        Ok(h + self.payload.len())
    }
    pub fn to_bytes(&self) -> Result<Vec<u8>, HeaderError> {
        let mut v = vec![0; self.len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
