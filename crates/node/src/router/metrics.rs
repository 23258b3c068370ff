//! Counters of a border router, as each worker keeps them and as the management
//! API shows them (Prometheus text and JSON).

use std::collections::BTreeMap;

use aviary_qos::{ClassStats, DropCounters, DropReason};
use aviary_scion::IsdAsn;
use serde::Serialize;

use super::pipeline::{MechanismReport, Pipeline};
use super::scmp::ScmpCounters;
use crate::metrics::{Exposition, Kind};

/// Drops that happen around the processor, in the router process itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum IoDrop {
    /// Datagram larger than the receive buffer.
    Oversized,
    /// Destined to this AS but with no host address and UDP port to deliver to.
    Undeliverable,
    /// The processor chose an egress without a configured link.
    NoLink,
    /// Arrived on an inter-AS interface from another address than the configured neighbour's.
    NotNeighbor,
    /// For a link whose capacity is 0 (down), or waiting in its queue when it went down.
    LinkDown,
    /// Destined to this AS, to the host address and port of one of the router's own sockets
    /// (internal, an interface's, management): sent there, it would come back to the router,
    /// on the internal socket again and again.
    ToRouterSocket,
    /// Owned by another worker whose hand-off queue was full (a flood steered to one worker,
    /// or a worker that falls behind): counted by the worker that received it.
    HandoffQueueFull,
}

