//! The 8-byte token bucket of the Z-Lane paper, Appendix D ("Memory-Efficient Rate Limiting").
//!
//! Z-Lane rate-limits guaranteed traffic per source AS and per source ISD at every border
//! router (§4.5), so a router holds one bucket for each of possibly tens of thousands of
//! keys. A textbook bucket (8 B timestamp, 4 B each for counter, rate and burst) takes 20 B;
//! the appendix packs one into 8 B by sharing what can be shared and narrowing the rest:
//!
//! | field    | size | meaning                                                          |
//! |----------|------|------------------------------------------------------------------|
//! | `tokens` | 2 B  | bytes available now, never above the bank's burst                |
//! | `rate`   | 2 B  | refill rate in units of 100 kbit/s (0 .. 6.5535 Gbit/s)          |
//! | `stamp`  | 4 B  | low 32 bits of the time (ns) the tokens were last brought up to  |
//!
//! The burst (a `u16` of bytes) is stored once per [`TokenBucketBank`], so N buckets take
//! `8·N` bytes plus a constant.
//!
//! # The 4-byte timestamp and the window W
//!
//! The appendix says 4 B track "an interval of only 1.3 s" at ns precision; 32 bits of ns
//! in fact span 2³² ns ≈ 4.295 s. We keep full ns precision and use the whole range: the
//! stamp is `now_ns mod 2³²`, and the elapsed time is `now − stamp` in wrapping 32-bit
//! arithmetic, so it is exact whenever the true time since the stamp is below **W = 2³² ns
//! = 4.294967296 s** and that time modulo W otherwise. The longer window only shrinks the one error the
//! appendix analyses (below), by a factor 3.3 against 1.3 s.
//!
//! # Bounds
//!
//! Tokens are whole bytes. A refill adds `⌊elapsed · rate / 80 000⌋` bytes (one byte takes
//! `80 000 / rate` ns at `rate` × 100 kbit/s) and advances the stamp only by the time those
//! bytes took, rounded up to the next ns: the fraction of a byte earned so far is carried
//! in the stamp rather than thrown away. A refill therefore loses less than 1 ns worth of
//! tokens (`< rate` in units of 1/80 000 byte), and a bucket that reaches the burst
//! re-synchronises exactly. With time non-decreasing per bucket:
//!
//! * **Never more generous than exact.** Its tokens never exceed those of an exact bucket
//!   (unbounded timestamps, rational tokens) fed the same admitted packets, so the admitted
//!   bytes in any interval of length `t` are at most `rate · t + burst`.
//! * **Within W of the stamp.** A decision differs from the exact bucket's only when the
//!   exact bucket is within `k` ns worth of tokens of the packet's length, `k` the number of
//!   updates since this bucket was last full.
//! * **W or more after the stamp** looks like that time modulo W: the bucket may drop a packet
//!   the exact bucket admits (a false negative), but only if it arrives less than `ℓ / rate`
//!   after a multiple of W from the stamp and the previous packet left fewer than `ℓ` bytes.
//!   The stamp trails the last packet by the fraction of a byte it carries, less than one
//!   byte's time (`80 000 / rate` ns, at most 80 µs), so a gap since the last packet that
//!   falls short of W by less than that counts here too. After a random idle gap of at
//!   least W the probability is at most `ℓ / (rate · W)`, e.g. 0.028 % for 1500 B at
//!   10 Mbit/s. This holds when a bucket refills within W (`burst ≤ rate · W`),
//!   which every `u16` burst does at 200 kbit/s or more; below that a long gap may leave the
//!   bucket short of full, still never above the exact bucket.
//!
//! Time going backwards reads as a gap of almost W and would refill the bucket: callers pass
//! a monotonic clock. Nothing here reads a clock.

use thiserror::Error;

/// The window of the 32-bit timestamp, ns: gaps are measured modulo this.
pub const STAMP_WINDOW_NS: u64 = 1 << 32;
/// Granularity of [`Rate`], bit/s.
pub const RATE_UNIT_BPS: u64 = 100_000;
/// Nanoseconds of one byte at one [`RATE_UNIT_BPS`]: `8 bit · 10⁹ / 10⁵`.
const NS_BYTE_UNIT: u64 = 8 * 1_000_000_000 / RATE_UNIT_BPS;

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum RateError {
    #[error("rate {bps} bit/s exceeds the 16-bit maximum of {max} bit/s", max = Rate::MAX.bps())]
    TooHigh { bps: u64 },
}

/// A refill rate in units of 100 kbit/s (16 bits, so up to 6.5535 Gbit/s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u16);

impl Rate {
    pub const ZERO: Rate = Rate(0);
    pub const MAX: Rate = Rate(u16::MAX);

    /// A rate of `units` × 100 kbit/s.
    pub const fn from_units(units: u16) -> Self {
        Rate(units)
    }

    /// The largest representable rate not above `bps` (rounding down: a limiter configured
    /// for `bps` must never let more through). Rates above [`Rate::MAX`] are an error.
    pub fn from_bps(bps: u64) -> Result<Self, RateError> {
        u16::try_from(bps / RATE_UNIT_BPS).map(Rate).map_err(|_| RateError::TooHigh { bps })
    }

    pub const fn units(self) -> u16 {
        self.0
    }

    pub const fn bps(self) -> u64 {
        self.0 as u64 * RATE_UNIT_BPS
    }
}

/// One bucket: 8 bytes. Its burst lives in the [`TokenBucketBank`] that holds it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBucket {
    tokens: u16,
    rate: u16,
    /// `now_ns mod 2³²` up to which `tokens` is accounted; see the module docs.
    stamp: u32,
}

