//! Duplicate suppression for replayed packets: two rotating Bloom filters.
//!
//! Source authentication (EPIC, GLWP's hop authenticators) proves who sent a packet, not
//! that it was sent only once: an on-path adversary can replay a captured packet to burn
//! its source's allowance or frame it for overuse. GLWP (§V) therefore passes
//! `(Src, ts_pkt)` of every validated packet to an in-network duplicate-suppression system
//! built from Bloom filters, and EPIC does the same with its packet timestamp. Because the
//! router first drops packets whose timestamp is outside a freshness window, the filter only
//! has to remember keys for that long, which is what bounds its memory.
//!
//! # Design
//!
//! Time is cut into epochs of `window_ns` (`epoch = now_ns / window_ns`). Each of two
//! generations is a Bloom filter for the keys accepted in one epoch: the current one takes
//! inserts, the previous one is only read, and a key is a duplicate if either holds it.
//! When an epoch ends the previous generation is cleared and becomes the current one; after
//! an idle period of two epochs or more both are cleared. Hence a key accepted at `t` is
//! remembered as long as the latest time the filter has seen is before `t + window_ns` (it
//! stays until its epoch is two behind), and forgotten once that time reaches
//! `t + 2·window_ns`.
//!
//! Callers set `window_ns` to at least the spread of times at which a packet passes the
//! freshness check (GLWP: `L + 2ε`): a replay that passes it then arrives within
//! `window_ns` of the original and is caught. Nothing here reads a clock; time going
//! backwards (another core's clock, a step) never rotates, so it forgets nothing; only the
//! latest time seen moves the generations on.
//!
//! # Bounds and memory
//!
//! * No false negatives: a key reported new is remembered as above, whatever the traffic.
//! * False positives: each generation is sized by the standard formulas for
//!   `n = expected_per_window` keys at `p_g = 1 − √(1 − p)`: `m = −n ln p_g / (ln 2)²`
//!   bits (rounded up to whole words) and `k = (m / n) ln 2` hashes, so a fresh key
//!   checked against two full generations is a false positive with probability at most
//!   `p = false_positive_rate`. More than `n` keys per epoch raise the rate, never the
//!   memory.
//! * Memory is `2 · m / 8` bytes plus a constant, fixed at construction; checking and
//!   inserting never allocate. Rotation clears one generation (`m / 8` bytes) per epoch.
//!
//! Bits come from SipHash-1-3-128 under a secret key given at construction, so an adversary
//! who does not know it cannot craft keys that collide. The two 64-bit halves drive double
//! hashing (`h1 + i·h2`, Kirsch and Mitzenmacher), each mapped to `[0, m)` by a
//! multiply-shift instead of a division.

mod siphash;
#[cfg(test)]
mod tests;

use siphash::SipKey;
use thiserror::Error;

/// Largest generation accepted, bits (2³⁸ bits = 32 GiB): beyond that a config is a mistake.
const MAX_BITS: f64 = (1u64 << 38) as f64;

