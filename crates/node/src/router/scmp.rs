//! SCMP as a border router speaks it, off the forwarding fast path: echo replies for requests
//! addressed to the router, traceroute replies where a hop field of this AS carries a router
//! alert, and errors (Parameter Problem with a pointer, External Interface Down) for packets
//! it cannot forward, at most as many as a token bucket allows.
//!
//! A worker calls in here only for packets that already left the fast path: SCMP
//! packets (one byte compared per packet), drops and deliveries. Sans-IO: packets and time in,
//! packets and where to send them out.

use std::net::{IpAddr, SocketAddr};

use aviary_qos::DropReason;
use aviary_scion::forwarding::reply::{reply_path, settle_forwarded, settle_untouched};
use aviary_scion::wire::header::{field as hdr, path_type};
use aviary_scion::wire::path::{field as pf, HOP_LEN, INFO_LEN, META_LEN};
use aviary_scion::wire::scmp::{
    self, msg_type, packet_to_vec, param_code, scmp_offset, ScmpMessage, ScmpView, PROTOCOL_SCMP,
};
use aviary_scion::{HostAddr, IsdAsn, ScionHeader, ScionView, StandardPath};
use serde::Serialize;

use crate::config::ScmpConfig;

/// Where a message the router originates goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// To a host of this AS, over the internal socket.
    Host(SocketAddr),
    /// Out of the AS on this interface, to the neighbour.
    Interface(u16),
}

/// Why a packet earns an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// The forwarder dropped it, leaving it as it arrived.
    Dropped(DropReason),
    /// The forwarder sent it to an egress interface that is down.
    InterfaceDown(u16),
}

/// What the router's SCMP did, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScmpCounters {
    pub echo_replies: u64,
    pub traceroute_replies: u64,
    pub parameter_problems: u64,
    pub interface_down_errors: u64,
    /// Errors the token bucket held back.
    pub errors_rate_limited: u64,
    /// Errors not sent because the packet was itself an SCMP error, or had no path back (a
    /// path type other than SCION's standard one, a local source on the wrong side).
    pub errors_not_sendable: u64,
}

impl ScmpCounters {
    /// Adds another worker's counters.
    pub fn add(&mut self, other: &ScmpCounters) {
        self.echo_replies += other.echo_replies;
        self.traceroute_replies += other.traceroute_replies;
        self.parameter_problems += other.parameter_problems;
        self.interface_down_errors += other.interface_down_errors;
        self.errors_rate_limited += other.errors_rate_limited;
        self.errors_not_sendable += other.errors_not_sendable;
    }

