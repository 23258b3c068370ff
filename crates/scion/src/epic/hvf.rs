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

use crate::cpu::{Cpu, Detect};
use crate::drkey::prf_on;
use crate::mac::input as mac_block;
use crate::wire::epic::{PktId, HVF_LEN};
use crate::wire::header::{HostAddr, ScionView};
use crate::wire::path::field as path_field;
use crate::wire::path_view::StandardPathView;
use crate::IsdAsn;

/// Bytes of the longest input: two blocks of header fields (IPv6 source) and σ.
const MAX_INPUT: usize = 64;
const BLOCK: usize = 16;

/// Where each field is in the input (the source address, and PayloadLen after it, are as
/// long as the address).
mod input {
    use std::ops::Range;
    pub const FLAGS: usize = 0;
    pub const INFO_TS: Range<usize> = 1..5;
    pub const PKT_ID: Range<usize> = 5..13;
    pub const SRC_IA: Range<usize> = 13..21;
    pub const SRC_HOST: usize = 21;
}

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
        let (host, host_len) = src_host.to_wire();
        Self::from_fields(
            src_host.type_len(),
            info_ts.to_be_bytes(),
            pkt_id.to_bytes(),
            src_ia.to_bytes(),
            &host[..host_len],
            payload_len,
        )
    }

    /// [`MacInput::new`] of a checked packet, its fields copied as they are on the wire
    /// instead of decoded and encoded again: the header `view`, the first info field's
    /// timestamp and the packet ID.
    #[inline]
    pub fn from_wire(view: &ScionView<&[u8]>, info_ts: [u8; 4], pkt_id: [u8; 8]) -> Self {
        let host = view.src_host_bytes();
        Self::from_fields(view.src_type_len(), info_ts, pkt_id, view.src_ia_bytes(), host, view.payload_len())
    }

    #[inline]
    fn from_fields(
        type_len: u8,
        info_ts: [u8; 4],
        pkt_id: [u8; 8],
        src_ia: [u8; 8],
        host: &[u8],
        payload_len: u16,
    ) -> Self {
        let mut buf = [0u8; MAX_INPUT];
        buf[input::FLAGS] = type_len & 0x3;
        buf[input::INFO_TS].copy_from_slice(&info_ts);
        buf[input::PKT_ID].copy_from_slice(&pkt_id);
        buf[input::SRC_IA].copy_from_slice(&src_ia);
        // A host address is 4 or 16 bytes: copied as one of the two fixed sizes rather than
        // by a length known only at run time (a `memcpy` call).
        let end = match <[u8; 16]>::try_from(host) {
            Ok(h) => {
                buf[input::SRC_HOST..input::SRC_HOST + 16].copy_from_slice(&h);
                input::SRC_HOST + 16
            }
            Err(_) => {
                let mut h = [0u8; 4];
                h.copy_from_slice(&host[..4]);
                buf[input::SRC_HOST..input::SRC_HOST + 4].copy_from_slice(&h);
                input::SRC_HOST + 4
            }
        };
        buf[end..end + 2].copy_from_slice(&payload_len.to_be_bytes());
        Self { buf, len: (end + 2).div_ceil(BLOCK) * BLOCK }
    }

    /// The input with an authenticator appended as one more block.
    pub fn with_authenticator(&self, sigma: &[u8; 16]) -> Self {
        let mut out = *self;
        out.append_authenticator(sigma);
        out
    }

    /// Appends an authenticator as one more block, in place (not copying the input).
    pub fn append_authenticator(&mut self, sigma: &[u8; 16]) {
        self.buf[self.len..self.len + BLOCK].copy_from_slice(sigma);
        self.len += BLOCK;
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The hop-field MAC input block ([`crate::mac::mac_input`]) of hop field `hop` under info
/// field `info` of a checked path, copied from their bytes as they are on the wire: SegID and
/// Timestamp follow each other in the info field, ExpTime and both interfaces in the hop field.
#[inline]
pub fn hop_mac_block(path: &StandardPathView<&[u8]>, info: usize, hop: usize) -> [u8; 16] {
    let b = path.bytes();
    let (i, h) = (path.info_offset(info), path.hop_offset(hop));
    let info_part = path_field::info::SEG_ID.start..path_field::info::TIMESTAMP.end;
    let hop_part = path_field::hop::EXP_TIME..path_field::hop::CONS_EGRESS.end;
    let mut block = [0u8; 16];
    block[mac_block::SEG_ID.start..mac_block::TIMESTAMP.end]
        .copy_from_slice(&b[i + info_part.start..i + info_part.end]);
    block[mac_block::HOP_PART].copy_from_slice(&b[h + hop_part.start..h + hop_part.end]);
    block
}

/// AES-128 CBC-MAC with a zero IV under `key` (the last cipher block), as DRKey's PRF.
#[inline]
pub fn cbc_mac(key: &[u8; 16], input: &MacInput) -> [u8; 16] {
    cbc_mac_on(Detect, key, input)
}

/// [`cbc_mac`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
#[inline(always)]
pub fn cbc_mac_on(cpu: impl Cpu, key: &[u8; 16], input: &MacInput) -> [u8; 16] {
    prf_on(cpu, key, input.as_bytes())
}

/// EPIC-HP's PHVF or LHVF: the first 4 bytes of the CBC-MAC keyed with the hop's σ.
#[inline]
pub fn hvf(sigma: &[u8; 16], input: &MacInput) -> [u8; HVF_LEN] {
    hvf_on(Detect, sigma, input)
}

/// [`hvf`] on the code `cpu` says the CPU runs.
#[inline(always)]
pub fn hvf_on(cpu: impl Cpu, sigma: &[u8; 16], input: &MacInput) -> [u8; HVF_LEN] {
    first_hvf(&cbc_mac_on(cpu, sigma, input))
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
    use proptest::prelude::*;
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

    proptest! {
        /// The input copied from a packet's bytes is the one built from its decoded fields,
        /// for every kind of source address, and so is the hop field's MAC block.
        #[test]
        fn inputs_from_the_wire_are_the_decoded_ones(
            path in crate::wire::path::tests::arb_standard_path(),
            src in prop_oneof![
                any::<[u8; 4]>().prop_map(|b| HostAddr::V4(Ipv4Addr::from(b))),
                any::<[u8; 16]>().prop_map(|b| HostAddr::V6(Ipv6Addr::from(b))),
                any::<u16>().prop_map(HostAddr::Svc),
            ],
            dst_v6: bool,
            ia: u64,
            id: (u32, u32),
            payload in 0usize..300,
        ) {
            use crate::mac::mac_input;
            use crate::wire::header::ScionHeader;
            let dst_host = if dst_v6 { HostAddr::V6(Ipv6Addr::LOCALHOST) } else { HostAddr::V4(Ipv4Addr::LOCALHOST) };
            let header = ScionHeader {
                traffic_class: 0,
                flow_id: 1,
                next_hdr: 17,
                path_type: 1,
                dst_ia: IsdAsn::from_u64(1),
                src_ia: IsdAsn::from_u64(ia),
                dst_host,
                src_host: src,
                path: path.to_bytes().unwrap(),
            };
            let mut pkt = vec![0u8; header.len() + payload];
            header.emit(payload, &mut pkt).unwrap();
            let view = ScionView::new_checked(&pkt[..]).unwrap();
            let pkt_id = PktId { epic_ts: id.0, counter: id.1 };
            let info = &path.info[0];
            prop_assert_eq!(
                MacInput::from_wire(&view, info.timestamp.to_be_bytes(), pkt_id.to_bytes()),
                MacInput::new(info.timestamp, pkt_id, header.src_ia, &src, payload as u16)
            );
            let standard = StandardPathView::new_checked(view.path()).unwrap();
            let (inf, hf) = (path.info.len() - 1, path.hops.len() - 1);
            let (i, h) = (&path.info[inf], &path.hops[hf]);
            prop_assert_eq!(
                hop_mac_block(&standard, inf, hf),
                mac_input(i.seg_id, i.timestamp, h.exp_time, h.cons_ingress, h.cons_egress)
            );
        }
    }
}
