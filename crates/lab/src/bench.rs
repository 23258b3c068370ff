//! Per-packet cost of the data plane on one core, beside the figures of the Hummingbird paper
//! (Tables 3 and 4: DPDK on a 2.1 GHz Xeon), the GLWP paper (§VII: the same kind of
//! machine), the Z-Lane paper (Table 3, the same kind of machine; rows in [`zlane`]) and the
//! pathval paper (Table IV and Fig. 5: Click on a 3 GHz i7; rows in [`pathval`]).
//!
//! The Hummingbird and GLWP router rows (but GLWP's row of packets not in cache) take their
//! packets as a router's I/O loop does ([`time_received`]): copied into a receive ring, which
//! is the kernel's work in `recvmmsg` and not timed, then processed there; routers mutate
//! what they forward (CurrHF, SegID, a flyover's MAC), so every packet is a fresh copy. The
//! Z-Lane rows and the pathval node rows take theirs the same way. Source rows include writing
//! the header template and copying the payload, as the paper's Table 4 does. Every row is given
//! in cycles as well, at the core's clock read around the run ([`run`]).
//!
//! Each router row runs the code a router process runs for its packets, called as its workers
//! call it (through the [`Processor`] seam): a standard SCION hop the standard forwarder (the
//! `scion` processor of a router without Z-Lane), a flyover hop the Hummingbird router. The
//! Hummingbird router forwards standard paths as well (the testbed's routers give it every
//! packet); its row of a standard hop says what carrying the flyover extension costs a packet
//! without one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Router, RouterParams, Source};
use aviary_qos::{Context, Processor, SeededRandom, Verdict};
use aviary_scion::{ScionView, StandardForwarder};
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
    /// `ns_per_packet` at the core's clock as read around the run ([`Clock`]), where it could be
    /// read: the VM's CPU changes from day to day, and cycles say what the code costs on it.
    pub cycles_per_packet: Option<f64>,
}

/// The core's clock read before and after a run ([`aviary_scion::cpu::clock_ghz`]): a host
/// that slowed the VM during the run shows as two different readings.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub before_ghz: f64,
    pub after_ghz: f64,
}

impl Clock {
    /// The clock the rows are converted at: the mean of the two readings.
    pub fn ghz(&self) -> f64 {
        (self.before_ghz + self.after_ghz) / 2.0
    }

    /// Sets every row's cycles per packet at this clock.
    fn convert(&self, rows: &mut [Row]) {
        for r in rows {
            r.cycles_per_packet = Some(r.ns_per_packet * self.ghz());
        }
    }
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
    Row {
        name: name.into(),
        ns_per_packet: ns,
        mpps: 1e3 / ns,
        batch,
        payload_bytes: payload,
        paper_ns: paper,
        cycles_per_packet: None,
    }
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

/// Buffers in the receive ring of the Hummingbird router rows: four receive calls of [`BATCH`].
const RING: usize = 4 * BATCH;

/// The time `run` takes on `pkts`, handed over as a router's I/O loop hands them: copied into a
/// receive ring of `ring` buffers, as `recvmmsg` copies them, which leaves them in the core's
/// cache; that copy is the kernel's work and not timed. `run(packets, first)` is timed on each
/// filled ring (`first`: the index in `pkts` of its first packet), the clock read around it:
/// two reads, 39 ns on the Xeon of docs/performance.md, so ≈ 0.3 ns a packet more than
/// the router's own time at [`RING`] and ≈ 1.2 ns at [`BATCH`].
pub(crate) fn time_received<'a>(
    pkts: impl IntoIterator<Item = &'a [u8]>,
    ring: usize,
    mut run: impl FnMut(&mut [&mut [u8]], usize),
) -> Duration {
    let mut slots: Vec<Vec<u8>> = vec![Vec::new(); ring];
    let mut pkts = pkts.into_iter();
    let (mut busy, mut first) = (Duration::ZERO, 0);
    loop {
        let mut filled = 0;
        // `slots` first: `zip` takes no packet once the ring is full.
        for (slot, pkt) in slots.iter_mut().zip(&mut pkts) {
            slot.clear();
            slot.extend_from_slice(pkt);
            filled += 1;
        }
        if filled == 0 {
            return busy;
        }
        let mut refs: Vec<&mut [u8]> = slots[..filled].iter_mut().map(|s| s.as_mut_slice()).collect();
        let t = Instant::now();
        run(&mut refs, first);
        busy += t.elapsed();
        first += filled;
    }
}

