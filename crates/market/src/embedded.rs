//! The embedded ledger: revm executing the contracts' real bytecode in this process, one block
//! per transaction, state persisted in a data directory.
//!
//! Chain rules are Osaka's (P256VERIFY at 0x100, the 2^24 transaction gas cap), chain id
//! [`CHAIN_ID`] (31337, the same as the Hardhat node of the tests), base fee and gas price
//! fixed at [`GAS_PRICE`] so fees are real but predictable. Each transaction is mined in a new
//! block whose timestamp comes from an injected clock (system time by default) plus the offset
//! that `advance_time` added, and is at least one second after the previous block's, as on
//! Hardhat. Mining a valid transaction commits its result whatever its status, as a real chain
//! does: a revert leaves only the sender's nonce and fee; an invalid transaction commits
//! nothing. A persistent ledger appends each block's changes to `<dir>/ledger.log` and fsyncs
//! them (see [`crate::state_log`]), and compacts the log into the snapshot `<dir>/ledger.json`
//! ([`crate::snapshot`]) once the log outgrows it; [`EmbeddedLedger::open`] loads the snapshot
//! and replays the log, and [`EmbeddedLedger::catch_up`] replays what other processes appended
//! since (the shared ledger, [`crate::SharedLedger`], calls it under the directory's lock).

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use alloy_primitives::{Address, Bytes, TxKind, U256};
use revm::context::result::{ExecutionResult, Output};
use revm::context::{BlockEnv, CfgEnv, Context, Journal, TxEnv};
use revm::database::{CacheDB, EmptyDB};
use revm::database_interface::WrapDatabaseRef;
use revm::primitives::hardfork::SpecId;
use revm::primitives::KECCAK_EMPTY;
use revm::state::{AccountInfo, Bytecode};
use revm::{DatabaseCommit, ExecuteEvm, MainBuilder};

use crate::ledger::{Ledger, Receipt, TX_GAS_CAP};
use crate::snapshot::{AccountState, Snapshot, FORMAT_VERSION, STATE_FILE};
use crate::state_log::StateLog;
use crate::{Account, LedgerError, Revert};

mod persist;
#[cfg(test)]
mod tests;
use persist::{Persistence, COMPACT_MIN_BYTES};

/// The embedded chain's id (Hardhat's default, so dev tools treat it as a local chain).
pub const CHAIN_ID: u64 = 31337;
/// Base fee and gas price, wei (1 gwei).
pub const GAS_PRICE: u128 = 1_000_000_000;
/// Block gas limit (Hardhat's default).
pub const BLOCK_GAS_LIMIT: u64 = 60_000_000;
/// What each dev account holds at genesis: 10 000 ETH.
pub const DEV_BALANCE: U256 = U256::from_limbs([0x19e0_c9ba_b240_0000, 0x21e, 0, 0]);

/// Unix seconds now; injected so tests and demos can run the chain on their own time.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// A revm chain in this process. See the module docs.
pub struct EmbeddedLedger {
    db: CacheDB<EmptyDB>,
    block_number: u64,
    timestamp: u64,
    time_offset: u64,
    clock: Clock,
    persistence: Option<Persistence>,
    accounts: Vec<Account>,
}

