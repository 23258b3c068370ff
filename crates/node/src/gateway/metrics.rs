//! What the gateway did, at `GET /metrics` (Prometheus text) and `GET /v1/status` (JSON):
//! per host (label `host`, its address) the packets and bytes forwarded with the QoS flag
//! (`compliant`), beyond its rate (`over_rate`) and dropped by the `drop` policy, and the same
//! for the hosts that found the host table full, together (`untracked_host_packets`); per reason
//! the packets dropped; the packets forwarded to the router; and the Level-1 keys in place.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aviary_scion::{HostAddr, IsdAsn};
use aviary_zlane::gateway::Gateway;

use crate::clock::unix_s;
use crate::metrics::{process_gauges, Exposition, Kind, MetricsError, MetricsServer, CONTENT_TYPE};

/// The process's own counters, beside the core's.
#[derive(Clone, Copy, Debug, Default)]
pub struct IoCounters {
    /// Datagrams longer than the receive buffer, dropped.
    pub truncated: u64,
    pub forwarded_flagged: u64,
    pub forwarded_unflagged: u64,
    /// Datagrams to the router the kernel refused or had no room for.
    pub send_errors: u64,
}

/// The gateway core and the process's counters, shared by the packet loop and the endpoint.
pub struct GatewayState {
    pub gateway: Gateway,
    pub io: IoCounters,
    key_errors: Arc<AtomicU64>,
    started_unix_s: u64,
}

impl GatewayState {
    pub fn new(gateway: Gateway, key_errors: Arc<AtomicU64>) -> Self {
        Self { gateway, io: IoCounters::default(), key_errors, started_unix_s: unix_s() }
    }

    pub fn prometheus(&self) -> String {
        let ia = self.gateway.ia().to_string();
        let l = [("ia", ia.as_str())];
        let mut out = Exposition::new();
        let mut hosts: Vec<_> = self.gateway.hosts().map(|(h, c)| (host_label(&h), *c)).collect();
        hosts.sort_by(|a, b| a.0.cmp(&b.0));
        let mut f = out.family(
            "aviary_zlane_gateway_host_packets_total",
            Kind::Counter,
            "Packets of each host, by outcome: compliant (flagged, within its rate), over_rate \
             (beyond it: unflagged or dropped), dropped (over-rate under the drop policy).",
        );
        for (h, c) in &hosts {
            for (outcome, n) in
                [("compliant", c.compliant_packets), ("over_rate", c.over_rate_packets), ("dropped", c.dropped_packets)]
            {
                f.sample(&[("ia", &ia), ("host", h), ("outcome", outcome)], n);
            }
        }
        let mut f = out.family(
            "aviary_zlane_gateway_host_bytes_total",
            Kind::Counter,
            "Bytes of each host, by outcome (compliant, over_rate).",
        );
        for (h, c) in &hosts {
            for (outcome, n) in [("compliant", c.compliant_bytes), ("over_rate", c.over_rate_bytes)] {
                f.sample(&[("ia", &ia), ("host", h), ("outcome", outcome)], n);
            }
        }
        let u = self.gateway.untracked_hosts();
        let mut f = out.family(
            "aviary_zlane_gateway_untracked_host_packets_total",
            Kind::Counter,
            "Packets of hosts that found the host table full (still held to their group's rate), \
             together, by outcome; non-zero means the table is too small for the AS's hosts.",
        );
        for (outcome, n) in
            [("compliant", u.compliant_packets), ("over_rate", u.over_rate_packets), ("dropped", u.dropped_packets)]
        {
            f.sample(&[("ia", &ia), ("outcome", outcome)], n);
        }
        let mut f = out.family("aviary_zlane_gateway_drops_total", Kind::Counter, "Packets dropped, by reason.");
        for (reason, n) in self.gateway.drops() {
            f.sample(&[("ia", &ia), ("reason", reason)], n);
        }
        f.sample(&[("ia", &ia), ("reason", "truncated")], self.io.truncated);
        let mut f = out.family(
            "aviary_zlane_gateway_forwarded_packets_total",
            Kind::Counter,
            "Packets sent on to the router, with the QoS flag (flag=\"set\") or without.",
        );
        f.sample(&[("ia", &ia), ("flag", "set")], self.io.forwarded_flagged);
        f.sample(&[("ia", &ia), ("flag", "clear")], self.io.forwarded_unflagged);
        out.family(
            "aviary_zlane_gateway_no_path_keys_total",
            Kind::Counter,
            "Packets within their rate sent on without the flag: an AS on their path had no key in place.",
        )
        .sample(&l, self.gateway.no_path_keys());
        out.family("aviary_zlane_gateway_send_errors_total", Kind::Counter, "Packets the kernel did not take.")
            .sample(&l, self.io.send_errors);
        out.family(
            "aviary_zlane_gateway_keyed_ases",
            Kind::Gauge,
            "ASes whose Level-1 key for this AS is in place for the current DRKey epoch.",
        )
        .sample(&l, self.gateway.path_keys().keyed_ases() as u64);
        out.family(
            "aviary_zlane_gateway_key_fetch_errors_total",
            Kind::Counter,
            "Level-1 key requests to the AS's control service that failed.",
        )
        .sample(&l, self.key_errors.load(Ordering::Relaxed));
        process_gauges(&mut out, "aviary_zlane_gateway", &l, self.started_unix_s);
        out.finish()
    }
}

/// A host's address as its label: the IP address (a service address as `svc:N`).
fn host_label(h: &HostAddr) -> String {
    match h {
        HostAddr::V4(a) => a.to_string(),
        HostAddr::V6(a) => a.to_string(),
        HostAddr::Svc(s) => format!("svc:{s}"),
    }
}

/// Serves `/metrics` and `/v1/status` on `addr` until the returned server is dropped.
pub fn serve(
    addr: std::net::SocketAddr,
    ia: IsdAsn,
    state: Arc<Mutex<GatewayState>>,
) -> Result<MetricsServer, MetricsError> {
    MetricsServer::start(
        addr,
        Box::new(move |path| match path {
            "/metrics" => Some((state.lock().expect("poisoned").prometheus(), CONTENT_TYPE)),
            "/v1/status" => Some((serde_json::json!({ "ia": ia }).to_string(), "application/json")),
            _ => None,
        }),
    )
}
