//! `aviary demo`: the emulated network of `line5.toml` (five ASes in a line, Fig. 1 of
//! the Hummingbird paper) as real processes. The source host obtains reservations on the three transit
//! ASes from their control services, then sends a reserved flow and a best-effort flow of
//! the same rate to the sink while an attacker in the second AS floods the middle of the
//! line at five times its capacity. Every border router enforces its links' capacity, so
//! the congestion is real; what each flow keeps is measured at the sink.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use aviary_market::U256;
use aviary_node::api::{self, ReservationRequest};
use aviary_node::buyer::{self, Purchase};
use aviary_node::host::{HopReservation, ReservationFile, SenderReport, SinkReport};
use aviary_node::routes::AsOnRoute;
use aviary_node::runner::{spawn_process, Network, RunLayout};
use serde::Serialize;

/// The embedded default topology.
pub const LINE5: &str = include_str!("../../../testdata/topologies/line5.toml");
/// Rate of the reserved and of the best-effort flow (whole SCION packets).
pub const FLOW_BPS: u64 = 4_000_000;
/// Capacity of the links of line5 (the attack floods at five times this).
const LINK_BPS: u64 = 10_000_000;
const PACKET_BYTES: usize = 1000;
const SINK_PORT: u16 = 40_000;
const ATTACK_SINK_PORT: u16 = 40_001;
/// The attack starts this long before the legitimate flows and ends this long after them.
const ATTACK_MARGIN_MS: u64 = 500;
const BIN_MS: u64 = 250;
/// Marks a run directory as the demo's own.
const DEMO_MARKER: &str = ".aviary-demo";

#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The `aviary` binary that runs the processes.
    pub exe: PathBuf,
    /// Run directory: configs, logs, reports, `report.html`.
    pub dir: PathBuf,
    pub port_base: u16,
    /// How long the legitimate flows send.
    pub duration_ms: u64,
    /// Progress lines on stderr.
    pub progress: bool,
    /// Buy the reservations on the run's market (true) or have the ASes' operators grant them.
    pub market: bool,
}

/// One flow of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    pub name: String,
    /// `reserved`, `best_effort` or `attack`.
    pub kind: String,
    pub offered_bps: u64,
    pub reserved_bps: Option<u64>,
    pub sent_packets: u64,
    pub received_packets: u64,
    /// Received SCION packet bits over the sender's duration.
    pub goodput_bps: u64,
    /// Fraction of the packets sent that never arrived.
    pub loss: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Goodput per `bin_ms` since the sink started (for the plot).
    #[serde(skip)]
    pub timeline_bps: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    pub topology: String,
    pub description: String,
    pub duration_s: f64,
    pub bin_ms: u64,
    pub run_dir: String,
    pub report_html: String,
    /// How the reservations were obtained: `market` (bought in one transaction on the
    /// embedded ledger) or `granted` (by each AS's operator).
    pub reservations: String,
    /// What the market purchase cost, wei (decimal string; null when granted).
    pub price_wei: Option<String>,
    pub flows: Vec<FlowSummary>,
}

fn progress(on: bool, msg: &str) {
    if on {
        eprintln!("[aviary demo] {msg}");
    }
}

/// Starts `aviary host --config <host> <args>` with its log in the run's log directory.
pub fn start_host(exe: &Path, layout: &RunLayout, host: &str, label: &str, args: &[String]) -> anyhow::Result<Child> {
    layout.host(host)?;
    let mut all = vec!["host".to_string(), "--config".into(), layout.host_config_path(host).display().to_string()];
    all.extend_from_slice(args);
    spawn_process(exe, &all, &layout.dir.join("logs").join(format!("{label}.log")))
}

