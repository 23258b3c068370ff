//! The border router process (`aviary router`): one AS, one UDP socket per inter-AS
//! interface plus one internal socket for the AS's hosts and services.
//!
//! One thread forwards: it waits for any socket or the next scheduler deadline, receives
//! a batch per readable socket, runs the batch through the sans-IO processor of
//! `aviary_hummingbird` (types 1 and 5), queues forwarded packets in the egress scheduler
//! of their link (capacity, delay, priority and best-effort classes) and sends whatever
//! the schedulers release. A second thread serves the management API; it talks to the
//! forwarding thread through a command channel and reads a status copy the forwarding
//! thread publishes a few times a second, so the forwarding path takes no locks.
//!
//! Mechanisms are [`aviary_qos::Processor`]s chosen by path type (see [`crate::pipeline`]);
//! adding one is one more entry in [`processors`].

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context};
use aviary_hummingbird::{Router as HbirdRouter, RouterParams, SecretValue};
use aviary_qos::{EgressScheduler, LinkParams, Verdict};
use aviary_scion::{AsForwarding, HopMacKey, HostAddr, IsdAsn, ScionView};
use serde::Deserialize;
use tiny_http::{Header, Method, Response, Server};

use crate::clock::unix_ns;
use crate::config::{read_secret, QueueConfig, RouterConfig};
use crate::metrics::{ClassSnapshot, InterfaceStats, IoDrop, RouterStatus};
use crate::pipeline::Pipeline;
use crate::underlay::{wait_readable, BatchSocket, RecvBatch};

const BATCH: usize = aviary_hummingbird::router::MAX_BATCH;
const BUF_LEN: usize = 2048;
/// Longest sleep, so that management commands are applied promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);
const PUBLISH_EVERY_NS: u64 = 200_000_000;
const SCION_UDP: u8 = 17;

/// A runtime change requested through the management API.
#[derive(Debug)]
pub enum Command {
    Link { id: u16, capacity_bps: Option<u64>, delay_ms: Option<f64> },
    Burst { burst_ms: f64 },
    MasterSecret(Vec<u8>),
}

type CommandMsg = (Command, Sender<Result<(), String>>);

struct Link {
    id: u16,
    sock: BatchSocket,
    remote: SocketAddr,
    sched: EgressScheduler<Vec<u8>>,
}

fn link_params(capacity_bps: u64, delay_ms: f64, q: &QueueConfig) -> LinkParams {
    LinkParams {
        rate_bps: capacity_bps,
        delay_ns: (delay_ms * 1e6) as u64,
        priority_queue_bytes: q.priority_bytes,
        best_effort_queue_bytes: q.best_effort_bytes,
    }
}

/// The mechanisms this router hosts, keyed from the AS master secret.
fn processors(ia: IsdAsn, secret: &[u8], ids: &[u16], params: RouterParams) -> anyhow::Result<Pipeline> {
    let fwd = AsForwarding::new(ia, HopMacKey::from_master_secret(secret), ids.iter().copied());
    // SCION (type 1) and Hummingbird (type 5).
    let hummingbird = HbirdRouter::new(fwd, SecretValue::from_master_secret(secret), params)
        .map_err(|e| anyhow!("hummingbird: {e}"))?;
    Ok(Pipeline::new(vec![Box::new(hummingbird)]))
}

/// The forwarding thread's state.
pub struct Forwarder {
    ia: IsdAsn,
    pipeline: Pipeline,
    /// Kept for a key change, which rebuilds the processors.
    params: RouterParams,
    internal: BatchSocket,
    links: Vec<Link>,
    /// `stats[0]`: inside; `stats[i + 1]`: `links[i]`.
    stats: Vec<InterfaceStats>,
    pool: Vec<Vec<u8>>,
    rx: RecvBatch,
    status: Arc<Mutex<RouterStatus>>,
    commands: Receiver<CommandMsg>,
    started_unix_s: u64,
}

