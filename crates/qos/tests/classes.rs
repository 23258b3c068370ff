//! The N-class egress scheduler: the Z-Lane paper's Table 2 bounds, fair queuing inside a class,
//! and, over random tables and random offered loads, bounds that hold, a link that idles only
//! when every backlogged class is at its upper bound, per-flow order, and no uncounted loss.

use aviary_qos::{ClassId, ClassSpec, ClassTable, EgressScheduler, LinkParams, LinkPolicy, QueueDiscipline, RateBound};
use proptest::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Pkt {
    id: u32,
    class: u8,
    source: u64,
    buf: Vec<u8>,
}

impl AsRef<[u8]> for Pkt {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

const S: u64 = 1_000_000_000;
/// A bucket is 10 ms of its rate deep, at least 4096 B; a class may overshoot by one packet more.
fn slack_bytes(rate_bps: u64) -> u64 {
    (rate_bps / 100 / 8).max(4096) + 1600
}

fn share(name: &str, lower_pct: u32, upper_pct: Option<u32>) -> ClassSpec {
    ClassSpec {
        lower: Some(RateBound::Ppm(lower_pct * 10_000)),
        upper: upper_pct.map(|p| RateBound::Ppm(p * 10_000)),
        ..ClassSpec::new(name, 64 * 1024)
    }
}

fn zlane_table() -> ClassTable {
    ClassTable::new(
        LinkPolicy::BoundedShares,
        vec![
            share("R", 50, Some(50)),
            share("N", 10, Some(10)),
            share("G", 20, Some(20)),
            share("A", 15, None),
            share("U", 5, None),
        ],
    )
    .unwrap()
}

/// Offers each class `offered_bps[c]` in 500-byte packets for `secs` seconds and returns the
/// bytes each class got through.
fn run(table: ClassTable, rate: u64, offered_bps: &[u64], secs: u64) -> Vec<u64> {
    let mut s = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table);
    let mut next: Vec<u64> = vec![0; offered_bps.len()];
    let mut got = vec![0u64; offered_bps.len()];
    let mut id = 0;
    while let Some((c, &t)) = next.iter().enumerate().filter(|(c, _)| offered_bps[*c] > 0).min_by_key(|(_, t)| **t) {
        if t >= secs * S {
            break;
        }
        s.poll(t, &mut |p: Pkt| got[usize::from(p.class)] += p.buf.len() as u64);
        let p = Pkt { id, class: c as u8, source: 1, buf: vec![0; 500] };
        let _ = s.enqueue(p, ClassId(c as u8), 1, t);
        id += 1;
        next[c] = t + 500 * 8 * S / offered_bps[c];
    }
    s.poll(secs * S, &mut |p: Pkt| got[usize::from(p.class)] += p.buf.len() as u64);
    got
}

#[test]
fn zlane_table_2_shares_under_flood() {
    let rate = 10_000_000;
    // Every class offered the whole link.
    let got = run(zlane_table(), rate, &[rate; 5], 2);
    let pct: Vec<f64> = got.iter().map(|b| *b as f64 * 8.0 / (2.0 * rate as f64) * 100.0).collect();
    for (c, want) in [50.0, 10.0, 20.0, 15.0, 5.0].iter().enumerate() {
        // A and U share what R, N and G leave (20%): each gets at least its lower bound.
        if c < 3 {
            assert!((pct[c] - want).abs() < 1.0, "class {c}: {pct:?}");
        } else {
            assert!(pct[c] >= want - 1.0, "class {c}: {pct:?}");
        }
    }
    assert!(pct.iter().sum::<f64>() > 99.0, "{pct:?}");
}

#[test]
fn zlane_slack_of_an_idle_class_goes_to_the_best_effort_classes_not_past_upper_bounds() {
    let rate = 10_000_000;
    // R idle; N, G, A, U flooded.
    let got = run(zlane_table(), rate, &[0, rate, rate, rate, rate], 2);
    let pct: Vec<f64> = got.iter().map(|b| *b as f64 * 8.0 / (2.0 * rate as f64) * 100.0).collect();
    assert!(pct[1] <= 10.5 && pct[2] <= 20.5, "upper bounds: {pct:?}");
    assert!(pct[3] + pct[4] >= 69.0, "A and U take the slack: {pct:?}");
    assert!(pct[3] >= 15.0 - 0.5 && pct[4] >= 5.0 - 0.5, "{pct:?}");
    // A guaranteed class offered below its bound gets all it offers.
    let got = run(zlane_table(), rate, &[0, 0, rate / 10, rate, rate], 2);
    assert!(got[2] * 8 >= 2 * rate / 10 * 99 / 100, "{got:?}");
}

