//! AES-128 with AES-NI: the key schedules, batches and chains the routers run, handing
//! batches of four blocks or more to [`super::wide`] where the CPU has VAES with AVX-512.
//!
//! Every function here is compiled for [`crate::cpu::AES_NI_FEATURES`] and called only where
//! [`crate::cpu::aes_ni`] has said yes. Callers compiled for those features too (the routers'
//! per-packet stages) get them inlined; others make one call per operation.

use super::{wide, Aes128, Chained, Recall};
use crate::cpu;
use std::arch::x86_64::*;

/// The round keys as vectors (`Aes128` is 16-byte aligned).
#[inline(always)]
pub(super) fn rks(c: &Aes128) -> &[__m128i; 11] {
    // SAFETY: `[[u8; 16]; 11]` and `[__m128i; 11]` have the same size, every bit pattern is
    // valid for both, and `Aes128`'s alignment (16) is `__m128i`'s.
    unsafe { &*c.rk.as_ptr().cast::<[__m128i; 11]>() }
}

/// The cipher of these round keys.
#[inline(always)]
fn from_rks(rk: [__m128i; 11]) -> Aes128 {
    // SAFETY: as in `rks`, by value.
    Aes128 { rk: unsafe { std::mem::transmute::<[__m128i; 11], [[u8; 16]; 11]>(rk) } }
}

/// The round keys of four keys at once. The schedule is a chain of 32-bit words,
/// `w[i] = w[i−4] ⊕ f(w[i−1])`: with word `i` of the four keys side by side in one
/// register (the keys transposed), a round is one `AESENCLAST` for the four `f`s (SubWord,
/// with RotWord and the inverse of ShiftRows folded into one byte shuffle before it) and
/// four XORs in place, where one key at a time needs two byte shifts and register copies
/// per round. The round keys are transposed back for the AES rounds.
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
fn expand_four(keys: [__m128i; 4]) -> [[__m128i; 11]; 4] {
    let mut rks = keys.map(|k| [k; 11]);
    let mut w = transpose(keys);
    let mut rcon = 1;
    // Written key by key into the layout `Aes128` keeps, round by round.
    #[allow(clippy::needless_range_loop)]
    for round in 1..11 {
        next_round_transposed(&mut w, rcon);
        for (rk, k) in rks.iter_mut().zip(transpose(w)) {
            rk[round] = k;
        }
        rcon = next_rcon(rcon);
    }
    rks
}

/// One round of four keys' schedules, their words transposed (see [`expand_four`]): `w`
/// becomes the next round keys' words.
#[inline(always)]
fn next_round_transposed(w: &mut [__m128i; 4], rcon: i32) {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2.
    unsafe {
        // Byte 4c + r of the state becomes byte 4c + (r + 1) mod 4 of lane c (RotWord)
        // after AESENCLAST's ShiftRows, which moves row r by r columns.
        let rot_unshift = _mm_set_epi8(0, 7, 10, 13, 12, 3, 6, 9, 8, 15, 2, 5, 4, 11, 14, 1);
        let f = _mm_aesenclast_si128(_mm_shuffle_epi8(w[3], rot_unshift), _mm_set1_epi32(rcon));
        w[0] = _mm_xor_si128(w[0], f);
        w[1] = _mm_xor_si128(w[1], w[0]);
        w[2] = _mm_xor_si128(w[2], w[1]);
        w[3] = _mm_xor_si128(w[3], w[2]);
    }
}

/// The round constant after `rcon` (doubling in GF(2^8)).
#[inline(always)]
const fn next_rcon(rcon: i32) -> i32 {
    if rcon == 0x80 {
        0x1b
    } else {
        rcon << 1
    }
}

