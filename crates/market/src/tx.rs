//! EIP-1559 transactions, RLP-encoded and signed locally, so the JSON-RPC ledger needs no
//! unlocked accounts on the node (`eth_sendRawTransaction` works with any EVM node).

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rlp::{Encodable, Header};
use k256::ecdsa::SigningKey;

use crate::LedgerError;

/// An unsigned EIP-1559 (type 2) transaction without access list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eip1559Tx {
    /// EIP-155 chain id (replay protection across chains).
    pub chain_id: u64,
    /// The sender's nonce.
    pub nonce: u64,
    /// Tip per gas, wei.
    pub max_priority_fee_per_gas: u128,
    /// Base fee + tip cap per gas, wei.
    pub max_fee_per_gas: u128,
    /// Gas limit.
    pub gas_limit: u64,
    /// Recipient; `None` creates a contract.
    pub to: Option<Address>,
    /// Wei sent along.
    pub value: U256,
    /// Calldata or init code.
    pub input: Bytes,
}

/// EIP-2718 type byte of EIP-1559 transactions.
const TYPE_EIP1559: u8 = 2;

impl Eip1559Tx {
    /// The hash the sender signs: keccak256(0x02 | rlp(fields)).
    pub fn signing_hash(&self) -> B256 {
        let mut buf = vec![TYPE_EIP1559];
        self.encode(&mut buf, None);
        keccak256(&buf)
    }

    /// Sign with `key`; returns the raw transaction (`0x02 | rlp(fields, y, r, s)`) and its hash.
    pub fn sign(&self, key: &SigningKey) -> Result<(Bytes, B256), LedgerError> {
        let sig = self.signature(key)?;
        let mut raw = vec![TYPE_EIP1559];
        self.encode(&mut raw, Some(sig));
        let hash = keccak256(&raw);
        Ok((raw.into(), hash))
    }

    /// (y odd, r, s) of the signature over [`Self::signing_hash`] (k256 signs low-s).
    pub fn signature(&self, key: &SigningKey) -> Result<(bool, U256, U256), LedgerError> {
        let (sig, recid) = key
            .sign_prehash_recoverable(self.signing_hash().as_slice())
            .map_err(|e| LedgerError::InvalidKey(e.to_string()))?;
        let r = U256::from_be_slice(&sig.r().to_bytes());
        let s = U256::from_be_slice(&sig.s().to_bytes());
        Ok((recid.is_y_odd(), r, s))
    }

    fn encode(&self, out: &mut Vec<u8>, sig: Option<(bool, U256, U256)>) {
        let mut payload = Vec::with_capacity(128 + self.input.len());
        self.chain_id.encode(&mut payload);
        self.nonce.encode(&mut payload);
        self.max_priority_fee_per_gas.encode(&mut payload);
        self.max_fee_per_gas.encode(&mut payload);
        self.gas_limit.encode(&mut payload);
        match &self.to {
            Some(to) => to.encode(&mut payload),
            None => payload.push(alloy_rlp::EMPTY_STRING_CODE),
        }
        self.value.encode(&mut payload);
        self.input.encode(&mut payload);
        payload.push(alloy_rlp::EMPTY_LIST_CODE); // access list
        if let Some((y_odd, r, s)) = sig {
            y_odd.encode(&mut payload);
            r.encode(&mut payload);
            s.encode(&mut payload);
        }
        Header { list: true, payload_length: payload.len() }.encode(out);
        out.extend_from_slice(&payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Account;
    use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};

    #[test]
    fn signature_recovers_the_sender() {
        let account = Account::dev(3);
        let tx = Eip1559Tx {
            chain_id: 31337,
            nonce: 7,
            max_priority_fee_per_gas: 1,
            max_fee_per_gas: 2_000_000_000,
            gas_limit: 21_000,
            to: Some(Account::dev(4).address()),
            value: U256::from(5),
            input: Bytes::new(),
        };
        let (y, r, s) = tx.signature(account.signing_key()).unwrap();
        let sig = Signature::from_scalars(r.to_be_bytes::<32>(), s.to_be_bytes::<32>()).unwrap();
        let key =
            VerifyingKey::recover_from_prehash(tx.signing_hash().as_slice(), &sig, RecoveryId::new(y, false)).unwrap();
        assert_eq!(crate::accounts::address_of(&key), account.address());

        let (raw, hash) = tx.sign(account.signing_key()).unwrap();
        assert_eq!(raw[0], 2);
        assert_eq!(hash, keccak256(&raw));
        // The signed encoding ends with r and s as RLP strings.
        let mut tail = Vec::new();
        r.encode(&mut tail);
        s.encode(&mut tail);
        assert!(raw.ends_with(&tail));
    }
}
