//! Duplicate suppression of EPIC packets at routers, keyed by (source, packet timestamp), on
//! the floor's rotating Bloom filter ([`aviary_qos::DuplicateFilter`]).
//!
//! A packet's identity is its source (ISD-AS and host) and its timestamp (the first info
//! field's timestamp, EpicTS and Counter). Only packets whose validation field verified are
//! recorded, so forged packets cannot fill the filter or frame a source; a replay of a
//! recorded packet that is still fresh arrives within [`FRESHNESS_SPAN_NS`] of it, which is
//! how long the filter remembers.
//!
//! The identity is encoded with the source host at its wire length (its type/length byte
//! says which), so an IPv4 or service source gives a 25-byte key, two AES blocks of the
//! filter's hash, and only an IPv6 source the full 37 bytes (three).

use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, DuplicateFilterConfigError, KeyHash};

use super::timestamp::FRESHNESS_SPAN_NS;
use crate::wire::epic::PktId;
use crate::wire::header::HostAddr;
use crate::IsdAsn;

/// The remembered identities of validated EPIC packets.
#[derive(Clone, Debug)]
pub struct EpicDuplicates {
    filter: DuplicateFilter,
}

/// `SrcIA (8) | host type/len (1) | SrcHost (4 or 16) | info timestamp (4) | EpicTS | Counter
/// (8)`, at most.
const MAX_KEY_LEN: usize = 37;

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
        self.first_seen_hashed(self.hash(src_ia, src_host, info_ts, id), now_ns)
    }

    /// The filter's hash of a packet's identity, for [`Self::prefetch`] and
    /// [`Self::first_seen_hashed`]: a batch hashes and prefetches every packet before
    /// recording the first, so that their cache misses overlap.
    pub fn hash(&self, src_ia: IsdAsn, src_host: &HostAddr, info_ts: u32, id: PktId) -> KeyHash {
        self.hash_on(crate::cpu::Detect, src_ia, src_host, info_ts, id)
    }

    /// [`Self::hash`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
    #[inline(always)]
    pub fn hash_on(
        &self,
        cpu: impl crate::cpu::Cpu,
        src_ia: IsdAsn,
        src_host: &HostAddr,
        info_ts: u32,
        id: PktId,
    ) -> KeyHash {
        let mut key = [0u8; MAX_KEY_LEN];
        let (host, host_len) = src_host.to_wire();
        key[..8].copy_from_slice(&src_ia.to_bytes());
        key[8] = src_host.type_len();
        let at = 9 + host_len;
        key[9..at].copy_from_slice(&host[..host_len]);
        key[at..at + 4].copy_from_slice(&info_ts.to_be_bytes());
        key[at + 4..at + 12].copy_from_slice(&id.to_bytes());
        self.filter.hash_on(cpu, &key[..at + 12])
    }

    /// Starts loading the filter's lines of the identity hashed to `h` (only a hint).
    pub fn prefetch(&self, h: KeyHash) {
        self.filter.prefetch(h);
    }

    /// [`Self::first_seen`] of the identity hashed to `h`.
    pub fn first_seen_hashed(&mut self, h: KeyHash, now_ns: u64) -> bool {
        self.filter.check_and_insert_hashed(h, now_ns)
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
        // The same address bytes as IPv4 and as the first bytes of IPv6 are other sources.
        let v6 = HostAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_compatible());
        assert!(d.first_seen(ia, &v6, 1_000, id, now));
        assert!(!d.first_seen(ia, &v6, 1_000, id, now));
        let h = d.hash(ia, &host, 1_000, PktId { counter: 3, ..id });
        d.prefetch(h);
        assert!(d.first_seen_hashed(h, now));
        assert!(!d.first_seen(ia, &host, 1_000, PktId { counter: 3, ..id }, now));
    }
}
