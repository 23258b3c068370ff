//! The one clock of every process: CLOCK_REALTIME. Hop-field expiry, Hummingbird timestamps,
//! send timestamps and one-way delays all use it, so processes on one machine agree; on
//! several machines they need NTP-level synchronisation.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in ns.
pub fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Unix time in s.
pub fn unix_s() -> u64 {
    unix_ns() / 1_000_000_000
}
