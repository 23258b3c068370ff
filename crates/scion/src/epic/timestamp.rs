//! EPIC's packet timestamp: the time a packet was sent, relative to the first info field's
//! timestamp, in units of 21 µs, and the freshness check every validating router applies.
//! Constants and rules as SCION's EPIC library (scionproto `pkg/experimental/epic`) defines
//! them.

use thiserror::Error;

const NS_PER_S: u64 = 1_000_000_000;
/// Unit of EpicTS.
pub const TIMESTAMP_RESOLUTION_NS: u64 = 21_000;
/// How long after it was sent a packet is still accepted.
pub const MAX_PACKET_LIFETIME_NS: u64 = 2 * NS_PER_S;
/// How far the clocks of source and verifier may disagree, either way.
pub const MAX_CLOCK_SKEW_NS: u64 = NS_PER_S;
/// The spread of send times a verifier accepts at one instant: a replay of an accepted
/// packet arrives within this of the original or is stale (what a duplicate filter must
/// remember).
pub const FRESHNESS_SPAN_NS: u64 = MAX_PACKET_LIFETIME_NS + 2 * MAX_CLOCK_SKEW_NS;

/// Why a source cannot stamp a packet (SCION refuses these too).
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum TimestampError {
    #[error("the info field's timestamp is after now")]
    InfoInFuture,
    #[error("now is more than 2^32 units of 21 µs (1 d 63 min) after the info field's timestamp")]
    Overflow,
}

/// Why a verifier rejects a packet's timestamp.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum StaleTimestamp {
    #[error("sent more than the allowed clock skew in the future")]
    Future,
    #[error("sent longer ago than the packet lifetime plus clock skew")]
    Expired,
}

/// The EpicTS of a packet sent at `now_ns` on a path whose first info field carries
/// `info_ts`: `max(0, (now − info_ts) / 21 µs − 1)`.
pub fn epic_timestamp(info_ts: u32, now_ns: u64) -> Result<u32, TimestampError> {
    let base = u64::from(info_ts) * NS_PER_S;
    let since = now_ns.checked_sub(base).ok_or(TimestampError::InfoInFuture)?;
    u32::try_from((since / TIMESTAMP_RESOLUTION_NS).saturating_sub(1)).map_err(|_| TimestampError::Overflow)
}

/// When the source says it sent the packet, ns since the Unix epoch: the end of the
/// 21 µs unit EpicTS names (so never before the true send time).
pub fn sent_ns(info_ts: u32, epic_ts: u32) -> u64 {
    u64::from(info_ts) * NS_PER_S + (u64::from(epic_ts) + 1) * TIMESTAMP_RESOLUTION_NS
}

/// Accepts a packet sent at most [`MAX_CLOCK_SKEW_NS`] after `now_ns` and at most
/// [`MAX_PACKET_LIFETIME_NS`] + [`MAX_CLOCK_SKEW_NS`] before it (both bounds inclusive).
pub fn verify_timestamp(info_ts: u32, epic_ts: u32, now_ns: u64) -> Result<(), StaleTimestamp> {
    let sent = sent_ns(info_ts, epic_ts);
    if sent > now_ns.saturating_add(MAX_CLOCK_SKEW_NS) {
        return Err(StaleTimestamp::Future);
    }
    if now_ns > sent + MAX_PACKET_LIFETIME_NS + MAX_CLOCK_SKEW_NS {
        return Err(StaleTimestamp::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_units_round_down_to_zero() {
        let base = 1_700_000_000u64 * NS_PER_S;
        assert_eq!(epic_timestamp(1_700_000_000, base), Ok(0));
        assert_eq!(epic_timestamp(1_700_000_000, base + 2 * TIMESTAMP_RESOLUTION_NS - 1), Ok(0));
        assert_eq!(epic_timestamp(1_700_000_000, base + 2 * TIMESTAMP_RESOLUTION_NS), Ok(1));
        assert_eq!(epic_timestamp(1_700_000_000, base - 1), Err(TimestampError::InfoInFuture));
        let last = base + (1u64 << 32) * TIMESTAMP_RESOLUTION_NS;
        assert_eq!(epic_timestamp(1_700_000_000, last), Ok(u32::MAX));
        assert_eq!(epic_timestamp(1_700_000_000, last + TIMESTAMP_RESOLUTION_NS), Err(TimestampError::Overflow));
    }

    proptest! {
        /// A packet stamped now is fresh now, and for as long as the lifetime allows.
        #[test]
        fn stamped_packets_are_fresh(info_ts in 0u32..=u32::MAX, after in 0u64..(1 << 32) * 21_000, age in 0u64..=2_000_000_000) {
            let now = u64::from(info_ts) * NS_PER_S + after;
            let ts = epic_timestamp(info_ts, now).unwrap();
            prop_assert!(sent_ns(info_ts, ts) <= now + TIMESTAMP_RESOLUTION_NS);
            prop_assert_eq!(verify_timestamp(info_ts, ts, now), Ok(()));
            prop_assert_eq!(verify_timestamp(info_ts, ts, now + age), Ok(()));
        }
    }

    #[test]
    fn bounds_are_inclusive() {
        let sent = sent_ns(10, 5);
        assert_eq!(verify_timestamp(10, 5, sent - MAX_CLOCK_SKEW_NS), Ok(()));
        assert_eq!(verify_timestamp(10, 5, sent - MAX_CLOCK_SKEW_NS - 1), Err(StaleTimestamp::Future));
        let last = sent + MAX_PACKET_LIFETIME_NS + MAX_CLOCK_SKEW_NS;
        assert_eq!(verify_timestamp(10, 5, last), Ok(()));
        assert_eq!(verify_timestamp(10, 5, last + 1), Err(StaleTimestamp::Expired));
    }
}
