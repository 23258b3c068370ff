//! Ledger accounts: a secp256k1 private key and the address it controls.
//!
//! The dev accounts are derived from a fixed, public seed so that the embedded ledger and the
//! Hardhat node of the tests (`contracts/hardhat.config.js` derives the same keys) fund the same
//! addresses. They are test keys: anyone can recompute them, never hold real value with them.

use alloy_primitives::{keccak256, Address};
use k256::ecdsa::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::LedgerError;

/// Number of dev accounts funded at genesis (the same count as in `hardhat.config.js`).
pub const DEV_ACCOUNTS: usize = 10;

/// An externally owned account: the key signs transactions (JSON-RPC) and the address is the
/// sender everywhere.
#[derive(Clone)]
pub struct Account {
    key: SigningKey,
    address: Address,
}

impl Account {
    /// The account of a 32-byte secp256k1 private key.
    pub fn from_private_key(bytes: &[u8; 32]) -> Result<Self, LedgerError> {
        let key = SigningKey::from_bytes(bytes.into())
            .map_err(|_| LedgerError::InvalidKey("not a valid secp256k1 private key".into()))?;
        Ok(Self::from_signing_key(key))
    }

    /// The account of a hex private key (with or without `0x`).
    pub fn from_hex(hex_key: &str) -> Result<Self, LedgerError> {
        let raw =
            hex::decode(hex_key.trim().trim_start_matches("0x")).map_err(|e| LedgerError::InvalidKey(e.to_string()))?;
        let bytes: [u8; 32] =
            raw.try_into().map_err(|_| LedgerError::InvalidKey("a private key has 32 bytes".into()))?;
        Self::from_private_key(&bytes)
    }

    /// The account of a signing key.
    pub fn from_signing_key(key: SigningKey) -> Self {
        let address = address_of(key.verifying_key());
        Self { key, address }
    }

    /// Dev account `i`: private key sha256("aviary-dev-account-{i}"). Public test key.
    pub fn dev(i: usize) -> Self {
        let seed = Sha256::digest(format!("aviary-dev-account-{i}").as_bytes());
        Self::from_private_key(&seed.into()).expect("sha256 output is a valid key for i < 2^64")
    }

    /// The first [`DEV_ACCOUNTS`] dev accounts.
    pub fn dev_accounts() -> Vec<Self> {
        (0..DEV_ACCOUNTS).map(Self::dev).collect()
    }

    /// The address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The private key (signs transactions for the JSON-RPC ledger).
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }
}

/// The Ethereum address of a public key: the last 20 bytes of keccak256(x | y).
pub fn address_of(key: &VerifyingKey) -> Address {
    let point = key.to_encoded_point(false);
    Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..])
}

impl std::fmt::Debug for Account {
    // Never print the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account").field("address", &self.address).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_account_0_matches_hardhat_config() {
        // The address Hardhat prints for the first key of contracts/hardhat.config.js.
        let expected: Address = "0xa2721a07918A6c379bcFdDf2033884Ccd23CE0Ee".parse().unwrap();
        assert_eq!(Account::dev(0).address(), expected);
    }
}