/// `AES_k(b)` with the key `k` expanded round by round as [`Aes128::new`] does, each round
/// key used as it comes and, with `keep`, stored there beside the rounds.
#[inline(always)]
fn fresh_key_rounds(mut k: __m128i, b: __m128i, mut keep: Option<&mut [__m128i; 11]>) -> __m128i {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2.
    unsafe {
        if let Some(keep) = keep.as_deref_mut() {
            keep[0] = k;
        }
        let mut b = _mm_xor_si128(b, k);
        // Word 3 rotated and broadcast to all four lanes, as in `new`.
        let rot = _mm_set1_epi32(0x0c0f0e0d);
        let mut rcon = 1;
        for round in 1..=10 {
            let t = _mm_aesenclast_si128(_mm_shuffle_epi8(k, rot), _mm_set1_epi32(rcon));
            let s = _mm_xor_si128(k, _mm_slli_si128(k, 4));
            k = _mm_xor_si128(_mm_xor_si128(s, _mm_slli_si128(s, 8)), t);
            if let Some(keep) = keep.as_deref_mut() {
                keep[round] = k;
            }
            b = if round < 10 { _mm_aesenc_si128(b, k) } else { _mm_aesenclast_si128(b, k) };
            rcon = next_rcon(rcon);
        }
        b
    }
}

/// The 4 × 4 matrix of 32-bit words transposed: lane `i` of row `j` becomes lane `j` of
/// row `i` (its own inverse).
#[inline(always)]
fn transpose([a, b, c, d]: [__m128i; 4]) -> [__m128i; 4] {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: SSE2.
    unsafe {
        let (ab_lo, cd_lo) = (_mm_unpacklo_epi32(a, b), _mm_unpacklo_epi32(c, d));
        let (ab_hi, cd_hi) = (_mm_unpackhi_epi32(a, b), _mm_unpackhi_epi32(c, d));
        [
            _mm_unpacklo_epi64(ab_lo, cd_lo),
            _mm_unpackhi_epi64(ab_lo, cd_lo),
            _mm_unpacklo_epi64(ab_hi, cd_hi),
            _mm_unpackhi_epi64(ab_hi, cd_hi),
        ]
    }
}

#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn new(key: &[u8; 16]) -> Aes128 {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI and SSSE3; loads are unaligned-safe.
    unsafe {
        let mut k = _mm_loadu_si128(key.as_ptr().cast());
        let mut rk = [k; 11];
        // Rotate word 3 and broadcast it to all four lanes.
        let rot = _mm_set1_epi32(0x0c0f0e0d);
        let mut rcon = _mm_set1_epi32(1);
        for slot in rk.iter_mut().skip(1) {
            // AESENCLAST with a broadcast input: ShiftRows is a no-op across equal
            // columns, SubBytes gives SubWord, the round key adds Rcon.
            let t = _mm_aesenclast_si128(_mm_shuffle_epi8(k, rot), rcon);
            rcon = _mm_slli_epi32(rcon, 1);
            if _mm_extract_epi32(rcon, 0) == 0x100 {
                rcon = _mm_set1_epi32(0x1b);
            }
            let mut s = _mm_xor_si128(k, _mm_slli_si128(k, 4));
            s = _mm_xor_si128(s, _mm_slli_si128(s, 8));
            k = _mm_xor_si128(s, t);
            *slot = k;
        }
        from_rks(rk)
    }
}

/// [`Aes128::new`] of `M` keys: four at a time with their words transposed
/// ([`expand_four`]), a last single key on its own.
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn new_each<const M: usize>(keys: &[[u8; 16]; M]) -> [Aes128; M] {
    // Not zeroed first (176 bytes a key): every schedule is written once below.
    let mut out = [const { std::mem::MaybeUninit::<Aes128>::uninit() }; M];
    let mut g = 0;
    while M - g >= 2 {
        let m = (M - g).min(4);
        // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: SSE2; loads are unaligned-safe.
        let four = expand_four(std::array::from_fn(|j| unsafe {
            if j < m {
                _mm_loadu_si128(keys[g + j].as_ptr().cast())
            } else {
                _mm_setzero_si128()
            }
        }));
        for (o, rk) in out[g..g + m].iter_mut().zip(four) {
            o.write(from_rks(rk));
        }
        g += m;
    }
    if g < M {
        out[g].write(new(&keys[g]));
    }
    debug_assert!(g + 1 >= M);
    // SAFETY: the groups wrote `out[..g]` in order, and a last single key `out[g]` when
    // one was left (`M - g < 2` after the loop), so every element is initialised.
    out.map(|o| unsafe { o.assume_init() })
}

