//! `aviary lab zlane`: the border-router DDoS experiment of the Z-Lane paper (§6, Table 4) on
//! real processes, scaled down to loopback. The network is `two-isd.toml` extended in code
//! ([`scenario`]): the protected AS sends through its gateway at its guarantee while other ASes
//! and ISDs overuse theirs and hosts add authenticated and unauthenticated floods, four times
//! the capacity of the one congested egress (core AS 110 towards 210) in all. The same traffic
//! runs once per policy of that router, `zlane` (Table 2's classes) and `fifo` (one queue): a
//! switch of its `link_class_table`, so both are the real router configured differently. What
//! the router did per class comes from its `/metrics`; what the protected AS kept, from the sink.

mod flows;
mod report;
pub mod scenario;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use aviary_node::host::{SenderReport, SinkReport};
use aviary_node::runner::{Network, RunLayout};
use aviary_node::topology::Topology;
use aviary_scion::IsdAsn;
use serde::Serialize;

use crate::demo::{sink_args, start_host, summarise, wait_host, FlowSummary};
use crate::router_metrics as metrics;
pub use flows::{Flow, Sending, ATTACK, PROTECTED};
pub use report::{html, table, PAPER};
use scenario::{CONGESTED_AS, CONGESTED_INTERFACE, PROTECTED_AS, SINK_HOST};

const SINK_PORT: u16 = 40_000;
/// The derived topology in each policy's run directory.
pub const TOPOLOGY_FILE: &str = "zlane-two-isd.toml";
/// The attack starts this long before the protected flow and ends this long after it.
const ATTACK_MARGIN_MS: u64 = 1000;

/// The congested router's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Table 2's classes R, N, G (bounded), A and U (at least their share).
    Zlane,
    /// The same classes, counted, in one queue in arrival order.
    Fifo,
}

impl Policy {
    pub const ALL: [Policy; 2] = [Policy::Zlane, Policy::Fifo];

