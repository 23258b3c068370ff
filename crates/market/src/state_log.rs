//! The embedded ledger's state changes on disk, block by block: an append-only log beside the
//! snapshot ([`crate::snapshot`]), so that a block costs one small append and an fsync instead
//! of rewriting the whole state.
//!
//! `ledger.log` is a header (`AVIARYLG`, then the generation, u64 little-endian) followed by
//! records `length (u32 LE) | checksum (first 8 bytes of keccak256 of the payload) | payload`,
//! the payload a [`BlockRecord`] in JSON. Records carry new values (balance, nonce, slot
//! values), not differences, so replaying a record that the snapshot already holds changes
//! nothing.
//!
//! The generation ties a log to its snapshot. Compaction writes the snapshot of generation
//! g + 1, then replaces the log by an empty one of g + 1 (a temporary file renamed over it); a
//! log older than the snapshot is what a compaction interrupted between the two steps left: its
//! records are in the snapshot, and it is replaced.
//!
//! A record is written with one `write` and fsynced before its block counts as mined. A crash
//! during the append leaves a torn last record (short, or failing its checksum): it is
//! ignored, with a message on stderr naming the file and offset, and cut off before anything
//! is appended after it. A bad record followed by more data is not a torn write but damage:
//! an error, never a silently shortened chain. A length that claims more than the file holds
//! looks like a torn append, but is damage when any bytes after its frame check out (they are
//! its own payload with a wrong length, or a later record): the format has no maximum record
//! size to bound the length by, so the cut is made only when it drops no record that checks
//! out.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use alloy_primitives::{keccak256, Address, Bytes, U256};
use serde::{Deserialize, Serialize};

use crate::LedgerError;

/// The log's name inside the data directory.
pub const LOG_FILE: &str = "ledger.log";
const MAGIC: &[u8; 8] = b"AVIARYLG";
const HEADER_LEN: u64 = 16;
/// Length and checksum in front of each payload.
const FRAME_LEN: usize = 12;

/// What one block (or `fund`, or `advance_time`) changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockRecord {
    pub block_number: u64,
    pub timestamp: u64,
    pub time_offset: u64,
    /// The accounts the block touched, with their new state.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accounts: BTreeMap<Address, AccountChange>,
}

/// An account's new balance and nonce, its code if the block gave it code, and the storage
/// slots the block wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountChange {
    pub balance: U256,
    pub nonce: u64,
    /// Runtime code, written once: in the block that created the contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Bytes>,
    /// Written slots and their new values (zero: cleared).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub storage: BTreeMap<U256, U256>,
}

/// A handle on the log of one generation: where its last good record ends.
#[derive(Debug)]
pub struct StateLog {
    path: PathBuf,
    generation: u64,
    end: u64,
}

impl StateLog {
    /// Open the log of `generation` in `dir` and read its records. No log, or one older than
    /// the snapshot: a new empty log. A torn last record is cut off.
    pub fn open(dir: &Path, generation: u64) -> Result<(Self, Vec<BlockRecord>), LedgerError> {
        let path = dir.join(LOG_FILE);
        match read_header(&path)? {
            Some(g) if g == generation => {}
            Some(g) if g > generation => {
                return Err(log_err(&path, format!("generation {g} is newer than the snapshot's {generation}")));
            }
            _ => return Ok((Self::create(dir, generation)?, vec![])),
        }
        let mut log = Self { path, generation, end: HEADER_LEN };
        let records = log.read_new()?.unwrap_or_default();
        Ok((log, records))
    }

    /// A new empty log of `generation`, replacing any log in `dir` atomically.
    pub fn create(dir: &Path, generation: u64) -> Result<Self, LedgerError> {
        let path = dir.join(LOG_FILE);
        let tmp = dir.join(format!("{LOG_FILE}.tmp"));
        let mut file = File::create(&tmp).map_err(|e| log_err(&tmp, e))?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&generation.to_le_bytes());
        file.write_all(&header).map_err(|e| log_err(&tmp, e))?;
        file.sync_all().map_err(|e| log_err(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| log_err(&path, e))?;
        sync_dir(dir)?;
        Ok(Self { path, generation, end: HEADER_LEN })
    }

