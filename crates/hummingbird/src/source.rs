//! Source processing: stamping a reserved path for each packet (BaseTimestamp,
//! MillisTimestamp, a per-packet Counter, and the AggMAC of every flyover hop).

#[cfg(target_arch = "x86_64")]
use aviary_scion::cpu::AesNi;
use aviary_scion::cpu::{Cpu, Portable};
use aviary_scion::wire::header::{path_type, ScionView};
use thiserror::Error;

use crate::crypto::{flyover_block, AuthKey, ResInfo};
use crate::path::Flyover;
use crate::path::MAX_COUNTER;
use crate::path_view::HbirdPathView;
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
    /// Line of the flyover hop field in the path.
    line: usize,
    /// The plain hop-field MAC the AggMAC is built on.
    hop_mac: [u8; 6],
    /// The reservation fields as the template carries them.
    flyover: Flyover,
    res: ResInfo,
    key: AuthKey,
}

/// Stamps packets that all follow one reserved path.
pub struct Source {
    stamps: Vec<Stamp>,
    /// Segment lengths of the template, which every stamped packet shares.
    seg_len: [u8; 3],
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
        let path = HbirdPathView::new_checked(view.path()).map_err(|_| StampError::NotHummingbird)?;
        let lines: Vec<usize> = path.flyover_lines().collect();
        if lines.len() != reservations.len() {
            return Err(StampError::ReservationCount { path: lines.len(), given: reservations.len() });
        }
        let stamps = lines
            .into_iter()
            .zip(reservations)
            .map(|(line, r)| {
                let hop = path.hop(line).expect("a flyover line of this path");
                Stamp {
                    line,
                    hop_mac: hop.hop.mac,
                    flyover: hop.flyover.expect("a flyover line"),
                    res: r.info,
                    key: AuthKey::new(&r.ak),
                }
            })
            .collect();
        Ok(Self { stamps, seg_len: path.meta().seg_len, counter: 0 })
    }

    /// Stamps `pkt` (same header as the template, any payload) for sending at `now_ns`.
    pub fn stamp(&mut self, pkt: &mut [u8], now_ns: u64) -> Result<(), StampError> {
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves the CPU has the features `stamp_aes_ni` is compiled for.
            return unsafe { self.stamp_aes_ni(ni, pkt, now_ns) };
        }
        self.stamp_on(Portable, pkt, now_ns)
    }

    /// [`Self::stamp_on`] compiled with AES-NI enabled, so that the FlyoverMACs' AES is inlined
    /// (called once a flyover from the baseline build, a stamp of 8 flyovers took 184 ns
    /// instead of 50).
    ///
    /// # Safety
    /// The CPU has the features of `aviary_scion::cpu::AES_NI_FEATURES` (`ni` proves it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
    fn stamp_aes_ni(&mut self, ni: AesNi, pkt: &mut [u8], now_ns: u64) -> Result<(), StampError> {
        self.stamp_on(ni, pkt, now_ns)
    }

    #[inline(always)]
    fn stamp_on(&mut self, cpu: impl Cpu, pkt: &mut [u8], now_ns: u64) -> Result<(), StampError> {
        let mut view = ScionView::new_checked(pkt).map_err(|_| StampError::NotHummingbird)?;
        let pkt_len = view.pkt_len_u16().ok_or(StampError::PktLenOverflow)?;
        let dst = view.dst_ia_bytes();
        let base_ts = (now_ns / 1_000_000_000) as u32;
        let millis = ((now_ns / 1_000_000) % 1000) as u16;
        let counter = self.counter;
        self.counter = (self.counter + 1) & MAX_COUNTER;
        let mut path = HbirdPathView::new_checked(view.path_mut()).map_err(|_| StampError::LayoutMismatch)?;
        if path.meta().seg_len != self.seg_len {
            return Err(StampError::LayoutMismatch);
        }
        path.set_timestamps(base_ts, millis, counter);
        for s in &self.stamps {
            let off = res_start_offset(base_ts, s.res.start)?;
            let fm = s.key.flyover_mac_on(cpu, &flyover_block(dst, pkt_len, off, millis, counter));
            let mut agg = s.hop_mac;
            for (a, f) in agg.iter_mut().zip(&fm) {
                *a ^= f;
            }
            if !path.set_flyover(s.line, &Flyover { res_start_offset: off, ..s.flyover }) {
                return Err(StampError::LayoutMismatch);
            }
            path.set_hop_mac(s.line, &agg);
        }
        Ok(())
    }
}
