//! The paper's primitives (§IV-D to §IV-H, §V-A): SHA3-256 for DataHash and HiddenSample,
//! AES-CMAC for ValidationProof and Concealment, and the sampling PRF of EpSampling.
//!
//! Field orders follow the errata of Alg. 2: `HiddenSample = H(Flag | DataHash | HopCount | K)`
//! and `Metadata = SessionID | Timestamp | DataHash` everywhere.

use aes::Aes128;
use cmac::{Cmac, Mac};
use sha3::{Digest, Sha3_256};

use crate::header::{Metadata, BLOCK_LEN, HIDDEN_SAMPLE_LEN};

/// A 16-byte symmetric key.
pub type Key = [u8; BLOCK_LEN];

/// `Flag | DataHash | HopCount | K`: one byte, 16, one, 16.
pub const HIDDEN_SAMPLE_INPUT_LEN: usize = 2 + 2 * BLOCK_LEN;
pub type HiddenSampleInput = [u8; HIDDEN_SAMPLE_INPUT_LEN];

/// An AES-CMAC key with its schedule expanded once (cloning the prepared state per message
/// costs no key expansion).
#[derive(Clone)]
struct CmacKey(Cmac<Aes128>);

impl CmacKey {
    fn new(key: &Key) -> Self {
        Self(<Cmac<Aes128> as Mac>::new_from_slice(key).expect("CMAC takes any 16-byte key"))
    }
    fn mac(&self, parts: &[&[u8]]) -> [u8; BLOCK_LEN] {
        let mut m = self.0.clone();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }
}

/// `K_{i(i+1)}`: the key two adjacent trusted routers share (see [`crate::keys`]). It keys
/// HiddenSample (as a hash suffix) and ValidationProof (as a CMAC key).
#[derive(Clone)]
pub struct LinkKey {
    raw: Key,
    cmac: CmacKey,
}

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

impl LinkKey {
    pub fn new(key: Key) -> Self {
        Self { raw: key, cmac: CmacKey::new(&key) }
    }

    /// `HiddenSample = SHA3-256(Flag | DataHash | HopCount | K)`; the key is a suffix so that
    /// the construction does not allow length extension (§IV-D).
    pub fn hidden_sample(&self, flag: bool, data_hash: &[u8; BLOCK_LEN], hop_count: u8) -> [u8; HIDDEN_SAMPLE_LEN] {
        Sha3_256::digest(self.hidden_sample_input(flag, data_hash, hop_count)).into()
    }

    /// What [`Self::hidden_sample`] hashes, for hashing many at once ([`crate::keccak`]).
    pub fn hidden_sample_input(&self, flag: bool, data_hash: &[u8; BLOCK_LEN], hop_count: u8) -> HiddenSampleInput {
        let mut m = [0; HIDDEN_SAMPLE_INPUT_LEN];
        m[0] = u8::from(flag);
        m[1..1 + BLOCK_LEN].copy_from_slice(data_hash);
        m[1 + BLOCK_LEN] = hop_count;
        m[2 + BLOCK_LEN..].copy_from_slice(&self.raw);
        m
    }

    /// `ValidationProof = CMAC_K(Metadata | HopCount | Concealment)`.
    pub fn validation_proof(&self, meta: &Metadata, hop_count: u8, concealment: &[u8; BLOCK_LEN]) -> [u8; BLOCK_LEN] {
        self.cmac.mac(&[&meta.to_bytes(), &[hop_count], concealment])
    }
}

/// `K_{0n}`: the key of source and destination; it keys Concealment.
#[derive(Clone)]
pub struct EndToEndKey(CmacKey);

impl std::fmt::Debug for EndToEndKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EndToEndKey(..)")
    }
}

impl EndToEndKey {
    pub fn new(key: Key) -> Self {
        Self(CmacKey::new(&key))
    }

    /// `Concealment = CMAC_{K_0n}(Metadata)`.
    pub fn concealment(&self, meta: &Metadata) -> [u8; BLOCK_LEN] {
        self.0.mac(&[&meta.to_bytes()])
    }
}

/// A router's own secret for EpSampling's PRF; no other node needs it, so each router draws
/// it from its random source at start-up.
#[derive(Clone)]
pub struct SamplingKey(CmacKey);

impl std::fmt::Debug for SamplingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SamplingKey(..)")
    }
}

impl SamplingKey {
    pub fn new(key: Key) -> Self {
        Self(CmacKey::new(&key))
    }

    /// The paper's `ρ ← PRF(0, HopCount)` (Alg. 1, line 5): an integer uniform in
    /// `[0, HopCount]`, from `CMAC_Ks(Metadata | HopCount)`. The first 8 bytes of the MAC,
    /// as a big-endian `x`, map to `⌊x · (HopCount + 1) / 2^64⌋`, which is uniform up to a
    /// bias below `256 / 2^64`.
    pub fn rho(&self, meta: &Metadata, hop_count: u8) -> u8 {
        let out = self.0.mac(&[&meta.to_bytes(), &[hop_count]]);
        uniform_below(&out, u16::from(hop_count) + 1)
    }

    /// EpSampling (Alg. 1): `Flag = (ρ == HopCount)`. The n-th node of a path sees
    /// `HopCount = n - 1` and so samples with probability `1/n`.
    pub fn ep_sampling(&self, meta: &Metadata, hop_count: u8) -> bool {
        self.rho(meta, hop_count) == hop_count
    }
}

/// An integer uniform in `[0, n)` (`1 <= n <= 256`) from pseudo-random bytes: the first 8,
/// as a big-endian `x`, map to `⌊x · n / 2^64⌋`, uniform up to a bias below `n / 2^64`.
pub fn uniform_below(random: &[u8; BLOCK_LEN], n: u16) -> u8 {
    let x = u64::from_be_bytes(random[..8].try_into().expect("8 bytes"));
    ((u128::from(x) * u128::from(n)) >> 64) as u8
}

/// `DataHash`: the first 16 bytes of SHA3-256 over the payload (Table III gives it 16 bytes).
pub fn data_hash(payload: &[u8]) -> [u8; BLOCK_LEN] {
    let d: [u8; 32] = Sha3_256::digest(payload).into();
    d[..BLOCK_LEN].try_into().expect("16 bytes")
}

/// Compares secrets in time independent of where they differ.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha3_is_the_fips_202_function() {
        // FIPS 202 example: SHA3-256("abc").
        let d: [u8; 32] = Sha3_256::digest(b"abc").into();
        assert_eq!(d[..4], [0x3a, 0x98, 0x5d, 0xa7]);
        assert_eq!(data_hash(b"abc"), d[..16]);
    }

    #[test]
    fn cmac_is_rfc_4493() {
        // RFC 4493, Example 2 (16-byte message).
        let key = [0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c];
        let msg = [0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a];
        let tag = CmacKey::new(&key).mac(&[&msg[..7], &msg[7..]]);
        assert_eq!(tag[..4], [0x07, 0x0a, 0x16, 0xb4]);
    }

    #[test]
    fn rho_stays_in_range_and_the_source_always_samples() {
        let k = SamplingKey::new([9; 16]);
        for hc in 0..=255u8 {
            let m = Metadata { timestamp: u32::from(hc), ..Default::default() };
            assert!(k.rho(&m, hc) <= hc);
        }
        assert!(k.ep_sampling(&Metadata::default(), 0));
        assert!(ct_eq(&[1, 2], &[1, 2]) && !ct_eq(&[1, 2], &[1, 3]) && !ct_eq(&[1], &[1, 2]));
    }
}