    /// Bytes of records in the log.
    pub fn len(&self) -> u64 {
        self.end - HEADER_LEN
    }

    /// Whether the log holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records appended since this handle last read or wrote (another process's blocks).
    /// `None`: the log was replaced by a compaction; the caller reloads from the snapshot.
    pub fn read_new(&mut self) -> Result<Option<Vec<BlockRecord>>, LedgerError> {
        let mut file =
            OpenOptions::new().read(true).write(true).open(&self.path).map_err(|e| log_err(&self.path, e))?;
        let size = file.metadata().map_err(|e| log_err(&self.path, e))?.len();
        if read_header(&self.path)? != Some(self.generation) || size < self.end {
            return Ok(None);
        }
        if size == self.end {
            return Ok(Some(vec![]));
        }
        let mut bytes = Vec::with_capacity((size - self.end) as usize);
        file.seek(SeekFrom::Start(self.end)).map_err(|e| log_err(&self.path, e))?;
        file.read_to_end(&mut bytes).map_err(|e| log_err(&self.path, e))?;
        let (records, good, torn) = parse(&bytes).map_err(|m| log_err(&self.path, m))?;
        self.end += good as u64;
        if let Some(reason) = torn {
            eprintln!(
                "ledger {}: ignoring a torn last record at byte {} ({reason}); cutting it off",
                self.path.display(),
                self.end
            );
            file.set_len(self.end).map_err(|e| log_err(&self.path, e))?;
            file.sync_all().map_err(|e| log_err(&self.path, e))?;
        }
        Ok(Some(records))
    }

    /// Append one record and fsync it.
    pub fn append(&mut self, record: &BlockRecord) -> Result<(), LedgerError> {
        let payload = serde_json::to_vec(record).map_err(|e| log_err(&self.path, e))?;
        let len = u32::try_from(payload.len()).map_err(|_| log_err(&self.path, "record over 4 GiB"))?;
        let mut frame = Vec::with_capacity(FRAME_LEN + payload.len());
        frame.extend_from_slice(&len.to_le_bytes());
        frame.extend_from_slice(&keccak256(&payload)[..8]);
        frame.extend_from_slice(&payload);
        let mut file = OpenOptions::new().write(true).open(&self.path).map_err(|e| log_err(&self.path, e))?;
        file.seek(SeekFrom::Start(self.end)).map_err(|e| log_err(&self.path, e))?;
        file.write_all(&frame).map_err(|e| log_err(&self.path, e))?;
        file.sync_data().map_err(|e| log_err(&self.path, e))?;
        self.end += frame.len() as u64;
        Ok(())
    }
}

/// The log's generation; `None` if there is no log.
fn read_header(path: &Path) -> Result<Option<u64>, LedgerError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(log_err(path, e)),
    };
    let mut header = [0u8; HEADER_LEN as usize];
    file.read_exact(&mut header).map_err(|e| log_err(path, format!("header: {e}")))?;
    if &header[..8] != MAGIC {
        return Err(log_err(path, "not a ledger log (bad magic)"));
    }
    Ok(Some(u64::from_le_bytes(header[8..].try_into().expect("8 bytes"))))
}

