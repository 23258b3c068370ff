//! The border router process (`aviary router`): one AS, one UDP socket per inter-AS
//! interface plus one internal socket for the AS's hosts and services.
//!
//! One thread forwards: it waits for any socket or the next scheduler deadline, receives a
//! batch per readable socket, runs the batch through the mechanisms' sans-IO processors (see
//! [`pipeline`]), maps each forwarded packet's admission to a class of its egress link (see
//! [`classes`]), queues it in that link's egress scheduler (capacity, delay, class bounds) and
//! sends whatever the schedulers release. A second thread serves the management API
//! ([`management`]); it talks to the forwarding thread through a command channel and reads a
//! status copy the forwarding thread publishes a few times a second, so the forwarding path
//! takes no locks.
//!
//! Adding a mechanism to the router is one more constructor line in [`processors`].

pub mod classes;
pub mod glwp;
pub mod management;
pub mod metrics;
pub mod pipeline;
#[cfg(test)]
mod rotation_tests;
pub mod runtime_state;
pub mod scmp;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use aviary_hummingbird::{Router as HbirdRouter, SecretValue};
use aviary_pathval::PathvalProcessor;
use aviary_qos::{
    ClassId, Classifier, Context, EgressScheduler, LinkParams, LinkState, Processor, RandomSource, Verdict,
};
use aviary_scion::wire::header::src_ia_of;
use aviary_scion::wire::scmp::{self as scmp_wire, ScmpView, PROTOCOL_SCMP};
use aviary_scion::{AsForwarding, HopMacKey, HostAddr, IsdAsn, ScionView, StandardForwarder};
use aviary_zlane::router::ZlaneRouter;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

use crate::clock::unix_ns;
use crate::config::{read_secret, RouterConfig};
use management::{Command, CommandError, CommandMsg};
use metrics::{ClassSnapshot, InterfaceStats, IoDrop, RouterStatus};
use pipeline::Pipeline;
use runtime_state::RuntimeState;
use scmp::{Out, Responder, Trouble};

use crate::underlay::{wait_readable, BatchSocket, RecvBatch};

const BATCH: usize = aviary_hummingbird::router::MAX_BATCH;
const BUF_LEN: usize = 2048;
/// Longest sleep, so that management commands are applied promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);
const PUBLISH_EVERY_NS: u64 = 200_000_000;
const SCION_UDP: u8 = 17;
const NEXT_HDR: usize = aviary_scion::wire::header::field::NEXT_HDR;
const NO_LINK: u8 = u8::MAX;

/// The mechanisms this router hosts, keyed from the AS master secret: one line each. A Z-Lane
/// router's standard SCION is Z-Lane's processor, which also verifies EPIC and classifies.
pub fn processors(ia: IsdAsn, secret: &[u8], ids: &[u16], cfg: &RouterConfig, now_ns: u64) -> anyhow::Result<Pipeline> {
    let fwd = AsForwarding::new(ia, HopMacKey::from_master_secret(secret), ids.iter().copied());
    let scion: Box<dyn Processor> = match &cfg.zlane {
        Some(z) => {
            let links = cfg.guaranteed_bounds("router config")?;
            Box::new(
                ZlaneRouter::new(fwd.clone(), secret, z.clone(), links, now_ns).map_err(|e| anyhow!("zlane: {e}"))?,
            )
        }
        None => Box::new(StandardForwarder::standard(fwd.clone())),
    };
    let hummingbird = HbirdRouter::new(fwd, SecretValue::from_master_secret(secret), cfg.hummingbird)
        .map_err(|e| anyhow!("hummingbird: {e}"))?;
    let mut mechanisms: Vec<Box<dyn Processor>> = vec![scion, Box::new(hummingbird)];
    if let Some(p) = &cfg.pathval {
        mechanisms.push(Box::new(pathval_processor(ia, secret, ids, p, now_ns)?));
    }
    if let Some(g) = &cfg.glwp {
        mechanisms.push(Box::new(glwp::processor(ia, secret, g)?));
    }
    Ok(Pipeline::new(mechanisms)?)
}