#[test]
fn a_flooding_source_cannot_starve_a_light_one_in_a_fair_class() {
    let table = ClassTable::new(
        LinkPolicy::StrictPriority,
        vec![ClassSpec { discipline: QueueDiscipline::FairPerSource, ..ClassSpec::new("U", 32 * 1024) }],
    )
    .unwrap();
    let rate = 10_000_000;
    let mut s = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table);
    // Source 1 offers 10x the link, source 2 a fifth of it.
    let (mut t_flood, mut t_light, mut id) = (0u64, 0u64, 0);
    let mut got = [0u64; 3];
    let mut sent_light = 0u64;
    while t_flood.min(t_light) < S {
        let (source, t) = if t_flood <= t_light { (1, t_flood) } else { (2, t_light) };
        s.poll(t, &mut |p: Pkt| got[p.source as usize] += p.buf.len() as u64);
        let _ = s.enqueue(Pkt { id, class: 0, source, buf: vec![0; 1000] }, ClassId(0), source, t);
        id += 1;
        if source == 1 {
            t_flood += 1000 * 8 * S / (10 * rate);
        } else {
            sent_light += 1000;
            t_light += 1000 * 8 * S / (rate / 5);
        }
    }
    s.poll(2 * S, &mut |p: Pkt| got[p.source as usize] += p.buf.len() as u64);
    assert!(got[2] >= sent_light * 95 / 100, "light source got {} of {sent_light}", got[2]);
    assert!(s.stats().class(ClassId(0)).dropped_packets > 0);
}

#[derive(Clone, Debug)]
struct Offer {
    gap_ns: u64,
    class: u8,
    source: u64,
    len: usize,
}

fn random_table() -> impl Strategy<Value = ClassTable> {
    let class = (0u32..40, prop::option::of(0u32..60), 1_000usize..30_000, any::<bool>());
    (prop::collection::vec(class, 2..=5), 0..3u8).prop_map(|(classes, policy)| {
        let policy = [LinkPolicy::Fifo, LinkPolicy::StrictPriority, LinkPolicy::BoundedShares][policy as usize];
        let n = classes.len() as u32;
        let specs = classes
            .into_iter()
            .enumerate()
            .map(|(i, (lower, upper, queue, fair))| {
                // Lower shares add up to at most 100%; upper at least lower.
                let lower = lower * 2 / n;
                ClassSpec {
                    name: format!("c{i}"),
                    queue_bytes: queue,
                    lower: Some(RateBound::Ppm(lower * 10_000)),
                    upper: upper.map(|u| RateBound::Ppm((lower + u).clamp(1, 100) * 10_000)),
                    discipline: if fair { QueueDiscipline::FairPerSource } else { QueueDiscipline::Fifo },
                }
            })
            .collect();
        ClassTable::new(policy, specs).unwrap()
    })
}

