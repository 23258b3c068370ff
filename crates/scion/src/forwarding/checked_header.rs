//! Group 1 of a stage 1 over raw words, shared by every path type that has one (the standard
//! path's [`super::AsForwarding::prepare_scion`], a mechanism's
//! [`super::HopExtension::prepare_raw`]): the common and address header checked in three
//! compares, not named one by one.

use crate::raw;
use crate::wire::header::{self, field as hdr};
use crate::IsdAsn;

// The ISD-ASes `CheckedHeader` reads end before the host addresses, whose start the packet
// reaches (the path starts there or later).
const _: () = assert!(hdr::DST_IA.end <= hdr::DST_HOST && hdr::SRC_IA.end <= hdr::DST_HOST);

/// A packet whose common and address header pass the checks of
/// [`crate::ScionView::new_checked`], whose path type is the one asked for and whose path holds
/// at least the bytes asked for: what the checks prove, kept in a few integers.
#[derive(Clone, Copy, Debug)]
pub struct CheckedHeader<'a> {
    /// The packet, which reaches `hdr_len` (its length is `hdr_len` + PayloadLen).
    pkt: &'a [u8],
    /// Where the path starts: the host addresses end here, and `path_start + min_path <=
    /// hdr_len`.
    path_start: usize,
    hdr_len: usize,
    payload_len: u16,
}

impl<'a> CheckedHeader<'a> {
    /// `pkt`'s header if every check passes, `None` if any fails without saying which: a
    /// packet that fails goes to the checks in the views' order, which name the reason.
    #[inline(always)]
    pub fn new(pkt: &'a [u8], path_type: u8, min_path: usize) -> Option<Self> {
        if pkt.len() < hdr::DST_HOST {
            return None;
        }
        // SAFETY: `pkt` reaches DST_HOST.
        let header::CommonFields { version_tc: first, hdr_units, payload_len, path_type: ptype, addr_types } =
            unsafe { header::CommonFields::read_unchecked(pkt) };
        // An unsupported address type gives a path start no header reaches, so the one
        // compare of HdrLen against the path's start covers the address types, the host
        // addresses' length and the path's shortest (for the standard path, its meta header).
        // The packet reaching the path's start (Truncated in the views) follows from HdrLen +
        // PayloadLen being its length.
        let path_start = header::path_start_of(addr_types);
        let hdr_len = usize::from(hdr_units) * 4;
        if (header::version_of(first) | (ptype ^ path_type)) != 0
            || hdr_len < path_start + min_path
            || hdr_len + usize::from(payload_len) != pkt.len()
        {
            return None;
        }
        Some(Self { pkt, path_start, hdr_len, payload_len })
    }

    /// Where the path starts in the packet (below 1020: HdrLen counts 4-byte units in one
    /// byte).
    #[inline(always)]
    pub fn path_start(&self) -> usize {
        self.path_start
    }

    /// The path, `path_start..hdr_len`: at least `min_path` bytes.
    #[inline(always)]
    pub fn path(&self) -> &'a [u8] {
        debug_assert!(self.path_start <= self.hdr_len && self.hdr_len <= self.pkt.len());
        // SAFETY: `path_start <= hdr_len` (checked in `new`) and `hdr_len + PayloadLen` is the
        // packet's length.
        unsafe { self.pkt.get_unchecked(self.path_start..self.hdr_len) }
    }

    /// The common header's PayloadLen.
    #[inline(always)]
    pub fn payload_len(&self) -> u16 {
        self.payload_len
    }

    /// The destination and the source ISD-AS.
    #[inline(always)]
    pub fn dst_src(&self) -> (IsdAsn, IsdAsn) {
        // SAFETY: the packet reaches the path's start, after DST_HOST, which both ISD-ASes end
        // before (the assertion above).
        unsafe {
            (
                IsdAsn::from_u64(raw::be_u64(self.pkt, hdr::DST_IA.start)),
                IsdAsn::from_u64(raw::be_u64(self.pkt, hdr::SRC_IA.start)),
            )
        }
    }
}