/// The records in `bytes`, how many bytes they take, and why the rest (if any) is a torn
/// last record. A bad record with data after it is an error.
fn parse(bytes: &[u8]) -> Result<(Vec<BlockRecord>, usize, Option<String>), String> {
    let mut records = vec![];
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < FRAME_LEN {
            return Ok((records, at, Some(format!("{} bytes, shorter than a record's frame", rest.len()))));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let Some(payload) = FRAME_LEN.checked_add(len).and_then(|end| rest.get(FRAME_LEN..end)) else {
            // A length past the end is a torn append only if nothing after the frame checks
            // out; otherwise it is a damaged length, and cutting here would drop good records.
            let tail = &rest[FRAME_LEN..];
            if checks_out(&rest[4..FRAME_LEN], tail) || holds_a_record(tail) {
                return Err(format!(
                    "record at byte {} claims {len} payload bytes, more than the {} left, but good \
                     data follows: a damaged length, not a torn write",
                    HEADER_LEN as usize + at,
                    tail.len()
                ));
            }
            return Ok((records, at, Some(format!("{} of {len} payload bytes", tail.len()))));
        };
        let last = FRAME_LEN + len == rest.len();
        if keccak256(payload)[..8] != rest[4..FRAME_LEN] {
            if last {
                return Ok((records, at, Some("checksum mismatch".into())));
            }
            return Err(format!(
                "record at byte {} fails its checksum and is not the last one",
                HEADER_LEN as usize + at
            ));
        }
        let record =
            serde_json::from_slice(payload).map_err(|e| format!("record at byte {}: {e}", HEADER_LEN as usize + at))?;
        records.push(record);
        at += FRAME_LEN + len;
    }
    Ok((records, at, None))
}

/// Whether `payload` matches `checksum` (a frame's 8 checksum bytes).
fn checks_out(checksum: &[u8], payload: &[u8]) -> bool {
    keccak256(payload)[..8] == *checksum
}

/// Whether a whole record that checks out starts anywhere in `bytes`.
///
/// An append is one `write` at the end of the file, so a crash leaves a prefix of one frame and
/// nothing after it; such a prefix is JSON text, in which a frame matching its 8-byte checksum
/// turns up with probability about 2^-64 per position. So a record found here means the length
/// in front of it was damaged, and the rule never drops a record that checks out. The bound on
/// the length and the payload's braces (a `BlockRecord` is a JSON object) skip the hashing at
/// nearly every position: inside JSON text a length reads as at least 0x20202020, more than
/// any tail holds, so the scan is linear in practice.
fn holds_a_record(bytes: &[u8]) -> bool {
    (0..bytes.len()).any(|p| {
        let rest = &bytes[p..];
        let Some(len) = rest.get(..4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize) else {
            return false;
        };
        let Some(payload) = FRAME_LEN.checked_add(len).and_then(|end| rest.get(FRAME_LEN..end)) else {
            return false;
        };
        payload.first() == Some(&b'{') && payload.last() == Some(&b'}') && checks_out(&rest[4..FRAME_LEN], payload)
    })
}

/// Make a rename in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), LedgerError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| log_err(dir, e))
}

