//! AES-128-CMAC (RFC 4493) for the short inputs of per-packet MACs, on [`Aes128`].
//!
//! The `cmac` crate keeps a buffered streaming state: every call clones or builds it, pads
//! through a generic block buffer and, with a fresh key, runs the `aes` crate's key schedule
//! (encryption and decryption round keys). A per-packet MAC over one or two blocks needs none
//! of that. Here the subkeys K1 and K2 are derived once per key; a message of `n` blocks costs
//! `n` AES blocks; and batches of two-block messages interleave their AES rounds across
//! messages, under one key ([`CmacKey::mac_two_blocks_many`]) or each under its own fresh key
//! ([`mac_two_blocks_fresh_keys`]). Batches of equal-length messages of any length interleave
//! the same way, under one key ([`CmacKey::mac_many`]) or each under its own expanded key
//! ([`mac_each`]). The tests check all of them against the `cmac` crate.

#[cfg(target_arch = "x86_64")]
mod wide;

use crate::aes::Aes128;
use crate::cpu::{Cpu, Detect};
use crate::xor;

/// `dbl()` of RFC 4493: shift left by one bit in GF(2^128), reducing with x^128 + x^7 + x^2 + x + 1.
#[inline]
pub fn dbl(x: u128) -> u128 {
    (x << 1) ^ if x >> 127 == 1 { 0x87 } else { 0 }
}

/// `dbl(dbl(x))` in one step: `x · x²`, the two bits shifted out reduced together. The bit
/// shifted out first (bit 127) comes back as `x^7 + x^2 + x + 1` shifted once more (0x10e),
/// the second (bit 126, which the first reduction leaves alone) as 0x87. Arithmetic, not a
/// table: the subkey is secret, and an index into memory would leak through the cache.
#[inline]
fn dbl2(x: u128) -> u128 {
    let top = (x >> 126) as u64;
    (x << 2) ^ u128::from(((top & 1) * 0x87) ^ ((top >> 1) * 0x10e))
}

/// The subkeys `(K1, K2)` from `L = AES_K(0)`; K2 straight from L, so that a message whose
/// last block is partial (which needs only K2) does not wait on K1.
#[inline]
fn subkeys(l: [u8; 16]) -> (u128, u128) {
    let l = u128::from_be_bytes(l);
    (dbl(l), dbl2(l))
}

/// The last block of a message whose final `tail` bytes (0 to 16 of them) it holds: complete
/// blocks are XORed with K1, shorter ones padded with `0x80 0x00 …` and XORed with K2.
#[inline]
fn last_block(tail: &[u8], (k1, k2): (u128, u128)) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..tail.len()].copy_from_slice(tail);
    let k = if tail.len() == 16 {
        k1
    } else {
        b[tail.len()] = 0x80;
        k2
    };
    (u128::from_be_bytes(b) ^ k).to_be_bytes()
}

/// The first block of a two-block message.
#[inline]
fn first_block<const LEN: usize>(msg: &[u8; LEN]) -> [u8; 16] {
    msg[..16].try_into().expect("a two-block message holds 16 bytes")
}

/// An expanded CMAC key with its subkeys.
#[derive(Clone)]
pub struct CmacKey {
    cipher: Aes128,
    k1: u128,
    k2: u128,
}

/// The subkeys derive from the cipher, so equal ciphers are equal keys.
impl PartialEq for CmacKey {
    fn eq(&self, other: &Self) -> bool {
        self.cipher == other.cipher
    }
}

impl Eq for CmacKey {}

impl std::fmt::Debug for CmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CmacKey(..)")
    }
}

impl CmacKey {
    #[inline]
    pub fn new(key: &[u8; 16]) -> Self {
        Self::new_on(Detect, key)
    }

    /// [`Self::new`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
    #[inline(always)]
    pub fn new_on(cpu: impl Cpu, key: &[u8; 16]) -> Self {
        let cipher = Aes128::new_on(cpu, key);
        let (k1, k2) = subkeys(cipher.encrypt_on(cpu, &[0; 16]));
        Self { cipher, k1, k2 }
    }

    /// The 16-byte CMAC of `msg`, of any length.
    #[inline]
    pub fn mac(&self, msg: &[u8]) -> [u8; 16] {
        self.mac_on(Detect, msg)
    }

