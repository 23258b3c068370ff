//! `aviary lab forward`: the forwarding rate of one router process (`aviary router`) over
//! loopback UDP, beside a bare UDP relay measured in the same run with the same traffic.
//!
//! The router has one AS and two inter-AS links. The generator plays the neighbour on the
//! ingress link and offers pre-built SCION packets (standard, or Hummingbird with a flyover at
//! this router) open-loop; the sink plays the neighbour on the egress link, counts what arrives
//! in a window after a warm-up and checks that every packet left the router at the next hop.
//! The relay ([`relay`], `aviary lab forward-relay`) gets the same packets and sends them on
//! unchanged. Rows: packets per second at the sink for the router and for the relay, and their
//! ratio (the goal: the router at ≥ 80 % of the relay with one worker).

mod packets;
mod process;
pub mod relay;
mod report;
mod traffic;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use aviary_node::config::{InterfaceConfig, RouterConfig};
use aviary_node::underlay::BatchSocket;
use serde::Serialize;

use packets::{meta_word, Kind, Testbed, EGRESS, INGRESS};
use process::Forwarder;
pub use report::{html, table, PAPER_MPPS_PER_CORE};
use traffic::{generate, sink, Offer, SinkCounters};

/// Payload sizes of the rows (the Hummingbird paper's Fig. 5 has 100, 500, 1000 and 1500 B).
pub const PAYLOADS: [usize; 3] = [100, 500, 1500];
/// Capacity of the router's links: far above what loopback carries, so that the egress
/// scheduler never holds packets back.
const LINK_BPS: u64 = 1_000_000_000_000;
/// Longest wait for a forwarder to pass its first packet.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// The sink is quiet once nothing has arrived for this long.
const QUIET: Duration = Duration::from_millis(100);
/// Longest wait for a forwarder to drain what its socket held when the generator stopped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long each measurement offers load.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Effort {
    /// Load before the window, so that sockets, caches and queues are in their steady state.
    pub warmup: Duration,
    /// The measurement window.
    pub window: Duration,
}

impl Effort {
    pub const FULL: Effort = Effort { warmup: Duration::from_secs(1), window: Duration::from_secs(3) };
    pub const QUICK: Effort = Effort { warmup: Duration::from_millis(150), window: Duration::from_millis(250) };
}

#[derive(Clone, Debug)]
pub struct ForwardOptions {
    /// The `aviary` binary that runs the router and the relay.
    pub exe: PathBuf,
    /// Run directory: the router's config, the logs, `report.html`.
    pub dir: PathBuf,
    /// First of the seven loopback ports the run uses.
    pub port_base: u16,
    pub effort: Effort,
    /// Forwarding worker counts of the router to measure (one row set per count).
    pub workers: Vec<usize>,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// One row of `--json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// `scion` or `flyover`.
    pub name: &'static str,
    pub payload_bytes: usize,
    pub workers: usize,
    /// Packets per second the sink received from the router, millions.
    pub mpps: f64,
    /// The same packets in Gbit/s of SCION packets (header and payload: the underlay's UDP
    /// payload).
    pub gbps: f64,
    /// Packets per second the sink received from the bare relay, millions.
    pub relay_mpps: f64,
    pub ratio_to_relay: f64,
}

/// One forwarder's measurement.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Measurement {
    pub mpps: f64,
    pub gbps: f64,
    /// What the generator handed to the kernel, millions of packets per second.
    pub offered_mpps: f64,
    /// CPU time of the forwarder process over the window, in cores (1.0: one core busy).
    pub cores: f64,
}

