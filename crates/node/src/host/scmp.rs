//! `aviary host ping` and `aviary host traceroute`: SCMP echo and traceroute over a SCION
//! path from the AS's control service, printing round-trip times as ping and traceroute do.
//!
//! The host's socket port is the SCMP identifier, so that the routers deliver replies (and
//! errors about the requests) to it, as in SCION's dispatcher-less end-host model.

use std::fmt;
use std::net::{IpAddr, UdpSocket};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use aviary_hummingbird::as_hops;
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::scmp::{
    destination_port, msg_type, packet_to_vec, parse_packet, ScmpMessage, ScmpView, PROTOCOL_SCMP,
};
use aviary_scion::{HostAddr, IsdAsn, ScionHeader, StandardPath};
use serde::Serialize;

use crate::api::fetch_paths;
use crate::config::HostConfig;

/// A SCION host without a port, written `ISD-AS,IP` (`1-ff00:0:110,127.0.3.1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScionHost {
    pub ia: IsdAsn,
    pub ip: IpAddr,
}

impl FromStr for ScionHost {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (ia, ip) = s.split_once(',').ok_or_else(|| format!("{s:?} is not ISD-AS,IP"))?;
        Ok(Self {
            ia: ia.parse().map_err(|e| format!("{s:?}: {e}"))?,
            ip: ip.parse().map_err(|e| format!("{s:?}: host {ip:?}: {e}"))?,
        })
    }
}

impl fmt::Display for ScionHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.ia, self.ip)
    }
}

/// `aviary host ping`.
#[derive(Clone, Debug, clap::Args)]
pub struct PingOptions {
    /// Destination, ISD-AS,IP (a border router answers at the address of its internal socket).
    pub dst: ScionHost,
    /// Echo requests to send.
    #[arg(long, short = 'c', default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub count: u16,
    /// Time between requests.
    #[arg(long, default_value_t = 1000)]
    pub interval_ms: u64,
    /// How long to wait for each reply.
    #[arg(long, default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Which of the control service's paths to use.
    #[arg(long, default_value_t = 0)]
    pub path_index: usize,
}

/// `aviary host traceroute`.
#[derive(Clone, Debug, clap::Args)]
pub struct TracerouteOptions {
    /// Destination AS; every AS on the path answers.
    pub dst: IsdAsn,
    /// How long to wait for each AS's reply.
    #[arg(long, default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Which of the control service's paths to use.
    #[arg(long, default_value_t = 0)]
    pub path_index: usize,
}

/// What came back for one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Answer {
    Reply {
        from: String,
        rtt_ms: f64,
    },
    /// An SCMP error about the request, from a router on the way.
    Error {
        from: String,
        msg_type: u8,
        code: u8,
        rtt_ms: f64,
    },
    Timeout,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Reply { from, rtt_ms } => write!(f, "from {from} time={rtt_ms:.3} ms"),
            Answer::Error { from, msg_type, code, rtt_ms } => {
                write!(f, "from {from}: {} (type {msg_type}, code {code}) time={rtt_ms:.3} ms", describe(*msg_type))
            }
            Answer::Timeout => write!(f, "timeout"),
        }
    }
}

fn describe(t: u8) -> &'static str {
    match t {
        msg_type::DESTINATION_UNREACHABLE => "destination unreachable",
        msg_type::PACKET_TOO_BIG => "packet too big",
        msg_type::PARAMETER_PROBLEM => "parameter problem",
        msg_type::EXTERNAL_INTERFACE_DOWN => "external interface down",
        msg_type::INTERNAL_CONNECTIVITY_DOWN => "internal connectivity down",
        _ => "SCMP error",
    }
}

/// The host's SCMP endpoint on one path.
struct Prober {
    sock: UdpSocket,
    router: std::net::SocketAddr,
    header: ScionHeader,
    path: Option<StandardPath>,
    id: u16,
}

impl Prober {
    fn new(cfg: &HostConfig, dst: ScionHost, path_index: usize) -> anyhow::Result<Self> {
        let paths = fetch_paths(cfg.control, dst.ia)?;
        let Some(p) = paths.get(path_index) else {
            bail!("the control service has {} path(s) to {}, no path {path_index}", paths.len(), dst.ia);
        };
        let path = p.standard_path()?;
        let sock = UdpSocket::bind((cfg.addr, 0)).with_context(|| format!("cannot bind {}", cfg.addr))?;
        let id = sock.local_addr()?.port();
        let header = ScionHeader {
            traffic_class: 0,
            flow_id: u32::from(id),
            next_hdr: PROTOCOL_SCMP,
            path_type: if path.is_some() { path_type::SCION } else { path_type::EMPTY },
            dst_ia: dst.ia,
            src_ia: cfg.ia,
            dst_host: HostAddr::from(dst.ip),
            src_host: HostAddr::from(cfg.addr),
            path: Vec::new(),
        };
        Ok(Self { sock, router: cfg.router, header, path, id })
    }