impl IoDrop {
    /// Every reason, in the order of their counters in [`IngressCounters`].
    pub const ALL: [IoDrop; 7] = [
        IoDrop::Oversized,
        IoDrop::Undeliverable,
        IoDrop::NoLink,
        IoDrop::NotNeighbor,
        IoDrop::LinkDown,
        IoDrop::ToRouterSocket,
        IoDrop::HandoffQueueFull,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            IoDrop::Oversized => "oversized_datagram",
            IoDrop::Undeliverable => "undeliverable",
            IoDrop::NoLink => "no_link",
            IoDrop::NotNeighbor => "not_neighbor",
            IoDrop::LinkDown => "link_down",
            IoDrop::ToRouterSocket => "to_router_socket",
            IoDrop::HandoffQueueFull => "handoff_queue_full",
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
    /// Egress counters by class, in the link's table order (empty for the inside).
    pub classes: Vec<ClassSnapshot>,
    /// Datagrams the kernel dropped because the socket's receive buffer was full.
    pub kernel_receive_drops: u64,
    /// Packets delivered to hosts (inside only).
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ClassSnapshot {
    pub class: String,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub queue_dropped_packets: u64,
    pub queue_dropped_bytes: u64,
    pub queued_bytes: u64,
}

impl ClassSnapshot {
    pub fn new(class: &str, s: &ClassStats) -> Self {
        Self {
            class: class.to_owned(),
            sent_packets: s.sent_packets,
            sent_bytes: s.sent_bytes,
            queue_dropped_packets: s.dropped_packets,
            queue_dropped_bytes: s.dropped_bytes,
            queued_bytes: s.queued_bytes,
        }
    }
}

/// The counters of one interface as the forwarding path keeps them: plain integers indexed by
/// typed reasons, labelled only when published ([`IngressCounters::publish`]).
#[derive(Clone, Debug)]
pub struct IngressCounters {
    pub received_packets: u64,
    pub received_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    io_drops: [u64; IoDrop::ALL.len()],
    /// Drops by processor index ([`Pipeline::processor_of`]); the last slot is for packets no
    /// processor claims.
    mechanism_drops: Vec<DropCounters>,
}

impl IngressCounters {
    pub fn new(pipeline: &Pipeline) -> Self {
        Self {
            received_packets: 0,
            received_bytes: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            io_drops: [0; IoDrop::ALL.len()],
            mechanism_drops: vec![DropCounters::default(); pipeline.processors().count() + 1],
        }
    }

    /// Counts a drop by the processor of index `processor` ([`Pipeline::processor_of`]).
    pub fn count_drop(&mut self, processor: usize, reason: DropReason) {
        let last = self.mechanism_drops.len() - 1;
        self.mechanism_drops[processor.min(last)].count(reason);
    }

    pub fn count_io_drop(&mut self, reason: IoDrop) {
        self.io_drops[reason as usize] += 1;
    }

    /// Writes the counters into `stats`, drops by label (reasons of different processors with
    /// the same label add up).
    pub fn publish(&self, pipeline: &Pipeline, stats: &mut InterfaceStats) {
        stats.received_packets = self.received_packets;
        stats.received_bytes = self.received_bytes;
        stats.delivered_packets = self.delivered_packets;
        stats.delivered_bytes = self.delivered_bytes;
        stats.drops.clear();
        for (r, n) in IoDrop::ALL.iter().zip(self.io_drops).filter(|(_, n)| *n > 0) {
            *stats.drops.entry(r.label()).or_default() += n;
        }
        let own_labels = pipeline.processors().map(|p| p.drop_reasons()).chain([&[][..]]);
        for (counters, labels) in self.mechanism_drops.iter().zip(own_labels) {
            for (label, n) in counters.iter(labels).filter(|(_, n)| *n > 0) {
                *stats.drops.entry(label).or_default() += n;
            }
        }
    }
}

/// The gauge of [`RouterStatus::classes_read_unix_ns`], in seconds.
pub const CLASS_COUNTERS_TIME: &str = "aviary_router_class_counters_time_seconds";

/// What the management API shows; each worker publishes a fresh copy of its own a few
/// times per second.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouterStatus {
    pub ia: Option<IsdAsn>,
    pub started_unix_s: u64,
    pub burst_ms: f64,
    pub interfaces: Vec<InterfaceStats>,
    /// Per mechanism: its drops, its own counters and its runtime settings.
    pub mechanisms: Vec<MechanismReport>,
    /// SCMP messages the router sent, or held back.
    pub scmp: ScmpCounters,
    /// Unix time (ns) at which the leader read the links' class counters (0 before it did).
    /// Each round polls the links before it publishes, so the counters are those of this time;
    /// a status is up to a publishing period old when it is read, so a rate is the counters'
    /// growth over this time's, not over the time between two reads.
    pub classes_read_unix_ns: u64,
}

impl RouterStatus {
    /// The status of the whole router from its workers' (the first, the leader, publishes
    /// what belongs to the router: links, classes, settings; every worker its own counters):
    /// every counter is the sum over workers.
    pub fn merged(workers: &[RouterStatus]) -> RouterStatus {
        let Some((leader, others)) = workers.split_first() else { return RouterStatus::default() };
        let mut all = leader.clone();
        for w in others {
            for (mine, theirs) in all.interfaces.iter_mut().zip(&w.interfaces) {
                mine.received_packets += theirs.received_packets;
                mine.received_bytes += theirs.received_bytes;
                mine.delivered_packets += theirs.delivered_packets;
                mine.delivered_bytes += theirs.delivered_bytes;
                for (label, n) in &theirs.drops {
                    *mine.drops.entry(label).or_default() += n;
                }
            }
            for (mine, theirs) in all.mechanisms.iter_mut().zip(&w.mechanisms) {
                add_by_label(&mut mine.drops, &theirs.drops);
                add_by_label(&mut mine.counters, &theirs.counters);
            }
            all.scmp.add(&w.scmp);
        }
        all
    }

