//! The filter's keyed hash: AES-128-CMAC (RFC 4493) under the filter's secret.
//!
//! CMAC is a pseudorandom function on messages of any length: without the key, its outputs
//! cannot be told from random ones, so nobody can choose keys whose bits collide. A key of
//! up to 16 bytes costs one AES block; longer keys are compressed by CMAC's CBC chain, one
//! AES block per further 16 bytes (a 37-byte EPIC identity: three).
//!
//! Keys of up to 16 bytes (GLWP's and Hummingbird's) are the per-packet case: `CMAC(m) =
//! AES_K(pad(m) ⊕ K1/K2)`, so the filter keeps the cipher twice, each with its subkey folded
//! into the first round key ([`Aes128::whitened`]), and a key costs its padding and the ten
//! rounds. A batch of them goes through [`Aes128::encrypt_many`], which interleaves the rounds
//! and takes four blocks to an instruction where the CPU has VAES. Longer keys go through
//! [`CmacKey`]. AES and CMAC are aviary-aes's, shared with every mechanism's MACs.

use aviary_aes::aes::Aes128;
use aviary_aes::cmac::{dbl, CmacKey};
use aviary_aes::cpu::Cpu;

use super::KeyHash;

/// Short keys hashed per call of [`Aes128::encrypt_many`] in [`SecretHash::hash_many`]: a
/// router's batch.
const CHUNK: usize = 32;

/// The filter's CMAC key, and its cipher whitened for the two kinds of one-block message.
#[derive(Clone)]
pub(super) struct SecretHash {
    key: CmacKey,
    /// `x ↦ AES_K(x ⊕ K1)`: a complete 16-byte key.
    complete: Aes128,
    /// `x ↦ AES_K(x ⊕ K2)`: a shorter key, padded.
    partial: Aes128,
}

impl SecretHash {
    pub(super) fn new(key: [u8; 16]) -> Self {
        let cipher = Aes128::new(&key);
        let k1 = dbl(u128::from_be_bytes(cipher.encrypt(&[0; 16])));
        let k2 = dbl(k1);
        Self {
            key: CmacKey::new(&key),
            complete: cipher.whitened(&k1.to_be_bytes()),
            partial: cipher.whitened(&k2.to_be_bytes()),
        }
    }

    /// CMAC of `msg`, as a big-endian integer, on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub(super) fn hash_on(&self, cpu: impl Cpu, msg: &[u8]) -> u128 {
        if msg.len() <= 16 {
            return u128::from_be_bytes(self.short_cipher(msg.len()).encrypt_on(cpu, &padded(msg)));
        }
        u128::from_be_bytes(self.key.mac_on(cpu, msg))
    }

    /// `out[i] = self.hash(&msgs[i])`, with the AES rounds of several messages interleaved:
    /// one message's CBC chain waits on every round, several keep the AES unit busy.
    #[inline(always)]
    pub(super) fn hash_many_on<const L: usize>(&self, cpu: impl Cpu, msgs: &[[u8; L]], out: &mut [KeyHash]) {
        let n = msgs.len().min(out.len());
        let mut blocks = [[0u8; 16]; CHUNK];
        for (msgs, out) in msgs[..n].chunks(CHUNK).zip(out[..n].chunks_mut(CHUNK)) {
            let blocks = &mut blocks[..msgs.len()];
            if L <= 16 {
                for (b, m) in blocks.iter_mut().zip(msgs) {
                    *b = padded(m);
                }
                self.short_cipher(L).encrypt_many_on(cpu, blocks);
            } else {
                self.key.mac_many_on(cpu, msgs, blocks);
            }
            for (o, b) in out.iter_mut().zip(blocks.iter()) {
                *o = KeyHash(u128::from_be_bytes(*b));
            }
        }
    }

    /// The whitened cipher of a message of `len ≤ 16` bytes.
    #[inline(always)]
    fn short_cipher(&self, len: usize) -> &Aes128 {
        if len == 16 {
            &self.complete
        } else {
            &self.partial
        }
    }
}

/// A message of at most 16 bytes as CMAC's last block before the subkey: as it is when
/// complete, else followed by `0x80 0x00 …`.
#[inline(always)]
fn padded(msg: &[u8]) -> [u8; 16] {
    debug_assert!(msg.len() <= 16);
    let mut b = [0u8; 16];
    b[..msg.len()].copy_from_slice(msg);
    if msg.len() < 16 {
        b[msg.len()] = 0x80;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_aes::cpu::Detect;
    use proptest::prelude::*;

    fn cmac(h: &SecretHash, msg: &[u8]) -> u128 {
        u128::from_be_bytes(h.key.mac(msg))
    }

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
            assert_eq!(h.hash_on(Detect, &msg[..len]).to_be_bytes().to_vec(), unhex(tag), "{len} bytes");
            assert_eq!(h.key.mac(&msg[..len]).to_vec(), unhex(tag), "{len} bytes, CmacKey");
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
            h.hash_many_on(Detect, &short, &mut out);
            for (m, o) in short.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash_on(Detect, m));
            }
            // Hashes beyond the batch are left alone.
            prop_assert!(out[short.len().min(20)..].iter().all(|o| *o == KeyHash(7)));
            h.hash_many_on(Detect, &long, &mut out);
            for (m, o) in long.iter().zip(&out) {
                prop_assert_eq!(o.0, h.hash_on(Detect, m));
            }
        }

        /// Keys of up to 16 bytes (the whitened one-block path) hash as CMAC's general path
        /// does, one at a time and in batches of any size, with a complete, a partial and an
        /// empty block.
        #[test]
        fn short_keys_hash_as_the_general_cmac(
            key: [u8; 16],
            full in prop::collection::vec(any::<[u8; 16]>(), 0..20),
            len in 0usize..16,
        ) {
            let h = SecretHash::new(key);
            for m in &full {
                prop_assert_eq!(h.hash_on(Detect, m), cmac(&h, m));
                prop_assert_eq!(h.hash_on(Detect, &m[..len]), cmac(&h, &m[..len]));
            }
            let mut out = vec![KeyHash(7); 21];
            h.hash_many_on(Detect, &full, &mut out);
            for (m, o) in full.iter().zip(&out) {
                prop_assert_eq!(o.0, cmac(&h, m));
            }
            prop_assert!(out[full.len()..].iter().all(|o| *o == KeyHash(7)));
            let partial: Vec<[u8; 5]> = full.iter().map(|m| m[..5].try_into().unwrap()).collect();
            h.hash_many_on(Detect, &partial, &mut out);
            for (m, o) in partial.iter().zip(&out) {
                prop_assert_eq!(o.0, cmac(&h, m));
            }
            let empty = vec![[0u8; 0]; full.len()];
            h.hash_many_on(Detect, &empty, &mut out);
            for o in &out[..full.len()] {
                prop_assert_eq!(o.0, cmac(&h, &[]));
            }
        }
    }
}
