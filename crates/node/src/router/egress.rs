//! The router's inter-AS links, shared by its workers: one socket, one classifier and one egress
//! scheduler per link. The scheduler sits behind a lock taken once per batch and link (never
//! per packet), so that every worker's packets meet in the one scheduler that enforces the
//! link's capacity and class shares; what processors need of a link's state (capacity, queue
//! fill) and when its scheduler next has work are kept beside it in atomics, read without the
//! lock.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use aviary_qos::{Classifier, EgressScheduler, LinkState};

use crate::underlay::BatchSocket;

/// No scheduler deadline.
const NEVER: u64 = u64::MAX;

pub struct SharedLink {
    pub id: u16,
    pub sock: BatchSocket,
    pub remote: SocketAddr,
    pub classifier: Classifier,
    sched: Mutex<EgressScheduler<Vec<u8>>>,
    queue_limit_bytes: u64,
    rate_bps: AtomicU64,
    queued_bytes: AtomicU64,
    next_wakeup_ns: AtomicU64,
}

impl SharedLink {
    pub fn new(
        id: u16,
        sock: BatchSocket,
        remote: SocketAddr,
        classifier: Classifier,
        sched: EgressScheduler<Vec<u8>>,
    ) -> Self {
        let queue_limit_bytes = sched.table().classes().iter().map(|c| c.queue_bytes as u64).sum();
        let link = Self {
            id,
            sock,
            remote,
            classifier,
            queue_limit_bytes,
            rate_bps: AtomicU64::new(sched.params().rate_bps),
            queued_bytes: AtomicU64::new(0),
            next_wakeup_ns: AtomicU64::new(NEVER),
            sched: Mutex::new(sched),
        };
        // A guard settles the atomics when it goes: the scheduler's deadline from the start.
        drop(link.lock());
        link
    }

    /// The scheduler, for one batch of work; the atomics follow it when the guard goes.
    pub fn lock(&self) -> EgressGuard<'_> {
        // A worker that panicked holding the lock ends the process anyway; its scheduler is
        // still consistent between calls.
        EgressGuard { link: self, sched: self.sched.lock().unwrap_or_else(|e| e.into_inner()) }
    }

    /// What processors see of the link, without the lock.
    pub fn state(&self) -> LinkState {
        let rate_bps = self.rate_bps.load(Ordering::Relaxed);
        LinkState {
            id: self.id,
            up: rate_bps > 0,
            rate_bps,
            queued_bytes: self.queued_bytes.load(Ordering::Relaxed),
            queue_limit_bytes: self.queue_limit_bytes,
        }
    }

    pub fn is_up(&self) -> bool {
        self.rate_bps.load(Ordering::Relaxed) > 0
    }

    /// When the scheduler next releases a packet (`None`: it holds none).
    pub fn next_wakeup(&self) -> Option<u64> {
        Some(self.next_wakeup_ns.load(Ordering::Acquire)).filter(|&t| t != NEVER)
    }
}

/// The locked scheduler of one link.
pub struct EgressGuard<'a> {
    link: &'a SharedLink,
    sched: MutexGuard<'a, EgressScheduler<Vec<u8>>>,
}

impl EgressGuard<'_> {
    fn settle(&mut self) {
        let link = self.link;
        link.rate_bps.store(self.sched.params().rate_bps, Ordering::Relaxed);
        link.queued_bytes.store(self.sched.stats().queued_bytes(), Ordering::Relaxed);
        link.next_wakeup_ns.store(self.sched.next_wakeup().unwrap_or(NEVER), Ordering::Release);
    }
}

impl std::ops::Deref for EgressGuard<'_> {
    type Target = EgressScheduler<Vec<u8>>;
    fn deref(&self) -> &Self::Target {
        &self.sched
    }
}

impl std::ops::DerefMut for EgressGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.sched
    }
}

impl Drop for EgressGuard<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}