    pub fn iter(&self) -> [(&'static str, u64); 6] {
        [
            ("echo_reply", self.echo_replies),
            ("traceroute_reply", self.traceroute_replies),
            ("parameter_problem", self.parameter_problems),
            ("external_interface_down", self.interface_down_errors),
            ("error_rate_limited", self.errors_rate_limited),
            ("error_not_sendable", self.errors_not_sendable),
        ]
    }
}

/// Errors per router: a token bucket refilled at `errors_per_s` up to `error_burst`.
#[derive(Clone, Debug)]
struct ErrorBudget {
    cfg: ScmpConfig,
    tokens: f64,
    last_ns: u64,
}

impl ErrorBudget {
    fn take(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.last_ns = self.last_ns.max(now_ns);
        self.tokens = (self.tokens + dt * self.cfg.errors_per_s).min(f64::from(self.cfg.error_burst));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

pub struct Responder {
    ia: IsdAsn,
    /// The router's own address in its AS (that of its internal socket).
    addr: IpAddr,
    budget: ErrorBudget,
    pub counters: ScmpCounters,
}

impl Responder {
    pub fn new(ia: IsdAsn, addr: IpAddr, cfg: ScmpConfig) -> Self {
        let budget = ErrorBudget { cfg, tokens: f64::from(cfg.error_burst), last_ns: 0 };
        Self { ia, addr, budget, counters: ScmpCounters::default() }
    }

    /// Whether `pkt` (not yet processed) is a traceroute request that this AS must answer: a
    /// router alert on its current hop field.
    pub fn is_traceroute_here(pkt: &[u8]) -> bool {
        let Ok(v) = ScionView::new_checked(pkt) else { return false };
        let Some(m) = scmp_offset(&v).ok().and_then(|o| ScmpView::new_checked(&pkt[o..]).ok()) else { return false };
        if m.msg_type() != msg_type::TRACEROUTE_REQUEST || v.path_type() != path_type::SCION {
            return false;
        }
        StandardPath::parse(v.path()).is_ok_and(|p| {
            let h = p.hops[usize::from(p.curr_hf)];
            h.ingress_alert || h.egress_alert
        })
    }

    /// The traceroute reply to `original` (as it arrived on `ingress`, and as the forwarder
    /// accepted a copy of it).
    pub fn traceroute_reply(&mut self, original: &[u8], ingress: u16) -> Option<(Vec<u8>, Out)> {
        let v = ScionView::new_checked(original).ok()?;
        let m = ScmpView::new_checked(&original[scmp_offset(&v).ok()?..]).ok()?;
        let mut path = StandardPath::parse(v.path()).ok()?;
        let hop = path.hops[usize::from(path.curr_hf)];
        let info = path.info[usize::from(path.curr_inf)];
        let (hop_in, hop_eg) = hop.travel_interfaces(info.cons_dir);
        let interface = u64::from(if ingress != 0 { hop_in } else { hop_eg });
        settle_untouched(&mut path, ingress).ok()?;
        let reply = ScmpMessage::TracerouteReply { id: m.identifier(), seq: m.sequence(), ia: self.ia, interface };
        let out = self.reply(&v, path, ingress, &reply)?;
        self.counters.traceroute_replies += 1;
        Some(out)
    }

    /// The echo reply to a packet the forwarder delivered to this AS, if it is an echo
    /// request addressed to the router.
    pub fn echo_reply(&mut self, pkt: &[u8], ingress: u16) -> Option<(Vec<u8>, Out)> {
        let v = ScionView::new_checked(pkt).ok()?;
        if v.next_hdr() != PROTOCOL_SCMP || host_ip(v.dst_host()) != Some(self.addr) {
            return None;
        }
        let m = ScmpView::new_checked(v.payload()).ok()?;
        if m.msg_type() != msg_type::ECHO_REQUEST {
            return None;
        }
        let reply = ScmpMessage::EchoReply { id: m.identifier(), seq: m.sequence(), data: m.body().to_vec() };
        // Delivered here: the forwarder left the path settled.
        let path = match v.path_type() {
            path_type::SCION => StandardPath::parse(v.path()).ok()?,
            _ => StandardPath::default(),
        };
        let out = self.reply(&v, path, ingress, &reply)?;
        self.counters.echo_replies += 1;
        Some(out)
    }

    /// Whether a packet is addressed to the router itself (so it must not be delivered on).
    pub fn is_for_router(&self, pkt: &[u8]) -> bool {
        ScionView::new_checked(pkt)
            .is_ok_and(|v| v.next_hdr() == PROTOCOL_SCMP && host_ip(v.dst_host()) == Some(self.addr))
    }

    /// The SCMP error for `pkt`, which arrived on `ingress` and ran into `trouble`, if it
    /// deserves one and the budget allows it.
    pub fn error(&mut self, pkt: &[u8], ingress: u16, trouble: Trouble, now_ns: u64) -> Option<(Vec<u8>, Out)> {
        let Ok(v) = ScionView::new_checked(pkt) else { return None };
        let kind = ErrorKind::of(trouble)?;
        // Never an error about an error; only standard paths lead back.
        let is_error = scmp_offset(&v).ok().and_then(|o| pkt.get(o)).is_some_and(|t| *t < 128);
        let path = (v.path_type() == path_type::SCION).then(|| StandardPath::parse(v.path()).ok()).flatten();
        let (Some(mut path), false) = (path, is_error) else {
            self.counters.errors_not_sendable += 1;
            return None;
        };
        if !self.budget.take(now_ns) {
            self.counters.errors_rate_limited += 1;
            return None;
        }
        let hop_at = v.path_range().start + META_LEN + INFO_LEN * path.info.len();
        let msg = match kind {
            ErrorKind::Parameter { code, pointer } => {
                let hop = hop_at + HOP_LEN * usize::from(path.curr_hf);
                let pointer = pointer.resolve(hop) as u16;
                // The forwarder writes the SegID back before it checks the egress.
                if trouble != Trouble::Dropped(DropReason::UnknownEgress) {
                    settle_untouched(&mut path, ingress).ok()?;
                }
                ScmpMessage::error_quoting(pkt, 0, |quote| ScmpMessage::ParameterProblem { code, pointer, quote })
            }
            ErrorKind::InterfaceDown(interface) => {
                settle_forwarded(&mut path).ok()?;
                let ia = self.ia;
                ScmpMessage::error_quoting(pkt, 0, |quote| ScmpMessage::ExternalInterfaceDown {
                    ia,
                    interface: u64::from(interface),
                    quote,
                })
            }
        };
        let out = self.reply(&v, path, ingress, &msg);
        match (&out, kind) {
            (None, _) => self.counters.errors_not_sendable += 1,
            (Some(_), ErrorKind::Parameter { .. }) => self.counters.parameter_problems += 1,
            (Some(_), ErrorKind::InterfaceDown(_)) => self.counters.interface_down_errors += 1,
        }
        out
    }

    /// `msg` from the router to the source of `v`, on the reply path of the settled `path`
    /// (to a local source, on the path reversed), cut to the quoting rule's length.
    fn reply<T: AsRef<[u8]>>(
        &self,
        v: &ScionView<T>,
        path: StandardPath,
        ingress: u16,
        msg: &ScmpMessage,
    ) -> Option<(Vec<u8>, Out)> {
        let (ptype, path) = match (ingress, path.hops.is_empty()) {
            (_, true) => (path_type::EMPTY, Vec::new()),
            (0, false) => {
                let mut rev = path;
                rev.reverse().ok()?;
                (path_type::SCION, rev.to_bytes().ok()?)
            }
            _ => (path_type::SCION, reply_path(&path).ok()?.to_bytes().ok()?),
        };
        let header = ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: PROTOCOL_SCMP,
            path_type: ptype,
            dst_ia: v.src_ia(),
            src_ia: self.ia,
            dst_host: v.src_host(),
            src_host: match self.addr {
                IpAddr::V4(a) => HostAddr::V4(a),
                IpAddr::V6(a) => HostAddr::V6(a),
            },
            path,
        };
        // The quote was cut for a header of 0 bytes; cut it again for the real one.
        let msg = match msg.quote() {
            Some(q) => {
                let q = q.to_vec();
                ScmpMessage::error_quoting(&q, header.len(), |quote| with_quote(msg, quote))
            }
            None => msg.clone(),
        };
        let bytes = packet_to_vec(&header, &msg).ok()?;
        let out = if ingress == 0 {
            let ip = host_ip(v.src_host())?;
            let m = ScmpView::new_checked(&bytes[header.len()..]).ok()?;
            Out::Host(SocketAddr::new(ip, scmp::destination_port(&m)?))
        } else {
            Out::Interface(ingress)
        };
        Some((bytes, out))
    }
}

fn with_quote(msg: &ScmpMessage, quote: Vec<u8>) -> ScmpMessage {
    match msg.clone() {
        ScmpMessage::ParameterProblem { code, pointer, .. } => ScmpMessage::ParameterProblem { code, pointer, quote },
        ScmpMessage::ExternalInterfaceDown { ia, interface, .. } => {
            ScmpMessage::ExternalInterfaceDown { ia, interface, quote }
        }
        other => other,
    }
}

fn host_ip(h: HostAddr) -> Option<IpAddr> {
    match h {
        HostAddr::V4(a) => Some(a.into()),
        HostAddr::V6(a) => Some(a.into()),
        HostAddr::Svc(_) => None,
    }
}

/// Where the offending byte of a Parameter Problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pointer {
    /// At a fixed offset of the SCION header.
    Header(usize),
    /// At an offset within the current hop field.
    Hop(usize),
}

impl Pointer {
    fn resolve(self, hop_offset: usize) -> usize {
        match self {
            Pointer::Header(o) => o,
            Pointer::Hop(o) => hop_offset + o,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorKind {
    Parameter { code: u8, pointer: Pointer },
    InterfaceDown(u16),
}

impl ErrorKind {
    /// The error a trouble earns; `None` where the packet's own source cannot be trusted to
    /// get it (a broken header, a spoofed source) or no error is defined.
    fn of(trouble: Trouble) -> Option<Self> {
        use param_code::*;
        let p = |code, pointer| Some(ErrorKind::Parameter { code, pointer });
        match trouble {
            Trouble::InterfaceDown(i) => Some(ErrorKind::InterfaceDown(i)),
            Trouble::Dropped(r) => match r {
                DropReason::ExpiredHop => p(PATH_EXPIRED, Pointer::Hop(pf::hop::EXP_TIME)),
                DropReason::BadMac => p(INVALID_HOP_FIELD_MAC, Pointer::Hop(pf::hop::MAC.start)),
                DropReason::BadIngress => p(UNKNOWN_HOP_FIELD_INGRESS, Pointer::Hop(pf::hop::CONS_INGRESS.start)),
                DropReason::UnknownEgress => p(UNKNOWN_HOP_FIELD_EGRESS, Pointer::Hop(pf::hop::CONS_EGRESS.start)),
                DropReason::BadDstIa => p(INVALID_DESTINATION_ADDRESS, Pointer::Header(hdr::DST_IA.start)),
                _ => None,
            },
        }
    }
}
