//! Sealing a granted reservation `(ResInfo, A_K)` to the buyer (the Hummingbird paper, §4.2, "Asset
//! Redemption", and §5.3, C1: confidentiality of `A_K` during redemption).
//!
//! The buyer redeems its assets with an ephemeral X25519 public key; the AS answers with the
//! reservation encrypted to that key by HPKE (RFC 9180) in base mode with the suite
//! DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 (KEM 0x0020, KDF 0x0001,
//! AEAD 0x0003), single shot (sequence number 0).
//!
//! **Sealed blob**: `enc (32 B) || ciphertext (32 B plaintext + 16 B tag)`, [`SEALED_LEN`] = 80 bytes.
//!
//! **Binding** ([`SealContext`]): the HPKE `info` is
//! `"aviary/hummingbird/sealed-reservation/v1" || chain id (u64 BE) || ISD-AS (u64 BE) ||
//! redeem request id (u256 BE, 32 B)`; the AAD is empty. `info` enters the key schedule, so a
//! blob opens only under the exact context it was sealed for: it cannot be replayed for
//! another redeem request, another AS or another chain. The recipient's public key is bound
//! by the KEM itself (`kem_context = enc || pkR`).
//!
//! **Plaintext** ([`encode_reservation`]): 32 bytes, all integers big-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | ingress interface |
//! | 2 | 2 | egress interface |
//! | 4 | 4 | ResID (< 2^22) |
//! | 8 | 2 | BW code (< 2^10) |
//! | 10 | 4 | start (Unix s) |
//! | 14 | 2 | duration (s, > 0) |
//! | 16 | 16 | A_K |
//!
//! Parsing is strict: exactly 32 bytes, ResID and BW in range, non-zero duration. Every failure
//! is a [`SealError`]; nothing here panics on input.
//!
//! Randomness is injected (an RNG for [`seal`] and [`BuyerKey::generate`]) or drawn from the OS
//! with an error value when it is unavailable ([`BuyerKey::from_os_rng`], [`seal_with_os_rng`]).

use core::fmt;

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::rand_core::{CryptoRng, RngCore};
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use thiserror::Error;

use crate::crypto::ResInfo;
use crate::path::MAX_RES_ID;
use crate::reservation::Reservation;

/// The RNG traits [`seal`] and [`BuyerKey::generate`] take (rand_core 0.9, as `hpke` uses).
pub use hpke::rand_core;

/// The KEM of the suite: DHKEM(X25519, HKDF-SHA256).
pub type SuiteKem = X25519HkdfSha256;
/// The KDF of the suite: HKDF-SHA256.
pub type SuiteKdf = HkdfSha256;
/// The AEAD of the suite: ChaCha20-Poly1305.
pub type SuiteAead = ChaCha20Poly1305;

/// Length of the encapsulated key `enc` (an X25519 public key).
pub const ENC_LEN: usize = 32;
/// Length of the plaintext encoding of a [`Reservation`].
pub const PLAINTEXT_LEN: usize = 32;
/// Length of the AEAD tag.
pub const TAG_LEN: usize = 16;
/// Length of a sealed reservation: `enc || ciphertext`.
pub const SEALED_LEN: usize = ENC_LEN + PLAINTEXT_LEN + TAG_LEN;
/// Domain-separation label at the start of the HPKE `info`.
pub const INFO_LABEL: &[u8] = b"aviary/hummingbird/sealed-reservation/v1";
/// Length of the HPKE `info` built by [`SealContext::info`].
pub const INFO_LEN: usize = INFO_LABEL.len() + 8 + 8 + 32;

