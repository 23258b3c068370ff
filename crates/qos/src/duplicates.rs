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
//! # Layout: one cache line per key and generation
//!
//! Each generation is a *split-block* Bloom filter: an array of 64-byte blocks (one cache
//! line each), each block 16 words of 32 bits. A key's hash picks one block and, in each of
//! its 16 words, one bit: the key is present if all 16 bits are set, and inserting it sets
//! them. So a check and insert touches one cache line per generation, two per key, where a
//! classic Bloom filter touches up to `k` lines (≈ 20 for a rate of 10⁻⁶) per generation;
//! and the 16 word tests are two or four vector operations. [`DuplicateFilter::prefetch`]
//! asks for both lines, so a batch overlaps the misses of all its keys.
//!
//! The two generations' blocks of one index sit side by side, a [`Pair`] of 128 bytes, so a
//! key's two lines are found from one index with one bounds check, and the current generation
//! is picked by a `bool` that needs none (GLWP router at λ = 8, callgrind, 2026-11-26: 596 →
//! 581 instructions a packet in batches of 32, 774 → 760 one at a time). Clearing a generation
//! then writes every other line, once an epoch.
//!
//! # Bounds and memory
//!
//! * No false negatives: a key reported new is remembered as above, whatever the traffic.
//! * False positives: with `j` other keys in its block, a fresh key finds each of its 16
//!   bits set with probability `1 − (1 − 1/32)^j`, so it is a false positive with probability
//!   `f(j) = (1 − (1 − 1/32)^j)^16`. With `n = expected_per_window` keys in a generation of
//!   `b` blocks, `j` is binomial(`n`, `1/b`), and the generation's rate is
//!   `FP(n, b) = Σ_j C(n, j) b^−j (1 − 1/b)^(n−j) f(j)`. Each generation gets the fewest
//!   blocks with `FP(n, b) ≤ p_g = 1 − √(1 − p)`, so a fresh key checked against two full
//!   generations is a false positive with probability at most `p = false_positive_rate`.
//!   More than `n` keys per epoch raise the rate, never the memory.
//! * Memory is `2 · 64 · b` bytes plus a constant, fixed at construction (from 2 MiB on,
//!   mapped in whole huge pages: [`crate::HugeArray`]); checking and inserting never allocate. Rotation clears one generation (`64 · b` bytes) per epoch.
//!   Keys crowd unevenly into blocks, so a blocked filter needs more bits per key than a
//!   classic one (`−ln p_g / ln² 2`) for the same rate: at `p` = 10⁻², 10⁻³, 10⁻⁶ and 10⁻⁹
//!   about 13.8, 18.9, 42.4 and 93.7 bits per key and generation against 11.0, 15.8, 30.2
//!   and 44.6, i.e. 1.25, 1.2, 1.4 and 2.1 times the memory. (At 10⁶ keys per window and
//!   10⁻⁶: 5.1 MiB per generation instead of 3.6 MiB.) A classic filter's memory would buy
//!   little here: its cost is the cache misses, not the bits.
//!
//! # Hash
//!
//! A key's hash is AES-128-CMAC (RFC 4493) under a secret key given at construction: a
//! pseudorandom function, so an adversary who does not know the key cannot craft keys whose
//! bits collide, nor learn from which of its packets were dropped anything about another
//! key's bits. A key of up to 16 bytes (GLWP's `(Src, ts)`) costs one AES block (a few
//! nanoseconds with AES-NI, against ≈ 210 instructions for SipHash-1-3-128); longer keys are
//! compressed by CMAC's CBC chain, one more AES block per 16 bytes.
//! [`DuplicateFilter::hash_many`] hashes a batch of equal-length keys with their AES rounds
//! interleaved. Of the 128-bit hash, bits 0 to 79 give the 16 bit positions (5 bits each, so
//! independent and uniform) and bits 80 to 127 the block, by a multiply-shift of 48 bits onto
//! `[0, b)` instead of a division (a block's probability differs from `1/b` by less than
//! `b / 2⁴⁸ ≤ 2⁻¹⁹` of it).

mod prf;
mod sizing;
#[cfg(test)]
mod tests;

use crate::HugeArray;
use aviary_aes::cpu::{Cpu, Detect};
use prf::SecretHash;
use sizing::{WORDS, WORD_BITS};
use thiserror::Error;

/// Largest generation accepted, bits (2³⁸ bits = 32 GiB): beyond that a config is a mistake.
const MAX_BITS: u64 = 1 << 38;

