//! Duplicate suppression of EPIC packets at routers, keyed by (source, packet timestamp), on
//! the floor's rotating Bloom filter ([`aviary_qos::DuplicateFilter`]).
//!
//! A packet's identity is its source (ISD-AS and host) and its timestamp (the first info
//! field's timestamp, EpicTS and Counter). Only packets whose validation field verified are
//! recorded, so forged packets cannot fill the filter or frame a source; a replay of a
//! recorded packet that is still fresh arrives within [`FRESHNESS_SPAN_NS`] of it, which is
//! how long the filter remembers.

use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, DuplicateFilterConfigError};

use super::timestamp::FRESHNESS_SPAN_NS;
use crate::wire::epic::PktId;
use crate::wire::header::HostAddr;
use crate::IsdAsn;

/// The remembered identities of validated EPIC packets.
#[derive(Clone, Debug)]
pub struct EpicDuplicates {
    filter: DuplicateFilter,
}

/// `SrcIA (8) | host type/len (1) | SrcHost (16) | info timestamp (4) | EpicTS | Counter (8)`.
const KEY_LEN: usize = 37;

impl EpicDuplicates {
    /// A filter for `expected_per_window` packets per freshness span at `false_positive_rate`;
    /// `key` keys its hashes (secret, so that senders cannot craft colliding identities).
    pub fn new(
        expected_per_window: u64,
        false_positive_rate: f64,
        key: [u8; 16],
    ) -> Result<Self, DuplicateFilterConfigError> {
        let config = DuplicateFilterConfig { window_ns: FRESHNESS_SPAN_NS, expected_per_window, false_positive_rate };
        Ok(Self { filter: DuplicateFilter::new(config, key)? })
    }

    /// Records the packet and says whether it is new (`false`: seen within the window).
    pub fn first_seen(&mut self, src_ia: IsdAsn, src_host: &HostAddr, info_ts: u32, id: PktId, now_ns: u64) -> bool {
        let mut key = [0u8; KEY_LEN];
        let (host, _) = src_host.to_wire();
        key[..8].copy_from_slice(&src_ia.to_bytes());
        key[8] = src_host.type_len();
        key[9..25].copy_from_slice(&host);
        key[25..29].copy_from_slice(&info_ts.to_be_bytes());
        key[29..].copy_from_slice(&id.to_bytes());
        self.filter.check_and_insert(&key, now_ns)
    }

    pub fn memory_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_replay_within_the_window_is_caught_and_a_new_packet_is_not() {
        let mut d = EpicDuplicates::new(1000, 1e-6, [7; 16]).unwrap();
        let ia = IsdAsn::from_u64(0x0001_ff00_0000_0110);
        let host = HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let id = PktId { epic_ts: 5, counter: 1 };
        let now = 1_000 * 1_000_000_000;
        assert!(d.first_seen(ia, &host, 1_000, id, now));
        assert!(!d.first_seen(ia, &host, 1_000, id, now + FRESHNESS_SPAN_NS - 1));
        assert!(d.first_seen(ia, &host, 1_000, PktId { counter: 2, ..id }, now));
        let other = HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        assert!(d.first_seen(ia, &other, 1_000, id, now));
    }
}
