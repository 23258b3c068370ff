//! Per-packet cost of the data plane on one core, beside the figures of the Hummingbird paper
//! (Tables 3 and 4: DPDK on a 2.1 GHz Xeon), the GLWP paper (§VII: the same kind of
//! machine), the Z-Lane paper (Table 3, the same kind of machine; rows in [`zlane`]) and the
//! pathval paper (Table IV and Fig. 5: Click on a 3 GHz i7; rows in [`pathval`]).
//!
//! Each row processes the same packet repeatedly. Routers mutate packets (CurrHF, SegID,
//! MAC write-back), so before each run the path header is restored from a template: a
//! copy of ~100 bytes that is included in the figures. Source rows include writing the
//! header template and copying the payload, as the paper's Table 4 does.

use std::hint::black_box;
use std::time::Instant;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Router, RouterParams, Source};
use aviary_qos::Verdict;
use aviary_scion::ScionView;
use serde::Serialize;

mod glwp;
mod pathval;
pub mod zlane;

/// Batch size of the batched rows.
pub const BATCH: usize = 32;
const S: u64 = 1_000_000_000;
const T0: u32 = 1_750_000_000;

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub name: String,
    pub ns_per_packet: f64,
    pub mpps: f64,
    pub batch: usize,
    pub payload_bytes: usize,
    /// The paper's per-packet figure for the same operation, where it has one.
    pub paper_ns: Option<f64>,
}

/// Measurement effort.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Packets per measurement.
    pub packets: u64,
    /// Measurements per row; the fastest is reported (least disturbed by the machine).
    pub repeats: usize,
}

impl Effort {
    pub const FULL: Effort = Effort { packets: 200_000, repeats: 11 };
    pub const QUICK: Effort = Effort { packets: 4_000, repeats: 1 };
}

pub(crate) fn row(name: &str, batch: usize, payload: usize, paper: Option<f64>, ns: f64) -> Row {
    Row { name: name.into(), ns_per_packet: ns, mpps: 1e3 / ns, batch, payload_bytes: payload, paper_ns: paper }
}

