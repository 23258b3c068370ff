//! `aviary lab glwp`: GLWP's guarantees on real processes (the GLWP paper, §VI-B). On
//! `two-isd.toml` with allocation matrices added ([`scenario`]), three sources discover their
//! allocations through their AS's `POST /v1/glwp/discover`, all three paths ending on one
//! bottleneck link; a guaranteed flow sends at its β, each of its packets replayed once, while
//! the two other GLWP sources overuse their allocations and a host floods the bottleneck with
//! best effort at five times its capacity. The routers validate every GLWP packet, queue it
//! in the priority class and cut overuse back with their monitors; what each flow kept comes
//! from the sink, what the routers dropped and why from their `/metrics`.

mod report;
pub mod scenario;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use aviary_node::api::{fetch_paths, glwp_discover, GlwpAllocationWire, GlwpDiscoverRequest};
use aviary_node::host::{SenderReport, SinkReport};
use aviary_node::runner::{Network, RunLayout};
use aviary_scion::IsdAsn;
use serde::Serialize;

use crate::demo::{send_args, sink_args, start_host, summarise, wait_host, FlowSummary};
use crate::router_metrics::{mechanism_drops, scrape};
pub use report::{html, table, PAPER};
use scenario::{Flow, Sending, BOTTLENECK_BPS, SINK_HOST};

const SINK_PORT: u16 = 40_000;
/// The flood and the overusing sources start this long before the guaranteed flow.
const MARGIN_MS: u64 = 1000;
/// How long to keep asking for allocations while the GLWP services fetch each other's keys.
const DISCOVERY_PATIENCE: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct GlwpLabOptions {
    /// The `aviary` binary that runs the processes.
    pub exe: PathBuf,
    /// Run directory: `report.html`, and `network/` with configs, logs, allocation files and
    /// the flows' reports.
    pub dir: PathBuf,
    pub port_base: u16,
    /// How long the guaranteed flow sends.
    pub duration_ms: u64,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// One discovered allocation.
#[derive(Clone, Debug, Serialize)]
pub struct AllocationRow {
    pub flow: String,
    pub src: IsdAsn,
    pub path: Vec<IsdAsn>,
    pub aid: String,
    pub guarantee_bps: u64,
    pub beta_kbps: u32,
}

/// One flow: as its sender and the sink saw it, against its allocation.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRow {
    pub role: String,
    /// G(π) of a GLWP flow.
    pub allocation_bps: Option<u64>,
    /// Goodput over the allocation.
    pub share_of_allocation: Option<f64>,
    #[serde(flatten)]
    pub summary: FlowSummary,
}