impl TokenBucket {
    /// A full bucket. Its stamp does not matter: any refill of a full bucket tops out.
    const fn full(burst: u16, rate: Rate) -> Self {
        TokenBucket { tokens: burst, rate: rate.0, stamp: 0 }
    }

    /// Brings the tokens up to `now_ns`.
    #[inline]
    fn refill(&mut self, burst: u16, now_ns: u64) {
        let now = now_ns as u32; // mod W, on purpose
        if self.tokens >= burst || self.rate == 0 {
            // Nothing to earn: restart the clock so a later rate change counts from now.
            self.tokens = self.tokens.min(burst);
            self.stamp = now;
            return;
        }
        let rate = u64::from(self.rate);
        let elapsed = u64::from(now.wrapping_sub(self.stamp));
        // < 2³² · 2¹⁶: no overflow.
        let earned = elapsed * rate / NS_BYTE_UNIT;
        let room = u64::from(burst - self.tokens);
        if earned >= room {
            self.tokens = burst;
            self.stamp = now;
        } else {
            // Advance only by the time the whole bytes took, rounded up (never generous);
            // the rest of `elapsed` stays as the fraction of the next byte.
            self.tokens += earned as u16;
            self.stamp = self.stamp.wrapping_add((earned * NS_BYTE_UNIT).div_ceil(rate) as u32);
        }
    }

    #[inline]
    fn admit(&mut self, burst: u16, len: u32, now_ns: u64) -> bool {
        self.refill(burst, now_ns);
        match u16::try_from(len) {
            Ok(len) if len <= self.tokens => {
                self.tokens -= len;
                true
            }
            _ => false,
        }
    }
}

/// Token buckets for many keys, indexed by a dense id, sharing one burst size.
///
/// How keys (ASes, ISDs, hosts) map to ids is the caller's business, e.g. a hash map
/// built with the configuration, which changes far less often than packets arrive.
#[derive(Clone, Debug)]
pub struct TokenBucketBank {
    burst: u16,
    buckets: Vec<TokenBucket>,
}

impl TokenBucketBank {
    /// An empty bank whose buckets hold at most `burst_bytes`.
    pub fn new(burst_bytes: u16) -> Self {
        Self::with_capacity(burst_bytes, 0)
    }

    /// An empty bank with room for `n` buckets before it reallocates.
    pub fn with_capacity(burst_bytes: u16, n: usize) -> Self {
        Self { burst: burst_bytes, buckets: Vec::with_capacity(n) }
    }

    /// Adds a full bucket and returns its id.
    pub fn push(&mut self, rate: Rate) -> usize {
        self.buckets.push(TokenBucket::full(self.burst, rate));
        self.buckets.len() - 1
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    pub fn burst(&self) -> u16 {
        self.burst
    }

    pub fn rate(&self, id: usize) -> Option<Rate> {
        self.buckets.get(id).map(|b| Rate(b.rate))
    }

    /// Bytes bucket `id` could admit at `now_ns` (brings it up to date).
    pub fn tokens(&mut self, id: usize, now_ns: u64) -> Option<u16> {
        let burst = self.burst;
        self.buckets.get_mut(id).map(|b| {
            b.refill(burst, now_ns);
            b.tokens
        })
    }

    /// Changes the rate of bucket `id` at `now_ns`; what it earned at the old rate is kept.
    /// Returns false for an unknown id.
    pub fn set_rate(&mut self, id: usize, rate: Rate, now_ns: u64) -> bool {
        let burst = self.burst;
        let Some(b) = self.buckets.get_mut(id) else { return false };
        b.refill(burst, now_ns);
        // Drop the carried fraction of a byte: it was earned at the old rate.
        b.stamp = now_ns as u32;
        b.rate = rate.0;
        true
    }

    /// Sets bucket `id` to hold `tokens` (at most the burst) at `now_ns`, e.g. to carry a
    /// key's tokens over into a new bank. Returns false for an unknown id.
    pub fn set_tokens(&mut self, id: usize, tokens: u16, now_ns: u64) -> bool {
        let burst = self.burst;
        let Some(b) = self.buckets.get_mut(id) else { return false };
        b.tokens = tokens.min(burst);
        b.stamp = now_ns as u32;
        true
    }

    /// Refills bucket `id` to a full burst (e.g. when its id is given to another key).
    pub fn reset(&mut self, id: usize) {
        let burst = self.burst;
        if let Some(b) = self.buckets.get_mut(id) {
            *b = TokenBucket::full(burst, Rate(b.rate));
        }
    }

    /// Starts loading bucket `id` into the cache, for an [`admit`](Self::admit) soon after.
    #[inline]
    pub fn prefetch(&self, id: usize) {
        if let Some(b) = self.buckets.get(id) {
            crate::prefetch(b);
        }
    }

    /// Whether a packet of `len_bytes` at `now_ns` is within bucket `id`'s rate; charges it if
    /// so. An unknown id, or a packet longer than the burst, is never within the rate.
    #[inline]
    pub fn admit(&mut self, id: usize, len_bytes: u32, now_ns: u64) -> bool {
        let burst = self.burst;
        self.buckets.get_mut(id).is_some_and(|b| b.admit(burst, len_bytes, now_ns))
    }

    /// Bytes of memory the bank holds: `8 · capacity` on the heap plus the bank itself.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.buckets.capacity() * std::mem::size_of::<TokenBucket>()
    }
}

#[cfg(test)]
mod tests;
