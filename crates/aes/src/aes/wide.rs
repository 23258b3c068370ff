//! AES-128 on 512-bit vectors: VAES with AVX-512, four blocks in one instruction, chosen at run
//! time where the CPU has it (AMD Zen 4 and later, Intel Ice Lake and later).
//!
//! The batched stages of the routers put many blocks through AES at once: the A_Ks of a
//! batch's flyovers and its hop-field MACs under one key each, and the FlyoverMACs under a
//! fresh key per packet. With AES-NI a block is one 128-bit register; here a `zmm` register
//! holds four, and the AES instructions work on each 128-bit lane alone. The key schedule of
//! [`super::Aes128::new`] (byte shuffle, `AESENCLAST`, byte shifts within a lane) is
//! lane-wise too, so four fresh keys expand in one register with the instructions one key
//! takes, with no transposition.
//!
//! The functions here do whole groups of four and a last partial group under a lane mask,
//! and are only called once [`crate::cpu::level`] has said [`crate::cpu::Level::Vaes`]: a
//! `#[target_feature]` function is not inlined into a caller without those features, so they
//! are meant for batches, where one call carries many blocks.

use std::arch::x86_64::*;

/// The lane mask (in 64-bit elements) of the first `blocks` blocks of a group, `blocks ≤ 4`.
#[inline(always)]
fn lanes(blocks: usize) -> __mmask8 {
    debug_assert!(blocks <= 4);
    ((1u32 << (2 * blocks)) - 1) as __mmask8
}

/// Up to four blocks from `src` into one register (zero past `n`).
///
/// # Safety
/// The CPU has AVX-512F, `src` points to `n ≤ 4` readable blocks.
#[inline(always)]
pub(crate) unsafe fn load(src: *const [u8; 16], n: usize) -> __m512i {
    // SAFETY: masked-off lanes are neither read nor able to fault; the caller vouches for the rest.
    unsafe { _mm512_maskz_loadu_epi64(lanes(n), src.cast()) }
}

/// The first `n ≤ 4` blocks of `x` into `dst`.
///
/// # Safety
/// The CPU has AVX-512F, `dst` points to `n` writable blocks.
#[inline(always)]
pub(crate) unsafe fn store(dst: *mut [u8; 16], n: usize, x: __m512i) {
    // SAFETY: masked-off lanes are not written; the caller vouches for the rest.
    unsafe { _mm512_mask_storeu_epi64(dst.cast(), lanes(n), x) }
}

/// `blocks[i] = AES_rk(blocks[i])` for every block, eight at a time in two registers (two
/// independent chains keep both AES pipes busy), then the rest.
///
/// # Safety
/// The CPU has VAES and AVX-512F ([`crate::cpu::Level::Vaes`]).
#[target_feature(enable = "avx512f,vaes")]
pub(super) unsafe fn encrypt_many(rk: &[__m128i; 11], blocks: &mut [[u8; 16]]) {
    let k: [__m512i; 11] = std::array::from_fn(|r| _mm512_broadcast_i32x4(rk[r]));
    let rounds = |mut x: __m512i| {
        x = _mm512_xor_si512(x, k[0]);
        for rk in &k[1..10] {
            x = _mm512_aesenc_epi128(x, *rk);
        }
        _mm512_aesenclast_epi128(x, k[10])
    };
    let mut pairs = blocks.chunks_exact_mut(8);
    for c in &mut pairs {
        let p = c.as_mut_ptr();
        // SAFETY: `c` holds eight blocks: four at `p`, four at `p + 4`.
        unsafe {
            let (mut a, mut b) = (_mm512_xor_si512(load(p, 4), k[0]), _mm512_xor_si512(load(p.add(4), 4), k[0]));
            for rk in &k[1..10] {
                a = _mm512_aesenc_epi128(a, *rk);
                b = _mm512_aesenc_epi128(b, *rk);
            }
            store(p, 4, _mm512_aesenclast_epi128(a, k[10]));
            store(p.add(4), 4, _mm512_aesenclast_epi128(b, k[10]));
        }
    }
    for c in pairs.into_remainder().chunks_mut(4) {
        // SAFETY: `c` holds `c.len() ≤ 4` blocks.
        unsafe { store(c.as_mut_ptr(), c.len(), rounds(load(c.as_ptr(), c.len()))) };
    }
}

