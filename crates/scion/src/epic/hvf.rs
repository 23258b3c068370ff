//! EPIC's hop validation fields: the MAC input every validating AS recomputes from the
//! packet's headers, and the CBC-MAC over it.
//!
//! The input (scionproto `pkg/experimental/epic`), zero-padded to whole 16-byte blocks:
//!
//! ```text
//! | Flags (1) | first info field's Timestamp (4) | EpicTS (4) | Counter (4) |
//! | SrcIA (8) | SrcHost (4 or 16) | PayloadLen (2) | zero padding         |
//! ```
//!
//! Flags holds the source address's length code (the low two bits of its type/length).
//! EPIC-HP keys the MAC with a hop field's full 16-byte CMAC σ; the per-AS fields append σ
//! as one more block and key the MAC with a DRKey host key instead ([`super::per_as`]).

use crate::drkey::prf;
use crate::wire::epic::{PktId, HVF_LEN};
use crate::wire::header::HostAddr;
use crate::IsdAsn;

/// Bytes of the longest input: two blocks of header fields (IPv6 source) and σ.
const MAX_INPUT: usize = 64;
const BLOCK: usize = 16;

/// The MAC input of one packet, padded to whole blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacInput {
    buf: [u8; MAX_INPUT],
    len: usize,
}

/// An empty input, to fill arrays before their packets are parsed.
impl Default for MacInput {
    fn default() -> Self {
        Self { buf: [0; MAX_INPUT], len: 0 }
    }
}

impl MacInput {
    pub fn new(info_ts: u32, pkt_id: PktId, src_ia: IsdAsn, src_host: &HostAddr, payload_len: u16) -> Self {
        let mut buf = [0u8; MAX_INPUT];
        let (host, host_len) = src_host.to_wire();
        buf[0] = src_host.type_len() & 0x3;
        buf[1..5].copy_from_slice(&info_ts.to_be_bytes());
        buf[5..13].copy_from_slice(&pkt_id.to_bytes());
        buf[13..21].copy_from_slice(&src_ia.to_bytes());
        buf[21..21 + host_len].copy_from_slice(&host[..host_len]);
        let end = 21 + host_len;
        buf[end..end + 2].copy_from_slice(&payload_len.to_be_bytes());
        Self { buf, len: (end + 2).div_ceil(BLOCK) * BLOCK }
    }

    /// The input with an authenticator appended as one more block.
    pub fn with_authenticator(&self, sigma: &[u8; 16]) -> Self {
        let mut out = *self;
        out.buf[self.len..self.len + BLOCK].copy_from_slice(sigma);
        out.len += BLOCK;
        out
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// AES-128 CBC-MAC with a zero IV under `key` (the last cipher block), as DRKey's PRF.
pub fn cbc_mac(key: &[u8; 16], input: &MacInput) -> [u8; 16] {
    prf(key, input.as_bytes())
}

/// EPIC-HP's PHVF or LHVF: the first 4 bytes of the CBC-MAC keyed with the hop's σ.
pub fn hvf(sigma: &[u8; 16], input: &MacInput) -> [u8; HVF_LEN] {
    first_hvf(&cbc_mac(sigma, input))
}

/// The first [`HVF_LEN`] bytes of a MAC.
pub fn first_hvf(mac: &[u8; 16]) -> [u8; HVF_LEN] {
    mac[..HVF_LEN].try_into().expect("a MAC holds an HVF")
}

/// Compares two validation fields without an early exit.
pub fn hvf_eq(a: &[u8; HVF_LEN], b: &[u8; HVF_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn input_is_padded_to_whole_blocks() {
        let id = PktId { epic_ts: 1, counter: 2 };
        let ia = IsdAsn::from_u64(0x0001_ff00_0000_0110);
        let v4 = MacInput::new(7, id, ia, &HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 100);
        assert_eq!(v4.as_bytes().len(), 32);
        assert_eq!(v4.as_bytes()[0], 0);
        assert_eq!(&v4.as_bytes()[21..27], &[10, 0, 0, 1, 0, 100]);
        assert!(v4.as_bytes()[27..].iter().all(|b| *b == 0));
        let v6 = MacInput::new(7, id, ia, &HostAddr::V6(Ipv6Addr::LOCALHOST), 100);
        assert_eq!((v6.as_bytes().len(), v6.as_bytes()[0]), (48, 3));
        assert_eq!(v6.with_authenticator(&[9; 16]).as_bytes()[48..], [9; 16]);
        let svc = MacInput::new(7, id, ia, &HostAddr::Svc(2), 100);
        assert_eq!((svc.as_bytes()[0], &svc.as_bytes()[21..25]), (0, &[0, 2, 0, 0][..]));
    }
}
