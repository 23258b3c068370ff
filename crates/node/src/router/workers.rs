//! What the router's workers share besides the links ([`super::egress`]): the queues on which
//! a worker hands a packet to its owner ([`super::steering`]), the wake-up each worker waits
//! on beside its sockets, the pipeline changes the leader (worker 0, which takes the
//! management commands) passes to every other worker, and the board on which each worker
//! publishes its counters for `/metrics` to sum.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Mutex;

use super::metrics::RouterStatus;

/// A packet on its way to the worker that owns it.
pub struct Handed {
    /// The socket it arrived on (0: inside, else link `k - 1`).
    pub k: usize,
    pub buf: Vec<u8>,
}

/// A change of every worker's pipeline, made by the leader after its own pipeline took it.
#[derive(Clone, Debug)]
pub enum PipelineChange {
    Mechanism { name: String, request: serde_json::Value },
    MasterSecret { secret: Vec<u8>, previous_until_ns: u64, rotated_at_s: u64 },
}

/// A change and where the worker says it is in force.
pub type ChangeMsg = (PipelineChange, Sender<()>);

/// An eventfd that wakes a worker waiting on its sockets.
#[derive(Debug)]
pub struct Waker(OwnedFd);

impl Waker {
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes no pointers; a valid descriptor is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer. A full counter (never reached) would only
        // mean the worker is awake already.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Resets the wake-up once the worker is awake.
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer; EAGAIN (nothing pending) is fine.
        unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }
}

impl AsRawFd for Waker {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// How to reach one worker.
pub struct Peer {
    /// Its hand-off queue, bounded ([`super::HANDOFF_CAPACITY`]): never waited on.
    pub handed: SyncSender<Handed>,
    pub changes: Sender<ChangeMsg>,
    pub waker: Waker,
}

/// What a worker receives from the others.
pub struct Inbox {
    pub handed: Receiver<Handed>,
    pub changes: Receiver<ChangeMsg>,
}

/// Every worker's last published status; `/metrics` shows their sum.
pub struct StatusBoard {
    workers: Vec<Mutex<RouterStatus>>,
}

impl StatusBoard {
    pub fn new(workers: usize) -> Self {
        Self { workers: (0..workers).map(|_| Mutex::new(RouterStatus::default())).collect() }
    }

    pub fn publish(&self, worker: usize, status: RouterStatus) {
        if let Ok(mut s) = self.workers[worker].lock() {
            *s = status;
        }
    }

    /// Each worker's last status, the leader's first.
    pub fn each(&self) -> Vec<RouterStatus> {
        self.workers.iter().map(|w| w.lock().map(|s| s.clone()).unwrap_or_default()).collect()
    }

    /// The whole router's status: counters summed over workers.
    pub fn merged(&self) -> RouterStatus {
        RouterStatus::merged(&self.each())
    }
}