    /// Sends `msg` on `path` and waits for the answer that `matches` picks out.
    fn probe(
        &mut self,
        path: Option<&StandardPath>,
        msg: &ScmpMessage,
        timeout: Duration,
        matches: impl Fn(&ScmpMessage) -> bool,
    ) -> anyhow::Result<(Answer, Option<ScmpMessage>)> {
        self.header.path = path.map(StandardPath::to_bytes).transpose()?.unwrap_or_default();
        let pkt = packet_to_vec(&self.header, msg)?;
        let start = Instant::now();
        self.sock.send_to(&pkt, self.router)?;
        let mut buf = vec![0u8; 2048];
        while let Some(left) = timeout.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) {
            self.sock.set_read_timeout(Some(left))?;
            let n = match self.sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => break,
                Err(e) => return Err(e.into()),
            };
            let Ok((h, m)) = parse_packet(&buf[..n]) else { continue };
            let rtt_ms = start.elapsed().as_secs_f64() * 1e3;
            let from = format!("{},{}", h.src_ia, show_host(h.src_host));
            // An error is about one of this socket's requests if it quotes its identifier.
            let about_us = ScmpView::new_checked(&buf[h.len()..n]).ok().and_then(|v| destination_port(&v));
            if m.is_error() && about_us == Some(self.id) {
                let answer = Answer::Error { from, msg_type: m.msg_type(), code: m.code(), rtt_ms };
                return Ok((answer, Some(m)));
            }
            if matches(&m) {
                return Ok((Answer::Reply { from, rtt_ms }, Some(m)));
            }
        }
        Ok((Answer::Timeout, None))
    }
}

fn show_host(h: HostAddr) -> String {
    match h {
        HostAddr::V4(a) => a.to_string(),
        HostAddr::V6(a) => a.to_string(),
        HostAddr::Svc(s) => format!("svc:{s:#06x}"),
    }
}

/// One line per request, then the summary; the answers in order.
pub fn ping(cfg: &HostConfig, opts: &PingOptions, out: &mut dyn std::io::Write) -> anyhow::Result<Vec<Answer>> {
    let mut p = Prober::new(cfg, opts.dst, opts.path_index)?;
    writeln!(out, "PING {} from {},{} (SCMP echo, identifier {})", opts.dst, cfg.ia, cfg.addr, p.id)?;
    let mut answers = Vec::new();
    let path = p.path.clone();
    for seq in 0..opts.count {
        let started = Instant::now();
        let req = ScmpMessage::EchoRequest { id: p.id, seq, data: seq.to_be_bytes().repeat(16) };
        let id = p.id;
        let (a, _) = p.probe(
            path.as_ref(),
            &req,
            Duration::from_millis(opts.timeout_ms),
            |m| matches!(m, ScmpMessage::EchoReply { id: i, seq: s, .. } if *i == id && *s == seq),
        )?;
        writeln!(out, "scmp_seq={seq} {a}")?;
        answers.push(a);
        if seq + 1 < opts.count {
            std::thread::sleep(Duration::from_millis(opts.interval_ms).saturating_sub(started.elapsed()));
        }
    }
    let received = answers.iter().filter(|a| matches!(a, Answer::Reply { .. })).count();
    let loss = 100.0 * (1.0 - received as f64 / answers.len() as f64);
    writeln!(out, "--- {} ping ---\n{} sent, {received} received, {loss:.0}% loss", opts.dst, answers.len())?;
    Ok(answers)
}

/// What traceroute learnt of one AS of the path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TracedAs {
    pub answer: Answer,
    /// The ISD-AS and interface its router reported.
    pub at: Option<(IsdAsn, u64)>,
}

/// One line per AS on the path: its ISD-AS and interface as the router reports them.
pub fn traceroute(
    cfg: &HostConfig,
    opts: &TracerouteOptions,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<Vec<TracedAs>> {
    let dst = ScionHost { ia: opts.dst, ip: IpAddr::from([0, 0, 0, 0]) };
    let mut p = Prober::new(cfg, dst, opts.path_index)?;
    let Some(path) = p.path.clone() else { bail!("{} is this host's own AS: there is no AS hop to trace", opts.dst) };
    writeln!(out, "traceroute to {} from {},{}: {} AS hops", opts.dst, cfg.ia, cfg.addr, as_hops(&path).len())?;
    let mut lines = Vec::new();
    for (seq, hop) in as_hops(&path).iter().enumerate() {
        let mut alerted = path.clone();
        // Either alert flag makes the AS that processes this hop field answer.
        alerted.hops[hop.hop_index].ingress_alert = true;
        let seq = seq as u16;
        let id = p.id;
        let req = ScmpMessage::TracerouteRequest { id, seq };
        let (a, m) = p.probe(
            Some(&alerted),
            &req,
            Duration::from_millis(opts.timeout_ms),
            |m| matches!(m, ScmpMessage::TracerouteReply { id: i, seq: s, .. } if *i == id && *s == seq),
        )?;
        let at = match m {
            Some(ScmpMessage::TracerouteReply { ia, interface, .. }) => Some((ia, interface)),
            _ => None,
        };
        match (&a, at) {
            (Answer::Reply { rtt_ms, .. }, Some((ia, interface))) => {
                writeln!(out, "{seq:>2}  {ia} IF={interface}  {rtt_ms:.3} ms")?
            }
            _ => writeln!(out, "{seq:>2}  {a}")?,
        }
        lines.push(TracedAs { answer: a, at });
    }
    Ok(lines)
}