#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn encrypt(c: &Aes128, block: &[u8; 16]) -> [u8; 16] {
    // SAFETY: as above.
    unsafe {
        let mut b = _mm_xor_si128(_mm_loadu_si128(block.as_ptr().cast()), rks(c)[0]);
        for rk in &rks(c)[1..10] {
            b = _mm_aesenc_si128(b, *rk);
        }
        b = _mm_aesenclast_si128(b, rks(c)[10]);
        let mut out = [0u8; 16];
        _mm_storeu_si128(out.as_mut_ptr().cast(), b);
        out
    }
}

/// Encrypts several blocks under this key with their rounds interleaved: four blocks
/// to an instruction where the CPU has VAES with AVX-512 ([`wide`]), from four blocks
/// on (fewer are one register either way).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn encrypt_many(c: &Aes128, blocks: &mut [[u8; 16]]) {
    if blocks.len() >= 4 && cpu::vaes() {
        // SAFETY: `cpu::vaes` found the CPU features `wide` is compiled for.
        unsafe { wide::encrypt_many(rks(c), blocks) };
        return;
    }
    let mut chunks = blocks.chunks_exact_mut(4);
    for chunk in &mut chunks {
        // SAFETY: loads and stores are unaligned-safe, from and to 16-byte arrays.
        unsafe {
            let mut b = [_mm_setzero_si128(); 4];
            for (x, src) in b.iter_mut().zip(chunk.iter()) {
                *x = _mm_xor_si128(_mm_loadu_si128(src.as_ptr().cast()), rks(c)[0]);
            }
            for rk in &rks(c)[1..10] {
                for x in b.iter_mut() {
                    *x = _mm_aesenc_si128(*x, *rk);
                }
            }
            for (x, dst) in b.iter().zip(chunk.iter_mut()) {
                _mm_storeu_si128(dst.as_mut_ptr().cast(), _mm_aesenclast_si128(*x, rks(c)[10]));
            }
        }
    }
    for b in chunks.into_remainder() {
        *b = encrypt(c, b);
    }
}

/// [`Aes128::new_each`] of `M ≤ 4` keys that also encrypts `B` blocks under each key
/// (`blocks[j][k] = AES_{keys[j]}(blocks[j][k])`) while expanding it: each round key,
/// once transposed back, goes into the blocks' round at once, so the schedule is
/// written to memory once (for later blocks) and never read back for these. One key
/// alone is expanded on its own, as [`Aes128::new`] does (the transposed schedule is
/// dearer for one).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
#[allow(clippy::needless_range_loop)] // `round` indexes the schedules and picks the last round
pub(super) fn new_each_encrypting<const M: usize, const B: usize>(
    keys: &[[u8; 16]; M],
    blocks: &mut [[[u8; 16]; B]; M],
) -> [Aes128; M] {
    const { assert!(M >= 1 && M <= 4, "one to four keys") };
    if M == 1 {
        let ciphers = new_each(keys);
        encrypt_each(&ciphers, blocks);
        return ciphers;
    }
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2; loads and stores are
    // unaligned-safe, from and to 16-byte arrays.
    unsafe {
        let k: [__m128i; 4] =
            std::array::from_fn(|j| if j < M { _mm_loadu_si128(keys[j].as_ptr().cast()) } else { _mm_setzero_si128() });
        let mut out = [[_mm_setzero_si128(); 11]; M];
        let mut x = [[_mm_setzero_si128(); B]; M];
        for j in 0..M {
            out[j][0] = k[j];
            for b in 0..B {
                x[j][b] = _mm_xor_si128(_mm_loadu_si128(blocks[j][b].as_ptr().cast()), k[j]);
            }
        }
        let mut w = transpose(k);
        let mut rcon = 1;
        for round in 1..11 {
            next_round_transposed(&mut w, rcon);
            let rk = transpose(w);
            for j in 0..M {
                out[j][round] = rk[j];
                for xb in x[j].iter_mut() {
                    *xb = if round < 10 { _mm_aesenc_si128(*xb, rk[j]) } else { _mm_aesenclast_si128(*xb, rk[j]) };
                }
            }
            rcon = next_rcon(rcon);
        }
        for j in 0..M {
            for b in 0..B {
                _mm_storeu_si128(blocks[j][b].as_mut_ptr().cast(), x[j][b]);
            }
        }
        out.map(from_rks)
    }
}