    /// [`Self::mac`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn mac_on(&self, cpu: impl Cpu, msg: &[u8]) -> [u8; 16] {
        // Every block but the last goes through the CBC chain as it is; the last (possibly
        // empty or partial) one is completed with a subkey.
        let tail_len = if msg.is_empty() { 0 } else { (msg.len() - 1) % 16 + 1 };
        let (body, tail) = msg.split_at(msg.len() - tail_len);
        let mut x = [0u8; 16];
        for block in body.chunks_exact(16) {
            x = self.cipher.encrypt_on(cpu, &xor(x, block.try_into().expect("16-byte chunk")));
        }
        self.cipher.encrypt_on(cpu, &xor(x, &last_block(tail, (self.k1, self.k2))))
    }

    /// `out[i] = CMAC(msgs[i])` for messages of `LEN` bytes, 17 to 32 (two blocks each); the
    /// AES rounds of several messages interleave. Always inlined, like
    /// [`mac_two_blocks_fresh_keys`], so that a caller compiled for more features (the GLWP
    /// router's AVX2 stages) gets this code in VEX form too.
    #[inline(always)]
    pub fn mac_two_blocks_many<const LEN: usize>(&self, msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
        self.mac_two_blocks_many_on(Detect, msgs, out)
    }

    /// [`Self::mac_two_blocks_many`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn mac_two_blocks_many_on<const LEN: usize>(&self, cpu: impl Cpu, msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
        const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
        let out = &mut out[..msgs.len()];
        // The subkey and the padding of every message's last block: the last block of an
        // empty tail.
        let tweak = last_block(&[0; 16][..LEN - 16], (self.k1, self.k2));
        self.cipher.cbc_two_blocks_many_on(cpu, msgs, &tweak, out);
    }

    /// `out[i] = CMAC(msgs[i])` for messages of `LEN` bytes: the CBC chains of all messages
    /// advance block by block together, the AES rounds of several messages interleaved.
    #[inline]
    pub fn mac_many<const LEN: usize>(&self, msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
        self.mac_many_on(Detect, msgs, out)
    }

    /// [`Self::mac_many`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn mac_many_on<const LEN: usize>(&self, cpu: impl Cpu, msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
        let out = &mut out[..msgs.len()];
        out.fill([0; 16]);
        for b in 0..body_blocks(LEN) {
            for (o, m) in out.iter_mut().zip(msgs) {
                *o = xor(*o, &block(m, b));
            }
            self.cipher.encrypt_many_on(cpu, out);
        }
        for (o, m) in out.iter_mut().zip(msgs) {
            *o = xor(*o, &last_block(&m[16 * body_blocks(LEN)..], (self.k1, self.k2)));
        }
        self.cipher.encrypt_many_on(cpu, out);
    }
}

/// Complete blocks before the last block of a message of `len` bytes (none for the empty
/// message, whose last block is all padding).
#[inline]
const fn body_blocks(len: usize) -> usize {
    len.saturating_sub(1) / 16
}

/// Block `b` of a message.
#[inline]
fn block<const LEN: usize>(msg: &[u8; LEN], b: usize) -> [u8; 16] {
    msg[16 * b..16 * b + 16].try_into().expect("a complete block")
}

/// `out[i] = CMAC_{keys[i]}(msgs[i])` for messages of `LEN` bytes, each under
/// its own expanded key (keys may repeat): the CBC chains of four messages advance together,
/// their AES rounds interleaved.
#[inline]
pub fn mac_each<const LEN: usize>(keys: &[&CmacKey], msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
    mac_each_on(Detect, keys, msgs, out)
}

/// [`mac_each`] on the code `cpu` says the CPU runs.
#[inline(always)]
pub fn mac_each_on<const LEN: usize>(cpu: impl Cpu, keys: &[&CmacKey], msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
    let n = keys.len().min(msgs.len()).min(out.len());
    let (mut keys, mut msgs, mut out) = (&keys[..n], &msgs[..n], &mut out[..n]);
    while !keys.is_empty() {
        // Groups of a fixed size, so that every loop inside has a constant trip count.
        let m = match keys.len() {
            1 => each_key_group::<1, LEN>(cpu, keys, msgs, out),
            2 => each_key_group::<2, LEN>(cpu, keys, msgs, out),
            3 => each_key_group::<3, LEN>(cpu, keys, msgs, out),
            _ => each_key_group::<4, LEN>(cpu, keys, msgs, out),
        };
        (keys, msgs, out) = (&keys[m..], &msgs[m..], &mut std::mem::take(&mut out)[m..]);
    }
}