impl Measurement {
    /// Packets per second per core of CPU the forwarder used, millions.
    pub fn mpps_per_core(&self) -> f64 {
        if self.cores > 0.0 {
            self.mpps / self.cores
        } else {
            0.0
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    pub row: Row,
    pub router: Measurement,
    pub relay: Measurement,
}

/// What the router made of the flyover packets over the whole run (its counters).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FlyoverOutcome {
    /// Forwarded as reserved traffic.
    pub reserved: u64,
    /// Forwarded best effort: stale, inactive, over the rate or duplicates.
    pub demoted: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ForwardReport {
    pub machine: String,
    pub effort: Effort,
    pub measured: Vec<Measured>,
    pub flyovers: FlyoverOutcome,
    pub run_dir: String,
    pub report_html: String,
}

impl ForwardReport {
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.measured.iter().map(|m| &m.row)
    }
}

fn progress(on: bool, msg: &str) {
    if on {
        eprintln!("[aviary lab forward] {msg}");
    }
}

pub(crate) fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The run's loopback addresses.
#[derive(Clone, Copy, Debug)]
struct Ports {
    internal: SocketAddr,
    management: SocketAddr,
    router_in: SocketAddr,
    generator: SocketAddr,
    router_out: SocketAddr,
    sink: SocketAddr,
    relay: SocketAddr,
}

impl Ports {
    fn new(base: u16) -> anyhow::Result<Self> {
        if base > u16::MAX - 7 {
            bail!("--port-base {base}: the run needs seven ports from there");
        }
        let at = |k: u16| SocketAddr::from(([127, 0, 0, 1], base + k));
        Ok(Self {
            internal: at(0),
            management: at(1),
            router_in: at(2),
            generator: at(3),
            router_out: at(4),
            sink: at(5),
            relay: at(6),
        })
    }
}

/// The router's config: the chain's transit AS with its ingress link from the generator and
/// its egress link to the sink, forwarding on `workers` threads.
fn router_config(bed: &Testbed, ports: &Ports, dir: &Path, workers: usize) -> anyhow::Result<PathBuf> {
    let (ia, secret, upstream, downstream) = bed.router_as();
    let secret_file = dir.join("master_secret.hex");
    std::fs::write(&secret_file, hex_of(&secret))?;
    let link = |id, local, remote, neighbor| InterfaceConfig {
        id,
        local,
        remote,
        neighbor,
        capacity_bps: LINK_BPS,
        delay_ms: 0.0,
        class_table: aviary_node::router::classes::DEFAULT_TABLE.to_owned(),
    };
    let cfg = RouterConfig {
        ia,
        master_secret_file: "master_secret.hex".into(),
        internal: ports.internal,
        management: ports.management,
        operator_token_file: None,
        hummingbird: Default::default(),
        queues: Default::default(),
        classes: Default::default(),
        class_table: Default::default(),
        zlane: None,
        pathval: None,
        glwp: None,
        interfaces: vec![
            link(INGRESS, ports.router_in, ports.generator, upstream),
            link(EGRESS, ports.router_out, ports.sink, downstream),
        ],
        scmp: Default::default(),
        workers: Some(workers),
        drkey_epochs: Default::default(),
    };
    let path = dir.join(format!("router-w{workers}.toml"));
    aviary_node::config::write_toml(&path, &cfg)?;
    Ok(path)
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The lab's sockets and the sink's counters, shared by every measurement.
struct Bench<'a> {
    effort: Effort,
    generator: &'a BatchSocket,
    counters: &'a SinkCounters,
}

impl Bench<'_> {
    /// Sends a standard packet every 20 ms until one comes through `fwd` to the sink.
    fn wait_until_forwarding(&self, fwd: &mut Forwarder, to: SocketAddr) -> anyhow::Result<()> {
        let now = unix_ns();
        let probe = Testbed::new(now).pool(Kind::Scion, 100, now).swap_remove(0);
        self.counters.expect(None);
        let before = self.counters.snapshot().packets;
        let started = Instant::now();
        while self.counters.snapshot().packets == before {
            fwd.check_running()?;
            if started.elapsed() > START_TIMEOUT {
                bail!("the {} forwarded nothing in {START_TIMEOUT:?}; its log: {}", fwd.name, fwd.log.display());
            }
            self.generator.send_to(&probe, to)?;
            std::thread::sleep(Duration::from_millis(20));
        }
        self.wait_until_quiet(fwd)
    }

