//! Sans-IO egress link scheduler: one emulated inter-AS link (capacity and one-way delay)
//! behind the bounded queues of its traffic classes ([`ClassTable`]).
//!
//! # Model
//!
//! The link is a server of `rate_bps` followed by a constant delay line of `delay_ns`. A packet
//! of `L` bytes occupies the server for exactly `L * 8 / rate_bps` s, and reaches the far end
//! `delay_ns` after its last bit left. At each transmission start the link's policy picks a class:
//! - `Fifo`: one queue in arrival order (the classes only count; its bound is their sum);
//! - `StrictPriority`: the first backlogged class in table order;
//! - `BoundedShares` (the Z-Lane paper's Table 2): first a backlogged class below its lower bound,
//!   in table order; else, with what the lower bounds leave, the first backlogged class in table
//!   order. Under any policy but `Fifo` a class never exceeds its upper bound: a class that has
//!   used it up waits, and the link idles only when every backlogged class waits. Bounds are
//!   exact token buckets in virtual time (`bucket.rs`), each `10 ms` deep (at least 4 KiB).
//!
//! Inside a class packets wait in one FIFO, or per source in deficit round robin (`queue.rs`).
//! A full class drops the arriving packet (or, under fair queuing, the newest packet of its
//! longest source), counted.
//!
//! Everything runs in **virtual time**. The scheduler never reads a clock; the caller passes
//! `now` to [`EgressScheduler::enqueue`] and [`EgressScheduler::poll`] and may wake up late (a
//! busy event loop, a coarse timer). If transmissions started at the time the caller happened to
//! show up, every late wake-up would leave the link idle for a while and the emulated throughput
//! would depend on the caller's timing. Instead each call first replays, in order, every
//! transmission start with a virtual time `<= now`: a packet starts at
//! `max(link_free, its enqueue time)` (back-to-back behind the previous one, never before it
//! arrived, and an idle link earns no credit), and the class chosen at that start only sees the
//! packets enqueued by then (an enqueue first replays every start up to its time, then moves an
//! idle link's free time up to it, so every queued packet was enqueued by the next start). Because `enqueue` replays before it queues the new packet, the
//! schedule depends only on the sequence of enqueues and their times, not on when or how often
//! `poll` runs: polling late yields the same packets, in the same order, with the same arrival
//! times. `poll` hands over each packet whose arrival at the far end is `<= now`.
//!
//! Times are `u64` ns. The link's free time is kept exactly as `ns + rem / rate_bps` (integer
//! arithmetic in `u128`), so rounding never accumulates: after any run of back-to-back packets
//! the link has sent exactly `rate_bps` bit/s. An arrival is the finish time rounded up to the
//! next ns, plus the delay. Calls with a `now` below an earlier one are treated as the earlier one.

use std::collections::VecDeque;

mod bucket;
mod queue;

use bucket::RateBucket;
use queue::{ClassQueue, FairQueue};

use crate::{ClassId, ClassTable, LinkPolicy, QueueDiscipline};

/// ns per second times bits per byte: the numerator of a serialisation time.
const BIT_NS_PER_BYTE: u128 = 8 * 1_000_000_000;

/// Capacity and delay of one egress link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkParams {
    /// Link capacity in bit/s; 0 means the link is down (nothing starts, queues fill).
    pub rate_bps: u64,
    /// One-way propagation delay in ns.
    pub delay_ns: u64,
}

impl LinkParams {
    /// Serialisation time of `len` bytes in ns, rounded up; `None` when the link is down.
    pub fn tx_time_ns(&self, len: usize) -> Option<u64> {
        let rate = u128::from(self.rate_bps);
        (rate != 0).then(|| u64::try_from((len as u128 * BIT_NS_PER_BYTE).div_ceil(rate)).unwrap_or(u64::MAX))
    }
}

/// Counters of one class. `enqueued_*` counts every packet offered to
/// [`EgressScheduler::enqueue`], so `enqueued = sent + dropped + queued + in_flight` always holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassStats {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    /// Handed over by `poll` (arrived at the far end).
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Drops: a full queue at enqueue (the arriving packet or one it displaced), or a bound
    /// lowered by `set_table_at`.
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Waiting in the queue now.
    pub queued_packets: u64,
    pub queued_bytes: u64,
    /// Transmission started (being serialised or propagating), not yet handed over.
    pub in_flight_packets: u64,
    pub in_flight_bytes: u64,
}

impl ClassStats {
    fn drop_packet(&mut self, len: u64) {
        self.dropped_packets += 1;
        self.dropped_bytes += len;
    }
    fn unqueue(&mut self, len: u64) {
        self.queued_packets -= 1;
        self.queued_bytes -= len;
    }
}

/// Counters of every class, in table order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    pub classes: Vec<ClassStats>,
}

