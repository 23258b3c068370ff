//! AES-128 encryption of single blocks with a fast key schedule.
//!
//! Hummingbird routers expand a fresh key (A_K) for every flyover packet, so the key
//! schedule is on the per-packet path. With AES-NI ([`ni`]) keys expand with `AESENCLAST` (the
//! byte shuffle + SubWord trick), which avoids the slow `AESKEYGENASSIST` chain, and several
//! keys expand four at a time with their words transposed (one `AESENCLAST` and four XORs a
//! round for all four); batches of four blocks or more go to [`wide`] where the CPU has VAES
//! with AVX-512. Without AES-NI, [`soft`] runs the same schedule and rounds on RustCrypto's
//! constant-time AES rounds. Which one runs is chosen at run time ([`crate::cpu`]); all are
//! checked against RustCrypto's AES and FIPS-197 in the tests (CI runs them at every level).

#[cfg(target_arch = "x86_64")]
mod ni;
mod soft;
#[cfg(target_arch = "x86_64")]
pub(crate) mod wide;

use crate::cpu::{Cpu, Detect};

/// An input block of a cipher and its encryption under that cipher, `[input, output]`, kept so
/// that the same input need not go through the rounds again ([`Aes128::chain_recalling_on`]).
pub type Recall = [[u8; 16]; 2];

/// What a chain with a second block beside it computed: the chain's result `y`, the second
/// block `z` and that block's input `z_in` (its feed applied), from which a [`Recall`] of `z`
/// is made; `recalled` if `z` was recalled rather than computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chained {
    pub y: [u8; 16],
    pub z: [u8; 16],
    pub z_in: [u8; 16],
    pub recalled: bool,
}

/// Expanded AES-128 encryption key: 11 round keys, aligned for vector loads.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Aes128 {
    rk: [[u8; 16]; 11],
}

/// `ni::$f(args)` where `cpu` (a [`Cpu`]) says the CPU has AES-NI, else `soft::$f(args)`: an
/// expression, so that a caller can use the result before returning it.
#[cfg(target_arch = "x86_64")]
macro_rules! dispatch {
    ($cpu:expr, $f:ident($($arg:expr),*)) => {{
        if $cpu.aes_ni().is_some() {
            // SAFETY: an `AesNi` exists only where the CPU has the features `ni` is compiled
            // for (`cpu::AES_NI_FEATURES`).
            unsafe { ni::$f($($arg),*) }
        } else {
            soft::$f($($arg),*)
        }
    }};
}

/// `soft::$f(args)`: no other code for this target.
#[cfg(not(target_arch = "x86_64"))]
macro_rules! dispatch {
    ($cpu:expr, $f:ident($($arg:expr),*)) => {{
        let _ = $cpu;
        soft::$f($($arg),*)
    }};
}

impl Aes128 {
    #[inline]
    pub fn new(key: &[u8; 16]) -> Self {
        Self::new_on(Detect, key)
    }

