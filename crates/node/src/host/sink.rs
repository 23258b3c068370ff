//! The sink: receives the SCION/UDP packets the border router delivers and reports, per flow,
//! what arrived, how fast and how late.
//!
//! Bytes are whole SCION packets, as the sender counts them. A packet whose (flow, sequence)
//! was seen before counts only as a duplicate. Delays are `receive time − send timestamp` on
//! CLOCK_REALTIME, so across machines they are only as good as clock synchronisation.

use std::collections::{BTreeMap, HashSet};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use aviary_scion::ScionUdpView;
use serde::{Deserialize, Serialize};

use super::metrics::{delay_histogram, serve_sink_metrics};
use super::payload::PayloadHeader;
use super::{unix_ns, write_json};
use crate::config::HostConfig;
use crate::metrics::Histogram;

const MS: u64 = 1_000_000;
/// Flows tracked at most; packets of further flows count as `untracked`.
const MAX_FLOWS: usize = 1024;
/// Timeline bins kept at most per flow.
const MAX_BINS: usize = 1 << 20;
/// Receive buffer asked of the kernel, so that bursts are not lost at the sink itself.
const RECV_BUFFER: libc::c_int = 8 << 20;

/// `aviary host sink`.
#[derive(Clone, Debug, clap::Args)]
pub struct SinkOptions {
    /// UDP port to receive on (the SCION/UDP destination port of the flows).
    #[arg(long)]
    pub listen_port: u16,
    /// Stop after this long [default: on SIGTERM or SIGINT].
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// Write the sink report (JSON) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Width of the goodput timeline's bins.
    #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    pub bin_ms: u64,
    /// Serve Prometheus metrics on this address (`/metrics`) while receiving.
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
}

/// What one flow delivered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowReport {
    /// Distinct packets (duplicates are not counted here).
    pub received_packets: u64,
    pub received_bytes: u64,
    pub duplicates: u64,
    pub max_seq: u64,
    /// Sequence numbers up to `max_seq` that never arrived. Losses after the last packet
    /// received are invisible here: the sender's report has the count sent.
    pub lost: u64,
    /// Unix ns of the first and the last packet received.
    pub first_rx_ns: u64,
    pub last_rx_ns: u64,
    /// `received_bytes · 8` over `first_rx..last_rx` (0 with a single packet). A caller that
    /// knows the sender's duration (the demo) may divide by that instead.
    pub goodput_bps: u64,
    /// One-way delay percentiles (nearest rank) and maximum.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Goodput per bin since the sink started; every flow has as many bins as the longest.
    pub timeline_bps: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SinkReport {
    /// Unix ns at which the sink started (the start of timeline bin 0).
    pub started_ns: u64,
    pub bin_ms: u64,
    pub flows: BTreeMap<String, FlowReport>,
    /// Datagrams that are not SCION/UDP packets with a payload header.
    pub malformed: u64,
    pub bad_checksum: u64,
    /// Packets of flows beyond the tracked maximum.
    pub untracked: u64,
}

pub(super) struct FlowState {
    seen: HashSet<u64>,
    pub(super) bytes: u64,
    pub(super) duplicates: u64,
    /// Packets that arrived after one with a higher sequence number.
    pub(super) reordered: u64,
    max_seq: u64,
    first_rx_ns: u64,
    last_rx_ns: u64,
    delays_us: Vec<u32>,
    /// Bytes per timeline bin.
    bins: Vec<u64>,
    pub(super) delay: Histogram,
}

impl Default for FlowState {
    fn default() -> Self {
        Self {
            seen: HashSet::new(),
            bytes: 0,
            duplicates: 0,
            reordered: 0,
            max_seq: 0,
            first_rx_ns: 0,
            last_rx_ns: 0,
            delays_us: Vec::new(),
            bins: Vec::new(),
            delay: delay_histogram(),
        }
    }
}

impl FlowState {
    pub(super) fn received(&self) -> u64 {
        self.seen.len() as u64
    }

    pub(super) fn lost(&self) -> u64 {
        (self.max_seq + 1).saturating_sub(self.received())
    }
}

/// The sink's accounting (sans-IO: datagrams and receive times go in).
pub struct Sink {
    started_ns: u64,
    bin_ns: u64,
    flows: BTreeMap<String, FlowState>,
    malformed: u64,
    bad_checksum: u64,
    untracked: u64,
}

impl Sink {
    pub fn new(started_ns: u64, bin_ms: u64) -> Self {
        Self {
            started_ns,
            bin_ns: bin_ms.max(1) * MS,
            flows: BTreeMap::new(),
            malformed: 0,
            bad_checksum: 0,
            untracked: 0,
        }
    }

