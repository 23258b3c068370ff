//! Keccak sponges over many independent messages at once: Keccak-p[1600] permutes up to
//! eight states side by side in SIMD registers (AVX-512: eight, AVX2: four at a time), the
//! fastest implementation the CPU has chosen at run time, the `keccak` crate's one state at a
//! time where there is none. pathval routers hash every packet of a batch this way (see
//! [`crate::batch`]); a lone permutation in software is what made a router slow.
//!
//! Three functions share the lanes ([`packed`]), each exactly as its standard defines it:
//!
//! - SHA3-256 (FIPS 202): 24 rounds, rate 136 bytes, padding `0x06 … 0x80`; HiddenSample.
//! - TurboSHAKE128 (RFC 9861): 12 rounds (Keccak-p[1600, 12]), rate 168 bytes, padding
//!   `D … 0x80` with a domain byte `D` of `0x01`-`0x7F`.
//! - KT128, KangarooTwelve (RFC 9861), with the empty customization string: TurboSHAKE128 of
//!   `M | 0x00` with `D = 0x07` for messages up to 8191 bytes, its tree mode above
//!   ([`kt128_tree`]); DataHash.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod kt128_tree;
mod packed;
mod permutation;
mod portable;

use packed::{hash_packed, hash_single_blocks, single_blocks, Sponge};
pub use permutation::Rounds;
use permutation::Step;

/// States permuted together.
pub const LANES: usize = 8;
/// SHA3-256's digest length.
pub const DIGEST_LEN: usize = 32;

/// Eight states word by word: `[j][i]` is word `j` of state `i`, so that word `j` of all
/// states is one vector, each on a cache line of its own (an unaligned 512-bit load would
/// touch two).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Interleaved([[u64; LANES]; 25]);

impl core::ops::Deref for Interleaved {
    type Target = [[u64; LANES]; 25];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl core::ops::DerefMut for Interleaved {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// The longest block a sponge absorbs (TurboSHAKE128's rate), in bytes.
const MAX_RATE: usize = 168;

/// What one state absorbs before a permutation: message bytes (up to the rate, zeros after
/// them) and, in a message's last block, the padding. Empty: the state absorbs nothing.
#[derive(Clone, Copy, Default)]
struct Block<'a> {
    bytes: &'a [u8],
    padding: Option<Padding>,
}

/// A sponge's padding in a last block: the domain byte (its domain bits and pad10*1's first
/// bit) and `0x80` (pad10*1's last bit; XORed onto the domain byte if they fall together).
#[derive(Clone, Copy)]
struct Padding {
    domain_at: usize,
    domain: u8,
    last_at: usize,
}

impl Block<'_> {
    /// Calls `xor(j, w)` with each word `w` the block XORs into word `j` of a state: a whole
    /// block straight from the message, a padded or partial one from a copy.
    #[inline(always)]
    fn xor_words(&self, mut xor: impl FnMut(usize, u64)) {
        let padded;
        let bytes = match self.padding {
            None if self.bytes.len().is_multiple_of(8) => self.bytes,
            _ => {
                padded = self.padded();
                &padded[..]
            }
        };
        for (j, chunk) in bytes.chunks_exact(8).enumerate() {
            xor(j, u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
    }

    /// The block as the bytes a state's rate words absorb.
    fn padded(&self) -> [u8; MAX_RATE] {
        let mut padded = [0u8; MAX_RATE];
        padded[..self.bytes.len()].copy_from_slice(self.bytes);
        if let Some(p) = self.padding {
            padded[p.domain_at] ^= p.domain;
            padded[p.last_at] ^= 0x80;
        }
        padded
    }
}

/// What the states absorb before a permutation.
#[derive(Default)]
struct Blocks<'a> {
    /// Per lane, its block.
    lanes: [Block<'a>; LANES],
    /// The lanes that start a message: their state (the previous message's) is cleared
    /// before the block is absorbed.
    fresh: u8,
}

impl Blocks<'_> {
    /// Absorbs the blocks into `states` word by word, for the implementations that permute
    /// from memory.
    fn absorb_words(&self, states: &mut Interleaved) {
        for (lane, block) in self.lanes.iter().enumerate() {
            if self.fresh >> lane & 1 == 1 {
                for words in states.iter_mut() {
                    words[lane] = 0;
                }
            }
            block.xor_words(|j, w| states[j][lane] ^= w);
        }
    }
}

/// A Keccak-f[1600] implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// One state after the other (the `keccak` crate).
    Portable,
    /// Four states per permutation.
    Avx2,
    /// Eight states per permutation (AVX-512F and BW).
    Avx512,
}

