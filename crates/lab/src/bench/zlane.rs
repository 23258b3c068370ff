//! Z-Lane rows: the source AS's gateway per packet, compliant against path length and
//! over-rate, beside the Z-Lane paper's Table 3 (DPDK, 2.1 GHz Xeon: 205 ns over-rate,
//! 217 + 108·ℓ ns compliant, with 32 000 active end hosts); the source AS's router on an
//! authorized packet (EPIC validation, classification into G and the per-AS token bucket); the
//! destination's check.
//!
//! Every packet is distinct (the gateway and the router suppress duplicates). The gateway's
//! packets come from [`HOSTS`] hosts, each with its own bucket, that have all sent before (the
//! gateway's host table holds every one of them, as the paper's), in an order that jumps
//! through the table. Every row takes its packets as a receive loop hands them over
//! ([`time_received`]): fresh copies of the templates, [`BATCH`] at a time in a ring, the copy
//! not timed; every repeat starts from a fresh gateway or router, so the figures are the
//! processing alone.

use std::net::Ipv4Addr;

use aviary_qos::{Context, LinkState, Processor, Rate, RateBound, SeededRandom, Verdict};
use aviary_scion::drkey::HostAddr as DrkeyHost;
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::verify_at_destination;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::{AsForwarding, ScionView};
use aviary_zlane::classes::{RouterClass, ZlaneConfig};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{Gateway, GatewayConfig, GatewayVerdict, OverRatePolicy};
use aviary_zlane::router::ZlaneRouter;
use aviary_zlane::testbed::{Net, DST_HOST, IF_NEXT, PROTOCOL};

use super::{best_ns, row, time_received, Effort, Row, BATCH, S, T0};

/// Active hosts behind the gateway, as in the paper's measurement.
pub const HOSTS: u16 = 32_000;
const PAYLOAD: usize = 100;
/// Time between two packets: 1 µs, far within every host's rate.
const GAP_NS: u64 = 1_000;
/// Step through the hosts from one packet to the next: prime, so every host comes in turn.
const HOST_STRIDE: u64 = 7_919;

fn t0() -> u64 {
    u64::from(T0) * S
}

/// `n` distinct packets from `hosts` hosts, host `1 + (i · step) mod hosts` for packet `i`,
/// sent from `first` on.
fn packets(net: &mut Net, n: u64, hosts: u16, step: u64, first: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let host = Net::host(1 + (i * step % u64::from(hosts)) as u16);
            net.packet(host, PAYLOAD, first + i * GAP_NS)
        })
        .collect()
}

/// Every host listed with the bucket's highest rate (compliant) or the lowest and a one-byte
/// burst (over-rate: every packet finds its bucket empty); `dedup`: duplicate suppression.
fn config(compliant: bool, dedup: bool, hosts: u16) -> GatewayConfig {
    let rate = if compliant { Rate::MAX.bps() } else { Rate::from_units(1).bps() };
    GatewayConfig {
        guarantee_bps: rate * u64::from(hosts),
        burst_bytes: if compliant { 15_000 } else { 1 },
        over_rate: OverRatePolicy::Unflagged,
        drkey_protocol: PROTOCOL,
        suppress_duplicates: dedup,
        hosts: (1..=hosts).map(|h| HostRateConfig { prefix: Net::host(h).to_string(), rate_bps: None }).collect(),
    }
}

/// One gateway row's set-up: a path of `ases` ASes (one hop field each), one packet from every
/// host to fill the gateway's host table, and the measured packets.
pub struct GatewayCase {
    net: Net,
    config: GatewayConfig,
    warm_up: Vec<Vec<u8>>,
    templates: Vec<Vec<u8>>,
    want: GatewayVerdict,
    pub name: String,
    /// Table 3's figure.
    pub paper_ns: f64,
}

impl GatewayCase {
    /// Compliant (every packet within its host's rate) or over-rate; without `dedup` the
    /// gateway does what the paper's does (Table 3 has no duplicate suppression).
    pub fn new(ases: usize, compliant: bool, dedup: bool, hosts: u16, packets_n: u64) -> Self {
        let mut net = Net::new(ases, t0());
        let warm_up = packets(&mut net, u64::from(hosts), hosts, 1, t0());
        let first = t0() + u64::from(hosts) * GAP_NS;
        let templates = packets(&mut net, packets_n.max(BATCH as u64), hosts, HOST_STRIDE, first);
        let kind = if compliant { "compliant" } else { "over-rate" };
        let dedup_note = if dedup { ", dup. suppr." } else { "" };
        Self {
            net,
            config: config(compliant, dedup, hosts),
            warm_up,
            templates,
            want: if compliant { GatewayVerdict::Authorized } else { GatewayVerdict::Unflagged },
            name: format!("zlane gateway, {kind}, {ases} ASes{dedup_note}"),
            paper_ns: if compliant { 217.0 + 108.0 * ases as f64 } else { 205.0 },
        }
    }

