//! A small driver for instruction counts and wall time of the router's per-packet work: builds
//! the packet of the `aviary bench` router rows (a transit hop of a five-AS chain) and runs it
//! through the router `count` times, one packet or a batch of 32 at a time, restoring the path
//! header before each run. Under callgrind, the difference of two counts cancels the set-up:
//!
//! ```text
//! valgrind --tool=callgrind target/release/examples/router_loop flyover 32 2000
//! valgrind --tool=callgrind target/release/examples/router_loop flyover 32 4000
//! ```
//!
//! Arguments: `scion|flyover`, the batch size (1 to 32) and the number of packets.

use std::hint::black_box;
use std::time::Instant;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{RouterParams, Source};
use aviary_qos::Verdict;
use aviary_scion::ScionView;

const T0: u32 = 1_750_000_000;
const NOW: u64 = T0 as u64 * 1_000_000_000 + 200_000_000;
/// The transit AS of the chain, as in the bench rows.
const TRANSIT: usize = 2;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: router_loop scion|flyover BATCH(1-32) PACKETS";
    let kind = args.get(1).expect(usage);
    let batch: usize = args.get(2).and_then(|b| b.parse().ok()).filter(|b| (1..=32).contains(b)).expect(usage);
    let packets: u64 = args.get(3).and_then(|n| n.parse().ok()).expect(usage);

    let chain = Chain::new(5, T0 - 60);
    let mut pkt = match kind.as_str() {
        "scion" => chain.standard_packet(100),
        "flyover" => {
            let res = [(TRANSIT, chain.grant(TRANSIT, 77, 1023, T0 - 10, 3600))];
            let mut pkt = chain.hbird_packet(&res, T0, 100).expect("a flyover packet");
            Source::new(&pkt, &[res[0].1]).expect("a source").stamp(&mut pkt, NOW).expect("stamped");
            pkt
        }
        _ => panic!("{usage}"),
    };
    for i in 0..TRANSIT {
        chain.router(i, RouterParams::default()).process(&mut pkt, Chain::forward_ingress(i), NOW);
    }
    let path = ScionView::new_checked(&pkt[..]).expect("a valid packet").path_range();
    let template = pkt[path.clone()].to_vec();
    let mut router = chain.router(TRANSIT, RouterParams::default());
    let ingress = Chain::forward_ingress(TRANSIT);

    let mut pkts: Vec<Vec<u8>> = vec![pkt; batch];
    let mut verdicts = vec![Verdict::Deliver; batch];
    let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
    let rounds = packets.div_ceil(batch as u64);
    let t = Instant::now();
    for i in 0..rounds {
        for p in refs.iter_mut() {
            p[path.clone()].copy_from_slice(&template);
        }
        let now = NOW + i * 100 * batch as u64;
        if batch == 1 {
            // As a router does with a lone packet: the stages sized for one.
            verdicts[0] = router.process(black_box(&mut refs[0]), ingress, now);
        } else {
            router.process_batch(black_box(&mut refs), ingress, now, &mut verdicts);
        }
        black_box(&verdicts);
    }
    let elapsed = t.elapsed().as_nanos() as f64;
    assert!(verdicts.iter().all(|v| matches!(v, Verdict::Forward { .. })), "packets not forwarded: {verdicts:?}");
    println!("{kind} batch {batch}: {:.1} ns/packet", elapsed / (rounds * batch as u64) as f64);
}
