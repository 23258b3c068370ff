//! Behaviour of the egress link scheduler: timing, priority, bounds, late polling, conservation.
//! The plain two-class table here; N classes, rate bounds and fair queuing in `classes.rs`.

use aviary_qos::{ClassId, ClassTable, EgressScheduler, LinkParams};
use proptest::prelude::*;

const PRIO: ClassId = ClassId(0);
const BE: ClassId = ClassId(1);

/// A test packet: an id and `len` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pkt {
    id: u32,
    buf: Vec<u8>,
}

impl AsRef<[u8]> for Pkt {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

fn pkt(id: u32, len: usize) -> Pkt {
    Pkt { id, buf: vec![0; len] }
}

fn params(rate_bps: u64, delay_ns: u64) -> LinkParams {
    LinkParams { rate_bps, delay_ns }
}

/// A link with the plain table: priority strictly before best effort, `queue_bytes` each.
fn sched(rate_bps: u64, delay_ns: u64, queue_bytes: usize) -> EgressScheduler<Pkt> {
    EgressScheduler::new(params(rate_bps, delay_ns), ClassTable::priority_best_effort(queue_bytes, queue_bytes))
}

/// Polls at every wake-up up to and including `until`; returns `(id, poll time, arrival)`.
fn poll_every_event(s: &mut EgressScheduler<Pkt>, until: u64, out: &mut Vec<(u32, u64, u64)>) {
    while let Some(w) = s.next_wakeup().filter(|&w| w <= until) {
        s.poll_timed(w, &mut |p, arrival| out.push((p.id, w, arrival)));
    }
}

fn drain(s: &mut EgressScheduler<Pkt>) -> Vec<(u32, u64, u64)> {
    let mut out = Vec::new();
    poll_every_event(s, u64::MAX, &mut out);
    out
}

#[test]
fn isolated_packet_arrives_after_tx_time_plus_delay() {
    // 1500 B at 1 Gbit/s: 12 µs; at 3 Gbit/s: 4 µs; at 7 Gbit/s: 1714.28 ns, rounded up.
    for (rate, tx) in [(1_000_000_000, 12_000), (3_000_000_000, 4_000), (7_000_000_000, 1_715)] {
        let mut s = sched(rate, 5_000_000, 10_000);
        assert_eq!(s.params().tx_time_ns(1500), Some(tx));
        s.enqueue(pkt(1, 1500), BE, 0, 1_000).unwrap();
        let arrival = 1_000 + tx + 5_000_000;
        assert_eq!(s.next_wakeup(), Some(arrival));
        let mut got = Vec::new();
        s.poll(arrival - 1, &mut |p| got.push(p.id));
        assert!(got.is_empty());
        s.poll(arrival, &mut |p| got.push(p.id));
        assert_eq!(got, [1]);
        assert_eq!(s.next_wakeup(), None);
        // An idle link earns no credit: a packet much later starts when it arrives.
        s.enqueue(pkt(2, 1500), PRIO, 0, 50_000_000).unwrap();
        assert_eq!(s.next_wakeup(), Some(50_000_000 + tx + 5_000_000));
    }
}

#[test]
fn overloaded_link_sends_exactly_at_rate() {
    // A rate that divides nothing evenly, offered twice its capacity for one second.
    let rate = 7_777_777;
    let delay = 3_000_000;
    let mut s = sched(rate, delay, 1 << 20);
    let mut out = Vec::new();
    let mut lens = std::collections::HashMap::new();
    let mut t = 0;
    let mut id = 0;
    while t < 1_000_000_000 {
        poll_every_event(&mut s, t, &mut out);
        let len = 100 + (id as usize * 37) % 1400;
        lens.insert(id, len as u128);
        s.enqueue(pkt(id, len), BE, 0, t).unwrap();
        id += 1;
        t += (len as u64 * 8 * 1_000_000_000 / rate) / 2;
    }
    out.extend(drain(&mut s));
    assert_eq!(out.len(), id as usize);
    // The link never idles: the k-th packet arrives when the first k packets' bits have been
    // sent at exactly `rate`, rounded up to a ns, plus the delay.
    let mut bits = 0u128;
    for &(id, polled, arrival) in &out {
        bits += lens[&id] * 8;
        let finish = (bits * 1_000_000_000).div_ceil(rate as u128) as u64;
        assert_eq!(arrival, finish + delay, "packet {id}");
        assert_eq!(polled, arrival);
    }
    // Within the first second, the bytes delivered are the capacity within one packet.
    let in_window: u128 = out.iter().filter(|o| o.2 <= 1_000_000_000 + delay).map(|o| lens[&o.0] * 8).sum();
    let capacity = rate as u128;
    assert!(capacity - in_window <= 1500 * 8, "{in_window} bits vs {capacity}");
}

#[test]
fn priority_waits_at_most_one_best_effort_packet() {
    let rate = 1_000_000_000; // 1500 B = 12 µs, 100 B = 800 ns
    let mut s = sched(rate, 1_000, 1 << 20);
    for i in 0..100 {
        s.enqueue(pkt(i, 1500), BE, 0, 0).unwrap();
    }
    // Mid-way through the 4th best-effort packet, without polling in between.
    s.enqueue(pkt(1000, 100), PRIO, 0, 40_000).unwrap();
    s.enqueue(pkt(1001, 100), PRIO, 0, 40_000).unwrap();
    let out = drain(&mut s);
    let ids: Vec<u32> = out.iter().map(|o| o.0).collect();
    assert_eq!(&ids[..6], [0, 1, 2, 3, 1000, 1001]);
    assert_eq!(out[4].2, 48_000 + 800 + 1_000);
    assert_eq!(out[5].2, 48_000 + 1_600 + 1_000);
    assert!(out[4].2 - 40_000 <= 12_000 + 800 + 1_000);
    assert_eq!(ids.len(), 102);
}

#[test]
fn full_queues_tail_drop_and_count_per_class() {
    let mut s = EgressScheduler::new(params(0, 0), ClassTable::priority_best_effort(1000, 3000));
    for i in 0..3 {
        s.enqueue(pkt(i, 1000), BE, 0, 10).unwrap();
    }
    assert_eq!(s.enqueue(pkt(3, 1000), BE, 0, 10), Err(pkt(3, 1000)));
    assert_eq!(s.enqueue(pkt(4, 1), BE, 0, 10), Err(pkt(4, 1)));
    s.enqueue(pkt(5, 600), PRIO, 0, 10).unwrap();
    assert_eq!(s.enqueue(pkt(6, 401), PRIO, 0, 10), Err(pkt(6, 401)));
    s.enqueue(pkt(7, 400), PRIO, 0, 10).unwrap();
    assert_eq!(s.enqueue(pkt(8, 2000), PRIO, 0, 10), Err(pkt(8, 2000)));
    let be = *s.stats().class(BE);
    assert_eq!((be.enqueued_packets, be.enqueued_bytes), (5, 4001));
    assert_eq!((be.dropped_packets, be.dropped_bytes), (2, 1001));
    assert_eq!((be.queued_packets, be.queued_bytes), (3, 3000));
    let pr = *s.stats().class(PRIO);
    assert_eq!((pr.enqueued_packets, pr.dropped_packets, pr.dropped_bytes, pr.queued_bytes), (4, 2, 2401, 1000));
    // Lowering a bound tail-drops the newest packets and counts them.
    assert!(s.set_table_at(ClassTable::priority_best_effort(1000, 1500), 10));
    let be = *s.stats().class(BE);
    assert_eq!((be.dropped_packets, be.dropped_bytes, be.queued_packets, be.queued_bytes), (4, 3001, 1, 1000));
    s.set_params_at(LinkParams { rate_bps: 8_000_000_000, ..*s.params() }, 100);
    let ids: Vec<u32> = drain(&mut s).iter().map(|o| o.0).collect();
    assert_eq!(ids, [5, 7, 0]);
}

#[test]
fn link_down_sends_nothing_and_restarts_at_the_change() {
    let mut s = sched(0, 500, 2000);
    s.enqueue(pkt(0, 1000), BE, 0, 0).unwrap();
    s.enqueue(pkt(1, 1000), BE, 0, 0).unwrap();
    assert!(s.enqueue(pkt(2, 1000), BE, 0, 0).is_err());
    assert_eq!(s.next_wakeup(), None);
    let mut got = 0;
    s.poll(1_000_000_000, &mut |_| got += 1);
    assert_eq!(got, 0);
    // Up at 2 s: nothing was sent while down, so the backlog starts at 2 s.
    s.set_params_at(params(8_000_000_000, 500), 2_000_000_000);
    let out = drain(&mut s);
    assert_eq!(out.iter().map(|o| (o.0, o.2)).collect::<Vec<_>>(), [(0, 2_000_001_500), (1, 2_000_002_500)]);
    // Down while a packet is being serialised: it completes, the next one waits.
    s.enqueue(pkt(3, 1000), PRIO, 0, 3_000_000_000).unwrap();
    s.enqueue(pkt(4, 1000), PRIO, 0, 3_000_000_000).unwrap();
    s.set_params_at(params(0, 500), 3_000_000_500);
    assert_eq!(drain(&mut s).iter().map(|o| o.0).collect::<Vec<_>>(), [3]);
    assert_eq!(s.stats().class(PRIO).queued_packets, 1);
}

#[test]
fn drain_queued_hands_back_every_waiting_packet_but_not_those_on_the_wire() {
    let mut s = sched(8_000_000_000, 500, 4000);
    for (id, class) in [(0, PRIO), (1, BE), (2, PRIO), (3, BE)] {
        s.enqueue(pkt(id, 1000), class, 0, 0).unwrap();
    }
    // Packet 0 starts at once (1 µs on the wire); the rest wait.
    let mut taken = Vec::new();
    s.drain_queued(500, &mut |p| taken.push(p.id));
    taken.sort();
    assert_eq!(taken, [1, 2, 3]);
    assert_eq!((s.stats().class(PRIO).queued_packets, s.stats().class(BE).queued_packets), (0, 0));
    assert_eq!(s.stats().queued_bytes(), 0);
    assert_eq!(drain(&mut s).iter().map(|o| o.0).collect::<Vec<_>>(), [0]);
    // Nothing was counted as a queue drop: the caller counts what it took.
    assert_eq!(s.stats().class(BE).dropped_packets + s.stats().class(PRIO).dropped_packets, 0);
}

#[test]
fn rate_change_applies_to_later_starts_and_keeps_every_packet() {
    let mut s = sched(1_000_000, 0, 1 << 20); // 125 B = 1 ms
    for i in 0..10 {
        s.enqueue(pkt(i, 125), BE, 0, 0).unwrap();
    }
    // At 3.5 ms packet 3 is on the wire; it keeps its timing, later ones go twice as fast.
    s.set_params_at(LinkParams { rate_bps: 2_000_000, delay_ns: 10_000_000 }, 3_500_000);
    let arrivals: Vec<u64> = drain(&mut s).iter().map(|o| o.2).collect();
    let mut want = vec![1_000_000, 2_000_000, 3_000_000, 4_000_000];
    want.extend((1..=6).map(|k| 4_000_000 + k * 500_000 + 10_000_000));
    assert_eq!(arrivals, want);
    // A shorter delay later never lets a packet overtake an earlier one.
    s.enqueue(pkt(20, 125), BE, 0, 20_000_000).unwrap();
    s.set_params_at(LinkParams { delay_ns: 0, ..*s.params() }, 20_000_000);
    s.enqueue(pkt(21, 125), BE, 0, 20_000_000).unwrap();
    let out = drain(&mut s);
    assert_eq!(out.iter().map(|o| (o.0, o.2)).collect::<Vec<_>>(), [(20, 30_500_000), (21, 30_500_000)]);
}

#[derive(Clone, Debug)]
struct Arrival {
    gap_ns: u64,
    len: usize,
    priority: bool,
}

fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    let one = (prop_oneof![Just(0u64), 0..20_000u64, 0..2_000_000u64], 1..1600usize, any::<bool>())
        .prop_map(|(gap_ns, len, priority)| Arrival { gap_ns, len, priority });
    prop::collection::vec(one, 1..200)
}

