//! AES-128 through the RustCrypto `aes` crate, where the build has no AES-NI: the same
//! interface as the AES-NI code, one block at a time.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};

/// Expanded AES-128 encryption key, and a block XORed into every input ([`Self::whitened`];
/// zero from [`Self::new`]).
#[derive(Clone)]
pub struct Aes128(aes::Aes128Enc, [u8; 16]);

impl Aes128 {
    pub fn new(key: &[u8; 16]) -> Self {
        Self(aes::Aes128Enc::new(GenericArray::from_slice(key)), [0; 16])
    }
    pub fn whitened(&self, white: &[u8; 16]) -> Self {
        let mut w = self.1;
        for (a, b) in w.iter_mut().zip(white) {
            *a ^= b;
        }
        Self(self.0.clone(), w)
    }
    pub fn new_each<const M: usize>(keys: &[[u8; 16]; M]) -> [Self; M] {
        std::array::from_fn(|j| Self::new(&keys[j]))
    }
    pub fn new_each_encrypting<const M: usize, const B: usize>(
        keys: &[[u8; 16]; M],
        blocks: &mut [[[u8; 16]; B]; M],
    ) -> [Self; M] {
        let ciphers = Self::new_each(keys);
        Self::encrypt_each(&ciphers, blocks);
        ciphers
    }
    pub fn cbc_two_blocks_many<const LEN: usize>(&self, msgs: &[[u8; LEN]], tweak: &[u8; 16], out: &mut [[u8; 16]]) {
        for (m, o) in msgs.iter().zip(out) {
            let first = self.encrypt(m[..16].try_into().expect("16 bytes"));
            let mut last = *tweak;
            for (l, (b, f)) in last.iter_mut().zip(m[16..].iter().chain(&[0; 16]).zip(first)) {
                *l ^= b ^ f;
            }
            *o = self.encrypt(&last);
        }
    }
    pub fn encrypt(&self, block: &[u8; 16]) -> [u8; 16] {
        let mut b = GenericArray::from(*block);
        for (a, w) in b.iter_mut().zip(&self.1) {
            *a ^= w;
        }
        self.0.encrypt_block(&mut b);
        b.into()
    }
    pub fn encrypt_many(&self, blocks: &mut [[u8; 16]]) {
        for b in blocks {
            *b = self.encrypt(b);
        }
    }
    pub fn encrypt_each<const M: usize, const B: usize>(ciphers: &[Aes128; M], blocks: &mut [[[u8; 16]; B]; M]) {
        for (c, bs) in ciphers.iter().zip(blocks) {
            for b in bs.iter_mut() {
                *b = c.encrypt(b);
            }
        }
    }
    pub fn encrypt_fresh_keys(keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
        for (k, b) in keys.iter().zip(blocks) {
            *b = Self::new(k).encrypt(b);
        }
    }
    pub fn fresh_key_chain_beside(
        &self,
        key_in: &[u8; 16],
        block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        let y = Self::new(&self.encrypt(key_in)).encrypt(block);
        let mut z = *other_in;
        if let Some((feed, mix)) = feed {
            for (z, &f) in z.iter_mut().zip(feed) {
                if f & 0x80 == 0 {
                    let i = usize::from(f & 0x0f);
                    *z ^= y[i] ^ mix[i];
                }
            }
        }
        (y, other.encrypt(&z))
    }
}
