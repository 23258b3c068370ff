//! The filter's keyed hash: AES-128-CMAC (RFC 4493) under the filter's secret.
//!
//! CMAC is a pseudorandom function on messages of any length: without the key, its outputs
//! cannot be told from random ones, so nobody can choose keys whose bits collide. A key of
//! up to 16 bytes costs one AES block; longer keys are compressed by CMAC's CBC chain, one
//! AES block per further 16 bytes (a 37-byte EPIC identity: three).
//!
//! Keys of up to 16 bytes (GLWP's and Hummingbird's), the per-packet case, are hashed with
//! AES-NI directly where the build enables it at compile time (x86-64, see
//! `.cargo/config.toml`): `CMAC(m) = AES_K(pad(m) ⊕ K1/K2)`, so with the subkey and the first
//! round key XORed together once at construction, a key costs its load, one XOR, ten AES
//! rounds and a byte swap into the big-endian integer a hash is; through the `aes` crate's
//! block interface it cost about four times the AES rounds (blocks copied in and out, the
//! lanes of its eight-block pipeline filled and drained). Longer keys, and every key
//! elsewhere, go through the `aes` crate (its constant-time software AES without AES-NI).
//! The tests check both against each other and against RFC 4493.
//!
//! aviary-scion has its own CMAC for per-packet MACs; it cannot serve here, as aviary-scion
//! depends on this crate.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::{Aes128Enc, Block};

use super::KeyHash;

/// Messages hashed side by side in [`SecretHash::hash_many`]: the `aes` crate interleaves
/// the rounds of 8 blocks with AES-NI, and so does [`short::ShortKeys`] (eight blocks in
/// flight and the ones being loaded fit the sixteen SSE registers; the round keys are
/// memory operands).
const LANES: usize = 8;

/// An expanded AES-128 key with CMAC's two subkeys.
#[derive(Clone)]
pub(super) struct SecretHash {
    cipher: Aes128Enc,
    k1: u128,
    k2: u128,
    #[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "sse4.1"))]
    short: short::ShortKeys,
}

impl SecretHash {
    pub(super) fn new(key: [u8; 16]) -> Self {
        let cipher = Aes128Enc::new(GenericArray::from_slice(&key));
        let mut l = Block::default();
        cipher.encrypt_block(&mut l);
        let k1 = dbl(u128::from_be_bytes(l.into()));
        let k2 = dbl(k1);
        Self {
            cipher,
            k1,
            k2,
            #[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "sse4.1"))]
            short: short::ShortKeys::new(&key, k1, k2),
        }
    }

    /// CMAC of `msg`, as a big-endian integer.
    #[inline]
    pub(super) fn hash(&self, msg: &[u8]) -> u128 {
        #[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "sse4.1"))]
        if msg.len() <= 16 {
            return self.short.hash(msg);
        }
        self.hash_chain(msg)
    }

    /// CMAC of `msg` through the `aes` crate, one block at a time.
    #[inline]
    fn hash_chain(&self, msg: &[u8]) -> u128 {
        let (body, tail) = split_tail(msg);
        let mut x = 0u128;
        for block in body.chunks_exact(16) {
            x = self.encrypt(x ^ u128::from_be_bytes(block.try_into().expect("16-byte chunk")));
        }
        self.encrypt(x ^ self.last_block(tail))
    }

    /// `out[i] = self.hash(&msgs[i])`, with the AES rounds of [`LANES`] messages interleaved:
    /// one message's CBC chain waits on every round, several keep the AES unit busy.
    #[inline(always)]
    pub(super) fn hash_many<const L: usize>(&self, msgs: &[[u8; L]], out: &mut [KeyHash]) {
        #[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "sse4.1"))]
        if L <= 16 {
            return self.short.hash_many(msgs, out);
        }
        self.hash_many_chain(msgs, out);
    }