impl Implementation {
    /// The implementations this CPU can run, slowest first.
    pub fn available() -> Vec<Implementation> {
        let mut all = vec![Implementation::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                all.push(Implementation::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
                all.push(Implementation::Avx512);
            }
        }
        all
    }

    /// The fastest implementation this CPU can run (the detection is cached by `std`).
    pub fn fastest() -> Implementation {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
                return Implementation::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Implementation::Avx2;
            }
        }
        Implementation::Portable
    }

    /// Absorbs `blocks` into `states`, then permutes them as `step` says; the states whose bit
    /// in `live` is clear may be left unpermuted or permuted, whichever is cheaper.
    fn absorb_permute(self, states: &mut Interleaved, blocks: &Blocks<'_>, live: u8, step: Step) {
        match self {
            Implementation::Portable => portable::absorb_permute_live(states, blocks, live, step),
            // SAFETY: only `available()`/`fastest()` name the SIMD variants, after detecting
            // the feature; the `…_with` functions check a caller-chosen one again.
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx2 => {
                blocks.absorb_words(states);
                unsafe { avx2::permute_all(states, live, step) }
            }
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx512 => unsafe { avx512::absorb_permute_all(states, blocks, step) },
            #[cfg(not(target_arch = "x86_64"))]
            Implementation::Avx2 | Implementation::Avx512 => unreachable!("not detected off x86-64"),
        }
    }

    fn runs_here(self) -> bool {
        self == Implementation::Portable || Self::available().contains(&self)
    }

    /// The implementation for `count` messages: a vector permutation costs more than one
    /// state's alone (about 1.3 times on the AMD EPYC of docs/pathval.md), so a lone message
    /// is hashed alone.
    fn for_count(count: usize) -> Implementation {
        if count == 1 {
            Implementation::Portable
        } else {
            Implementation::fastest()
        }
    }

    fn check_runs_here(self) {
        assert!(self.runs_here(), "{self:?} needs a CPU feature this one lacks");
    }
}

/// `out[i] = SHA3-256(msgs[i])`, with the fastest implementation. The messages share the
/// states as [`packed`] says: longer messages first pack the lanes best.
///
/// # Panics
/// If `out` is shorter than `msgs`.
pub fn sha3_256_many(msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    sha3_256_detected(Implementation::for_count(msgs.len()), msgs, out);
}

/// [`sha3_256_many`] with the implementation `imp`.
///
/// # Panics
/// If this CPU cannot run `imp`, or `out` is shorter than `msgs`.
pub fn sha3_256_many_with(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    imp.check_runs_here();
    sha3_256_detected(imp, msgs, out);
}

/// [`sha3_256_many_with`] with an implementation this CPU runs. Messages of one block each
/// (HiddenSamples) skip the lane scheduler's bookkeeping.
fn sha3_256_detected(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    if single_blocks(&Sponge::SHA3_256, msgs) {
        hash_single_blocks(imp, Sponge::SHA3_256, msgs, out);
    } else {
        hash_packed(imp, |_| Sponge::SHA3_256, msgs, out);
    }
}

/// `out[i] = TurboSHAKE128(msgs[i], domain, N)` (RFC 9861, §2.2), `N` bytes of output, with
/// the implementation `imp`.
///
/// # Panics
/// If this CPU cannot run `imp`, `out` is shorter than `msgs`, `domain` is outside
/// `0x01..=0x7F`, or `N` is not a multiple of 8 up to 168.
pub fn turboshake128_many_with<const N: usize>(imp: Implementation, domain: u8, msgs: &[&[u8]], out: &mut [[u8; N]]) {
    imp.check_runs_here();
    let sponge = Sponge::turboshake128(domain);
    hash_packed(imp, |_| sponge, msgs, out);
}