    /// [`Self::new`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn new_on(cpu: impl Cpu, key: &[u8; 16]) -> Self {
        dispatch!(cpu, new(key))
    }

    /// [`Aes128::new`] of `M` keys (with AES-NI four at a time, their words transposed).
    #[inline]
    pub fn new_each<const M: usize>(keys: &[[u8; 16]; M]) -> [Self; M] {
        Self::new_each_on::<M>(Detect, keys)
    }

    /// [`Self::new_each`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn new_each_on<const M: usize>(cpu: impl Cpu, keys: &[[u8; 16]; M]) -> [Self; M] {
        dispatch!(cpu, new_each(keys))
    }

    /// The cipher `x ↦ AES(x ⊕ white)`: `white` folded into the first round key, where
    /// the block is XORed anyway.
    pub fn whitened(&self, white: &[u8; 16]) -> Self {
        let mut c = *self;
        c.rk[0] = crate::xor(c.rk[0], white);
        c
    }

    #[inline]
    pub fn encrypt(&self, block: &[u8; 16]) -> [u8; 16] {
        self.encrypt_on(Detect, block)
    }

    /// [`Self::encrypt`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn encrypt_on(&self, cpu: impl Cpu, block: &[u8; 16]) -> [u8; 16] {
        dispatch!(cpu, encrypt(self, block))
    }

    /// Encrypts several blocks under this key with their rounds interleaved: four blocks
    /// to an instruction where the CPU has VAES with AVX-512, from four blocks on.
    #[inline]
    pub fn encrypt_many(&self, blocks: &mut [[u8; 16]]) {
        self.encrypt_many_on(Detect, blocks)
    }

    /// [`Self::encrypt_many`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn encrypt_many_on(&self, cpu: impl Cpu, blocks: &mut [[u8; 16]]) {
        dispatch!(cpu, encrypt_many(self, blocks))
    }

    /// [`Aes128::new_each`] of `M ≤ 4` keys that also encrypts `B` blocks under each key
    /// (`blocks[j][k] = AES_{keys[j]}(blocks[j][k])`) while expanding it: each round key goes
    /// into the blocks' round as it is made, so the schedule is written to memory once (for
    /// later blocks) and never read back for these.
    #[inline]
    pub fn new_each_encrypting<const M: usize, const B: usize>(
        keys: &[[u8; 16]; M],
        blocks: &mut [[[u8; 16]; B]; M],
    ) -> [Self; M] {
        Self::new_each_encrypting_on::<M, B>(Detect, keys, blocks)
    }

    /// [`Self::new_each_encrypting`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn new_each_encrypting_on<const M: usize, const B: usize>(
        cpu: impl Cpu,
        keys: &[[u8; 16]; M],
        blocks: &mut [[[u8; 16]; B]; M],
    ) -> [Self; M] {
        const { assert!(M >= 1 && M <= 4, "one to four keys") };
        dispatch!(cpu, new_each_encrypting(keys, blocks))
    }

    /// `out[i] = AES(AES(m[..16]) ⊕ pad(m[16..]) ⊕ tweak)` for messages `m` of `LEN` bytes,
    /// 17 to 32: the CBC chain of a two-block message whose last block is completed by
    /// `tweak` (CMAC's subkey, with the padding's `0x80` for a partial block). The messages'
    /// rounds interleave.
    #[inline]
    pub fn cbc_two_blocks_many<const LEN: usize>(&self, msgs: &[[u8; LEN]], tweak: &[u8; 16], out: &mut [[u8; 16]]) {
        self.cbc_two_blocks_many_on::<LEN>(Detect, msgs, tweak, out)
    }

    /// [`Self::cbc_two_blocks_many`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn cbc_two_blocks_many_on<const LEN: usize>(
        &self,
        cpu: impl Cpu,
        msgs: &[[u8; LEN]],
        tweak: &[u8; 16],
        out: &mut [[u8; 16]],
    ) {
        const { assert!(LEN > 16 && LEN <= 32, "two-block messages are 17 to 32 bytes") };
        dispatch!(cpu, cbc_two_blocks_many(self, msgs, tweak, out))
    }

    /// `blocks[i][j] = AES_{ciphers[i]}(blocks[i][j])`: `B` blocks under each of `M` keys,
    /// the rounds of all `M × B` blocks interleaved (keep `M × B` within the 16 vector
    /// registers, with room for round keys).
    #[inline]
    pub fn encrypt_each<const M: usize, const B: usize>(ciphers: &[Aes128; M], blocks: &mut [[[u8; 16]; B]; M]) {
        Self::encrypt_each_on::<M, B>(Detect, ciphers, blocks)
    }

    /// [`Self::encrypt_each`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn encrypt_each_on<const M: usize, const B: usize>(
        cpu: impl Cpu,
        ciphers: &[Aes128; M],
        blocks: &mut [[[u8; 16]; B]; M],
    ) {
        dispatch!(cpu, encrypt_each(ciphers, blocks))
    }

    /// A single flyover's chain, and one block under another key beside it, in one
    /// function so that the core runs whatever of the two can run at once: `y =
    /// AES_{AES_self(key_in)}(block)` (A_K under the SV, then the FlyoverMAC under A_K
    /// expanded on the fly) and `z = AES_other(other_in ⊕ feed(y ⊕ mix))`, where `feed` maps
    /// bytes into the block as a PSHUFB control does (byte `i` takes byte `feed[i]`, zero
    /// where its top bit is set). Without `feed` the second block does not wait for `y`.
    /// Returns `(y, z)`.
    #[inline]
    pub fn fresh_key_chain_beside(
        &self,
        key_in: &[u8; 16],
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        self.fresh_key_chain_beside_on(Detect, key_in, block, other, other_in, feed)
    }

    /// [`Self::fresh_key_chain_beside`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn fresh_key_chain_beside_on(
        &self,
        cpu: impl Cpu,
        key_in: &[u8; 16],
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        let c = dispatch!(cpu, fresh_key_chain_beside(self, key_in, block, other, other_in, feed, None));
        (c.y, c.z)
    }

    /// [`Self::fresh_key_chain_beside_on`] that also leaves the chain's key, `AES_self(key_in)`,
    /// expanded in `keep`: its round keys are stored as they are made, off the chain. Returns
    /// the second block's input as well.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn fresh_key_chain_beside_keeping_on(
        &self,
        cpu: impl Cpu,
        key_in: &[u8; 16],
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
        keep: &mut Aes128,
    ) -> Chained {
        dispatch!(cpu, fresh_key_chain_beside(self, key_in, block, other, other_in, feed, Some(keep)))
    }

    /// [`Self::fresh_key_chain_beside`] with the chain's key at hand: `y = AES_self(block)` and
    /// `z = AES_other(other_in ⊕ feed(y ⊕ mix))`, in one function so that the core runs
    /// whatever of the two can run at once (without `feed`, both). Returns `(y, z)`.
    #[inline]
    pub fn chain_beside(
        &self,
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        self.chain_beside_on(Detect, block, other, other_in, feed)
    }

    /// [`Self::chain_beside`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn chain_beside_on(
        &self,
        cpu: impl Cpu,
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        let c = dispatch!(cpu, chain_beside(self, block, other, other_in, feed, None));
        (c.y, c.z)
    }

    /// [`Self::chain_beside_on`] with a `feed`, where `z`'s input may be one whose encryption
    /// under `other` is known: if `z_in` (`other_in ⊕ feed(y ⊕ mix)`) is `recall`'s input and
    /// `y ⊕ mix` equals `recall`'s output in the bytes `agree` sets, `z` is `recall`'s output
    /// and the second block's rounds, which would follow the chain's, are not run. Exact only if
    /// `recall` was made under `other` (the caller keeps it so). The second condition lets a
    /// caller that verifies `y ⊕ mix` against `z` skip the rounds only for what verifies: the
    /// time taken then says no more than the verdict.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn chain_recalling_on(
        &self,
        cpu: impl Cpu,
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: (&[u8; 16], &[u8; 16]),
        recall: &Recall,
        agree: &[u8; 16],
    ) -> Chained {
        dispatch!(cpu, chain_beside(self, block, other, other_in, Some(feed), Some((recall, agree))))
    }

    /// `blocks[i] = AES_{keys[i]}(blocks[i])`, expanding each key on the fly (with AES-NI four
    /// keys at a time with their words transposed; from four keys on, where the CPU has VAES
    /// with AVX-512, four keys in one register); no schedule is kept.
    #[inline]
    pub fn encrypt_fresh_keys(keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
        Self::encrypt_fresh_keys_on(Detect, keys, blocks)
    }

    /// [`Self::encrypt_fresh_keys`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn encrypt_fresh_keys_on(cpu: impl Cpu, keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
        dispatch!(cpu, encrypt_fresh_keys(keys, blocks))
    }
}

