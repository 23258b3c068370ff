//! Eight states at once in AVX-512: lane `i` of vector `j` is word `j` of state `i`. VPROLQ
//! rotates, VPTERNLOGQ does θ's three-way XOR and χ in one instruction each.

use core::arch::x86_64::{
    __m512i, _mm512_loadu_si512, _mm512_rolv_epi64, _mm512_set1_epi64, _mm512_storeu_si512, _mm512_ternarylogic_epi64,
    _mm512_xor_si512,
};

use super::permutation::{permute, Rounds, Words};
use super::{Interleaved, LANES};

#[derive(Clone, Copy)]
struct Zmm(__m512i);

// SAFETY (every method): only reached from `permute_all`, which runs with AVX-512F enabled
// and is only called after the CPU was found to have it.
impl Words for Zmm {
    #[inline(always)]
    fn splat(w: u64) -> Self {
        Zmm(unsafe { _mm512_set1_epi64(w as i64) })
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        Zmm(unsafe { _mm512_xor_si512(self.0, other.0) })
    }
    #[inline(always)]
    fn xor3(self, b: Self, c: Self) -> Self {
        // Truth table of a ^ b ^ c.
        Zmm(unsafe { _mm512_ternarylogic_epi64::<0x96>(self.0, b.0, c.0) })
    }
    #[inline(always)]
    fn xor_andnot(self, b: Self, c: Self) -> Self {
        // Truth table of a ^ (!b & c).
        Zmm(unsafe { _mm512_ternarylogic_epi64::<0xd2>(self.0, b.0, c.0) })
    }
    #[inline(always)]
    fn rotate_left(self, n: u32) -> Self {
        // A constant count after inlining: compiled to VPROLQ with an immediate.
        Zmm(unsafe { _mm512_rolv_epi64(self.0, _mm512_set1_epi64(i64::from(n))) })
    }
}

/// Permutes (`rounds` rounds) all eight states of `states`.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn permute_all(states: &mut Interleaved, rounds: Rounds) {
    const { assert!(LANES == 8) };
    let mut a = [Zmm(_mm512_set1_epi64(0)); 25];
    for (v, words) in a.iter_mut().zip(states.iter()) {
        // SAFETY: `words` is 8 u64, one 512-bit vector; the load is unaligned.
        *v = Zmm(unsafe { _mm512_loadu_si512(words.as_ptr().cast()) });
    }
    permute(&mut a, rounds);
    for (v, words) in a.iter().zip(states.iter_mut()) {
        // SAFETY: as above, for the store.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v.0) };
    }
}