/// Runs `f(i)` `effort.packets` times per repeat and returns the best ns per call.
pub(crate) fn time_per_call(effort: Effort, per_call: u64, mut f: impl FnMut(u64)) -> f64 {
    let calls = (effort.packets / per_call).max(1);
    (0..effort.repeats)
        .map(|_| {
            let t = Instant::now();
            for i in 0..calls {
                f(i);
            }
            t.elapsed().as_nanos() as f64 / (calls * per_call) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// A router and a packet positioned at it: `path` is the byte range to restore.
struct RouterCase {
    router: Router,
    ingress: u16,
    pkt: Vec<u8>,
    path: std::ops::Range<usize>,
    now: u64,
}

impl RouterCase {
    fn expect(&mut self, want: fn(&Verdict) -> bool) {
        let mut p = self.pkt.clone();
        let v = self.router.process(&mut p, self.ingress, self.now);
        assert!(want(&v), "benchmark packet not processed as intended: {v:?}");
    }

    fn single(&mut self, effort: Effort) -> f64 {
        let template = self.pkt[self.path.clone()].to_vec();
        let mut pkt = self.pkt.clone();
        let (range, ingress, now) = (self.path.clone(), self.ingress, self.now);
        let router = &mut self.router;
        time_per_call(effort, 1, |i| {
            pkt[range.clone()].copy_from_slice(&template);
            // 100 ns apart, so the policer sees time pass and the packet stays fresh.
            black_box(router.process(black_box(&mut pkt), ingress, now + i * 100));
        })
    }

    fn batch(&mut self, effort: Effort) -> f64 {
        let template = self.pkt[self.path.clone()].to_vec();
        let mut pkts: Vec<Vec<u8>> = vec![self.pkt.clone(); BATCH];
        let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
        let mut verdicts = [Verdict::Deliver; BATCH];
        let (range, ingress, now) = (self.path.clone(), self.ingress, self.now);
        let router = &mut self.router;
        time_per_call(effort, BATCH as u64, |i| {
            for p in refs.iter_mut() {
                p[range.clone()].copy_from_slice(&template);
            }
            router.process_batch(&mut refs, ingress, now + i * 100 * BATCH as u64, &mut verdicts);
            black_box(&verdicts);
        })
    }
}

/// AS 2 of a five-AS chain is a plain transit hop of the core segment.
const TRANSIT: usize = 2;

fn standard_case(now: u64) -> RouterCase {
    let chain = Chain::new(5, T0 - 60);
    let pkt = chain.standard_packet(100);
    at_transit(&chain, pkt, now)
}

fn flyover_case(now: u64) -> RouterCase {
    let chain = Chain::new(5, T0 - 60);
    let pkt = flyover_packet(&chain, 77, now);
    at_transit(&chain, pkt, now)
}

/// A flyover packet of reservation `res_id` at the transit AS, stamped at `now` by its source,
/// as it leaves the source. Largest bandwidth: the benchmark measures the work, not the policing
/// outcome.
fn flyover_packet(chain: &Chain, res_id: u32, now: u64) -> Vec<u8> {
    let res = [(TRANSIT, chain.grant(TRANSIT, res_id, 1023, T0 - 10, 3600))];
    let mut pkt = chain.hbird_packet(&res, T0, 100).unwrap();
    Source::new(&pkt, &[res[0].1]).unwrap().stamp(&mut pkt, now).unwrap();
    pkt
}

/// `pkt` through the routers before the transit AS: the packet as the transit AS gets it.
fn arriving(chain: &Chain, mut pkt: Vec<u8>, now: u64) -> Vec<u8> {
    for i in 0..TRANSIT {
        chain.router(i, RouterParams::default()).process(&mut pkt, Chain::forward_ingress(i), now);
    }
    pkt
}

/// The packet as it reaches the transit AS, and that AS's router.
fn at_transit(chain: &Chain, pkt: Vec<u8>, now: u64) -> RouterCase {
    let pkt = arriving(chain, pkt, now);
    let path = ScionView::new_checked(&pkt[..]).unwrap().path_range();
    RouterCase {
        router: chain.router(TRANSIT, RouterParams::default()),
        ingress: Chain::forward_ingress(TRANSIT),
        pkt,
        path,
        now,
    }
}

/// Distinct packets in the duplicate-suppression rows: each packet is new to the filter (a replay
/// would take the shorter duplicate path), so the rows cycle through this many, stamped with
/// consecutive Counters, and start every measurement with an empty filter.
const DISTINCT: usize = 4096;

/// The flyover hop over `DISTINCT` distinct packets with `params`: per packet, the packet is
/// copied from its template (~150 bytes, included, like the path restore of the other rows).
fn flyover_distinct_row(name: &str, params: RouterParams, now: u64, effort: Effort) -> Row {
    let chain = Chain::new(5, T0 - 60);
    let res = [(TRANSIT, chain.grant(TRANSIT, 77, 1023, T0 - 10, 3600))];
    let template = chain.hbird_packet(&res, T0, 100).unwrap();
    let mut src = Source::new(&template, &[res[0].1]).unwrap();
    let pkts: Vec<Vec<u8>> = (0..DISTINCT)
        .map(|_| {
            let mut pkt = template.clone();
            src.stamp(&mut pkt, now).unwrap();
            arriving(&chain, pkt, now)
        })
        .collect();
    let router = chain.router(TRANSIT, params);
    let ingress = Chain::forward_ingress(TRANSIT);
    let mut buf = pkts[0].clone();
    let rounds = (effort.packets as usize).div_ceil(DISTINCT).max(1);
    let ns = (0..effort.repeats * rounds)
        .map(|_| {
            let mut r = router.clone();
            let t = Instant::now();
            for (i, pkt) in pkts.iter().enumerate() {
                buf.copy_from_slice(pkt);
                let v = r.process(black_box(&mut buf), ingress, now + i as u64 * 100);
                debug_assert_eq!(v, Verdict::reserved(aviary_hummingbird::testbed::IF_NEXT));
                black_box(v);
            }
            t.elapsed().as_nanos() as f64 / DISTINCT as f64
        })
        .fold(f64::INFINITY, f64::min);
    row(name, 1, 100, None, ns)
}

/// Reservations in the rows of many reservations: four times the entries of a router's cache of
/// A_Ks ([`aviary_hummingbird::auth_key_cache::ENTRIES`]), cycled through in turn, so that a
/// packet alone never finds its reservation's A_K and computes it as in a batch.
const RESERVATIONS: u32 = 4 * aviary_hummingbird::auth_key_cache::ENTRIES as u32;

/// The flyover hop over packets of `RESERVATIONS` reservations (ResIDs 0 to 4095, a policing
/// array of 32 KiB), `batch` at a time: per packet, the packet is copied from its template
/// (~150 bytes, included, like the path restore of the other rows).
fn flyover_reservations_row(batch: usize, now: u64, effort: Effort) -> Row {
    let chain = Chain::new(5, T0 - 60);
    let pkts: Vec<Vec<u8>> =
        (0..RESERVATIONS).map(|id| arriving(&chain, flyover_packet(&chain, id, now), now)).collect();
    let mut router = chain.router(TRANSIT, RouterParams::default());
    let ingress = Chain::forward_ingress(TRANSIT);
    let mut bufs = vec![pkts[0].clone(); batch];
    let mut verdicts = vec![Verdict::Deliver; batch];
    let groups = pkts.len() / batch;
    let ns = time_per_call(effort, batch as u64, |i| {
        let first = (i as usize % groups) * batch;
        for (b, p) in bufs.iter_mut().zip(&pkts[first..]) {
            b.copy_from_slice(p);
        }
        let mut refs: arrayvec::ArrayVec<&mut [u8], BATCH> = bufs.iter_mut().map(|b| &mut b[..]).collect();
        router.process_batch(black_box(&mut refs), ingress, now + i * 100 * batch as u64, &mut verdicts);
        debug_assert!(verdicts.iter().all(|v| *v == Verdict::reserved(aviary_hummingbird::testbed::IF_NEXT)));
        black_box(&verdicts);
    });
    row(&format!("flyover hop, {RESERVATIONS} reservations"), batch, 100, None, ns)
}

/// Source: header template + payload copy + stamping, for `flyovers` reserved hops.
fn source_row(flyovers: usize, payload: usize, effort: Effort) -> Row {
    let chain = Chain::new(flyovers.max(2), T0 - 60);
    let res: Vec<_> = (0..flyovers).map(|i| (i, chain.grant(i, i as u32, 800, T0 - 10, 3600))).collect();
    let template = chain.hbird_packet(&res, T0, payload).unwrap();
    let hdr = ScionView::new_checked(&template[..]).unwrap().hdr_len();
    let mut src = Source::new(&template, &res.iter().map(|r| r.1).collect::<Vec<_>>()).unwrap();
    let body = vec![0x5a; payload];
    let mut buf = vec![0u8; template.len()];
    let now = u64::from(T0) * S;
    let ns = time_per_call(effort, 1, |i| {
        buf[..hdr].copy_from_slice(&template[..hdr]);
        buf[hdr..].copy_from_slice(&body);
        src.stamp(black_box(&mut buf), now + i * 100).unwrap();
    });
    // Table 4 of the Hummingbird paper is for four on-path ASes with 500 B and 1500 B payloads.
    let paper = match (flyovers, payload) {
        (4, 500) => Some(494.0),
        (4, 1500) => Some(519.0),
        _ => None,
    };
    row(
        &format!("hummingbird source, {flyovers} flyover{}", if flyovers == 1 { "" } else { "s" }),
        1,
        payload,
        paper,
        ns,
    )
}

/// All rows of the table.
pub fn run(effort: Effort) -> Vec<Row> {
    let now = u64::from(T0) * S + 200_000_000;
    let mut rows = Vec::new();
    let mut std_case = standard_case(now);
    std_case.expect(|v| matches!(v, Verdict::Forward { .. }));
    rows.push(row("scion hop, router", 1, 100, Some(123.0), std_case.single(effort)));
    rows.push(row("scion hop, router", BATCH, 100, Some(123.0), std_case.batch(effort)));
    let mut fly = flyover_case(now);
    fly.expect(|v| *v == Verdict::reserved(aviary_hummingbird::testbed::IF_NEXT));
    rows.push(row("hummingbird flyover hop, router", 1, 100, Some(308.0), fly.single(effort)));
    rows.push(row("hummingbird flyover hop, router", BATCH, 100, Some(308.0), fly.batch(effort)));
    let plain = RouterParams::default();
    let dedup = RouterParams { duplicate_suppression: true, ..plain };
    rows.push(flyover_distinct_row("flyover hop, distinct packets", plain, now, effort));
    rows.push(flyover_distinct_row("flyover hop, dup. suppression", dedup, now, effort));
    rows.push(flyover_reservations_row(1, now, effort));
    rows.push(flyover_reservations_row(BATCH, now, effort));
    for flyovers in [1, 2, 4, 8] {
        for payload in [100, 500, 1500] {
            rows.push(source_row(flyovers, payload, effort));
        }
    }
    rows.extend(glwp::rows(effort));
    rows.extend(zlane::rows(effort));
    rows.extend(pathval::rows(effort));
    rows
}

/// The table for a person.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<40} {:>5} {:>8} {:>10} {:>8} {:>10}\n",
        "operation (one core)", "batch", "payload", "ns/packet", "Mpps", "paper ns"
    );
    for r in rows {
        let paper = r.paper_ns.map(|p| format!("{p:.0}")).unwrap_or_else(|| "-".into());
        out += &format!(
            "{:<40} {:>5} {:>8} {:>10.1} {:>8.2} {:>10}\n",
            r.name, r.batch, r.payload_bytes, r.ns_per_packet, r.mpps, paper
        );
    }
    out
}