/// `blocks[i] = AES_{keys[i]}(blocks[i])`, each key expanded as its rounds go (as
/// [`super::Aes128::new`] expands one key, four keys to a register), sixteen at a time in four
/// registers, then eight in two, then the rest; no schedule is kept. Each round key waits for
/// the one before it, so the more registers in flight, the more of that latency is hidden:
/// on a Zen 4, whose AVX-512 units are half width, sixteen at a time took a batch of 32
/// 3.3–3.6 ns a key where eight took 4.0, and the batched flyover of `router_loop` ≈ 1 ns less
/// (2026-11-29); eight registers at a time spilled (4.8 ns a key).
///
/// # Safety
/// The CPU has VAES, AVX-512F and AVX-512BW ([`crate::cpu::Level::Vaes`]).
#[target_feature(enable = "avx512f,avx512bw,vaes")]
pub(super) unsafe fn encrypt_fresh_keys(keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
    let n = keys.len().min(blocks.len());
    let (keys, blocks) = (&keys[..n], &mut blocks[..n]);
    // SAFETY: the CPU has the features (the caller's promise); both slices hold `n` blocks.
    let mut done = unsafe { fresh_key_groups::<4>(keys, blocks, 0) };
    // SAFETY: as above.
    done = unsafe { fresh_key_groups::<2>(keys, blocks, done) };
    while done < n {
        let m = (n - done).min(4);
        // SAFETY: blocks `done..done + m` exist in both slices.
        unsafe {
            let (k, b) = (keys.as_ptr().add(done), blocks.as_mut_ptr().add(done));
            let [x] = fresh_key_rounds([load(k, m)], [load(b, m)]);
            store(b, m, x);
        }
        done += m;
    }
}

/// [`encrypt_fresh_keys`] from block `done` on, `4 · G` blocks at a time in `G` registers,
/// while that many are left; returns the first block not done.
///
/// # Safety
/// The CPU has VAES, AVX-512F and AVX-512BW; `keys` and `blocks` are equally long.
#[inline(always)]
unsafe fn fresh_key_groups<const G: usize>(keys: &[[u8; 16]], blocks: &mut [[u8; 16]], mut done: usize) -> usize {
    debug_assert_eq!(keys.len(), blocks.len());
    while keys.len() - done >= 4 * G {
        // SAFETY: blocks `done..done + 4 * G` exist in both slices.
        unsafe {
            let (k, b) = (keys.as_ptr().add(done), blocks.as_mut_ptr().add(done));
            // Loops, not `array::from_fn`: its closure would not be compiled for the features.
            let (mut ks, mut xs) = ([_mm512_setzero_si512(); G], [_mm512_setzero_si512(); G]);
            for j in 0..G {
                ks[j] = load(k.add(4 * j), 4);
                xs[j] = load(b.add(4 * j), 4);
            }
            let xs = fresh_key_rounds(ks, xs);
            for (j, x) in xs.into_iter().enumerate() {
                store(b.add(4 * j), 4, x);
            }
        }
        done += 4 * G;
    }
    done
}

/// `G` registers of four blocks each encrypted under the four keys beside them, every round
/// key used as it is made and the `G` chains' instructions interleaved.
#[inline(always)]
fn fresh_key_rounds<const G: usize>(mut k: [__m512i; G], mut x: [__m512i; G]) -> [__m512i; G] {
    // SAFETY: only called from `encrypt_fresh_keys`, whose target features these
    // instructions need.
    unsafe {
        for j in 0..G {
            x[j] = _mm512_xor_si512(x[j], k[j]);
        }
        let mut rcon = 1;
        for round in 1..=10 {
            for j in 0..G {
                k[j] = next_round_key(k[j], rcon);
                x[j] = if round < 10 { _mm512_aesenc_epi128(x[j], k[j]) } else { _mm512_aesenclast_epi128(x[j], k[j]) };
            }
            rcon = if rcon == 0x80 { 0x1b } else { rcon << 1 };
        }
        x
    }
}

/// The next round key of the four keys in `k`'s lanes, `rcon` the round's constant: as
/// [`super::Aes128::new`] makes it, lane by lane.
#[inline(always)]
pub(crate) fn next_round_key(k: __m512i, rcon: i32) -> __m512i {
    // SAFETY: only inlined into this module's and `cmac::wide`'s functions, whose target
    // features (AVX-512F and BW, VAES) these instructions need.
    unsafe {
        // Word 3 of each key rotated and broadcast over its lane: AESENCLAST then gives
        // SubWord(RotWord(w3)) ⊕ rcon in every word (ShiftRows moves nothing among equal
        // columns).
        let t =
            _mm512_aesenclast_epi128(_mm512_shuffle_epi8(k, _mm512_set1_epi32(0x0c0f0e0d)), _mm512_set1_epi32(rcon));
        // The prefix XOR of the lane's words, w0, w0⊕w1, …, independent of `t`; its last step
        // and `t` in one three-way XOR (truth table 0x96): seven instructions a round key where
        // eight were, on the two ports that run 512-bit work.
        let s = _mm512_xor_si512(k, _mm512_bslli_epi128::<4>(k));
        _mm512_ternarylogic_epi32::<0x96>(s, _mm512_bslli_epi128::<8>(s), t)
    }
}