/// Bits in a block (a 64-byte cache line).
const BLOCK_BITS: u64 = WORDS as u64 * WORD_BITS as u64;

#[derive(Debug, Error, Clone, Copy, PartialEq)]
pub enum DuplicateFilterConfigError {
    #[error("window_ns must be positive")]
    ZeroWindow,
    #[error("expected_per_window must be positive")]
    ZeroExpected,
    #[error("false_positive_rate must be in (0, 1), got {0}")]
    FalsePositiveRate(f64),
    #[error("expected_per_window and false_positive_rate need more than 2^38 bits per generation")]
    TooLarge,
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
    /// Blocks per generation.
    fn blocks(&self) -> Result<u64, DuplicateFilterConfigError> {
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
        sizing::blocks_for(self.expected_per_window as f64, p_gen, MAX_BITS / BLOCK_BITS)
            .ok_or(DuplicateFilterConfigError::TooLarge)
    }
}

/// A key's hash under a filter's secret (only meaningful to the filter that computed it; the
/// default is a placeholder for batch arrays, the hash of no particular key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyHash(u128);

/// One cache line of a generation: a key sets one bit in each word.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u32; WORDS]);

/// The block of one index in each generation, indexed by the generation (`usize::from` of a
/// `bool`, so in bounds without a check); aligned to the 128 bytes that CPUs' adjacent-line
/// prefetchers fetch together.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
struct Pair([Block; 2]);

const EMPTY: Block = Block([0; WORDS]);

/// Two rotating split-block Bloom filters of the keys accepted in the current and the
/// previous epoch.
#[derive(Clone)]
pub struct DuplicateFilter {
    secret: SecretHash,
    window_ns: u64,
    /// Both generations, block by block, on 2 MiB pages where the kernel gives them: a key's
    /// random pair in megabytes is otherwise a TLB miss besides a cache miss, and the prefetch
    /// hides the page walk less well (GLWP router at λ = 8 in batches of 32, `glwp_router_loop`,
    /// Zen 4 VM, 2026-11-26: 56.6 → 51.4 ns a packet, medians of six alternated runs).
    blocks: HugeArray<Pair>,
    /// The generation that takes inserts (`Pair` index `usize::from(current)`).
    current: bool,
    /// The epoch of the current generation.
    epoch: u64,
    /// Where that epoch ends, `(epoch + 1) · window_ns` (saturated); 0 while `blank`.
    epoch_end_ns: u64,
    /// Nothing has been inserted yet and no epoch taken: both generations are as built, empty.
    /// The first time seen then starts its epoch without clearing them, which a filter built
    /// at epoch 0 and first used at a real time (two epochs or more later) did: every block
    /// written again, 10.6 MiB at a router's default sizing, on its first packet: a stall of
    /// ≈ 0.2 ms, which the bench rows' 16 384 packets through a fresh router paid (GLWP router
    /// at λ = 8 in batches of 32, `glwp_router_loop`, Zen 4, 2026-11-26: 74.6 → 64.3 ns a
    /// packet, medians of eight alternated runs).
    blank: bool,
}

