//! What a worker sends: the forwarded packets of a batch into their links' shared schedulers
//! (one lock per link and batch), deliveries to hosts of the AS, and what the schedulers
//! release; and the pool of spare buffers all of them come from and go back to.

use std::mem;

use aviary_qos::ClassId;

use super::egress::NotQueued;
use super::metrics::IoDrop;
use super::scmp::Trouble;
use super::send_owned;
use super::worker::Forwarder;

/// Spare buffers a worker keeps; handed-over packets move buffers between workers, so a
/// worker that receives more than it forwards would otherwise hoard them.
const POOL_MAX: usize = 4096;
/// Marks a staged packet already queued.
const QUEUED: usize = usize::MAX;

/// A forwarded packet between the verdict and its link's scheduler.
pub(super) struct Staged {
    pub link: usize,
    pub class: ClassId,
    pub source: u64,
    pub buf: Vec<u8>,
}

impl Forwarder {
    /// Queues the batch's forwarded packets, received on socket `k` (interface `ingress`), in
    /// their links' schedulers: one lock per link, packets of one link in batch order. A link
    /// that is down, as its lock shows it (also one taken down since the verdicts), gets none
    /// of them: each is dropped, counted as `link_down` on socket `k`, with an SCMP error for
    /// its source.
    pub(super) fn enqueue_staged(&mut self, k: usize, ingress: u16, now: u64) {
        for i in 0..self.staged.len() {
            let l = self.staged[i].link;
            if l == QUEUED {
                continue;
            }
            let link = &self.shared.links[l];
            let mut sched = link.lock();
            for s in self.staged[i..].iter_mut().filter(|s| s.link == l) {
                s.link = QUEUED;
                match sched.enqueue_forwarded(mem::take(&mut s.buf), s.class, s.source, now) {
                    Ok(()) => {}
                    Err(NotQueued::Full(buf)) => recycle(&mut self.pool, buf),
                    Err(NotQueued::LinkDown(buf)) => {
                        self.counters[k].count_io_drop(IoDrop::LinkDown);
                        let error = self.scmp.error(&buf, ingress, Trouble::InterfaceDown(link.id), now);
                        self.originated.extend(error);
                        recycle(&mut self.pool, buf);
                    }
                }
            }
        }
        self.staged.clear();
    }

    pub(super) fn send_deliveries(&mut self) {
        if self.deliveries.is_empty() {
            return;
        }
        let sent = send_owned(&self.shared.internal, &self.deliveries);
        let inside = &mut self.counters[0];
        for (b, _) in &self.deliveries[..sent] {
            inside.delivered_packets += 1;
            inside.delivered_bytes += b.len() as u64;
        }
        for _ in sent..self.deliveries.len() {
            inside.count_io_drop(IoDrop::Undeliverable);
        }
        for (b, _) in self.deliveries.drain(..) {
            recycle(&mut self.pool, b);
        }
    }

    /// Sends what the links' schedulers release at `now` (whichever worker gets there first).
    pub(super) fn release(&mut self, now: u64) {
        for link in &self.shared.links {
            if link.next_wakeup().is_none_or(|t| t > now) {
                continue;
            }
            let remote = link.remote;
            link.lock().poll(now, &mut |p| self.released.push((p, remote)));
            if self.released.is_empty() {
                continue;
            }
            // A datagram the kernel refuses now is lost on the wire, as on a real link.
            send_owned(&link.sock, &self.released);
            for (b, _) in self.released.drain(..) {
                recycle(&mut self.pool, b);
            }
        }
    }
}

/// Keeps a spare buffer, up to [`POOL_MAX`].
pub(super) fn recycle(pool: &mut Vec<Vec<u8>>, buf: Vec<u8>) {
    if pool.len() < POOL_MAX {
        pool.push(buf);
    }
}
