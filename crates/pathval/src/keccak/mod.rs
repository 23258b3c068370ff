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

use packed::{hash_packed, Sponge};
pub use permutation::Rounds;

/// States permuted together.
pub const LANES: usize = 8;
/// SHA3-256's digest length.
pub const DIGEST_LEN: usize = 32;

/// Eight states word by word: `[j][i]` is word `j` of state `i`, so that word `j` of all
/// states is one vector.
type Interleaved = [[u64; LANES]; 25];

/// A Keccak-f[1600] implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// One state after the other (the `keccak` crate).
    Portable,
    /// Four states per permutation.
    Avx2,
    /// Eight states per permutation.
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
            if std::is_x86_feature_detected!("avx512f") {
                all.push(Implementation::Avx512);
            }
        }
        all
    }

    /// The fastest implementation this CPU can run (the detection is cached by `std`).
    pub fn fastest() -> Implementation {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Implementation::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Implementation::Avx2;
            }
        }
        Implementation::Portable
    }

    /// Permutes the states of `states` (`rounds` rounds); those whose bit in `live` is clear
    /// may be left unpermuted or permuted, whichever is cheaper.
    fn permute(self, states: &mut Interleaved, live: u8, rounds: Rounds) {
        match self {
            Implementation::Portable => portable::permute_live(states, live, rounds),
            // SAFETY: only `available()`/`fastest()` name the SIMD variants, after detecting
            // the feature; the `…_with` functions check a caller-chosen one again.
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx2 => unsafe { avx2::permute_all(states, live, rounds) },
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx512 => unsafe { avx512::permute_all(states, rounds) },
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
    hash_packed(Implementation::for_count(msgs.len()), Sponge::SHA3_256, msgs, out);
}

/// [`sha3_256_many`] with the implementation `imp`.
///
/// # Panics
/// If this CPU cannot run `imp`, or `out` is shorter than `msgs`.
pub fn sha3_256_many_with(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    imp.check_runs_here();
    hash_packed(imp, Sponge::SHA3_256, msgs, out);
}

/// `out[i] = TurboSHAKE128(msgs[i], domain, N)` (RFC 9861, §2.2), `N` bytes of output, with
/// the implementation `imp`.
///
/// # Panics
/// If this CPU cannot run `imp`, `out` is shorter than `msgs`, `domain` is outside
/// `0x01..=0x7F`, or `N` is not a multiple of 8 up to 168.
pub fn turboshake128_many_with<const N: usize>(imp: Implementation, domain: u8, msgs: &[&[u8]], out: &mut [[u8; N]]) {
    imp.check_runs_here();
    hash_packed(imp, Sponge::turboshake128(domain), msgs, out);
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
    hash_packed(imp, Sponge::KT128_SINGLE_NODE, msgs, out);
    for (m, o) in msgs.iter().zip(out.iter_mut()) {
        if m.len() > KT128_SINGLE_NODE_MAX {
            *o = kt128_tree::kt128(m);
        }
    }
}

/// The longest message KT128 hashes as a single node (RFC 9861, §3.2: `|S| <= 8192` bytes,
/// `S = M | 0x00` with the empty customization string).
pub const KT128_SINGLE_NODE_MAX: usize = kt128_tree::CHUNK - 1;

#[cfg(test)]
mod tests;
