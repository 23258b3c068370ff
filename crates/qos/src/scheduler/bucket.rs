//! An exact token bucket in virtual time for a class's rate bound.
//!
//! Tokens are kept in bit·ns/s units (a byte is `8 · 10⁹` of them), so a refill over `Δ` ns at
//! `rate` bit/s adds exactly `rate · Δ` and nothing is ever rounded. The bucket may go negative by
//! one packet: a class may start a packet whenever its tokens are not negative, so a packet larger
//! than the depth still passes, and over any window `W` a class sends at most
//! `rate · W + depth + one packet`.

/// Tokens of one byte.
const BYTE: i128 = 8 * 1_000_000_000;
/// Depth of every bucket: this much time at its rate, but never less than [`MIN_DEPTH_BYTES`].
pub const DEPTH_NS: u64 = 10_000_000;
/// Two maximum-size packets of the router's buffers: a class can always send back to back.
pub const MIN_DEPTH_BYTES: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateBucket {
    rate_bps: u64,
    depth: i128,
    tokens: i128,
    /// Time of `tokens`, ns.
    at: u64,
}

impl RateBucket {
    /// A full bucket.
    pub fn new(rate_bps: u64) -> Self {
        let depth = Self::depth_for(rate_bps);
        Self { rate_bps, depth, tokens: depth, at: 0 }
    }

    fn depth_for(rate_bps: u64) -> i128 {
        let by_time = i128::from(rate_bps) * i128::from(DEPTH_NS);
        by_time.max(i128::from(MIN_DEPTH_BYTES) * BYTE)
    }

    /// Bytes of depth (the largest burst beyond the rate, plus one packet).
    #[cfg(test)]
    fn depth_bytes(&self) -> u64 {
        (self.depth / BYTE) as u64
    }

    /// Changes the rate at `now`; tokens earned so far are kept (up to the new depth).
    pub fn set_rate(&mut self, rate_bps: u64, now: u64) {
        self.refill(now);
        self.rate_bps = rate_bps;
        self.depth = Self::depth_for(rate_bps);
        self.tokens = self.tokens.min(self.depth);
    }

    fn tokens_at(&self, now: u64) -> i128 {
        let dt = i128::from(now.saturating_sub(self.at));
        let earned = i128::from(self.rate_bps).checked_mul(dt).unwrap_or(i128::MAX);
        self.tokens.saturating_add(earned).min(self.depth.max(self.tokens))
    }

    fn refill(&mut self, now: u64) {
        if now > self.at {
            self.tokens = self.tokens_at(now);
            self.at = now;
        }
    }

    /// Whether a packet may start at `now`.
    pub fn allows(&self, now: u64) -> bool {
        self.tokens_at(now) >= 0
    }

    /// The earliest time `>= now` at which a packet may start; `None` at rate 0 with a debt.
    pub fn allowed_from(&self, now: u64) -> Option<u64> {
        let t = self.tokens_at(now);
        if t >= 0 {
            return Some(now);
        }
        if self.rate_bps == 0 {
            return None;
        }
        let wait = t.unsigned_abs().div_ceil(u128::from(self.rate_bps));
        Some(now.saturating_add(u64::try_from(wait).unwrap_or(u64::MAX)))
    }

    /// Charges a packet of `len` bytes that started at `now`.
    pub fn charge(&mut self, len: usize, now: u64) {
        self.refill(now);
        self.tokens -= len as i128 * BYTE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_exactly_until_the_debt_is_paid() {
        // 1 Mbit/s: depth 10 ms = 1250 B, so the minimum of 4096 B applies.
        let mut b = RateBucket::new(1_000_000);
        assert_eq!(b.depth_bytes(), 4096);
        b.charge(4096 + 125, 0);
        // 125 B of debt at 1 Mbit/s: 1 ms.
        assert!(!b.allows(999_999));
        assert_eq!(b.allowed_from(0), Some(1_000_000));
        assert!(b.allows(1_000_000));
        // Refill stops at the depth.
        assert_eq!(b.tokens_at(u64::MAX / 2), b.depth);
        let mut z = RateBucket::new(0);
        z.charge(5000, 0);
        assert_eq!(z.allowed_from(10), None);
    }
}