/// Maximum BW code (10 bits).
const MAX_BW: u16 = (1 << 10) - 1;

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum SealError {
    #[error("sealed reservation is {0} bytes, expected {SEALED_LEN}")]
    SealedLength(usize),
    #[error("reservation plaintext is {0} bytes, expected {PLAINTEXT_LEN}")]
    PlaintextLength(usize),
    #[error("ResID {0} does not fit in 22 bits")]
    ResIdRange(u32),
    #[error("BW code {0} does not fit in 10 bits")]
    BwRange(u16),
    #[error("reservation has zero duration")]
    ZeroDuration,
    #[error("buyer public key is not usable for X25519 (low-order point)")]
    BadPublicKey,
    #[error("sealed reservation does not open: wrong key, wrong context or tampered")]
    Open,
    #[error("HPKE sealing failed")]
    Seal,
    #[error("no randomness: {0}")]
    Randomness(&'static str),
}

/// Where a sealed reservation belongs: it opens only under the same context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SealContext {
    /// EVM chain id of the ledger that carries the redeem request.
    pub chain_id: u64,
    /// ISD-AS of the granting AS (16-bit ISD, 48-bit AS).
    pub isd_as: u64,
    /// On-chain redeem request id, a u256 as 32 bytes big-endian.
    pub request_id: [u8; 32],
}

impl SealContext {
    pub fn new(chain_id: u64, isd_as: u64, request_id: [u8; 32]) -> Self {
        Self { chain_id, isd_as, request_id }
    }

    /// A context whose request id is a small integer (u256 big-endian, high bytes zero).
    pub fn with_u64_request(chain_id: u64, isd_as: u64, request_id: u64) -> Self {
        let mut id = [0u8; 32];
        id[24..].copy_from_slice(&request_id.to_be_bytes());
        Self::new(chain_id, isd_as, id)
    }

    /// The HPKE `info`: `INFO_LABEL || chain_id (8) || isd_as (8) || request_id (32)`.
    pub fn info(&self) -> [u8; INFO_LEN] {
        let mut out = [0u8; INFO_LEN];
        let l = INFO_LABEL.len();
        out[..l].copy_from_slice(INFO_LABEL);
        out[l..l + 8].copy_from_slice(&self.chain_id.to_be_bytes());
        out[l + 8..l + 16].copy_from_slice(&self.isd_as.to_be_bytes());
        out[l + 16..].copy_from_slice(&self.request_id);
        out
    }
}

/// The buyer's ephemeral X25519 key pair. The secret never leaves except through
/// [`BuyerKey::secret_bytes`] (for a client that must keep it until the delivery arrives).
#[derive(Clone)]
pub struct BuyerKey {
    sk: <SuiteKem as hpke::Kem>::PrivateKey,
    pk: [u8; 32],
}

impl fmt::Debug for BuyerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuyerKey").field("public", &Hex(&self.pk)).finish_non_exhaustive()
    }
}

struct Hex<'a>(&'a [u8]);
impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl BuyerKey {
    /// A fresh key pair from `rng` (RFC 9180 GenerateKeyPair: 32 bytes of `ikm`, then DeriveKeyPair).
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut ikm = [0u8; 32];
        rng.fill_bytes(&mut ikm);
        Self::derive(&ikm)
    }

    /// A fresh key pair from the operating system's randomness.
    pub fn from_os_rng() -> Result<Self, SealError> {
        Ok(Self::derive(&os_ikm()?))
    }

    /// RFC 9180 DeriveKeyPair(ikm) for DHKEM(X25519, HKDF-SHA256). `ikm` should hold at least
    /// 32 bytes of entropy.
    pub fn derive(ikm: &[u8]) -> Self {
        let (sk, pk) = SuiteKem::derive_keypair(ikm);
        Self { sk, pk: to_array(&pk.to_bytes()) }
    }

    /// A key pair from a stored X25519 secret (as [`BuyerKey::secret_bytes`] gave it).
    pub fn from_secret_bytes(secret: &[u8; 32]) -> Self {
        // Any 32 bytes are an X25519 scalar (clamped on use): this cannot fail.
        let sk = match <SuiteKem as hpke::Kem>::PrivateKey::from_bytes(secret) {
            Ok(sk) => sk,
            Err(_) => unreachable!("32 bytes are always an X25519 secret"),
        };
        let pk = to_array(&SuiteKem::sk_to_pk(&sk).to_bytes());
        Self { sk, pk }
    }

    /// The serialised X25519 secret (`skRm` in RFC 9180's test vectors).
    pub fn secret_bytes(&self) -> [u8; 32] {
        to_array(&self.sk.to_bytes())
    }

    /// The public key to send with the redeem request.
    pub fn public(&self) -> [u8; 32] {
        self.pk
    }
}