/// `out[i] = AES(AES(m[..16]) ⊕ pad(m[16..]) ⊕ tweak)` for messages `m` of `LEN` bytes,
/// 17 to 32: the CBC chain of a two-block message whose last block is completed by
/// `tweak` (CMAC's subkey, with the padding's `0x80` for a partial block). Each block
/// is loaded from the message itself, the last as the message's final 16 bytes moved
/// down by one byte shuffle (zeros after the tail); `tweak` and round key 0 are XORed
/// once per call. Four messages' rounds interleave; the rest go one at a time.
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn cbc_two_blocks_many<const LEN: usize>(
    c: &Aes128,
    msgs: &[[u8; LEN]],
    tweak: &[u8; 16],
    out: &mut [[u8; 16]],
) {
    const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
    let n = msgs.len().min(out.len());
    let (msgs, out) = (&msgs[..n], &mut out[..n]);
    let tail = LEN - 16;
    // Byte i of the last block is byte 16 + i of the message, byte 32 − LEN + i of
    // its final 16; past the tail, a set top bit makes PSHUFB write zero.
    let down: [u8; 16] = std::array::from_fn(|i| if i < tail { (32 - LEN + i) as u8 } else { 0x80 });
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: SSE2; the loads are unaligned-safe from 16-byte arrays.
    let (down, white) = unsafe {
        (_mm_loadu_si128(down.as_ptr().cast()), _mm_xor_si128(_mm_loadu_si128(tweak.as_ptr().cast()), rks(c)[0]))
    };
    if n >= 4 && cpu::vaes() {
        // SAFETY: `cpu::vaes` found the CPU features `wide` is compiled for; `LEN` is 17
        // to 32 (asserted above).
        unsafe { wide::cbc_two_blocks_many(rks(c), msgs, white, down, out) };
        return;
    }
    let mut m4 = msgs.chunks_exact(4);
    let mut o4 = out.chunks_exact_mut(4);
    for (m, o) in (&mut m4).zip(&mut o4) {
        cbc_two_lanes::<4, LEN>(c, m, o, down, white);
    }
    for (m, o) in m4.remainder().iter().zip(o4.into_remainder()) {
        cbc_two_lanes::<1, LEN>(c, std::slice::from_ref(m), std::slice::from_mut(o), down, white);
    }
}