    /// Waits until nothing reaches the sink any more: a forwarder that fell behind goes on
    /// sending what its socket held after the generator stopped, and none of that may count
    /// in the next measurement (another forwarder's, or another kind's, packets).
    fn wait_until_quiet(&self, fwd: &Forwarder) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut last = self.counters.snapshot().packets;
        loop {
            std::thread::sleep(QUIET);
            let now = self.counters.snapshot().packets;
            if now == last {
                return Ok(());
            }
            if started.elapsed() > DRAIN_TIMEOUT {
                bail!("the {} still sends {DRAIN_TIMEOUT:?} after the generator stopped", fwd.name);
            }
            last = now;
        }
    }

    /// Offers `offer` to `fwd` at `to` and measures what reaches the sink in the window;
    /// every packet must carry `expected` as its path's meta word.
    fn measure(
        &self,
        fwd: &mut Forwarder,
        to: SocketAddr,
        offer: &Offer,
        expected: u32,
    ) -> anyhow::Result<Measurement> {
        self.counters.expect(Some(expected));
        let (stop, sent) = (AtomicBool::new(false), AtomicU64::new(0));
        let m = std::thread::scope(|s| {
            let gen = s.spawn(|| generate(self.generator, to, offer, &sent, &stop));
            let window = (|| {
                std::thread::sleep(self.effort.warmup);
                let (s0, g0, c0, t0) =
                    (self.counters.snapshot(), sent.load(Relaxed), fwd.cpu_seconds()?, Instant::now());
                std::thread::sleep(self.effort.window);
                let (s1, g1, c1) = (self.counters.snapshot(), sent.load(Relaxed), fwd.cpu_seconds()?);
                anyhow::Ok((s1.since(&s0), g1 - g0, c1 - c0, t0.elapsed().as_secs_f64()))
            })();
            stop.store(true, Relaxed);
            gen.join().expect("the generator thread").context("generator")?;
            window
        });
        let (got, offered, cpu, secs) = m?;
        self.wait_until_quiet(fwd)?;
        fwd.check_running()?;
        let what = format!("{} {} B through the {}", offer.kind.name(), offer.payload, fwd.name);
        if got.packets == 0 {
            bail!("{what}: no packet reached the sink; the log: {}", fwd.log.display());
        }
        if got.invalid > 0 {
            bail!(
                "{what}: {} of {} packets at the sink were not SCION packets with the path meta word {expected:#010x} \
                 (CurrINF and CurrHF as the {} leaves them)",
                got.invalid,
                got.packets,
                fwd.name
            );
        }
        Ok(Measurement {
            mpps: got.packets as f64 / secs / 1e6,
            gbps: got.bytes as f64 * 8.0 / secs / 1e9,
            offered_mpps: offered as f64 / secs / 1e6,
            cores: cpu / secs,
        })
    }
}

/// The meta words of a packet of `kind` before and after the router under test.
fn meta_words(kind: Kind, payload: usize) -> anyhow::Result<(u32, u32)> {
    let now = unix_ns();
    let mut bed = Testbed::new(now);
    let mut pkt = bed.pool(kind, payload, now).swap_remove(0);
    let before = meta_word(&pkt).context("a packet of the pool")?;
    let v = bed.reference_router().process(&mut pkt, INGRESS, now);
    if !matches!(v, aviary_qos::Verdict::Forward { egress: EGRESS, .. }) {
        bail!("the router under test would not forward the {} packets: {v:?}", kind.name());
    }
    Ok((before, meta_word(&pkt).context("the forwarded packet")?))
}

/// Runs every row: per worker count, kind and payload size, the router and then the relay.
pub fn run(opts: &ForwardOptions) -> anyhow::Result<ForwardReport> {
    let ports = Ports::new(opts.port_base)?;
    std::fs::create_dir_all(&opts.dir).with_context(|| format!("cannot create {}", opts.dir.display()))?;
    let bed = Testbed::new(unix_ns());
    let generator = BatchSocket::bind(ports.generator).context("generator")?;
    let sink_sock = BatchSocket::bind(ports.sink).context("sink")?;
    let counters = SinkCounters::new();
    let stop_sink = AtomicBool::new(false);
    let bench = Bench { effort: opts.effort, generator: &generator, counters: &counters };
    let (measured, flyovers) = std::thread::scope(|s| {
        let sink_thread = s.spawn(|| sink(&sink_sock, &counters, &stop_sink));
        let result = run_rows(opts, &bench, &bed, &ports);
        stop_sink.store(true, Relaxed);
        sink_thread.join().expect("the sink thread").context("sink")?;
        result
    })?;
    let html_path = opts.dir.join("report.html");
    let report = ForwardReport {
        machine: crate::machine::describe(),
        effort: opts.effort,
        measured,
        flyovers,
        run_dir: opts.dir.display().to_string(),
        report_html: html_path.display().to_string(),
    };
    std::fs::write(&html_path, html(&report)).with_context(|| format!("cannot write {}", html_path.display()))?;
    Ok(report)
}