impl Forwarder {
    /// Binds every socket; fails with a message naming the address that is taken.
    pub fn new(
        cfg: &RouterConfig,
        cfg_path: &Path,
    ) -> anyhow::Result<(Self, Sender<CommandMsg>, Arc<Mutex<RouterStatus>>)> {
        let secret = read_secret(cfg_path, "master_secret_file", &cfg.master_secret_file)?;
        let ids: Vec<u16> = cfg.interfaces.iter().map(|i| i.id).collect();
        let pipeline = processors(cfg.ia, &secret, &ids, cfg.hummingbird)?;
        let internal = BatchSocket::bind(cfg.internal).context("internal socket")?;
        let mut links = Vec::new();
        let mut stats = vec![InterfaceStats { id: 0, ..Default::default() }];
        for i in &cfg.interfaces {
            let sock = BatchSocket::bind(i.local).with_context(|| format!("socket of interface {}", i.id))?;
            let sched = EgressScheduler::new(link_params(i.capacity_bps, i.delay_ms, &cfg.queues));
            links.push(Link { id: i.id, sock, remote: i.remote, sched });
            stats.push(InterfaceStats {
                id: i.id,
                neighbor: Some(i.neighbor),
                capacity_bps: i.capacity_bps,
                delay_ms: i.delay_ms,
                ..Default::default()
            });
        }
        let (tx, commands) = mpsc::channel();
        let status = Arc::new(Mutex::new(RouterStatus::default()));
        let fwd = Self {
            ia: cfg.ia,
            pipeline,
            params: cfg.hummingbird,
            internal,
            links,
            stats,
            pool: Vec::new(),
            rx: RecvBatch::new(BATCH, BUF_LEN),
            status: status.clone(),
            commands,
            started_unix_s: unix_ns() / 1_000_000_000,
        };
        Ok((fwd, tx, status))
    }

    /// Forwards until the process ends.
    pub fn run(mut self) -> anyhow::Result<()> {
        let mut ready = vec![false; self.links.len() + 1];
        let mut last_publish = 0;
        let mut first = 0;
        let mut out: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        loop {
            while let Ok((cmd, reply)) = self.commands.try_recv() {
                let _ = reply.send(self.apply(cmd));
            }
            let now = unix_ns();
            let wake = self.links.iter().filter_map(|l| l.sched.next_wakeup()).min();
            let sleep = wake.map_or(MAX_SLEEP, |w| Duration::from_nanos(w.saturating_sub(now)).min(MAX_SLEEP));
            {
                let mut socks: Vec<&BatchSocket> = vec![&self.internal];
                socks.extend(self.links.iter().map(|l| &l.sock));
                wait_readable(&socks, Some(sleep), &mut ready)?;
            }
            let now = unix_ns();
            // Start with a different socket each round: queue space freed since the last
            // round must not always go to the same ingress.
            first = (first + 1) % ready.len();
            for k in (first..ready.len()).chain(0..first) {
                if ready[k] {
                    self.receive(k, now, &mut out)?;
                }
            }
            self.send_deliveries(&mut out);
            self.release(now, &mut out);
            if now >= last_publish + PUBLISH_EVERY_NS {
                self.publish();
                last_publish = now;
            }
        }
    }

