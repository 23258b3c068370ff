//! DRKey epochs: the validity periods of secret values, and the rule that says which
//! epochs' keys a verifier accepts at a given time.
//!
//! SCION's DRKey design (docs.scion.org, "Key Validity time") requires that an AS's epochs
//! for one protocol never overlap, so every secret value belongs to exactly one epoch.
//! Keys are short-lived instead of revoked: scionproto's control service uses epochs of
//! 24 hours aligned to multiples of the epoch length since the Unix epoch (`begin = t -
//! t % duration`), and the design bounds the length between 6 minutes and 3 days.
//!
//! At a rollover a packet authenticated a moment earlier with the old key may still be in
//! flight, so verifiers also accept the previous epoch's key during a short *grace period*
//! at the start of the new epoch (5 s in the design). Senders always use the current key.
//! Epochs here are half-open, `[begin, end)`, so exactly one epoch is current at any time;
//! the epoch fields themselves are what goes into the secret value derivation.

use super::DrkeyError;

/// A validity period in Unix seconds; 32-bit because the secret value derivation encodes
/// both ends as 4-byte big-endian integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Epoch {
    pub begin_s: u32,
    pub end_s: u32,
}

impl Epoch {
    /// An epoch with `begin_s < end_s`.
    pub fn new(begin_s: u32, end_s: u32) -> Result<Self, DrkeyError> {
        if begin_s >= end_s {
            return Err(DrkeyError::BadEpoch { begin_s, end_s });
        }
        Ok(Self { begin_s, end_s })
    }

    /// Length in seconds (0 for an epoch that was built by hand with `end_s <= begin_s`).
    pub const fn duration_s(&self) -> u32 {
        self.end_s.saturating_sub(self.begin_s)
    }

    /// Whether `t` lies in `[begin, end)`: this is the current epoch at `t`.
    pub const fn contains(&self, t: u64) -> bool {
        self.begin_s as u64 <= t && t < self.end_s as u64
    }

    /// Whether a verifier accepts this epoch's keys at `t`: from `begin` up to `grace_s`
    /// seconds after `end`, i.e. during the grace period of the following epoch.
    pub const fn accepts(&self, t: u64, grace_s: u32) -> bool {
        self.begin_s as u64 <= t && t < self.end_s as u64 + grace_s as u64
    }
}

/// Fixed-length epochs aligned to multiples of their length, with a grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EpochSchedule {
    duration_s: u32,
    grace_s: u32,
}

impl EpochSchedule {
    /// scionproto's default epoch length (`control/config/drkey.go`): one day.
    pub const DEFAULT_DURATION_S: u32 = 24 * 3600;
    /// The grace period of SCION's DRKey design.
    pub const GRACE_PERIOD_S: u32 = 5;
    /// The shortest epoch the design allows (not enforced here, so tests can use short ones).
    pub const MIN_DURATION_S: u32 = 6 * 60;
    /// The longest epoch the design allows (not enforced here either).
    pub const MAX_DURATION_S: u32 = 3 * 24 * 3600;
    /// One-day epochs with a 5 s grace period.
    pub const SCION_DEFAULT: Self = Self { duration_s: Self::DEFAULT_DURATION_S, grace_s: Self::GRACE_PERIOD_S };

    /// A schedule with `duration_s > 0` and `grace_s < duration_s`: a longer grace period
    /// would make keys of two epochs back acceptable, which the rollover rule excludes.
    pub fn new(duration_s: u32, grace_s: u32) -> Result<Self, DrkeyError> {
        if duration_s == 0 || grace_s >= duration_s {
            return Err(DrkeyError::BadSchedule { duration_s, grace_s });
        }
        Ok(Self { duration_s, grace_s })
    }

    pub const fn duration_s(&self) -> u32 {
        self.duration_s
    }

    pub const fn grace_s(&self) -> u32 {
        self.grace_s
    }

    /// The epoch that is current at `t` (Unix seconds). Fails when its end does not fit
    /// the 32-bit encoding (from the year 2106 on).
    pub fn epoch_at(&self, t: u64) -> Result<Epoch, DrkeyError> {
        let d = self.duration_s as u64;
        let begin = t - t % d;
        match begin.checked_add(d).map(u32::try_from) {
            Some(Ok(end_s)) => Ok(Epoch { begin_s: begin as u32, end_s }),
            _ => Err(DrkeyError::EpochOutOfRange(t)),
        }
    }

    /// The epochs whose keys a verifier accepts at `t`: the current one, and during the
    /// first `grace_s` seconds of it also the previous one.
    pub fn accepted_at(&self, t: u64) -> Result<(Epoch, Option<Epoch>), DrkeyError> {
        let current = self.epoch_at(t)?;
        let previous = (t < current.begin_s as u64 + self.grace_s as u64)
            .then(|| current.begin_s.checked_sub(self.duration_s))
            .flatten()
            .map(|begin_s| Epoch { begin_s, end_s: current.begin_s });
        Ok((current, previous))
    }

    /// The epoch after `e` in this schedule (the one current at `e.end_s`).
    pub fn next(&self, e: Epoch) -> Result<Epoch, DrkeyError> {
        self.epoch_at(e.end_s as u64)
    }
}

impl Default for EpochSchedule {
    fn default() -> Self {
        Self::SCION_DEFAULT
    }
}
