//! pathval rows of `aviary bench`: each function of the paper's Table IV, and the cost per
//! node position of its Fig. 5 (source, a router at hop `n`, sampling or not, the mean over
//! the routers of a path, the destination), 1000-byte payloads as in the paper.
//!
//! Position rows run the real node processing on a 12-node [`Chain`] (the paper's longest
//! path): packets as they arrive at the node are prepared first, untimed, then handed to the
//! node as a router's receive loop hands them over ([`time_received`]): [`BATCH`] fresh copies
//! at a time in a receive ring, copied there untimed as `recvmmsg` copies them. The single rows
//! process the ring's packets one after another; the batched rows hand the router the whole
//! ring at once, as a border router does ([`Chain::step_batch`]: the hashing of the batch runs
//! together in the multi-state Keccak).

use std::hint::black_box;

use aviary_pathval::{Chain, Freshness, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;

use super::{best_ns, row, time_received, Effort, Row};

const NODES: usize = 12;
const PAYLOAD: usize = 1000;
const NOW: u64 = 1_700_000_000;
/// Distinct packets per position (their DataHash, and so the sampling, differs).
const DISTINCT: usize = 512;
/// Packets per call in the batched rows (a border router's batch).
const BATCH: usize = aviary_pathval::batch::MAX_BATCH;

/// The paper's Table IV (10^-7 s per call, Click on a 3 GHz i7), in ns.
fn paper_function_ns(name: &str) -> Option<f64> {
    Some(match name {
        "src_initialization" => 874.0,
        "ep_sampling" => 26.0,
        "construction" => 561.0,
        "verification_hidden_sample" => 168.0,
        "verification_validation_proof" => 870.0,
        "update" => 168.0,
        "dst_verification" => 274.0,
        _ => return None,
    })
}

fn chain() -> Chain {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).expect("a valid epoch");
    Chain::new(NODES, 0x7076, epoch, Freshness { max_age_s: 3, max_future_s: 1 }).expect("the chain's keys derive")
}

/// `DISTINCT` packets as they reach node `at` (0: the source, before it), with whether node
/// `at` samples each (for routers).
fn arriving(at: usize) -> Vec<(Vec<u8>, bool)> {
    let mut chain = chain();
    let mut random = SeededRandom::new(at as u64);
    (0..DISTINCT)
        .map(|i| {
            let mut payload = vec![0x5a; PAYLOAD];
            payload[..8].copy_from_slice(&(i as u64).to_be_bytes());
            let mut pkt = chain.packet(&payload);
            if at == 0 {
                return (pkt, true);
            }
            chain.send(&mut pkt, NOW as u32).expect("the source sends");
            for j in 1..at {
                assert!(matches!(chain.step(j, &mut pkt, NOW, &mut random), Verdict::Forward { .. }));
            }
            let mut probe = pkt.clone();
            let sampled = match chain.step(at, &mut probe, NOW, &mut random) {
                Verdict::Forward { sampled } => sampled,
                Verdict::Deliver => false,
                Verdict::Drop(d) => panic!("benchmark packet dropped at node {at}: {d:?}"),
            };
            (pkt, sampled)
        })
        .collect()
}

/// ns per packet of node `at` over `pkts` (the packets as they arrive there), one at a time,
/// cycling through `pkts` for `effort.packets` packets.
fn time_node(at: usize, pkts: &[Vec<u8>], effort: Effort) -> f64 {
    let mut chain = chain();
    let mut random = SeededRandom::new(7);
    let packets = effort.packets as usize;
    best_ns(effort, || {
        let stream = pkts.iter().cycle().take(packets).map(|p| &p[..]);
        let busy = time_received(stream, BATCH, |ring, _| {
            for pkt in ring.iter_mut() {
                if at == 0 {
                    let sent = black_box(chain.send(black_box(pkt), NOW as u32));
                    debug_assert!(sent.is_ok(), "benchmark packet not sent: {sent:?}");
                } else {
                    let v = black_box(chain.step(at, black_box(pkt), NOW, &mut random));
                    debug_assert!(!matches!(v, Verdict::Drop(_)), "benchmark packet dropped at node {at}: {v:?}");
                }
            }
        });
        (busy, packets as u64)
    })
}

