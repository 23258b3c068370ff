//! How the embedded ledger's blocks reach its data directory and come back: the changes of a
//! block as a [`BlockRecord`] for the log, and a record applied to the in-memory state.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloy_primitives::Address;
use revm::database::{CacheDB, EmptyDB};
use revm::primitives::KECCAK_EMPTY;
use revm::state::{AccountInfo, Bytecode, EvmState};

use crate::state_log::{AccountChange, StateLog};

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