    /// [`Self::hash_many`] through the `aes` crate.
    fn hash_many_chain<const L: usize>(&self, msgs: &[[u8; L]], out: &mut [KeyHash]) {
        // The chains stay in byte order (a block as the `u128` of its bytes as they are), so
        // that XORing a message block in swaps no bytes; only the result becomes the
        // big-endian integer a hash is.
        let bytes = |x: u128| u128::from_ne_bytes(x.to_be_bytes());
        let (k1, k2) = (bytes(self.k1), bytes(self.k2));
        let (body, _) = split_tail(&[0; L]);
        for (msgs, out) in msgs.chunks(LANES).zip(out.chunks_mut(LANES)) {
            let mut blocks = [Block::default(); LANES];
            let lanes = msgs.len().min(out.len());
            // Every block of the body, then the completed last block, for all lanes at once.
            for at in (0..body.len()).step_by(16).chain([body.len()]) {
                for (b, m) in blocks.iter_mut().zip(msgs) {
                    let input = if at == body.len() {
                        let tail = &m[at..];
                        let mut last = [0u8; 16];
                        last[..tail.len()].copy_from_slice(tail);
                        if tail.len() == 16 {
                            u128::from_ne_bytes(last) ^ k1
                        } else {
                            last[tail.len()] = 0x80;
                            u128::from_ne_bytes(last) ^ k2
                        }
                    } else {
                        u128::from_ne_bytes(m[at..at + 16].try_into().expect("16-byte block"))
                    };
                    *b = (u128::from_ne_bytes((*b).into()) ^ input).to_ne_bytes().into();
                }
                self.cipher.encrypt_blocks(&mut blocks[..lanes]);
            }
            for (o, b) in out.iter_mut().zip(&blocks[..lanes]) {
                *o = KeyHash(u128::from_be_bytes((*b).into()));
            }
        }
    }

    #[inline]
    fn encrypt(&self, x: u128) -> u128 {
        let mut b = Block::from(x.to_be_bytes());
        self.cipher.encrypt_block(&mut b);
        u128::from_be_bytes(b.into())
    }

    /// The last (possibly empty or partial) block, completed with a subkey: a full block is
    /// XORed with K1, a shorter one padded with `0x80 0x00 …` and XORed with K2.
    #[inline]
    fn last_block(&self, tail: &[u8]) -> u128 {
        let mut b = [0u8; 16];
        b[..tail.len()].copy_from_slice(tail);
        if tail.len() == 16 {
            u128::from_be_bytes(b) ^ self.k1
        } else {
            b[tail.len()] = 0x80;
            u128::from_be_bytes(b) ^ self.k2
        }
    }
}

/// The CMAC of keys of at most 16 bytes with AES-NI: one block, `AES_K(pad(m) ⊕ K1/K2)`.
#[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "sse4.1"))]
mod short {
    use std::arch::x86_64::*;

    use super::{KeyHash, LANES};

    /// The round keys 1 to 10 of the filter's key, and round key 0 already XORed with each
    /// subkey (in byte order): the whitening of a complete block (`K1`) and of a padded one
    /// (`K2`).
    #[derive(Clone, Copy)]
    pub(super) struct ShortKeys {
        rounds: [__m128i; 10],
        white_k1: __m128i,
        white_k2: __m128i,
    }