/// The pathval processor of `[pathval]`: keys from the AS secret and the Level-1 keys file,
/// and an EpSampling key of its own, fresh at every start.
fn pathval_processor(
    ia: IsdAsn,
    secret: &[u8],
    ids: &[u16],
    p: &aviary_pathval::PathvalConfig,
    now_ns: u64,
) -> anyhow::Result<PathvalProcessor> {
    let level1 = match &p.level1_keys_file {
        Some(f) => crate::config::Level1KeysFile::load_at(f, now_ns / 1_000_000_000)?,
        None => Vec::new(),
    };
    let mut sampling = [0u8; 16];
    getrandom::getrandom(&mut sampling).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
    PathvalProcessor::new(ia, ids, p.clone(), secret, level1, sampling, now_ns).map_err(|e| match &p.level1_keys_file {
        Some(f) => anyhow!("pathval.{e} (Level-1 keys of this DRKey epoch from {})", f.display()),
        None => anyhow!("pathval.{e}"),
    })
}

/// The router's randomness for its mechanisms: ChaCha12 seeded from the operating system.
struct OsSeededRandom(ChaCha12Rng);

impl OsSeededRandom {
    fn new() -> anyhow::Result<Self> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
        Ok(Self(ChaCha12Rng::from_seed(seed)))
    }
}

impl RandomSource for OsSeededRandom {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out);
    }
}

struct Link {
    id: u16,
    sock: BatchSocket,
    remote: SocketAddr,
    sched: EgressScheduler<Vec<u8>>,
    classifier: Classifier,
}

impl Link {
    fn state(&self) -> LinkState {
        let p = self.sched.params();
        let queued = self.sched.stats().queued_bytes();
        let limit = self.sched.table().classes().iter().map(|c| c.queue_bytes as u64).sum();
        LinkState {
            id: self.id,
            up: p.rate_bps > 0,
            rate_bps: p.rate_bps,
            queued_bytes: queued,
            queue_limit_bytes: limit,
        }
    }
}

/// The forwarding thread's state.
pub struct Forwarder {
    ia: IsdAsn,
    cfg: RouterConfig,
    pipeline: Pipeline,
    internal: BatchSocket,
    links: Vec<Link>,
    /// Index into `links` by interface id (`NO_LINK` if none).
    link_of: Box<[u8]>,
    /// What processors see of the links; refreshed before every batch.
    link_states: Vec<LinkState>,
    random: OsSeededRandom,
    /// `stats[0]`: inside; `stats[i + 1]`: `links[i]`.
    stats: Vec<InterfaceStats>,
    pool: Vec<Vec<u8>>,
    rx: RecvBatch,
    status: Arc<Mutex<RouterStatus>>,
    commands: Receiver<CommandMsg>,
    started_unix_s: u64,
    /// The operator's runtime changes and where they are kept.
    runtime: RuntimeState,
    runtime_file: std::path::PathBuf,
    /// The AS master secret in force, kept as the previous one at the next rotation.
    secret: Vec<u8>,
    /// SCMP replies and errors: the slow path.
    scmp: Responder,
}

