//! The filter's keyed hash: AES-128-CMAC (RFC 4493) under the filter's secret.
//!
//! CMAC is a pseudorandom function on messages of any length: without the key, its outputs
//! cannot be told from random ones, so nobody can choose keys whose bits collide. A key of
//! up to 16 bytes costs one AES block; longer keys are compressed by CMAC's CBC chain, one
//! AES block per further 16 bytes (a 37-byte EPIC identity: three). The AES comes from the
//! `aes` crate, which this workspace builds with AES-NI enabled at compile time on x86-64
//! (see `.cargo/config.toml`); elsewhere it is the crate's constant-time software AES.
//!
//! aviary-scion has its own CMAC for per-packet MACs; it cannot serve here, as aviary-scion
//! depends on this crate.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::{Aes128Enc, Block};

use super::KeyHash;

/// Messages hashed side by side in [`SecretHash::hash_many`]: the `aes` crate interleaves
/// the rounds of 8 blocks with AES-NI.
const LANES: usize = 8;

/// An expanded AES-128 key with CMAC's two subkeys.
#[derive(Clone)]
pub(super) struct SecretHash {
    cipher: Aes128Enc,
    k1: u128,
    k2: u128,
}

impl SecretHash {
    pub(super) fn new(key: [u8; 16]) -> Self {
        let cipher = Aes128Enc::new(GenericArray::from_slice(&key));
        let mut l = Block::default();
        cipher.encrypt_block(&mut l);
        let k1 = dbl(u128::from_be_bytes(l.into()));
        Self { cipher, k1, k2: dbl(k1) }
    }

    /// CMAC of `msg`, as a big-endian integer.
    #[inline]
    pub(super) fn hash(&self, msg: &[u8]) -> u128 {
        let (body, tail) = split_tail(msg);
        let mut x = 0u128;
        for block in body.chunks_exact(16) {
            x = self.encrypt(x ^ u128::from_be_bytes(block.try_into().expect("16-byte chunk")));
        }
        self.encrypt(x ^ self.last_block(tail))
    }

    /// `out[i] = self.hash(&msgs[i])`, with the AES rounds of [`LANES`] messages interleaved:
    /// one message's CBC chain waits on every round, several keep the AES unit busy.
    pub(super) fn hash_many<const L: usize>(&self, msgs: &[[u8; L]], out: &mut [KeyHash]) {
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
    }
}
