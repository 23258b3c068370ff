//! Eight states at once in AVX-512: lane `i` of vector `j` is word `j` of state `i`. VPROLQ
//! rotates, VPTERNLOGQ does θ's three-way XOR and χ in one instruction each. The blocks are
//! absorbed in the vector registers too (AVX-512BW for byte masks): eight words of each of the
//! eight blocks are loaded from the messages and transposed into eight vectors, rather than
//! stored word by word into the lines the permutation has just written (which stalls its
//! next loads).

use core::arch::x86_64::{
    __m512i, _mm512_loadu_si512, _mm512_mask_blend_epi64, _mm512_mask_set1_epi8, _mm512_mask_xor_epi64,
    _mm512_maskz_loadu_epi8, _mm512_maskz_mov_epi64, _mm512_rolv_epi64, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_shuffle_i64x2, _mm512_storeu_si512, _mm512_ternarylogic_epi64, _mm512_unpackhi_epi64, _mm512_unpacklo_epi64,
    _mm512_xor_si512,
};

use super::permutation::{permute_step, Step, Words};
use super::{Blocks, Interleaved, LANES, MAX_RATE};

#[derive(Clone, Copy)]
struct Zmm(__m512i);

// SAFETY (every method): only reached from `absorb_permute_all`, which runs with AVX-512F
// (and BW) enabled and is only called after the CPU was found to have it.
impl Words for Zmm {
    const XOR3_IN_ONE: bool = true;
    #[inline(always)]
    fn splat(w: u64) -> Self {
        Zmm(unsafe { _mm512_set1_epi64(w as i64) })
    }
    #[inline(always)]
    fn select(mask: u8, set: u64, clear: u64) -> Self {
        Zmm(unsafe { _mm512_mask_blend_epi64(mask, _mm512_set1_epi64(clear as i64), _mm512_set1_epi64(set as i64)) })
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

/// Absorbs `blocks` into all eight states of `states`, then permutes them as `step` says.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn absorb_permute_all(states: &mut Interleaved, blocks: &Blocks<'_>, step: Step) {
    const { assert!(LANES == 8 && MAX_RATE == 2 * CHUNK + 40) };
    // The states, a fresh lane's cleared (its message starts here) in the registers.
    let kept = !blocks.fresh;
    let mut a: [Zmm; 25] = core::array::from_fn(|j| {
        // SAFETY: `states[j]` is 8 u64 on one cache line.
        Zmm(unsafe { _mm512_loadu_si512(states[j].as_ptr().cast()) })
    });
    if blocks.fresh != 0 {
        for v in &mut a {
            v.0 = _mm512_maskz_mov_epi64(kept, v.0);
        }
    }
    // How far the message and domain bytes reach (a block's last byte, pad10*1's closing
    // bit, is left out: a HiddenSample's 34 bytes would otherwise pull in all three chunks,
    // two of them zeros): SHA3-256's 136 bytes need one word of the third chunk,
    // TurboSHAKE's 168 five.
    let reach = blocks
        .lanes
        .iter()
        .map(|b| b.padding.map_or(b.bytes.len(), |p| p.domain_at + 1).max(b.bytes.len()))
        .max()
        .unwrap_or(0);
    // The bytes the transposed chunks cover: a padding byte beyond them is XORed on its own.
    let mut covered = 0;
    if reach > 0 {
        xor_chunk::<0, 8>(&mut a, blocks);
        covered = CHUNK;
    }
    if reach > CHUNK {
        xor_chunk::<1, 8>(&mut a, blocks);
        covered = 2 * CHUNK;
    }
    if reach > 2 * CHUNK + 8 {
        xor_chunk::<2, 5>(&mut a, blocks);
        covered = MAX_RATE;
    } else if reach > 2 * CHUNK {
        xor_chunk::<2, 1>(&mut a, blocks);
        covered = 2 * CHUNK + 8;
    }
    xor_last_bytes(&mut a, blocks, covered);
    permute_step(&mut a, step, 0);
    for (v, words) in a.iter().zip(states.iter_mut()) {
        // SAFETY: as above, for the store.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v.0) };
    }
}

/// The bytes of eight words.
const CHUNK: usize = 64;

/// XORs pad10*1's closing `0x80` of every block whose last byte lies at or beyond byte
/// `covered` (where [`xor_chunk`] did not reach) into its state word. The closing byte is the
/// last of the rate: of word 16 in SHA3-256 (136 bytes), of word 20 in TurboSHAKE128 (168).
/// The two words are named, not indexed by a run-time value, which would keep the state in
/// memory instead of registers (and its masked stores would not forward to the loads after).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn xor_last_bytes(a: &mut [Zmm; 25], blocks: &Blocks<'_>, covered: usize) {
    const SHA3_256: usize = 136 - 1;
    const TURBOSHAKE128: usize = MAX_RATE - 1;
    let (mut sha3_256, mut turboshake128) = (0u8, 0u8);
    for (lane, block) in blocks.lanes.iter().enumerate() {
        match block.padding.map(|p| p.last_at).filter(|&at| at >= covered) {
            None => {}
            Some(SHA3_256) => sha3_256 |= 1 << lane,
            Some(TURBOSHAKE128) => turboshake128 |= 1 << lane,
            Some(at) => unreachable!("a rate of {} bytes", at + 1),
        }
    }
    let last = _mm512_set1_epi64((0x80u64 << 56) as i64);
    if sha3_256 != 0 {
        a[SHA3_256 / 8].0 = _mm512_mask_xor_epi64(a[SHA3_256 / 8].0, sha3_256, a[SHA3_256 / 8].0, last);
    }
    if turboshake128 != 0 {
        a[TURBOSHAKE128 / 8].0 =
            _mm512_mask_xor_epi64(a[TURBOSHAKE128 / 8].0, turboshake128, a[TURBOSHAKE128 / 8].0, last);
    }
}

