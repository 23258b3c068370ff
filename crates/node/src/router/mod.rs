//! The border router process (`aviary router`): one AS, one UDP socket per inter-AS
//! interface plus one internal socket for the AS's hosts and services.
//!
//! `workers` threads forward (see [`worker`]; docs/performance.md, "Workers"): each waits for
//! its share of the sockets, the next scheduler deadline or a wake-up, receives a batch per
//! readable socket, steers each packet to the worker that owns its policing state (see
//! [`steering`]), runs its packets through its own copy of the mechanisms' sans-IO processors
//! (see [`pipeline`]), maps each forwarded packet's admission to a class of its egress link
//! (see [`classes`]), queues it in that link's one egress scheduler (capacity, delay, class
//! bounds; see [`egress`]) and sends whatever the schedulers release. Another thread serves
//! the management API ([`management`]); it talks to the first worker, the leader, through a
//! command channel, and the leader passes pipeline changes to every other worker. Each worker
//! publishes its counters a few times a second; `/metrics` shows their sum.
//!
//! Adding a mechanism to the router is one more constructor line in [`processors`].

pub mod classes;
mod command;
pub mod egress;
pub mod glwp;
pub mod management;
pub mod metrics;
mod output;
pub mod pipeline;
#[cfg(test)]
mod rotation_tests;
pub mod runtime_state;
pub mod scmp;
pub mod steering;
mod worker;
pub mod workers;
#[cfg(test)]
mod workers_tests;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use aviary_hummingbird::{Router as HbirdRouter, SecretValue};
use aviary_pathval::PathvalProcessor;
use aviary_qos::{EgressScheduler, LinkParams, Processor, RandomSource};
use aviary_scion::drkey::{Epoch, RotatingSecret};
use aviary_scion::wire::scmp::{self as scmp_wire, ScmpView, PROTOCOL_SCMP};
use aviary_scion::{AsForwarding, HopMacKey, HostAddr, IsdAsn, ScionView, StandardForwarder};
use aviary_zlane::router::ZlaneRouter;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

use crate::clock::unix_ns;
use crate::config::{read_secret, RouterConfig, ScmpConfig};
use crate::secret_rotation;
use egress::SharedLink;
use management::CommandMsg;
use metrics::InterfaceStats;
use pipeline::Pipeline;
use runtime_state::{KeyRotation, RuntimeState};
use steering::Spread;
pub use worker::Forwarder;
use workers::{Inbox, Peer, StatusBoard, Waker};

use crate::underlay::{BatchSocket, DEFAULT_BATCH};

const BATCH: usize = aviary_hummingbird::router::MAX_BATCH;
const BUF_LEN: usize = 2048;
/// Packets one worker's hand-off queue holds ([`workers::Peer::handed`]), and the most it
/// takes from it per round: a few batches. An attacker chooses the steering key (source host,
/// ResID, AID are unauthenticated), so it can steer a flood to one worker; bounded, that
/// worker's queue costs at most this many buffers, and one round of it leaves the worker time
/// for its own sockets and commands. Four batches absorb the hand-offs of a few peers' rounds
/// without drops under legitimate load.
const HANDOFF_CAPACITY: usize = 4 * BATCH;
/// Longest sleep, so that management commands are applied promptly.
const MAX_SLEEP: Duration = Duration::from_millis(20);
const PUBLISH_EVERY_NS: u64 = 200_000_000;
const SCION_UDP: u8 = 17;
const NEXT_HDR: usize = aviary_scion::wire::header::field::NEXT_HDR;
const NO_LINK: u8 = u8::MAX;

