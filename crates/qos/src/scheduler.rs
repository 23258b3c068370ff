//! Sans-IO egress link scheduler: one emulated inter-AS link (capacity and one-way delay)
//! behind two bounded FIFO queues, with strict priority for reservation traffic.
//!
//! # Model
//!
//! The link is a server of `rate_bps` followed by a constant delay line of `delay_ns`. A packet
//! of `L` bytes occupies the server for exactly `L * 8 / rate_bps` s, and reaches the far end
//! `delay_ns` after its last bit left. At each transmission start the head of the priority queue
//! is taken if there is one, else the head of the best-effort queue; a full queue tail-drops.
//!
//! Everything runs in **virtual time**. The scheduler never reads a clock; the caller passes
//! `now` to [`EgressScheduler::enqueue`] and [`EgressScheduler::poll`] and may wake up late (a
//! busy event loop, a coarse timer). If transmissions started at the time the caller happened to
//! show up, every late wake-up would leave the link idle for a while and the emulated throughput
//! would depend on the caller's timing. Instead each call first replays, in order, every
//! transmission start with a virtual time `<= now`: a packet starts at
//! `max(link_free, its enqueue time)` (back-to-back behind the previous one, never before it
//! arrived, and an idle link earns no credit), and the class chosen at that start only sees the
//! packets enqueued by then. Because `enqueue` replays before it queues the new packet, the
//! schedule depends only on the sequence of enqueues and their times, not on when or how often
//! `poll` runs: polling late yields the same packets, in the same order, with the same arrival
//! times. `poll` hands over each packet whose arrival at the far end is `<= now`.
//!
//! Times are `u64` ns. The link's free time is kept exactly as `ns + rem / rate_bps` (integer
//! arithmetic in `u128`), so rounding never accumulates: after any run of back-to-back packets
//! the link has sent exactly `rate_bps` bit/s. An arrival is the finish time rounded up to the
//! next ns, plus the delay. Calls with a `now` below an earlier one are treated as the earlier one.

use std::collections::VecDeque;

use crate::Class;

/// ns per second times bits per byte: the numerator of a serialisation time.
const BIT_NS_PER_BYTE: u128 = 8 * 1_000_000_000;

/// Capacity, delay and queue bounds of one egress link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkParams {
    /// Link capacity in bit/s; 0 means the link is down (nothing starts, queues fill).
    pub rate_bps: u64,
    /// One-way propagation delay in ns.
    pub delay_ns: u64,
    /// Bound on the bytes waiting in the priority queue.
    pub priority_queue_bytes: usize,
    /// Bound on the bytes waiting in the best-effort queue.
    pub best_effort_queue_bytes: usize,
}

impl LinkParams {
    /// Serialisation time of `len` bytes in ns, rounded up; `None` when the link is down.
    pub fn tx_time_ns(&self, len: usize) -> Option<u64> {
        let rate = u128::from(self.rate_bps);
        (rate != 0).then(|| u64::try_from((len as u128 * BIT_NS_PER_BYTE).div_ceil(rate)).unwrap_or(u64::MAX))
    }

    fn queue_bytes(&self, class: Class) -> u64 {
        match class {
            Class::Priority => self.priority_queue_bytes as u64,
            Class::BestEffort => self.best_effort_queue_bytes as u64,
        }
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
    /// Tail drops: a full queue at enqueue, or a bound lowered by `set_params`.
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Waiting in the queue now.
    pub queued_packets: u64,
    pub queued_bytes: u64,
    /// Transmission started (being serialised or propagating), not yet handed over.
    pub in_flight_packets: u64,
    pub in_flight_bytes: u64,
}

/// Counters of both classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    pub priority: ClassStats,
    pub best_effort: ClassStats,
}

impl SchedulerStats {
    pub fn class(&self, class: Class) -> &ClassStats {
        match class {
            Class::Priority => &self.priority,
            Class::BestEffort => &self.best_effort,
        }
    }

