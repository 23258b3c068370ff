//! P-256 keys and signatures for AS registration (contracts/src/AsRegistry.sol).
//!
//! An ISD root certifies an AS key until an expiry by signing `certificate_digest(isdAs, asKey,
//! notAfter)`; the AS proves
//! possession of its key for one account by signing `registration_digest(registry, chainid,
//! account, nonce)`. Both digests are SHA-256 of `abi.encodePacked(...)`, computed here exactly
//! as the contract does, so a registration can be prepared without a call to the chain except
//! for the account's nonce. Signatures are deterministic (RFC 6979).

use alloy_primitives::{Address, B256, U256};
use p256::ecdsa::signature::hazmat::PrehashSigner;
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::bindings::AsRegistry;

/// The address of the P256VERIFY precompile (EIP-7951 / RIP-7212).
pub const P256_VERIFIER: Address = Address::new([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00]);

/// A P-256 signature as the registry takes it (JSON `{"r": "0x…", "s": "0x…"}` in files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct P256Signature {
    /// r, big-endian.
    pub r: B256,
    /// s, big-endian.
    pub s: B256,
}

/// A P-256 key derived from a seed: sha256(seed), re-hashed in the (negligible) case it is not
/// a valid scalar. Deterministic: for tests and demos whose keys must be reproducible; real
/// keys come from the AS's key management.
pub fn p256_key_from_seed(seed: &[u8]) -> SigningKey {
    let mut bytes: [u8; 32] = Sha256::digest(seed).into();
    loop {
        if let Ok(key) = SigningKey::from_bytes(&bytes.into()) {
            return key;
        }
        bytes = Sha256::digest(bytes).into();
    }
}

/// The affine coordinates (x, y) of a public key, as the registry stores them.
pub fn public_key_xy(key: &VerifyingKey) -> (B256, B256) {
    let point = key.to_encoded_point(false);
    let x = B256::from_slice(point.x().expect("uncompressed point has x"));
    let y = B256::from_slice(point.y().expect("uncompressed point has y"));
    (x, y)
}

/// Sign a 32-byte digest (the contract passes the digest itself to P256VERIFY).
pub fn sign_digest(key: &SigningKey, digest: B256) -> P256Signature {
    let sig: Signature = key.sign_prehash(digest.as_slice()).expect("a 32-byte prehash is accepted");
    let (r, s) = sig.split_bytes();
    P256Signature { r: B256::from_slice(&r), s: B256::from_slice(&s) }
}

/// `sha256("aviary-as-cert-v2" | isdAs (8) | asKeyX (32) | asKeyY (32) | notAfter (8))`.
pub fn certificate_digest(isd_as: u64, as_key: &VerifyingKey, not_after: u64) -> B256 {
    let (x, y) = public_key_xy(as_key);
    let mut h = Sha256::new();
    h.update(b"aviary-as-cert-v2");
    h.update(isd_as.to_be_bytes());
    h.update(x);
    h.update(y);
    h.update(not_after.to_be_bytes());
    B256::from_slice(&h.finalize())
}

/// `sha256("aviary-as-register-v1" | registry (20) | chainid (32) | account (20) | nonce (32))`.
pub fn registration_digest(registry: Address, chain_id: u64, account: Address, nonce: U256) -> B256 {
    let mut h = Sha256::new();
    h.update(b"aviary-as-register-v1");
    h.update(registry);
    h.update(U256::from(chain_id).to_be_bytes::<32>());
    h.update(account);
    h.update(nonce.to_be_bytes::<32>());
    B256::from_slice(&h.finalize())
}

/// An ISD root's certificate of an AS key: valid until `not_after` (Unix s, exclusive; the
/// registry treats the registration as ended from then on), and the root's signature over
/// [`certificate_digest`] (JSON `{"not_after": …, "signature": {"r": …, "s": …}}` in files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Certificate {
    pub not_after: u64,
    pub signature: P256Signature,
}

/// The ISD root's certificate of `as_key` for `isd_as`, valid until `not_after`.
pub fn certify(root: &SigningKey, isd_as: u64, as_key: &VerifyingKey, not_after: u64) -> Certificate {
    Certificate { not_after, signature: sign_digest(root, certificate_digest(isd_as, as_key, not_after)) }
}

/// The arguments of `AsRegistry.register`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// ISD (16 bits) | AS (48 bits).
    pub isd_as: u64,
    /// The AS public key.
    pub as_key: (B256, B256),
    /// The ISD root's certificate (expiry and signature).
    pub certificate: Certificate,
    /// The AS key's signature over the registration digest (proof of possession).
    pub proof: P256Signature,
}

impl Registration {
    /// Prove possession of `as_key` for `account` at `nonce` (the account's
    /// `registrationNonce`) on the registry `registry` of chain `chain_id`.
    pub fn new(
        isd_as: u64,
        certificate: Certificate,
        as_key: &SigningKey,
        registry: Address,
        chain_id: u64,
        account: Address,
        nonce: U256,
    ) -> Self {
        let proof = sign_digest(as_key, registration_digest(registry, chain_id, account, nonce));
        Self { isd_as, as_key: public_key_xy(as_key.verifying_key()), certificate, proof }
    }

    /// The call.
    pub fn call(&self) -> AsRegistry::registerCall {
        AsRegistry::registerCall {
            isdAs: self.isd_as,
            asKeyX: self.as_key.0,
            asKeyY: self.as_key.1,
            notAfter: self.certificate.not_after,
            certR: self.certificate.signature.r,
            certS: self.certificate.signature.s,
            popR: self.proof.r,
            popS: self.proof.s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::hazmat::PrehashVerifier;

    #[test]
    fn signatures_verify_over_the_digest() {
        let root = p256_key_from_seed(b"root");
        let as_key = p256_key_from_seed(b"as");
        let cert = certify(&root, 0x0001_0000_0000_0110, as_key.verifying_key(), 1 << 40);
        let sig = Signature::from_scalars(cert.signature.r.0, cert.signature.s.0).unwrap();
        let digest = certificate_digest(0x0001_0000_0000_0110, as_key.verifying_key(), 1 << 40);
        root.verifying_key().verify_prehash(digest.as_slice(), &sig).unwrap();
        assert!(as_key.verifying_key().verify_prehash(digest.as_slice(), &sig).is_err());
    }
}