/// The first `M` messages of [`Aes128::cbc_two_blocks_many`] (both slices hold `M`).
#[inline(always)]
fn cbc_two_lanes<const M: usize, const LEN: usize>(
    c: &Aes128,
    msgs: &[[u8; LEN]],
    out: &mut [[u8; 16]],
    down: __m128i,
    white: __m128i,
) {
    debug_assert!(msgs.len() >= M && out.len() >= M && LEN >= 16);
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2; each load reads 16 bytes at
    // offset 0 or LEN − 16 ≥ 0 of a LEN-byte array, and each store writes a 16-byte
    // array; all are unaligned-safe.
    unsafe {
        let mut x: [__m128i; M] =
            std::array::from_fn(|j| _mm_xor_si128(_mm_loadu_si128(msgs[j].as_ptr().cast()), rks(c)[0]));
        for rk in &rks(c)[1..10] {
            for xj in x.iter_mut() {
                *xj = _mm_aesenc_si128(*xj, *rk);
            }
        }
        for (j, xj) in x.iter_mut().enumerate() {
            let last = _mm_shuffle_epi8(_mm_loadu_si128(msgs[j].as_ptr().add(LEN - 16).cast()), down);
            *xj = _mm_xor_si128(_mm_aesenclast_si128(*xj, rks(c)[10]), _mm_xor_si128(last, white));
        }
        for rk in &rks(c)[1..10] {
            for xj in x.iter_mut() {
                *xj = _mm_aesenc_si128(*xj, *rk);
            }
        }
        for (o, xj) in out.iter_mut().zip(x) {
            _mm_storeu_si128(o.as_mut_ptr().cast(), _mm_aesenclast_si128(xj, rks(c)[10]));
        }
    }
}

/// `blocks[i][j] = AES_{ciphers[i]}(blocks[i][j])`: `B` blocks under each of `M` keys,
/// the rounds of all `M × B` blocks interleaved (keep `M × B` within the 16 vector
/// registers, with room for round keys).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn encrypt_each<const M: usize, const B: usize>(ciphers: &[Aes128; M], blocks: &mut [[[u8; 16]; B]; M]) {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI; loads and stores are unaligned-safe.
    unsafe {
        let mut x = [[_mm_setzero_si128(); B]; M];
        for j in 0..M {
            for k in 0..B {
                x[j][k] = _mm_xor_si128(_mm_loadu_si128(blocks[j][k].as_ptr().cast()), rks(&ciphers[j])[0]);
            }
        }
        for round in 1..10 {
            for j in 0..M {
                let rk = rks(&ciphers[j])[round];
                for xb in x[j].iter_mut() {
                    *xb = _mm_aesenc_si128(*xb, rk);
                }
            }
        }
        for j in 0..M {
            for k in 0..B {
                let out = _mm_aesenclast_si128(x[j][k], rks(&ciphers[j])[10]);
                _mm_storeu_si128(blocks[j][k].as_mut_ptr().cast(), out);
            }
        }
    }
}

/// `AES_key(block)`, each round key used as it is expanded (as [`Aes128::new`] expands
/// it), none kept: a single packet's FlyoverMAC. Kept in registers, where
/// [`Aes128::new_each_encrypting`] of one key writes the schedule and reads it back
/// (callgrind, 2026-11-26: 18 instructions a single flyover packet more).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
fn encrypt_fresh_key(key: &[u8; 16], block: &[u8; 16]) -> [u8; 16] {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: SSE2; loads and stores are unaligned-safe, from and
    // to 16-byte arrays.
    unsafe {
        let b = fresh_key_rounds(_mm_loadu_si128(key.as_ptr().cast()), _mm_loadu_si128(block.as_ptr().cast()), None);
        let mut out = [0u8; 16];
        _mm_storeu_si128(out.as_mut_ptr().cast(), b);
        out
    }
}

