//! Errors of the ledgers and the decoding of revert data into named contract errors.
//!
//! Revert data is decoded against the errors of all four contracts at once: errors raised by
//! BandwidthAssets (or AsRegistry) inside a Market call bubble up unchanged, so the contract
//! that was called does not say which ABI the error comes from.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use alloy_json_abi::{JsonAbi, Param};
use alloy_primitives::{Address, Bytes, FixedBytes, U256};
use alloy_sol_types::SolError;

use crate::bindings::ARTIFACTS;

/// Everything that can go wrong talking to a ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A contract rejected the call with a (decoded) error.
    #[error("reverted: {0}")]
    Revert(Revert),
    /// The transaction failed without revert data (out of gas, invalid opcode, ...).
    #[error("transaction failed: {0}")]
    Failed(String),
    /// The ledger refused the transaction before executing it (nonce, funds, gas cap, ...).
    #[error("invalid transaction: {0}")]
    InvalidTransaction(String),
    /// The JSON-RPC node answered with an error or an answer this client does not understand.
    #[error("JSON-RPC {method}: {message}")]
    Rpc {
        /// The method called.
        method: String,
        /// What went wrong.
        message: String,
    },
    /// The node could not be reached.
    #[error("transport to {url}: {message}")]
    Transport {
        /// The node's URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The transaction was not mined in time.
    #[error("no receipt for transaction {0} in time")]
    Timeout(String),
    /// Reading or writing the embedded ledger's state.
    #[error("ledger state {path}: {message}")]
    State {
        /// The file or directory.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A private key could not be used.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// Return data or an event did not decode as expected.
    #[error("unexpected contract output: {0}")]
    Decode(String),
}

/// A contract's revert, decoded: `name` is the Solidity error (`PaymentTooLow`), `args` its
/// named arguments formatted for people. `Error(string)` and `Panic(uint256)` decode too; data
/// that matches no known error keeps `name = "UnknownError"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revert {
    /// The error's name.
    pub name: String,
    /// (parameter name, value) in declaration order.
    pub args: Vec<(String, String)>,
    /// The raw revert data.
    pub data: Bytes,
}

impl Revert {
    /// Decode revert data against the errors of all contracts.
    pub fn decode(data: &[u8]) -> Self {
        let data_bytes = Bytes::copy_from_slice(data);
        if data.is_empty() {
            return Self { name: "EmptyRevert".into(), args: vec![], data: data_bytes };
        }
        if let Ok(r) = alloy_sol_types::Revert::abi_decode(data) {
            let args = vec![("reason".into(), r.reason)];
            return Self { name: "Error".into(), args, data: data_bytes };
        }
        if let Ok(p) = alloy_sol_types::Panic::abi_decode(data) {
            let args = vec![("code".into(), format!("{:#x}", p.code))];
            return Self { name: "Panic".into(), args, data: data_bytes };
        }
        if data.len() >= 4 {
            let selector: [u8; 4] = data[..4].try_into().expect("4 bytes");
            if let Some(err) = error_table().get(&selector) {
                if let Some(args) = format_words(&err.inputs, &data[4..]) {
                    let name = err.name.clone();
                    return Self { name, args, data: data_bytes };
                }
            }
        }
        let args = vec![("data".into(), format!("{data_bytes}"))];
        Self { name: "UnknownError".into(), args, data: data_bytes }
    }

    /// The revert as a typed `sol!` error (e.g. `Market::PaymentTooLow`), if it is one.
    pub fn as_error<E: SolError>(&self) -> Option<E> {
        E::abi_decode(&self.data).ok()
    }

    /// The value of argument `name`, as formatted.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for Revert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        for (i, (name, value)) in self.args.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{name}={value}")?;
        }
        write!(f, ")")
    }
}

impl LedgerError {
    /// The decoded revert, if this is one.
    pub fn revert(&self) -> Option<&Revert> {
        match self {
            LedgerError::Revert(r) => Some(r),
            _ => None,
        }
    }

    /// The contract error's name, if this is a revert (`"PaymentTooLow"`).
    pub fn revert_name(&self) -> Option<&str> {
        self.revert().map(|r| r.name.as_str())
    }
}

/// Errors of all contract ABIs by selector. Errors with the same signature in two contracts
/// (NotAssetOwner, InvalidRecipient) have the same selector and the same meaning.
fn error_table() -> &'static HashMap<[u8; 4], alloy_json_abi::Error> {
    static TABLE: OnceLock<HashMap<[u8; 4], alloy_json_abi::Error>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = HashMap::new();
        for (_, json) in ARTIFACTS {
            let abi = abi_of(json);
            for err in abi.errors() {
                table.insert(err.selector().0, err.clone());
            }
        }
        table
    })
}

/// The `abi` of a committed artifact (the artifacts are compiled in; a bad one is a build bug).
pub(crate) fn abi_of(artifact: &str) -> JsonAbi {
    let value: serde_json::Value = serde_json::from_str(artifact).expect("artifact is JSON");
    serde_json::from_value(value["abi"].clone()).expect("artifact has an ABI")
}

/// Format ABI-encoded arguments of static one-word types; `None` if the data does not fit.
fn format_words(params: &[Param], data: &[u8]) -> Option<Vec<(String, String)>> {
    if data.len() != 32 * params.len() {
        return None;
    }
    let mut out = Vec::with_capacity(params.len());
    for (param, word) in params.iter().zip(data.chunks_exact(32)) {
        let word = FixedBytes::<32>::from_slice(word);
        let ty = param.ty.as_str();
        let value = if ty.starts_with("uint") {
            U256::from_be_bytes(word.0).to_string()
        } else if ty.starts_with("int") {
            alloy_primitives::I256::from_be_bytes(word.0).to_string()
        } else if ty == "address" {
            Address::from_word(word).to_checksum(None)
        } else if ty == "bool" {
            (word[31] != 0).to_string()
        } else {
            format!("{word}")
        };
        out.push((param.name.clone(), value));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::{BandwidthAssets, Market};
    use alloy_sol_types::SolError;

    #[test]
    fn decodes_market_and_asset_errors_by_name() {
        let data = Market::PaymentTooLow { required: U256::from(100), available: U256::from(7) }.abi_encode();
        let r = Revert::decode(&data);
        assert_eq!(r.to_string(), "PaymentTooLow(required=100, available=7)");
        assert_eq!(r.as_error::<Market::PaymentTooLow>().unwrap().required, U256::from(100));

        let data = BandwidthAssets::OffGranularity { time: 61, timeGranularity: 60 }.abi_encode();
        assert_eq!(Revert::decode(&data).to_string(), "OffGranularity(time=61, timeGranularity=60)");
    }

    #[test]
    fn unknown_and_empty_reverts_keep_their_data() {
        assert_eq!(Revert::decode(&[]).name, "EmptyRevert");
        let r = Revert::decode(&[1, 2, 3, 4, 5]);
        assert_eq!(r.name, "UnknownError");
        assert_eq!(r.data.as_ref(), &[1, 2, 3, 4, 5]);
    }
}