impl Forwarder {
    /// Binds every socket; fails with a message naming the address that is taken.
    pub fn new(
        cfg: &RouterConfig,
        cfg_path: &Path,
    ) -> anyhow::Result<(Self, Sender<CommandMsg>, Arc<Mutex<RouterStatus>>)> {
        let file = cfg_path.display().to_string();
        let secret = read_secret(cfg_path, "master_secret_file", &cfg.master_secret_file)?;
        // The operator's changes of an earlier run; a file that cannot be used stops the router
        // before it takes any socket.
        let runtime_file = runtime_state::state_file(cfg_path);
        let mut runtime = RuntimeState::load(&runtime_file)?;
        let ids: Vec<u16> = cfg.interfaces.iter().map(|i| i.id).collect();
        if ids.len() >= usize::from(NO_LINK) {
            anyhow::bail!("{file}: at most {} interfaces per router", NO_LINK - 1);
        }
        // Within a rotation's overlap the mechanisms start from the previous secret and rotate
        // to the current one, as they did before the restart.
        let previous = match runtime.key_rotation {
            Some(r) if unix_ns() < r.previous_until_ns => {
                let previous_file = runtime_state::previous_secret_file(&cfg.master_secret_file);
                let field = format!("key_rotation (previous secret {})", previous_file.display());
                Some((read_secret(&runtime_file, &field, &previous_file)?, r.previous_until_ns))
            }
            Some(_) => {
                end_overlap(&mut runtime, &runtime_file, &cfg.master_secret_file)
                    .with_context(|| format!("{}: key_rotation", runtime_file.display()))?;
                None
            }
            None => None,
        };
        let mut pipeline = processors(cfg.ia, previous.as_ref().map_or(&secret, |p| &p.0), &ids, cfg, unix_ns())?;
        if let Some((_, until)) = previous {
            pipeline.rotate_secret(&secret, until);
        }
        let tables = cfg.class_tables(&file)?;
        let internal = BatchSocket::bind(cfg.internal).with_context(|| format!("{file}: internal"))?;
        let mut links = Vec::new();
        let mut link_of = vec![NO_LINK; usize::from(u16::MAX) + 1].into_boxed_slice();
        let mut stats = vec![InterfaceStats { id: 0, ..Default::default() }];
        for (idx, i) in cfg.interfaces.iter().enumerate() {
            let sock = BatchSocket::bind(i.local).with_context(|| format!("{file}: interface[{idx}].local"))?;
            let table = tables[&i.class_table].clone();
            let classifier =
                classes::classifier(&file, &i.class_table, &table, &cfg.class_mapping(), pipeline.admissions())?;
            let params = LinkParams { rate_bps: i.capacity_bps, delay_ns: (i.delay_ms * 1e6) as u64 };
            link_of[usize::from(i.id)] = links.len() as u8;
            links.push(Link {
                id: i.id,
                sock,
                remote: i.remote,
                sched: EgressScheduler::new(params, table),
                classifier,
            });
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
        let link_states = links.iter().map(Link::state).collect();
        let fwd = Self {
            ia: cfg.ia,
            cfg: cfg.clone(),
            pipeline,
            internal,
            links,
            link_of,
            link_states,
            random: OsSeededRandom::new()?,
            stats,
            pool: Vec::new(),
            rx: RecvBatch::new(BATCH, BUF_LEN),
            status: status.clone(),
            commands,
            started_unix_s: unix_ns() / 1_000_000_000,
            runtime: RuntimeState::default(),
            runtime_file,
            secret,
            scmp: Responder::new(cfg.ia, cfg.internal.ip(), cfg.scmp),
        };
        let mut fwd = fwd;
        // The operator's changes of an earlier run come back before the first packet.
        for cmd in runtime.commands() {
            fwd.apply(cmd).map_err(|e| anyhow!("{}: {e:?}", fwd.runtime_file.display()))?;
        }
        fwd.runtime = runtime;
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
                let _ = reply.send(self.apply_and_keep(cmd));
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
                self.retire_previous_secret(now);
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
        // An inter-AS socket takes packets from its neighbour's socket only: anyone else
        // (a host injecting into a transit AS) is dropped before any processing.
        let neighbor = if k == 0 { None } else { Some(self.links[k - 1].remote) };
        // Traceroute requests this AS answers leave the batch (one byte compared per packet).
        let mut traceroutes: Vec<Vec<u8>> = Vec::new();
        for (buf, meta) in self.rx.iter_mut().take(n) {
            stats.received_packets += 1;
            stats.received_bytes += buf.len() as u64;
            if meta.truncated {
                stats.count_io_drop(IoDrop::Oversized);
            } else if neighbor.is_some_and(|r| r != meta.from) {
                stats.count_io_drop(IoDrop::NotNeighbor);
            } else if buf.get(NEXT_HDR) == Some(&PROTOCOL_SCMP) && Responder::is_traceroute_here(buf) {
                traceroutes.push(buf.to_vec());
            } else {
                pkts.push(buf);
            }
        }
        for (state, link) in self.link_states.iter_mut().zip(&self.links) {
            *state = link.state();
        }
        let verdicts = &mut verdicts[..pkts.len()];
        let mut ctx = Context { now_ns: now, ingress, links: &self.link_states, random: &mut self.random };
        self.pipeline.process_batch(&mut ctx, &mut pkts, verdicts);
        let mut originated: Vec<(Vec<u8>, Out)> = Vec::new();
        for original in traceroutes {
            // The request is answered only if this AS would have forwarded it.
            let mut copy = original.clone();
            let mut v = [Verdict::Deliver];
            self.pipeline.process_batch(&mut ctx, &mut [&mut copy[..]], &mut v);
            match v[0] {
                Verdict::Drop(reason) => {
                    self.stats[k].count_drop(self.pipeline.drop_label(&copy, reason));
                }
                _ => originated.extend(self.scmp.traceroute_reply(&original, ingress)),
            }
        }
        for (pkt, v) in pkts.iter().zip(verdicts.iter()) {
            match *v {
                Verdict::Forward { egress, admission } => {
                    let Some(link) = self.links.get_mut(usize::from(self.link_of[usize::from(egress)])) else {
                        self.stats[k].count_io_drop(IoDrop::NoLink);
                        continue;
                    };
                    if link.sched.params().rate_bps == 0 {
                        self.stats[k].count_io_drop(IoDrop::LinkDown);
                        originated.extend(self.scmp.error(pkt, ingress, Trouble::InterfaceDown(egress), now));
                        continue;
                    }
                    let class = link.classifier.classify(admission);
                    let source = src_ia_of(pkt).map_or(0, |ia| u64::from_be_bytes(ia.to_bytes()));
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(pkt);
                    if let Err(buf) = link.sched.enqueue(buf, class, source, now) {
                        self.pool.push(buf);
                    }
                }
                Verdict::Deliver if self.scmp.is_for_router(pkt) => match self.scmp.echo_reply(pkt, ingress) {
                    Some(reply) => originated.push(reply),
                    None => self.stats[k].count_io_drop(IoDrop::Undeliverable),
                },
                Verdict::Deliver => match local_destination(pkt) {
                    Some(addr) => {
                        let mut buf = self.pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(pkt);
                        deliveries.push((buf, addr));
                    }
                    None => self.stats[k].count_io_drop(IoDrop::Undeliverable),
                },
                Verdict::Drop(reason) => {
                    self.stats[k].count_drop(self.pipeline.drop_label(pkt, reason));
                    originated.extend(self.scmp.error(pkt, ingress, Trouble::Dropped(reason), now));
                }
            }
        }
        for (bytes, out) in originated {
            match out {
                Out::Host(addr) => deliveries.push((bytes, addr)),
                Out::Interface(id) => {
                    // Straight out, past the egress queue: SCMP is rare and rate-limited, and
                    // must reach a source whose packets that queue would drop.
                    if let Some(link) = self.links.get(usize::from(self.link_of[usize::from(id)])) {
                        send_all(&link.sock, &[(&bytes[..], link.remote)]);
                    }
                }
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
        self.stats[0].kernel_receive_drops = self.internal.kernel_receive_drops();
        for (i, link) in self.links.iter().enumerate() {
            self.stats[i + 1].kernel_receive_drops = link.sock.kernel_receive_drops();
            let s = link.sched.stats();
            self.stats[i + 1].classes = link
                .sched
                .table()
                .classes()
                .iter()
                .enumerate()
                .map(|(c, spec)| ClassSnapshot::new(&spec.name, s.class(ClassId(c as u8))))
                .collect();
        }
        let status = RouterStatus {
            ia: Some(self.ia),
            started_unix_s: self.started_unix_s,
            burst_ms: self.cfg.hummingbird.burst_ns as f64 / 1e6,
            interfaces: self.stats.clone(),
            mechanisms: self.pipeline.report(),
            scmp: self.scmp.counters,
        };
        if let Ok(mut s) = self.status.lock() {
            *s = status;
        }
    }

    /// Applies a management command and keeps it for the next start of the router. A change
    /// that cannot be kept is still in force; the failure is logged as an error.
    fn apply_and_keep(&mut self, cmd: Command) -> Result<(), CommandError> {
        let mut next = self.runtime.clone();
        next.record(&cmd);
        let rotated_to = match &cmd {
            Command::MasterSecret { secret, .. } => Some(secret.clone()),
            _ => None,
        };
        let replaced = self.secret.clone();
        self.apply(cmd)?;
        let kept = match rotated_to {
            // In this order: a crash between two writes leaves either no record of the rotation
            // or one whose previous secret is on disk, never a new secret without the old one.
            Some(s) => runtime_state::write_secret(
                &runtime_state::previous_secret_file(&self.cfg.master_secret_file),
                &replaced,
            )
            .and_then(|()| next.save(&self.runtime_file))
            .and_then(|()| runtime_state::write_secret(&self.cfg.master_secret_file, &s)),
            None => next.save(&self.runtime_file),
        };
        match kept {
            Ok(()) => self.runtime = next,
            Err(e) => tracing::error!("runtime change in force but not kept for a restart: {e}"),
        }
        Ok(())
    }

    /// Once a rotation's overlap is over, the previous secret leaves the disk.
    fn retire_previous_secret(&mut self, now: u64) {
        if self.runtime.key_rotation.is_some_and(|r| now >= r.previous_until_ns) {
            if let Err(e) = end_overlap(&mut self.runtime, &self.runtime_file, &self.cfg.master_secret_file) {
                tracing::error!("overlap of the key rotation over, but the previous secret is not removed: {e}");
            }
        }
    }

    fn apply(&mut self, cmd: Command) -> Result<(), CommandError> {
        match &cmd {
            // No secret in the log.
            Command::MasterSecret { previous_until_ns, .. } => {
                tracing::info!(previous_until_ns, "management command: key rotation")
            }
            _ => tracing::info!(?cmd, "management command"),
        }
        match cmd {
            Command::Link { id, capacity_bps, delay_ms } => {
                let k = self
                    .links
                    .iter()
                    .position(|l| l.id == id)
                    .ok_or_else(|| CommandError::NotFound(format!("no interface {id}")))?;
                let link = &mut self.links[k];
                let mut p = *link.sched.params();
                if let Some(d) = delay_ms {
                    if !(0.0..=10_000.0).contains(&d) {
                        return Err(CommandError::Invalid("delay_ms must be between 0 and 10000".into()));
                    }
                    p.delay_ns = (d * 1e6) as u64;
                    self.stats[k + 1].delay_ms = d;
                }
                if let Some(c) = capacity_bps {
                    p.rate_bps = c;
                    self.stats[k + 1].capacity_bps = c;
                }
                let now = unix_ns();
                link.sched.set_params_at(p, now);
                if p.rate_bps == 0 {
                    // A link that is down holds nothing for later: what waits is lost, counted.
                    let (stats, pool) = (&mut self.stats[k + 1], &mut self.pool);
                    link.sched.drain_queued(now, &mut |b| {
                        stats.count_io_drop(IoDrop::LinkDown);
                        pool.push(b);
                    });
                }
            }
            Command::Mechanism { name, request } => {
                self.pipeline.control(&name, &request).map_err(|e| match e {
                    pipeline::ControlFailure::NoMechanism(_) => CommandError::NotFound(e.to_string()),
                    pipeline::ControlFailure::Refused { .. } => CommandError::Invalid(e.to_string()),
                })?;
                if let Some(ms) = request.get("burst_ms").and_then(|v| v.as_f64()).filter(|_| name == "hummingbird") {
                    self.cfg.hummingbird.burst_ns = (ms * 1e6) as u64;
                }
                // Kept in the config too, so that a rebuilt pipeline (new master secret) has it.
                if let Some(z) = self.cfg.zlane.as_mut().filter(|_| name == "zlane") {
                    *z = z.changed(&request).map_err(|e| CommandError::Invalid(e.to_string()))?;
                }
            }
            Command::MasterSecret { secret, previous_until_ns } => {
                // Keys swapped in place: policers and duplicate filters carry on.
                self.pipeline.rotate_secret(&secret, previous_until_ns);
                self.secret = secret;
            }
        }
        self.publish();
        Ok(())
    }
}

/// Forgets a rotation whose overlap is over: its record in the runtime state and the previous
/// secret's file.
fn end_overlap(runtime: &mut RuntimeState, runtime_file: &Path, master_secret_file: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(runtime_state::previous_secret_file(master_secret_file)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut next = runtime.clone();
    next.key_rotation = None;
    next.save(runtime_file)?;
    *runtime = next;
    Ok(())
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

/// The host and UDP port a packet for this AS goes to (SCION's dispatcher-less model; for SCMP
/// see [`scmp_wire::destination_port`]).
fn local_destination(pkt: &[u8]) -> Option<SocketAddr> {
    let v = ScionView::new_checked(pkt).ok()?;
    let ip: IpAddr = match v.dst_host() {
        HostAddr::V4(a) => a.into(),
        HostAddr::V6(a) => a.into(),
        _ => return None,
    };
    // Extension headers (pathval's hop-by-hop option, say) come before the upper layer.
    let (l4, next) = aviary_scion::wire::udp::l4_offset(&v).ok()?;
    let payload = pkt.get(l4..)?;
    let port = match next {
        SCION_UDP => u16::from_be_bytes([*payload.get(2)?, *payload.get(3)?]),
        PROTOCOL_SCMP => scmp_wire::destination_port(&ScmpView::new_checked(payload).ok()?)?,
        _ => return None,
    };
    (port != 0).then_some(SocketAddr::new(ip, port))
}

/// Runs a border router from its config file until the process is stopped.
pub fn run(cfg_path: &Path) -> anyhow::Result<()> {
    let cfg = RouterConfig::load(cfg_path)?;
    let (fwd, commands, status) = Forwarder::new(&cfg, cfg_path)?;
    management::serve(cfg.management, commands, status)
        .with_context(|| format!("{}: management", cfg_path.display()))?;
    tracing::info!(ia = %cfg.ia, interfaces = cfg.interfaces.len(), "border router up");
    fwd.run()
}