/// `out[i] = KT128(msgs[i], "", N)`: KangarooTwelve (RFC 9861, §3.2) with the empty
/// customization string and `N` bytes of output, with the fastest implementation. Messages
/// up to [`KT128_SINGLE_NODE_MAX`] bytes share the lanes; longer ones run the tree mode one
/// state at a time.
///
/// # Panics
/// If `out` is shorter than `msgs`, or `N` is not a multiple of 8 up to 168.
pub fn kt128_many<const N: usize>(msgs: &[&[u8]], out: &mut [[u8; N]]) {
    kt128_many_with(Implementation::for_count(msgs.len()), msgs, out);
}

/// [`kt128_many`] with the implementation `imp` (for the messages that share lanes).
///
/// # Panics
/// As [`kt128_many`], and if this CPU cannot run `imp`.
pub fn kt128_many_with<const N: usize>(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; N]]) {
    imp.check_runs_here();
    hash_packed(imp, |_| Sponge::KT128_SINGLE_NODE, msgs, out);
    kt128_trees(msgs, out, |_| true);
}

/// KT128's tree mode, one state at a time, for the messages `i` too long for a single node
/// with `is_kt128(i)`.
fn kt128_trees<const N: usize>(msgs: &[&[u8]], out: &mut [[u8; N]], is_kt128: impl Fn(usize) -> bool) {
    for (i, (m, o)) in msgs.iter().zip(out.iter_mut()).enumerate() {
        if m.len() > KT128_SINGLE_NODE_MAX && is_kt128(i) {
            *o = kt128_tree::kt128(m);
        }
    }
}

/// A hash function whose messages can share the lanes of one call with the other's
/// ([`hash_mixed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// SHA3-256 (FIPS 202).
    Sha3_256,
    /// KT128 (RFC 9861) with the empty customization string.
    Kt128,
}

impl Function {
    fn sponge(self) -> Sponge {
        match self {
            Function::Sha3_256 => Sponge::SHA3_256,
            Function::Kt128 => Sponge::KT128_SINGLE_NODE,
        }
    }
}

/// `out[i]` = the first `N` bytes of `functions[i]` over `msgs[i]` (SHA3-256's digest, or
/// `KT128(msgs[i], "", N)`), all messages through the same lanes with the fastest
/// implementation: a batched router's HiddenSamples fill the lanes its payloads leave.
///
/// # Panics
/// If `functions` or `out` is shorter than `msgs`, or `N` is not a multiple of 8 up to
/// [`DIGEST_LEN`].
pub fn hash_mixed<const N: usize>(functions: &[Function], msgs: &[&[u8]], out: &mut [[u8; N]]) {
    // Detected here, so not checked again (which would list the implementations each call).
    hash_mixed_detected(Implementation::for_count(msgs.len()), functions, msgs, out);
}

/// [`hash_mixed`] with the implementation `imp` (for the messages that share lanes).
///
/// # Panics
/// As [`hash_mixed`], and if this CPU cannot run `imp`.
pub fn hash_mixed_with<const N: usize>(
    imp: Implementation,
    functions: &[Function],
    msgs: &[&[u8]],
    out: &mut [[u8; N]],
) {
    imp.check_runs_here();
    hash_mixed_detected(imp, functions, msgs, out);
}

/// [`hash_mixed_with`] with an implementation this CPU runs.
fn hash_mixed_detected<const N: usize>(
    imp: Implementation,
    functions: &[Function],
    msgs: &[&[u8]],
    out: &mut [[u8; N]],
) {
    assert!(functions.len() >= msgs.len(), "a function per message");
    assert!(N <= DIGEST_LEN, "at most SHA3-256's digest out");
    hash_packed(imp, |i| functions[i].sponge(), msgs, out);
    kt128_trees(msgs, out, |i| functions[i] == Function::Kt128);
}

/// The longest message KT128 hashes as a single node (RFC 9861, §3.2: `|S| <= 8192` bytes,
/// `S = M | 0x00` with the empty customization string).
pub const KT128_SINGLE_NODE_MAX: usize = kt128_tree::CHUNK - 1;

#[cfg(test)]
mod tests;
