//! How the embedded ledger's blocks reach its data directory and come back: the changes of a
//! block as a [`BlockRecord`] for the log, and a record applied to the in-memory state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use revm::database::{CacheDB, EmptyDB};
use revm::primitives::KECCAK_EMPTY;
use revm::state::{AccountInfo, Bytecode, EvmState};

use super::EmbeddedLedger;
use crate::state_log::{AccountChange, BlockRecord, StateLog};
use crate::LedgerError;

/// The log is compacted into a new snapshot once it is larger than the snapshot, and at least
/// this large: replaying it at load then costs at most about as much as reading the snapshot.
pub(super) const COMPACT_MIN_BYTES: u64 = 4 << 20;

/// A persistent ledger's data directory, the log of blocks since the snapshot, and when to
/// compact it.
#[derive(Debug)]
pub(super) struct Persistence {
    pub dir: PathBuf,
    pub log: StateLog,
    pub generation: u64,
    pub compact_at: u64,
}

impl EmbeddedLedger {
    /// Replay the blocks that other handles on the data directory appended since this one
    /// last read or wrote the log (reloading the snapshot if they compacted it). Call it
    /// holding the directory's lock; an in-memory ledger has nothing to catch up on.
    pub fn catch_up(&mut self) -> Result<(), LedgerError> {
        let Some(p) = self.persistence.as_mut() else { return Ok(()) };
        match p.log.read_new()? {
            Some(records) => {
                let dir = p.dir.clone();
                for record in records {
                    self.apply_record(&dir, record)?;
                }
            }
            None => *self = Self::open_with_clock(p.dir.clone(), self.clock.clone())?,
        }
        Ok(())
    }

    /// Compact the log after every block (tests of compaction).
    #[cfg(test)]
    pub(crate) fn compact_after_every_block(&mut self) {
        if let Some(p) = self.persistence.as_mut() {
            p.compact_at = 0;
        }
    }

    pub(super) fn apply_record(&mut self, dir: &Path, record: BlockRecord) -> Result<(), LedgerError> {
        apply(&mut self.db, record.accounts)
            .map_err(|message| LedgerError::State { path: dir.display().to_string(), message })?;
        self.block_number = record.block_number;
        self.timestamp = record.timestamp;
        self.time_offset = record.time_offset;
        Ok(())
    }

    /// Append the latest block's changes to the log (a persistent ledger), and compact the
    /// log into a new snapshot once it has outgrown the last one.
    pub(super) fn persist(&mut self, accounts: BTreeMap<Address, AccountChange>) -> Result<(), LedgerError> {
        let record = BlockRecord {
            block_number: self.block_number,
            timestamp: self.timestamp,
            time_offset: self.time_offset,
            accounts,
        };
        let Some(p) = self.persistence.as_mut() else { return Ok(()) };
        p.log.append(&record)?;
        if p.log.len() <= p.compact_at {
            return Ok(());
        }
        let mut snap = self.snapshot();
        snap.generation += 1;
        let p = self.persistence.as_mut().expect("persistent");
        let bytes = snap.store(&p.dir)?;
        p.log = StateLog::create(&p.dir, snap.generation)?;
        p.generation = snap.generation;
        p.compact_at = if p.compact_at == 0 { 0 } else { bytes.max(COMPACT_MIN_BYTES) };
        Ok(())
    }
}

/// What a transaction's state `state` changes in `db` (before it is committed): every touched
/// account's balance and nonce, its code if the transaction gave it new code, and the slots
/// it wrote. (The contracts never self-destruct; since Cancun an account can only do so in the
/// transaction that created it, so it never reaches the database anyway.)
pub(super) fn changes(db: &CacheDB<EmptyDB>, state: &EvmState) -> BTreeMap<Address, AccountChange> {
    let mut out = BTreeMap::new();
    for (address, acc) in state.iter().filter(|(_, a)| a.is_touched() && !a.is_selfdestructed()) {
        let before = db.cache.accounts.get(address).map_or(KECCAK_EMPTY, |a| a.info.code_hash);
        let code = match &acc.info.code {
            Some(code) if acc.info.code_hash != before && acc.info.code_hash != KECCAK_EMPTY => {
                Some(code.original_bytes())
            }
            _ => None,
        };
        let storage =
            acc.storage.iter().filter(|(_, s)| s.is_changed()).map(|(k, s)| (*k, s.present_value())).collect();
        out.insert(*address, AccountChange { balance: acc.info.balance, nonce: acc.info.nonce, code, storage });
    }
    out
}

/// `address`'s balance and nonce as they are in `db` (a change outside a transaction: `fund`).
pub(super) fn current(db: &CacheDB<EmptyDB>, address: Address) -> AccountChange {
    let info = db.cache.accounts.get(&address).map(|a| a.info.clone()).unwrap_or_default();
    AccountChange { balance: info.balance, nonce: info.nonce, code: None, storage: BTreeMap::new() }
}

/// Apply a record's account changes to `db`.
pub(super) fn apply(db: &mut CacheDB<EmptyDB>, accounts: BTreeMap<Address, AccountChange>) -> Result<(), String> {
    for (address, change) in accounts {
        let old = db.cache.accounts.get(&address).map(|a| a.info.clone());
        let (code_hash, code) = match change.code {
            Some(bytes) => {
                let code = Bytecode::new_raw_checked(bytes).map_err(|e| format!("code of {address}: {e:?}"))?;
                (code.hash_slow(), Some(code))
            }
            None => match old {
                Some(info) => (info.code_hash, info.code),
                None => (KECCAK_EMPTY, None),
            },
        };
        let mut info = AccountInfo::new(change.balance, change.nonce, code_hash, Bytecode::default());
        info.code = code;
        db.insert_account_info(address, info);
        for (slot, value) in change.storage {
            db.insert_account_storage(address, slot, value).expect("EmptyDB cannot fail");
        }
    }
    Ok(())
}