/// The first `M` messages of [`mac_each`]; returns `M`.
#[inline(always)]
fn each_key_group<const M: usize, const LEN: usize>(
    cpu: impl Cpu,
    keys: &[&CmacKey],
    msgs: &[[u8; LEN]],
    out: &mut [[u8; 16]],
) -> usize {
    let ciphers: [Aes128; M] = std::array::from_fn(|j| keys[j].cipher);
    let mut x: [[[u8; 16]; 1]; M] = [[[0; 16]]; M];
    for b in 0..body_blocks(LEN) {
        for (xj, m) in x.iter_mut().zip(msgs) {
            xj[0] = xor(xj[0], &block(m, b));
        }
        Aes128::encrypt_each_on(cpu, &ciphers, &mut x);
    }
    for ((xj, m), k) in x.iter_mut().zip(msgs).zip(keys) {
        xj[0] = xor(xj[0], &last_block(&m[16 * body_blocks(LEN)..], (k.k1, k.k2)));
    }
    Aes128::encrypt_each_on(cpu, &ciphers, &mut x);
    for (o, xj) in out.iter_mut().zip(&x) {
        *o = xj[0];
    }
    M
}

/// `out[i] = CMAC_{keys[i]}(msgs[i])` for messages of `LEN` bytes, 17 to 32 (two blocks each),
/// each under its own key: per message one key schedule and three AES blocks (the subkey's
/// `L = AES_K(0)` and the first block together, then the last), the rounds of four messages
/// interleaved. Always inlined: the GLWP router's stages, compiled for AVX2 where the CPU has it,
/// then run it with VEX's three-operand forms instead of the baseline's register copies (GLWP
/// router at λ = 8, callgrind, 2026-11-26, with the hop keys' [`CmacKey::mac_two_blocks_many`]
/// and the duplicate filter's hash inlined as well: 532 → 529.5 instructions a packet in
/// batches of 32, 566 → 563 one at a time).
#[inline(always)]
pub fn mac_two_blocks_fresh_keys<const LEN: usize>(keys: &[[u8; 16]], msgs: &[[u8; LEN]], out: &mut [[u8; 16]]) {
    mac_two_blocks_fresh_keys_on(Detect, keys, msgs, out)
}

/// [`mac_two_blocks_fresh_keys`] on the code `cpu` says the CPU runs.
#[inline(always)]
pub fn mac_two_blocks_fresh_keys_on<const LEN: usize>(
    cpu: impl Cpu,
    keys: &[[u8; 16]],
    msgs: &[[u8; LEN]],
    out: &mut [[u8; 16]],
) {
    const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
    let n = keys.len().min(msgs.len()).min(out.len());
    #[cfg(target_arch = "x86_64")]
    if n >= 4 && cpu.aes_ni().is_some() && crate::cpu::vaes() {
        // SAFETY: `cpu::vaes` found the CPU features `wide` is compiled for.
        unsafe { wide::mac_two_blocks_fresh_keys(keys, msgs, out) };
        return;
    }
    let (mut keys, mut msgs, mut out) = (&keys[..n], &msgs[..n], &mut out[..n]);
    while !keys.is_empty() {
        // Groups of a fixed size, so that every loop inside has a constant trip count.
        let m = match keys.len() {
            1 => fresh_key_group::<1, LEN>(cpu, keys, msgs, out),
            2 => fresh_key_group::<2, LEN>(cpu, keys, msgs, out),
            3 => fresh_key_group::<3, LEN>(cpu, keys, msgs, out),
            _ => fresh_key_group::<4, LEN>(cpu, keys, msgs, out),
        };
        (keys, msgs, out) = (&keys[m..], &msgs[m..], &mut std::mem::take(&mut out)[m..]);
    }
}

/// The first `M` messages of [`mac_two_blocks_fresh_keys`]; returns `M`.
#[inline(always)]
fn fresh_key_group<const M: usize, const LEN: usize>(
    cpu: impl Cpu,
    keys: &[[u8; 16]],
    msgs: &[[u8; LEN]],
    out: &mut [[u8; 16]],
) -> usize {
    let mut first: [[[u8; 16]; 2]; M] = std::array::from_fn(|j| [[0; 16], first_block(&msgs[j])]);
    let ciphers = Aes128::new_each_encrypting_on(cpu, &std::array::from_fn(|j| keys[j]), &mut first);
    let mut last: [[[u8; 16]; 1]; M] = [[[0; 16]]; M];
    for j in 0..M {
        last[j][0] = chained_last_block(cpu, &first[j][1], &first[j][0], &msgs[j]);
    }
    Aes128::encrypt_each_on(cpu, &ciphers, &mut last);
    for (o, l) in out.iter_mut().zip(&last) {
        *o = l[0];
    }
    M
}

