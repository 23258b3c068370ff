//! A small driver for instruction counts and wall time of a pathval router: the packets of the
//! `aviary bench` position rows (12-node chain, 1000-byte payloads, 256 distinct packets per
//! position) run through every router position (hops 2-11), one packet or a batch at a time,
//! the 101 header bytes restored before each run. `ROUNDS` passes over all positions follow
//! one set-up; under callgrind, the difference of two counts cancels the set-up:
//!
//! ```text
//! valgrind --tool=callgrind target/release/examples/pathval_router_loop 32 2
//! valgrind --tool=callgrind target/release/examples/pathval_router_loop 32 4
//! ```
//!
//! (the difference over `2 × 10 × 256` packets). Arguments: the batch size (1 to 32), the
//! number of rounds and optionally the number of repeats of the timed rounds (the best time
//! counts, for the mean and for each hop on its own).

use std::hint::black_box;
use std::time::Instant;

use aviary_pathval::{locate, Chain, Freshness, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;

const NODES: usize = 12;
const PAYLOAD: usize = 1000;
const DISTINCT: usize = 256;
const NOW: u64 = 1_700_000_000;

fn chain() -> Chain {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).expect("a valid epoch");
    Chain::new(NODES, 0x7076, epoch, Freshness { max_age_s: 3, max_future_s: 1 }).expect("the chain's keys derive")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: pathval_router_loop BATCH(1-32) ROUNDS [REPEATS]";
    let batch: usize = args.get(1).and_then(|b| b.parse().ok()).filter(|b| (1..=32).contains(b)).expect(usage);
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).expect(usage);
    let repeats: usize = args.get(3).map_or(Some(1), |r| r.parse().ok()).expect(usage);

    // The packets as they arrive at each router, prepared by the chain itself.
    let mut setup = chain();
    let mut random = SeededRandom::new(1);
    let mut arriving: Vec<Vec<Vec<u8>>> = (0..NODES - 1).map(|_| Vec::with_capacity(DISTINCT)).collect();
    for i in 0..DISTINCT {
        let mut payload = vec![0x5a; PAYLOAD];
        payload[..8].copy_from_slice(&(i as u64).to_be_bytes());
        let mut pkt = setup.packet(&payload);
        setup.send(&mut pkt, NOW as u32).expect("the source sends");
        for (at, slot) in arriving.iter_mut().enumerate().skip(1) {
            slot.push(pkt.clone());
            assert!(matches!(setup.step(at, &mut pkt, NOW, &mut random), Verdict::Forward { .. }));
        }
    }
    let header = locate(&arriving[1][0]).expect("a pathval packet").header;
    let templates: Vec<Vec<Vec<u8>>> =
        arriving.iter().map(|ps| ps.iter().map(|p| p[header.clone()].to_vec()).collect()).collect();

    let mut c = chain();
    let mut verdicts = vec![Verdict::Deliver; batch];
    // The best mean over all positions, and the best of each position on its own.
    let mut best = f64::INFINITY;
    let mut best_at = [f64::INFINITY; NODES - 1];
    for _ in 0..repeats {
        let mut forwarded = 0;
        let mut total = 0.0;
        for at in 1..NODES - 1 {
            let t = Instant::now();
            for _ in 0..rounds {
                let mut refs: Vec<&mut [u8]> = arriving[at].iter_mut().map(Vec::as_mut_slice).collect();
                for (chunk, tpl) in refs.chunks_mut(batch).zip(templates[at].chunks(batch)) {
                    for (p, t) in chunk.iter_mut().zip(tpl) {
                        p[header.clone()].copy_from_slice(t);
                    }
                    let n = chunk.len();
                    if batch == 1 {
                        verdicts[0] = c.step(at, black_box(chunk[0]), NOW, &mut random);
                    } else {
                        c.step_batch(at, black_box(chunk), NOW, &mut random, &mut verdicts[..n]);
                    }
                    forwarded += verdicts[..n].iter().filter(|v| matches!(v, Verdict::Forward { .. })).count();
                }
            }
            let ns = t.elapsed().as_nanos() as f64;
            total += ns;
            best_at[at] = best_at[at].min(ns / (rounds * DISTINCT) as f64);
        }
        let packets = rounds * (NODES - 2) * DISTINCT;
        best = best.min(total / packets as f64);
        assert_eq!(forwarded, packets, "packets not all forwarded");
    }
    println!("pathval router, batch {batch}, mean of hops 2-11: {best:.1} ns/packet (best of {repeats})");
    let per_hop: Vec<String> = (1..NODES - 1).map(|at| format!("{}: {:.0}", at + 1, best_at[at])).collect();
    println!("best per hop (ns/packet): {}", per_hop.join(", "));
}