fn to_array(b: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(b);
    out
}

fn os_ikm() -> Result<[u8; 32], SealError> {
    let mut ikm = [0u8; 32];
    getrandom::fill(&mut ikm).map_err(|_| SealError::Randomness("the OS random source failed"))?;
    Ok(ikm)
}

/// The 32-byte plaintext of a reservation (see the module docs); checks the ranges.
pub fn encode_reservation(r: &Reservation) -> Result<[u8; PLAINTEXT_LEN], SealError> {
    check_info(&r.info)?;
    let i = &r.info;
    let mut b = [0u8; PLAINTEXT_LEN];
    b[0..2].copy_from_slice(&i.ingress.to_be_bytes());
    b[2..4].copy_from_slice(&i.egress.to_be_bytes());
    b[4..8].copy_from_slice(&i.res_id.to_be_bytes());
    b[8..10].copy_from_slice(&i.bw.to_be_bytes());
    b[10..14].copy_from_slice(&i.start.to_be_bytes());
    b[14..16].copy_from_slice(&i.duration.to_be_bytes());
    b[16..32].copy_from_slice(&r.ak);
    Ok(b)
}

/// Strict inverse of [`encode_reservation`].
pub fn decode_reservation(b: &[u8]) -> Result<Reservation, SealError> {
    let b: &[u8; PLAINTEXT_LEN] = b.try_into().map_err(|_| SealError::PlaintextLength(b.len()))?;
    let u16_at = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
    let u32_at = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let info = ResInfo {
        ingress: u16_at(0),
        egress: u16_at(2),
        res_id: u32_at(4),
        bw: u16_at(8),
        start: u32_at(10),
        duration: u16_at(14),
    };
    check_info(&info)?;
    let mut ak = [0u8; 16];
    ak.copy_from_slice(&b[16..32]);
    Ok(Reservation { info, ak })
}

fn check_info(i: &ResInfo) -> Result<(), SealError> {
    if i.res_id > MAX_RES_ID {
        return Err(SealError::ResIdRange(i.res_id));
    }
    if i.bw > MAX_BW {
        return Err(SealError::BwRange(i.bw));
    }
    if i.duration == 0 {
        return Err(SealError::ZeroDuration);
    }
    Ok(())
}

/// Seals `reservation` to `buyer_pk` for `context`; returns `enc || ciphertext` ([`SEALED_LEN`] bytes).
/// The ephemeral key comes from 32 bytes of `rng`.
pub fn seal<R: CryptoRng + ?Sized>(
    reservation: &Reservation,
    context: &SealContext,
    buyer_pk: &[u8; 32],
    rng: &mut R,
) -> Result<Vec<u8>, SealError> {
    let mut ikm = [0u8; 32];
    rng.fill_bytes(&mut ikm);
    seal_with_ephemeral_ikm(reservation, context, buyer_pk, &ikm)
}

/// [`seal`] with the operating system's randomness.
pub fn seal_with_os_rng(
    reservation: &Reservation,
    context: &SealContext,
    buyer_pk: &[u8; 32],
) -> Result<Vec<u8>, SealError> {
    seal_with_ephemeral_ikm(reservation, context, buyer_pk, &os_ikm()?)
}