#[derive(Debug, Error, Clone, Copy, PartialEq)]
pub enum DuplicateFilterConfigError {
    #[error("window_ns must be positive")]
    ZeroWindow,
    #[error("expected_per_window must be positive")]
    ZeroExpected,
    #[error("false_positive_rate must be in (0, 1), got {0}")]
    FalsePositiveRate(f64),
    #[error("expected_per_window and false_positive_rate need {bits} bits per generation, more than 2^38")]
    TooLarge { bits: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DuplicateFilterConfig {
    /// How long every accepted key must be remembered, ns: at least the freshness window.
    pub window_ns: u64,
    /// Keys accepted per window at which the false-positive rate is met.
    pub expected_per_window: u64,
    /// Probability that a fresh key is reported as a duplicate at the expected load.
    pub false_positive_rate: f64,
}

impl DuplicateFilterConfig {
    /// Bits per generation and number of hashes.
    fn sizing(&self) -> Result<(u64, u32), DuplicateFilterConfigError> {
        if self.window_ns == 0 {
            return Err(DuplicateFilterConfigError::ZeroWindow);
        }
        if self.expected_per_window == 0 {
            return Err(DuplicateFilterConfigError::ZeroExpected);
        }
        let p = self.false_positive_rate;
        if !(p > 0.0 && p < 1.0) {
            return Err(DuplicateFilterConfigError::FalsePositiveRate(p));
        }
        // A fresh key is checked against two generations: 1 − (1 − p_g)² = p.
        let p_gen = 1.0 - (1.0 - p).sqrt();
        let n = self.expected_per_window as f64;
        let ln2 = std::f64::consts::LN_2;
        let bits = (-n * p_gen.ln() / (ln2 * ln2)).ceil();
        if bits > MAX_BITS {
            return Err(DuplicateFilterConfigError::TooLarge { bits });
        }
        let m = (bits as u64).div_ceil(64).max(1) * 64;
        let k = ((m as f64 / n) * ln2).round().max(1.0) as u32;
        Ok((m, k))
    }
}

/// A key's hash under a filter's secret (only meaningful to the filter that computed it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash((u64, u64));

/// Two rotating Bloom filters of the keys accepted in the current and the previous epoch.
#[derive(Clone)]
pub struct DuplicateFilter {
    sip: SipKey,
    window_ns: u64,
    /// Bits per generation, a multiple of 64.
    bits: u64,
    hashes: u32,
    generations: [Box<[u64]>; 2],
    /// Index of the generation that takes inserts.
    current: usize,
    /// The epoch of `generations[current]`.
    epoch: u64,
}

impl std::fmt::Debug for DuplicateFilter {
    // Without the secret key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DuplicateFilter")
            .field("window_ns", &self.window_ns)
            .field("bits", &self.bits)
            .field("hashes", &self.hashes)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl DuplicateFilter {
    /// An empty filter sized for `config`, hashing under the secret `key` (draw it from a
    /// CSPRNG per router; it never leaves the filter).
    pub fn new(config: DuplicateFilterConfig, key: [u8; 16]) -> Result<Self, DuplicateFilterConfigError> {
        let (bits, hashes) = config.sizing()?;
        let words = (bits / 64) as usize;
        let generation = || vec![0u64; words].into_boxed_slice();
        Ok(Self {
            sip: SipKey::new(key),
            window_ns: config.window_ns,
            bits,
            hashes,
            generations: [generation(), generation()],
            current: 0,
            epoch: 0,
        })
    }

    /// Whether `key` is seen for the first time within the window; if so it is remembered.
    /// `false` means a duplicate (or, with the configured probability, a false positive).
    pub fn check_and_insert(&mut self, key: &[u8], now_ns: u64) -> bool {
        self.check_and_insert_hashed(self.hash(key), now_ns)
    }

    /// The hash of `key` under this filter's secret, for [`Self::prefetch`] and
    /// [`Self::check_and_insert_hashed`].
    #[inline]
    pub fn hash(&self, key: &[u8]) -> KeyHash {
        KeyHash(self.sip.hash128(key))
    }

    /// Asks the CPU to bring the words a check and insert of `h` touch into its cache: every
    /// bit of the current generation (an insert sets them all) and the first of the previous
    /// one (a fresh key's check usually stops there). A batch prefetches all its keys before
    /// checking the first, so that the cache misses of a large filter overlap instead of
    /// following one another. Only a hint: it changes no state, and does nothing off x86-64.
    #[inline]
    pub fn prefetch(&self, h: KeyHash) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let word =
                |generation: usize, bit: u64| self.generations[generation].as_ptr().wrapping_add((bit / 64) as usize);
            for bit in self.positions(h.0) {
                // SAFETY: a prefetch never faults; the address is inside the generation.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(word(self.current, bit).cast()) };
            }
            if let Some(bit) = self.positions(h.0).next() {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(word(1 - self.current, bit).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = h;
    }

    /// [`Self::check_and_insert`] of the key whose hash is `h`.
    pub fn check_and_insert_hashed(&mut self, h: KeyHash, now_ns: u64) -> bool {
        self.rotate(now_ns);
        let h = h.0;
        if self.holds(self.current, h) || self.holds(1 - self.current, h) {
            return false;
        }
        for bit in self.positions(h) {
            self.generations[self.current][(bit / 64) as usize] |= 1 << (bit % 64);
        }
        true
    }

    /// Whether `key` would be reported as a duplicate at `now_ns`, without inserting it.
    pub fn contains(&mut self, key: &[u8], now_ns: u64) -> bool {
        self.rotate(now_ns);
        let h = self.sip.hash128(key);
        self.holds(self.current, h) || self.holds(1 - self.current, h)
    }

    /// Bits per generation (`m`).
    pub fn bits_per_generation(&self) -> u64 {
        self.bits
    }

    /// Hashes per key (`k`).
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bytes the filter holds: both generations and the filter itself, fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.generations.iter().map(|g| std::mem::size_of_val(&**g)).sum::<usize>()
    }

    /// Moves to the epoch of `now_ns`; never backwards.
    fn rotate(&mut self, now_ns: u64) {
        let epoch = now_ns / self.window_ns;
        if epoch <= self.epoch {
            return;
        }
        if epoch == self.epoch + 1 {
            self.current = 1 - self.current;
            self.generations[self.current].fill(0);
        } else {
            self.generations.iter_mut().for_each(|g| g.fill(0));
        }
        self.epoch = epoch;
    }

    fn holds(&self, generation: usize, h: (u64, u64)) -> bool {
        let g = &self.generations[generation];
        self.positions(h).all(|bit| g[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    /// The `k` bit positions of a key with hash `h`.
    fn positions(&self, (h1, h2): (u64, u64)) -> impl Iterator<Item = u64> {
        let m = u128::from(self.bits);
        (0..u64::from(self.hashes)).map(move |i| {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            ((u128::from(x) * m) >> 64) as u64
        })
    }
}