impl SchedulerStats {
    /// The counters of `class` (an id beyond the table counts as its last class).
    pub fn class(&self, class: ClassId) -> &ClassStats {
        &self.classes[class.index().min(self.classes.len() - 1)]
    }
    /// Bytes waiting in all queues.
    pub fn queued_bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.queued_bytes).sum()
    }
}

/// An exact virtual time: `ns + rem / rate_bps` ns with `rem < rate_bps`. The derived order is
/// lexicographic, which is the numeric order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct VTime {
    ns: u64,
    rem: u64,
}

impl VTime {
    const fn at(ns: u64) -> Self {
        Self { ns, rem: 0 }
    }

    fn ceil(self) -> u64 {
        self.ns.saturating_add(u64::from(self.rem > 0))
    }
}

/// One class: its queue and its bounds.
#[derive(Clone, Debug)]
struct Class<P> {
    queue: ClassQueue<P>,
    /// Lower bound (`BoundedShares` only).
    lower: Option<RateBucket>,
    upper: Option<RateBucket>,
}

/// The egress scheduler of one link (model in the docs of this module): transmissions start in
/// virtual time, so the packets and arrival times handed over do not depend on when `poll` runs.
#[derive(Clone, Debug)]
pub struct EgressScheduler<P: AsRef<[u8]>> {
    params: LinkParams,
    table: ClassTable,
    classes: Vec<Class<P>>,
    /// `Fifo` policy: every packet in arrival order, with its class.
    fifo: VecDeque<(P, ClassId)>,
    /// `(packet, arrival time at the far end, class)`, in start order; arrivals non-decreasing.
    in_flight: VecDeque<(P, u64, ClassId)>,
    link_free: VTime,
    last_arrival: u64,
    /// The latest `now` seen; every start up to it has been replayed.
    clock: u64,
    stats: SchedulerStats,
}

impl<P: AsRef<[u8]>> EgressScheduler<P> {
    pub fn new(params: LinkParams, table: ClassTable) -> Self {
        let classes = table
            .classes()
            .iter()
            .map(|c| Class {
                queue: match c.discipline {
                    QueueDiscipline::Fifo => ClassQueue::Fifo(VecDeque::new()),
                    QueueDiscipline::FairPerSource => ClassQueue::Fair(FairQueue::default()),
                },
                lower: None,
                upper: None,
            })
            .collect();
        let stats = SchedulerStats { classes: vec![ClassStats::default(); table.len()] };
        let mut s = Self {
            params,
            table,
            classes,
            fifo: VecDeque::new(),
            in_flight: VecDeque::new(),
            link_free: VTime::default(),
            last_arrival: 0,
            clock: 0,
            stats,
        };
        s.resolve_bounds();
        s
    }

    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    pub fn table(&self) -> &ClassTable {
        &self.table
    }

    pub fn stats(&self) -> &SchedulerStats {
        &self.stats
    }

    /// The bound of the queue `class` waits in.
    fn bound(&self, class: usize) -> u64 {
        match self.table.policy() {
            LinkPolicy::Fifo => self.table.classes().iter().map(|c| c.queue_bytes as u64).sum(),
            _ => self.table.classes()[class].queue_bytes as u64,
        }
    }

    /// Rate bounds as the policy and the capacity make them; tokens are kept across changes.
    fn resolve_bounds(&mut self) {
        let (policy, rate, now) = (self.table.policy(), self.params.rate_bps, self.clock);
        for (c, spec) in self.classes.iter_mut().zip(self.table.classes()) {
            let lower = spec.lower.filter(|_| policy == LinkPolicy::BoundedShares).map(|b| b.resolve(rate));
            let upper = spec.upper.filter(|_| policy != LinkPolicy::Fifo).map(|b| b.resolve(rate));
            for (bucket, bps) in [(&mut c.lower, lower), (&mut c.upper, upper)] {
                *bucket = match (bucket.take(), bps) {
                    (Some(mut b), Some(bps)) => {
                        b.set_rate(bps, now);
                        Some(b)
                    }
                    (None, Some(bps)) => Some(RateBucket::new(bps)),
                    (_, None) => None,
                };
            }
        }
    }

    /// [`set_params_at`](Self::set_params_at) at the latest `now` this scheduler has seen.
    /// Prefer `set_params_at` when the link was down: the restart time then does not depend on
    /// when `poll` last ran.
    pub fn set_params(&mut self, params: LinkParams) {
        self.set_params_at(params, self.clock);
    }

