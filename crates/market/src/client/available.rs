//! What is still open on one side of a hop, for the planner's error when a window cannot be
//! covered: the buyer reads what to ask for instead ("1 Mbit/s from ... to ...").

use std::fmt;

use alloy_primitives::U256;

use super::view::{format_bandwidth, format_duration, format_utc};
use super::{Offer, Window};

/// At most this many pieces are named; the rest are counted.
const SHOWN: usize = 6;

/// One open listing on the side: what it holds and the rules a piece of it must follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenPiece {
    pub listing_id: U256,
    /// kbit/s.
    pub bandwidth: u64,
    pub start: u64,
    pub expiry: u64,
    /// The asset's time grid (s).
    pub granularity: u32,
    /// The smallest bandwidth a piece or remainder may have (kbit/s).
    pub min_bandwidth: u32,
}

/// The open pieces around a window on one side, in time order: those that overlap it, and
/// the nearest before and after it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Available {
    pub pieces: Vec<OpenPiece>,
}

impl Available {
    /// The offers of `offers` on this side (`isd_as`, `interface`, direction) around `w`.
    pub(crate) fn on_side(offers: &[&Offer], isd_as: u64, interface: u16, is_ingress: bool, w: Window) -> Self {
        let mut side: Vec<OpenPiece> = offers
            .iter()
            .filter(|o| o.asset.isdAs == isd_as && o.asset.interfaceId == interface && o.asset.isIngress == is_ingress)
            .map(|o| OpenPiece {
                listing_id: o.listing_id,
                bandwidth: o.asset.bandwidth,
                start: o.asset.startTime,
                expiry: o.asset.expiryTime,
                granularity: o.asset.timeGranularity,
                min_bandwidth: o.asset.minBandwidth,
            })
            .collect();
        side.sort_by_key(|p| (p.start, p.expiry, p.listing_id));
        let before = side.iter().filter(|p| p.expiry <= w.start).map(|p| p.expiry).max();
        let after = side.iter().filter(|p| p.start >= w.expiry).map(|p| p.start).min();
        side.retain(|p| {
            (p.start < w.expiry && p.expiry > w.start) || Some(p.expiry) == before || Some(p.start) == after
        });
        Self { pieces: side }
    }
}

impl fmt::Display for Available {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pieces.is_empty() {
            return write!(f, "nothing is listed there");
        }
        write!(f, "open there:")?;
        for (i, p) in self.pieces.iter().take(SHOWN).enumerate() {
            write!(
                f,
                "{} {} from {} to {} (listing {}, grid {}, min {})",
                if i == 0 { "" } else { ";" },
                format_bandwidth(p.bandwidth),
                format_utc(p.start),
                format_utc(p.expiry),
                p.listing_id,
                format_duration(p.granularity.into()),
                format_bandwidth(p.min_bandwidth.into())
            )?;
        }
        if self.pieces.len() > SHOWN {
            write!(f, "; and {} more", self.pieces.len() - SHOWN)?;
        }
        Ok(())
    }
}
