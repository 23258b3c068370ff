//! The one ResID allocator of an AS, shared by every process that issues reservations for it:
//! the control service (operator grants) and the AS reservation service (market deliveries).
//!
//! Two allocators for one AS would hand out the same ResID on one ingress for overlapping
//! reservations, and the routers would police both on one slot. So the allocator lives in one
//! file, and every assignment is a transaction on it: take an exclusive lock (`flock` on a lock
//! file beside it), read the file, assign, write a temporary file, `fsync` it, rename it over the
//! old one, release the lock. Each process sees the other's assignments, a crash at any point
//! leaves either the old or the new state, and nothing is cached between transactions.
//!
//! The same file keeps the AS's bandwidth book ([`admission`]): admission is decided in the same
//! transactions, so the ResIDs and the bandwidth promised are always consistent with each other.

pub mod admission;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use aviary_hummingbird::ResIdAllocator;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use admission::{AdmissionError, BandwidthBook, Direction, Holder, Leg, Limits};

#[derive(Debug, Error)]
pub enum StoreError<E> {
    #[error("ResID store {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("ResID store {path} is corrupt: {source}")]
    Corrupt { path: PathBuf, source: serde_json::Error },
    /// The transaction's own error; nothing was written.
    #[error(transparent)]
    Refused(E),
}

/// What the store holds: the ResIDs and the bandwidth promised on each interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsReservations {
    pub resids: ResIdAllocator,
    #[serde(default)]
    pub bandwidth: BandwidthBook,
}

impl AsReservations {
    /// Forgets what ended at or before `now`.
    pub fn expire(&mut self, now: u64) {
        self.resids.expire(now);
        self.bandwidth.expire(now);
    }
}

/// The ResID allocator file of an AS.
#[derive(Clone, Debug)]
pub struct ResIdStore {
    path: PathBuf,
    lock: PathBuf,
    /// The largest ResID assigned (the routers' policing array, as configured now): the bound
    /// of a fresh allocator, and of one read from the file, which keeps the bound of whoever
    /// wrote it last.
    max_res_id: u32,
}

impl ResIdStore {
    /// The store in `path` (created at the first assignment), with ResIDs up to `max_res_id`.
    pub fn new(path: impl Into<PathBuf>, max_res_id: u32) -> Self {
        let path = path.into();
        let lock = path.with_extension("lock");
        Self { path, lock, max_res_id }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the allocator under the store's lock; its changes are kept only if it returns
    /// `Ok`.
    pub fn update<R, E>(&self, f: impl FnOnce(&mut ResIdAllocator) -> Result<R, E>) -> Result<R, StoreError<E>> {
        self.transact(|s| f(&mut s.resids))
    }

    /// Runs `f` on the whole store (ResIDs and bandwidth book) under its lock; its changes are
    /// kept only if it returns `Ok`.
    pub fn transact<R, E>(&self, f: impl FnOnce(&mut AsReservations) -> Result<R, E>) -> Result<R, StoreError<E>> {
        let io = |source| StoreError::Io { path: self.path.clone(), source };
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&self.lock).map_err(io)?;
        let _held = Locked::exclusive(&lock).map_err(io)?;
        let mut alloc = self.read().map_err(|e| match e {
            ReadError::Io(e) => io(e),
            ReadError::Json(source) => StoreError::Corrupt { path: self.path.clone(), source },
        })?;
        let r = f(&mut alloc).map_err(StoreError::Refused)?;
        self.write(&alloc).map_err(io)?;
        Ok(r)
    }

    /// The store as it is now (empty if there is no file yet).
    pub fn snapshot(&self) -> Result<AsReservations, StoreError<std::convert::Infallible>> {
        self.transact(|a| Ok(a.clone()))
    }

    /// The store as it is now, read without taking the lock or writing (writes are atomic
    /// renames, so a reader never sees half a file): for monitoring.
    pub fn peek(&self) -> Result<AsReservations, StoreError<std::convert::Infallible>> {
        self.read().map_err(|e| match e {
            ReadError::Io(source) => StoreError::Io { path: self.path.clone(), source },
            ReadError::Json(source) => StoreError::Corrupt { path: self.path.clone(), source },
        })
    }

