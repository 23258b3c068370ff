//! Lies about a packet's common header and bytes, whatever its path type: told to valid
//! packets before a parser sees them, so that the differential tests of stage 1 (the standard
//! path's and Hummingbird's raw passes against the checked views) see every way a header can
//! be wrong. Each suite adds the lies of its own path type beside these.

use aviary_scion::wire::header::field as hdr;
use proptest::prelude::*;
use proptest::sample::Index;

#[derive(Clone, Debug)]
pub enum HeaderLie {
    /// Bytes XORed at random places.
    Flip(Vec<(Index, u8)>),
    /// One byte of the first 64 (the headers and the path's start) set.
    HeaderByte(u8, u8),
    PathType(u8),
    HdrLen(u8),
    PayloadLen(u16),
    /// The path's first word replaced (for both path types: CurrINF, CurrHF, reserved bits
    /// and SegLens).
    Meta(u32),
    /// Cut short, or bytes appended.
    Cut(Index),
    Append(Vec<u8>),
}

pub fn arb_header_lie() -> impl Strategy<Value = HeaderLie> {
    prop_oneof![
        3 => prop::collection::vec((any::<Index>(), 1u8..=255), 1..4).prop_map(HeaderLie::Flip),
        2 => (0u8..64, any::<u8>()).prop_map(|(at, v)| HeaderLie::HeaderByte(at, v)),
        1 => any::<u8>().prop_map(HeaderLie::PathType),
        1 => any::<u8>().prop_map(HeaderLie::HdrLen),
        1 => any::<u16>().prop_map(HeaderLie::PayloadLen),
        1 => any::<u32>().prop_map(HeaderLie::Meta),
        1 => any::<Index>().prop_map(HeaderLie::Cut),
        1 => prop::collection::vec(any::<u8>(), 1..16).prop_map(HeaderLie::Append),
    ]
}

impl HeaderLie {
    /// Tells the lie in `pkt`, whose path starts at `path_start`.
    pub fn tell(&self, pkt: &mut Vec<u8>, path_start: usize) {
        match self {
            HeaderLie::Flip(flips) => {
                for (at, x) in flips {
                    let i = at.index(pkt.len());
                    pkt[i] ^= x;
                }
            }
            HeaderLie::HeaderByte(at, v) => {
                if let Some(b) = pkt.get_mut(usize::from(*at)) {
                    *b = *v;
                }
            }
            HeaderLie::PathType(t) => pkt[hdr::PATH_TYPE] = *t,
            HeaderLie::HdrLen(l) => pkt[hdr::HDR_LEN] = *l,
            HeaderLie::PayloadLen(l) => pkt[hdr::PAYLOAD_LEN].copy_from_slice(&l.to_be_bytes()),
            HeaderLie::Meta(m) => pkt[path_start..path_start + 4].copy_from_slice(&m.to_be_bytes()),
            HeaderLie::Cut(at) => pkt.truncate(at.index(pkt.len())),
            HeaderLie::Append(more) => pkt.extend_from_slice(more),
        }
    }
}