/// What one AS's router's GLWP processor dropped during the run, by reason (non-zero only).
#[derive(Clone, Debug, Serialize)]
pub struct RouterDrops {
    pub ia: IsdAsn,
    pub drops: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GlwpLabReport {
    pub bottleneck: String,
    pub bottleneck_bps: u64,
    pub duration_s: f64,
    pub run_dir: String,
    pub report_html: String,
    pub allocations: Vec<AllocationRow>,
    /// The guaranteed flow first.
    pub flows: Vec<FlowRow>,
    /// The guaranteed flow's goodput over its allocation.
    pub guaranteed_share: f64,
    /// Copies of the guaranteed flow's packets sent behind them (F8).
    pub replayed_packets: u64,
    pub routers: Vec<RouterDrops>,
}

fn progress(on: bool, msg: &str) {
    if on {
        eprintln!("[aviary lab glwp] {msg}");
    }
}

/// Runs the scenario; the network is stopped before this returns, also on error.
pub fn run(opts: &GlwpLabOptions) -> anyhow::Result<GlwpLabReport> {
    // The network's configs, state, logs and reports go to a subdirectory that each run starts
    // afresh (a router would otherwise take up the runtime state of the last run).
    let net_dir = opts.dir.join("network");
    if net_dir.exists() {
        std::fs::remove_dir_all(&net_dir).with_context(|| format!("cannot empty {}", net_dir.display()))?;
    }
    std::fs::create_dir_all(&net_dir).with_context(|| format!("cannot create {}", net_dir.display()))?;
    let topo_file = net_dir.join("glwp-two-isd.toml");
    std::fs::write(&topo_file, toml::to_string(&scenario::topology()?)?)?;
    let layout = RunLayout::write(&topo_file, &net_dir, opts.port_base)?;
    progress(opts.progress, &format!("starting the network ({})", layout.dir.display()));
    let net = Network::start(&opts.exe, layout)?;
    let l = &net.layout;

    progress(opts.progress, "discovering the allocations");
    let mut allocations = BTreeMap::new();
    for f in scenario::flows().filter(|f| matches!(f.sending, Sending::Glwp { .. })) {
        let alloc = discover(l, &f)?;
        let file = l.dir.join(format!("allocation-{}.json", f.name));
        aviary_node::files::write_secret(&file, serde_json::to_string_pretty(&alloc)?.as_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?;
        allocations.insert(f.name, (alloc, file));
    }

    let routers: Vec<IsdAsn> = scenario::MATRICES.iter().map(|(ia, _)| ia.parse()).collect::<Result<_, _>>()?;
    let scrape_all = || -> anyhow::Result<Vec<BTreeMap<String, u64>>> {
        routers.iter().map(|ia| Ok(mechanism_drops(&scrape(l.ases[ia].router.management)?, "glwp"))).collect()
    };
    let before = scrape_all()?;

    let sink = l.host(SINK_HOST)?;
    let dst = format!("{},{}:{SINK_PORT}", sink.ia, sink.addr);
    let run_dir = l.dir.clone();
    let report = |name: &str| run_dir.join(format!("{name}.json"));
    let (exe, dur) = (&opts.exe, opts.duration_ms);
    let others_ms = dur + 2 * MARGIN_MS;
    let sink_proc = start_host(exe, l, SINK_HOST, "sink", &sink_args(SINK_PORT, others_ms + 1500, &report("sink")))?;
    std::thread::sleep(Duration::from_millis(300));
    let args = |f: &Flow, ms: u64| -> Vec<String> {
        let (rate, extra) = match f.sending {
            Sending::Glwp { times, replays } => {
                let (alloc, file) = &allocations[f.name];
                let extra = vec![
                    "--glwp".to_string(),
                    file.display().to_string(),
                    "--glwp-replays".into(),
                    replays.to_string(),
                ];
                ((alloc.guarantee_bps as f64 * times) as u64, extra)
            }
            Sending::BestEffort { times } => ((BOTTLENECK_BPS as f64 * times) as u64, Vec::new()),
        };
        let mut a = send_args(f.name, dst.clone(), rate, ms, &report(f.name));
        a.extend(extra);
        a.extend(["--pattern".to_string(), "jittered".into()]);
        a
    };
    let mut senders = Vec::new();
    for f in scenario::OTHERS {
        senders.push((f.name, start_host(exe, l, f.name, f.name, &args(&f, others_ms))?));
    }
    progress(opts.progress, "flood and overuse running");
    std::thread::sleep(Duration::from_millis(MARGIN_MS));
    let g = scenario::GUARANTEED;
    senders.push((g.name, start_host(exe, l, g.name, g.name, &args(&g, dur))?));
    let started = Instant::now();
    let grace = Duration::from_secs(10);
    for (name, child) in senders.into_iter().rev() {
        wait_host(child, l, name, grace + Duration::from_millis(others_ms))?;
    }
    wait_host(sink_proc, l, "sink", grace)?;
    let after = scrape_all()?;
    let duration_s = started.elapsed().as_secs_f64().min(dur as f64 / 1000.0);
    progress(opts.progress, "stopping the network");
    drop(net);

    let sink_report: SinkReport = read_json(&report("sink"))?;
    let mut flows = Vec::new();
    let mut replayed_packets = 0;
    for f in scenario::flows() {
        let sent: SenderReport = read_json(&report(f.name))?;
        if f.name == g.name {
            replayed_packets = sent.replayed_packets;
        }
        let summary = summarise(&sent, &sink_report);
        let allocation_bps = allocations.get(f.name).map(|(a, _)| a.guarantee_bps);
        let share_of_allocation = allocation_bps.map(|a| summary.goodput_bps as f64 / a as f64);
        flows.push(FlowRow { role: f.role.into(), allocation_bps, share_of_allocation, summary });
    }
    let routers = routers
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(ia, (b, a))| RouterDrops {
            ia: *ia,
            drops: a
                .iter()
                .map(|(r, n)| (r.clone(), n.saturating_sub(b.get(r).copied().unwrap_or(0))))
                .filter(|(_, n)| *n > 0)
                .collect(),
        })
        .collect();
    let html_path = opts.dir.join("report.html");
    let report = GlwpLabReport {
        bottleneck: format!("{}#{}", scenario::BOTTLENECK_AS, scenario::BOTTLENECK_INTERFACE),
        bottleneck_bps: BOTTLENECK_BPS,
        duration_s,
        run_dir: opts.dir.display().to_string(),
        report_html: html_path.display().to_string(),
        allocations: scenario::flows()
            .filter_map(|f| {
                let (a, _) = allocations.get(f.name)?;
                Some(AllocationRow {
                    flow: f.name.into(),
                    src: a.src,
                    path: a.hops.iter().map(|h| h.ia).collect(),
                    aid: a.aid.clone(),
                    guarantee_bps: a.guarantee_bps,
                    beta_kbps: a.beta_kbps,
                })
            })
            .collect(),
        guaranteed_share: flows[0].share_of_allocation.unwrap_or(0.0),
        flows,
        replayed_packets,
        routers,
    };
    std::fs::write(&html_path, html(&report)).with_context(|| format!("cannot write {}", html_path.display()))?;
    Ok(report)
}

/// The allocation of `f`'s path, asked of its source AS's control service as a host would;
/// timeouts are tried again while the GLWP services still fetch each other's keys and hear each
/// other's announcements.
fn discover(l: &RunLayout, f: &Flow) -> anyhow::Result<GlwpAllocationWire> {
    let host = l.host(f.name)?;
    let want: Vec<IsdAsn> = f.path.iter().map(|a| a.parse()).collect::<Result<_, _>>()?;
    let dst = *want.last().context("a flow's path has a destination")?;
    let paths = fetch_paths(host.control, dst)?;
    let path_index = paths
        .iter()
        .position(|p| p.ases.iter().map(|a| a.ia).eq(want.iter().copied()))
        .with_context(|| format!("{} has no path {}", host.ia, f.path.join(" > ")))?;
    let deadline = Instant::now() + DISCOVERY_PATIENCE;
    loop {
        match glwp_discover(host.control, &GlwpDiscoverRequest { dst, path_index, min_bps: 0 }) {
            Ok(a) => return Ok(a),
            // Not yet answered, or not yet checkable at the source: AS 1's announcement (re-sent
            // every second) may arrive after the keys, and a key another AS issued may not be
            // fetched yet (a fetch made before that AS's DRKey service was up is retried a
            // second later).
            Err(e)
                if Instant::now() < deadline
                    && ["no answer after", "rejected: not_announced", "rejected: no_key"]
                        .iter()
                        .any(|m| format!("{e:#}").contains(m)) =>
            {
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => bail!("the allocation of {} ({}): {e:#}", f.name, f.path.join(" > ")),
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}
