//! Counters of a border router, as the forwarding thread keeps them and as the management
//! API shows them (Prometheus text and JSON).

use std::collections::BTreeMap;
use std::fmt::Write;

use aviary_qos::{ClassStats, DropReason};
use aviary_scion::IsdAsn;
use serde::Serialize;

/// Drops that happen around the processor, in the router process itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum IoDrop {
    /// Datagram larger than the receive buffer.
    Oversized,
    /// Destined to this AS but with no host address and UDP port to deliver to.
    Undeliverable,
    /// The processor chose an egress without a configured link.
    NoLink,
}

impl IoDrop {
    pub const fn label(self) -> &'static str {
        match self {
            IoDrop::Oversized => "oversized_datagram",
            IoDrop::Undeliverable => "undeliverable",
            IoDrop::NoLink => "no_link",
        }
    }
}

/// Counters of one interface (0: the AS's inside).
#[derive(Clone, Debug, Default, Serialize)]
pub struct InterfaceStats {
    pub id: u16,
    pub neighbor: Option<IsdAsn>,
    pub capacity_bps: u64,
    pub delay_ms: f64,
    pub received_packets: u64,
    pub received_bytes: u64,
    /// Packets that arrived on this interface and were dropped, by reason label.
    pub drops: BTreeMap<&'static str, u64>,
    /// Egress counters by class (empty for the inside).
    pub priority: ClassSnapshot,
    pub best_effort: ClassSnapshot,
    /// Packets delivered to hosts (inside only).
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ClassSnapshot {
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub queue_dropped_packets: u64,
    pub queue_dropped_bytes: u64,
    pub queued_bytes: u64,
}

impl From<&ClassStats> for ClassSnapshot {
    fn from(s: &ClassStats) -> Self {
        Self {
            sent_packets: s.sent_packets,
            sent_bytes: s.sent_bytes,
            queue_dropped_packets: s.dropped_packets,
            queue_dropped_bytes: s.dropped_bytes,
            queued_bytes: s.queued_bytes,
        }
    }
}

impl InterfaceStats {
    pub fn count_drop(&mut self, reason: DropReason) {
        *self.drops.entry(reason.label()).or_default() += 1;
    }
    pub fn count_io_drop(&mut self, reason: IoDrop) {
        *self.drops.entry(reason.label()).or_default() += 1;
    }
}

/// What the management API shows; the forwarding thread publishes a fresh copy a few
/// times per second.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouterStatus {
    pub ia: Option<IsdAsn>,
    pub started_unix_s: u64,
    pub burst_ms: f64,
    pub interfaces: Vec<InterfaceStats>,
}

impl RouterStatus {
    /// Prometheus text exposition format.
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        let ia = self.ia.map(|i| i.to_string()).unwrap_or_default();
        let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, u64)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in rows {
                let _ = writeln!(out, "{name}{{ia=\"{ia}\",{labels}}} {v}");
            }
        };
        let per_if = |f: &dyn Fn(&InterfaceStats) -> u64| -> Vec<(String, u64)> {
            self.interfaces.iter().map(|i| (format!("interface=\"{}\"", i.id), f(i))).collect()
        };
        family("aviary_router_received_packets_total", "counter", "Packets received.", per_if(&|i| i.received_packets));
        family("aviary_router_received_bytes_total", "counter", "Bytes received.", per_if(&|i| i.received_bytes));
        family(
            "aviary_router_delivered_packets_total",
            "counter",
            "Packets delivered to hosts.",
            per_if(&|i| i.delivered_packets),
        );
        let drops = self
            .interfaces
            .iter()
            .flat_map(|i| i.drops.iter().map(move |(r, n)| (format!("interface=\"{}\",reason=\"{r}\"", i.id), *n)))
            .collect();
        family("aviary_router_dropped_packets_total", "counter", "Packets dropped on ingress, by reason.", drops);
        let classes = |f: &dyn Fn(&ClassSnapshot) -> u64| -> Vec<(String, u64)> {
            self.interfaces
                .iter()
                .filter(|i| i.id != 0)
                .flat_map(|i| {
                    [("priority", &i.priority), ("best_effort", &i.best_effort)]
                        .map(|(c, s)| (format!("interface=\"{}\",class=\"{c}\"", i.id), f(s)))
                })
                .collect()
        };
        family("aviary_router_sent_packets_total", "counter", "Packets sent on egress.", classes(&|s| s.sent_packets));
        family("aviary_router_sent_bytes_total", "counter", "Bytes sent on egress.", classes(&|s| s.sent_bytes));
        family(
            "aviary_router_queue_dropped_packets_total",
            "counter",
            "Packets dropped because the egress queue was full.",
            classes(&|s| s.queue_dropped_packets),
        );
        family(
            "aviary_router_queue_dropped_bytes_total",
            "counter",
            "Bytes dropped because the egress queue was full.",
            classes(&|s| s.queue_dropped_bytes),
        );
        family(
            "aviary_router_queued_bytes",
            "gauge",
            "Bytes waiting in the egress queue.",
            classes(&|s| s.queued_bytes),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_has_labelled_samples() {
        let mut i = InterfaceStats { id: 2, received_packets: 5, ..Default::default() };
        i.count_drop(DropReason::BadMac);
        i.count_drop(DropReason::BadMac);
        i.priority.sent_bytes = 1500;
        let s = RouterStatus { ia: Some("1-ff00:0:110".parse().unwrap()), interfaces: vec![i], ..Default::default() };
        let text = s.prometheus();
        assert!(text.contains("aviary_router_received_packets_total{ia=\"1-ff00:0:110\",interface=\"2\"} 5"), "{text}");
        assert!(text
            .contains("aviary_router_dropped_packets_total{ia=\"1-ff00:0:110\",interface=\"2\",reason=\"bad_mac\"} 2"));
        assert!(text
            .contains("aviary_router_sent_bytes_total{ia=\"1-ff00:0:110\",interface=\"2\",class=\"priority\"} 1500"));
        // Every sample line belongs to a declared family.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split('{').next().unwrap();
            assert!(text.contains(&format!("# TYPE {name} ")), "{line}");
        }
    }
}