/// [`seal`] with the ephemeral key pair derived from `ikm_e` (RFC 9180 DeriveKeyPair), as the
/// RFC's test vectors do. `ikm_e` must be fresh uniform randomness for every call: reusing it
/// reuses the ephemeral key. Deterministic, for test vectors.
pub fn seal_with_ephemeral_ikm(
    reservation: &Reservation,
    context: &SealContext,
    buyer_pk: &[u8; 32],
    ikm_e: &[u8; 32],
) -> Result<Vec<u8>, SealError> {
    let pt = encode_reservation(reservation)?;
    hpke_seal_base(buyer_pk, &context.info(), &[], &pt, ikm_e)
}

/// Opens a blob from [`seal`] with the buyer's key under `context`.
pub fn open(sealed: &[u8], context: &SealContext, buyer: &BuyerKey) -> Result<Reservation, SealError> {
    if sealed.len() != SEALED_LEN {
        return Err(SealError::SealedLength(sealed.len()));
    }
    let pt = hpke_open_base(buyer, sealed, &context.info(), &[])?;
    decode_reservation(&pt)
}

/// Raw RFC 9180 single-shot `SealBase` of the suite with the ephemeral key from
/// `DeriveKeyPair(ikm_e)`: returns `enc || ct`. The building block of [`seal`], public so the
/// suite can be checked against the RFC's test vectors.
pub fn hpke_seal_base(
    pk_recip: &[u8; 32],
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8; 32],
) -> Result<Vec<u8>, SealError> {
    let pk = <SuiteKem as hpke::Kem>::PublicKey::from_bytes(pk_recip).map_err(|_| SealError::BadPublicKey)?;
    // hpke draws the ephemeral key's ikm (exactly 32 bytes) from the RNG it is given: hand it
    // `ikm_e`, and refuse the result should it ever ask for more.
    let mut rng = IkmRng { ikm: *ikm_e, used: 0, overdrawn: false };
    let res =
        hpke::single_shot_seal::<SuiteAead, SuiteKdf, SuiteKem, _>(&OpModeS::Base, &pk, info, plaintext, aad, &mut rng);
    if rng.overdrawn || rng.used != 32 {
        return Err(SealError::Randomness("HPKE drew an unexpected amount of ephemeral randomness"));
    }
    let (enc, ct) = res.map_err(|e| match e {
        hpke::HpkeError::EncapError => SealError::BadPublicKey,
        _ => SealError::Seal,
    })?;
    let mut out = Vec::with_capacity(ENC_LEN + ct.len());
    out.extend_from_slice(&enc.to_bytes());
    out.extend_from_slice(&ct);
    Ok(out)
}

/// Raw RFC 9180 single-shot `OpenBase` of the suite on `enc || ct`.
pub fn hpke_open_base(recipient: &BuyerKey, sealed: &[u8], info: &[u8], aad: &[u8]) -> Result<Vec<u8>, SealError> {
    if sealed.len() < ENC_LEN + TAG_LEN {
        return Err(SealError::SealedLength(sealed.len()));
    }
    let (enc, ct) = sealed.split_at(ENC_LEN);
    let enc = <SuiteKem as hpke::Kem>::EncappedKey::from_bytes(enc).map_err(|_| SealError::Open)?;
    hpke::single_shot_open::<SuiteAead, SuiteKdf, SuiteKem>(&OpModeR::Base, &recipient.sk, &enc, info, ct, aad)
        .map_err(|_| SealError::Open)
}

/// Serves a fixed 32-byte ikm, then notes any further draw (answered with zeros, and the
/// result discarded by the caller).
struct IkmRng {
    ikm: [u8; 32],
    used: usize,
    overdrawn: bool,
}

impl RngCore for IkmRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for d in dst {
            *d = match self.ikm.get(self.used) {
                Some(b) => *b,
                None => {
                    self.overdrawn = true;
                    0
                }
            };
            self.used += 1;
        }
    }
}

impl CryptoRng for IkmRng {}