fn offers() -> impl Strategy<Value = Vec<Offer>> {
    let one = (prop_oneof![Just(0u64), 0..50_000u64, 0..2_000_000u64], 0..5u8, 0..4u64, 40..1600usize)
        .prop_map(|(gap_ns, class, source, len)| Offer { gap_ns, class, source, len });
    prop::collection::vec(one, 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(128)))]

    /// Upper bounds hold over every window, per-(class, source) order is kept, every packet is
    /// sent, dropped with a count or still queued, and late polling changes nothing.
    #[test]
    fn bounds_order_and_conservation(table in random_table(), offers in offers(), poll_every in 1..20usize) {
        let rate = 20_000_000;
        let n = table.len();
        let specs = table.classes().to_vec();
        let policy = table.policy();
        let mut s = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table.clone());
        let mut lazy = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table);
        let (mut out, mut lazy_out) = (Vec::new(), Vec::new());
        let (mut t, mut returned) = (0u64, 0u64);
        for (i, o) in offers.iter().enumerate() {
            t += o.gap_ns;
            let mut wakeups = 0;
            while let Some(w) = s.next_wakeup().filter(|&w| w <= t) {
                s.poll_timed(w, &mut |p: Pkt, at| out.push((p, at)));
                wakeups += 1;
                prop_assert!(wakeups < 10_000, "no progress at wake-up {}", w);
            }
            if i % poll_every == 0 {
                lazy.poll_timed(t, &mut |p: Pkt, at| lazy_out.push((p.id, at)));
            }
            let class = o.class % n as u8;
            let p = Pkt { id: i as u32, class, source: o.source, buf: vec![0; o.len] };
            if let Err(p) = s.enqueue(p.clone(), ClassId(class), o.source, t) {
                returned += p.buf.len() as u64;
            }
            let _ = lazy.enqueue(p, ClassId(class), o.source, t);
            for st in &s.stats().classes {
                prop_assert_eq!(st.enqueued_bytes, st.sent_bytes + st.dropped_bytes + st.queued_bytes + st.in_flight_bytes);
            }
            for (c, spec) in specs.iter().enumerate() {
                let bound = if policy == LinkPolicy::Fifo {
                    specs.iter().map(|s| s.queue_bytes as u64).sum()
                } else {
                    spec.queue_bytes as u64
                };
                prop_assert!(s.stats().classes[c].queued_bytes <= bound);
            }
        }
        let mut wakeups = 0;
        while let Some(w) = s.next_wakeup() {
            s.poll_timed(w, &mut |p: Pkt, at| out.push((p, at)));
            wakeups += 1;
            prop_assert!(wakeups < 100_000, "no progress at wake-up {}", w);
        }
        lazy.poll_timed(u64::MAX, &mut |p: Pkt, at| lazy_out.push((p.id, at)));
        let ids: Vec<(u32, u64)> = out.iter().map(|(p, at)| (p.id, *at)).collect();
        prop_assert_eq!(ids, lazy_out);
        let st = s.stats();
        prop_assert!(returned <= st.classes.iter().map(|c| c.dropped_bytes).sum());
        for c in &st.classes {
            prop_assert_eq!(c.queued_packets + c.in_flight_packets, 0);
        }
        // Per (class, source), packets leave in the order they came.
        let mut last = std::collections::HashMap::new();
        for (p, _) in &out {
            if let Some(prev) = last.insert((p.class, p.source), p.id) {
                prop_assert!(prev < p.id, "{:?} after {}", p, prev);
            }
        }
        // Upper bounds (not applied under FIFO) hold over every window of departures.
        if policy != LinkPolicy::Fifo {
            for (c, spec) in specs.iter().enumerate() {
                let Some(upper) = spec.upper.map(|u| u.resolve(rate)) else { continue };
                let sent: Vec<(u64, u64)> =
                    out.iter().filter(|(p, _)| usize::from(p.class) == c).map(|(p, at)| (*at, p.buf.len() as u64)).collect();
                for i in 0..sent.len() {
                    let mut bytes = 0;
                    for j in i..sent.len() {
                        bytes += sent[j].1;
                        // Departures from i to j started within [start_i, at_j].
                        let start_i = sent[i].0 - (sent[i].1 * 8 * S).div_ceil(rate);
                        let window = sent[j].0 - start_i;
                        let allowed = (u128::from(upper) * u128::from(window) / u128::from(S) / 8) as u64 + slack_bytes(upper);
                        prop_assert!(bytes <= allowed, "class {} sent {} B in {} ns (upper {} bit/s)", c, bytes, window, upper);
                    }
                }
            }
        }
    }

    /// A link idles only when every backlogged class is at its upper bound: with a class without
    /// upper bound always backlogged, the link never idles.
    #[test]
    fn work_conserving_while_an_unbounded_class_is_backlogged(table in random_table(), offers in offers()) {
        let rate = 20_000_000;
        let n = table.len() as u8;
        let mut specs = table.classes().to_vec();
        let last = specs.len() - 1;
        specs[last].upper = None;
        specs[last].queue_bytes = 1 << 24;
        let table = ClassTable::new(table.policy(), specs).unwrap();
        let mut s = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table);
        // A backlog in the last class that outlasts the offers.
        for i in 0..2_000u32 {
            s.enqueue(Pkt { id: 1_000_000 + i, class: n - 1, source: 9, buf: vec![0; 1500] }, ClassId(n - 1), 9, 0).unwrap();
        }
        let mut out = Vec::new();
        let mut t = 0;
        for (i, o) in offers.iter().enumerate() {
            t += o.gap_ns.min(100_000);
            s.poll_timed(t, &mut |p: Pkt, at| out.push((p, at)));
            let _ = s.enqueue(Pkt { id: i as u32, class: o.class % n, source: o.source, buf: vec![0; o.len] }, ClassId(o.class % n), o.source, t);
        }
        s.poll_timed(t, &mut |p: Pkt, at| out.push((p, at)));
        // Back to back: the k-th departure ends exactly when the first k packets' bits have been sent.
        let mut bits = 0u128;
        for (p, at) in &out {
            bits += p.buf.len() as u128 * 8;
            prop_assert_eq!(*at, (bits * u128::from(S)).div_ceil(u128::from(rate)) as u64, "packet {}", p.id);
        }
    }
}