/// XORs words `8 C` to `8 C + WORDS - 1` of the eight blocks into `a`. Each lane's 64 bytes
/// are loaded with a byte mask (a block's message bytes may end anywhere; the bytes after
/// them are zero) and its padding bytes set in them, all in registers (a padded copy in
/// memory, written byte by byte and read as a vector at once, would wait for its stores);
/// then the 8×8 transpose in three rounds of shuffles (pairs of words, then pairs of 128-bit
/// quarters twice), of which the compiler keeps what the `WORDS` words need.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn xor_chunk<const C: usize, const WORDS: usize>(a: &mut [Zmm; 25], blocks: &Blocks<'_>) {
    let from = C * CHUNK;
    let bit_at = |at: usize| if (from..from + CHUNK).contains(&at) { 1u64 << (at - from) } else { 0 };
    let rows: [__m512i; LANES] = core::array::from_fn(|lane| {
        let block = blocks.lanes[lane];
        assert!(block.bytes.len() <= MAX_RATE, "at most one block");
        let len = block.bytes.len().saturating_sub(from).min(CHUNK);
        // No load at all without bytes: the address may be unmapped (an empty slice's), and a
        // masked load that would fault there takes a slow path to suppress the fault.
        let mut row = if len == 0 {
            _mm512_setzero_si512()
        } else {
            // SAFETY: the masked load reads the `len` bytes from `from` on, within the block,
            // and nothing of the bytes masked out (which do not fault).
            unsafe {
                _mm512_maskz_loadu_epi8(u64::MAX >> (CHUNK - len), block.bytes.as_ptr().wrapping_add(from).cast())
            }
        };
        if let Some(p) = block.padding {
            // Both bytes lie after the message, where the row is zero: setting is XORing.
            let last = if p.last_at == p.domain_at { 0x80 | p.domain } else { 0x80 };
            row = _mm512_mask_set1_epi8(row, bit_at(p.domain_at), p.domain as i8);
            row = _mm512_mask_set1_epi8(row, bit_at(p.last_at), last as i8);
        }
        row
    });
    let pairs: [__m512i; LANES] = core::array::from_fn(|k| {
        let (r0, r1) = (rows[k & !1], rows[k | 1]);
        if k & 1 == 0 {
            _mm512_unpacklo_epi64(r0, r1)
        } else {
            _mm512_unpackhi_epi64(r0, r1)
        }
    });
    // pairs[2p] holds words 0, 2, 4, 6 of lanes 2p, 2p + 1; pairs[2p + 1] words 1, 3, 5, 7.
    const EVEN_QUARTERS: i32 = 0b10_00_10_00;
    const ODD_QUARTERS: i32 = 0b11_01_11_01;
    let quads: [__m512i; LANES] = core::array::from_fn(|k| {
        // quads[k] for k = 4h + 2o + q: lanes 4h..4h + 3, from pairs of parity o, quarters q.
        let (h, o, q) = (k >> 2, k >> 1 & 1, k & 1);
        let (x, y) = (pairs[4 * h + o], pairs[4 * h + 2 + o]);
        if q == 0 {
            _mm512_shuffle_i64x2::<EVEN_QUARTERS>(x, y)
        } else {
            _mm512_shuffle_i64x2::<ODD_QUARTERS>(x, y)
        }
    });
    for j in 0..WORDS {
        // Word j = 4q' + 2q + o: quads[2o + q] of both halves, quarters q'.
        let (o, q, q2) = (j & 1, j >> 1 & 1, j >> 2);
        let (x, y) = (quads[2 * o + q], quads[4 + 2 * o + q]);
        let w = if q2 == 0 {
            _mm512_shuffle_i64x2::<EVEN_QUARTERS>(x, y)
        } else {
            _mm512_shuffle_i64x2::<ODD_QUARTERS>(x, y)
        };
        a[8 * C + j] = Zmm(_mm512_xor_si512(a[8 * C + j].0, w));
    }
}