    /// Its name in reports, and the name of the class table its links use.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Zlane => "zlane",
            Policy::Fifo => "fifo",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ZlaneLabOptions {
    /// The `aviary` binary that runs the processes.
    pub exe: PathBuf,
    /// Run directory: one subdirectory per policy, `report.html`.
    pub dir: PathBuf,
    pub port_base: u16,
    /// How long the protected flow sends, per policy.
    pub duration_ms: u64,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// One class on the congested egress, bit/s over the measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ClassRow {
    pub class: String,
    pub offered_bps: u64,
    pub forwarded_bps: u64,
    pub dropped_bps: u64,
}

/// One policy's run.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyRun {
    pub policy: Policy,
    /// The protected AS's goodput at the sink over its guarantee.
    pub protected_share: f64,
    pub classes: Vec<ClassRow>,
    /// Every flow as its sender and the sink saw it (the protected one first).
    pub flows: Vec<FlowSummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ZlaneLabReport {
    pub capacity_bps: u64,
    pub protected_guarantee_bps: u64,
    pub duration_s: f64,
    pub run_dir: String,
    pub report_html: String,
    pub runs: Vec<PolicyRun>,
}

fn progress(on: bool, msg: &str) {
    if on {
        eprintln!("[aviary lab zlane] {msg}");
    }
}

/// The congested link's capacity and the protected AS's guarantee on it, as the topology
/// configures them (G's bound times the AS's share of it).
pub fn congested_link(topology: &Topology) -> anyhow::Result<(u64, u64)> {
    let ia: IsdAsn = CONGESTED_AS.parse().context("CONGESTED_AS")?;
    let capacity = topology
        .links_of(ia)
        .find(|(local, ..)| local.ifid == CONGESTED_INTERFACE)
        .map(|(.., link)| link.capacity_bps)
        .context("the scenario has no congested link")?;
    let router = &topology.as_entry(ia).context("the scenario has no congested AS")?.router;
    let share = |s: &str| aviary_qos::RateBound::parse_share(s).map(u64::from);
    let g = router.class_table[Policy::Zlane.name()]
        .class
        .iter()
        .find(|c| c.name == "G")
        .and_then(|c| match &c.upper {
            Some(aviary_node::router::classes::BoundConfig::Share(s)) => share(s).ok(),
            _ => None,
        })
        .context("the congested router's G has no relative upper bound")?;
    let own = match router.zlane.as_ref().and_then(|z| z.rates.get(PROTECTED_AS)) {
        Some(aviary_zlane::classes::RateConfig::Share(s)) => share(s)?,
        _ => bail!("the congested router gives {PROTECTED_AS} no relative rate"),
    };
    let ppm = u64::from(aviary_qos::RateBound::PPM);
    Ok((capacity, capacity * g / ppm * own / ppm))
}

/// Runs both policies; every network is stopped before this returns, also on error.
pub fn run(opts: &ZlaneLabOptions) -> anyhow::Result<ZlaneLabReport> {
    let topology = scenario::topology()?;
    let (capacity, guarantee) = congested_link(&topology)?;
    std::fs::create_dir_all(&opts.dir).with_context(|| format!("cannot create {}", opts.dir.display()))?;
    let mut runs = Vec::new();
    for policy in Policy::ALL {
        runs.push(run_policy(opts, &topology, policy, capacity, guarantee)?);
    }
    let html_path = opts.dir.join("report.html");
    let report = ZlaneLabReport {
        capacity_bps: capacity,
        protected_guarantee_bps: guarantee,
        duration_s: opts.duration_ms as f64 / 1000.0,
        run_dir: opts.dir.display().to_string(),
        report_html: html_path.display().to_string(),
        runs,
    };
    std::fs::write(&html_path, html(&report)).with_context(|| format!("cannot write {}", html_path.display()))?;
    Ok(report)
}

/// The topology with the congested router's links on `policy`'s class table.
fn topology_for(topology: &Topology, policy: Policy) -> anyhow::Result<String> {
    let mut t = topology.clone();
    let ia: IsdAsn = CONGESTED_AS.parse()?;
    let entry = t.ases.iter_mut().find(|a| a.ia == ia).context("the scenario has no congested AS")?;
    entry.router.link_class_table = Some(policy.name().to_owned());
    Ok(toml::to_string(&t)?)
}

fn run_policy(
    opts: &ZlaneLabOptions,
    topology: &Topology,
    policy: Policy,
    capacity: u64,
    guarantee: u64,
) -> anyhow::Result<PolicyRun> {
    let dir = opts.dir.join(policy.name());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot empty {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let topo_file = dir.join(TOPOLOGY_FILE);
    std::fs::write(&topo_file, topology_for(topology, policy)?)?;
    let layout = RunLayout::write(&topo_file, &dir, opts.port_base)?;
    progress(opts.progress, &format!("{}: starting the network ({})", policy.name(), layout.dir.display()));
    let net = Network::start(&opts.exe, layout)?;
    let l = &net.layout;
    let router = l.ases[&CONGESTED_AS.parse::<IsdAsn>()?].router.management;
    let (exe, dur) = (&opts.exe, opts.duration_ms);
    let sink = l.host(SINK_HOST)?;
    let dst = format!("{},{}:{SINK_PORT}", sink.ia, sink.addr);
    let report = |name: &str| l.dir.join(format!("{name}.json"));
    let attack_ms = dur + 2 * ATTACK_MARGIN_MS;
    let sink_proc =
        start_host(exe, l, SINK_HOST, SINK_HOST, &sink_args(SINK_PORT, attack_ms + 1500, &report(SINK_HOST)))?;
    std::thread::sleep(Duration::from_millis(300));
    let mut senders = Vec::new();
    for f in ATTACK {
        let args = f.send_args(dst.clone(), capacity, attack_ms, &report(f.name));
        senders.push((f.name, start_host(exe, l, f.name, f.name, &args)?));
    }
    progress(opts.progress, &format!("{}: attack at {} Mbit/s", policy.name(), attack_bps(capacity) / 1_000_000));
    std::thread::sleep(Duration::from_millis(ATTACK_MARGIN_MS));
    let before = metrics::scrape(router)?;
    let args = PROTECTED.send_args(dst, capacity, dur, &report(PROTECTED.name));
    senders.push((PROTECTED.name, start_host(exe, l, PROTECTED.name, PROTECTED.name, &args)?));
    std::thread::sleep(Duration::from_millis(dur));
    let after = metrics::scrape(router)?;
    // Over the router's own times of its counters: between two scrapes they could be a
    // publishing period (200 ms) further apart or closer than the scrapes, several per cent of
    // a quick run's window, and a class would seem to get more than the link carries.
    let window_s = metrics::class_counters_time_s(&after)? - metrics::class_counters_time_s(&before)?;
    anyhow::ensure!(window_s > 0.0, "the router published no counters during the {dur} ms measured");
    let (before, after) =
        (metrics::class_bytes(&before, CONGESTED_INTERFACE), metrics::class_bytes(&after, CONGESTED_INTERFACE));
    let grace = Duration::from_secs(10);
    for (name, child) in senders {
        wait_host(child, l, name, grace)?;
    }
    wait_host(sink_proc, l, SINK_HOST, grace)?;
    let sink_report: SinkReport = read_json(&report(SINK_HOST))?;
    let mut flows = Vec::new();
    for f in std::iter::once(PROTECTED).chain(ATTACK) {
        let sent: SenderReport = read_json(&report(f.name))?;
        flows.push(summarise(&sent, &sink_report));
    }
    let bps = |bytes: u64| (bytes as f64 * 8.0 / window_s) as u64;
    let classes = after
        .iter()
        .map(|(class, now)| {
            let earlier = before.iter().find(|(c, _)| c == class).map(|(_, b)| *b).unwrap_or_default();
            let d = now.since(&earlier);
            ClassRow {
                class: class.clone(),
                offered_bps: bps(d.offered()),
                forwarded_bps: bps(d.sent),
                dropped_bps: bps(d.queue_dropped),
            }
        })
        .collect();
    progress(opts.progress, &format!("{}: stopping the network", policy.name()));
    drop(net);
    Ok(PolicyRun { policy, protected_share: flows[0].goodput_bps as f64 / guarantee as f64, classes, flows })
}

fn attack_bps(capacity: u64) -> u64 {
    ATTACK.iter().map(|f| f.rate_bps(capacity)).sum()
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topology_gives_the_protected_as_a_tenth_of_the_congested_link() {
        let t = scenario::topology().unwrap();
        let (capacity, guarantee) = congested_link(&t).unwrap();
        assert_eq!((capacity, guarantee), (10_000_000, 1_000_000));
        assert_eq!(PROTECTED.rate_bps(capacity), guarantee, "the protected AS sends at its guarantee");
    }

    #[test]
    fn the_fifo_topology_differs_only_in_the_congested_routers_class_table() {
        let t = scenario::topology().unwrap();
        let fifo: Topology = toml::from_str(&topology_for(&t, Policy::Fifo).unwrap()).unwrap();
        let zlane: Topology = toml::from_str(&topology_for(&t, Policy::Zlane).unwrap()).unwrap();
        assert_eq!(zlane, t, "the scenario's own table is zlane's");
        let ia: IsdAsn = CONGESTED_AS.parse().unwrap();
        let mut back = fifo.clone();
        back.ases.iter_mut().find(|a| a.ia == ia).unwrap().router.link_class_table = Some("zlane".into());
        assert_eq!(back, t);
    }

    #[test]
    fn each_policy_is_a_router_config_the_router_loads() {
        let t = scenario::topology().unwrap();
        let ia: IsdAsn = CONGESTED_AS.parse().unwrap();
        for (policy, link_policy) in
            [(Policy::Zlane, aviary_qos::LinkPolicy::BoundedShares), (Policy::Fifo, aviary_qos::LinkPolicy::Fifo)]
        {
            let dir = aviary_scratch::ScratchDir::new(&format!("zlane-lab-{}", policy.name()));
            let file = dir.join(TOPOLOGY_FILE);
            std::fs::write(&file, topology_for(&t, policy).unwrap()).unwrap();
            let layout = RunLayout::write(&file, &dir, 53000).unwrap();
            let path = layout.ases[&ia].dir.join("router.toml");
            let router = aviary_node::config::RouterConfig::load(&path).unwrap();
            let tables = router.class_tables("router.toml").unwrap();
            let congested = router.interfaces.iter().find(|f| f.id == CONGESTED_INTERFACE).unwrap();
            assert_eq!(congested.class_table, policy.name());
            assert_eq!(tables[policy.name()].policy(), link_policy);
            assert_eq!(
                router.guaranteed_bounds("router.toml").unwrap().len(),
                router.interfaces.len(),
                "μ_G everywhere"
            );
        }
    }
}