/// The best ns per packet of `effort.repeats` measurements, each `measure()` = (time, packets).
pub(crate) fn best_ns(effort: Effort, mut measure: impl FnMut() -> (Duration, u64)) -> f64 {
    (0..effort.repeats)
        .map(|_| {
            let (busy, packets) = measure();
            busy.as_nanos() as f64 / packets.max(1) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The time `router` takes on `packets` packets, copies of `pkts` in turn as
/// [`time_received`] hands them over, `batch` a call (1: a packet alone, as the I/O loop hands
/// over one), 100 ns apart, so that the policer sees time pass and the packets stay fresh. The
/// router gets them through the [`Processor`] seam, as a router process's workers hand them
/// over. A debug build checks each verdict with `want`.
fn time_router(
    router: &mut dyn Processor,
    ingress: u16,
    now: u64,
    pkts: &[Vec<u8>],
    packets: usize,
    batch: usize,
    want: fn(&Verdict) -> bool,
) -> Duration {
    let mut verdicts = vec![Verdict::Deliver; batch];
    let mut random = SeededRandom::new(1);
    let mut ctx = Context { now_ns: now, ingress, links: &[], random: &mut random };
    let stream = pkts.iter().cycle().take(packets).map(|p| &p[..]);
    time_received(stream, RING, |ring, first| {
        for (c, group) in ring.chunks_mut(batch).enumerate() {
            ctx.now_ns = now + (first + c * batch) as u64 * 100;
            let n = group.len();
            router.process_batch(&mut ctx, black_box(group), &mut verdicts[..n]);
            debug_assert!(verdicts[..n].iter().all(want), "benchmark packets not processed as intended");
            black_box(&verdicts);
        }
    })
}

/// A router and a packet positioned at it.
struct RouterCase<R: Processor = Router> {
    router: R,
    ingress: u16,
    pkt: Vec<u8>,
    now: u64,
    want: fn(&Verdict) -> bool,
}

impl<R: Processor> RouterCase<R> {
    fn new(mut router: R, ingress: u16, pkt: Vec<u8>, now: u64, want: fn(&Verdict) -> bool) -> Self {
        let (mut p, mut v) = (pkt.clone(), [Verdict::Deliver]);
        let mut random = SeededRandom::new(1);
        let mut ctx = Context { now_ns: now, ingress, links: &[], random: &mut random };
        router.process_batch(&mut ctx, &mut [&mut p[..]], &mut v);
        assert!(want(&v[0]), "benchmark packet not processed as intended: {:?}", v[0]);
        Self { router, ingress, pkt, now, want }
    }

    /// The best ns per packet, `batch` packets a call (whole calls of `effort.packets`).
    fn ns(&mut self, effort: Effort, batch: usize) -> f64 {
        let packets = (effort.packets as usize / batch).max(1) * batch;
        let pkts = std::slice::from_ref(&self.pkt);
        best_ns(effort, || {
            let busy = time_router(&mut self.router, self.ingress, self.now, pkts, packets, batch, self.want);
            (busy, packets as u64)
        })
    }
}

/// AS 2 of a five-AS chain is a plain transit hop of the core segment.
const TRANSIT: usize = 2;

/// A standard packet at the transit AS through the forwarder a router process runs standard
/// SCION through (its `scion` processor, on a router without Z-Lane): the router rows' standard
/// hop.
fn standard_case(now: u64) -> RouterCase<StandardForwarder> {
    let chain = Chain::new(5, T0 - 60);
    let pkt = arriving(&chain, chain.standard_packet(100), now);
    let fwd = StandardForwarder::standard(chain.router(TRANSIT, RouterParams::default()).forwarding().clone());
    RouterCase::new(fwd, Chain::forward_ingress(TRANSIT), pkt, now, |v| matches!(v, Verdict::Forward { .. }))
}

/// The same standard packet through the Hummingbird router, which forwards standard paths too
/// (the testbed's routers do; a router process gives them to its `scion` processor): what
/// carrying the flyover extension costs a packet without one.
fn standard_via_hummingbird_case(now: u64) -> RouterCase {
    let chain = Chain::new(5, T0 - 60);
    let pkt = chain.standard_packet(100);
    at_transit(&chain, pkt, now, |v| matches!(v, Verdict::Forward { .. }))
}

fn flyover_case(now: u64) -> RouterCase {
    let chain = Chain::new(5, T0 - 60);
    let pkt = flyover_packet(&chain, 77, now);
    at_transit(&chain, pkt, now, reserved)
}

/// The verdict of a flyover packet within its reservation at the transit AS.
fn reserved(v: &Verdict) -> bool {
    *v == Verdict::reserved(aviary_hummingbird::testbed::IF_NEXT)
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

/// The packet as it reaches the transit AS, and that AS's router, which gives it a verdict
/// `want` accepts.
fn at_transit(chain: &Chain, pkt: Vec<u8>, now: u64, want: fn(&Verdict) -> bool) -> RouterCase {
    let router = chain.router(TRANSIT, RouterParams::default());
    RouterCase::new(router, Chain::forward_ingress(TRANSIT), arriving(chain, pkt, now), now, want)
}

/// Distinct packets in the duplicate-suppression rows: each packet is new to the filter (a replay
/// would take the shorter duplicate path), so the rows cycle through this many, stamped with
/// consecutive Counters, and start every measurement with an empty filter.
const DISTINCT: usize = 4096;

/// The flyover hop over `DISTINCT` distinct packets with `params`, one at a time, each
/// measurement from the router as configured (an empty filter).
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
    let rounds = (effort.packets as usize).div_ceil(DISTINCT).max(1);
    let ns = best_ns(Effort { repeats: effort.repeats * rounds, ..effort }, || {
        let busy = time_router(&mut router.clone(), ingress, now, &pkts, DISTINCT, 1, reserved);
        (busy, DISTINCT as u64)
    });
    row(name, 1, 100, None, ns)
}

/// Reservations in the rows of many reservations: four times the entries of a router's cache of
/// A_Ks ([`aviary_hummingbird::auth_key_cache::ENTRIES`]), cycled through in turn, so that a
/// packet alone never finds its reservation's A_K and computes it as in a batch.
const RESERVATIONS: u32 = 4 * aviary_hummingbird::auth_key_cache::ENTRIES as u32;

/// The flyover hop over packets of `RESERVATIONS` reservations (ResIDs 0 to 4095, a policing
/// array of 32 KiB) in turn, `batch` at a time.
fn flyover_reservations_row(batch: usize, now: u64, effort: Effort) -> Row {
    let chain = Chain::new(5, T0 - 60);
    let pkts: Vec<Vec<u8>> =
        (0..RESERVATIONS).map(|id| arriving(&chain, flyover_packet(&chain, id, now), now)).collect();
    let mut router = chain.router(TRANSIT, RouterParams::default());
    let ingress = Chain::forward_ingress(TRANSIT);
    let packets = (effort.packets as usize / batch).max(1) * batch;
    let ns =
        best_ns(effort, || (time_router(&mut router, ingress, now, &pkts, packets, batch, reserved), packets as u64));
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

/// All rows of the table, each in cycles as well where the clock could be read around them
/// (returned: `None` off x86-64).
pub fn run(effort: Effort) -> (Vec<Row>, Option<Clock>) {
    let before = aviary_scion::cpu::clock_ghz();
    let mut rows = rows(effort);
    let clock =
        before.zip(aviary_scion::cpu::clock_ghz()).map(|(before_ghz, after_ghz)| Clock { before_ghz, after_ghz });
    if let Some(clock) = clock {
        clock.convert(&mut rows);
    }
    (rows, clock)
}

fn rows(effort: Effort) -> Vec<Row> {
    let now = u64::from(T0) * S + 200_000_000;
    let mut rows = Vec::new();
    let mut std_case = standard_case(now);
    rows.push(row("scion hop, router", 1, 100, Some(123.0), std_case.ns(effort, 1)));
    rows.push(row("scion hop, router", BATCH, 100, Some(123.0), std_case.ns(effort, BATCH)));
    let mut via_hbird = standard_via_hummingbird_case(now);
    rows.push(row("scion hop, hummingbird router", 1, 100, None, via_hbird.ns(effort, 1)));
    rows.push(row("scion hop, hummingbird router", BATCH, 100, None, via_hbird.ns(effort, BATCH)));
    let mut fly = flyover_case(now);
    rows.push(row("hummingbird flyover hop, router", 1, 100, Some(308.0), fly.ns(effort, 1)));
    rows.push(row("hummingbird flyover hop, router", BATCH, 100, Some(308.0), fly.ns(effort, BATCH)));
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
        "{:<40} {:>5} {:>8} {:>10} {:>8} {:>8} {:>10}\n",
        "operation (one core)", "batch", "payload", "ns/packet", "cycles", "Mpps", "paper ns"
    );
    for r in rows {
        let paper = r.paper_ns.map(|p| format!("{p:.0}")).unwrap_or_else(|| "-".into());
        let cycles = r.cycles_per_packet.map(|c| format!("{c:.0}")).unwrap_or_else(|| "-".into());
        out += &format!(
            "{:<40} {:>5} {:>8} {:>10.1} {:>8} {:>8.2} {:>10}\n",
            r.name, r.batch, r.payload_bytes, r.ns_per_packet, cycles, r.mpps, paper
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row in cycles is its ns at the mean of the clock's two readings.
    #[test]
    fn rows_in_cycles_at_the_mean_clock() {
        let mut rows = vec![row("a", 1, 100, None, 10.0), row("b", 32, 100, Some(5.0), 20.0)];
        assert!(rows.iter().all(|r| r.cycles_per_packet.is_none()));
        Clock { before_ghz: 3.0, after_ghz: 4.0 }.convert(&mut rows);
        assert_eq!(rows.iter().map(|r| r.cycles_per_packet).collect::<Vec<_>>(), [Some(35.0), Some(70.0)]);
        let json = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(json["cycles_per_packet"], 35.0);
    }

    /// The clock reads as a finite, positive rate where it can be read at all (its value is a
    /// measurement, not asserted).
    #[test]
    fn the_clock_reads_on_x86_64() {
        let ghz = aviary_scion::cpu::clock_ghz();
        assert_eq!(ghz.is_some(), cfg!(target_arch = "x86_64"));
        assert!(ghz.is_none_or(|g| g.is_finite() && g > 0.0), "{ghz:?}");
    }

    /// Every packet is handed over once, in order, `ring` at a time, as a fresh copy: what a
    /// run writes into its ring never reaches a later packet, as a router's write-back into a
    /// reused buffer would if the copy were skipped.
    #[test]
    fn time_received_hands_over_fresh_copies_in_order() {
        let pkts: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i, 0xaa, i]).collect();
        for ring in [1, 3, 4, 10, 16] {
            let mut seen = Vec::new();
            let mut sizes = Vec::new();
            time_received(pkts.iter().map(|p| &p[..]), ring, |slots, first| {
                assert_eq!(first, seen.len());
                sizes.push(slots.len());
                for p in slots.iter_mut() {
                    seen.push(p.to_vec());
                    p[1] = 0; // the router's mutation
                }
            });
            assert_eq!(seen, pkts, "ring {ring}");
            let want: Vec<usize> = (0..10).step_by(ring).map(|i| ring.min(10 - i)).collect();
            assert_eq!(sizes, want, "ring {ring}");
        }
    }
}
