//! The embedded ledger's state on disk: one JSON file, replaced atomically (write a temporary
//! file, fsync, rename), so a crash leaves the previous or the new state and never a torn one.
//! It is written when the ledger is created and when its log of blocks since
//! ([`crate::state_log`]) is compacted, not after every block.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use alloy_primitives::{Address, Bytes, U256};
use serde::{Deserialize, Serialize};

use crate::LedgerError;

/// The state file's name inside the data directory.
pub const STATE_FILE: &str = "ledger.json";
/// Bumped when the layout changes; a file of another version is refused, not misread. Version 2
/// has a log beside it (version 1, the whole state rewritten after every block, reads as
/// generation 0 without a log).
pub const FORMAT_VERSION: u32 = 2;

/// Everything the embedded ledger needs to continue where it stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// The chain id the state was made with.
    pub chain_id: u64,
    /// Number of the latest block.
    pub block_number: u64,
    /// Timestamp of the latest block (Unix s).
    pub timestamp: u64,
    /// Seconds added to the clock by `advance_time`.
    pub time_offset: u64,
    /// Which log continues this state (see [`crate::state_log`]).
    #[serde(default)]
    pub generation: u64,
    /// Every account that exists.
    pub accounts: BTreeMap<Address, AccountState>,
}

/// One account: balance, nonce, code and non-zero storage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountState {
    /// Wei.
    pub balance: U256,
    /// Transactions sent (EOA) or contracts created (contract).
    pub nonce: u64,
    /// Runtime bytecode (empty for an EOA).
    #[serde(default, skip_serializing_if = "<[u8]>::is_empty")]
    pub code: Bytes,
    /// Storage slots with a non-zero value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub storage: BTreeMap<U256, U256>,
}

impl Snapshot {
    /// Read `dir/ledger.json`; `Ok(None)` if there is none yet.
    pub fn load(dir: &Path) -> Result<Option<Self>, LedgerError> {
        let path = dir.join(STATE_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_err(&path, e)),
        };
        let snap: Snapshot = serde_json::from_str(&text).map_err(|e| state_err(&path, e))?;
        if snap.version != FORMAT_VERSION && snap.version != 1 {
            let msg = format!("format version {} (this build reads {FORMAT_VERSION})", snap.version);
            return Err(state_err(&path, msg));
        }
        Ok(Some(snap))
    }

    /// Write `dir/ledger.json` atomically; returns its size in bytes.
    pub fn store(&self, dir: &Path) -> Result<u64, LedgerError> {
        fs::create_dir_all(dir).map_err(|e| state_err(dir, e))?;
        let path = dir.join(STATE_FILE);
        let tmp = dir.join(format!("{STATE_FILE}.tmp"));
        let text = serde_json::to_vec(self).map_err(|e| state_err(&path, e))?;
        let mut file = fs::File::create(&tmp).map_err(|e| state_err(&tmp, e))?;
        file.write_all(&text).map_err(|e| state_err(&tmp, e))?;
        file.sync_all().map_err(|e| state_err(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| state_err(&path, e))?;
        fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| state_err(dir, e))?;
        Ok(text.len() as u64)
    }
}

fn state_err(path: &Path, e: impl std::fmt::Display) -> LedgerError {
    LedgerError::State { path: path.display().to_string(), message: e.to_string() }
}
