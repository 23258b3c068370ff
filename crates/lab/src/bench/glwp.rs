//! GLWP rows beside the GLWP paper's figures (§VII): router validation against path length and
//! payload, one packet and batches of [`BATCH`] at a time (the paper: about 280 ns "irrespective
//! of the payload size and of the number of on-path ASes"); its sub-tasks (Fig. 5); source
//! generation against path length (Fig. 2); and discovery.
//!
//! The paper's Fig. 2 and Fig. 5 are plots whose values its text does not give: those rows
//! have no paper figure.

use std::hint::black_box;
use std::time::Instant;

use aviary_glwp::{testbed, AidMonitor, Freshness, Router, SourceAllocation};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, KeyHash, Verdict};
use aviary_scion::ScionView;

use super::{row, time_per_call, time_received, Effort, Row, BATCH, S, T0};

/// The paper's time per packet at an on-path router.
const PAPER_ROUTER_NS: f64 = 280.0;
/// Distinct packets 2.5 µs apart (5.1 Gbit/s of 1600-byte packets): β is at the monitor's
/// largest rate (6.55 Gbit/s), so none is overuse.
const GAP_NS: u64 = 2_500;
const SECRET: [u8; 16] = [0x11; 16];

pub(super) fn rows(effort: Effort) -> Vec<Row> {
    let mut rows = Vec::new();
    for lambda in [2, 4, 8] {
        for payload in [100, 500, 1500] {
            for batch in [1, BATCH] {
                rows.push(validation_row(lambda, payload, batch, Delivery::Received, effort));
            }
        }
    }
    rows.push(validation_row(8, 1500, BATCH, Delivery::Cold, effort));
    rows.extend(subtask_rows(effort));
    for lambda in [2, 4, 8] {
        rows.push(source_row(lambda, effort));
    }
    rows.push(discovery_row(effort));
    rows
}

/// A path of λ on-path ASes: the source leaves on 1, on-path AS k enters on 2k and leaves on
/// 2k + 1; the destination delivers.
fn path(lambda: u16) -> Vec<(u16, u16)> {
    (0..=lambda).map(|k| (if k == 0 { 0 } else { 2 * k }, if k == lambda { 0 } else { 2 * k + 1 })).collect()
}

fn allocation(lambda: u16) -> SourceAllocation {
    let secrets = vec![SECRET; usize::from(lambda)];
    testbed::allocation(testbed::SRC_IA, &path(lambda), (1, u32::MAX, T0 + 3600), &secrets)
}

/// A duplicate filter as a router's default configuration sizes it (10⁶ packets per window
/// at a false-positive rate of 10⁻⁶: 5.1 MiB per generation, one 64-byte block of 16 bits per key).
fn duplicates() -> DuplicateFilter {
    let config =
        DuplicateFilterConfig { window_ns: 5 * S / 2, expected_per_window: 1 << 20, false_positive_rate: 1e-6 };
    DuplicateFilter::new(config, [7; 16]).expect("the benchmark's filter is valid")
}

/// How the bench hands packets to the router.
#[derive(Clone, Copy, PartialEq)]
enum Delivery {
    /// As the router's I/O loop does ([`time_received`]): [`BATCH`] at a time in a receive ring
    /// that `recvmmsg` has just written, so in the core's cache (as DPDK's NIC writes leave the
    /// paper's packets in the last-level cache). The copy into the ring is the kernel's work and
    /// not timed; the router's calls on each ring are, the clock read around them (≈ 1 ns a
    /// packet more than the router's own time).
    Received,
    /// Straight from the bench's store of distinct packets in memory (megabytes of them), the
    /// hop pointer restored in place: the header lines of large packets then come from the
    /// last-level cache or memory, a miss per line, which the router pays on top.
    Cold,
}

