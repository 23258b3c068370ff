//! The router's inter-AS links, shared by its workers: one socket, one classifier and one egress
//! scheduler per link. The scheduler sits behind a lock taken once per batch and link (never
//! per packet), so that every worker's packets meet in the one scheduler that enforces the
//! link's capacity and class shares; what processors need of a link's state (capacity, queue
//! fill) and when its scheduler next has work are kept beside it in atomics, read without the
//! lock.
//!
//! A link that is down (capacity 0) holds nothing for later. Both halves of that rule are
//! decided under the scheduler's lock ([`EgressGuard::change`] empties the queues of a link it
//! takes down, [`EgressGuard::enqueue_forwarded`] refuses a packet for a link that is down):
//! a worker whose verdict saw the link up just before the change would otherwise queue a
//! packet after the queues were emptied, which nothing would ever send. The guard changes the
//! scheduler only through these and [`EgressGuard::poll`], so nothing queues around the rule.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use aviary_qos::{ClassId, Classifier, EgressScheduler, LinkParams, LinkState};

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

/// Why a link's scheduler did not take a forwarded packet; its buffer comes back.
#[derive(Debug, PartialEq, Eq)]
pub enum NotQueued {
    /// The link is down (capacity 0).
    LinkDown(Vec<u8>),
    /// Its class had no room (the scheduler counts it).
    Full(Vec<u8>),
}

impl EgressGuard<'_> {
    /// Queues a forwarded packet in `class` at `now_ns`, unless the link is down.
    pub fn enqueue_forwarded(
        &mut self,
        pkt: Vec<u8>,
        class: ClassId,
        source: u64,
        now_ns: u64,
    ) -> Result<(), NotQueued> {
        if self.sched.params().rate_bps == 0 {
            return Err(NotQueued::LinkDown(pkt));
        }
        self.sched.enqueue(pkt, class, source, now_ns).map_err(NotQueued::Full)
    }

    /// The link's capacity and delay are `params` from `now_ns`. Taken down (capacity 0), the
    /// link gives every packet still waiting in its queues to `lost` (not those already on
    /// the wire).
    pub fn change(&mut self, params: LinkParams, now_ns: u64, lost: &mut dyn FnMut(Vec<u8>)) {
        self.sched.set_params_at(params, now_ns);
        if params.rate_bps == 0 {
            self.sched.drain_queued(now_ns, lost);
        }
    }

    /// Hands over every packet whose arrival at the far end is `<= now_ns`.
    pub fn poll(&mut self, now_ns: u64, out: &mut impl FnMut(Vec<u8>)) {
        self.sched.poll(now_ns, out);
    }

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

impl Drop for EgressGuard<'_> {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use aviary_qos::{ClassSpec, ClassTable, LinkPolicy};

    use super::*;

    const MBPS: u64 = 1_000_000;

    fn link(rate_bps: u64) -> SharedLink {
        let table = ClassTable::new(
            LinkPolicy::StrictPriority,
            vec![ClassSpec::new("reserved", 1 << 20), ClassSpec::new("rest", 1 << 20)],
        )
        .unwrap();
        let sock = BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let remote = sock.local_addr();
        let classifier = Classifier::reserved_first(&table);
        SharedLink::new(2, sock, remote, classifier, EgressScheduler::new(LinkParams { rate_bps, delay_ns: 0 }, table))
    }

    fn params(rate_bps: u64) -> LinkParams {
        LinkParams { rate_bps, delay_ns: 0 }
    }

    #[test]
    fn a_link_taken_down_loses_its_queue_and_takes_nothing_until_it_is_back() {
        let link = link(MBPS);
        let mut g = link.lock();
        // 1000 bytes take 8 ms at 1 Mbit/s: the first is on the wire, nine wait.
        for _ in 0..10 {
            g.enqueue_forwarded(vec![0; 1000], ClassId(1), 0, 0).unwrap();
        }
        assert_eq!(g.stats().queued_bytes(), 9000);
        let mut lost = 0;
        g.change(params(0), 1_000, &mut |b| lost += b.len());
        assert_eq!((lost, g.stats().queued_bytes()), (9000, 0));
        // Down: a packet whose verdict came before the change is refused, buffer and all.
        assert_eq!(g.enqueue_forwarded(vec![7; 100], ClassId(0), 0, 2_000), Err(NotQueued::LinkDown(vec![7; 100])));
        assert_eq!(g.stats().queued_bytes(), 0);
        drop(g);
        assert_eq!((link.state().up, link.state().queued_bytes), (false, 0));
        // Back up: the link takes packets again; a change that keeps it up loses nothing.
        let mut g = link.lock();
        g.change(params(MBPS), 3_000, &mut |_| panic!("nothing is lost bringing a link up"));
        g.enqueue_forwarded(vec![0; 1000], ClassId(1), 0, 4_000).unwrap();
        g.enqueue_forwarded(vec![0; 1000], ClassId(1), 0, 4_000).unwrap();
        g.change(params(2 * MBPS), 5_000, &mut |_| panic!("nothing is lost changing the rate"));
        // Both wait behind the packet that was on the wire when the link went down.
        assert_eq!(g.stats().queued_bytes(), 2000);
    }

    /// A worker that reads the link's state without the lock, then queues under the lock, while
    /// the management thread takes the link down. Once the change is made, nothing is queued,
    /// however the two interleave.
    #[test]
    fn a_worker_racing_the_change_that_takes_a_link_down_queues_nothing_after_it() {
        for _ in 0..20 {
            let link = Arc::new(link(MBPS));
            let stop = Arc::new(AtomicBool::new(false));
            let worker = {
                let (link, stop) = (link.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if !link.state().up {
                            continue;
                        }
                        let mut g = link.lock();
                        for _ in 0..4 {
                            let _ = g.enqueue_forwarded(vec![0; 100], ClassId(1), 0, 0);
                        }
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(2));
            link.lock().change(params(0), 0, &mut |_| {});
            std::thread::sleep(Duration::from_millis(2));
            stop.store(true, Ordering::Relaxed);
            worker.join().unwrap();
            assert_eq!(link.state().queued_bytes, 0, "queued after the link went down");
            assert_eq!(link.lock().stats().queued_bytes(), 0);
        }
    }
}
