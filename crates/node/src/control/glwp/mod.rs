//! The AS's GLWP service, inside its control service: discovery (the GLWP paper, Alg. 1) as
//! UDP datagrams between the GLWP services of the ASes on a path, around the sans-IO cores of
//! `aviary_glwp::discovery` (an [`OnPathAs`] for the requests and responses it forwards, a
//! [`Source`] for its own hosts' discoveries).
//!
//! - **Addressing.** Every GLWP service listens on one UDP socket (`[glwp] listen`; in a run
//!   port p+7 of its AS) and sends from it. The services of the other ASes are the control
//!   service's `[[peer]]` entries with a `glwp` address; the neighbour over an interface is the
//!   AS the topology links it to. Like DRKey's Level-1 exchange, this inter-AS control traffic
//!   goes directly between control services over the underlay (the loopback in `aviary run`),
//!   not through the border routers.
//! - **Who sent a datagram.** Its UDP source address, which must be a peer's configured GLWP
//!   address (else `unknown_sender`); the cores then check that this AS is the message's
//!   neighbour on the path (`wrong_neighbour`), and charge the rate limit of the interface the
//!   request came in on.
//! - **State.** None per allocation: the cores' neighbour buckets and ledger, and, at the
//!   source only, the discoveries its own hosts are waiting for, by (AID, ts_pkt), while they
//!   wait.
//! - **Matrix updates** ([`updates`]): the service announces its matrix schedule to every
//!   neighbour at the start, after a change (`POST /v1/glwp/matrix`) and every
//!   [`updates::ANNOUNCE_EVERY`] (in case one was lost or its key not fetched yet), and checks
//!   and stores its neighbours' announcements. A change is persisted ([`persist`]) so that a
//!   restart resumes it; the blame policy (`[glwp] blame_limit`, ...) holds down neighbours
//!   blamed again and again until it ends or the operator clears it.
//! - **Loss.** The source retries a discovery with a fresh request (a new ts_pkt) after
//!   [`ATTEMPT_TIMEOUT`], [`ATTEMPTS`] times in all; a late answer to an abandoned attempt is
//!   dropped as `unsolicited`.

pub mod config;
mod hosts;
pub mod keys;
mod metrics;
pub mod persist;
pub mod updates;

use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};

use anyhow::Context;
use aviary_glwp::discovery::wire::{Kind, Message, MAX_ASES};
use aviary_glwp::discovery::{is_announcement, AnnouncementLimit, AsConfig, DiscoveryDrop, OnPathAs, Outcome, Source};
use aviary_glwp::{InterfaceId, MatrixSchedule};
use aviary_scion::drkey::{EpochSchedule, RotatingSecret};
use aviary_scion::IsdAsn;

use crate::clock::unix_ns;
use crate::config::ControlConfig;
use crate::control::drkey::DrkeyService;
use crate::http::client_limit::{ClientLimiter, RetryAfter};
use crate::topology::{ConfigError, Topology};
use config::GlwpPlan;
use keys::SharedKeys;
use metrics::{Counters, TransportDrop};

pub use hosts::{DiscoverError, ATTEMPTS, ATTEMPT_TIMEOUT};

/// How often a neighbour may announce its matrix: 16 at once, then 10 a second (a neighbour
/// re-announces every second per link; a change adds one).
const ANNOUNCEMENTS: AnnouncementLimit = AnnouncementLimit { burst: 16, refill_ns: 100_000_000 };

struct Cores {
    on_path: OnPathAs<SharedKeys>,
    source: Source<SharedKeys>,
}

type Waiters = HashMap<(u64, u64), mpsc::Sender<Vec<u8>>>;

/// One AS's GLWP service.
pub struct GlwpService {
    ia: IsdAsn,
    socket: UdpSocket,
    cores: Mutex<Cores>,
    keys: SharedKeys,
    /// The GLWP service of each peer AS, and the other way round.
    services: BTreeMap<IsdAsn, SocketAddr>,
    senders: HashMap<SocketAddr, IsdAsn>,
    /// The source's discoveries in flight, by (AID, ts_pkt).
    waiting: Mutex<Waiters>,
    counters: Counters,
    /// The `[glwp]` table and the AS's links with their capacities, against which a new
    /// matrix is checked.
    table: config::GlwpConfig,
    links: Vec<(InterfaceId, u64)>,
    /// Where the matrix schedule is kept across restarts ([`persist`]).
    schedule_file: PathBuf,
    /// Discoveries per host through the host API, if limited.
    host_limit: Option<Mutex<ClientLimiter>>,
}