impl std::fmt::Debug for DuplicateFilter {
    // Without the secret key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DuplicateFilter")
            .field("window_ns", &self.window_ns)
            .field("bits", &self.bits_per_generation())
            .field("hashes", &self.hashes())
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl DuplicateFilter {
    /// An empty filter sized for `config`, hashing under the secret `key` (draw it from a
    /// CSPRNG per router; it never leaves the filter).
    pub fn new(config: DuplicateFilterConfig, key: [u8; 16]) -> Result<Self, DuplicateFilterConfigError> {
        let blocks = config.blocks()? as usize;
        Ok(Self {
            secret: SecretHash::new(key),
            window_ns: config.window_ns,
            blocks: HugeArray::new(blocks, Pair([EMPTY; 2])),
            current: false,
            epoch: 0,
            epoch_end_ns: 0,
            blank: true,
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
        self.hash_on(Detect, key)
    }

    /// [`Self::hash`] on the code `cpu` says the CPU runs ([`aviary_aes::cpu::Cpu`]).
    #[inline(always)]
    pub fn hash_on(&self, cpu: impl Cpu, key: &[u8]) -> KeyHash {
        KeyHash(self.secret.hash_on(cpu, key))
    }

    /// `hashes[i] = self.hash(&keys[i])` for a batch of keys of one length, the AES rounds of
    /// several keys interleaved (faster per key than one at a time). Always inlined, so that a
    /// caller compiled for more features (the GLWP router's AVX2 stages) builds it with them.
    #[inline(always)]
    pub fn hash_many<const L: usize>(&self, keys: &[[u8; L]], hashes: &mut [KeyHash]) {
        self.hash_many_on(Detect, keys, hashes)
    }

    /// [`Self::hash_many`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn hash_many_on<const L: usize>(&self, cpu: impl Cpu, keys: &[[u8; L]], hashes: &mut [KeyHash]) {
        if let ([key], [hash, ..]) = (keys, &mut *hashes) {
            *hash = self.hash_on(cpu, key);
        } else {
            self.secret.hash_many_on(cpu, keys, hashes);
        }
    }

    /// Asks the CPU to bring the two cache lines a check and insert of `h` touch (its block
    /// in each generation) into its cache. A batch prefetches all its keys before checking
    /// the first, so that the cache misses of a large filter overlap instead of following
    /// one another. Only a hint: it changes no state.
    #[inline]
    pub fn prefetch(&self, h: KeyHash) {
        let pair = self.pair_of(h);
        crate::prefetch(&pair.0[0]);
        crate::prefetch(&pair.0[1]);
    }

    /// [`Self::check_and_insert`] of the key whose hash is `h`. Always inlined: a router calls
    /// it once per packet, and the call's saved registers were a sixth of its cost.
    #[inline(always)]
    pub fn check_and_insert_hashed(&mut self, h: KeyHash, now_ns: u64) -> bool {
        self.rotate(now_ns);
        let bits = bits_of(h);
        let current = usize::from(self.current);
        let pair = self.pair_of_mut(h);
        if holds(&pair.0[current ^ 1], &bits) {
            return false;
        }
        let current = &mut pair.0[current];
        if holds(current, &bits) {
            return false;
        }
        for (word, bit) in current.0.iter_mut().zip(bits) {
            *word |= bit;
        }
        true
    }

    /// Whether `key` would be reported as a duplicate at `now_ns`, without inserting it.
    pub fn contains(&mut self, key: &[u8], now_ns: u64) -> bool {
        self.rotate(now_ns);
        let h = self.hash(key);
        let bits = bits_of(h);
        self.pair_of(h).0.iter().any(|b| holds(b, &bits))
    }

    /// Bits per generation (`m`: 512 per block).
    pub fn bits_per_generation(&self) -> u64 {
        self.blocks.len() as u64 * BLOCK_BITS
    }

    /// Bits a key sets (`k`: one per word of its block).
    pub fn hashes(&self) -> u32 {
        WORDS as u32
    }

    /// Bytes the filter holds: both generations and the filter itself, fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.blocks)
    }

    /// Moves to the epoch of `now_ns`; never backwards. Within the current epoch, one compare
    /// with its end instead of a division per key.
    #[inline]
    fn rotate(&mut self, now_ns: u64) {
        if now_ns < self.epoch_end_ns {
            return;
        }
        let epoch = now_ns / self.window_ns;
        if self.blank {
            // Both generations are empty: the current one is the epoch's as it is.
            self.blank = false;
        } else if epoch <= self.epoch {
            return;
        } else if epoch == self.epoch + 1 {
            self.current = !self.current;
            let current = usize::from(self.current);
            self.blocks.iter_mut().for_each(|p| p.0[current] = EMPTY);
        } else {
            self.blocks.fill(Pair([EMPTY; 2]));
        }
        self.epoch = epoch;
        self.epoch_end_ns = (epoch + 1).saturating_mul(self.window_ns);
    }

    /// The block of `h`: bits 80 to 127 mapped onto `[0, blocks)` by a multiply-shift.
    #[inline]
    fn block_of(&self, KeyHash(h): KeyHash) -> usize {
        let blocks = self.blocks.len() as u128;
        (((h >> 80) * blocks) >> 48) as usize
    }

    /// The blocks of `h` in both generations.
    #[inline(always)]
    fn pair_of(&self, h: KeyHash) -> &Pair {
        let block = self.block_of(h);
        debug_assert!(block < self.blocks.len());
        // SAFETY: `h >> 80 < 2⁴⁸`, so `block = ((h >> 80) · len) >> 48 < len`.
        unsafe { self.blocks.get_unchecked(block) }
    }

    /// [`Self::pair_of`], to insert into.
    #[inline(always)]
    fn pair_of_mut(&mut self, h: KeyHash) -> &mut Pair {
        let block = self.block_of(h);
        debug_assert!(block < self.blocks.len());
        // SAFETY: as in `pair_of`.
        unsafe { self.blocks.get_unchecked_mut(block) }
    }
}

/// The bit `h` sets in each word of its block: word `w = 4j + g` (lane `g` of the block's
/// `j`-th 16 bytes) takes bits `20g + 5j` to `20g + 5j + 4`, so that a group of 20 bits gives one
/// lane of each 16 bytes.
#[inline]
#[cfg(not(target_arch = "x86_64"))]
fn bits_of(h: KeyHash) -> [u32; WORDS] {
    bits_of_scalar(h)
}

/// The bit of word `w = 4j + g`: `1 << ((h >> (20g + 5j)) mod 32)`.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn bits_of_scalar(KeyHash(h): KeyHash) -> [u32; WORDS] {
    std::array::from_fn(|w| 1 << ((h >> (20 * (w % 4) + 5 * (w / 4))) as u32 % WORD_BITS))
}