/// ns per packet of router `at` over `pkts`, [`BATCH`] packets per call (whole calls of
/// `effort.packets`).
fn time_router_batched(at: usize, pkts: &[Vec<u8>], effort: Effort) -> f64 {
    let mut chain = chain();
    let mut random = SeededRandom::new(7);
    let packets = (effort.packets as usize / BATCH).max(1) * BATCH;
    let mut verdicts = [Verdict::Deliver; BATCH];
    best_ns(effort, || {
        let stream = pkts.iter().cycle().take(packets).map(|p| &p[..]);
        let busy = time_received(stream, BATCH, |ring, _| {
            let n = ring.len();
            chain.step_batch(at, black_box(ring), NOW, &mut random, &mut verdicts[..n]);
            debug_assert!(
                verdicts[..n].iter().all(|v| matches!(v, Verdict::Forward { .. })),
                "benchmark packets not forwarded at node {at}: {verdicts:?}"
            );
            black_box(&verdicts);
        });
        (busy, packets as u64)
    })
}

/// The pathval rows.
pub fn rows(effort: Effort) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, ns) in crate::pathval::timings(effort.packets.min(200_000) as u32) {
        let label = format!("pathval {name}");
        rows.push(row(&label, 1, PAYLOAD, paper_function_ns(name), ns));
    }
    let source: Vec<Vec<u8>> = arriving(0).into_iter().map(|(p, _)| p).collect();
    rows.push(row("pathval source (init + construct)", 1, PAYLOAD, Some(1440.0), time_node(0, &source, effort)));
    let (mut means, mut means_batched) = (Vec::new(), Vec::new());
    let (mut sampled_all, mut unsampled_all) = (Vec::new(), Vec::new());
    for at in 1..NODES - 1 {
        let pkts = arriving(at);
        let all: Vec<Vec<u8>> = pkts.iter().map(|(p, _)| p.clone()).collect();
        let ns = time_node(at, &all, effort);
        let batched = time_router_batched(at, &all, effort);
        means.push(ns);
        means_batched.push(batched);
        // Fig. 5 gives the second and the eighth hop.
        let hop = at + 1;
        if matches!(hop, 2 | 4 | 8 | 11) {
            let paper = match hop {
                2 => Some(910.0),
                8 => Some(500.0),
                _ => None,
            };
            let label = format!("pathval router, hop {hop} of {NODES}");
            rows.push(row(&label, 1, PAYLOAD, paper, ns));
            rows.push(row(&label, BATCH, PAYLOAD, paper, batched));
        }
        for (p, s) in pkts {
            if s {
                sampled_all.push((at, p));
            } else {
                unsampled_all.push((at, p));
            }
        }
    }
    let mean = means.iter().sum::<f64>() / means.len() as f64;
    rows.push(row("pathval router, mean of hops 2-11", 1, PAYLOAD, None, mean));
    let mean_batched = means_batched.iter().sum::<f64>() / means_batched.len() as f64;
    rows.push(row("pathval router, mean of hops 2-11", BATCH, PAYLOAD, None, mean_batched));
    for (label, set) in [("sampled", &sampled_all), ("not sampled", &unsampled_all)] {
        // Per position, then weighted by how many packets each position contributes.
        let mut total = 0.0;
        for at in 1..NODES - 1 {
            let pkts: Vec<Vec<u8>> = set.iter().filter(|(a, _)| *a == at).map(|(_, p)| p.clone()).collect();
            if !pkts.is_empty() {
                total += time_node(at, &pkts, effort) * pkts.len() as f64;
            }
        }
        rows.push(row(&format!("pathval router, {label}"), 1, PAYLOAD, None, total / set.len().max(1) as f64));
    }
    let dst: Vec<Vec<u8>> = arriving(NODES - 1).into_iter().map(|(p, _)| p).collect();
    rows.push(row("pathval destination (12 nodes)", 1, PAYLOAD, Some(520.0), time_node(NODES - 1, &dst, effort)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_pathval_rows_cover_every_function_and_position() {
        let rows = rows(Effort { packets: 64, repeats: 1 });
        for f in ["src_initialization", "ep_sampling", "construction", "update", "dst_verification"] {
            assert!(rows.iter().any(|r| r.name == format!("pathval {f}") && r.paper_ns.is_some()), "{f}");
        }
        for r in ["source", "hop 2 of", "mean of hops", "sampled", "not sampled", "destination"] {
            assert!(rows.iter().any(|x| x.name.contains(r)), "{r}");
        }
        for r in ["hop 2 of", "hop 11 of", "mean of hops"] {
            assert!(rows.iter().any(|x| x.name.contains(r) && x.batch == BATCH), "{r}, batched");
        }
        assert!(rows.iter().all(|r| r.ns_per_packet > 0.0 && r.payload_bytes == PAYLOAD));
    }
}