fn log_err(path: &Path, e: impl std::fmt::Display) -> LedgerError {
    LedgerError::State { path: path.display().to_string(), message: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_scratch::ScratchDir;

    fn record(n: u64) -> BlockRecord {
        let mut accounts = BTreeMap::new();
        let storage = [(U256::from(n), U256::from(n * 7))].into();
        accounts.insert(
            Address::repeat_byte(n as u8),
            AccountChange { balance: U256::from(n), nonce: n, code: None, storage },
        );
        BlockRecord { block_number: n, timestamp: 1000 + n, time_offset: 0, accounts }
    }

    #[test]
    fn records_come_back_in_order_and_a_second_handle_reads_the_tail() {
        let d = ScratchDir::new("state-log-tail");
        let (mut a, none) = StateLog::open(&d, 3).unwrap();
        assert!(none.is_empty());
        let (mut b, _) = StateLog::open(&d, 3).unwrap();
        a.append(&record(1)).unwrap();
        a.append(&record(2)).unwrap();
        assert_eq!(b.read_new().unwrap(), Some(vec![record(1), record(2)]));
        b.append(&record(3)).unwrap();
        assert_eq!(a.read_new().unwrap(), Some(vec![record(3)]));
        assert_eq!(StateLog::open(&d, 3).unwrap().1, vec![record(1), record(2), record(3)]);
        // A compaction replaces the log: the old handle is told to reload.
        StateLog::create(&d, 4).unwrap();
        assert_eq!(a.read_new().unwrap(), None);
        // An older log than the snapshot is replaced; a newer one is refused.
        assert!(StateLog::open(&d, 5).unwrap().1.is_empty());
        assert!(StateLog::open(&d, 4).is_err());
    }

    #[test]
    fn a_torn_last_record_is_cut_off_at_any_length() {
        let d = ScratchDir::new("state-log-torn");
        let (mut log, _) = StateLog::open(&d, 0).unwrap();
        log.append(&record(1)).unwrap();
        let good = fs::metadata(d.join(LOG_FILE)).unwrap().len();
        log.append(&record(2)).unwrap();
        let full = fs::read(d.join(LOG_FILE)).unwrap();
        for cut in good as usize + 1..full.len() {
            fs::write(d.join(LOG_FILE), &full[..cut]).unwrap();
            let (mut reopened, records) = StateLog::open(&d, 0).unwrap();
            assert_eq!(records, vec![record(1)], "cut at {cut}");
            assert_eq!(fs::metadata(d.join(LOG_FILE)).unwrap().len(), good, "torn tail cut off");
            // Appending after the cut gives a clean log.
            reopened.append(&record(3)).unwrap();
            assert_eq!(StateLog::open(&d, 0).unwrap().1, vec![record(1), record(3)]);
        }
    }

    #[test]
    fn a_damaged_record_before_the_last_is_an_error() {
        let d = ScratchDir::new("state-log-damaged");
        let (mut log, _) = StateLog::open(&d, 0).unwrap();
        log.append(&record(1)).unwrap();
        log.append(&record(2)).unwrap();
        let mut bytes = fs::read(d.join(LOG_FILE)).unwrap();
        bytes[HEADER_LEN as usize + FRAME_LEN + 3] ^= 1;
        fs::write(d.join(LOG_FILE), &bytes).unwrap();
        let e = StateLog::open(&d, 0).unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains(LOG_FILE), "{e}");
        // The last record damaged in place is a torn write: dropped.
        let mut bytes = fs::read(d.join(LOG_FILE)).unwrap();
        bytes[HEADER_LEN as usize + FRAME_LEN + 3] ^= 1;
        let n = bytes.len();
        bytes[n - 2] ^= 1;
        fs::write(d.join(LOG_FILE), &bytes).unwrap();
        assert_eq!(StateLog::open(&d, 0).unwrap().1, vec![record(1)]);
    }

    /// A length field damaged to claim more than the file holds, with good records after it,
    /// is damage, not a torn tail: an error, and the file keeps every byte.
    #[test]
    fn a_damaged_length_before_later_records_is_an_error_not_a_cut() {
        let d = ScratchDir::new("state-log-damaged-length");
        let (mut log, _) = StateLog::open(&d, 0).unwrap();
        for n in 1..=3 {
            log.append(&record(n)).unwrap();
        }
        let good = fs::read(d.join(LOG_FILE)).unwrap();
        let first_len = u32::from_le_bytes(good[16..20].try_into().unwrap()) as usize;
        let second = HEADER_LEN as usize + FRAME_LEN + first_len;
        for claimed in [good.len() as u32, u32::MAX, 0x0100_0000] {
            let mut bytes = good.clone();
            bytes[second..second + 4].copy_from_slice(&claimed.to_le_bytes());
            fs::write(d.join(LOG_FILE), &bytes).unwrap();
            let e = StateLog::open(&d, 0).unwrap_err().to_string();
            assert!(e.contains(LOG_FILE) && e.contains(&format!("byte {second}")), "{claimed}: {e}");
            assert_eq!(fs::read(d.join(LOG_FILE)).unwrap(), bytes, "{claimed}: nothing cut off");
        }
        // The last record's length damaged: its bytes still check out up to the end of the
        // file, so it is damage too, not a torn write to drop.
        let third = second + FRAME_LEN + u32::from_le_bytes(good[second..second + 4].try_into().unwrap()) as usize;
        let mut bytes = good.clone();
        bytes[third..third + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        fs::write(d.join(LOG_FILE), &bytes).unwrap();
        let e = StateLog::open(&d, 0).unwrap_err().to_string();
        assert!(e.contains(&format!("byte {third}")), "{e}");
        assert_eq!(fs::read(d.join(LOG_FILE)).unwrap(), bytes);
    }
}
