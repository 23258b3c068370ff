//! SCION extension headers: the hop-by-hop (NextHdr 200) and end-to-end (201) options headers.
//!
//! ```text
//!  0               1               2               3
//! |    NextHdr    |     ExtLen    |  Options (TLV) ...
//! ```
//! The header is `(ExtLen + 1) · 4` bytes long. Options are `OptType | OptDataLen | OptData`,
//! except Pad1 (type 0), a single byte. Routers only read hop-by-hop options, so that is what the
//! views here walk; a malformed header yields no options rather than an error, since the caller
//! (the router's dispatcher) then falls back to the path type, whose processor checks the packet.

use crate::wire::header::ScionView;

/// `NextHdr` of a hop-by-hop options header.
pub const HOP_BY_HOP: u8 = 200;
/// `NextHdr` of an end-to-end options header.
pub const END_TO_END: u8 = 201;
/// Option types shared by both headers.
pub const OPT_PAD1: u8 = 0;
pub const OPT_PADN: u8 = 1;

/// Offsets within an extension header.
pub mod field {
    pub const NEXT_HDR: usize = 0;
    pub const EXT_LEN: usize = 1;
    pub const OPTIONS: usize = 2;
}

/// Length of the extension header at the start of `buf`, `(ExtLen + 1) · 4`, if `buf` holds
/// its ExtLen field (not necessarily the whole header).
pub fn header_len(buf: &[u8]) -> Option<usize> {
    Some((usize::from(*buf.get(field::EXT_LEN)?) + 1) * 4)
}

/// The option area of the extension header at the start of `buf`, if it is complete.
pub fn options_area(buf: &[u8]) -> Option<&[u8]> {
    buf.get(field::OPTIONS..header_len(buf)?)
}

/// `NextHdr` of the extension header at the start of `buf`.
pub fn next_hdr(buf: &[u8]) -> Option<u8> {
    buf.get(field::NEXT_HDR).copied()
}

/// `(type, data)` of each option in an option area; stops at the first malformed option.
pub fn options(area: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    option_ranges(area).map(move |(t, r)| (t, &area[r]))
}

/// `(type, position of its data within the area)` of each option in an option area, for
/// callers that update an option in place; stops at the first malformed option.
pub fn option_ranges(area: &[u8]) -> impl Iterator<Item = (u8, std::ops::Range<usize>)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let t = *area.get(at)?;
        if t == OPT_PAD1 {
            at += 1;
            continue;
        }
        let len = usize::from(*area.get(at + 1)?);
        let data = at + 2..at + 2 + len;
        area.get(data.clone())?;
        at = data.end;
        if t == OPT_PADN {
            continue;
        }
        return Some((t, data));
    })
}

/// The types of the options in a SCION packet's hop-by-hop options header (none if it has
/// none, or if the headers are malformed). Padding options are skipped.
pub fn hop_by_hop_options(pkt: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let area = ScionView::new_checked(pkt)
        .ok()
        .filter(|v| v.next_hdr() == HOP_BY_HOP)
        .and_then(|v| pkt.get(v.hdr_len()..))
        .and_then(options_area)
        .unwrap_or(&[]);
    options(area).map(|(t, _)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_skip_padding_and_stop_at_malformed_ones() {
        // Pad1, option 0x3e with 2 bytes, PadN of 3 (1 data byte), option 7 with no data.
        let area = [0, 0x3e, 2, 0xaa, 0xbb, 1, 1, 0, 7, 0];
        let got: Vec<_> = options(&area).collect();
        assert_eq!(got, [(0x3e, &[0xaa, 0xbb][..]), (7, &[][..])]);
        // An option whose data runs past the area ends the walk.
        assert_eq!(options(&[9, 5, 1]).count(), 0);
        assert_eq!(options(&[9]).count(), 0);
        let ranges: Vec<_> = option_ranges(&area).collect();
        assert_eq!(ranges, [(0x3e, 3..5), (7, 10..10)]);
    }

    #[test]
    fn the_area_is_ext_len_plus_one_words() {
        let hdr = [17, 1, 0, 0, 5, 0, 0, 0];
        assert_eq!(options_area(&hdr), Some(&hdr[2..8]));
        assert_eq!(options_area(&hdr[..7]), None);
        assert_eq!(next_hdr(&hdr), Some(17));
    }
}