    fn class_mut(&mut self, class: Class) -> &mut ClassStats {
        match class {
            Class::Priority => &mut self.priority,
            Class::BestEffort => &mut self.best_effort,
        }
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

/// The egress scheduler of one link (model in the docs of `qos/src/scheduler.rs`): transmissions
/// start in virtual time at `max(link free, enqueue time)`, priority first, so the packets and
/// arrival times handed over do not depend on when `poll` runs.
#[derive(Clone, Debug)]
pub struct EgressScheduler<P: AsRef<[u8]>> {
    params: LinkParams,
    /// `(packet, enqueue time)`, FIFO.
    priority: VecDeque<(P, u64)>,
    best_effort: VecDeque<(P, u64)>,
    /// `(packet, arrival time at the far end, class)`, in start order; arrivals non-decreasing.
    in_flight: VecDeque<(P, u64, Class)>,
    link_free: VTime,
    last_arrival: u64,
    /// The latest `now` seen; every start up to it has been replayed.
    clock: u64,
    stats: SchedulerStats,
}

impl<P: AsRef<[u8]>> EgressScheduler<P> {
    pub fn new(params: LinkParams) -> Self {
        Self {
            params,
            priority: VecDeque::new(),
            best_effort: VecDeque::new(),
            in_flight: VecDeque::new(),
            link_free: VTime::default(),
            last_arrival: 0,
            clock: 0,
            stats: SchedulerStats::default(),
        }
    }

    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    pub fn stats(&self) -> &SchedulerStats {
        &self.stats
    }

    /// [`set_params_at`](Self::set_params_at) at the latest `now` this scheduler has seen.
    /// Prefer `set_params_at` when the link was down: the restart time then does not depend on
    /// when `poll` last ran.
    pub fn set_params(&mut self, params: LinkParams) {
        self.set_params_at(params, self.clock);
    }

    /// Changes rate, delay and queue bounds at `now_ns`. Transmissions that started before keep
    /// their timing; later ones use the new rate and delay (arrivals never overtake earlier
    /// ones, as on a real link). A lowered bound tail-drops the newest queued packets, counted
    /// as drops; nothing else is lost.
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
        for class in [Class::Priority, Class::BestEffort] {
            let bound = params.queue_bytes(class);
            while self.stats.class(class).queued_bytes > bound {
                let Some((pkt, _)) = self.queue_mut(class).pop_back() else { break };
                let len = pkt.as_ref().len() as u64;
                let st = self.stats.class_mut(class);
                st.queued_packets -= 1;
                st.queued_bytes -= len;
                st.dropped_packets += 1;
                st.dropped_bytes += len;
            }
        }
        self.advance(self.clock);
    }

    /// Queues `pkt` in `class` at `now_ns`. `Err(pkt)` hands the buffer back when the class's
    /// queue would exceed its byte bound (a tail drop, counted).
    pub fn enqueue(&mut self, pkt: P, class: Class, now_ns: u64) -> Result<(), P> {
        // Starts up to now are decided before this packet exists: it cannot jump into them.
        self.advance(now_ns);
        let len = pkt.as_ref().len() as u64;
        let bound = self.params.queue_bytes(class);
        let st = self.stats.class_mut(class);
        st.enqueued_packets += 1;
        st.enqueued_bytes += len;
        if st.queued_bytes + len > bound {
            st.dropped_packets += 1;
            st.dropped_bytes += len;
            return Err(pkt);
        }
        st.queued_packets += 1;
        st.queued_bytes += len;
        let t = self.clock;
        self.queue_mut(class).push_back((pkt, t));
        self.advance(t);
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
            let st = self.stats.class_mut(class);
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

    fn queue_mut(&mut self, class: Class) -> &mut VecDeque<(P, u64)> {
        match class {
            Class::Priority => &mut self.priority,
            Class::BestEffort => &mut self.best_effort,
        }
    }

    /// Start time of the next transmission if the queues stay as they are.
    fn next_start(&self) -> Option<VTime> {
        if self.params.rate_bps == 0 {
            return None;
        }
        let prio = self.priority.front().map(|&(_, t)| t);
        let be = self.best_effort.front().map(|&(_, t)| t);
        // Enqueue times are non-decreasing, so the earlier head is the earliest packet.
        let head = match (prio, be) {
            (Some(p), Some(b)) => p.min(b),
            (p, b) => p.or(b)?,
        };
        Some(self.link_free.max(VTime::at(head)))
    }

    /// Replays every transmission start at a virtual time `<= now` (or the clock, if later).
    fn advance(&mut self, now_ns: u64) {
        self.clock = self.clock.max(now_ns);
        let rate = u128::from(self.params.rate_bps);
        while let Some(start) = self.next_start().filter(|&s| s <= VTime::at(self.clock)) {
            // A priority packet enqueued by `start` wins; else the best-effort head, which
            // then is the earliest packet and was enqueued by `start`.
            let class = match self.priority.front() {
                Some(&(_, t)) if t <= start.ns => Class::Priority,
                _ => Class::BestEffort,
            };
            let Some((pkt, _)) = self.queue_mut(class).pop_front() else { break };
            let len = pkt.as_ref().len();
            let total = len as u128 * BIT_NS_PER_BYTE + u128::from(start.rem);
            let ns = start.ns.saturating_add(u64::try_from(total / rate).unwrap_or(u64::MAX));
            self.link_free = VTime { ns, rem: (total % rate) as u64 };
            let arrival = self.link_free.ceil().saturating_add(self.params.delay_ns).max(self.last_arrival);
            self.last_arrival = arrival;
            let st = self.stats.class_mut(class);
            st.queued_packets -= 1;
            st.queued_bytes -= len as u64;
            st.in_flight_packets += 1;
            st.in_flight_bytes += len as u64;
            self.in_flight.push_back((pkt, arrival, class));
        }
    }
}
