//! Source processing: stamping a reserved path for each packet (BaseTimestamp,
//! MillisTimestamp, a per-packet Counter, and the AggMAC of every flyover hop).

use aviary_scion::wire::header::{path_type, ScionView};
use aviary_scion::wire::path::HOP_LEN;
use thiserror::Error;

use crate::crypto::{flyover_block, high_res_ts, AuthKey, ResInfo, MAX_COUNTER};
use crate::path::{hop_area, FLYOVER_BIT, FLYOVER_LINES, HOP_LINES, META_LEN};
use crate::reservation::{res_start_offset, BuildError, Reservation};

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum StampError {
    #[error("packet is not a well-formed SCION packet with a Hummingbird path")]
    NotHummingbird,
    #[error("path has {path} flyover hop fields but {given} reservations were given")]
    ReservationCount { path: usize, given: usize },
    #[error("packet's path does not have the layout of the template's")]
    LayoutMismatch,
    #[error("packet length exceeds 65535 bytes")]
    PktLenOverflow,
    #[error(transparent)]
    Reservation(#[from] BuildError),
}

struct Stamp {
    /// Offset of the flyover hop field from the start of the path.
    path_off: usize,
    /// The plain hop-field MAC the AggMAC is built on.
    hop_mac: [u8; 6],
    res: ResInfo,
    key: AuthKey,
}

/// Stamps packets that all follow one reserved path.
pub struct Source {
    stamps: Vec<Stamp>,
    /// Path length and segment lengths of the template, which every stamped packet shares.
    path_len: usize,
    seg_lens: u32,
    counter: u32,
}

impl Source {
    /// `template` is a packet whose Hummingbird path carries flyover hop fields with the
    /// plain hop-field MACs (as built by [`crate::build_path`]); `reservations` are given
    /// in the order of the flyover hop fields on the path.
    pub fn new(template: &[u8], reservations: &[Reservation]) -> Result<Self, StampError> {
        let view = ScionView::new_checked(template).map_err(|_| StampError::NotHummingbird)?;
        if view.path_type() != path_type::HUMMINGBIRD {
            return Err(StampError::NotHummingbird);
        }
        let path = view.path();
        let (hop_base, lines) = hop_area(path).ok_or(StampError::NotHummingbird)?;
        let mut stamps = Vec::new();
        let mut line = 0;
        let mut res = reservations.iter();
        let mut found = 0;
        while line < lines {
            let off = hop_base + 4 * line;
            if path[off] & FLYOVER_BIT != 0 {
                if line + FLYOVER_LINES > lines {
                    return Err(StampError::NotHummingbird);
                }
                found += 1;
                if let Some(r) = res.next() {
                    stamps.push(Stamp {
                        path_off: off,
                        hop_mac: path[off + 6..off + 12].try_into().unwrap(),
                        res: r.info,
                        key: AuthKey::new(&r.ak),
                    });
                }
                line += FLYOVER_LINES;
            } else {
                line += HOP_LINES;
            }
        }
        if found != reservations.len() {
            return Err(StampError::ReservationCount { path: found, given: reservations.len() });
        }
        Ok(Self { stamps, path_len: path.len(), seg_lens: seg_lens_bits(path), counter: 0 })
    }

    /// Stamps `pkt` (same header as the template, any payload) for sending at `now_ns`.
    pub fn stamp(&mut self, pkt: &mut [u8], now_ns: u64) -> Result<(), StampError> {
        let mut view = ScionView::new_checked(pkt).map_err(|_| StampError::NotHummingbird)?;
        let pkt_len = view.pkt_len_u16().ok_or(StampError::PktLenOverflow)?;
        let dst = view.dst_ia_bytes();
        let base_ts = (now_ns / 1_000_000_000) as u32;
        let millis = ((now_ns / 1_000_000) % 1000) as u16;
        let counter = self.counter;
        self.counter = (self.counter + 1) & MAX_COUNTER;
        let path = view.path_mut();
        if path.len() != self.path_len || seg_lens_bits(path) != self.seg_lens {
            return Err(StampError::LayoutMismatch);
        }
        // Only the timestamps change: BaseTimestamp, then MillisTimestamp | Counter.
        path[4..8].copy_from_slice(&base_ts.to_be_bytes());
        path[8..META_LEN].copy_from_slice(&high_res_ts(millis, counter).to_be_bytes());
        for s in &self.stamps {
            let off = res_start_offset(base_ts, s.res.start)?;
            let fm = s.key.flyover_mac(&flyover_block(dst, pkt_len, off, millis, counter));
            let f = &mut path[s.path_off..s.path_off + HOP_LEN + 8];
            f[HOP_LEN + 4..HOP_LEN + 6].copy_from_slice(&off.to_be_bytes());
            for i in 0..6 {
                f[6 + i] = s.hop_mac[i] ^ fm[i];
            }
        }
        Ok(())
    }
}

/// The three SegLen fields of a path's first word.
fn seg_lens_bits(path: &[u8]) -> u32 {
    u32::from_be_bytes([path[0], path[1], path[2], path[3]]) & 0x1f_ffff
}