/// Four `LEN`-byte messages' bytes at `offset` (16 of them) in the lanes of one register,
/// the first `n ≤ 4`; zero past `n`.
///
/// # Safety
/// The CPU has AVX-512F; `msgs` points to `n` messages and `offset + 16 ≤ LEN`.
#[inline(always)]
pub(crate) unsafe fn gather<const LEN: usize>(msgs: *const [u8; LEN], n: usize, offset: usize) -> __m512i {
    debug_assert!(offset + 16 <= LEN && n <= 4);
    // SAFETY: message `j < n` holds 16 bytes at `offset` (the caller's bounds); loads are
    // unaligned-safe.
    unsafe {
        let lane = |j: usize| {
            if j < n {
                _mm_loadu_si128(msgs.add(j).cast::<u8>().add(offset).cast())
            } else {
                _mm_setzero_si128()
            }
        };
        let low = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lane(0)), lane(1));
        let high = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lane(2)), lane(3));
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high)
    }
}

/// [`super::Aes128::cbc_two_blocks_many`] four messages to a register:
/// `out[i] = AES(AES(m[..16]) ⊕ pad(m[16..]) ⊕ tweak)`, `white` the tweak XORed with round key
/// 0 and `down` the byte shuffle that moves a message's final 16 bytes down to its tail (zeros
/// after it).
///
/// # Safety
/// The CPU has VAES, AVX-512F and AVX-512BW ([`crate::cpu::Level::Vaes`]); `LEN` is 17 to 32.
#[target_feature(enable = "avx512f,avx512bw,vaes")]
pub(super) unsafe fn cbc_two_blocks_many<const LEN: usize>(
    rk: &[__m128i; 11],
    msgs: &[[u8; LEN]],
    white: __m128i,
    down: __m128i,
    out: &mut [[u8; 16]],
) {
    debug_assert!(LEN > 16 && LEN <= 32);
    let k: [__m512i; 11] = std::array::from_fn(|r| _mm512_broadcast_i32x4(rk[r]));
    let (white, down) = (_mm512_broadcast_i32x4(white), _mm512_broadcast_i32x4(down));
    let n = msgs.len().min(out.len());
    let mut done = 0;
    while done < n {
        let m = (n - done).min(4);
        // SAFETY: messages and outputs `done..done + m` exist; both blocks of a message lie
        // within its `LEN ≥ 16` bytes.
        unsafe {
            let src = msgs.as_ptr().add(done);
            let mut x = _mm512_xor_si512(gather(src, m, 0), k[0]);
            for rk in &k[1..10] {
                x = _mm512_aesenc_epi128(x, *rk);
            }
            let last = _mm512_shuffle_epi8(gather(src, m, LEN - 16), down);
            x = _mm512_xor_si512(_mm512_aesenclast_epi128(x, k[10]), _mm512_xor_si512(last, white));
            for rk in &k[1..10] {
                x = _mm512_aesenc_epi128(x, *rk);
            }
            store(out.as_mut_ptr().add(done), m, _mm512_aesenclast_epi128(x, k[10]));
        }
        done += m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
    use proptest::prelude::*;

    fn reference(key: &[u8; 16], block: &[u8; 16]) -> [u8; 16] {
        let mut b = GenericArray::from(*block);
        aes::Aes128Enc::new(GenericArray::from_slice(key)).encrypt_block(&mut b);
        b.into()
    }

    proptest! {
        // Every length up to 40 reaches the four- and two-register groups, a last full group and
        // every partial group under a mask; blocks past the end must stay as they were.
        #[test]
        fn wide_paths_match_rustcrypto(
            key: [u8; 16],
            keys in proptest::collection::vec(any::<[u8; 16]>(), 40),
            blocks in proptest::collection::vec(any::<[u8; 16]>(), 40),
            n in 0usize..=40,
        ) {
            if crate::cpu::hardware() != crate::cpu::Level::Vaes {
                eprintln!("no VAES with AVX-512 on this CPU: the wide paths are not run");
                return Ok(());
            }
            let cipher = super::super::Aes128::new(&key);
            let mut one_key = blocks.clone();
            // SAFETY: the CPU has VAES with AVX-512, just checked.
            unsafe { encrypt_many(super::super::ni::rks(&cipher), &mut one_key[..n]) };
            let mut fresh = blocks.clone();
            // SAFETY: as above.
            unsafe { encrypt_fresh_keys(&keys[..n], &mut fresh[..n]) };
            for i in 0..40 {
                let (many, each) = if i < n {
                    (reference(&key, &blocks[i]), reference(&keys[i], &blocks[i]))
                } else {
                    (blocks[i], blocks[i])
                };
                prop_assert_eq!(one_key[i], many, "one key, block {} of {}", i, n);
                prop_assert_eq!(fresh[i], each, "fresh keys, block {} of {}", i, n);
            }
        }
    }
}