    /// Changes rate and delay at `now_ns`. Transmissions that started before keep their timing;
    /// later ones use the new rate and delay (arrivals never overtake earlier ones, as on a real
    /// link); rate bounds given as shares follow the new capacity.
    pub fn set_params_at(&mut self, params: LinkParams, now_ns: u64) {
        self.advance(now_ns);
        if params.rate_bps != self.params.rate_bps {
            // `rem` is in units of the old rate; round up to a whole ns.
            self.link_free = VTime::at(self.link_free.ceil());
            if self.params.rate_bps == 0 {
                // The link was down until now: it sent nothing in the meantime.
                self.link_free = self.link_free.max(VTime::at(self.clock));
            }
        }
        self.params = params;
        self.resolve_bounds();
        self.advance(self.clock);
    }

    /// Changes the classes' bounds and policy at `now_ns`; the new table must have as many
    /// classes with the same disciplines (else it is refused and `false` returned). A lowered
    /// queue bound drops the newest packets, counted.
    pub fn set_table_at(&mut self, table: ClassTable, now_ns: u64) -> bool {
        let same_shape = table.len() == self.table.len()
            && table.classes().iter().zip(self.table.classes()).all(|(a, b)| a.discipline == b.discipline)
            && (table.policy() == LinkPolicy::Fifo) == (self.table.policy() == LinkPolicy::Fifo);
        if !same_shape {
            return false;
        }
        self.advance(now_ns);
        self.table = table;
        self.resolve_bounds();
        if self.table.policy() == LinkPolicy::Fifo {
            let bound = self.bound(0);
            while self.stats.queued_bytes() > bound {
                let Some((pkt, c)) = self.fifo.pop_back() else { break };
                let len = pkt.as_ref().len() as u64;
                let st = &mut self.stats.classes[c.index()];
                st.unqueue(len);
                st.drop_packet(len);
            }
        } else {
            for i in 0..self.classes.len() {
                let bound = self.bound(i);
                while self.stats.classes[i].queued_bytes > bound {
                    let Some(pkt) = self.classes[i].queue.pop_newest() else { break };
                    let len = pkt.as_ref().len() as u64;
                    self.stats.classes[i].unqueue(len);
                    self.stats.classes[i].drop_packet(len);
                }
            }
        }
        self.advance(self.clock);
        true
    }

    /// Takes every packet still waiting in a queue at `now_ns` (not those already on the wire),
    /// oldest first per queue, e.g. when the link goes down: they are the caller's to count.
    pub fn drain_queued(&mut self, now_ns: u64, out: &mut dyn FnMut(P)) {
        self.advance(now_ns);
        while let Some((pkt, c)) = self.fifo.pop_front() {
            self.stats.classes[c.index()].unqueue(pkt.as_ref().len() as u64);
            out(pkt);
        }
        for (class, st) in self.classes.iter_mut().zip(&mut self.stats.classes) {
            while let Some(pkt) = class.queue.pop() {
                st.unqueue(pkt.as_ref().len() as u64);
                out(pkt);
            }
        }
    }

    /// Queues `pkt` in `class` at `now_ns`; `source` (e.g. the source ISD-AS) keys fair queuing
    /// inside the class. `Err(pkt)` hands the buffer back when it is dropped (counted); a class
    /// id beyond the table is its last class.
    pub fn enqueue(&mut self, pkt: P, class: ClassId, source: u64, now_ns: u64) -> Result<(), P> {
        // Starts up to now are decided before this packet exists: it cannot jump into them.
        self.advance(now_ns);
        // An idle link starts the next packet no earlier than now (it earns no credit).
        self.link_free = self.link_free.max(VTime::at(self.clock));
        let c = class.index().min(self.classes.len() - 1);
        let len = pkt.as_ref().len() as u64;
        let bound = self.bound(c);
        self.stats.classes[c].enqueued_packets += 1;
        self.stats.classes[c].enqueued_bytes += len;
        if self.table.policy() == LinkPolicy::Fifo {
            if self.stats.queued_bytes() + len > bound {
                self.stats.classes[c].drop_packet(len);
                return Err(pkt);
            }
            self.fifo.push_back((pkt, ClassId(c as u8)));
        } else {
            let mut evicted = Vec::new();
            let queued = self.stats.classes[c].queued_bytes;
            let room = self.classes[c].queue.make_room(queued, len, source, bound, &mut evicted);
            // Packets pushed out to make room are lost even if the arriving one is dropped too.
            for p in evicted {
                let l = p.as_ref().len() as u64;
                self.stats.classes[c].unqueue(l);
                self.stats.classes[c].drop_packet(l);
            }
            if !room {
                self.stats.classes[c].drop_packet(len);
                return Err(pkt);
            }
            self.classes[c].queue.push(pkt, source);
        }
        let st = &mut self.stats.classes[c];
        st.queued_packets += 1;
        st.queued_bytes += len;
        self.advance(self.clock);
        Ok(())
    }

    /// Hands over, in order, every packet whose arrival at the far end is `<= now_ns`.
    pub fn poll(&mut self, now_ns: u64, out: &mut impl FnMut(P)) {
        self.poll_timed(now_ns, &mut |pkt, _| out(pkt));
    }

