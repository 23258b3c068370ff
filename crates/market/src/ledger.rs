//! The ledger abstraction: what the market client and the AS service need from an EVM chain.
//!
//! Both backends give a transaction the same meaning as a real chain: a valid transaction is
//! mined whether it succeeds or reverts, a revert undoes all of its effects except the sender's
//! nonce and gas fee, and the receipt says which it was. Reads (`call`) change nothing.

use alloy_primitives::{Address, Bytes, Log, B256, U256};

use crate::{Account, LedgerError, Revert};

/// Osaka's per-transaction gas cap (EIP-7825, 2^24): the gas limit of every transaction the
/// backends send, unless estimation gives a lower one.
pub const TX_GAS_CAP: u64 = 16_777_216;

/// The outcome of a mined transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The transaction hash (JSON-RPC); the embedded ledger does not sign, so it has none.
    pub tx_hash: Option<B256>,
    /// The block the transaction is in.
    pub block_number: u64,
    /// true: executed; false: reverted or halted (state unchanged but nonce and fee).
    pub status: bool,
    /// Gas used, as in the receipt (what the sender paid for).
    pub gas_used: u64,
    /// Wei paid per unit of gas.
    pub effective_gas_price: u128,
    /// Logs emitted (none when the transaction failed).
    pub logs: Vec<Log>,
    /// For a contract creation: the new contract.
    pub contract_address: Option<Address>,
    /// Revert data of a failed transaction (None: none could be had, e.g. out of gas).
    pub revert_data: Option<Bytes>,
    /// Why a failed transaction failed, when it did not revert with data (a halt reason).
    pub failure: Option<String>,
}

impl Receipt {
    /// The fee the sender paid: gas_used × effective_gas_price.
    pub fn fee(&self) -> U256 {
        U256::from(self.gas_used) * U256::from(self.effective_gas_price)
    }

    /// `Ok(self)` on success; the decoded contract error otherwise.
    pub fn into_result(self) -> Result<Self, LedgerError> {
        if self.status {
            return Ok(self);
        }
        match &self.revert_data {
            Some(data) => Err(LedgerError::Revert(Revert::decode(data))),
            None => Err(LedgerError::Failed(self.failure.clone().unwrap_or_else(|| "reverted".into()))),
        }
    }
}

/// A transaction handed to the chain: mined already (the embedded ledger mines a transaction as
/// it receives it), or waiting under its hash to be mined (a JSON-RPC node); look for its
/// receipt with [`Ledger::receipt`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    Mined(Receipt),
    Pending(B256),
}

/// An EVM chain that executes the contracts' bytecode.
///
/// Reads take `&self`; anything that mines a block takes `&mut self`.
pub trait Ledger {
    /// The chain id (EIP-155): part of every registration proof.
    fn chain_id(&self) -> u64;

    /// Accounts this ledger holds keys for; on a dev chain, the funded dev accounts.
    fn accounts(&self) -> &[Account];

    /// Deploy `init_code` (creation bytecode followed by the ABI-encoded constructor arguments).
    /// A failed deployment is an error.
    fn deploy(&mut self, from: &Account, init_code: Bytes) -> Result<Address, LedgerError>;

    /// Send a transaction and wait until it is mined. A revert is a receipt with
    /// `status == false`, not an error (use [`Receipt::into_result`]); errors are for
    /// transactions the chain refused or could not be reached about.
    fn send(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Receipt, LedgerError>;

    /// Hand a transaction to the chain without waiting for it to be mined, for a caller that
    /// records what it sent before it knows the outcome. Errors as for [`Self::send`]. Ledgers
    /// that mine as they receive return the receipt at once.
    fn submit(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Submitted, LedgerError> {
        self.send(from, to, data, value).map(Submitted::Mined)
    }

    /// The receipt of the transaction `hash` (from [`Submitted::Pending`]), once it is mined;
    /// `None` before, or if the chain does not know it (dropped). A failed transaction's
    /// receipt carries no revert data here.
    fn receipt(&self, hash: B256) -> Result<Option<Receipt>, LedgerError> {
        // Only ledgers that return `Submitted::Pending` hand out hashes to ask about.
        let _ = hash;
        Ok(None)
    }

    /// Execute a read-only call against the latest state. A revert is
    /// `Err(LedgerError::Revert)`.
    fn call(&self, from: Address, to: Address, data: Bytes) -> Result<Bytes, LedgerError>;

    /// Timestamp (Unix s) of the latest block.
    fn block_timestamp(&self) -> Result<u64, LedgerError>;

    /// The earliest timestamp (Unix s) a transaction sent now would be mined with: what
    /// decides whether a deadline has passed for it. By default the latest block's (a chain
    /// that mines blocks on its own is at most a block behind); the embedded ledger, which
    /// mines only when it gets a transaction, says what its next block would get.
    fn pending_timestamp(&self) -> Result<u64, LedgerError> {
        self.block_timestamp()
    }

    /// Native balance in wei.
    fn balance(&self, address: Address) -> Result<U256, LedgerError>;

    /// Give `address` `amount` wei more (the embedded ledger mints it; a JSON-RPC ledger sends
    /// it from its first account).
    fn fund(&mut self, address: Address, amount: U256) -> Result<(), LedgerError>;

    /// Mine a block at least `secs` after the latest block; later blocks continue from there.
    /// On a JSON-RPC ledger this uses the dev-node methods `evm_setNextBlockTimestamp` and
    /// `evm_mine` (Hardhat, Anvil): for tests and demos only.
    fn advance_time(&mut self, secs: u64) -> Result<(), LedgerError>;
}