    /// A fresh gateway that has seen one packet of every host.
    pub fn warm_gateway(&self) -> Gateway {
        let mut gw = self.net.gateway(&self.config, t0()).expect("gateway");
        let mut pkts = self.warm_up.clone();
        let mut verdicts = [GatewayVerdict::Unflagged; BATCH];
        let now = t0() + self.warm_up.len() as u64 * GAP_NS;
        for chunk in pkts.chunks_mut(BATCH) {
            let mut batch: Vec<&mut [u8]> = chunk.iter_mut().map(|p| p.as_mut_slice()).collect();
            let n = batch.len();
            gw.process_batch(&mut batch, now, &mut verdicts[..n]);
        }
        gw
    }

    /// Runs the templates through `gw` as a receive loop hands them over
    /// ([`time_received`]): fresh copies, [`BATCH`] at a time in a ring, the copy not timed;
    /// ns per packet. Panics if a packet was not processed as intended.
    pub fn run(&self, gw: &mut Gateway) -> f64 {
        self.run_in(gw, BATCH)
    }

    /// [`GatewayCase::run`] in calls of `batch` packets (1: one packet at a time; 0 is taken
    /// as 1; above [`BATCH`], the ring's).
    pub fn run_in(&self, gw: &mut Gateway, batch: usize) -> f64 {
        let batch = batch.clamp(1, BATCH);
        let n = self.templates.len();
        // Anything but the verdict wanted, so that a packet not processed fails the check.
        let unset = if self.want == GatewayVerdict::Authorized {
            GatewayVerdict::Unflagged
        } else {
            GatewayVerdict::Authorized
        };
        let mut verdicts = vec![unset; n];
        let start = t0() + self.warm_up.len() as u64 * GAP_NS;
        let busy = time_received(self.templates.iter().map(|p| &p[..]), BATCH, |ring, first| {
            let out = &mut verdicts[first..][..ring.len()];
            for (c, (pkts, out)) in ring.chunks_mut(batch).zip(out.chunks_mut(batch)).enumerate() {
                let now = start + (first + (c + 1) * batch) as u64 * GAP_NS;
                gw.process_batch(pkts, now, out);
            }
        });
        assert!(verdicts.iter().all(|v| *v == self.want), "benchmark packets not processed as intended");
        busy.as_nanos() as f64 / n as f64
    }
}

/// The gateway on packets over a path of `ases` ASes from `hosts` hosts.
fn gateway_row(ases: usize, compliant: bool, dedup: bool, hosts: u16, effort: Effort) -> Row {
    let case = GatewayCase::new(ases, compliant, dedup, hosts, effort.packets.clamp(BATCH as u64, 1 << 14));
    let ns = (0..effort.repeats)
        .map(|_| {
            let mut gw = case.warm_gateway();
            case.run(&mut gw)
        })
        .fold(f64::INFINITY, f64::min);
    row(&case.name, BATCH, PAYLOAD, Some(case.paper_ns), ns)
}

/// Hosts whose packets the router row's gateway authorized (the router's bucket is per AS).
const ROUTER_HOSTS: u16 = 256;

