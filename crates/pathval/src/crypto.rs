//! The paper's primitives (§IV-D to §IV-H, §V-A): SHA3-256 for HiddenSample (as §VI
//! fixes), KangarooTwelve for DataHash (the paper leaves its hash open; see docs/pathval.md),
//! AES-CMAC for ValidationProof and Concealment, and the sampling PRF of EpSampling.
//!
//! Field orders follow the errata of Alg. 2: `HiddenSample = H(Flag | DataHash | HopCount | K)`
//! and `Metadata = SessionID | Timestamp | DataHash` everywhere.

use aviary_scion::cmac::CmacKey;
#[cfg(target_arch = "x86_64")]
use aviary_scion::cpu::AesNi;
use aviary_scion::cpu::{Cpu, Portable};
use sha3::{Digest, Sha3_256};

use crate::header::{Metadata, BLOCK_LEN, HIDDEN_SAMPLE_LEN};
use crate::keccak::kt128_many;

/// A 16-byte symmetric key.
pub type Key = [u8; BLOCK_LEN];

/// `Flag | DataHash | HopCount | K`: one byte, 16, one, 16.
pub const HIDDEN_SAMPLE_INPUT_LEN: usize = 2 + 2 * BLOCK_LEN;
pub type HiddenSampleInput = [u8; HIDDEN_SAMPLE_INPUT_LEN];

/// EpSampling's PRF input, `Metadata | HopCount`.
pub const PRF_INPUT_LEN: usize = Metadata::LEN + 1;
pub type PrfInput = [u8; PRF_INPUT_LEN];

/// A ValidationProof's input, `Metadata | HopCount | Concealment`.
pub const PROOF_INPUT_LEN: usize = Metadata::LEN + 1 + BLOCK_LEN;
pub type ProofInput = [u8; PROOF_INPUT_LEN];

/// `Metadata | HopCount`.
pub fn prf_input(meta: &Metadata, hop_count: u8) -> PrfInput {
    let mut m = [0; PRF_INPUT_LEN];
    m[..Metadata::LEN].copy_from_slice(&meta.to_bytes());
    m[Metadata::LEN] = hop_count;
    m
}

/// `Metadata | HopCount | Concealment`.
pub fn proof_input(meta: &Metadata, hop_count: u8, concealment: &[u8; BLOCK_LEN]) -> ProofInput {
    let mut m = [0; PROOF_INPUT_LEN];
    m[..Metadata::LEN].copy_from_slice(&meta.to_bytes());
    m[Metadata::LEN] = hop_count;
    m[Metadata::LEN + 1..].copy_from_slice(concealment);
    m
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
        self.cmac.mac(&proof_input(meta, hop_count, concealment))
    }

    /// The expanded CMAC key, for many proofs at once ([`aviary_scion::cmac::mac_each`]).
    pub(crate) fn cmac(&self) -> &CmacKey {
        &self.cmac
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
        self.0.mac(&meta.to_bytes())
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
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves the CPU has the features `rho_aes_ni` is compiled for.
            return unsafe { self.rho_aes_ni(ni, meta, hop_count) };
        }
        self.rho_on(Portable, meta, hop_count)
    }

    /// [`Self::rho_on`] compiled with AES-NI enabled: the CMAC's blocks inlined (called one by
    /// one from the baseline build, an EpSampling took 53 ns instead of 43).
    ///
    /// # Safety
    /// The CPU has the features of `aviary_scion::cpu::AES_NI_FEATURES` (`ni` proves it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
    fn rho_aes_ni(&self, ni: AesNi, meta: &Metadata, hop_count: u8) -> u8 {
        self.rho_on(ni, meta, hop_count)
    }

    #[inline(always)]
    fn rho_on(&self, cpu: impl Cpu, meta: &Metadata, hop_count: u8) -> u8 {
        let out = self.0.mac_on(cpu, &prf_input(meta, hop_count));
        uniform_below(&out, u16::from(hop_count) + 1)
    }

    /// EpSampling (Alg. 1): `Flag = (ρ == HopCount)`. The n-th node of a path sees
    /// `HopCount = n - 1` and so samples with probability `1/n`.
    pub fn ep_sampling(&self, meta: &Metadata, hop_count: u8) -> bool {
        self.rho(meta, hop_count) == hop_count
    }

    /// [`Self::ep_sampling`] on many packets at once, each given by its PRF input
    /// ([`prf_input`]): `sampled[i]` for `inputs[i]`, the CMACs of all interleaved.
    pub fn ep_sampling_many(&self, inputs: &[PrfInput], sampled: &mut [bool]) {
        const CHUNK: usize = 32;
        let mut prf = [[0; BLOCK_LEN]; CHUNK];
        for (ins, outs) in inputs.chunks(CHUNK).zip(sampled.chunks_mut(CHUNK)) {
            self.0.mac_many(ins, &mut prf);
            for ((input, p), s) in ins.iter().zip(&prf).zip(outs) {
                let hop_count = input[Metadata::LEN];
                *s = uniform_below(p, u16::from(hop_count) + 1) == hop_count;
            }
        }
    }
}