fn run_rows(
    opts: &ForwardOptions,
    bench: &Bench<'_>,
    bed: &Testbed,
    ports: &Ports,
) -> anyhow::Result<(Vec<Measured>, FlyoverOutcome)> {
    let exe = &opts.exe;
    let relay_args = ["lab", "forward-relay", "--listen", &ports.relay.to_string(), "--to", &ports.sink.to_string()]
        .map(String::from);
    let mut relay = Forwarder::start("relay", exe, &relay_args, opts.dir.join("relay.log"))?;
    bench.wait_until_forwarding(&mut relay, ports.relay)?;
    let mut measured = Vec::new();
    let mut flyovers = FlyoverOutcome::default();
    for &workers in &opts.workers {
        let cfg = router_config(bed, ports, &opts.dir, workers)?;
        let args = ["router".to_owned(), "--config".to_owned(), cfg.display().to_string()];
        let mut router = Forwarder::start("router", exe, &args, opts.dir.join(format!("router-w{workers}.log")))?;
        progress(opts.progress, &format!("router with {workers} worker(s): {}", cfg.display()));
        bench.wait_until_forwarding(&mut router, ports.router_in)?;
        for kind in Kind::ALL {
            for payload in PAYLOADS {
                let (before, after) = meta_words(kind, payload)?;
                let offer = Offer { kind, payload };
                let r = bench.measure(&mut router, ports.router_in, &offer, after)?;
                let b = bench.measure(&mut relay, ports.relay, &offer, before)?;
                progress(
                    opts.progress,
                    &format!("{} {payload} B: router {:.3} Mpps, relay {:.3} Mpps", kind.name(), r.mpps, b.mpps),
                );
                let row = Row {
                    name: kind.name(),
                    payload_bytes: payload,
                    workers,
                    mpps: r.mpps,
                    gbps: r.gbps,
                    relay_mpps: b.mpps,
                    ratio_to_relay: r.mpps / b.mpps,
                };
                measured.push(Measured { row, router: r, relay: b });
            }
        }
        // The router publishes its counters a few times a second.
        std::thread::sleep(Duration::from_millis(300));
        let metrics = crate::router_metrics::scrape(ports.management)?;
        flyovers.reserved += event_count(&metrics, "flyover_reserved_packets");
        flyovers.demoted += ["stale", "inactive", "over_rate", "duplicate"]
            .iter()
            .map(|c| event_count(&metrics, &format!("flyover_{c}_packets")))
            .sum::<u64>();
    }
    Ok((measured, flyovers))
}

/// A mechanism counter of the router's `/metrics` (0 if absent).
fn event_count(metrics: &str, counter: &str) -> u64 {
    let label = format!("counter=\"{counter}\"");
    metrics
        .lines()
        .filter(|l| l.starts_with("aviary_router_mechanism_events_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_router_config_is_one_the_router_loads_with_the_generator_and_sink_as_neighbours() {
        let dir = aviary_scratch::ScratchDir::new("forward-cfg");
        let ports = Ports::new(50_600).unwrap();
        let bed = Testbed::new(unix_ns());
        let path = router_config(&bed, &ports, &dir, 1).unwrap();
        let cfg = RouterConfig::load(&path).unwrap();
        assert_eq!(cfg.ia, bed.router_as().0);
        let link = |id: u16| cfg.interfaces.iter().find(|i| i.id == id).unwrap().clone();
        assert_eq!((link(INGRESS).local, link(INGRESS).remote), (ports.router_in, ports.generator));
        assert_eq!((link(EGRESS).local, link(EGRESS).remote), (ports.router_out, ports.sink));
        let secret = aviary_node::config::read_secret(&path, "master_secret_file", &cfg.master_secret_file).unwrap();
        assert_eq!(secret, bed.router_as().1);
        assert_eq!(cfg.worker_count(), 1);
        let two = RouterConfig::load(&router_config(&bed, &ports, &dir, 2).unwrap()).unwrap();
        assert_eq!(two.worker_count(), 2);
    }

    #[test]
    fn the_router_moves_every_kinds_meta_word() {
        for kind in Kind::ALL {
            let (before, after) = meta_words(kind, 100).unwrap();
            assert_ne!(before, after, "{kind:?}");
        }
    }

    #[test]
    fn flyover_counters_come_from_the_mechanism_events_only() {
        let text = "# HELP x\n\
            aviary_router_mechanism_events_total{ia=\"1-ff00:0:112\",mechanism=\"hummingbird\",counter=\"flyover_reserved_packets\"} 40\n\
            aviary_router_mechanism_events_total{ia=\"1-ff00:0:112\",mechanism=\"other\",counter=\"flyover_reserved_packets\"} 2\n\
            aviary_router_mechanism_events_total{ia=\"1-ff00:0:112\",mechanism=\"hummingbird\",counter=\"flyover_stale_packets\"} 7\n\
            aviary_router_received_packets_total{counter=\"flyover_reserved_packets\"} 1000\n";
        assert_eq!(event_count(text, "flyover_reserved_packets"), 42);
        assert_eq!(event_count(text, "flyover_stale_packets"), 7);
        assert_eq!(event_count(text, "flyover_duplicate_packets"), 0);
    }
}
