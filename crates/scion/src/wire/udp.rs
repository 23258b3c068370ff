//! SCION/UDP: the UDP header as an upper-layer protocol of SCION (protocol number 17) and the
//! upper-layer checksum over the SCION pseudo header.
//!
//! ```text
//!  0                   1                   2                   3
//! |          SrcPort              |           DstPort             |
//! |          Length               |           Checksum            |
//! ```
//!
//! The checksum (RFC 1071 Internet checksum) covers the pseudo header of the SCION header
//! specification ("Pseudo Header for Upper-Layer Checksum") followed by the UDP header, with a
//! zero checksum field, and the payload:
//!
//! ```text
//! DstISD|DstAS (8) | SrcISD|SrcAS (8) | DstHostAddr (4/16) | SrcHostAddr (4/16)
//! Upper-layer packet length (u32) | 0 (3 bytes) | Next header (u8)
//! ```
//!
//! The host addresses are the bytes of the address header, so a service address enters with
//! its two padding bytes. The upper-layer length is the UDP `Length` field, which must equal
//! the number of bytes after the SCION header (and its extension headers). As in scionproto
//! (`slayers`), a computed checksum of 0 is sent as 0 (no mapping to 0xffff); verification
//! sums the packet including the checksum field, so either representation of zero passes.
//! SCION has no "checksum absent" value: a zero field verifies only if the checksum is 0.

use std::ops::Range;

use thiserror::Error;

use crate::wire::extension;
use crate::wire::header::{HeaderError, HostAddr, ScionHeader, ScionView, ADDR_OFFSET};
use crate::IsdAsn;

/// Protocol number of UDP (SCION `NextHdr`).
pub const PROTOCOL_UDP: u8 = 17;
/// Protocol number of the hop-by-hop options extension header.
pub const PROTOCOL_HBH: u8 = extension::HOP_BY_HOP;
/// Protocol number of the end-to-end options extension header.
pub const PROTOCOL_E2E: u8 = extension::END_TO_END;
/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;

/// Field offsets of the UDP header: the one place they are written down.
pub mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes(b.try_into().expect("a 2-byte field"))
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum UdpError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("next header {0} is not UDP (17)")]
    NotUdp(u8),
    #[error("extension header truncated")]
    ExtensionTruncated,
    #[error("UDP datagram of {0} bytes is shorter than its 8-byte header")]
    Truncated(usize),
    #[error("UDP length field {field} does not match the {actual} bytes of the datagram")]
    LengthMismatch { field: u16, actual: usize },
    #[error("UDP datagram of {0} bytes exceeds 65535")]
    TooLong(usize),
    #[error("output buffer of {have} bytes is too small for {need}")]
    BufferTooSmall { need: usize, have: usize },
    #[error("bad UDP checksum {found:#06x}, expected {expected:#06x}")]
    BadChecksum { found: u16, expected: u16 },
}

/// The UDP header, owned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UdpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    /// Header plus payload length in bytes.
    pub length: u16,
    pub checksum: u16,
}

impl UdpHeader {
    pub const LEN: usize = UDP_HEADER_LEN;

    /// Reads the first 8 bytes of `b`; the length field is not checked against `b`.
    pub fn parse(b: &[u8]) -> Result<Self, UdpError> {
        let h: &[u8; UDP_HEADER_LEN] =
            b.get(..UDP_HEADER_LEN).and_then(|h| h.try_into().ok()).ok_or(UdpError::Truncated(b.len()))?;
        Ok(Self {
            src_port: be_u16(&h[field::SRC_PORT]),
            dst_port: be_u16(&h[field::DST_PORT]),
            length: be_u16(&h[field::LENGTH]),
            checksum: be_u16(&h[field::CHECKSUM]),
        })
    }

    /// Writes the header into `out[..8]`.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), UdpError> {
        let have = out.len();
        let o = out.get_mut(..UDP_HEADER_LEN).ok_or(UdpError::BufferTooSmall { need: UDP_HEADER_LEN, have })?;
        o[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        o[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        o[field::LENGTH].copy_from_slice(&self.length.to_be_bytes());
        o[field::CHECKSUM].copy_from_slice(&self.checksum.to_be_bytes());
        Ok(())
    }
}

/// Incremental RFC 1071 Internet checksum. Pieces may have any length: a piece that starts at
/// an odd offset of the checksummed stream is byte-swapped (RFC 1071, section 2(B)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksum {
    sum: u64,
    odd: bool,
}