    /// Prometheus text exposition format.
    pub fn prometheus(&self) -> String {
        let mut out = Exposition::new();
        let ia = self.ia.map(|i| i.to_string()).unwrap_or_default();
        let ia = ia.as_str();
        let mut family = |name: &str, kind: Kind, help: &str, rows: Vec<(Vec<(&str, String)>, u64)>| {
            let mut f = out.family(name, kind, help);
            for (labels, v) in rows {
                let mut all = vec![("ia", ia)];
                all.extend(labels.iter().map(|(k, v)| (*k, v.as_str())));
                f.sample(&all, v);
            }
        };
        let per_if = |f: &dyn Fn(&InterfaceStats) -> u64| -> Vec<(Vec<(&str, String)>, u64)> {
            self.interfaces.iter().map(|i| (vec![("interface", i.id.to_string())], f(i))).collect()
        };
        family(
            "aviary_router_received_packets_total",
            Kind::Counter,
            "Packets received.",
            per_if(&|i| i.received_packets),
        );
        family("aviary_router_received_bytes_total", Kind::Counter, "Bytes received.", per_if(&|i| i.received_bytes));
        family(
            "aviary_router_kernel_receive_drops_total",
            Kind::Counter,
            "Datagrams the kernel dropped before the router read them (socket receive buffer full).",
            per_if(&|i| i.kernel_receive_drops),
        );
        family(
            "aviary_router_delivered_packets_total",
            Kind::Counter,
            "Packets delivered to hosts.",
            per_if(&|i| i.delivered_packets),
        );
        let drops = self
            .interfaces
            .iter()
            .flat_map(|i| {
                i.drops.iter().map(move |(r, n)| (vec![("interface", i.id.to_string()), ("reason", r.to_string())], *n))
            })
            .collect();
        family("aviary_router_dropped_packets_total", Kind::Counter, "Packets dropped on ingress, by reason.", drops);
        let classes = |f: &dyn Fn(&ClassSnapshot) -> u64| -> Vec<(Vec<(&str, String)>, u64)> {
            self.interfaces
                .iter()
                .filter(|i| i.id != 0)
                .flat_map(|i| {
                    i.classes
                        .iter()
                        .map(move |s| (vec![("interface", i.id.to_string()), ("class", s.class.clone())], f(s)))
                })
                .collect()
        };
        family(
            "aviary_router_sent_packets_total",
            Kind::Counter,
            "Packets sent on egress.",
            classes(&|s| s.sent_packets),
        );
        family("aviary_router_sent_bytes_total", Kind::Counter, "Bytes sent on egress.", classes(&|s| s.sent_bytes));
        family(
            "aviary_router_queue_dropped_packets_total",
            Kind::Counter,
            "Packets dropped because the egress queue was full.",
            classes(&|s| s.queue_dropped_packets),
        );
        family(
            "aviary_router_queue_dropped_bytes_total",
            Kind::Counter,
            "Bytes dropped because the egress queue was full.",
            classes(&|s| s.queue_dropped_bytes),
        );
        family(
            "aviary_router_queued_bytes",
            Kind::Gauge,
            "Bytes waiting in the egress queue.",
            classes(&|s| s.queued_bytes),
        );
        let mech_drops = self
            .mechanisms
            .iter()
            .flat_map(|m| {
                m.drops
                    .iter()
                    .map(move |(r, n)| (vec![("mechanism", m.name.to_string()), ("reason", r.to_string())], *n))
            })
            .collect();
        family(
            "aviary_router_mechanism_dropped_packets_total",
            Kind::Counter,
            "Packets a mechanism dropped, by reason.",
            mech_drops,
        );
        let mech_counters = self
            .mechanisms
            .iter()
            .flat_map(|m| {
                m.counters
                    .iter()
                    .map(move |(c, n)| (vec![("mechanism", m.name.to_string()), ("counter", c.to_string())], *n))
            })
            .collect();
        family("aviary_router_mechanism_events_total", Kind::Counter, "A mechanism's own counters.", mech_counters);
        let scmp = self.scmp.iter().into_iter().map(|(kind, n)| (vec![("kind", kind.to_string())], n)).collect();
        family(
            "aviary_router_scmp_messages_total",
            Kind::Counter,
            "SCMP messages the router sent (echo and traceroute replies, errors), and errors it held back.",
            scmp,
        );
        out.family(
            CLASS_COUNTERS_TIME,
            Kind::Gauge,
            "Unix time at which the egress class counters were read: rates are their growth over this one's.",
        )
        .sample(&[("ia", ia)], unix_s(self.classes_read_unix_ns));
        out.finish()
    }
}

/// Unix time `ns` in seconds, whole seconds and fraction converted apart: `ns` itself is
/// beyond the integers an `f64` holds exactly.
fn unix_s(ns: u64) -> f64 {
    const NS: u64 = 1_000_000_000;
    (ns / NS) as f64 + (ns % NS) as f64 / NS as f64
}

/// Adds `theirs` to `mine`, label by label (labels `mine` lacks are appended).
fn add_by_label(mine: &mut Vec<(&'static str, u64)>, theirs: &[(&'static str, u64)]) {
    for &(label, n) in theirs {
        match mine.iter_mut().find(|(l, _)| *l == label) {
            Some((_, m)) => *m += n,
            None => mine.push((label, n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_status_sums_every_counter_over_workers() {
        let worker = |received: u64, drops: u64, reserved: u64, echo: u64, capacity: u64| {
            let mut i =
                InterfaceStats { id: 2, received_packets: received, capacity_bps: capacity, ..Default::default() };
            i.drops.insert("bad_mac", drops);
            i.classes = vec![ClassSnapshot { class: "priority".into(), sent_packets: capacity, ..Default::default() }];
            let m = MechanismReport {
                name: "hummingbird",
                drops: vec![("bad_mac", drops)],
                counters: vec![("reserved_packets", reserved)],
                ..Default::default()
            };
            let scmp = ScmpCounters { echo_replies: echo, ..Default::default() };
            RouterStatus { interfaces: vec![i], mechanisms: vec![m], scmp, ..Default::default() }
        };
        let mut second = worker(20, 2, 7, 1, 0);
        second.interfaces[0].drops.insert("not_neighbor", 4);
        second.mechanisms[0].counters.push(("over_rate_packets", 3));
        let all = RouterStatus::merged(&[worker(10, 1, 5, 2, 1000), second, worker(1, 0, 0, 0, 0)]);
        let i = &all.interfaces[0];
        assert_eq!((i.received_packets, i.drops["bad_mac"], i.drops["not_neighbor"]), (31, 3, 4));
        // What belongs to the link is the leader's, not a sum.
        assert_eq!((i.capacity_bps, i.classes[0].sent_packets), (1000, 1000));
        assert_eq!(all.mechanisms[0].drops, [("bad_mac", 3)]);
        assert_eq!(all.mechanisms[0].counters, [("reserved_packets", 12), ("over_rate_packets", 3)]);
        assert_eq!(all.scmp.echo_replies, 3);
        assert_eq!(RouterStatus::merged(&[worker(4, 0, 0, 0, 9)]).interfaces[0].received_packets, 4);
    }

    #[test]
    fn prometheus_text_has_labelled_samples() {
        let mut i = InterfaceStats { id: 2, received_packets: 5, ..Default::default() };
        i.drops.insert("bad_mac", 2);
        i.classes = vec![ClassSnapshot { class: "priority".into(), sent_bytes: 1500, ..Default::default() }];
        let m = MechanismReport {
            name: "hummingbird",
            drops: vec![("bad_mac", 2)],
            counters: vec![("flyover_stale_packets", 3)],
            ..Default::default()
        };
        let s = RouterStatus {
            ia: Some("1-ff00:0:110".parse().unwrap()),
            interfaces: vec![i],
            mechanisms: vec![m],
            classes_read_unix_ns: 1_750_000_000_250_000_000,
            ..Default::default()
        };
        let text = s.prometheus();
        assert!(text.contains("aviary_router_received_packets_total{ia=\"1-ff00:0:110\",interface=\"2\"} 5"), "{text}");
        assert!(text
            .contains("aviary_router_dropped_packets_total{ia=\"1-ff00:0:110\",interface=\"2\",reason=\"bad_mac\"} 2"));
        assert!(text
            .contains("aviary_router_sent_bytes_total{ia=\"1-ff00:0:110\",interface=\"2\",class=\"priority\"} 1500"));
        assert!(text.contains(
            "aviary_router_mechanism_dropped_packets_total{ia=\"1-ff00:0:110\",mechanism=\"hummingbird\",reason=\"bad_mac\"} 2"
        ));
        assert!(text.contains(
            "aviary_router_mechanism_events_total{ia=\"1-ff00:0:110\",mechanism=\"hummingbird\",counter=\"flyover_stale_packets\"} 3"
        ));
        // To the millisecond and beyond: rates of a few seconds' counters are taken over it.
        assert!(
            text.contains("aviary_router_class_counters_time_seconds{ia=\"1-ff00:0:110\"} 1750000000.25\n"),
            "{text}"
        );
        // The shared writer keeps the router's text as it was: HELP, TYPE, then the samples.
        assert!(text.starts_with(
            "# HELP aviary_router_received_packets_total Packets received.\n\
             # TYPE aviary_router_received_packets_total counter\n\
             aviary_router_received_packets_total{ia=\"1-ff00:0:110\",interface=\"2\"} 5\n\
             # HELP aviary_router_received_bytes_total Bytes received.\n"
        ));
        assert!(text.contains("# TYPE aviary_router_queued_bytes gauge\n"));
        // Every sample line belongs to a declared family.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split('{').next().unwrap();
            assert!(text.contains(&format!("# TYPE {name} ")), "{line}");
        }
    }
}