    /// [`poll`](Self::poll) that also passes each packet's exact arrival time (`<= now_ns`).
    pub fn poll_timed(&mut self, now_ns: u64, out: &mut impl FnMut(P, u64)) {
        self.advance(now_ns);
        while self.in_flight.front().is_some_and(|&(_, arrival, _)| arrival <= self.clock) {
            let Some((pkt, arrival, class)) = self.in_flight.pop_front() else { break };
            let len = pkt.as_ref().len() as u64;
            let st = &mut self.stats.classes[class.index()];
            st.in_flight_packets -= 1;
            st.in_flight_bytes -= len;
            st.sent_packets += 1;
            st.sent_bytes += len;
            out(pkt, arrival);
        }
    }

    /// The earliest time at which `poll` would hand over a packet or a transmission starts;
    /// `None` when nothing is in flight and nothing can start (empty queues, or the link down).
    /// Only arrivals need a wake-up for exactness; starts are replayed even when polled late.
    pub fn next_wakeup(&self) -> Option<u64> {
        let arrival = self.in_flight.front().map(|&(_, arrival, _)| arrival);
        let start = self.next_start().map(VTime::ceil);
        match (arrival, start) {
            (Some(a), Some(s)) => Some(a.min(s)),
            (a, s) => a.or(s),
        }
    }

    /// Start time of the next transmission if the queues stay as they are: the link's free time,
    /// or later if every backlogged class has used up its upper bound.
    fn next_start(&self) -> Option<VTime> {
        if self.params.rate_bps == 0 {
            return None;
        }
        if self.table.policy() == LinkPolicy::Fifo {
            return (!self.fifo.is_empty()).then_some(self.link_free);
        }
        let free = self.link_free;
        let mut earliest: Option<VTime> = None;
        for (c, class) in self.classes.iter().enumerate() {
            if self.stats.classes[c].queued_packets == 0 {
                continue;
            }
            let t = match &class.upper {
                None => Some(free),
                Some(b) => b.allowed_from(free.ns).map(|t| if t == free.ns { free } else { VTime::at(t) }),
            };
            if let Some(t) = t {
                if t == free {
                    return Some(free);
                }
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
            }
        }
        earliest
    }

    /// The class to serve at a start at `t`: see the module docs.
    fn pick(&self, t: u64) -> Option<usize> {
        let sendable = |c: usize| {
            self.stats.classes[c].queued_packets > 0 && self.classes[c].upper.as_ref().is_none_or(|b| b.allows(t))
        };
        let n = self.classes.len();
        if self.table.policy() == LinkPolicy::BoundedShares {
            let assured = (0..n).find(|&c| sendable(c) && self.classes[c].lower.as_ref().is_some_and(|b| b.allows(t)));
            if assured.is_some() {
                return assured;
            }
        }
        (0..n).find(|&c| sendable(c))
    }

    /// Replays every transmission start at a virtual time `<= now` (or the clock, if later).
    fn advance(&mut self, now_ns: u64) {
        self.clock = self.clock.max(now_ns);
        let rate = u128::from(self.params.rate_bps);
        while let Some(start) = self.next_start().filter(|&s| s <= VTime::at(self.clock)) {
            let (pkt, class) = if self.table.policy() == LinkPolicy::Fifo {
                let Some(head) = self.fifo.pop_front() else { break };
                head
            } else {
                let Some(c) = self.pick(start.ns) else { break };
                let Some(pkt) = self.classes[c].queue.pop() else { break };
                let len = pkt.as_ref().len();
                let class = &mut self.classes[c];
                // The assured share is spent only when the class is served from it.
                if self.table.policy() == LinkPolicy::BoundedShares {
                    if let Some(b) = class.lower.as_mut().filter(|b| b.allows(start.ns)) {
                        b.charge(len, start.ns);
                    }
                }
                if let Some(b) = class.upper.as_mut() {
                    b.charge(len, start.ns);
                }
                (pkt, ClassId(c as u8))
            };
            let len = pkt.as_ref().len();
            let total = len as u128 * BIT_NS_PER_BYTE + u128::from(start.rem);
            let ns = start.ns.saturating_add(u64::try_from(total / rate).unwrap_or(u64::MAX));
            self.link_free = VTime { ns, rem: (total % rate) as u64 };
            let arrival = self.link_free.ceil().saturating_add(self.params.delay_ns).max(self.last_arrival);
            self.last_arrival = arrival;
            let st = &mut self.stats.classes[class.index()];
            st.unqueue(len as u64);
            st.in_flight_packets += 1;
            st.in_flight_bytes += len as u64;
            self.in_flight.push_back((pkt, arrival, class));
        }
    }
}