    /// One step of the AES-128 key schedule, `RCON` the round constant: run once per filter,
    /// so the plain `AESKEYGENASSIST` form.
    #[inline(always)]
    fn next_round_key<const RCON: i32>(k: __m128i) -> __m128i {
        // SAFETY: the cfg guarantees AES-NI and SSE2.
        unsafe {
            // SubWord(RotWord(w3)) ⊕ Rcon in every lane, XORed into the prefix XORs of the words.
            let t = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<RCON>(k));
            let mut k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
            k = _mm_xor_si128(k, _mm_slli_si128::<8>(k));
            _mm_xor_si128(k, t)
        }
    }

    impl ShortKeys {
        pub(super) fn new(key: &[u8; 16], k1: u128, k2: u128) -> Self {
            // SAFETY: the cfg guarantees SSE2; the load is unaligned-safe from a 16-byte array.
            let k0 = unsafe { _mm_loadu_si128(key.as_ptr().cast()) };
            let mut r = [k0; 11];
            r[1] = next_round_key::<0x01>(r[0]);
            r[2] = next_round_key::<0x02>(r[1]);
            r[3] = next_round_key::<0x04>(r[2]);
            r[4] = next_round_key::<0x08>(r[3]);
            r[5] = next_round_key::<0x10>(r[4]);
            r[6] = next_round_key::<0x20>(r[5]);
            r[7] = next_round_key::<0x40>(r[6]);
            r[8] = next_round_key::<0x80>(r[7]);
            r[9] = next_round_key::<0x1b>(r[8]);
            r[10] = next_round_key::<0x36>(r[9]);
            // A subkey as the block of its big-endian bytes, XORed with round key 0.
            // SAFETY: the cfg guarantees SSE2; the loads are unaligned-safe from 16-byte arrays.
            let white = |k: u128| unsafe { _mm_xor_si128(_mm_loadu_si128(k.to_be_bytes().as_ptr().cast()), k0) };
            Self { rounds: std::array::from_fn(|i| r[i + 1]), white_k1: white(k1), white_k2: white(k2) }
        }

        /// The block a key of `msg.len() ≤ 16` bytes enters the rounds as: padded (unless
        /// complete), XORed with its subkey and round key 0.
        #[inline(always)]
        fn first_state(&self, msg: &[u8]) -> __m128i {
            debug_assert!(msg.len() <= 16);
            let mut b = [0u8; 16];
            b[..msg.len()].copy_from_slice(msg);
            let white = if msg.len() == 16 {
                self.white_k1
            } else {
                b[msg.len()] = 0x80;
                self.white_k2
            };
            // SAFETY: the cfg guarantees SSE2; the load is unaligned-safe from a 16-byte array.
            unsafe { _mm_xor_si128(_mm_loadu_si128(b.as_ptr().cast()), white) }
        }

        /// The state after the ten rounds, as the big-endian integer of its bytes.
        #[inline(always)]
        fn finish(x: __m128i) -> KeyHash {
            // SAFETY: the cfg guarantees SSSE3 and SSE4.1.
            unsafe {
                // Reversed, the block's first byte is the integer's most significant one.
                let reversed = _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
                let lo = _mm_cvtsi128_si64(reversed) as u64;
                let hi = _mm_extract_epi64::<1>(reversed) as u64;
                KeyHash(u128::from(hi) << 64 | u128::from(lo))
            }
        }

        /// CMAC of `msg` (at most 16 bytes), as a big-endian integer.
        #[inline]
        pub(super) fn hash(&self, msg: &[u8]) -> u128 {
            let mut x = self.first_state(msg);
            // SAFETY: the cfg guarantees AES-NI.
            unsafe {
                for rk in &self.rounds[..9] {
                    x = _mm_aesenc_si128(x, *rk);
                }
                x = _mm_aesenclast_si128(x, self.rounds[9]);
            }
            Self::finish(x).0
        }

        /// `out[i] = self.hash(&msgs[i])` for keys of `L ≤ 16` bytes, [`LANES`] at a time with
        /// their rounds interleaved; a last group of fewer keys runs as many lanes as it has.
        #[inline(always)]
        pub(super) fn hash_many<const L: usize>(&self, msgs: &[[u8; L]], out: &mut [KeyHash]) {
            // Both cut to the keys' count, so that their remainders are the same keys'.
            let n = msgs.len().min(out.len());
            let mut msgs = msgs[..n].chunks_exact(LANES);
            let mut outs = out[..n].chunks_exact_mut(LANES);
            for (m, o) in (&mut msgs).zip(&mut outs) {
                self.lanes::<LANES, L>(m, o);
            }
            // The last group runs all lanes, the missing keys' on a zero block, unstored.
            self.lanes::<LANES, L>(msgs.remainder(), outs.into_remainder());
        }

        /// The first `M` keys of `msgs` (as many as both slices hold) hashed into `out`, their
        /// rounds interleaved.
        #[inline(always)]
        fn lanes<const M: usize, const L: usize>(&self, msgs: &[[u8; L]], out: &mut [KeyHash]) {
            let n = msgs.len().min(out.len()).min(M);
            // SAFETY: the cfg guarantees AES-NI and SSE2.
            unsafe {
                let mut x = [_mm_setzero_si128(); M];
                for (x, m) in x.iter_mut().zip(&msgs[..n]) {
                    *x = self.first_state(m);
                }
                for rk in &self.rounds[..9] {
                    for x in x.iter_mut() {
                        *x = _mm_aesenc_si128(*x, *rk);
                    }
                }
                for (o, x) in out[..n].iter_mut().zip(x) {
                    *o = Self::finish(_mm_aesenclast_si128(x, self.rounds[9]));
                }
            }
        }
    }
}