/// [`bits_of_scalar`], four words at a time, without a shift by a variable count (which SSE
/// lacks, and which took ≈ 6 instructions per word as scalar code): the four groups of 20 bits
/// go to the four lanes once (`h`, `h >> 20`, `h >> 40`, `h >> 60`); for the `j`-th 16 bytes a
/// shift and a mask put each lane's position `n` (its bits `5j` to `5j + 4`) into a float's
/// exponent, and `1 << n` is that float `2ⁿ` (exponent `n + 127`) converted to an integer, exact
/// for n ≤ 30; for n = 31 the conversion overflows to `0x8000_0000`, which is `1 << 31`. (The
/// positions took a broadcast and a multiply per 16 bytes before: GLWP router at λ = 8,
/// callgrind, 2026-11-26: 581 → 578 instructions a packet in batches of 32, 760 → 745 one at a
/// time.) SSE2 only.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn bits_of(KeyHash(h): KeyHash) -> [u32; WORDS] {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_castsi128_ps, _mm_cvttps_epi32, _mm_set1_epi32, _mm_slli_epi32,
        _mm_srli_epi64, _mm_srli_si128, _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };
    /// Where a float's exponent starts.
    const EXPONENT: i32 = 23;
    const { assert!(WORDS == 16 && WORD_BITS == 32) };
    /// `2ⁿ` in each lane, `n` the lane's bits `5j` to `5j + 4` (`SHIFT = 23 − 5j` moves them to
    /// the exponent).
    #[inline(always)]
    fn powers<const SHIFT: i32>(groups: __m128i) -> [u32; 4] {
        // SAFETY: SSE2 is part of x86-64; `__m128i` and `[u32; 4]` are both 16 plain bytes.
        unsafe {
            let n = _mm_and_si128(_mm_slli_epi32::<SHIFT>(groups), _mm_set1_epi32(31 << EXPONENT));
            let pow = _mm_cvttps_epi32(_mm_castsi128_ps(_mm_add_epi32(n, _mm_set1_epi32(127 << EXPONENT))));
            std::mem::transmute::<__m128i, [u32; 4]>(pow)
        }
    }
    // SAFETY: SSE2 is part of x86-64; `u128` and `__m128i` are both 16 plain bytes (the low 64
    // bits of `h` in the low lanes, as x86-64 is little-endian).
    let groups = unsafe {
        let x = std::mem::transmute::<u128, __m128i>(h);
        // Lane 0 of each: h, h >> 20 (64-bit shifts of the low half), h >> 40, and h >> 60 (the
        // 128 bits moved down by 7 bytes, then 4 bits).
        let (g0, g1, g2) = (x, _mm_srli_epi64::<20>(x), _mm_srli_epi64::<40>(x));
        let g3 = _mm_srli_epi64::<4>(_mm_srli_si128::<7>(x));
        _mm_unpacklo_epi64(_mm_unpacklo_epi32(g0, g1), _mm_unpacklo_epi32(g2, g3))
    };
    let bits = [
        powers::<EXPONENT>(groups),
        powers::<{ EXPONENT - 5 }>(groups),
        powers::<{ EXPONENT - 10 }>(groups),
        powers::<{ EXPONENT - 15 }>(groups),
    ];
    // SAFETY: `[[u32; 4]; 4]` and `[u32; 16]` have the same size and layout.
    unsafe { std::mem::transmute::<[[u32; 4]; 4], [u32; WORDS]>(bits) }
}

/// Whether every bit of `bits` is set in `block` (branch-free, so it vectorises).
#[inline]
fn holds(block: &Block, bits: &[u32; WORDS]) -> bool {
    block.0.iter().zip(bits).fold(0, |missing, (word, bit)| missing | (bit & !word)) == 0
}
