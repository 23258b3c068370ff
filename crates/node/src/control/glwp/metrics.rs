//! The GLWP service's counters on the control service's `/metrics`: messages processed per
//! direction, what the cores did with them and dropped (every `DiscoveryDrop` reason, zeros
//! included), what the transport dropped before a core saw it, allocations completed at the
//! source.

use std::sync::atomic::{AtomicU64, Ordering};

use std::collections::BTreeMap;

use aviary_glwp::discovery::{Blame, BlameReason, DiscoveryStats};
use aviary_scion::IsdAsn;

use crate::metrics::{Exposition, Kind};

/// Why the transport drops a datagram that no core processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportDrop {
    /// From an address that is no peer's GLWP service.
    UnknownSender,
    /// An answer for this AS as the source that no discovery waits for (any more).
    Unsolicited,
    /// To an AS whose GLWP service is not known.
    NoService,
    SendError,
    ReceiveError,
}

impl TransportDrop {
    const ALL: [TransportDrop; 5] = [
        TransportDrop::UnknownSender,
        TransportDrop::Unsolicited,
        TransportDrop::NoService,
        TransportDrop::SendError,
        TransportDrop::ReceiveError,
    ];

    fn label(self) -> &'static str {
        match self {
            TransportDrop::UnknownSender => "unknown_sender",
            TransportDrop::Unsolicited => "unsolicited",
            TransportDrop::NoService => "no_service",
            TransportDrop::SendError => "send_error",
            TransportDrop::ReceiveError => "receive_error",
        }
    }
}

#[derive(Debug, Default)]
pub struct Counters {
    forward: AtomicU64,
    backward: AtomicU64,
    transport: [AtomicU64; TransportDrop::ALL.len()],
    announced: AtomicU64,
    announcements_accepted: AtomicU64,
    host_requests_limited: AtomicU64,
}

impl Counters {
    /// A message handed to the on-path core: a request (`forward`) or a response.
    pub fn processed(&self, forward: bool) {
        let c = if forward { &self.forward } else { &self.backward };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn transport(&self, drop: TransportDrop) {
        self.transport[drop as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A host's discovery refused for its rate.
    pub fn host_request_limited(&self) {
        self.host_requests_limited.fetch_add(1, Ordering::Relaxed);
    }

    /// An announcement sent to a neighbour.
    pub fn announced(&self) {
        self.announced.fetch_add(1, Ordering::Relaxed);
    }

    /// A neighbour's announcement checked and stored.
    pub fn announcement_accepted(&self) {
        self.announcements_accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Announcements sent and accepted, the blame of each neighbour by reason, and the blame
    /// policy's hold-downs (how many, and whether one is in force at `now_ns`).
    pub fn prometheus_updates(&self, out: &mut Exposition, ia: IsdAsn, blames: &BTreeMap<IsdAsn, Blame>, now_ns: u64) {
        let ia = ia.to_string();
        let ia = ia.as_str();
        let mut f = out.family(
            "aviary_glwp_announcements_total",
            Kind::Counter,
            "Matrix announcements sent to neighbours and accepted from them.",
        );
        f.sample(&[("ia", ia), ("direction", "sent")], self.announced.load(Ordering::Relaxed));
        f.sample(&[("ia", ia), ("direction", "accepted")], self.announcements_accepted.load(Ordering::Relaxed));
        let mut f = out.family(
            "aviary_glwp_blames_total",
            Kind::Counter,
            "Inconsistencies blamed on a neighbour: values other than it announced, values it never announced, announcements contradicting earlier ones.",
        );
        for (n, blame) in blames {
            let n = n.to_string();
            for reason in BlameReason::ALL {
                f.sample(&[("ia", ia), ("neighbour", n.as_str()), ("reason", reason.label())], blame.count(reason));
            }
        }
        let mut f = out.family(
            "aviary_glwp_hold_downs_total",
            Kind::Counter,
            "Times the blame policy held a neighbour down (refused discoveries through it).",
        );
        for (n, blame) in blames {
            f.sample(&[("ia", ia), ("neighbour", n.to_string().as_str())], blame.hold_downs);
        }
        let mut f = out.family(
            "aviary_glwp_neighbour_held_down",
            Kind::Gauge,
            "1 while discoveries through the neighbour are refused for repeated blame.",
        );
        for (n, blame) in blames {
            f.sample(&[("ia", ia), ("neighbour", n.to_string().as_str())], u64::from(blame.held_down_at(now_ns)));
        }
    }

    pub fn prometheus(
        &self,
        out: &mut Exposition,
        ia: IsdAsn,
        on_path: &DiscoveryStats,
        source: &DiscoveryStats,
        fetch_errors: u64,
    ) {
        let ia = ia.to_string();
        let ia = ia.as_str();
        let mut f = out.family(
            "aviary_glwp_discovery_messages_total",
            Kind::Counter,
            "Discovery messages this AS processed on the path, by direction (forward: requests, backward: responses).",
        );
        f.sample(&[("ia", ia), ("direction", "forward")], self.forward.load(Ordering::Relaxed));
        f.sample(&[("ia", ia), ("direction", "backward")], self.backward.load(Ordering::Relaxed));
        let mut f = out.family(
            "aviary_glwp_discovery_outcomes_total",
            Kind::Counter,
            "Discovery messages this AS passed on: requests forwarded, responses sent back, refusals sent to the source.",
        );
        for (outcome, n) in
            [("forwarded", on_path.forwarded), ("responded", on_path.responded), ("refused", on_path.refused)]
        {
            f.sample(&[("ia", ia), ("outcome", outcome)], n);
        }
        let mut f = out.family(
            "aviary_glwp_discovery_drops_total",
            Kind::Counter,
            "Discovery messages dropped, by reason, on the path or as the source.",
        );
        for ((reason, a), (_, b)) in on_path.iter().zip(source.iter()) {
            f.sample(&[("ia", ia), ("reason", reason)], a + b);
        }
        let mut f = out.family(
            "aviary_glwp_transport_drops_total",
            Kind::Counter,
            "Datagrams of the GLWP service dropped before discovery processing, by reason.",
        );
        for d in TransportDrop::ALL {
            f.sample(&[("ia", ia), ("reason", d.label())], self.transport[d as usize].load(Ordering::Relaxed));
        }
        out.family(
            "aviary_glwp_allocations_completed_total",
            Kind::Counter,
            "Discoveries of this AS's hosts that ended with an allocation the source verified.",
        )
        .sample(&[("ia", ia)], source.finished);
        out.family(
            "aviary_glwp_refusals_received_total",
            Kind::Counter,
            "Authentic refusals of this AS's hosts' discoveries.",
        )
        .sample(&[("ia", ia)], source.refused);
        out.family(
            "aviary_glwp_host_discoveries_rate_limited_total",
            Kind::Counter,
            "Hosts' discoveries refused (429) for asking more often than host_discoveries_per_s.",
        )
        .sample(&[("ia", ia)], self.host_requests_limited.load(Ordering::Relaxed));
        out.family(
            "aviary_glwp_key_fetch_errors_total",
            Kind::Counter,
            "Failed fetches of other ASes' GLWP Level-1 keys.",
        )
        .sample(&[("ia", ia)], fetch_errors);
    }
}