/// Folds a 64-bit one's-complement accumulator to 16 bits with end-around carries.
#[inline]
fn fold(mut s: u64) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

impl Checksum {
    pub const fn new() -> Self {
        Self { sum: 0, odd: false }
    }

    /// Adds bytes, big-endian 16-bit words, a trailing odd byte padded with zero.
    #[inline]
    pub fn add_bytes(&mut self, b: &[u8]) -> &mut Self {
        // 2^16 ≡ 1 (mod 2^16 − 1), so summing 32-bit big-endian words and folding is the
        // same as summing 16-bit words. At most 2^32 words fit the 64-bit accumulator.
        let mut acc: u64 = 0;
        let mut words = b.chunks_exact(4);
        for w in &mut words {
            acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        }
        let rest = words.remainder();
        let mut tail = [0u8; 4];
        tail[..rest.len()].copy_from_slice(rest);
        acc += u64::from(u32::from_be_bytes(tail));
        let mut s = fold(acc);
        if self.odd {
            s = s.swap_bytes();
        }
        self.sum += u64::from(s);
        self.odd ^= b.len() % 2 == 1;
        self
    }

    #[inline]
    pub fn add_u16(&mut self, v: u16) -> &mut Self {
        self.add_bytes(&v.to_be_bytes())
    }

    #[inline]
    pub fn add_u32(&mut self, v: u32) -> &mut Self {
        self.add_bytes(&v.to_be_bytes())
    }

    /// The one's complement of the one's-complement sum.
    #[inline]
    pub fn finish(&self) -> u16 {
        !fold(self.sum)
    }
}

/// The upper-layer checksum of `data` (the L4 header with a zero checksum field, and payload)
/// under the pseudo header built from owned addresses. `data.len()` is the upper-layer length.
pub fn pseudo_header_checksum(
    dst_ia: IsdAsn,
    src_ia: IsdAsn,
    dst_host: HostAddr,
    src_host: HostAddr,
    protocol: u8,
    data: &[u8],
) -> u16 {
    let mut host = [0u8; 16];
    let mut c = Checksum::new();
    c.add_bytes(&dst_ia.to_bytes()).add_bytes(&src_ia.to_bytes());
    for h in [dst_host, src_host] {
        let n = host_bytes(h, &mut host);
        c.add_bytes(&host[..n]);
    }
    c.add_u32(data.len() as u32).add_u32(u32::from(protocol)).add_bytes(data).finish()
}

fn host_bytes(h: HostAddr, out: &mut [u8; 16]) -> usize {
    match h {
        HostAddr::V4(a) => out[..4].copy_from_slice(&a.octets()),
        HostAddr::V6(a) => out.copy_from_slice(&a.octets()),
        HostAddr::Svc(s) => {
            out[..2].copy_from_slice(&s.to_be_bytes());
            out[2..4].fill(0);
        }
    }
    h.wire_len()
}

/// Offset in the packet of the upper-layer header after the SCION header and any hop-by-hop
/// and end-to-end extension headers (each `(ExtLen + 1) · 4` bytes), with the upper-layer
/// protocol number.
pub fn l4_offset<T: AsRef<[u8]>>(v: &ScionView<T>) -> Result<(usize, u8), UdpError> {
    let p = v.payload();
    let mut off = 0;
    let mut next = v.next_hdr();
    for ext in [PROTOCOL_HBH, PROTOCOL_E2E] {
        if next == ext {
            let e = &p[off..];
            next = extension::next_hdr(e).ok_or(UdpError::ExtensionTruncated)?;
            off += extension::header_len(e).ok_or(UdpError::ExtensionTruncated)?;
            if off > p.len() {
                return Err(UdpError::ExtensionTruncated);
            }
        }
    }
    Ok((v.hdr_len() + off, next))
}

/// Zero-copy view over a whole SCION/UDP packet: the SCION header is checked, the upper-layer
/// protocol is UDP, and the UDP length field equals the bytes after the SCION header (and its
/// extension headers).
#[derive(Clone, Copy, Debug)]
pub struct ScionUdpView<T> {
    buf: T,
    /// End of the address header (start of the path).
    addr_end: usize,
    /// Offset of the UDP header.
    l4: usize,
}

