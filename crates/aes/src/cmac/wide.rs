//! [`super::mac_two_blocks_fresh_keys`] on 512-bit vectors: four keys to a register, each
//! expanded as its rounds go (see [`crate::aes::wide`]), the subkey's `L = AES_K(0)` and the
//! first block in two chains under the same round keys, then the last block.

use std::arch::x86_64::*;

use crate::aes::wide::{gather, load, next_round_key, store};

/// `out[i] = CMAC_{keys[i]}(msgs[i])` for messages of `LEN` bytes, 17 to 32: eight at a time
/// in two groups of four whose instructions interleave, then the rest.
///
/// # Safety
/// The CPU has VAES, VPCLMULQDQ, AVX-512F and AVX-512BW ([`crate::cpu::Level::Vaes`]).
#[target_feature(enable = "avx512f,avx512bw,vaes,vpclmulqdq")]
pub(super) unsafe fn mac_two_blocks_fresh_keys<const LEN: usize>(
    keys: &[[u8; 16]],
    msgs: &[[u8; LEN]],
    out: &mut [[u8; 16]],
) {
    const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
    let n = keys.len().min(msgs.len()).min(out.len());
    let mut done = 0;
    while done < n {
        let m = n - done;
        // SAFETY: keys, messages and outputs `done..done + m` exist.
        unsafe {
            let (k, msg, o) = (keys.as_ptr().add(done), msgs.as_ptr().add(done), out.as_mut_ptr().add(done));
            if m >= 8 {
                let [x, y] = macs::<2, LEN>(
                    [load(k, 4), load(k.add(4), 4)],
                    [gather(msg, 4, 0), gather(msg.add(4), 4, 0)],
                    [gather(msg, 4, LEN - 16), gather(msg.add(4), 4, LEN - 16)],
                );
                store(o, 4, x);
                store(o.add(4), 4, y);
                done += 8;
            } else {
                let m = m.min(4);
                let [x] = macs::<1, LEN>([load(k, m)], [gather(msg, m, 0)], [gather(msg, m, LEN - 16)]);
                store(o, m, x);
                done += m;
            }
        }
    }
}

/// The CMACs of `G` groups of four messages: `keys`, the messages' `first` 16 bytes and their
/// `finals` 16 bytes, lane by lane.
#[inline(always)]
fn macs<const G: usize, const LEN: usize>(
    mut keys: [__m512i; G],
    first: [__m512i; G],
    finals: [__m512i; G],
) -> [__m512i; G] {
    let tail = LEN - 16;
    // Byte i of the last block is byte 16 + i of the message, byte 32 − LEN + i of its final
    // 16; past the tail a set top bit makes PSHUFB write zero; the padding's 0x80 follows the
    // tail of a partial block.
    let down: [u8; 16] = std::array::from_fn(|i| if i < tail { (32 - LEN + i) as u8 } else { 0x80 });
    let pad: [u8; 16] = std::array::from_fn(|i| if i == tail { 0x80 } else { 0 });
    // SAFETY: only called from `mac_two_blocks_fresh_keys`, whose target features these
    // instructions need; the loads read 16-byte arrays.
    unsafe {
        let lane = |b: &[u8; 16]| _mm512_broadcast_i32x4(_mm_loadu_si128(b.as_ptr().cast()));
        let (down, pad) = (lane(&down), lane(&pad));
        let mut rks = [[_mm512_setzero_si512(); 11]; G];
        let mut l = keys;
        let mut c: [__m512i; G] = std::array::from_fn(|j| _mm512_xor_si512(first[j], keys[j]));
        let mut rcon = 1;
        for j in 0..G {
            rks[j][0] = keys[j];
        }
        // Round by round across the groups, so that their chains interleave.
        #[allow(clippy::needless_range_loop)]
        for round in 1..=10 {
            for j in 0..G {
                keys[j] = next_round_key(keys[j], rcon);
                rks[j][round] = keys[j];
                if round < 10 {
                    l[j] = _mm512_aesenc_epi128(l[j], keys[j]);
                    c[j] = _mm512_aesenc_epi128(c[j], keys[j]);
                } else {
                    l[j] = _mm512_aesenclast_epi128(l[j], keys[j]);
                    c[j] = _mm512_aesenclast_epi128(c[j], keys[j]);
                }
            }
            rcon = if rcon == 0x80 { 0x1b } else { rcon << 1 };
        }
        std::array::from_fn(|j| {
            let last = _mm512_xor_si512(_mm512_shuffle_epi8(finals[j], down), pad);
            let mut x = _mm512_xor_si512(_mm512_xor_si512(last, subkey::<LEN>(l[j])), c[j]);
            x = _mm512_xor_si512(x, rks[j][0]);
            for rk in &rks[j][1..10] {
                x = _mm512_aesenc_epi128(x, *rk);
            }
            _mm512_aesenclast_epi128(x, rks[j][10])
        })
    }
}

/// The subkey of each lane's `L` for a message of `LEN` bytes: K1 for a complete last block,
/// K2 for a partial one, as the SSE path of `chained_last_block` computes it (L as a
/// little-endian integer shifted by one or two bits in its 64-bit halves, the bits crossing
/// the middle moved over, those out of the top reduced by a carry-less multiply by 0x87: the
/// same time whatever L holds).
#[inline(always)]
fn subkey<const LEN: usize>(l: __m512i) -> __m512i {
    // SAFETY: as in `macs`.
    unsafe {
        let reverse = _mm512_broadcast_i32x4(_mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        let poly = _mm512_set1_epi64(0x87);
        let x = _mm512_shuffle_epi8(l, reverse);
        let k = if LEN == 32 {
            let out = _mm512_srli_epi64::<63>(x);
            let red = _mm512_clmulepi64_epi128::<0x00>(_mm512_bsrli_epi128::<8>(out), poly);
            _mm512_xor_si512(_mm512_xor_si512(_mm512_slli_epi64::<1>(x), _mm512_bslli_epi128::<8>(out)), red)
        } else {
            let out = _mm512_srli_epi64::<62>(x);
            let red = _mm512_clmulepi64_epi128::<0x00>(_mm512_bsrli_epi128::<8>(out), poly);
            _mm512_xor_si512(_mm512_xor_si512(_mm512_slli_epi64::<2>(x), _mm512_bslli_epi128::<8>(out)), red)
        };
        _mm512_shuffle_epi8(k, reverse)
    }
}