/// The mechanisms this router hosts, keyed from the AS master secret: one line each. A Z-Lane
/// router's standard SCION is Z-Lane's processor, which also verifies EPIC and classifies.
/// Hop-field and flyover keys come from `secret`, DRKey keys from the secret `drkey` picks for
/// their epoch. `sampling` is pathval's EpSampling key, one for all workers of a router.
pub fn processors(
    ia: IsdAsn,
    secret: &[u8],
    drkey: &RotatingSecret,
    ids: &[u16],
    cfg: &RouterConfig,
    sampling: [u8; 16],
    now_ns: u64,
) -> anyhow::Result<Pipeline> {
    let fwd = AsForwarding::new(ia, HopMacKey::from_master_secret(secret), ids.iter().copied());
    let schedule = cfg.drkey_epochs.schedule("router config", "drkey_epochs")?;
    let scion: Box<dyn Processor> = match &cfg.zlane {
        Some(z) => {
            let links = cfg.guaranteed_bounds("router config")?;
            let zlane = ZlaneRouter::new(fwd.clone(), drkey, schedule, z.clone(), links, now_ns);
            Box::new(zlane.map_err(|e| anyhow!("zlane: {e}"))?)
        }
        None => Box::new(StandardForwarder::standard(fwd.clone())),
    };
    let hummingbird = HbirdRouter::new(fwd, SecretValue::from_master_secret(secret), cfg.hummingbird)
        .map_err(|e| anyhow!("hummingbird: {e}"))?;
    let mut mechanisms: Vec<Box<dyn Processor>> = vec![scion, Box::new(hummingbird)];
    if let Some(p) = &cfg.pathval {
        let epoch = schedule.epoch_at(now_ns / 1_000_000_000).map_err(|e| anyhow!("pathval: {e}"))?;
        mechanisms.push(Box::new(pathval_processor(ia, drkey, ids, p, sampling, epoch, now_ns)?));
    }
    if let Some(g) = &cfg.glwp {
        mechanisms.push(Box::new(glwp::processor(ia, secret, g)?));
    }
    Ok(Pipeline::new(mechanisms)?)
}