    /// Receives and processes one batch from socket `k` (0: internal, else `links[k-1]`).
    fn receive(&mut self, k: usize, now: u64, deliveries: &mut Vec<(Vec<u8>, SocketAddr)>) -> anyhow::Result<()> {
        let sock = if k == 0 { &self.internal } else { &self.links[k - 1].sock };
        let ingress = if k == 0 { 0 } else { self.links[k - 1].id };
        let n = match sock.recv_batch(&mut self.rx) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e).context("receive"),
        };
        let mut verdicts = [Verdict::Deliver; BATCH];
        let mut pkts: Vec<&mut [u8]> = Vec::with_capacity(BATCH);
        let stats = &mut self.stats[k];
        for (buf, truncated) in self.rx.packets_mut().take(n) {
            stats.received_packets += 1;
            stats.received_bytes += buf.len() as u64;
            if truncated {
                stats.count_io_drop(IoDrop::Oversized);
            } else {
                pkts.push(buf);
            }
        }
        let verdicts = &mut verdicts[..pkts.len()];
        self.pipeline.process_batch(&mut pkts, ingress, now, verdicts);
        for (pkt, v) in pkts.iter().zip(verdicts.iter()) {
            match *v {
                Verdict::Forward { egress, class } => {
                    let Some(link) = self.links.iter_mut().find(|l| l.id == egress) else {
                        self.stats[k].count_io_drop(IoDrop::NoLink);
                        continue;
                    };
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(pkt);
                    if let Err(buf) = link.sched.enqueue(buf, class, now) {
                        self.pool.push(buf);
                    }
                }
                Verdict::Deliver => match local_destination(pkt) {
                    Some(addr) => {
                        let mut buf = self.pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(pkt);
                        deliveries.push((buf, addr));
                    }
                    None => self.stats[k].count_io_drop(IoDrop::Undeliverable),
                },
                Verdict::Drop(reason) => self.stats[k].count_drop(reason),
            }
        }
        Ok(())
    }

    fn send_deliveries(&mut self, out: &mut Vec<(Vec<u8>, SocketAddr)>) {
        if out.is_empty() {
            return;
        }
        let items: Vec<(&[u8], SocketAddr)> = out.iter().map(|(b, a)| (b.as_slice(), *a)).collect();
        let sent = send_all(&self.internal, &items);
        for (b, _) in &out[..sent] {
            self.stats[0].delivered_packets += 1;
            self.stats[0].delivered_bytes += b.len() as u64;
        }
        for _ in sent..out.len() {
            self.stats[0].count_io_drop(IoDrop::Undeliverable);
        }
        self.pool.extend(out.drain(..).map(|(b, _)| b));
    }

    /// Sends what every link's scheduler releases at `now`.
    fn release(&mut self, now: u64, scratch: &mut Vec<(Vec<u8>, SocketAddr)>) {
        for link in &mut self.links {
            let remote = link.remote;
            link.sched.poll(now, &mut |p| scratch.push((p, remote)));
            if scratch.is_empty() {
                continue;
            }
            let items: Vec<(&[u8], SocketAddr)> = scratch.iter().map(|(b, a)| (b.as_slice(), *a)).collect();
            // A datagram the kernel refuses now is lost on the wire, as on a real link.
            send_all(&link.sock, &items);
            self.pool.extend(scratch.drain(..).map(|(b, _)| b));
        }
    }

    fn publish(&mut self) {
        for (i, link) in self.links.iter().enumerate() {
            let s = link.sched.stats();
            self.stats[i + 1].priority = ClassSnapshot::from(&s.priority);
            self.stats[i + 1].best_effort = ClassSnapshot::from(&s.best_effort);
        }
        let status = RouterStatus {
            ia: Some(self.ia),
            started_unix_s: self.started_unix_s,
            burst_ms: self.params.burst_ns as f64 / 1e6,
            interfaces: self.stats.clone(),
        };
        if let Ok(mut s) = self.status.lock() {
            *s = status;
        }
    }

    fn apply(&mut self, cmd: Command) -> Result<(), String> {
        tracing::info!(?cmd, "management command");
        match cmd {
            Command::Link { id, capacity_bps, delay_ms } => {
                let k = self.links.iter().position(|l| l.id == id).ok_or(format!("no interface {id}"))?;
                let link = &mut self.links[k];
                let mut p = *link.sched.params();
                if let Some(c) = capacity_bps {
                    p.rate_bps = c;
                    self.stats[k + 1].capacity_bps = c;
                }
                if let Some(d) = delay_ms {
                    if !(0.0..=10_000.0).contains(&d) {
                        return Err("delay_ms must be between 0 and 10000".into());
                    }
                    p.delay_ns = (d * 1e6) as u64;
                    self.stats[k + 1].delay_ms = d;
                }
                link.sched.set_params_at(p, unix_ns());
            }
            Command::Burst { burst_ms } => {
                self.pipeline.set_param("burst_ms", burst_ms)?;
                self.params.burst_ns = (burst_ms * 1e6) as u64;
            }
            Command::MasterSecret(secret) => {
                if secret.len() < 16 {
                    return Err("master_secret needs at least 16 bytes".into());
                }
                let ids: Vec<u16> = self.links.iter().map(|l| l.id).collect();
                self.pipeline = processors(self.ia, &secret, &ids, self.params).map_err(|e| e.to_string())?;
            }
        }
        self.publish();
        Ok(())
    }
}