/// The second block a two-block message (`LEN` of 17 to 32 bytes) enters AES with: the chain
/// after its first block, XORed with its last block completed by the subkey of `L = AES_K(0)`.
#[inline(always)]
fn chained_last_block<const LEN: usize>(cpu: impl Cpu, chain: &[u8; 16], l: &[u8; 16], msg: &[u8; LEN]) -> [u8; 16] {
    #[cfg(target_arch = "x86_64")]
    if cpu.aes_ni().is_some() {
        // SAFETY: an `AesNi` proves the features `chained_last_block_ni` is compiled for.
        return unsafe { chained_last_block_ni(chain, l, msg) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = cpu;
    xor(*chain, &last_block(&msg[16..], subkeys(*l)))
}

/// [`chained_last_block`] in SSE registers, without the byte swaps of `u128` arithmetic on a
/// big-endian block: L reversed into a little-endian integer, shifted by one (K1, for a
/// complete last block) or two bits (K2) in its two 64-bit halves, the bits crossing the
/// middle moved over, and those shifted out of the top reduced by a carry-less multiply by
/// `x^7 + x^2 + x + 1` (0x87: one bit out gives 0x87, two give `0x87 ⊗ 0b11` = 0x189, the
/// `dbl2` of the scalar path), which takes the same time whatever L (a secret) holds. The
/// tail is the message's final 16 bytes moved down by one byte shuffle.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
#[inline]
fn chained_last_block_ni<const LEN: usize>(chain: &[u8; 16], l: &[u8; 16], msg: &[u8; LEN]) -> [u8; 16] {
    use std::arch::x86_64::*;
    const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
    let tail = LEN - 16;
    // Byte i of the last block is byte 16 + i of the message, byte 32 − LEN + i of its final
    // 16; past the tail a set top bit makes PSHUFB write zero; the padding's 0x80 follows the
    // tail of a partial block.
    let down: [u8; 16] = std::array::from_fn(|i| if i < tail { (32 - LEN + i) as u8 } else { 0x80 });
    let pad: [u8; 16] = std::array::from_fn(|i| if i == tail { 0x80 } else { 0 });
    let mut out = [0u8; 16];
    // SAFETY: every load reads 16 bytes of a
    // 16-byte array or, at offset LEN − 16 ≥ 1, of the LEN-byte message; the store writes a
    // 16-byte array; all are unaligned-safe.
    unsafe {
        debug_assert!(LEN >= 16);
        let reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let x = _mm_shuffle_epi8(_mm_loadu_si128(l.as_ptr().cast()), reverse);
        let subkey = if tail == 16 {
            let out = _mm_srli_epi64::<63>(x);
            let red = _mm_clmulepi64_si128::<0x00>(_mm_srli_si128::<8>(out), _mm_cvtsi32_si128(0x87));
            _mm_xor_si128(_mm_xor_si128(_mm_slli_epi64::<1>(x), _mm_slli_si128::<8>(out)), red)
        } else {
            let out = _mm_srli_epi64::<62>(x);
            let red = _mm_clmulepi64_si128::<0x00>(_mm_srli_si128::<8>(out), _mm_cvtsi32_si128(0x87));
            _mm_xor_si128(_mm_xor_si128(_mm_slli_epi64::<2>(x), _mm_slli_si128::<8>(out)), red)
        };
        let last =
            _mm_shuffle_epi8(_mm_loadu_si128(msg.as_ptr().add(LEN - 16).cast()), _mm_loadu_si128(down.as_ptr().cast()));
        let block =
            _mm_xor_si128(_mm_xor_si128(last, _mm_loadu_si128(pad.as_ptr().cast())), _mm_shuffle_epi8(subkey, reverse));
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_xor_si128(block, _mm_loadu_si128(chain.as_ptr().cast())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::cmac::{Cmac, Mac};
    use proptest::prelude::*;

    fn reference(key: &[u8; 16], msg: &[u8]) -> [u8; 16] {
        let mut mac = <Cmac<::aes::Aes128> as Mac>::new(key.into());
        mac.update(msg);
        mac.finalize().into_bytes().into()
    }

    /// RFC 4493 section 4: the examples of 0, 16, 40 and 64 bytes.
    #[test]
    fn rfc4493_examples() {
        let key: [u8; 16] = hex::decode("2b7e151628aed2a6abf7158809cf4f3c").unwrap().try_into().unwrap();
        let msg = hex::decode(concat!(
            "6bc1bee22e409f96e93d7e117393172a",
            "ae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52ef",
            "f69f2445df4f9b17ad2b417be66c3710"
        ))
        .unwrap();
        let k = CmacKey::new(&key);
        for (len, want) in [
            (0, "bb1d6929e95937287fa37d129b756746"),
            (16, "070a16b46b4d4144f79bdd9dd04a287c"),
            (40, "dfa66747de9ae63030ca32611497c827"),
            (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        ] {
            assert_eq!(hex::encode(k.mac(&msg[..len])), want, "{len} bytes");
        }
    }

    /// The two-block lengths the GLWP hop key (28 bytes) and hop authenticator (18) use.
    fn check_two_blocks<const LEN: usize>(keys: &[[u8; 16]], msgs: &[[u8; LEN]]) -> Result<(), TestCaseError> {
        let mut fresh = vec![[0u8; 16]; msgs.len()];
        mac_two_blocks_fresh_keys(keys, msgs, &mut fresh);
        let mut many = vec![[0u8; 16]; msgs.len()];
        CmacKey::new(&keys[0]).mac_two_blocks_many(msgs, &mut many);
        for ((k, m), (f, y)) in keys.iter().zip(msgs).zip(fresh.iter().zip(&many)) {
            prop_assert_eq!(*f, reference(k, m));
            prop_assert_eq!(*y, reference(&keys[0], m));
        }
        Ok(())
    }

    /// [`CmacKey::mac_many`] under `keys[0]` and [`mac_each`] under `keys[i % 3]` (so that
    /// keys repeat within a group) on messages of `LEN` bytes.
    fn check_many<const LEN: usize>(keys: &[[u8; 16]], seed: u8) -> Result<(), TestCaseError> {
        let msgs: Vec<[u8; LEN]> =
            (0..keys.len()).map(|i| std::array::from_fn(|j| seed.wrapping_mul(j as u8 + 1) ^ i as u8)).collect();
        let expanded: Vec<CmacKey> = keys.iter().map(CmacKey::new).collect();
        let each_keys: Vec<&CmacKey> = (0..keys.len()).map(|i| &expanded[i % 3 % keys.len()]).collect();
        let mut each = vec![[0u8; 16]; msgs.len()];
        mac_each(&each_keys, &msgs, &mut each);
        let mut many = vec![[0u8; 16]; msgs.len()];
        expanded[0].mac_many(&msgs, &mut many);
        for (i, m) in msgs.iter().enumerate() {
            prop_assert_eq!(each[i], reference(&keys[i % 3 % keys.len()], m), "mac_each, {} bytes", LEN);
            prop_assert_eq!(many[i], reference(&keys[0], m), "mac_many, {} bytes", LEN);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn doubling_twice_in_one_step(x: u128, top in 0u128..4) {
            // Every combination of the two top bits, which the reduction depends on.
            let x = x & (u128::MAX >> 2) | top << 126;
            prop_assert_eq!(dbl2(x), dbl(dbl(x)));
        }

        #[test]
        fn mac_equals_the_cmac_crate(key: [u8; 16], msg in proptest::collection::vec(any::<u8>(), 0..100)) {
            prop_assert_eq!(CmacKey::new(&key).mac(&msg), reference(&key, &msg));
        }

        /// The lengths pathval batches (36, 37 and 53 bytes: three and four blocks), the empty
        /// message, one and two blocks, and a complete last block, under one key and under keys
        /// that repeat.
        #[test]
        fn batched_macs_of_any_length_equal_the_cmac_crate(
            keys in proptest::collection::vec(any::<[u8; 16]>(), 1..11),
            seed: u8,
        ) {
            check_many::<0>(&keys, seed)?;
            check_many::<1>(&keys, seed)?;
            check_many::<16>(&keys, seed)?;
            check_many::<37>(&keys, seed)?;
            check_many::<48>(&keys, seed)?;
            check_many::<53>(&keys, seed)?;
        }

        #[test]
        fn batched_two_block_macs_equal_the_cmac_crate(
            keys in proptest::collection::vec(any::<[u8; 16]>(), 1..11),
            seed: u8,
        ) {
            // Every byte different, so that a block taken from the wrong offset shows.
            fn msgs<const LEN: usize>(n: usize, seed: u8) -> Vec<[u8; LEN]> {
                (0..n).map(|i| std::array::from_fn(|j| seed.wrapping_add((j as u8).wrapping_mul(17)) ^ (i as u8).wrapping_mul(29))).collect()
            }
            check_two_blocks(&keys, &msgs::<18>(keys.len(), seed))?;
            check_two_blocks(&keys, &msgs::<28>(keys.len(), seed))?;
            check_two_blocks(&keys, &msgs::<32>(keys.len(), seed))?;
        }
    }
}
