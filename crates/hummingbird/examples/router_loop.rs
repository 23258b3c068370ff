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
//! Arguments: `scion|plain|flyover|flyovers`, the batch size (1 to 32) and the number of packets.
//! `scion` runs the standard packet through the Hummingbird router, `plain` through the standard
//! forwarder alone, which is what a router process runs standard packets through.
//! `flyovers` sends the packets of [`RESERVATIONS`] reservations round-robin, their ResIDs
//! spread over the whole 22-bit space (a policing array of 32 MiB): each packet's policing
//! slot is on a page of its own, as at a router with many reservations, not always in cache
//! as with the one reservation of `flyover`.

use std::hint::black_box;
use std::time::Instant;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{RouterParams, Source};
use aviary_qos::Verdict;
use aviary_scion::{ScionView, StandardForwarder};

/// The forwarder a run goes through.
enum Forwarder {
    Plain(Box<StandardForwarder>),
    Hummingbird(Box<aviary_hummingbird::Router>),
}

const T0: u32 = 1_750_000_000;
const NOW: u64 = T0 as u64 * 1_000_000_000 + 200_000_000;
/// The transit AS of the chain, as in the bench rows.
const TRANSIT: usize = 2;
/// Reservations at the transit AS in the `flyovers` case.
const RESERVATIONS: u32 = 10_000;
/// Distance of their ResIDs: they spread over the 22-bit ResID space.
const RES_ID_STRIDE: u32 = (1 << 22) / RESERVATIONS;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: router_loop scion|plain|flyover|flyovers BATCH(1-32) PACKETS";
    let kind = args.get(1).expect(usage);
    let batch: usize = args.get(2).and_then(|b| b.parse().ok()).filter(|b| (1..=32).contains(b)).expect(usage);
    let packets: u64 = args.get(3).and_then(|n| n.parse().ok()).expect(usage);

    let chain = Chain::new(5, T0 - 60);
    let mut params = RouterParams::default();
    let pool: Vec<Vec<u8>> = match kind.as_str() {
        "scion" | "plain" => vec![chain.standard_packet(100)],
        "flyover" => vec![flyover_packet(&chain, 77)],
        "flyovers" => {
            params.max_res_id = (1 << 22) - 1;
            (0..RESERVATIONS).map(|k| flyover_packet(&chain, k * RES_ID_STRIDE)).collect()
        }
        _ => panic!("{usage}"),
    };
    // Every packet as it arrives at the transit AS; the path header is restored from here.
    let pool: Vec<Vec<u8>> = pool
        .into_iter()
        .map(|mut pkt| {
            for i in 0..TRANSIT {
                chain.router(i, RouterParams::default()).process(&mut pkt, Chain::forward_ingress(i), NOW);
            }
            pkt
        })
        .collect();
    let path = ScionView::new_checked(&pool[0][..]).expect("a valid packet").path_range();
    let templates: Vec<Vec<u8>> = pool.iter().map(|p| p[path.clone()].to_vec()).collect();
    let hbird = chain.router(TRANSIT, params);
    let mut router = match kind.as_str() {
        "plain" => Forwarder::Plain(Box::new(StandardForwarder::standard(hbird.forwarding().clone()))),
        _ => Forwarder::Hummingbird(Box::new(hbird)),
    };
    let ingress = Chain::forward_ingress(TRANSIT);

    // The reservations round-robin, `batch` of them at a time (with one packet in the pool,
    // `batch` copies of it); whole batches only.
    let copies = if pool.len() == 1 { batch } else { 1 };
    let mut pkts: Vec<Vec<u8>> = pool.iter().flat_map(|p| std::iter::repeat_n(p.clone(), copies)).collect();
    pkts.truncate(pkts.len() / batch * batch);
    let templates: Vec<&[u8]> = (0..pkts.len()).map(|j| &templates[j / copies][..]).collect();
    let mut verdicts = vec![Verdict::Deliver; batch];
    let rounds = packets.div_ceil(batch as u64);
    let t = Instant::now();
    for i in 0..rounds {
        let now = NOW + i * 100 * batch as u64;
        let first = i as usize * batch % pkts.len();
        let group = &mut pkts[first..][..batch];
        for (p, t) in group.iter_mut().zip(&templates[first..]) {
            p[path.clone()].copy_from_slice(t);
        }
        if batch == 1 {
            // As a router does with a lone packet: the stages sized for one.
            verdicts[0] = match &mut router {
                Forwarder::Plain(r) => r.process(black_box(&mut group[0]), ingress, now),
                Forwarder::Hummingbird(r) => r.process(black_box(&mut group[0]), ingress, now),
            };
        } else {
            let mut refs: [&mut [u8]; 32] = Default::default();
            for (r, p) in refs.iter_mut().zip(group.iter_mut()) {
                *r = p;
            }
            match &mut router {
                Forwarder::Plain(r) => r.process_batch(black_box(&mut refs[..batch]), ingress, now, &mut verdicts),
                Forwarder::Hummingbird(r) => {
                    r.process_batch(black_box(&mut refs[..batch]), ingress, now, &mut verdicts)
                }
            }
        }
        black_box(&verdicts);
    }
    let elapsed = t.elapsed().as_nanos() as f64;
    if let Forwarder::Hummingbird(r) = &router {
        let cache = r.auth_key_cache_counters();
        eprintln!("A_K cache (packets alone): {} hits, {} inserts", cache.hits, cache.inserts);
    }
    assert!(verdicts.iter().all(|v| matches!(v, Verdict::Forward { .. })), "packets not forwarded: {verdicts:?}");
    println!("{kind} batch {batch}: {:.1} ns/packet", elapsed / (rounds * batch as u64) as f64);
}

/// A flyover packet with a reservation `res_id` at the transit AS, stamped by its source.
fn flyover_packet(chain: &Chain, res_id: u32) -> Vec<u8> {
    let res = [(TRANSIT, chain.grant(TRANSIT, res_id, 1023, T0 - 10, 3600))];
    let mut pkt = chain.hbird_packet(&res, T0, 100).expect("a flyover packet");
    Source::new(&pkt, &[res[0].1]).expect("a source").stamp(&mut pkt, NOW).expect("stamped");
    pkt
}
