//! The keys a GLWP service uses in discovery: the pairwise keys of the paper's key management
//! (§III-B) are SCION DRKey Level-1 keys under GLWP's own protocol id [`PROTOCOL`], with
//! protocol-specific secret values ([`Derivation::Specific`]) so that a GLWP key never equals a
//! key of another protocol.
//!
//! DRKey's Level-1 keys have a direction: `K_{a→b}` is derived by AS a from its secret value
//! and fetched by AS b from a's DRKey service. AS a uses `K_{a→b}` for everything it sends to b
//! (its hop-value MAC in b's aggregate, and, when b is the source, the sealed hop key); b
//! verifies with the fetched key. Every AS thus derives the keys it sends with and fetches the
//! keys it verifies with.

use std::collections::BTreeMap;

use aviary_scion::drkey::{Derivation, DrkeyError, Epoch, IssuerKeys, Level1Key, Protocol, RotatingSecret};
use aviary_scion::IsdAsn;

/// The DRKey protocol id of GLWP discovery (outside the ids scionproto predefines).
pub const PROTOCOL: Protocol = Protocol(0x676c);

/// The pairwise keys of one AS.
pub trait DiscoveryKeys {
    /// `K_{self→to}`, derived from this AS's secret value.
    fn key_to(&self, to: IsdAsn) -> [u8; 16];
    /// `K_{from→self}`, fetched from `from`'s DRKey service; `None` while it is not known.
    fn key_from(&self, from: IsdAsn) -> Option<[u8; 16]>;
}

/// An AS's GLWP DRKey keys of one epoch: its own issuer keys and the Level-1 keys fetched
/// from other ASes.
#[derive(Clone, Debug)]
pub struct DrkeyKeys {
    issuer: IssuerKeys,
    fetched: BTreeMap<IsdAsn, Level1Key>,
}

impl DrkeyKeys {
    pub fn new(master_secret: &[u8], epoch: Epoch) -> Result<Self, DrkeyError> {
        Self::with_secret(&RotatingSecret::new(master_secret)?, epoch)
    }

    /// The keys of `epoch` from the master secret `secret` picks for it across a rotation.
    pub fn with_secret(secret: &RotatingSecret, epoch: Epoch) -> Result<Self, DrkeyError> {
        let issuer = secret.issuer_keys(PROTOCOL, Derivation::Specific, epoch)?;
        Ok(Self { issuer, fetched: BTreeMap::new() })
    }

    /// What this AS's DRKey service hands to `to`: `K_{self→to}`.
    pub fn issue(&self, to: IsdAsn) -> Level1Key {
        self.issuer.level1(to)
    }

    /// Stores `K_{from→self}`, fetched from `from`.
    pub fn insert_fetched(&mut self, from: IsdAsn, key: Level1Key) {
        self.fetched.insert(from, key);
    }
}

impl DiscoveryKeys for DrkeyKeys {
    fn key_to(&self, to: IsdAsn) -> [u8; 16] {
        *self.issuer.level1(to).as_bytes()
    }
    fn key_from(&self, from: IsdAsn) -> Option<[u8; 16]> {
        self.fetched.get(&from).map(|k| *k.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use aviary_scion::drkey::SecretValue;

    use super::*;

    #[test]
    fn keys_are_level1_keys_of_the_protocol_specific_secret_value() {
        let epoch = Epoch::new(0, 86_400).unwrap();
        let (a, b) = (IsdAsn::new(1, 0xff00_0000_0110), IsdAsn::new(1, 0xff00_0000_0111));
        let ka = DrkeyKeys::new(b"master a", epoch).unwrap();
        let mut kb = DrkeyKeys::new(b"master b", epoch).unwrap();
        let sv = SecretValue::derive(b"master a", PROTOCOL, epoch).unwrap();
        assert_eq!(ka.key_to(b), *sv.level1(b).as_bytes());
        assert_eq!(kb.key_from(a), None);
        kb.insert_fetched(a, ka.issue(b));
        assert_eq!(kb.key_from(a), Some(ka.key_to(b)));
        let generic = SecretValue::derive(b"master a", Protocol::GENERIC, epoch).unwrap();
        assert_ne!(ka.key_to(b), *generic.level1(b).as_bytes());
    }
}