impl<T: AsRef<[u8]>> ScionUdpView<T> {
    pub fn new_checked(buf: T) -> Result<Self, UdpError> {
        let (addr_end, l4) = {
            let scion = ScionView::new_checked(buf.as_ref())?;
            let (l4, next) = l4_offset(&scion)?;
            if next != PROTOCOL_UDP {
                return Err(UdpError::NotUdp(next));
            }
            (scion.path_range().start, l4)
        };
        let udp = &buf.as_ref()[l4..];
        if udp.len() < UDP_HEADER_LEN {
            return Err(UdpError::Truncated(udp.len()));
        }
        let length = be_u16(&udp[field::LENGTH]);
        if usize::from(length) != udp.len() {
            return Err(UdpError::LengthMismatch { field: length, actual: udp.len() });
        }
        Ok(Self { buf, addr_end, l4 })
    }

    pub fn into_inner(self) -> T {
        self.buf
    }
    /// The whole packet.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// Byte range of the UDP header and payload in the packet.
    pub fn udp_range(&self) -> Range<usize> {
        self.l4..self.b().len()
    }
    /// Byte range of the UDP payload in the packet.
    pub fn payload_range(&self) -> Range<usize> {
        self.l4 + UDP_HEADER_LEN..self.b().len()
    }
    fn udp(&self) -> &[u8] {
        &self.b()[self.l4..]
    }
    pub fn src_port(&self) -> u16 {
        be_u16(&self.udp()[field::SRC_PORT])
    }
    pub fn dst_port(&self) -> u16 {
        be_u16(&self.udp()[field::DST_PORT])
    }
    pub fn length(&self) -> u16 {
        be_u16(&self.udp()[field::LENGTH])
    }
    pub fn checksum(&self) -> u16 {
        be_u16(&self.udp()[field::CHECKSUM])
    }
    pub fn udp_header(&self) -> UdpHeader {
        UdpHeader {
            src_port: self.src_port(),
            dst_port: self.dst_port(),
            length: self.length(),
            checksum: self.checksum(),
        }
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.l4 + UDP_HEADER_LEN..]
    }

    /// Pseudo header and the UDP datagram, with or without the checksum field.
    fn sum(&self, with_checksum_field: bool) -> Checksum {
        let b = self.b();
        let udp = &b[self.l4..];
        let mut c = Checksum::new();
        // DstIA | SrcIA | DstHostAddr | SrcHostAddr are contiguous in the address header.
        c.add_bytes(&b[ADDR_OFFSET..self.addr_end]);
        c.add_u32(udp.len() as u32).add_u32(u32::from(PROTOCOL_UDP));
        c.add_bytes(&udp[..field::CHECKSUM.start]);
        if with_checksum_field {
            c.add_bytes(&udp[field::CHECKSUM]);
        }
        c.add_bytes(&udp[UDP_HEADER_LEN..]);
        c
    }

    /// The correct checksum of this packet, whatever the checksum field holds.
    pub fn compute_checksum(&self) -> u16 {
        self.sum(false).finish()
    }

    /// `Ok` if the checksum field is correct.
    pub fn verify(&self) -> Result<(), UdpError> {
        if self.sum(true).finish() == 0 {
            Ok(())
        } else {
            Err(UdpError::BadChecksum { found: self.checksum(), expected: self.compute_checksum() })
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScionUdpView<T> {
    fn buf_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
    fn udp_mut(&mut self) -> &mut [u8] {
        let o = self.l4;
        &mut self.buf_mut()[o..]
    }
    pub fn set_src_port(&mut self, p: u16) {
        self.udp_mut()[field::SRC_PORT].copy_from_slice(&p.to_be_bytes());
    }
    pub fn set_dst_port(&mut self, p: u16) {
        self.udp_mut()[field::DST_PORT].copy_from_slice(&p.to_be_bytes());
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let o = self.l4 + UDP_HEADER_LEN;
        &mut self.buf_mut()[o..]
    }
    /// Computes and writes the checksum; returns it.
    pub fn set_checksum(&mut self) -> u16 {
        let c = self.compute_checksum();
        self.udp_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        c
    }
}

/// The correct UDP checksum of a checked SCION packet (the checksum field is ignored). The
/// view gives decoded host addresses, so the padding of a service address counts as zero
/// (senders must zero it); [`ScionUdpView::compute_checksum`] uses the raw bytes.
pub fn checksum<T: AsRef<[u8]>>(v: &ScionView<T>) -> Result<u16, UdpError> {
    let (l4, next) = l4_offset(v)?;
    if next != PROTOCOL_UDP {
        return Err(UdpError::NotUdp(next));
    }
    let udp = &v.payload()[l4 - v.hdr_len()..];
    let h = UdpHeader::parse(udp)?;
    if usize::from(h.length) != udp.len() {
        return Err(UdpError::LengthMismatch { field: h.length, actual: udp.len() });
    }
    let mut host = [0u8; 16];
    let mut c = Checksum::new();
    c.add_bytes(&v.dst_ia_bytes()).add_bytes(&v.src_ia().to_bytes());
    for a in [v.dst_host(), v.src_host()] {
        let n = host_bytes(a, &mut host);
        c.add_bytes(&host[..n]);
    }
    c.add_u32(udp.len() as u32).add_u32(u32::from(PROTOCOL_UDP));
    Ok(c.add_bytes(&udp[..6]).add_bytes(&udp[UDP_HEADER_LEN..]).finish())
}

/// Computes and writes the UDP checksum of the SCION/UDP packet `pkt`; returns it.
pub fn set_checksum(pkt: &mut [u8]) -> Result<u16, UdpError> {
    Ok(ScionUdpView::new_checked(pkt)?.set_checksum())
}

/// Checks the SCION/UDP packet `pkt`, including its UDP checksum.
pub fn verify(pkt: &[u8]) -> Result<(), UdpError> {
    ScionUdpView::new_checked(pkt)?.verify()
}

/// Length of the SCION/UDP packet [`emit_packet`] writes.
pub fn packet_len(header: &ScionHeader, payload_len: usize) -> usize {
    header.len() + UDP_HEADER_LEN + payload_len
}

/// Writes a whole SCION/UDP packet (SCION header, UDP header with a correct checksum,
/// payload) into `out`; returns its length. `header.next_hdr` must be 17 (extension headers
/// are not emitted).
pub fn emit_packet(
    header: &ScionHeader,
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize, UdpError> {
    if header.next_hdr != PROTOCOL_UDP {
        return Err(UdpError::NotUdp(header.next_hdr));
    }
    let udp_len = UDP_HEADER_LEN + payload.len();
    let length = u16::try_from(udp_len).map_err(|_| UdpError::TooLong(udp_len))?;
    let h = header.len();
    let need = h + udp_len;
    if out.len() < need {
        return Err(UdpError::BufferTooSmall { need, have: out.len() });
    }
    let out = &mut out[..need];
    header.emit(udp_len, out)?;
    UdpHeader { src_port, dst_port, length, checksum: 0 }.emit(&mut out[h..])?;
    out[h + UDP_HEADER_LEN..].copy_from_slice(payload);
    set_checksum(out)?;
    Ok(need)
}

/// [`emit_packet`] into a new vector.
pub fn packet_to_vec(header: &ScionHeader, src_port: u16, dst_port: u16, payload: &[u8]) -> Result<Vec<u8>, UdpError> {
    let mut v = vec![0; packet_len(header, payload.len())];
    emit_packet(header, src_port, dst_port, payload, &mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071, section 3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2.
    #[test]
    fn rfc1071_example() {
        let b = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(Checksum::new().add_bytes(&b).finish(), !0xddf2);
        // Any split, including odd ones, gives the same result.
        for i in 0..=b.len() {
            for j in i..=b.len() {
                let c = Checksum::new().add_bytes(&b[..i]).add_bytes(&b[i..j]).add_bytes(&b[j..]).finish();
                assert_eq!(c, !0xddf2, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn fold_carries() {
        assert_eq!(Checksum::new().add_u16(0xffff).add_u16(0xffff).add_u16(1).finish(), !1);
        assert_eq!(Checksum::new().add_bytes(&[0xff; 4096]).finish(), 0);
    }
}
