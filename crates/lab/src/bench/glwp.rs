//! GLWP rows: router validation and discovery, beside the GLWP paper's figures (§VII).

use std::hint::black_box;
use std::time::Instant;

use aviary_qos::Verdict;
use aviary_scion::ScionView;

use super::{row, Effort, Row, S, T0};

pub(super) fn rows(effort: Effort) -> Vec<Row> {
    vec![validation_row(effort), discovery_row(effort)]
}

/// GLWP validation at on-path AS 1 of 8 (the paper's Fig. 4 and 5 path), distinct packets
/// 300 ns apart (β at the monitor's maximum, so none is overuse), with duplicate suppression
/// and the monitor; each repeat starts from a fresh router. Restoring the hop pointer byte is
/// included.
fn validation_row(effort: Effort) -> Row {
    use aviary_glwp::{testbed, AidMonitor, Freshness};
    use aviary_qos::{DuplicateFilter, DuplicateFilterConfig};

    const GAP_NS: u64 = 300;
    let secret = [0x11; 16];
    let path: Vec<(u16, u16)> =
        (0..9u16).map(|k| (if k == 0 { 0 } else { 2 * k }, if k == 8 { 0 } else { 2 * k + 1 })).collect();
    let source = testbed::allocation(testbed::SRC_IA, &path, (1, u32::MAX, T0 + 3600), &[secret; 8]);
    let addresses = testbed::addresses(testbed::SRC_IA);
    let t0 = u64::from(T0) * S;
    let n = effort.packets.min(1 << 16);
    let body = vec![0x5a; 100];
    let mut pkts: Vec<Vec<u8>> = (0..n).map(|i| source.packet(&addresses, t0 + i * GAP_NS, &body).unwrap()).collect();
    let hp_at =
        ScionView::new_checked(&pkts[0][..]).unwrap().path_range().start + aviary_glwp::header::field::HOP_POINTER;
    let freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 5 * S / 2, expected_per_window: 1 << 20, false_positive_rate: 1e-6 },
        [7; 16],
    )
    .unwrap();
    let fresh = aviary_glwp::Router::new(&secret, freshness, AidMonitor::new(1024, u16::MAX, 9), dups);
    let ns = (0..effort.repeats)
        .map(|_| {
            let mut router = fresh.clone();
            let t = Instant::now();
            for (i, pkt) in pkts.iter_mut().enumerate() {
                pkt[hp_at] = 0;
                let v = router.process(black_box(pkt), 2, t0 + i as u64 * GAP_NS);
                debug_assert!(matches!(v, Verdict::Forward { .. }), "{v:?}");
                black_box(v);
            }
            let ns = t.elapsed().as_nanos() as f64 / n as f64;
            assert_eq!(router.stats.forwarded, n, "benchmark packets not all forwarded: {:?}", router.stats);
            ns
        })
        .fold(f64::INFINITY, f64::min);
    row("glwp validation, router (8 on-path ASes)", 1, 100, Some(280.0), ns)
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