/// Hosts whose discovery rate the service tracks at once (about 100 kB).
const MAX_LIMITED_HOSTS: usize = 4096;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its state whole: a panic elsewhere does not stop the service.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the service is made of (the control service checks its config and fetches nothing
/// before [`GlwpService::start`]).
struct GlwpSetup {
    pub ia: IsdAsn,
    pub listen: SocketAddr,
    pub plan: GlwpPlan,
    /// `K_k`, the AS's GLWP secret.
    pub secret: [u8; 16],
    /// The neighbour AS of each inter-AS interface.
    pub neighbours: BTreeMap<InterfaceId, IsdAsn>,
    /// The GLWP services of the other ASes.
    pub services: BTreeMap<IsdAsn, SocketAddr>,
    pub keys: SharedKeys,
    pub table: config::GlwpConfig,
    /// The AS's inter-AS interfaces and their links' capacities.
    pub links: Vec<(InterfaceId, u64)>,
    pub schedule_file: PathBuf,
    /// The schedule persisted before a restart, which replaces the table's matrix.
    pub resumed: Option<MatrixSchedule>,
}

impl GlwpService {
    /// Binds the socket and builds the cores; [`Self::start`] runs them.
    fn new(s: GlwpSetup) -> anyhow::Result<Self> {
        let config = AsConfig {
            ia: s.ia,
            secret: s.secret,
            matrix: s.plan.matrix,
            neighbours: s.neighbours,
            params: s.plan.params,
            announcement_limit: ANNOUNCEMENTS,
        };
        let mut on_path = OnPathAs::new(config.clone(), s.plan.rate, s.keys.clone())?;
        on_path.neighbourhood.set_blame_policy(s.plan.blame);
        if let Some(schedule) = s.resumed {
            tracing::info!(window = ?schedule.window(), "GLWP: resuming the persisted matrix schedule");
            on_path
                .neighbourhood
                .resume(schedule)
                .map_err(|e| anyhow::anyhow!("{}: {e}", s.schedule_file.display()))?;
        }
        let source = Source::new(config, s.keys.clone())?;
        let socket = UdpSocket::bind(s.listen).map_err(|e| anyhow::anyhow!("cannot bind {}: {e}", s.listen))?;
        Ok(Self {
            ia: s.ia,
            socket,
            cores: Mutex::new(Cores { on_path, source }),
            keys: s.keys,
            senders: s.services.iter().map(|(ia, addr)| (*addr, *ia)).collect(),
            services: s.services,
            waiting: Mutex::default(),
            counters: Counters::default(),
            table: s.table,
            links: s.links,
            schedule_file: s.schedule_file,
            host_limit: s.plan.host_rate.map(|r| Mutex::new(ClientLimiter::new(r, MAX_LIMITED_HOSTS))),
        })
    }

    /// Takes one discovery of the host at `ip` at `now_ns` against its rate, or says when it
    /// may ask again.
    pub fn admit_host(&self, ip: std::net::IpAddr, now_ns: u64) -> Result<(), RetryAfter> {
        let Some(limit) = &self.host_limit else { return Ok(()) };
        lock(limit).admit(ip, now_ns).inspect_err(|_| self.counters.host_request_limited())
    }

    /// Starts the key fetcher and the receiving thread, announcing the schedule first so that
    /// neighbours hear of it before this AS answers any discovery.
    pub fn start(self: &Arc<Self>, drkey: Arc<DrkeyService>) {
        let issuers = self.services.keys().copied().collect();
        self.keys.spawn_fetcher(drkey, self.ia, issuers);
        self.announce();
        let svc = self.clone();
        std::thread::spawn(move || svc.receive_loop());
        let svc = self.clone();
        std::thread::spawn(move || svc.announce_loop());
    }

    /// The service of a control service's `[glwp]` table `g`: its matrix checked against the
    /// AS's links in the topology, its neighbours from the topology, the other ASes' services
    /// from the peers, `K_k` from the AS's current master secret and the DRKey keys from the
    /// secret `master_secret` picks for their epoch.
    pub fn from_config(
        cfg: &ControlConfig,
        g: &config::GlwpConfig,
        topology: &Topology,
        master_secret: &RotatingSecret,
        schedule: EpochSchedule,
        cfg_path: &Path,
    ) -> anyhow::Result<Self> {
        let file = cfg_path.display().to_string();
        let links: Vec<u16> = topology.links_of(cfg.ia).map(|(l, ..)| l.ifid).collect();
        let plan = g.plan(&file, "glwp", &links)?;
        let capacities: Vec<(InterfaceId, u64)> =
            topology.links_of(cfg.ia).map(|(l, _, _, link)| (l.ifid, link.capacity_bps)).collect();
        let schedule_file = persist::schedule_path(&cfg.state_dir);
        let resumed = persist::load(&schedule_file, g, &capacities)?;
        if resumed.as_ref().is_some_and(|s| s.after() != &plan.matrix) {
            tracing::warn!(
                file = %schedule_file.display(),
                "GLWP: the [glwp] matrix differs from the persisted schedule, which holds (change the matrix with POST /v1/glwp/matrix)"
            );
        }
        let listen = g.listen.ok_or_else(|| ConfigError::new(&file, "glwp.listen", "missing"))?;
        let setup = GlwpSetup {
            ia: cfg.ia,
            listen,
            plan,
            secret: aviary_glwp::hop_key::as_secret(master_secret.current()),
            neighbours: topology.links_of(cfg.ia).map(|(l, r, ..)| (l.ifid, r.ia)).collect(),
            services: cfg.peers.iter().filter_map(|p| Some((p.ia, p.glwp?))).collect(),
            keys: SharedKeys::new(master_secret.clone(), schedule),
            table: g.clone(),
            links: capacities,
            schedule_file,
            resumed,
        };
        Self::new(setup).with_context(|| format!("{file}: glwp"))
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The AS of the GLWP service sending from `addr`; a datagram from any other address is
    /// counted as from an unknown sender.
    fn sender(&self, addr: SocketAddr) -> Option<IsdAsn> {
        let from = self.senders.get(&addr).copied();
        if from.is_none() {
            self.counters.transport(TransportDrop::UnknownSender);
        }
        from
    }

    fn receive_loop(&self) {
        // One byte more than the longest message, so that a longer datagram is seen as such.
        let mut buf = vec![0u8; aviary_glwp::discovery::wire::message_len(MAX_ASES) + 1];
        loop {
            match self.socket.recv_from(&mut buf) {
                Ok((n, addr)) => self.receive(&mut buf[..n], addr),
                Err(e) => {
                    tracing::debug!("GLWP socket: {e}");
                    self.counters.transport(TransportDrop::ReceiveError);
                }
            }
        }
    }

    /// One datagram from `addr`: checked as a message (the cheapest check first), its sender
    /// identified, then handed to the core its kind and hop pointer name.
    fn receive(&self, msg: &mut [u8], addr: SocketAddr) {
        let now = unix_ns();
        if is_announcement(msg) {
            self.receive_announcement(msg, addr, now);
            return;
        }
        let (kind, hop_pointer, ts_pkt) = match Message::new_checked(&*msg) {
            Ok(m) => (m.kind(), m.hop_pointer(), m.ts_pkt()),
            Err(e) => {
                lock(&self.cores).on_path.stats.count(e.into());
                return;
            }
        };
        let Some(from) = self.sender(addr) else { return };
        match (kind, hop_pointer) {
            (Kind::Request, _) | (Kind::Response, 1..) => {
                let forward = kind == Kind::Request;
                self.counters.processed(forward);
                let outcome = {
                    let mut cores = lock(&self.cores);
                    self.keys.select(ts_pkt);
                    match forward {
                        true => cores.on_path.forward(msg, from, now),
                        false => cores.on_path.backward(msg, from, now),
                    }
                };
                if let Ok(outcome) = outcome {
                    self.send_on(msg, outcome);
                }
            }
            _ => self.to_waiting_source(msg, from),
        }
    }

    /// Sends a message on where the core said.
    fn send_on(&self, msg: &[u8], outcome: Outcome) {
        let to = match outcome {
            Outcome::Forward { to, .. } | Outcome::Respond { to, .. } | Outcome::Refuse { to } => to,
        };
        let Some(&addr) = self.services.get(&to) else {
            self.counters.transport(TransportDrop::NoService);
            return;
        };
        if let Err(e) = self.socket.send_to(msg, addr) {
            tracing::debug!(%to, %addr, "GLWP send: {e}");
            self.counters.transport(TransportDrop::SendError);
        }
    }

    /// A response or refusal for this AS as the source: to the host's discovery waiting for it,
    /// if it came from the AS that sends it (the first on-path AS, or the refusing one).
    fn to_waiting_source(&self, msg: &[u8], from: IsdAsn) {
        let Ok(m) = Message::new_checked(msg) else { return };
        let drop = if m.src() != self.ia {
            Some(DiscoveryDrop::NotOnPath)
        } else if m.nid(m.hop_pointer().max(1)) != from {
            Some(DiscoveryDrop::WrongNeighbour)
        } else {
            None
        };
        if let Some(d) = drop {
            lock(&self.cores).source.stats.count(d);
            return;
        }
        match lock(&self.waiting).remove(&(m.aid(), m.ts_pkt())) {
            Some(waiter) => {
                // The host's thread may have given up just now: then the answer is unsolicited.
                if waiter.send(msg.to_vec()).is_err() {
                    self.counters.transport(TransportDrop::Unsolicited);
                }
            }
            None => self.counters.transport(TransportDrop::Unsolicited),
        }
    }

    /// The service's families for the control service's `/metrics`.
    pub fn prometheus(&self, out: &mut crate::metrics::Exposition) {
        let cores = lock(&self.cores);
        let fetch_errors = self.keys.fetch_errors.load(Ordering::Relaxed);
        self.counters.prometheus(out, self.ia, &cores.on_path.stats, &cores.source.stats, fetch_errors);
        self.counters.prometheus_updates(out, self.ia, cores.on_path.neighbourhood.blames(), unix_ns());
    }

    /// The operator's reset of the hold-down of neighbour `n`; whether it was held down.
    pub fn clear_hold_down(&self, n: IsdAsn) -> bool {
        let cleared = lock(&self.cores).on_path.neighbourhood.clear_hold_down(n, unix_ns());
        tracing::info!(neighbour = %n, cleared, "GLWP: hold-down cleared by the operator");
        cleared
    }
}