/// Waits for a host process; an error names its log.
pub fn wait_host(mut child: Child, layout: &RunLayout, label: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                bail!(
                    "{label} failed ({status}); see {}",
                    layout.dir.join("logs").join(format!("{label}.log")).display()
                );
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{label} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The transit ASes of the first path from `src` to `dst`, with their interfaces.
fn transit(layout: &RunLayout, src: &str, dst: &str) -> anyhow::Result<Vec<AsOnRoute>> {
    let (src, dst) = (layout.host(src)?, layout.host(dst)?);
    let paths = api::fetch_paths(src.control, dst.ia)?;
    let path = paths.first().context("no path")?;
    Ok(path.ases[1..path.ases.len().saturating_sub(1)].to_vec())
}

fn save_reservations(
    layout: &RunLayout,
    src: &str,
    dst: &str,
    reservations: Vec<HopReservation>,
) -> anyhow::Result<PathBuf> {
    let file = layout.dir.join(format!("reservation-{src}.json"));
    ReservationFile { dst: layout.host(dst)?.ia, reservations }.save(&file)?;
    Ok(file)
}

/// Obtains a reservation on every transit AS of the first path from `src` to `dst`, as
/// the operator of each of those ASes would grant it, and writes the reservation file.
pub fn reserve_transit(layout: &RunLayout, src: &str, dst: &str, bps: u64, secs: u16) -> anyhow::Result<PathBuf> {
    let start = aviary_node::clock::unix_s() as u32 - 1;
    let mut reservations = Vec::new();
    for hop in transit(layout, src, dst)? {
        let a = &layout.ases[&hop.ia];
        let req =
            ReservationRequest { ingress: hop.ingress, egress: hop.egress, bandwidth_bps: bps, start, duration: secs };
        reservations.push(HopReservation::from(api::request_reservation(
            a.control.listen,
            &a.operator_token()?,
            &req,
        )?));
    }
    save_reservations(layout, src, dst, reservations)
}

/// Buys a reservation on every transit AS of the first path from `src` to `dst` on the
/// run's market, in one transaction, waits for the ASes to deliver, opens the sealed
/// reservations and writes the reservation file. Returns it and the price paid (wei).
pub fn buy_transit(layout: &RunLayout, src: &str, dst: &str, bps: u64, secs: u64) -> anyhow::Result<(PathBuf, U256)> {
    buy_transit_from(layout, src, dst, bps, grid_now(), secs)
}

/// The market's time grid point at or before now: the earliest start a purchase can have.
pub fn grid_now() -> u64 {
    let gran = u64::from(aviary_node::runner::market_setup::GRANULARITY_S);
    aviary_node::clock::unix_s() / gran * gran
}

/// [`buy_transit`] for the interval from `start` (on the market's time grid; it may lie in the
/// past as long as the interval has not ended).
pub fn buy_transit_from(
    layout: &RunLayout,
    src: &str,
    dst: &str,
    bps: u64,
    start: u64,
    secs: u64,
) -> anyhow::Result<(PathBuf, U256)> {
    let market = layout.market.as_ref().context("this run has no market")?;
    let mut ledger = market.ledger()?;
    let d = market.deployment.deployment();
    let (s, t) = (layout.host(src)?, layout.host(dst)?);
    let path = api::fetch_paths(s.control, t.ia)?.into_iter().next().context("no path")?;
    let gran = u64::from(aviary_node::runner::market_setup::GRANULARITY_S);
    let purchase = Purchase {
        start,
        expiry: start + secs.div_ceil(gran) * gran,
        bandwidth_kbps: bps.div_ceil(1000),
        reverse: false,
        // Generous: on a loaded machine the AS services' first listings take a while.
        wait_for_offers: Duration::from_secs(90),
        wait_for_delivery: Duration::from_secs(60),
        delivery_window_s: aviary_market::client::DEFAULT_DELIVERY_WINDOW_S,
        payment_token: aviary_market::Address::ZERO,
    };
    let account = market.buyer()?;
    let plan = buyer::plan(&ledger, &d, Some(account.address()), &buyer::wants(&path, false), &purchase)?;
    let new = buyer::NewPurchase {
        buyer: account.address(),
        ends: (s.ia, t.ia),
        reverse: false,
        hops: plan.hops.len(),
        window: purchase.window(),
        out: None,
        reverse_out: None,
    };
    let record = buyer::buy(&mut ledger, &d, &account, &plan, new, &purchase, &market.purchases_dir())?;
    let (file, _) = buyer::wait(&ledger, &d, &record, purchase.wait_for_delivery)?.complete()?;
    Ok((save_reservations(layout, src, dst, file.reservations)?, plan.total))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// A sender's flags for a flow to `dst` (`ISD-AS,IP:PORT`).
pub fn send_args(flow: &str, dst: String, rate_bps: u64, duration_ms: u64, report: &Path) -> Vec<String> {
    [
        "send",
        "--flow",
        flow,
        "--dst",
        &dst,
        "--rate-bps",
        &rate_bps.to_string(),
        "--size",
        &PACKET_BYTES.to_string(),
        "--duration-ms",
        &duration_ms.to_string(),
        "--report",
        &report.display().to_string(),
    ]
    .map(String::from)
    .to_vec()
}

pub fn sink_args(port: u16, duration_ms: u64, report: &Path) -> Vec<String> {
    let report = report.display().to_string();
    let (port, duration) = (port.to_string(), duration_ms.to_string());
    ["sink", "--listen-port", &port, "--duration-ms", &duration, "--bin-ms", &BIN_MS.to_string(), "--report", &report]
        .map(String::from)
        .to_vec()
}

/// Joins a sender's report with what the sink saw of that flow.
pub fn summarise(sent: &SenderReport, sink: &SinkReport) -> FlowSummary {
    let got = sink.flows.get(&sent.flow);
    let received = got.map_or(0, |f| f.received_packets);
    let bytes = got.map_or(0, |f| f.received_bytes);
    FlowSummary {
        name: sent.flow.clone(),
        kind: serde_json::to_value(sent.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        offered_bps: sent.offered_bps,
        reserved_bps: sent.reserved_bps,
        sent_packets: sent.sent_packets,
        received_packets: received,
        goodput_bps: if sent.duration_s > 0.0 { (bytes as f64 * 8.0 / sent.duration_s) as u64 } else { 0 },
        loss: if sent.sent_packets == 0 {
            0.0
        } else {
            1.0 - received.min(sent.sent_packets) as f64 / sent.sent_packets as f64
        },
        p50_ms: got.map_or(0.0, |f| f.p50_ms),
        p99_ms: got.map_or(0.0, |f| f.p99_ms),
        timeline_bps: got.map_or_else(Vec::new, |f| f.timeline_bps.clone()),
    }
}

/// Runs the demo; the network is stopped before this returns, also on error.
pub fn run(opts: &DemoOptions) -> anyhow::Result<DemoReport> {
    // Every demo starts afresh (new keys, a new chain): a directory an earlier demo made is
    // emptied first; any other directory is used as it is.
    let marker = opts.dir.join(DEMO_MARKER);
    if marker.exists() {
        std::fs::remove_dir_all(&opts.dir).with_context(|| format!("cannot empty {}", opts.dir.display()))?;
    }
    std::fs::create_dir_all(&opts.dir).with_context(|| format!("cannot create {}", opts.dir.display()))?;
    std::fs::write(&marker, "made by aviary demo; emptied by the next one\n")?;
    let topo_file = opts.dir.join("line5.toml");
    std::fs::write(&topo_file, LINE5)?;
    let mut layout = RunLayout::write(&topo_file, &opts.dir, opts.port_base)?;
    if opts.market {
        progress(opts.progress, "deploying the market contracts on the embedded ledger");
        layout.enable_market()?;
    }
    let services = if opts.market { ", control and AS services" } else { " and control services" };
    progress(opts.progress, &format!("starting 5 border routers{services} ({})", layout.dir.display()));
    let net = Network::start(&opts.exe, layout)?;
    let l = &net.layout;
    let (exe, dur) = (&opts.exe, opts.duration_ms);
    let secs = u16::try_from(dur / 1000 + 120).unwrap_or(u16::MAX);
    let (res_file, price) = if opts.market {
        let (file, price) = buy_transit(l, "source", "sink", FLOW_BPS, u64::from(secs))?;
        progress(
            opts.progress,
            &format!(
                "bought reservations on the three transit ASes in one transaction ({price} wei); delivered and opened"
            ),
        );
        (file, Some(price.to_string()))
    } else {
        let file = reserve_transit(l, "source", "sink", FLOW_BPS, secs)?;
        progress(opts.progress, "reservations granted on the three transit ASes by their operators");
        (file, None)
    };

    let sink = l.host("sink")?;
    let attack_sink = l.host("attack-sink")?;
    let sink_dst = format!("{},{}:{SINK_PORT}", sink.ia, sink.addr);
    let attack_dst = format!("{},{}:{ATTACK_SINK_PORT}", attack_sink.ia, attack_sink.addr);
    let report = |name: &str| l.dir.join(format!("{name}.json"));
    let attack_ms = dur + 2 * ATTACK_MARGIN_MS;
    let sink_ms = attack_ms + 1500;
    let sinks = [
        ("sink", start_host(exe, l, "sink", "sink", &sink_args(SINK_PORT, sink_ms, &report("sink")))?),
        (
            "attack-sink",
            start_host(
                exe,
                l,
                "attack-sink",
                "attack-sink",
                &sink_args(ATTACK_SINK_PORT, sink_ms, &report("attack-sink")),
            )?,
        ),
    ];
    std::thread::sleep(Duration::from_millis(300));
    let mut attack = send_args("attack", attack_dst, 5 * LINK_BPS, attack_ms, &report("attack"));
    attack.extend(["--attack".into(), "flood".into()]);
    let attacker = start_host(exe, l, "attacker", "attacker", &attack)?;
    progress(opts.progress, &format!("attacker floods the middle of the line at {} Mbit/s", 5 * LINK_BPS / 1_000_000));
    std::thread::sleep(Duration::from_millis(ATTACK_MARGIN_MS));
    let mut reserved = send_args("reserved", sink_dst.clone(), FLOW_BPS, dur, &report("reserved"));
    reserved.extend(["--reservation".into(), res_file.display().to_string()]);
    let senders = [
        ("reserved", start_host(exe, l, "source", "reserved", &reserved)?),
        (
            "best-effort",
            start_host(
                exe,
                l,
                "source",
                "best-effort",
                &send_args("best-effort", sink_dst, FLOW_BPS, dur, &report("best-effort")),
            )?,
        ),
    ];
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(dur) {
        std::thread::sleep(
            Duration::from_millis(1000).min(Duration::from_millis(dur).saturating_sub(started.elapsed())),
        );
        progress(
            opts.progress,
            &format!("sending: {:.0} of {:.0} s", started.elapsed().as_secs_f64(), dur as f64 / 1000.0),
        );
    }
    let grace = Duration::from_secs(10);
    for (label, child) in senders {
        wait_host(child, l, label, grace)?;
    }
    wait_host(attacker, l, "attacker", grace)?;
    for (label, child) in sinks {
        wait_host(child, l, label, grace)?;
    }
    let sink_report: SinkReport = read_json(&report("sink"))?;
    let attack_report: SinkReport = read_json(&report("attack-sink"))?;
    let mut flows = Vec::new();
    for name in ["reserved", "best-effort"] {
        flows.push(summarise(&read_json(&report(name))?, &sink_report));
    }
    let mut a = summarise(&read_json(&report("attack"))?, &attack_report);
    // Align the attack's timeline with the legitimate flows' sink (both started together).
    a.timeline_bps.truncate(flows[0].timeline_bps.len());
    flows.push(a);
    let html_path = l.dir.join("report.html");
    let mut report = DemoReport {
        topology: l.topology.name.clone(),
        description: l.topology.description.clone(),
        duration_s: dur as f64 / 1000.0,
        bin_ms: BIN_MS,
        run_dir: l.dir.display().to_string(),
        report_html: html_path.display().to_string(),
        reservations: if opts.market { "market" } else { "granted" }.into(),
        price_wei: price,
        flows,
    };
    std::fs::write(&html_path, crate::report::html(&report))
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    report.report_html = html_path.display().to_string();
    progress(opts.progress, "stopping the network");
    drop(net);
    Ok(report)
}

/// The table a person reads.
pub fn table(r: &DemoReport) -> String {
    let mut out = format!(
        "{:<12} {:<12} {:>9} {:>9} {:>8} {:>8} {:>9} {:>7} {:>8} {:>8}\n",
        "flow", "kind", "offered", "reserved", "sent", "received", "goodput", "loss", "p50 ms", "p99 ms"
    );
    let mbps = |b: u64| format!("{:.2}M", b as f64 / 1e6);
    for f in &r.flows {
        out += &format!(
            "{:<12} {:<12} {:>9} {:>9} {:>8} {:>8} {:>9} {:>6.1}% {:>8.1} {:>8.1}\n",
            f.name,
            f.kind,
            mbps(f.offered_bps),
            f.reserved_bps.map_or("-".into(), mbps),
            f.sent_packets,
            f.received_packets,
            mbps(f.goodput_bps),
            f.loss * 100.0,
            f.p50_ms,
            f.p99_ms
        );
    }
    out
}