/// `msg` as the blocks that go through the CBC chain as they are and the last block, of 0
/// (empty message only) to 16 bytes.
#[inline]
fn split_tail(msg: &[u8]) -> (&[u8], &[u8]) {
    let tail_len = if msg.is_empty() { 0 } else { (msg.len() - 1) % 16 + 1 };
    msg.split_at(msg.len() - tail_len)
}

/// `dbl()` of RFC 4493: multiplication by x in GF(2^128) mod x^128 + x^7 + x^2 + x + 1.
fn dbl(x: u128) -> u128 {
    (x << 1) ^ if x >> 127 == 1 { 0x87 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// RFC 4493 §4, examples 1 to 4.
    #[test]
    fn rfc4493_vectors() {
        let key: [u8; 16] = unhex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
        let h = SecretHash::new(key);
        let msg = unhex(concat!(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
        ));
        for (len, tag) in [
            (0, "bb1d6929e95937287fa37d129b756746"),
            (16, "070a16b46b4d4144f79bdd9dd04a287c"),
            (40, "dfa66747de9ae63030ca32611497c827"),
            (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        ] {
            assert_eq!(h.hash(&msg[..len]).to_be_bytes().to_vec(), unhex(tag), "{len} bytes");
            assert_eq!(h.hash_chain(&msg[..len]).to_be_bytes().to_vec(), unhex(tag), "{len} bytes, aes crate");
        }
    }

    proptest! {
        /// The interleaved batch hashes each message as the one-at-a-time path does, for
        /// lengths with and without a partial last block and batches of any size.
        #[test]
        fn the_batch_hashes_as_one_at_a_time(
            key: [u8; 16],
            short in prop::collection::vec(any::<[u8; 16]>(), 0..20),
            long in prop::collection::vec(any::<[u8; 37]>(), 0..20),
        ) {
            let h = SecretHash::new(key);
            let mut out = vec![KeyHash(7); 20];
            h.hash_many(&short, &mut out);
            for (m, o) in short.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash(m));
            }
            // Hashes beyond the batch are left alone.
            prop_assert!(out[short.len().min(20)..].iter().all(|o| *o == KeyHash(7)));
            h.hash_many(&long, &mut out);
            for (m, o) in long.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash(m));
            }
        }

        /// Keys of up to 16 bytes (AES-NI's one-block path, where the build has it) hash as
        /// the `aes` crate's CBC chain does, one at a time and in batches of any size, with a
        /// complete, a partial and an empty block.
        #[test]
        fn short_keys_hash_as_the_aes_crate(
            key: [u8; 16],
            full in prop::collection::vec(any::<[u8; 16]>(), 0..20),
            len in 0usize..16,
        ) {
            let h = SecretHash::new(key);
            for m in &full {
                prop_assert_eq!(h.hash(m), h.hash_chain(m));
                prop_assert_eq!(h.hash(&m[..len]), h.hash_chain(&m[..len]));
            }
            let mut out = vec![KeyHash(7); 21];
            h.hash_many(&full, &mut out);
            for (m, o) in full.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash_chain(m));
            }
            prop_assert!(out[full.len()..].iter().all(|o| *o == KeyHash(7)));
            let partial: Vec<[u8; 5]> = full.iter().map(|m| m[..5].try_into().unwrap()).collect();
            h.hash_many(&partial, &mut out);
            for (m, o) in partial.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash_chain(m));
            }
            let empty = vec![[0u8; 0]; full.len()];
            h.hash_many(&empty, &mut out);
            for o in &out[..full.len()] {
                prop_assert_eq!(o.0, h.hash_chain(&[]));
            }
        }
    }
}
