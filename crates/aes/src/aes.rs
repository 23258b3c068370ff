//! AES-128 encryption of single blocks with a fast key schedule.
//!
//! Hummingbird routers expand a fresh key (A_K) for every flyover packet, so the key
//! schedule is on the per-packet path. On x86-64 with AES-NI enabled at compile time this
//! module expands keys with `AESENCLAST` (the byte shuffle + SubWord trick), which avoids
//! the slow `AESKEYGENASSIST` chain, and expands several keys four at a time with their
//! words transposed (one `AESENCLAST` and four XORs a round for all four); elsewhere it uses
//! the RustCrypto `aes` crate. Both
//! are checked against each other and against FIPS-197 in the tests.

#[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "ssse3"))]
pub(crate) mod wide;

#[cfg(all(target_arch = "x86_64", target_feature = "aes", target_feature = "ssse3"))]
#[path = "aes/ni.rs"]
mod imp;

#[cfg(not(all(target_arch = "x86_64", target_feature = "aes", target_feature = "ssse3")))]
#[path = "aes/soft.rs"]
mod imp;

pub use imp::Aes128;

impl std::fmt::Debug for Aes128 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Aes128(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
    use proptest::prelude::*;

    #[test]
    fn fips197_appendix_c1() {
        let key: [u8; 16] = hex::decode("000102030405060708090a0b0c0d0e0f").unwrap().try_into().unwrap();
        let pt: [u8; 16] = hex::decode("00112233445566778899aabbccddeeff").unwrap().try_into().unwrap();
        assert_eq!(hex::encode(Aes128::new(&key).encrypt(&pt)), "69c4e0d86a7b0430d8cdb78070b4c55a");
    }

    /// [`Aes128::new_each`] for `M` keys against [`Aes128::new`] of each: the same cipher.
    fn check_new_each<const M: usize>(keys: &[[u8; 16]; 5], block: &[u8; 16]) -> Result<(), TestCaseError> {
        let keys: [[u8; 16]; M] = std::array::from_fn(|j| keys[j]);
        for (k, c) in keys.iter().zip(Aes128::new_each(&keys)) {
            prop_assert_eq!(c.encrypt(block), Aes128::new(k).encrypt(block));
        }
        Ok(())
    }

    #[test]
    fn fips197_appendix_c1_four_keys_at_once() {
        let key: [u8; 16] = hex::decode("000102030405060708090a0b0c0d0e0f").unwrap().try_into().unwrap();
        let pt: [u8; 16] = hex::decode("00112233445566778899aabbccddeeff").unwrap().try_into().unwrap();
        for (j, c) in Aes128::new_each(&[[0xa5; 16], key, [0; 16], key]).iter().enumerate() {
            if j % 2 == 1 {
                assert_eq!(hex::encode(c.encrypt(&pt)), "69c4e0d86a7b0430d8cdb78070b4c55a", "key {j}");
            }
        }
    }

    /// [`Aes128::new_each_encrypting`] of `M` keys and `B` blocks each: the ciphers of
    /// [`Aes128::new`], and the blocks encrypted under them.
    fn check_new_each_encrypting<const M: usize, const B: usize>(
        keys: &[[u8; 16]; 5],
        block: &[u8; 16],
    ) -> Result<(), TestCaseError> {
        let keys: [[u8; 16]; M] = std::array::from_fn(|j| keys[j]);
        let mut blocks: [[[u8; 16]; B]; M] =
            std::array::from_fn(|j| std::array::from_fn(|b| block.map(|x| x ^ (16 * j + b) as u8)));
        let plain = blocks;
        let ciphers = Aes128::new_each_encrypting(&keys, &mut blocks);
        for j in 0..M {
            let alone = Aes128::new(&keys[j]);
            prop_assert_eq!(ciphers[j].encrypt(block), alone.encrypt(block));
            for b in 0..B {
                prop_assert_eq!(blocks[j][b], alone.encrypt(&plain[j][b]), "key {}, block {}", j, b);
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn keys_expanded_while_encrypting_equal_keys_expanded_alone(keys: [[u8; 16]; 5], block: [u8; 16]) {
            check_new_each_encrypting::<1, 2>(&keys, &block)?;
            check_new_each_encrypting::<2, 1>(&keys, &block)?;
            check_new_each_encrypting::<3, 2>(&keys, &block)?;
            check_new_each_encrypting::<4, 2>(&keys, &block)?;
            check_new_each_encrypting::<4, 3>(&keys, &block)?;
        }

        #[test]
        fn keys_expanded_together_equal_keys_expanded_alone(keys: [[u8; 16]; 5], block: [u8; 16]) {
            check_new_each::<1>(&keys, &block)?;
            check_new_each::<2>(&keys, &block)?;
            check_new_each::<3>(&keys, &block)?;
            check_new_each::<4>(&keys, &block)?;
            check_new_each::<5>(&keys, &block)?;
        }

        /// [`Aes128::fresh_key_chain_beside`] is the chain and the second block computed one
        /// after the other, with and without a feed (any bytes of the chain's result, moved
        /// anywhere, with the mix).
        #[test]
        fn chain_beside_is_the_chain_then_the_block(
            keys: [[u8; 16]; 2],
            key_in: [u8; 16],
            block: [u8; 16],
            other_in: [u8; 16],
            feed in proptest::option::of((any::<[u8; 16]>(), any::<[u8; 16]>())),
        ) {
            let (first, other) = (Aes128::new(&keys[0]), Aes128::new(&keys[1]));
            let y = Aes128::new(&first.encrypt(&key_in)).encrypt(&block);
            let mut z = other_in;
            if let Some((feed, mix)) = &feed {
                for (z, &f) in z.iter_mut().zip(feed) {
                    if f & 0x80 == 0 {
                        *z ^= y[usize::from(f & 0x0f)] ^ mix[usize::from(f & 0x0f)];
                    }
                }
            }
            let fed = feed.as_ref().map(|(f, m)| (f, m));
            prop_assert_eq!(first.fresh_key_chain_beside(&key_in, &block, &other, &other_in, fed), (y, other.encrypt(&z)));
        }

        #[test]
        fn matches_rustcrypto(key: [u8; 16], blocks in proptest::collection::vec(any::<[u8; 16]>(), 0..11)) {
            let reference = aes::Aes128Enc::new(GenericArray::from_slice(&key));
            let ours = Aes128::new(&key);
            let mut many = blocks.clone();
            ours.encrypt_many(&mut many);
            let keys: Vec<[u8; 16]> = blocks.iter().map(|b| { let mut k = *b; k[0] ^= key[0]; k }).collect();
            let mut fresh = blocks.clone();
            Aes128::encrypt_fresh_keys(&keys, &mut fresh);
            for ((k, b), f) in keys.iter().zip(&blocks).zip(&fresh) {
                prop_assert_eq!(*f, Aes128::new(k).encrypt(b));
            }
            let mut pairs: [[[u8; 16]; 2]; 3] = [[[0; 16]; 2]; 3];
            let mut three = [[0u8; 16]; 3];
            for (j, t) in three.iter_mut().enumerate() {
                *t = [key[j] ^ j as u8; 16];
                pairs[j] = [*t, [t[0].wrapping_add(1); 16]];
            }
            let ciphers = Aes128::new_each(&three);
            Aes128::encrypt_each(&ciphers, &mut pairs);
            for (k, pair) in three.iter().zip(&pairs) {
                prop_assert_eq!(pair[0], Aes128::new(k).encrypt(k));
                prop_assert_eq!(pair[1], Aes128::new(k).encrypt(&[k[0].wrapping_add(1); 16]));
            }
            for (b, m) in blocks.iter().zip(&many) {
                let mut r = GenericArray::from(*b);
                reference.encrypt_block(&mut r);
                prop_assert_eq!(ours.encrypt(b), <[u8; 16]>::from(r));
                prop_assert_eq!(*m, <[u8; 16]>::from(r));
            }
        }
    }
}