impl EmbeddedLedger {
    /// Open the ledger persisted in `dir`, or create it there (genesis: funded dev accounts).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, LedgerError> {
        Self::open_with_clock(dir, system_clock())
    }

    /// [`Self::open`] with an injected clock.
    pub fn open_with_clock(dir: impl AsRef<Path>, clock: Clock) -> Result<Self, LedgerError> {
        let dir = dir.as_ref().to_path_buf();
        // Opening an existing state only reads it (and cuts off a torn last record of its
        // log); a new one is written at once.
        let (mut ledger, generation) = match Snapshot::load(&dir)? {
            Some(snap) => {
                let generation = snap.generation;
                (Self::from_snapshot(&dir, snap, clock)?, generation)
            }
            None => {
                let ledger = Self::genesis(clock);
                ledger.snapshot().store(&dir)?;
                (ledger, 0)
            }
        };
        let snapshot_bytes = std::fs::metadata(dir.join(STATE_FILE)).map_or(0, |m| m.len());
        let (log, records) = StateLog::open(&dir, generation)?;
        for record in records {
            ledger.apply_record(&dir, record)?;
        }
        let compact_at = snapshot_bytes.max(COMPACT_MIN_BYTES);
        ledger.persistence = Some(Persistence { dir, log, generation, compact_at });
        Ok(ledger)
    }

    /// A ledger that lives in memory only (tests, benchmarks).
    pub fn in_memory() -> Self {
        Self::genesis(system_clock())
    }

    /// [`Self::in_memory`] with an injected clock.
    pub fn in_memory_with_clock(clock: Clock) -> Self {
        Self::genesis(clock)
    }

    /// An independent in-memory copy of this chain (property tests start many runs from one
    /// deployed state). It never writes to this ledger's directory.
    pub fn fork(&self) -> Self {
        Self {
            db: self.db.clone(),
            block_number: self.block_number,
            timestamp: self.timestamp,
            time_offset: self.time_offset,
            clock: self.clock.clone(),
            persistence: None,
            accounts: self.accounts.clone(),
        }
    }

    /// The data directory, if persistent.
    pub fn dir(&self) -> Option<&Path> {
        self.persistence.as_ref().map(|p| p.dir.as_path())
    }

    /// Number of the latest block.
    pub fn block_number(&self) -> u64 {
        self.block_number
    }

    fn genesis(clock: Clock) -> Self {
        let accounts = Account::dev_accounts();
        let mut db = CacheDB::new(EmptyDB::new());
        for a in &accounts {
            db.insert_account_info(a.address(), AccountInfo::from_balance(DEV_BALANCE));
        }
        let timestamp = clock();
        Self { db, block_number: 0, timestamp, time_offset: 0, clock, persistence: None, accounts }
    }

    fn from_snapshot(dir: &Path, snap: Snapshot, clock: Clock) -> Result<Self, LedgerError> {
        if snap.chain_id != CHAIN_ID {
            return Err(LedgerError::State {
                path: dir.display().to_string(),
                message: format!("chain id {} (expected {CHAIN_ID})", snap.chain_id),
            });
        }
        let mut db = CacheDB::new(EmptyDB::new());
        for (address, acc) in snap.accounts {
            let (code_hash, code) = if acc.code.is_empty() {
                (KECCAK_EMPTY, Bytecode::default())
            } else {
                let code = Bytecode::new_raw_checked(acc.code).map_err(|e| LedgerError::State {
                    path: dir.display().to_string(),
                    message: format!("code of {address}: {e:?}"),
                })?;
                (code.hash_slow(), code)
            };
            db.insert_account_info(address, AccountInfo::new(acc.balance, acc.nonce, code_hash, code));
            let entry = db.cache.accounts.get_mut(&address).expect("just inserted");
            entry.storage.extend(acc.storage);
        }
        Ok(Self {
            db,
            block_number: snap.block_number,
            timestamp: snap.timestamp,
            time_offset: snap.time_offset,
            clock,
            persistence: None,
            accounts: Account::dev_accounts(),
        })
    }

    /// The whole state as written to disk.
    pub fn snapshot(&self) -> Snapshot {
        let mut accounts = std::collections::BTreeMap::new();
        for (address, acc) in &self.db.cache.accounts {
            let info = &acc.info;
            let code = match &info.code {
                Some(code) if !code.is_empty() => code.original_bytes(),
                _ if info.code_hash != KECCAK_EMPTY && !info.code_hash.is_zero() => {
                    self.db.cache.contracts.get(&info.code_hash).map(|c| c.original_bytes()).unwrap_or_default()
                }
                _ => Bytes::new(),
            };
            let storage: std::collections::BTreeMap<U256, U256> =
                acc.storage.iter().filter(|(_, v)| !v.is_zero()).map(|(k, v)| (*k, *v)).collect();
            if info.balance.is_zero() && info.nonce == 0 && code.is_empty() && storage.is_empty() {
                continue;
            }
            accounts.insert(*address, AccountState { balance: info.balance, nonce: info.nonce, code, storage });
        }
        Snapshot {
            version: FORMAT_VERSION,
            chain_id: CHAIN_ID,
            block_number: self.block_number,
            timestamp: self.timestamp,
            time_offset: self.time_offset,
            generation: self.persistence.as_ref().map_or(0, |p| p.generation),
            accounts,
        }
    }

    /// Timestamp of the next block: the clock plus the offset, at least one second after the
    /// latest block.
    fn next_timestamp(&self) -> u64 {
        ((self.clock)() + self.time_offset).max(self.timestamp + 1)
    }

    fn block_env(&self, number: u64, timestamp: u64, basefee: u64) -> BlockEnv {
        BlockEnv {
            number: U256::from(number),
            timestamp: U256::from(timestamp),
            gas_limit: BLOCK_GAS_LIMIT,
            basefee,
            ..BlockEnv::default()
        }
    }

    fn nonce_of(&self, address: Address) -> u64 {
        self.db.cache.accounts.get(&address).map_or(0, |a| a.info.nonce)
    }

    /// Mine one transaction in a new block and commit it (see the module docs).
    fn execute(&mut self, from: &Account, kind: TxKind, data: Bytes, value: U256) -> Result<Receipt, LedgerError> {
        let number = self.block_number + 1;
        let timestamp = self.next_timestamp();
        let tx = TxEnv::builder()
            .caller(from.address())
            .kind(kind)
            .data(data)
            .value(value)
            .gas_limit(TX_GAS_CAP)
            .gas_price(GAS_PRICE)
            .nonce(self.nonce_of(from.address()))
            .chain_id(Some(CHAIN_ID))
            .build()
            .map_err(|e| LedgerError::InvalidTransaction(format!("{e:?}")))?;
        let block = self.block_env(number, timestamp, GAS_PRICE as u64);
        let mut evm = Context::<BlockEnv, TxEnv, CfgEnv, _, Journal<_>, ()>::new(&mut self.db, SpecId::OSAKA)
            .modify_cfg_chained(|cfg| cfg.chain_id = CHAIN_ID)
            .with_block(block)
            .build_mainnet();
        let outcome = evm.transact(tx).map_err(|e| LedgerError::InvalidTransaction(e.to_string()))?;
        drop(evm);
        let changes = persist::changes(&self.db, &outcome.state);
        self.db.commit(outcome.state);
        self.block_number = number;
        self.timestamp = timestamp;
        self.persist(changes)?;
        Ok(receipt(number, outcome.result))
    }
}

