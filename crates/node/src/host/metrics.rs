//! What a host agent shows on `--metrics ADDR` while it runs: the sender's progress and the
//! sink's per-flow accounting, as Prometheus text.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::send::FlowKind;
use super::sink::Sink;
use crate::metrics::{process_gauges, Exposition, Histogram, Kind, MetricsError, MetricsServer, Render, CONTENT_TYPE};

/// Upper bounds of the one-way delay histogram, s: 0.5 ms to 5 s.
pub const DELAY_BOUNDS_S: &[f64] = &[0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0];

/// A fresh one-way delay histogram.
pub fn delay_histogram() -> Histogram {
    Histogram::new(DELAY_BOUNDS_S)
}

/// The sender's counters, updated by its send loop and read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct SenderProgress {
    pub sent_packets: AtomicU64,
    pub sent_bytes: AtomicU64,
    pub skipped_packets: AtomicU64,
    pub send_errors: AtomicU64,
    /// The most a sent packet was behind its schedule, ns.
    pub max_lateness_ns: AtomicU64,
}

impl SenderProgress {
    pub fn sent(&self, bytes: usize, lateness_ns: u64) {
        self.sent_packets.fetch_add(1, Ordering::Relaxed);
        self.sent_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.max_lateness_ns.fetch_max(lateness_ns, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn prometheus(&self, host: &str, flow: &str, kind: FlowKind, started_unix_s: u64) -> String {
        let kind = match kind {
            FlowKind::Reserved => "reserved",
            FlowKind::BestEffort => "best_effort",
            FlowKind::Attack => "attack",
        };
        let l = [("host", host), ("flow", flow), ("kind", kind)];
        let mut out = Exposition::new();
        let c = Kind::Counter;
        let get = Self::get;
        out.family("aviary_host_sent_packets_total", c, "Packets sent.").sample(&l, get(&self.sent_packets));
        out.family("aviary_host_sent_bytes_total", c, "Whole SCION packet bytes sent.")
            .sample(&l, get(&self.sent_bytes));
        out.family("aviary_host_skipped_packets_total", c, "Send slots skipped because the sender fell behind.")
            .sample(&l, get(&self.skipped_packets));
        out.family("aviary_host_send_errors_total", c, "Packets the socket refused.")
            .sample(&l, get(&self.send_errors));
        out.family(
            "aviary_host_send_lateness_max_seconds",
            Kind::Gauge,
            "The most a sent packet was behind its schedule.",
        )
        .sample(&l, get(&self.max_lateness_ns) as f64 / 1e9);
        process_gauges(&mut out, "aviary_host", &l[..1], started_unix_s);
        out.finish()
    }
}

impl Sink {
    /// The sink's accounting so far, per flow.
    pub fn prometheus(&self, host: &str, started_unix_s: u64) -> String {
        let mut out = Exposition::new();
        let flows: Vec<_> = self.flows().collect();
        let per_flow =
            |out: &mut Exposition, name: &str, kind: Kind, help: &str, f: &dyn Fn(&super::sink::FlowState) -> u64| {
                let mut fam = out.family(name, kind, help);
                for (flow, s) in &flows {
                    fam.sample(&[("host", host), ("flow", flow)], f(s));
                }
            };
        let c = Kind::Counter;
        per_flow(&mut out, "aviary_host_received_packets_total", c, "Distinct packets received.", &|s| s.received());
        per_flow(&mut out, "aviary_host_received_bytes_total", c, "Whole SCION packet bytes received.", &|s| s.bytes);
        per_flow(&mut out, "aviary_host_duplicate_packets_total", c, "Packets received again.", &|s| s.duplicates);
        per_flow(
            &mut out,
            "aviary_host_lost_packets",
            Kind::Gauge,
            "Sequence numbers up to the highest received that never arrived.",
            &|s| s.lost(),
        );
        per_flow(
            &mut out,
            "aviary_host_reordered_packets_total",
            c,
            "Packets that arrived after a packet with a higher sequence number.",
            &|s| s.reordered,
        );
        let mut fam = out.family(
            "aviary_host_one_way_delay_seconds",
            Kind::Histogram,
            "One-way delay: receive time minus the send timestamp.",
        );
        for (flow, s) in &flows {
            fam.histogram(&[("host", host), ("flow", flow)], &s.delay);
        }
        let (malformed, bad_checksum, untracked) = self.rejected();
        let l = [("host", host)];
        out.family(
            "aviary_host_malformed_datagrams_total",
            c,
            "Datagrams that are not SCION/UDP with a payload header.",
        )
        .sample(&l, malformed);
        out.family("aviary_host_bad_checksum_datagrams_total", c, "Datagrams with a wrong UDP checksum.")
            .sample(&l, bad_checksum);
        out.family("aviary_host_untracked_packets_total", c, "Packets of flows beyond the tracked maximum.")
            .sample(&l, untracked);
        process_gauges(&mut out, "aviary_host", &l, started_unix_s);
        out.finish()
    }
}

/// Serves the sender's `/metrics` on `addr` until the server is dropped.
pub fn serve_sender_metrics(
    addr: SocketAddr,
    host: &str,
    flow: &str,
    kind: FlowKind,
    progress: Arc<SenderProgress>,
) -> Result<MetricsServer, MetricsError> {
    let (host, flow, started) = (host.to_owned(), flow.to_owned(), crate::clock::unix_s());
    let render: Box<Render> = Box::new(move |path| {
        (path == "/metrics").then(|| (progress.prometheus(&host, &flow, kind, started), CONTENT_TYPE))
    });
    let server = MetricsServer::start(addr, render)?;
    tracing::info!(metrics = %server.addr(), "sender metrics");
    Ok(server)
}

/// Serves the sink's `/metrics` on `addr` until the server is dropped.
pub fn serve_sink_metrics(addr: SocketAddr, host: &str, sink: Arc<Mutex<Sink>>) -> Result<MetricsServer, MetricsError> {
    let (host, started) = (host.to_owned(), crate::clock::unix_s());
    let render: Box<Render> = Box::new(move |path| {
        (path == "/metrics")
            .then(|| (sink.lock().map(|s| s.prometheus(&host, started)).unwrap_or_default(), CONTENT_TYPE))
    });
    let server = MetricsServer::start(addr, render)?;
    tracing::info!(metrics = %server.addr(), "sink metrics");
    Ok(server)
}
