//! Z-Lane rows: the source AS's gateway per packet, compliant against path length and
//! over-rate, beside the Z-Lane paper's Table 3 (DPDK, 2.1 GHz Xeon: 205 ns over-rate,
//! 217 + 108·ℓ ns compliant); the source AS's router on an authorized packet (EPIC validation,
//! classification into G and the per-AS token bucket); the destination's check.
//!
//! Every packet is distinct (the gateway and the router suppress duplicates) and comes from
//! one of [`HOSTS`] hosts, each with its own bucket. Packets are copied from their templates
//! before the clock starts, and every repeat starts from a fresh gateway or router, so the
//! figures are the processing alone.

use std::net::Ipv4Addr;
use std::time::Instant;

use aviary_qos::{Context, LinkState, Processor, Rate, RateBound, SeededRandom, Verdict};
use aviary_scion::drkey::HostAddr as DrkeyHost;
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::verify_at_destination;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::{AsForwarding, ScionView};
use aviary_zlane::classes::{RouterClass, ZlaneConfig};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{GatewayConfig, GatewayVerdict, OverRatePolicy};
use aviary_zlane::router::ZlaneRouter;
use aviary_zlane::testbed::{Net, DST_HOST, IF_NEXT, PROTOCOL};

use super::{row, Effort, Row, BATCH, S, T0};

/// Hosts sending through the gateway (the paper measures 32 000; the per-host table is a
/// hash map either way).
const HOSTS: u16 = 256;
const PAYLOAD: usize = 100;
/// Time between two packets: 1 µs, far within every host's rate.
const GAP_NS: u64 = 1_000;

fn t0() -> u64 {
    u64::from(T0) * S
}

/// `n` distinct packets over a path of `ases` ASes, from the hosts in turn.
fn packets(net: &mut Net, n: u64) -> Vec<Vec<u8>> {
    (0..n).map(|i| net.packet(Net::host(1 + (i % u64::from(HOSTS)) as u16), PAYLOAD, t0() + i * GAP_NS)).collect()
}

/// Every host listed with the bucket's highest rate (compliant) or the lowest and a one-byte
/// burst (over-rate: every packet finds its bucket empty); `dedup`: duplicate suppression.
fn config(compliant: bool, dedup: bool) -> GatewayConfig {
    let rate = if compliant { Rate::MAX.bps() } else { Rate::from_units(1).bps() };
    GatewayConfig {
        guarantee_bps: rate * u64::from(HOSTS),
        burst_bytes: if compliant { 15_000 } else { 1 },
        over_rate: OverRatePolicy::Unflagged,
        drkey_protocol: PROTOCOL,
        suppress_duplicates: dedup,
        hosts: (1..=HOSTS).map(|h| HostRateConfig { prefix: Net::host(h).to_string(), rate_bps: None }).collect(),
    }
}

/// The best ns per packet of `effort.repeats` runs of `run` over fresh copies of `templates`.
fn time_batches(effort: Effort, templates: &[Vec<u8>], mut run: impl FnMut(&mut [Vec<u8>]) -> f64) -> f64 {
    (0..effort.repeats)
        .map(|_| {
            let mut pkts = templates.to_vec();
            run(&mut pkts)
        })
        .fold(f64::INFINITY, f64::min)
}