/// The receipt of an execution result.
fn receipt(block_number: u64, result: ExecutionResult) -> Receipt {
    let gas_used = result.tx_gas_used();
    let mut r = Receipt {
        tx_hash: None,
        block_number,
        status: false,
        gas_used,
        effective_gas_price: GAS_PRICE,
        logs: vec![],
        contract_address: None,
        revert_data: None,
        failure: None,
    };
    match result {
        ExecutionResult::Success { logs, output, .. } => {
            r.status = true;
            r.logs = logs;
            if let Output::Create(_, address) = output {
                r.contract_address = address;
            }
        }
        ExecutionResult::Revert { output, .. } => r.revert_data = Some(output),
        ExecutionResult::Halt { reason, .. } => r.failure = Some(format!("halted: {reason:?}")),
    }
    r
}

impl Ledger for EmbeddedLedger {
    fn chain_id(&self) -> u64 {
        CHAIN_ID
    }

    fn accounts(&self) -> &[Account] {
        &self.accounts
    }

    fn deploy(&mut self, from: &Account, init_code: Bytes) -> Result<Address, LedgerError> {
        let r = self.execute(from, TxKind::Create, init_code, U256::ZERO)?.into_result()?;
        r.contract_address.ok_or_else(|| LedgerError::Failed("creation returned no address".into()))
    }

    fn send(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Receipt, LedgerError> {
        self.execute(from, TxKind::Call(to), data, value)
    }

    fn call(&self, from: Address, to: Address, data: Bytes) -> Result<Bytes, LedgerError> {
        // A read runs in the would-be next block, without fees, on a read-only view of the state.
        let tx = TxEnv::builder()
            .caller(from)
            .kind(TxKind::Call(to))
            .data(data)
            .gas_limit(TX_GAS_CAP)
            .nonce(self.nonce_of(from))
            .chain_id(Some(CHAIN_ID))
            .build()
            .map_err(|e| LedgerError::InvalidTransaction(format!("{e:?}")))?;
        let block = self.block_env(self.block_number + 1, self.next_timestamp(), 0);
        let db = WrapDatabaseRef(&self.db);
        let mut evm = Context::<BlockEnv, TxEnv, CfgEnv, _, Journal<_>, ()>::new(db, SpecId::OSAKA)
            .modify_cfg_chained(|cfg| cfg.chain_id = CHAIN_ID)
            .with_block(block)
            .build_mainnet();
        let outcome = evm.transact(tx).map_err(|e| LedgerError::InvalidTransaction(e.to_string()))?;
        match outcome.result {
            ExecutionResult::Success { output, .. } => Ok(output.into_data()),
            ExecutionResult::Revert { output, .. } => Err(LedgerError::Revert(Revert::decode(&output))),
            ExecutionResult::Halt { reason, .. } => Err(LedgerError::Failed(format!("halted: {reason:?}"))),
        }
    }

    fn block_timestamp(&self) -> Result<u64, LedgerError> {
        Ok(self.timestamp)
    }

    fn pending_timestamp(&self) -> Result<u64, LedgerError> {
        Ok(self.next_timestamp())
    }

    fn balance(&self, address: Address) -> Result<U256, LedgerError> {
        Ok(self.db.cache.accounts.get(&address).map_or(U256::ZERO, |a| a.info.balance))
    }

    fn fund(&mut self, address: Address, amount: U256) -> Result<(), LedgerError> {
        let acc = self.db.load_account(address).expect("EmptyDB cannot fail");
        acc.info.balance += amount;
        if acc.account_state == revm::database::AccountState::NotExisting {
            acc.account_state = revm::database::AccountState::None;
        }
        self.persist([(address, persist::current(&self.db, address))].into())
    }

    fn advance_time(&mut self, secs: u64) -> Result<(), LedgerError> {
        // Blocks mined faster than one a second run ahead of the clock: advance from the
        // latest block, not from the clock.
        let target = self.timestamp + secs;
        self.time_offset = self.time_offset.max(target.saturating_sub((self.clock)()));
        self.timestamp = self.next_timestamp();
        self.block_number += 1;
        self.persist(Default::default())
    }
}
