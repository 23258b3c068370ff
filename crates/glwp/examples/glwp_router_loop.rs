//! A small driver for instruction counts and wall time of GLWP router validation: the packet
//! of the `aviary bench` rows (on-path AS 1 of `λ` with distinct timestamps 300 ns apart, so
//! duplicate suppression and the monitor see fresh packets) run through one router, one
//! packet or a batch at a time, the hop pointer restored before each run. The packets are read
//! in place from memory, as in the bench's "packets not in cache" row, not from a receive ring
//! as in its other GLWP rows: the instruction counts are the same, the wall time is not. Under
//! callgrind, counting only the router's entry points, the difference of two counts cancels the
//! set-up (building the packets, the duplicate filter's first clearing):
//!
//! ```text
//! T='--toggle-collect=*Router::process_batch* --toggle-collect=*Router::process'
//! valgrind --tool=callgrind $T target/release/examples/glwp_router_loop 32 8 2048
//! valgrind --tool=callgrind $T target/release/examples/glwp_router_loop 32 8 4096
//! ```
//!
//! Arguments: the batch size (1 to 32), λ (1 to 32), the number of distinct packets and
//! optionally the number of repeats (each with a fresh copy of the router; the best counts).

use std::hint::black_box;
use std::time::Instant;

use aviary_glwp::{testbed, AidMonitor, Freshness, Router};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::ScionView;

const S: u64 = 1_000_000_000;
const T0: u32 = 1_750_000_000;
const GAP_NS: u64 = 300;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: glwp_router_loop BATCH(1-32) LAMBDA(1-32) PACKETS [REPEATS]";
    let batch: usize = args.get(1).and_then(|b| b.parse().ok()).filter(|b| (1..=32).contains(b)).expect(usage);
    let lambda: u16 = args.get(2).and_then(|b| b.parse().ok()).filter(|l| (1..=32).contains(l)).expect(usage);
    let packets: u64 = args.get(3).and_then(|n| n.parse().ok()).filter(|n| (1..=1 << 20).contains(n)).expect(usage);
    let repeats: usize = args.get(4).map_or(Some(1), |r| r.parse().ok()).expect(usage);

    let secret = [0x11; 16];
    let path: Vec<(u16, u16)> =
        (0..=lambda).map(|k| (if k == 0 { 0 } else { 2 * k }, if k == lambda { 0 } else { 2 * k + 1 })).collect();
    let source =
        testbed::allocation(testbed::SRC_IA, &path, (1, u32::MAX, T0 + 3600), &vec![secret; usize::from(lambda)]);
    let addresses = testbed::addresses(testbed::SRC_IA);
    let t0 = u64::from(T0) * S;
    let mut pkts: Vec<Vec<u8>> =
        (0..packets).map(|i| source.packet(&addresses, t0 + i * GAP_NS, &[0x5a; 100]).unwrap()).collect();
    let hp_at =
        ScionView::new_checked(&pkts[0][..]).unwrap().path_range().start + aviary_glwp::header::field::HOP_POINTER;
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 5 * S / 2, expected_per_window: 1 << 20, false_positive_rate: 1e-6 },
        [7; 16],
    )
    .unwrap();
    let freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
    let fresh = Router::new(&secret, freshness, AidMonitor::new(1024, u16::MAX, 9), dups);

    let mut verdicts = vec![Verdict::Deliver; batch];
    let mut all: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        // A fresh router each time, so that no packet is a replay of the previous repeat's.
        let mut router = fresh.clone();
        let mut forwarded = 0;
        let t = Instant::now();
        for (c, refs) in all.chunks_mut(batch).enumerate() {
            for p in refs.iter_mut() {
                p[hp_at] = 0;
            }
            let now = t0 + (c * batch) as u64 * GAP_NS;
            let n = refs.len();
            if batch == 1 {
                verdicts[0] = router.process(black_box(&mut refs[0]), 2, now);
            } else {
                router.process_batch(black_box(refs), 2, now, &mut verdicts[..n]);
            }
            forwarded += verdicts[..n].iter().filter(|v| matches!(v, Verdict::Forward { .. })).count();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / packets as f64);
        assert_eq!(forwarded as u64, packets, "packets not all forwarded: {:?}", router.stats);
    }
    println!("glwp batch {batch}, λ = {lambda}: {best:.1} ns/packet (best of {repeats})");
}