/// The pathval processor of `[pathval]`: keys of the AS's DRKey epoch `epoch` (the one of
/// `now_ns`) from the AS secret and the Level-1 keys file, and the router's EpSampling key,
/// fresh at every start.
fn pathval_processor(
    ia: IsdAsn,
    drkey: &RotatingSecret,
    ids: &[u16],
    p: &aviary_pathval::PathvalConfig,
    sampling: [u8; 16],
    epoch: Epoch,
    now_ns: u64,
) -> anyhow::Result<PathvalProcessor> {
    let level1 = match &p.level1_keys_file {
        Some(f) => crate::config::Level1KeysFile::load_at(f, now_ns / 1_000_000_000)?,
        None => Vec::new(),
    };
    PathvalProcessor::new(ia, ids, p.clone(), drkey, level1, sampling, epoch).map_err(|e| match &p.level1_keys_file {
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

/// What every worker shares: the sockets and the links' schedulers.
pub struct Links {
    pub internal: BatchSocket,
    pub links: Vec<SharedLink>,
    /// Index into `links` by interface id (`NO_LINK` if none).
    link_of: Box<[u8]>,
}

impl Links {
    /// The link of interface `id`, in O(1).
    pub fn get(&self, id: u16) -> Option<&SharedLink> {
        self.links.get(usize::from(self.link_of[usize::from(id)]))
    }
    /// Its index in `links`.
    pub fn index_of(&self, id: u16) -> Option<usize> {
        Some(usize::from(self.link_of[usize::from(id)])).filter(|&k| k < self.links.len())
    }
}

/// The router's workers, ready to run: the first is the leader, which takes the management
/// commands sent on the returned channel; `/metrics` reads the returned board. Binds every
/// socket; fails with a message naming the address that is taken.
pub fn start(
    cfg: &RouterConfig,
    cfg_path: &Path,
) -> anyhow::Result<(Vec<Forwarder>, Sender<CommandMsg>, Arc<StatusBoard>)> {
    let file = cfg_path.display().to_string();
    let n = cfg.worker_count();
    let schedule = cfg.drkey_epochs.schedule(&file, "drkey_epochs")?;
    let secret = read_secret(cfg_path, "master_secret_file", &cfg.master_secret_file)?;
    // The operator's changes of an earlier run; a file that cannot be used stops the router
    // before it takes any socket.
    let runtime_file = runtime_state::state_file(cfg_path);
    let mut runtime = RuntimeState::load(&runtime_file)?;
    let ids: Vec<u16> = cfg.interfaces.iter().map(|i| i.id).collect();
    if ids.len() >= usize::from(NO_LINK) {
        anyhow::bail!("{file}: at most {} interfaces per router", NO_LINK - 1);
    }
    // While the previous secret is needed the mechanisms start from it and rotate to the
    // current one, as they did before the restart; DRKey epochs derive from the one each
    // takes under the recorded rotation.
    let previous = match runtime.key_rotation {
        Some(r) if unix_ns() < r.keep_until_ns(schedule) => {
            let previous_file = secret_rotation::previous_secret_file(&cfg.master_secret_file);
            let field = format!("key_rotation (previous secret {})", previous_file.display());
            Some((read_secret(&runtime_file, &field, &previous_file)?, r))
        }
        Some(_) => {
            end_overlap(&mut runtime, &runtime_file, &cfg.master_secret_file)
                .with_context(|| format!("{}: key_rotation", runtime_file.display()))?;
            None
        }
        None => None,
    };
    let mut sampling = [0u8; 16];
    getrandom::getrandom(&mut sampling).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
    let now = unix_ns();
    let drkey = match &previous {
        Some((old, KeyRotation { rotated_at_s: Some(at), .. })) => RotatingSecret::rotated(&secret, old, *at),
        _ => RotatingSecret::new(&secret),
    }
    .map_err(|e| anyhow!("{file}: master_secret_file: {e}"))?;
    let mut pipelines = Vec::with_capacity(n);
    for _ in 0..n {
        let start_secret = previous.as_ref().map_or(&secret, |p| &p.0);
        let mut pipeline = processors(cfg.ia, start_secret, &drkey, &ids, cfg, sampling, now)?;
        if let Some((_, r)) = previous {
            // `drkey` has the rotation already (rotating DRKey to its current secret changes
            // nothing), also for a record without its instant.
            pipeline.rotate_secret(&secret, r.previous_until_ns, drkey.rotated_at_s().unwrap_or(0));
        }
        pipelines.push(pipeline);
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
            classes::classifier(&file, &i.class_table, &table, &cfg.class_mapping(), pipelines[0].admissions())?;
        let params = LinkParams { rate_bps: i.capacity_bps, delay_ns: (i.delay_ms * 1e6) as u64 };
        link_of[usize::from(i.id)] = links.len() as u8;
        links.push(SharedLink::new(i.id, sock, i.remote, classifier, EgressScheduler::new(params, table)));
        stats.push(InterfaceStats {
            id: i.id,
            neighbor: Some(i.neighbor),
            capacity_bps: i.capacity_bps,
            delay_ms: i.delay_ms,
            ..Default::default()
        });
    }
    let shared = Arc::new(Links { internal, links, link_of });
    let (commands_tx, commands) = mpsc::channel();
    let board = Arc::new(StatusBoard::new(n));
    let mut peers = Vec::with_capacity(n);
    let mut inboxes = Vec::with_capacity(n);
    for _ in 0..n {
        // Bounded: a packet that finds it full is dropped and counted by the worker handing it over.
        let (handed, handed_rx) = mpsc::sync_channel(HANDOFF_CAPACITY);
        let (changes, changes_rx) = mpsc::channel();
        peers.push(Peer { handed, changes, waker: Waker::new().context("eventfd for a worker")? });
        inboxes.push(Inbox { handed: handed_rx, changes: changes_rx });
    }
    let peers: Arc<[Peer]> = peers.into();
    // Z-Lane keeps state per origin (source AS, or a foreign source's ISD), pathval per source
    // AS: their packets are steered by that alone.
    let spread = match (&cfg.zlane, &cfg.pathval) {
        (Some(_), _) => Spread::ByZlaneOrigin { own_isd: cfg.ia.isd() },
        (None, Some(_)) => Spread::BySourceAs,
        (None, None) => Spread::BySourceHost,
    };
    let scmp = split_scmp_budget(cfg.scmp, n);
    let mut commands = Some(commands);
    let mut workers = Vec::with_capacity(n);
    for (index, (pipeline, inbox)) in pipelines.into_iter().zip(inboxes).enumerate() {
        workers.push(Forwarder::new(worker::Setup {
            index,
            cfg,
            pipeline,
            shared: shared.clone(),
            stats: stats.clone(),
            peers: peers.clone(),
            inbox,
            spread,
            board: board.clone(),
            commands: commands.take(),
            runtime_file: runtime_file.clone(),
            secret: secret.clone(),
            scmp,
        })?);
    }
    // The operator's changes of an earlier run come back before the first packet, on every
    // worker.
    let (leader, followers) = workers.split_first_mut().expect("at least one worker");
    for cmd in runtime.commands() {
        let change = leader.apply_here(cmd).map_err(|e| anyhow!("{}: {e:?}", runtime_file.display()))?;
        for f in followers.iter_mut() {
            if let Some(change) = &change {
                f.change(change.clone());
            }
        }
    }
    leader.keep_runtime(runtime);
    // The management API shows the router as it starts, before the first round of any worker.
    for w in &mut workers {
        w.publish();
    }
    Ok((workers, commands_tx, board))
}

/// Each worker's share of the router's SCMP error budget (so that the router as a whole keeps
/// to the configured rate; a burst rounds up to at least one error per worker).
fn split_scmp_budget(cfg: ScmpConfig, workers: usize) -> ScmpConfig {
    ScmpConfig {
        errors_per_s: cfg.errors_per_s / workers as f64,
        error_burst: cfg.error_burst.div_ceil(workers as u32).max(1),
    }
}

/// Forgets a rotation whose previous secret is no longer needed: its record in the runtime
/// state and the files beside the master secret.
fn end_overlap(runtime: &mut RuntimeState, runtime_file: &Path, master_secret_file: &Path) -> std::io::Result<()> {
    secret_rotation::forget(master_secret_file)?;
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

/// Sends owned datagrams (chunks of borrowed slices on the stack); returns how many went out.
fn send_owned(sock: &BatchSocket, items: &[(Vec<u8>, SocketAddr)]) -> usize {
    let nowhere = SocketAddr::from(([0, 0, 0, 0], 0));
    let mut sent = 0;
    for chunk in items.chunks(DEFAULT_BATCH) {
        let mut slices = [(&[][..], nowhere); DEFAULT_BATCH];
        for (slot, (b, to)) in slices.iter_mut().zip(chunk) {
            *slot = (b.as_slice(), *to);
        }
        let n = send_all(sock, &slices[..chunk.len()]);
        sent += n;
        if n < chunk.len() {
            break;
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

/// The addresses of the router's own sockets. A packet for this AS addressed to one of them
/// must not be delivered: it would come back to the router, and to the internal socket, which
/// the router delivers from, again and again until the router stops.
#[derive(Clone, Debug)]
struct OwnSockets(Vec<SocketAddr>);

impl OwnSockets {
    fn new(addrs: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self(addrs.into_iter().map(|a| SocketAddr::new(a.ip().to_canonical(), a.port())).collect())
    }

    /// Whether a datagram sent to `dst` reaches one of the sockets: the same address, or any
    /// address of this host for a socket bound to the unspecified one. A datagram to the
    /// unspecified address goes to this host itself (Linux sends it to the sender's address).
    fn reached_by(&self, dst: SocketAddr) -> bool {
        let ip = dst.ip().to_canonical();
        self.0
            .iter()
            .filter(|a| a.port() == dst.port())
            .any(|a| a.ip() == ip || ip.is_unspecified() || (a.ip().is_unspecified() && is_local_address(ip)))
    }
}

/// Whether `ip` is an address of this host: a loopback address, or one a socket can be bound
/// to. Asked anew each time, so that addresses added while the router runs count too; only
/// packets to the port of a socket bound to the unspecified address get here.
fn is_local_address(ip: IpAddr) -> bool {
    ip.is_loopback() || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// Runs a border router from its config file until the process is stopped: the leader on this
/// thread, every other worker on a thread of its own.
pub fn run(cfg_path: &Path) -> anyhow::Result<()> {
    let cfg = RouterConfig::load(cfg_path)?;
    let (mut workers, commands, board) = start(&cfg, cfg_path)?;
    let overlap = cfg.glwp.as_ref().map_or_else(management::KeyOverlap::default, glwp::RouterGlwpConfig::key_overlap);
    let file = cfg_path.display().to_string();
    let token = cfg.operator_token_file.as_ref().map(|f| crate::config::read_operator_token(&file, f)).transpose()?;
    // Served as long as the router runs.
    let _management = management::serve(cfg.management, commands, board, overlap, token)
        .with_context(|| format!("{}: management", cfg_path.display()))?;
    tracing::info!(ia = %cfg.ia, interfaces = cfg.interfaces.len(), workers = workers.len(), "border router up");
    let leader = workers.remove(0);
    for w in workers {
        let index = w.index();
        std::thread::Builder::new().name(format!("router-worker-{index}")).spawn(move || {
            if let Err(e) = w.run() {
                // A worker's sockets are the router's: without it the router is broken.
                tracing::error!(worker = index, "router worker stopped: {e:#}");
                std::process::exit(1);
            }
        })?;
    }
    leader.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_sockets_are_reached_at_their_address_or_any_local_one_for_a_wildcard_bind() {
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
        let own = OwnSockets::new([addr("127.0.0.1:30042"), addr("0.0.0.0:30043"), addr("[::1]:30044")]);
        assert!(own.reached_by(addr("127.0.0.1:30042")));
        // Another loopback address is another address; the unspecified one is this host.
        assert!(!own.reached_by(addr("127.0.0.2:30042")));
        assert!(own.reached_by(addr("0.0.0.0:30042")));
        assert!(!own.reached_by(addr("127.0.0.1:30041")));
        // The wildcard bind takes its port on every address of this host, and only there.
        assert!(own.reached_by(addr("127.0.0.9:30043")));
        assert!(own.reached_by(addr("[::ffff:127.0.0.1]:30043")));
        assert!(!own.reached_by(addr("192.0.2.1:30043")), "TEST-NET-1 is no address of this host");
        assert!(own.reached_by(addr("[::1]:30044")) && !own.reached_by(addr("[::2]:30044")));
    }
}