/// The gateway on packets over a path of `ases` ASes (one hop field each). Without `dedup`
/// it does what the paper's gateway does (Table 3 has no duplicate suppression).
pub(super) fn gateway_row(ases: usize, compliant: bool, dedup: bool, effort: Effort) -> Row {
    let mut net = Net::new(ases, t0());
    let templates = packets(&mut net, effort.packets.clamp(BATCH as u64, 1 << 14));
    let cfg = config(compliant, dedup);
    let want = if compliant { GatewayVerdict::Authorized } else { GatewayVerdict::Unflagged };
    let ns = time_batches(effort, &templates, |pkts| {
        let mut gw = net.gateway(&cfg, t0()).expect("gateway");
        let mut verdicts = vec![want; pkts.len()];
        let t = Instant::now();
        for (i, (chunk, out)) in pkts.chunks_mut(BATCH).zip(verdicts.chunks_mut(BATCH)).enumerate() {
            let now = t0() + ((i + 1) * BATCH) as u64 * GAP_NS;
            let mut batch: Vec<&mut [u8]> = chunk.iter_mut().map(|p| p.as_mut_slice()).collect();
            gw.process_batch(&mut batch, now, out);
        }
        let ns = t.elapsed().as_nanos() as f64 / pkts.len() as f64;
        assert!(verdicts.iter().all(|v| *v == want), "benchmark packets not processed as intended");
        ns
    });
    let kind = if compliant { "compliant" } else { "over-rate" };
    let dedup_note = if dedup { ", dup. suppr." } else { "" };
    let name = format!("zlane gateway, {kind}, {ases} ASes{dedup_note}");
    let paper = if compliant { 217.0 + 108.0 * ases as f64 } else { 205.0 };
    row(&name, BATCH, PAYLOAD, Some(paper), ns)
}

/// The source AS's router on gateway-authorized packets: EPIC validation, classification
/// and the AS's token bucket; every packet is G.
pub(super) fn router_row(effort: Effort) -> Row {
    let mut net = Net::new(5, t0());
    let mut templates = packets(&mut net, effort.packets.clamp(BATCH as u64, 1 << 14));
    let mut gw = net.gateway(&config(true, false), t0()).expect("gateway");
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
    let ns = time_batches(effort, &templates, |pkts| {
        let fwd = AsForwarding::new(src.ia, src.mac_key.clone(), [IF_NEXT]);
        let bound = [(IF_NEXT, RateBound::Ppm(500_000))];
        let mut router = ZlaneRouter::new(fwd, &src.master_secret, zlane.clone(), bound, t0()).expect("router");
        let mut random = SeededRandom::new(1);
        let mut verdicts = vec![Verdict::Deliver; pkts.len()];
        let t = Instant::now();
        for (i, (chunk, out)) in pkts.chunks_mut(BATCH).zip(verdicts.chunks_mut(BATCH)).enumerate() {
            let now = t0() + ((i + 1) * BATCH) as u64 * GAP_NS;
            let mut ctx = Context { now_ns: now, ingress: 0, links: &links, random: &mut random };
            let mut batch: Vec<&mut [u8]> = chunk.iter_mut().map(|p| p.as_mut_slice()).collect();
            router.process_batch(&mut ctx, &mut batch, out);
        }
        let ns = t.elapsed().as_nanos() as f64 / pkts.len() as f64;
        let all_g =
            verdicts.iter().all(|v| matches!(v, Verdict::Forward { admission, .. } if *admission == guaranteed));
        assert!(all_g, "benchmark packets not all G");
        ns
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
    let ns = time_batches(effort, &[], |_| {
        let t = Instant::now();
        let mut ok = 0;
        for p in &pkts {
            let view = ScionView::new_checked(std::hint::black_box(&p[..])).expect("header");
            let path = PerAsPathView::new_checked(view.path()).expect("path");
            let info_ts = path.standard().info(0).timestamp;
            let input = MacInput::new(info_ts, path.pkt_id(), view.src_ia(), &view.src_host(), view.payload_len());
            ok += usize::from(verify_at_destination(&path, &input, &key).is_ok());
        }
        let ns = t.elapsed().as_nanos() as f64 / pkts.len() as f64;
        assert_eq!(ok, pkts.len(), "benchmark packets not all verified");
        ns
    });
    row("epic destination check, 5 ASes", 1, PAYLOAD, None, ns)
}

/// The Z-Lane rows of the table.
pub(super) fn rows(effort: Effort) -> Vec<Row> {
    let mut rows: Vec<Row> = [2, 5, 8].into_iter().map(|ases| gateway_row(ases, true, false, effort)).collect();
    rows.push(gateway_row(5, true, true, effort));
    rows.push(gateway_row(5, false, false, effort));
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
        let rows = rows(Effort { packets: 64, repeats: 1 });
        assert_eq!(rows.len(), 7);
        assert!(rows.iter().all(|r| r.ns_per_packet > 0.0));
        assert_eq!(rows[1].paper_ns, Some(757.0));
    }
}