fn class(priority: bool) -> ClassId {
    if priority {
        PRIO
    } else {
        BE
    }
}

proptest! {
    #[test]
    fn late_polling_matches_polling_at_every_event(
        arrivals in arrivals(),
        rate in prop_oneof![Just(1_000_000u64), Just(10_000_000), Just(123_456_789), Just(1_000_000_000)],
        delay in 0..5_000_000u64,
        queue in 1_000..20_000usize,
        poll_every in 1..50usize,
        late_ns in 0..10_000_000u64,
    ) {
        let (mut eager, mut lazy) = (sched(rate, delay, queue), sched(rate, delay, queue));
        let (mut eager_out, mut lazy_out, mut eager_drops, mut lazy_drops) = (vec![], vec![], vec![], vec![]);
        let mut t = 0;
        for (i, a) in arrivals.iter().enumerate() {
            // The lazy side polls rarely, at arbitrary times between arrivals.
            if i % poll_every == 0 {
                lazy.poll_timed(t + late_ns.min(a.gap_ns), &mut |p, at| lazy_out.push((p.id, at)));
            }
            t += a.gap_ns;
            poll_every_event(&mut eager, t, &mut eager_out);
            if eager.enqueue(pkt(i as u32, a.len), class(a.priority), 0, t).is_err() {
                eager_drops.push(i);
            }
            if lazy.enqueue(pkt(i as u32, a.len), class(a.priority), 0, t).is_err() {
                lazy_drops.push(i);
            }
        }
        eager_out.extend(drain(&mut eager));
        lazy.poll_timed(u64::MAX, &mut |p, at| lazy_out.push((p.id, at)));
        for &(id, polled, arrival) in &eager_out {
            prop_assert_eq!(polled, arrival, "packet {}", id);
        }
        let eager_out: Vec<(u32, u64)> = eager_out.iter().map(|o| (o.0, o.2)).collect();
        prop_assert_eq!(eager_drops, lazy_drops);
        prop_assert_eq!(eager_out, lazy_out);
        prop_assert_eq!(eager.stats(), lazy.stats());
    }

    #[test]
    fn bytes_and_packets_are_conserved(
        ops in prop::collection::vec((0..5u8, 1..1600usize, any::<bool>(), 0..3_000_000u64), 1..300),
    ) {
        let mut s = sched(5_000_000, 1_000_000, 8_000);
        let (mut t, mut delivered_bytes, mut returned_bytes) = (0, 0u64, 0u64);
        let mut bounds = (8_000, 8_000);
        for (i, &(op, len, priority, gap)) in ops.iter().enumerate() {
            t += gap;
            match op {
                0 | 1 => {
                    if let Err(p) = s.enqueue(pkt(i as u32, len), class(priority), 0, t) {
                        returned_bytes += p.buf.len() as u64;
                    }
                }
                2 => s.poll(t, &mut |p| delivered_bytes += p.buf.len() as u64),
                3 => {
                    // Change rate and shrink or grow a bound.
                    let rate = [0, 1_000_000, 5_000_000, 50_000_000][len % 4];
                    s.set_params_at(LinkParams { rate_bps: rate, ..*s.params() }, t);
                    bounds = (len * 4, bounds.1);
                    prop_assert!(s.set_table_at(ClassTable::priority_best_effort(bounds.0, bounds.1), t));
                }
                _ => {
                    s.set_params(LinkParams { delay_ns: gap, ..*s.params() });
                    bounds = (bounds.0, len * 3);
                    prop_assert!(s.set_table_at(ClassTable::priority_best_effort(bounds.0, bounds.1), t));
                }
            }
            let st = s.stats().clone();
            for c in &st.classes {
                prop_assert_eq!(c.enqueued_bytes, c.sent_bytes + c.dropped_bytes + c.queued_bytes + c.in_flight_bytes);
                prop_assert_eq!(
                    c.enqueued_packets,
                    c.sent_packets + c.dropped_packets + c.queued_packets + c.in_flight_packets
                );
            }
            prop_assert!(st.class(PRIO).queued_bytes <= bounds.0 as u64);
            prop_assert!(st.class(BE).queued_bytes <= bounds.1 as u64);
            prop_assert_eq!(delivered_bytes, st.class(PRIO).sent_bytes + st.class(BE).sent_bytes);
            prop_assert!(returned_bytes <= st.class(PRIO).dropped_bytes + st.class(BE).dropped_bytes);
        }
    }
}
