//! The embedded ledger shared by the processes of one machine through its data directory:
//! each handle loads the state once and keeps it in memory; every operation takes an
//! exclusive lock on `<dir>/lock`, first replays the blocks other processes appended to the
//! log since ([`EmbeddedLedger::catch_up`]), and (for a transaction) appends its own block
//! before unlocking. The AS services and the market client of a run use one directory this
//! way, as they would use one chain node; each process keeps its own accounts.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alloy_primitives::{Address, Bytes, U256};

use crate::embedded::CHAIN_ID;
use crate::{Account, EmbeddedLedger, Ledger, LedgerError, Receipt};

pub struct SharedLedger {
    dir: PathBuf,
    accounts: Vec<Account>,
    /// The chain as this handle last saw it; `None` until loaded, and after a failure that
    /// may have left memory and disk apart (it is then loaded again from disk).
    chain: Mutex<Option<EmbeddedLedger>>,
}

impl SharedLedger {
    /// Opens (or creates) the ledger in `dir`.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, LedgerError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| state_error(&dir, e))?;
        let s = Self { dir, accounts: Account::dev_accounts(), chain: Mutex::new(None) };
        s.with(|_| Ok(()))?;
        Ok(s)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` on the chain as it is on disk, holding the directory's lock.
    fn with<R>(&self, f: impl FnOnce(&mut EmbeddedLedger) -> Result<R, LedgerError>) -> Result<R, LedgerError> {
        let lock = File::create(self.dir.join("lock")).map_err(|e| state_error(&self.dir, e))?;
        lock.lock().map_err(|e| state_error(&self.dir, e))?;
        // A panic while another thread held it leaves the chain unknown: load it again.
        let mut chain = self.chain.lock().unwrap_or_else(|poisoned| {
            let mut chain = poisoned.into_inner();
            *chain = None;
            chain
        });
        let ledger = match chain.as_mut() {
            Some(ledger) => {
                ledger.catch_up()?;
                ledger
            }
            None => chain.insert(EmbeddedLedger::open(&self.dir)?),
        };
        let result = f(ledger);
        if let Err(LedgerError::State { .. }) = result {
            // A block that could not be written may be in memory only.
            *chain = None;
        }
        result
        // The lock is released when `lock` is dropped, after the block was appended.
    }
}

fn state_error(dir: &Path, e: std::io::Error) -> LedgerError {
    LedgerError::State { path: dir.display().to_string(), message: e.to_string() }
}

impl Ledger for SharedLedger {
    fn chain_id(&self) -> u64 {
        CHAIN_ID
    }

    fn accounts(&self) -> &[Account] {
        &self.accounts
    }

    fn deploy(&mut self, from: &Account, init_code: Bytes) -> Result<Address, LedgerError> {
        self.with(|l| l.deploy(from, init_code))
    }

    fn send(&mut self, from: &Account, to: Address, data: Bytes, value: U256) -> Result<Receipt, LedgerError> {
        self.with(|l| l.send(from, to, data, value))
    }

    fn call(&self, from: Address, to: Address, data: Bytes) -> Result<Bytes, LedgerError> {
        self.with(|l| l.call(from, to, data))
    }

    fn block_timestamp(&self) -> Result<u64, LedgerError> {
        self.with(|l| l.block_timestamp())
    }

    fn pending_timestamp(&self) -> Result<u64, LedgerError> {
        self.with(|l| l.pending_timestamp())
    }

    fn balance(&self, address: Address) -> Result<U256, LedgerError> {
        self.with(|l| l.balance(address))
    }

    fn fund(&mut self, address: Address, amount: U256) -> Result<(), LedgerError> {
        self.with(|l| l.fund(address, amount))
    }

    fn advance_time(&mut self, secs: u64) -> Result<(), LedgerError> {
        self.with(|l| l.advance_time(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_handles_see_each_others_transactions() {
        let dir = aviary_scratch::ScratchDir::new("shared");
        let mut a = SharedLedger::open(&dir).unwrap();
        let b = SharedLedger::open(&dir).unwrap();
        let who = Address::repeat_byte(0x42);
        a.fund(who, U256::from(7)).unwrap();
        assert_eq!(b.balance(who).unwrap(), U256::from(7));
        // Concurrent writers from threads (as from processes) lose nothing.
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let dir = dir.to_path_buf();
                std::thread::spawn(move || {
                    let mut l = SharedLedger::open(&dir).unwrap();
                    for _ in 0..5 {
                        l.fund(who, U256::from(1)).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(b.balance(who).unwrap(), U256::from(27));
    }

    #[test]
    fn handles_interleave_across_compactions_and_reopening() {
        let dir = aviary_scratch::ScratchDir::new("shared-compact");
        let mut a = SharedLedger::open(&dir).unwrap();
        let mut b = SharedLedger::open(&dir).unwrap();
        // `a` compacts the log after each of its blocks; `b` only appends.
        a.chain.lock().unwrap().as_mut().unwrap().compact_after_every_block();
        let who = Address::repeat_byte(0x43);
        for k in 1..=6u64 {
            let (writer, reader) = if k % 2 == 0 { (&mut a, &b) } else { (&mut b, &a) };
            writer.fund(who, U256::from(k)).unwrap();
            assert_eq!(reader.balance(who).unwrap(), U256::from(k * (k + 1) / 2), "after {k} blocks");
        }
        let blocks = a.with(|l| Ok(l.block_number())).unwrap();
        assert_eq!(b.with(|l| Ok(l.block_number())).unwrap(), blocks);
        // A new process loads the same chain.
        let c = SharedLedger::open(&dir).unwrap();
        assert_eq!(c.balance(who).unwrap(), U256::from(21));
    }
}
