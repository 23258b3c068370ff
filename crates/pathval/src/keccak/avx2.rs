//! Four states at once in AVX2 (lane `i` of vector `j` is word `j` of state `i`); the eight
//! interleaved states are permuted as two halves, a half without a live state skipped.

use core::arch::x86_64::{
    __m256i, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_or_si256, _mm256_set1_epi64x, _mm256_setr_epi64x,
    _mm256_sll_epi64, _mm256_srl_epi64, _mm256_storeu_si256, _mm256_xor_si256, _mm_cvtsi64_si128,
};

use super::permutation::{permute_step, Step, Words};
use super::{Interleaved, LANES};

const HALF: usize = 4;

#[derive(Clone, Copy)]
struct Ymm(__m256i);

// SAFETY (every method): only reached from `permute_all`, which runs with AVX2 enabled and is
// only called after the CPU was found to have it.
impl Words for Ymm {
    #[inline(always)]
    fn splat(w: u64) -> Self {
        Ymm(unsafe { _mm256_set1_epi64x(w as i64) })
    }
    #[inline(always)]
    fn select(mask: u8, set: u64, clear: u64) -> Self {
        let lane = |i: u8| (if mask >> i & 1 == 1 { set } else { clear }) as i64;
        Ymm(unsafe { _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3)) })
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        Ymm(unsafe { _mm256_xor_si256(self.0, other.0) })
    }
    #[inline(always)]
    fn xor3(self, b: Self, c: Self) -> Self {
        self.xor(b).xor(c)
    }
    #[inline(always)]
    fn xor_andnot(self, b: Self, c: Self) -> Self {
        Ymm(unsafe { _mm256_xor_si256(self.0, _mm256_andnot_si256(b.0, c.0)) })
    }
    #[inline(always)]
    fn rotate_left(self, n: u32) -> Self {
        if n == 0 {
            return self;
        }
        // Constant counts after inlining: compiled to shifts by immediates.
        unsafe {
            let left = _mm256_sll_epi64(self.0, _mm_cvtsi64_si128(i64::from(n)));
            let right = _mm256_srl_epi64(self.0, _mm_cvtsi64_si128(64 - i64::from(n)));
            Ymm(_mm256_or_si256(left, right))
        }
    }
}

/// Permutes the states of `states` as `step` says, in halves of four, skipping a half none of
/// whose lanes is set in `live` (bit `i`: state `i`).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn permute_all(states: &mut Interleaved, live: u8, step: Step) {
    for half in 0..LANES / HALF {
        if live >> (half * HALF) & 0xf == 0 {
            continue;
        }
        let at = half * HALF;
        let mut a = [Ymm(_mm256_set1_epi64x(0)); 25];
        for (v, words) in a.iter_mut().zip(states.iter()) {
            // SAFETY: `words[at..at + 4]` is 4 u64, one 256-bit vector; the load is unaligned.
            *v = Ymm(unsafe { _mm256_loadu_si256(words[at..at + HALF].as_ptr().cast()) });
        }
        permute_step(&mut a, step, at);
        for (v, words) in a.iter().zip(states.iter_mut()) {
            // SAFETY: as above, for the store.
            unsafe { _mm256_storeu_si256(words[at..at + HALF].as_mut_ptr().cast(), v.0) };
        }
    }
}