/// Sends a batch, retrying the rest after a partial send; returns how many went out.
fn send_all(sock: &BatchSocket, items: &[(&[u8], SocketAddr)]) -> usize {
    let mut sent = 0;
    while sent < items.len() {
        match sock.send_batch(&items[sent..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => sent += n,
        }
    }
    sent
}

/// The host and UDP port a packet for this AS goes to (SCION's dispatcher-less model).
fn local_destination(pkt: &[u8]) -> Option<SocketAddr> {
    let v = ScionView::new_checked(pkt).ok()?;
    if v.next_hdr() != SCION_UDP {
        return None;
    }
    let ip: IpAddr = match v.dst_host() {
        HostAddr::V4(a) => a.into(),
        HostAddr::V6(a) => a.into(),
        _ => return None,
    };
    let payload = v.payload();
    let port = u16::from_be_bytes([*payload.get(2)?, *payload.get(3)?]);
    (port != 0).then_some(SocketAddr::new(ip, port))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkChange {
    capacity_bps: Option<u64>,
    delay_ms: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicingChange {
    burst_ms: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyChange {
    master_secret: String,
}

/// Serves the management API on `addr` in a thread of its own.
pub fn serve_management(
    addr: SocketAddr,
    commands: Sender<CommandMsg>,
    status: Arc<Mutex<RouterStatus>>,
) -> anyhow::Result<()> {
    let server = Server::http(addr).map_err(|e| anyhow!("management API cannot listen on {addr}: {e}"))?;
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let url = req.url().to_string();
            let (code, text, json) = match (req.method(), url.as_str()) {
                (Method::Get, "/metrics") => (200, status.lock().map(|s| s.prometheus()).unwrap_or_default(), false),
                (Method::Get, "/v1/status") => (
                    200,
                    status.lock().map(|s| serde_json::to_string_pretty(&*s).unwrap_or_default()).unwrap_or_default(),
                    true,
                ),
                (Method::Put, path) => match parse_command(path, &body) {
                    Ok(cmd) => {
                        let (tx, rx) = mpsc::channel();
                        let reply = commands
                            .send((cmd, tx))
                            .map_err(|_| "router stopped".to_string())
                            .and_then(|_| rx.recv_timeout(Duration::from_secs(2)).map_err(|_| "no reply".to_string()))
                            .and_then(|r| r);
                        match reply {
                            Ok(()) => (200, "{\"ok\":true}".into(), true),
                            Err(e) => (400, serde_json::json!({ "error": e }).to_string(), true),
                        }
                    }
                    Err(e) => (400, serde_json::json!({ "error": e }).to_string(), true),
                },
                _ => (404, serde_json::json!({ "error": format!("no such endpoint: {url}") }).to_string(), true),
            };
            let ctype = if json { "application/json" } else { "text/plain; version=0.0.4" };
            let header = Header::from_bytes("Content-Type", ctype).expect("static header");
            let _ = req.respond(Response::from_string(text).with_status_code(code).with_header(header));
        }
    });
    Ok(())
}

fn parse_command(path: &str, body: &str) -> Result<Command, String> {
    let bad = |e: serde_json::Error| format!("bad request body: {e}");
    if let Some(id) = path.strip_prefix("/v1/interfaces/") {
        let id: u16 = id.parse().map_err(|_| format!("`{id}` is not an interface id"))?;
        let c: LinkChange = serde_json::from_str(body).map_err(bad)?;
        return Ok(Command::Link { id, capacity_bps: c.capacity_bps, delay_ms: c.delay_ms });
    }
    match path {
        "/v1/policing" => {
            Ok(Command::Burst { burst_ms: serde_json::from_str::<PolicingChange>(body).map_err(bad)?.burst_ms })
        }
        "/v1/keys" => {
            let k: KeyChange = serde_json::from_str(body).map_err(bad)?;
            Ok(Command::MasterSecret(hex::decode(k.master_secret.trim()).map_err(|e| format!("master_secret: {e}"))?))
        }
        _ => Err(format!("no such endpoint: PUT {path}")),
    }
}

/// Runs a border router from its config file until the process is stopped.
pub fn run(cfg_path: &Path) -> anyhow::Result<()> {
    let cfg = RouterConfig::load(cfg_path)?;
    let (fwd, commands, status) = Forwarder::new(&cfg, cfg_path)?;
    serve_management(cfg.management, commands, status)?;
    tracing::info!(ia = %cfg.ia, interfaces = cfg.interfaces.len(), "border router up");
    fwd.run()
}