/// A single flyover's chain, and one block under another key beside it, in one
/// function so that the core runs whatever of the two can run at once: `y =
/// AES_{AES_self(key_in)}(block)` (A_K under the SV, then the FlyoverMAC under A_K
/// expanded on the fly, as [`Aes128::encrypt_fresh_keys`] does for one key) and `z =
/// AES_other(other_in ⊕ feed(y ⊕ mix))`, where `feed` maps bytes into the block as a
/// PSHUFB control does (byte `i` takes byte `feed[i]`, zero where its top bit is set).
/// Without `feed` the second block does not wait for `y`: its rounds interleave with
/// `self`'s, the first step of the chain. With `feed` it follows `y`, one byte shuffle
/// and one XOR after it (`mix`'s part is added before), in vector registers. With `keep`, the
/// chain's key `AES_self(key_in)` is left there expanded, its round keys stored as they are
/// made. Returns `(y, z)`.
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn fresh_key_chain_beside(
    c: &Aes128,
    key_in: &[u8; 16],
    block: &[u8; 16],
    other: &Aes128,
    other_in: &[u8; 16],
    feed: Option<(&[u8; 16], &[u8; 16])>,
    keep: Option<&mut Aes128>,
) -> Chained {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2; loads are unaligned-safe,
    // from 16-byte arrays; `keep`'s round keys are `rks`' layout, mutably.
    unsafe {
        let keep = keep.map(|c| &mut *c.rk.as_mut_ptr().cast::<[__m128i; 11]>());
        let fresh = Some((_mm_loadu_si128(block.as_ptr().cast()), keep));
        chain_and_beside(_mm_loadu_si128(key_in.as_ptr().cast()), rks(c), fresh, other, other_in, feed, None)
    }
}

/// [`fresh_key_chain_beside`] with the chain's key already expanded (`c`, an A_K kept by its
/// reservation): `y = AES_c(block)` and `z = AES_other(other_in ⊕ feed(y ⊕ mix))`. Without
/// `feed` the two blocks' rounds interleave; with it the second block's rounds follow `y`,
/// one byte shuffle and one XOR after it, and are skipped where `recall` applies (see
/// `chain_and_beside`).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn chain_beside(
    c: &Aes128,
    block: &[u8; 16],
    other: &Aes128,
    other_in: &[u8; 16],
    feed: Option<(&[u8; 16], &[u8; 16])>,
    recall: Option<(&Recall, &[u8; 16])>,
) -> Chained {
    // SAFETY: only called with (or inlined into callers with) cpu::AES_NI_FEATURES: AES-NI, SSSE3 and SSE2; the load is unaligned-safe,
    // from a 16-byte array.
    unsafe { chain_and_beside(_mm_loadu_si128(block.as_ptr().cast()), rks(c), None, other, other_in, feed, recall) }
}

