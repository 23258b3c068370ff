//! The queue of one class: FIFO, or deficit round robin over the packets' sources.
//!
//! Deficit round robin (Shreedhar and Varghese): each source with packets waiting has a FIFO of
//! its own and a deficit; the source at the front of the round sends while its deficit covers its
//! head packet, else it earns a quantum and goes to the back. Over a round every backlogged source
//! sends about a quantum, whatever the others offer, so one source flooding a class gets no more
//! of it than any other. A full class drops from the tail of its longest source queue (which may
//! be the arriving packet's), so the flooder pays for the overflow, not the others.

use std::collections::{HashMap, VecDeque};

/// Bytes a source may send per round.
pub const QUANTUM: i64 = 1500;

#[derive(Debug, Clone)]
struct SourceQueue<P> {
    source: u64,
    pkts: VecDeque<P>,
    bytes: u64,
    deficit: i64,
}

#[derive(Debug, Clone)]
pub struct FairQueue<P> {
    queues: Vec<SourceQueue<P>>,
    by_source: HashMap<u64, usize>,
    /// Backlogged sources in round order; the front is being served.
    round: VecDeque<usize>,
    /// Slots of `queues` free for a new source.
    free: Vec<usize>,
}

impl<P> Default for FairQueue<P> {
    fn default() -> Self {
        Self { queues: Vec::new(), by_source: HashMap::new(), round: VecDeque::new(), free: Vec::new() }
    }
}

impl<P: AsRef<[u8]>> FairQueue<P> {
    pub fn push(&mut self, pkt: P, source: u64) {
        let i = match self.by_source.get(&source) {
            Some(&i) => i,
            None => {
                let q = SourceQueue { source, pkts: VecDeque::new(), bytes: 0, deficit: 0 };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.queues[i] = q;
                        i
                    }
                    None => {
                        self.queues.push(q);
                        self.queues.len() - 1
                    }
                };
                self.by_source.insert(source, i);
                self.round.push_back(i);
                i
            }
        };
        let q = &mut self.queues[i];
        q.bytes += pkt.as_ref().len() as u64;
        q.pkts.push_back(pkt);
    }

    /// The next packet in deficit round robin order.
    pub fn pop(&mut self) -> Option<P> {
        loop {
            let &i = self.round.front()?;
            let q = &mut self.queues[i];
            let Some(len) = q.pkts.front().map(|p| p.as_ref().len() as i64) else {
                self.retire(i);
                continue;
            };
            if q.deficit < len {
                q.deficit += QUANTUM;
                self.round.rotate_left(1);
                continue;
            }
            q.deficit -= len;
            q.bytes -= len as u64;
            let pkt = q.pkts.pop_front();
            if q.pkts.is_empty() {
                self.retire(i);
            }
            return pkt;
        }
    }

    /// Removes a source that has nothing waiting (it starts afresh when it comes back).
    fn retire(&mut self, i: usize) {
        if let Some(pos) = self.round.iter().position(|&j| j == i) {
            self.round.remove(pos);
        }
        self.by_source.remove(&self.queues[i].source);
        self.queues[i].deficit = 0;
        self.free.push(i);
    }

    /// Source and bytes of the longest source queue.
    pub fn longest(&self) -> Option<(u64, u64)> {
        self.round.iter().map(|&i| (self.queues[i].source, self.queues[i].bytes)).max_by_key(|&(_, b)| b)
    }

    pub fn bytes_of(&self, source: u64) -> u64 {
        self.by_source.get(&source).map_or(0, |&i| self.queues[i].bytes)
    }

    /// Drops the newest packet of `source`.
    pub fn pop_back_of(&mut self, source: u64) -> Option<P> {
        let &i = self.by_source.get(&source)?;
        let q = &mut self.queues[i];
        let pkt = q.pkts.pop_back()?;
        q.bytes -= pkt.as_ref().len() as u64;
        if q.pkts.is_empty() {
            self.retire(i);
        }
        Some(pkt)
    }
}

/// The packets waiting in one class.
#[derive(Debug, Clone)]
pub enum ClassQueue<P> {
    Fifo(VecDeque<P>),
    Fair(FairQueue<P>),
}

impl<P: AsRef<[u8]>> ClassQueue<P> {
    pub fn pop(&mut self) -> Option<P> {
        match self {
            ClassQueue::Fifo(q) => q.pop_front(),
            ClassQueue::Fair(q) => q.pop(),
        }
    }

    /// Makes room for `incoming` bytes of `source` within `bound` bytes when `queued` are waiting,
    /// pushing the packets it evicts to `evicted`; `false` when the arriving packet must be dropped
    /// (a FIFO class never evicts; a fair one evicts from the longest other source).
    pub fn make_room(&mut self, queued: u64, incoming: u64, source: u64, bound: u64, evicted: &mut Vec<P>) -> bool {
        if queued + incoming <= bound {
            return true;
        }
        let ClassQueue::Fair(q) = self else { return false };
        let mut queued = queued;
        while queued + incoming > bound {
            // The arriving packet is dropped when its own source would be the longest.
            let Some((longest, bytes)) = q.longest() else { return false };
            if q.bytes_of(source) + incoming >= bytes || longest == source {
                return false;
            }
            let Some(p) = q.pop_back_of(longest) else { return false };
            queued -= p.as_ref().len() as u64;
            evicted.push(p);
        }
        true
    }

    pub fn push(&mut self, pkt: P, source: u64) {
        match self {
            ClassQueue::Fifo(q) => q.push_back(pkt),
            ClassQueue::Fair(q) => q.push(pkt, source),
        }
    }

    /// Drops the newest packet (of the longest source, for a fair queue).
    pub fn pop_newest(&mut self) -> Option<P> {
        match self {
            ClassQueue::Fifo(q) => q.pop_back(),
            ClassQueue::Fair(q) => {
                let (s, _) = q.longest()?;
                q.pop_back_of(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_shares_bytes_not_packets() {
        let mut q = FairQueue::default();
        for _ in 0..10 {
            q.push(vec![0u8; 1500], 1);
            q.push(vec![1u8; 300], 2);
            q.push(vec![1u8; 300], 2);
            q.push(vec![1u8; 300], 2);
            q.push(vec![1u8; 300], 2);
            q.push(vec![1u8; 300], 2);
        }
        // Over the first rounds both sources get about 1500 B per round.
        let (mut a, mut b) = (0, 0);
        for _ in 0..24 {
            let p = q.pop().unwrap();
            if p[0] == 0 {
                a += p.len();
            } else {
                b += p.len();
            }
        }
        assert!(a.abs_diff(b) <= 1500, "{a} vs {b}");
    }

    #[test]
    fn a_full_class_evicts_from_the_longest_source() {
        let mut q = ClassQueue::Fair(FairQueue::default());
        for _ in 0..9 {
            q.push(vec![0u8; 100], 1);
        }
        q.push(vec![1u8; 100], 2);
        let mut ev = Vec::new();
        // Source 2 arriving at a full class (bound 1000) pushes out source 1's newest.
        assert!(q.make_room(1000, 100, 2, 1000, &mut ev));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0][0], 0);
        // Source 1 arriving is itself the longest: it is the one dropped.
        let mut ev = Vec::new();
        assert!(!q.make_room(900, 200, 1, 1000, &mut ev));
        assert!(ev.is_empty());
    }
}