/// An integer uniform in `[0, n)` (`1 <= n <= 256`) from pseudo-random bytes: the first 8,
/// as a big-endian `x`, map to `⌊x · n / 2^64⌋`, uniform up to a bias below `n / 2^64`.
pub fn uniform_below(random: &[u8; BLOCK_LEN], n: u16) -> u8 {
    let x = u64::from_be_bytes(random[..8].try_into().expect("8 bytes"));
    ((u128::from(x) * u128::from(n)) >> 64) as u8
}

/// `DataHash = KT128(payload, "", 16)`: KangarooTwelve (RFC 9861) with the empty
/// customization string, 16 bytes of output (Table III's size). The paper only asks for "a
/// cryptographic hash function"; KT128's twelve-round permutation and larger rate cost a
/// 1000-byte payload six half-length permutations where SHA3-256 takes eight full ones.
pub fn data_hash(payload: &[u8]) -> [u8; BLOCK_LEN] {
    let mut out = [[0; BLOCK_LEN]];
    kt128_many(&[payload], &mut out);
    out[0]
}

/// Compares secrets in time independent of where they differ.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_sample_is_sha3_and_data_hash_is_kt128() {
        // FIPS 202 example: SHA3-256("abc").
        let d: [u8; 32] = Sha3_256::digest(b"abc").into();
        assert_eq!(d[..4], [0x3a, 0x98, 0x5d, 0xa7]);
        let k = LinkKey::new([7; 16]);
        let mut input = vec![1];
        input.extend([2; 16]);
        input.push(3);
        input.extend([7; 16]);
        assert_eq!(k.hidden_sample(true, &[2; 16], 3), <[u8; 32]>::from(Sha3_256::digest(&input)));
        // RFC 9861, §5: KT128(ptn(17 bytes), "", 32) begins 6b f7 5f a2 …; DataHash is its
        // first 16 bytes.
        let ptn17: Vec<u8> = (0..17).collect();
        assert_eq!(data_hash(&ptn17)[..], hex::decode("6bf75fa2239198db4772e36478f8e19b").unwrap());
    }

    #[test]
    fn batched_sampling_decides_as_one_by_one() {
        let k = SamplingKey::new([3; 16]);
        let packets: Vec<(Metadata, u8)> = (0..70u32)
            .map(|i| (Metadata { timestamp: i, data_hash: [i as u8; 16], ..Default::default() }, (i % 5) as u8))
            .collect();
        let inputs: Vec<PrfInput> = packets.iter().map(|(m, hc)| prf_input(m, *hc)).collect();
        let mut sampled = vec![false; inputs.len()];
        k.ep_sampling_many(&inputs, &mut sampled);
        let want: Vec<bool> = packets.iter().map(|(m, hc)| k.ep_sampling(m, *hc)).collect();
        assert_eq!(sampled, want);
        assert!(want.iter().any(|s| *s) && !want.iter().all(|s| *s));
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