/// The two chains above: `y` is `x` through the rounds of `rk`, then, with `fresh = (b, keep)`,
/// `b` under that result expanded round by round (its round keys stored in `keep`, if given);
/// `z = AES_other(z_in)`, `z_in = other_in ⊕ feed(y ⊕ mix)`. Without `feed`, `z`'s rounds
/// interleave with `rk`'s; with it they follow `y`, its part of `z`'s input added in vector
/// registers, and with `recall = ([input, output], agree)`, where `z_in` is `input` and `y ⊕ mix`
/// equals `output` in the bytes `agree` sets, `z` is `output` without them.
#[inline(always)]
fn chain_and_beside(
    x: __m128i,
    rk: &[__m128i; 11],
    fresh: Option<(__m128i, Option<&mut [__m128i; 11]>)>,
    other: &Aes128,
    other_in: &[u8; 16],
    feed: Option<(&[u8; 16], &[u8; 16])>,
    recall: Option<(&Recall, &[u8; 16])>,
) -> Chained {
    // SAFETY: only inlined into callers with cpu::AES_NI_FEATURES: AES-NI, SSSE3, SSE4.1 and SSE2; loads and stores are unaligned-safe, from and
    // to 16-byte arrays.
    unsafe {
        let ork = rks(other);
        let mut a = _mm_xor_si128(x, rk[0]);
        let mut z_in = _mm_loadu_si128(other_in.as_ptr().cast());
        let then = |a: __m128i| match fresh {
            Some((b, keep)) => fresh_key_rounds(a, b, keep),
            None => a,
        };
        let (y, z, recalled) = match feed {
            None => {
                let mut z = _mm_xor_si128(z_in, ork[0]);
                for (k, ok) in rk[1..10].iter().zip(&ork[1..10]) {
                    a = _mm_aesenc_si128(a, *k);
                    z = _mm_aesenc_si128(z, *ok);
                }
                (then(_mm_aesenclast_si128(a, rk[10])), _mm_aesenclast_si128(z, ork[10]), false)
            }
            Some((feed, mix)) => {
                // feed(y ⊕ mix) = feed(y) ⊕ feed(mix): the second before the chain ends.
                let feed = _mm_loadu_si128(feed.as_ptr().cast());
                let mix = _mm_loadu_si128(mix.as_ptr().cast());
                z_in = _mm_xor_si128(z_in, _mm_shuffle_epi8(mix, feed));
                for k in &rk[1..10] {
                    a = _mm_aesenc_si128(a, *k);
                }
                let y = then(_mm_aesenclast_si128(a, rk[10]));
                z_in = _mm_xor_si128(z_in, _mm_shuffle_epi8(y, feed));
                // Both compares in one test: z_in against the input, y ⊕ mix against the output
                // where `agree` says.
                let recall = recall.filter(|([input, output], agree)| {
                    let input = _mm_xor_si128(z_in, _mm_loadu_si128(input.as_ptr().cast()));
                    let output = _mm_xor_si128(_mm_xor_si128(y, mix), _mm_loadu_si128(output.as_ptr().cast()));
                    let output = _mm_and_si128(output, _mm_loadu_si128(agree.as_ptr().cast()));
                    let diff = _mm_or_si128(input, output);
                    _mm_testz_si128(diff, diff) == 1
                });
                let z = match recall {
                    Some(([_, output], _)) => _mm_loadu_si128(output.as_ptr().cast()),
                    None => {
                        let mut z = _mm_xor_si128(z_in, ork[0]);
                        for k in &ork[1..10] {
                            z = _mm_aesenc_si128(z, *k);
                        }
                        _mm_aesenclast_si128(z, ork[10])
                    }
                };
                (y, z, recall.is_some())
            }
        };
        let mut out = Chained { y: [0; 16], z: [0; 16], z_in: [0; 16], recalled };
        _mm_storeu_si128(out.y.as_mut_ptr().cast(), y);
        _mm_storeu_si128(out.z.as_mut_ptr().cast(), z);
        _mm_storeu_si128(out.z_in.as_mut_ptr().cast(), z_in);
        out
    }
}

/// `blocks[i] = AES_{keys[i]}(blocks[i])`, expanding each key on the fly: four keys at a
/// time with their words transposed, each round key going into its block's round as
/// it comes ([`Aes128::new_each_encrypting`], whose schedules, never read, are not
/// kept); one key left over on its own. Transposed, a key's schedule costs about half
/// the instructions of one key's on its own, which this did for every key before
/// (callgrind, 2026-11-26: -44 instructions a flyover packet in a batch of 32). Forced
/// inline: called, a single flyover packet ran 20 instructions more.
///
/// From four keys on, where the CPU has VAES with AVX-512, four keys expand in one
/// register with the instructions of one ([`wide`]).
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
pub(super) fn encrypt_fresh_keys(keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
    let n = keys.len().min(blocks.len());
    if n >= 4 && cpu::vaes() {
        // SAFETY: `cpu::vaes` found the CPU features `wide` is compiled for.
        unsafe { wide::encrypt_fresh_keys(keys, blocks) };
        return;
    }
    for (k, b) in keys[..n].chunks(4).zip(blocks[..n].chunks_mut(4)) {
        if let ([k], [b]) = (k, &mut *b) {
            *b = encrypt_fresh_key(k, b);
            continue;
        }
        let four: [[u8; 16]; 4] = std::array::from_fn(|j| k.get(j).copied().unwrap_or_default());
        let mut x: [[[u8; 16]; 1]; 4] = std::array::from_fn(|j| [b.get(j).copied().unwrap_or_default()]);
        new_each_encrypting(&four, &mut x);
        for (b, x) in b.iter_mut().zip(x) {
            *b = x[0];
        }
    }
}