/// Validation at on-path AS 1 of λ (the paper's Fig. 4 and 5: λ = 8), distinct packets with
/// duplicate suppression and the monitor; each repeat starts from a fresh router.
fn validation_row(lambda: u16, payload: usize, batch: usize, delivery: Delivery, effort: Effort) -> Row {
    let source = allocation(lambda);
    let addresses = testbed::addresses(testbed::SRC_IA);
    let t0 = u64::from(T0) * S;
    let n = effort.packets.min(1 << 14) as usize;
    let body = vec![0x5a; payload];
    let mut pkts: Vec<Vec<u8>> =
        (0..n).map(|i| source.packet(&addresses, t0 + i as u64 * GAP_NS, &body).expect("a packet")).collect();
    let freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
    let fresh = Router::new(&SECRET, freshness, AidMonitor::new(1024, u16::MAX, 9), duplicates());
    let mut verdicts = [Verdict::Deliver; BATCH];
    let ns = (0..effort.repeats)
        .map(|_| {
            let mut router = fresh.clone();
            let mut run = |refs: &mut [&mut [u8]], first: usize| {
                for (c, chunk) in refs.chunks_mut(batch).enumerate() {
                    let now = t0 + (first + c * batch) as u64 * GAP_NS;
                    if batch == 1 {
                        verdicts[0] = router.process(black_box(&mut chunk[0]), 2, now);
                    } else {
                        let len = chunk.len();
                        router.process_batch(black_box(chunk), 2, now, &mut verdicts[..len]);
                    }
                    black_box(&verdicts);
                }
            };
            let busy = match delivery {
                Delivery::Received => time_received(pkts.iter().map(|p| &p[..]), BATCH, &mut run),
                Delivery::Cold => {
                    let hp_at = ScionView::new_checked(&pkts[0][..]).unwrap().path_range().start
                        + aviary_glwp::header::field::HOP_POINTER;
                    let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
                    let t = Instant::now();
                    for (r, chunk) in refs.chunks_mut(BATCH).enumerate() {
                        for p in chunk.iter_mut() {
                            p[hp_at] = 0;
                        }
                        run(chunk, r * BATCH);
                    }
                    t.elapsed()
                }
            };
            assert_eq!(router.stats.forwarded, n as u64, "benchmark packets not all forwarded: {:?}", router.stats);
            busy.as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min);
    let cold = if delivery == Delivery::Cold { ", packets not in cache" } else { "" };
    row(&format!("glwp validation, router ({lambda} on-path ASes){cold}"), batch, payload, Some(PAPER_ROUTER_NS), ns)
}

/// The sub-tasks of Fig. 5, each on its own over a batch (so they do not add up to a router
/// row exactly: the router also parses, checks freshness and the interfaces and advances the
/// hop pointer, Fig. 5's "others"). The hop key is one CMAC under `K_k`; the hop authenticator
/// a key expansion and CMAC under the hop key (Fig. 5's "calculate hop key" includes that
/// expansion); duplicate suppression hashes a batch of distinct keys together, prefetches
/// their lines and inserts them into the default-sized filter, as the router does; the monitor
/// charges one allocation.
fn subtask_rows(effort: Effort) -> Vec<Row> {
    use aviary_scion::cmac::{mac_two_blocks_fresh_keys, CmacKey};

    let secret = CmacKey::new(&SECRET);
    let mut inputs = [[0u8; 28]; BATCH];
    let mut ha_inputs = [[0u8; 18]; BATCH];
    for (i, (a, b)) in inputs.iter_mut().zip(ha_inputs.iter_mut()).enumerate() {
        a[0] = i as u8;
        b[0] = i as u8;
    }
    let mut keys = [[0u8; 16]; BATCH];
    let hop_key = time_per_call(effort, BATCH as u64, |i| {
        inputs[0][27] = i as u8;
        secret.mac_two_blocks_many(black_box(&inputs), &mut keys);
        black_box(&keys);
    });
    let mut macs = [[0u8; 16]; BATCH];
    let authenticator = time_per_call(effort, BATCH as u64, |i| {
        keys[0][15] = i as u8;
        mac_two_blocks_fresh_keys(black_box(&keys), &ha_inputs, &mut macs);
        black_box(&macs);
    });
    let fresh = duplicates();
    let t0 = u64::from(T0) * S;
    let calls = (effort.packets / BATCH as u64).max(1);
    let dedup = (0..effort.repeats)
        .map(|_| {
            let mut filter = fresh.clone();
            let t = Instant::now();
            for c in 0..calls {
                let mut keys = [[0u8; 16]; BATCH];
                for (j, key) in keys.iter_mut().enumerate() {
                    key[8..].copy_from_slice(&(c * BATCH as u64 + j as u64).to_be_bytes());
                }
                let mut hashes = [KeyHash::default(); BATCH];
                filter.hash_many(black_box(&keys), &mut hashes);
                for h in hashes {
                    filter.prefetch(h);
                }
                for h in hashes {
                    black_box(filter.check_and_insert_hashed(h, t0 + c * GAP_NS));
                }
            }
            t.elapsed().as_nanos() as f64 / (calls * BATCH as u64) as f64
        })
        .fold(f64::INFINITY, f64::min);
    let mut monitor = AidMonitor::new(1024, u16::MAX, 9);
    let charge = time_per_call(effort, 1, |i| {
        black_box(monitor.charge(black_box(1), u32::MAX, T0 + 3600, 300, t0 + i * GAP_NS));
    });
    vec![
        row("glwp validation: hop key", BATCH, 0, None, hop_key),
        row("glwp validation: hop authenticator", BATCH, 0, None, authenticator),
        row("glwp validation: duplicate suppression", BATCH, 0, None, dedup),
        row("glwp validation: monitor", 1, 0, None, charge),
    ]
}

/// The source's per-packet work (Alg. 2 lines 2-7, Fig. 2) on a packet of its allocation on λ
/// on-path ASes: set ts_pkt and write the λ hop authenticators (the header template and the
/// payload are in place, as a sender reuses its buffer).
fn source_row(lambda: u16, effort: Effort) -> Row {
    const PAYLOAD: usize = 100;
    let source = allocation(lambda);
    let t0 = u64::from(T0) * S;
    let mut pkt = source.packet(&testbed::addresses(testbed::SRC_IA), t0, &[0x5a; PAYLOAD]).expect("a packet");
    let ns = time_per_call(effort, 1, |i| {
        source.restamp(black_box(&mut pkt), t0 + i * GAP_NS).expect("restamped");
    });
    row(&format!("glwp source ({lambda} on-path ASes)"), 1, PAYLOAD, None, ns)
}

/// GLWP discovery (Alg. 1) on a path of 5 ASes: the CPU time of one on-path AS's GLWP
/// service, forward and return processing together (the destination does both at once), the
/// mean over the 4 on-path ASes. The source's request and check are not included. The paper
/// gives no figure (it leaves the discovery implementation to future work). Requests are
/// 3 ms apart, so every neighbour's rate limit admits them.
fn discovery_row(effort: Effort) -> Row {
    use aviary_glwp::testbed::discovery::{Chain, HopSpec};

    const ASES: usize = 5;
    const GAP_NS: u64 = 3_000_000;
    let spec = HopSpec { m_bps: 1_000_000_000, extra_div_bps: 500_000_000, extra_con_bps: 250_000_000 };
    let mut chain = Chain::new(&[spec; ASES], 0).expect("the benchmark's matrices are valid");
    let n = (effort.packets / 100).clamp(10, 2_000);
    let mut now = u64::from(T0) * S;
    let mut len = 0;
    let ns = (0..effort.repeats)
        .map(|_| {
            let mut busy = std::time::Duration::ZERO;
            for _ in 0..n {
                now += GAP_NS;
                let request = chain.request(now);
                len = request.len();
                let t = Instant::now();
                let back = chain.through_on_path(black_box(request), now, &mut |_, _| {});
                busy += t.elapsed();
                assert!(back.is_ok(), "benchmark discovery failed: {back:?}");
            }
            busy.as_nanos() as f64 / (n * (ASES as u64 - 1)) as f64
        })
        .fold(f64::INFINITY, f64::min);
    row("glwp discovery, per on-path AS", 1, len, None, ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_glwp_rows_cover_paths_payloads_batches_and_subtasks() {
        let rows = rows(Effort { packets: 64, repeats: 1 });
        for lambda in [2, 4, 8] {
            let name = format!("glwp validation, router ({lambda} on-path ASes)");
            for payload in [100, 500, 1500] {
                for batch in [1, BATCH] {
                    assert!(
                        rows.iter().any(|r| r.name == name
                            && r.payload_bytes == payload
                            && r.batch == batch
                            && r.paper_ns == Some(PAPER_ROUTER_NS)),
                        "{name}, {payload} B, batch {batch}"
                    );
                }
            }
            assert!(rows.iter().any(|r| r.name == format!("glwp source ({lambda} on-path ASes)")));
        }
        for sub in ["hop key", "hop authenticator", "duplicate suppression", "monitor"] {
            assert!(rows.iter().any(|r| r.name == format!("glwp validation: {sub}")), "{sub}");
        }
        assert!(rows.iter().any(|r| r.name == "glwp validation, router (8 on-path ASes), packets not in cache"
            && r.payload_bytes == 1500
            && r.batch == BATCH));
        assert!(rows.iter().any(|r| r.name == "glwp discovery, per on-path AS"));
        assert!(rows.iter().all(|r| r.ns_per_packet > 0.0));
    }
}