    /// Accounts one datagram received at `rx_ns` (Unix ns). Any input is fine.
    pub fn receive(&mut self, datagram: &[u8], rx_ns: u64) {
        let Ok(view) = ScionUdpView::new_checked(datagram) else {
            self.malformed += 1;
            return;
        };
        if view.verify().is_err() {
            self.bad_checksum += 1;
            return;
        }
        let Ok(h) = PayloadHeader::parse(view.payload()) else {
            self.malformed += 1;
            return;
        };
        if !self.flows.contains_key(h.flow) && self.flows.len() >= MAX_FLOWS {
            self.untracked += 1;
            return;
        }
        let f = self.flows.entry(h.flow.to_owned()).or_default();
        if !f.seen.insert(h.seq) {
            f.duplicates += 1;
            return;
        }
        let len = datagram.len() as u64;
        if f.seen.len() == 1 {
            f.first_rx_ns = rx_ns;
        } else if h.seq < f.max_seq {
            f.reordered += 1;
        }
        f.bytes += len;
        f.max_seq = f.max_seq.max(h.seq);
        f.last_rx_ns = f.last_rx_ns.max(rx_ns);
        let delay_ns = rx_ns.saturating_sub(h.sent_ns);
        f.delays_us.push(u32::try_from(delay_ns / 1000).unwrap_or(u32::MAX));
        f.delay.observe(delay_ns as f64 / 1e9);
        let bin = (rx_ns.saturating_sub(self.started_ns) / self.bin_ns) as usize;
        if bin < MAX_BINS {
            if f.bins.len() <= bin {
                f.bins.resize(bin + 1, 0);
            }
            f.bins[bin] += len;
        }
    }

    pub(super) fn flows(&self) -> impl Iterator<Item = (&str, &FlowState)> {
        self.flows.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Datagrams rejected: (malformed, bad checksum, untracked).
    pub(super) fn rejected(&self) -> (u64, u64, u64) {
        (self.malformed, self.bad_checksum, self.untracked)
    }

    pub fn report(&self) -> SinkReport {
        let nbins = self.flows.values().map(|f| f.bins.len()).max().unwrap_or(0);
        let flows = self
            .flows
            .iter()
            .map(|(name, f)| {
                let mut d = f.delays_us.clone();
                d.sort_unstable();
                let pct = |p: f64| {
                    let rank = ((p * d.len() as f64).ceil() as usize).clamp(1, d.len());
                    f64::from(d[rank - 1]) / 1e3
                };
                let received = f.received();
                let active_ns = f.last_rx_ns - f.first_rx_ns;
                let mut timeline: Vec<u64> = f.bins.iter().map(|b| b * 8 * 1_000_000_000 / self.bin_ns).collect();
                timeline.resize(nbins, 0);
                let report = FlowReport {
                    received_packets: received,
                    received_bytes: f.bytes,
                    duplicates: f.duplicates,
                    max_seq: f.max_seq,
                    lost: f.lost(),
                    first_rx_ns: f.first_rx_ns,
                    last_rx_ns: f.last_rx_ns,
                    goodput_bps: if active_ns == 0 { 0 } else { (f.bytes as f64 * 8e9 / active_ns as f64) as u64 },
                    p50_ms: pct(0.5),
                    p99_ms: pct(0.99),
                    max_ms: pct(1.0),
                    timeline_bps: timeline,
                };
                (name.clone(), report)
            })
            .collect();
        SinkReport {
            started_ns: self.started_ns,
            bin_ms: self.bin_ns / MS,
            flows,
            malformed: self.malformed,
            bad_checksum: self.bad_checksum,
            untracked: self.untracked,
        }
    }
}

/// Receives on `cfg.addr:--listen-port` until `--duration-ms` has passed or a SIGTERM/SIGINT
/// arrives; writes the report to `--report` if given.
pub fn run_sink(cfg: &HostConfig, opts: &SinkOptions) -> anyhow::Result<SinkReport> {
    // The host agent is a process of its own: a signal ends it, after the report is written.
    let stop = crate::signals::stop_flag();
    let socket = UdpSocket::bind((cfg.addr, opts.listen_port))
        .with_context(|| format!("cannot bind {}:{}", cfg.addr, opts.listen_port))?;
    // SAFETY: a valid socket and option value; failure only leaves the default buffer.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&RECV_BUFFER as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    // Wake up regularly to notice the deadline and signals.
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    tracing::info!(host = %cfg.name, addr = %socket.local_addr()?, "sink listening");
    let deadline = opts.duration_ms.map(|d| Instant::now() + Duration::from_millis(d));
    let sink = Arc::new(Mutex::new(Sink::new(unix_ns(), opts.bin_ms)));
    let _metrics = opts.metrics.map(|addr| serve_sink_metrics(addr, &cfg.name, sink.clone())).transpose()?;
    let mut buf = vec![0u8; 1 << 16];
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => sink.lock().expect("poisoned").receive(&buf[..n], unix_ns()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e).context("receiving"),
        }
    }
    let report = sink.lock().expect("poisoned").report();
    if let Some(path) = &opts.report {
        write_json(path, &report)?;
    }
    Ok(report)
}