    fn read(&self) -> Result<AsReservations, ReadError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                let mut s = serde_json::from_slice(&bytes).or_else(|e| {
                    // A store written before it kept bandwidth: the bare allocator. Its
                    // reservations keep their ResIDs; their bandwidth was never recorded, so it is
                    // not counted.
                    serde_json::from_slice(&bytes)
                        .map(|resids| AsReservations { resids, bandwidth: BandwidthBook::default() })
                        .map_err(|_| ReadError::Json(e))
                })?;
                // The file's bound is the one its first writer was configured with: after the
                // operator shrinks the routers' policing array, ResIDs beyond it would be
                // handed out and never policed.
                s.resids.set_max_res_id(self.max_res_id);
                Ok(s)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(AsReservations { resids: ResIdAllocator::new(self.max_res_id), bandwidth: BandwidthBook::default() })
            }
            Err(e) => Err(ReadError::Io(e)),
        }
    }

    fn write(&self, alloc: &AsReservations) -> std::io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut f = File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(alloc).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }
}

enum ReadError {
    Io(std::io::Error),
    Json(serde_json::Error),
}

/// An exclusive `flock` on a file, released when dropped (or when the process dies).
struct Locked<'a>(&'a File);

impl<'a> Locked<'a> {
    fn exclusive(f: &'a File) -> std::io::Result<Self> {
        // SAFETY: flock on a valid, open file descriptor.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self(f))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: as above; unlocking a lock we hold.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_hummingbird::ResIdError;
    use aviary_scratch::ScratchDir;

    #[test]
    fn two_handles_assigning_at_once_never_share_a_resid() {
        let d = ScratchDir::new("resids-threads");
        let store = ResIdStore::new(d.join("resids.json"), 10_000);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                // Each thread opens the store itself, as a second process would.
                let s = ResIdStore::new(store.path(), 10_000);
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| s.update(|a| a.assign(1, 100, 200)).map_err(|e| e.to_string()).unwrap())
                        .collect::<Vec<u32>>()
                })
            })
            .collect();
        let mut all: Vec<u32> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..200).collect::<Vec<u32>>());
    }

    #[test]
    fn a_refused_transaction_writes_nothing_and_a_corrupt_file_is_named() {
        let d = ScratchDir::new("resids-refused");
        let store = ResIdStore::new(d.join("resids.json"), 10);
        store.update(|a| a.assign(1, 0, 10)).unwrap();
        let r: Result<(), StoreError<&str>> = store.update(|a| {
            a.assign(1, 0, 10).unwrap();
            Err("no")
        });
        assert!(matches!(r, Err(StoreError::Refused("no"))));
        assert_eq!(store.snapshot().unwrap().resids.held(1).len(), 1);
        // A store written before it kept bandwidth (the bare allocator) is read.
        let mut old = ResIdAllocator::new(10);
        old.assign(2, 0, 10).unwrap();
        std::fs::write(store.path(), serde_json::to_vec(&old).unwrap()).unwrap();
        assert_eq!(store.snapshot().unwrap().resids, old);
        std::fs::write(store.path(), "{").unwrap();
        let e = store.snapshot().unwrap_err().to_string();
        assert!(e.contains("resids.json") && e.contains("corrupt"), "{e}");
    }

    /// An operator who shrinks `max_res_id` (the routers' policing array) gets no ResID beyond
    /// the new bound from a store created under the old one; what is held stays held.
    #[test]
    fn the_configured_bound_holds_for_a_store_made_under_another() {
        let d = ScratchDir::new("resids-bound");
        let wide = ResIdStore::new(d.join("resids.json"), 5000);
        assert_eq!(wide.update(|a| a.assign(1, 0, 10)).unwrap(), 0);
        let narrow = ResIdStore::new(wide.path(), 1);
        assert_eq!(narrow.update(|a| a.assign(1, 0, 10)).unwrap(), 1);
        let r = narrow.update(|a| a.assign(1, 0, 10));
        assert!(matches!(r, Err(StoreError::Refused(ResIdError::Exhausted(1)))), "{r:?}");
        assert_eq!(narrow.snapshot().unwrap().resids.held(1).len(), 2);
        // Raised again, the bound is the new one, not the smaller one the file was last written
        // with.
        assert_eq!(wide.update(|a| a.assign(1, 0, 10)).unwrap(), 2);
    }
}