/// Equal ciphers have equal keys: every way of expanding a key here gives FIPS-197's schedule,
/// from which the key follows (even with the first round key whitened, the second determines
/// it). Every byte is compared, whatever differs first, so that the time taken tells nothing
/// of the keys.
impl PartialEq for Aes128 {
    fn eq(&self, other: &Self) -> bool {
        let diff = self.rk.iter().flatten().zip(other.rk.iter().flatten()).fold(0u8, |d, (a, b)| d | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

impl Eq for Aes128 {}

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
    fn ciphers_are_equal_exactly_when_their_keys_are_however_expanded() {
        let keys = [[1u8; 16], [2; 16], [1; 16], [3; 16]];
        let each = Aes128::new_each(&keys);
        assert!(each[0] == each[2] && each[0] == Aes128::new(&keys[0]));
        assert!(each[0] == Aes128::new_on(crate::cpu::Portable, &keys[0]));
        if let Some(ni) = crate::cpu::AesNi::detect() {
            assert!(each[0] == Aes128::new_on(ni, &keys[0]));
        }
        assert!(each[0] != each[1] && each[1] != each[3]);
        assert!(each[0] != each[0].whitened(&[9; 16]));
    }

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
        /// anywhere, with the mix); its keeping variant leaves the chain's key expanded, and
        /// [`Aes128::chain_beside`] under that key computes the same.
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
            let want = (y, other.encrypt(&z));
            prop_assert_eq!(first.fresh_key_chain_beside(&key_in, &block, &other, &other_in, fed), want);
            let mut kept = Aes128::new(&[0; 16]);
            let keeping = first.fresh_key_chain_beside_keeping_on(Detect, &key_in, &block, &other, &other_in, fed, &mut kept);
            prop_assert_eq!(keeping, Chained { y: want.0, z: want.1, z_in: z, recalled: false });
            let x = [0x5a; 16];
            prop_assert_eq!(kept.encrypt(&x), Aes128::new(&first.encrypt(&key_in)).encrypt(&x));
            prop_assert_eq!(kept.chain_beside(&block, &other, &other_in, fed), want);
        }

        /// [`Aes128::chain_recalling_on`] takes the recalled output exactly where the second
        /// block's input is the recalled input and `y ⊕ mix` agrees with the output where asked
        /// (an output that is not that input's encryption shows the rounds were skipped), and
        /// computes the block for any other input or any disagreement.
        #[test]
        fn a_recall_replaces_exactly_its_input(
            keys: [[u8; 16]; 2],
            block: [u8; 16],
            other_in: [u8; 16],
            feed: [u8; 16],
            mix: [u8; 16],
            planted: [u8; 16],
            agree: [u8; 16],
            byte in 0usize..16,
            bit in 0u8..8,
        ) {
            let (chain, other) = (Aes128::new(&keys[0]), Aes128::new(&keys[1]));
            let y = chain.encrypt(&block);
            let mut z_in = other_in;
            for (z, &f) in z_in.iter_mut().zip(&feed) {
                if f & 0x80 == 0 {
                    *z ^= y[usize::from(f & 0x0f)] ^ mix[usize::from(f & 0x0f)];
                }
            }
            let computed = Chained { y, z: other.encrypt(&z_in), z_in, recalled: false };
            let recall = |input: [u8; 16], output: [u8; 16], agree: &[u8; 16]| {
                chain.chain_recalling_on(Detect, &block, &other, &other_in, (&feed, &mix), &[input, output], agree)
            };
            // An output that agrees with y ⊕ mix where `agree` says, the rest planted.
            let agreeing: [u8; 16] = std::array::from_fn(|i| (y[i] ^ mix[i]) & agree[i] | planted[i] & !agree[i]);
            let none = [0; 16];
            prop_assert_eq!(recall(z_in, computed.z, &none), Chained { recalled: true, ..computed });
            prop_assert_eq!(recall(z_in, planted, &none), Chained { z: planted, recalled: true, ..computed });
            prop_assert_eq!(recall(z_in, agreeing, &agree), Chained { z: agreeing, recalled: true, ..computed });
            let mut near = z_in;
            near[byte] ^= 1 << bit;
            prop_assert_eq!(recall(near, agreeing, &agree), computed);
            // One bit of disagreement where `agree` asks: computed.
            let mut off = agreeing;
            let mut strict = agree;
            strict[byte] |= 1 << bit;
            off[byte] = (y[byte] ^ mix[byte] ^ (1 << bit)) & strict[byte] | off[byte] & !strict[byte];
            prop_assert_eq!(recall(z_in, off, &strict), computed);
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