/// The source AS's router on gateway-authorized packets: EPIC validation, classification
/// and the AS's token bucket; every packet is G.
pub(super) fn router_row(effort: Effort) -> Row {
    let mut net = Net::new(5, t0());
    let n = effort.packets.clamp(BATCH as u64, 1 << 14);
    let mut templates = packets(&mut net, n, ROUTER_HOSTS, 1, t0());
    let mut gw = net.gateway(&config(true, false, ROUTER_HOSTS), t0()).expect("gateway");
    for (i, p) in templates.iter_mut().enumerate() {
        let mut v = [GatewayVerdict::Unflagged];
        gw.process_batch(&mut [p.as_mut_slice()], t0() + i as u64 * GAP_NS, &mut v);
        assert_eq!(v[0], GatewayVerdict::Authorized);
    }
    let src = &net.ases[0];
    let zlane = ZlaneConfig {
        ases: net.ases.iter().map(|a| a.ia).collect(),
        isds: vec![],
        rates: [(src.ia.to_string(), aviary_zlane::classes::RateConfig::Share("100%".into()))].into(),
        burst_bytes: 15_000,
        drkey_protocol: PROTOCOL,
    };
    let links = [LinkState { id: IF_NEXT, up: true, rate_bps: 100_000_000_000, ..Default::default() }];
    let guaranteed = RouterClass::Guaranteed.admission();
    let ns = best_ns(effort, || {
        let fwd = AsForwarding::new(src.ia, src.mac_key.clone(), [IF_NEXT]);
        let bound = [(IF_NEXT, RateBound::Ppm(500_000))];
        let mut router = ZlaneRouter::new(
            fwd,
            &aviary_scion::drkey::RotatingSecret::new(&src.master_secret).expect("secret"),
            aviary_scion::drkey::EpochSchedule::SCION_DEFAULT,
            zlane.clone(),
            bound,
            t0(),
        )
        .expect("router");
        let mut random = SeededRandom::new(1);
        // Anything but a forward in G, so that a packet not processed fails the check.
        let mut verdicts = vec![Verdict::Deliver; templates.len()];
        let busy = time_received(templates.iter().map(|p| &p[..]), BATCH, |ring, first| {
            let now = t0() + (first + BATCH) as u64 * GAP_NS;
            let mut ctx = Context { now_ns: now, ingress: 0, links: &links, random: &mut random };
            router.process_batch(&mut ctx, ring, &mut verdicts[first..][..ring.len()]);
        });
        let all_g =
            verdicts.iter().all(|v| matches!(v, Verdict::Forward { admission, .. } if *admission == guaranteed));
        assert!(all_g, "benchmark packets not all G");
        (busy, templates.len() as u64)
    });
    row("zlane router, EPIC + class + bucket", BATCH, PAYLOAD, None, ns)
}

/// The destination's check of the DVF of packets that crossed 5 ASes, from one source host
/// (whose key the destination holds).
pub(super) fn destination_row(effort: Effort) -> Row {
    let mut net = Net::new(5, t0());
    let host: Ipv4Addr = Net::host(1);
    let n = effort.packets.clamp(1, 1 << 14);
    let mut pkts: Vec<Vec<u8>> = (0..n).map(|i| net.packet(host, PAYLOAD, t0() + i * GAP_NS)).collect();
    for p in &mut pkts {
        net.traverse(p, t0() + n * GAP_NS).expect("benchmark packet delivered");
    }
    let dst = net.ases.last().expect("ASes");
    let key = dst.drkey.host_host(net.src_ia(), &DrkeyHost::Ipv4(DST_HOST), &DrkeyHost::Ipv4(host));
    let ns = best_ns(effort, || {
        let mut ok = 0;
        let busy = time_received(pkts.iter().map(|p| &p[..]), BATCH, |ring, _| {
            for p in ring.iter() {
                let view = ScionView::new_checked(std::hint::black_box(&p[..])).expect("header");
                let path = PerAsPathView::new_checked(view.path()).expect("path");
                let info_ts = path.standard().info(0).timestamp;
                let input = MacInput::new(info_ts, path.pkt_id(), view.src_ia(), &view.src_host(), view.payload_len());
                ok += usize::from(verify_at_destination(&path, &input, &key).is_ok());
            }
        });
        assert_eq!(ok, pkts.len(), "benchmark packets not all verified");
        (busy, pkts.len() as u64)
    });
    row("epic destination check, 5 ASes", 1, PAYLOAD, None, ns)
}

/// The Z-Lane rows of the table.
pub(super) fn rows(effort: Effort) -> Vec<Row> {
    rows_with_hosts(effort, HOSTS)
}

fn rows_with_hosts(effort: Effort, hosts: u16) -> Vec<Row> {
    let mut rows: Vec<Row> = [2, 5, 8].into_iter().map(|ases| gateway_row(ases, true, false, hosts, effort)).collect();
    rows.push(gateway_row(5, true, true, hosts, effort));
    rows.push(gateway_row(5, false, false, hosts, effort));
    rows.push(router_row(effort));
    rows.push(destination_row(effort));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row processes its packets as intended (the rows assert it) at a tiny effort.
    #[test]
    fn the_zlane_rows_run() {
        let rows = rows_with_hosts(Effort { packets: 64, repeats: 1 }, 100);
        assert_eq!(rows.len(), 7);
        assert!(rows.iter().all(|r| r.ns_per_packet > 0.0));
        assert_eq!(rows[1].paper_ns, Some(757.0));
    }
}
