//! `aviary run`: turns a topology into a run directory of per-process configs and starts,
//! supervises and stops one border router and one control service per AS.
//!
//! Layout of a run directory:
//! ```text
//! topology.toml                  copy of the topology (control services read it)
//! <isd-as>/router.toml           router config     <isd-as>/control.toml  control config
//! <isd-as>/master.key            the AS's secret (only this AS's processes read it)
//! <isd-as>/pathval-level1.toml   a trusted pathval router's Level-1 keys from other ASes
//! <isd-as>/operator.token        the AS operator's bearer token: reservations, router changes,
//!                                infrastructure DRKey keys
//! <isd-as>/zlane-gateway.toml    the AS's Z-Lane gateway, if the topology asks for one
//! <isd-as>/state/                the control service's granted ResIDs
//! <isd-as>/cs-tls.pem, cs-tls.key the control service's TLS certificate and key (DRKey)
//! pki/isd-<n>-root.pem, .key     the root certificate and key of ISD n (see [`pki`])
//! hosts/<name>.toml              host configs for `aviary host`
//! logs/<isd-as>-router.log ...   each process's output; logs/supervisor.log
//! metrics-targets.json           every daemon's /metrics address (Prometheus file_sd format)
//! ```
//! AS number k (in topology order, from 1) lives on 127.0.k.1 with ports from
//! `p = port_base + 100·(k−1)`: p the router's internal socket, p+1 its management API
//! (`/metrics`), p+2 the control service (`/metrics` too), p+3 the control service's DRKey
//! Level-1 service (TLS), p+4 the AS service's metrics endpoint, p+5 the Z-Lane gateway's UDP
//! socket and p+6 its metrics endpoint, p+7 the GLWP service's UDP socket (in the control
//! service, for an AS with `[as.glwp]`), p+10... the router's link sockets; its hosts on
//! 127.0.k.10, 127.0.k.11, ...

pub mod health;
pub mod market_setup;
pub mod pki;
pub mod supervisor;
pub mod zlane_gateway;

pub use supervisor::{spawn_process, ProcessHealth, ProcessState, RestartPolicy};

use std::collections::BTreeMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use aviary_scion::IsdAsn;
use serde::Serialize;

use crate::config::{
    write_toml, ControlConfig, DrkeyConfig, GrantConfig, HostConfig, InterfaceConfig, Level1KeyEntry, Level1KeysFile,
    Peer, QueueConfig, RouterConfig, TrustRoot,
};
use crate::control::glwp::config::GlwpConfig;
use crate::files;
use crate::gateway::config::ZlaneGatewayConfig;
use crate::router::glwp::RouterGlwpConfig;
use crate::runner::market_setup::MarketLayout;
use crate::topology::Topology;
use aviary_pathval::PathvalConfig;
use supervisor::{supervise, ProcState, Supervised};

/// Offset of the GLWP service's UDP port from the AS's port base.
const GLWP_PORT: usize = 7;

/// File name of the metrics targets in a run directory.
pub const METRICS_TARGETS: &str = "metrics-targets.json";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Router,
    Control,
    AsService,
    ZlaneGateway,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Router => "router",
            Role::Control => "control",
            Role::AsService => "as-service",
            Role::ZlaneGateway => "zlane-gateway",
        }
    }
}

/// Addresses and files of one AS in a run.
#[derive(Clone, Debug)]
pub struct AsRun {
    pub ia: IsdAsn,
    pub dir: PathBuf,
    pub router: RouterConfig,
    pub control: ControlConfig,
    /// The AS service's `/metrics` endpoint (used when the run has a market).
    pub as_service_metrics: SocketAddr,
    /// The AS's Z-Lane gateway, if the topology asks for one.
    pub zlane_gateway: Option<ZlaneGatewayConfig>,
}

impl AsRun {
    pub fn operator_token(&self) -> anyhow::Result<String> {
        let f = self.dir.join("operator.token");
        Ok(fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?.trim().to_string())
    }
}

/// The configs of every process of a topology, written to a run directory.
#[derive(Clone, Debug)]
pub struct RunLayout {
    pub dir: PathBuf,
    pub topology: Topology,
    pub ases: BTreeMap<IsdAsn, AsRun>,
    pub hosts: BTreeMap<String, HostConfig>,
    /// The bandwidth market, when the run has one ([`RunLayout::enable_market`]).
    pub market: Option<MarketLayout>,
}

fn ia_dir(ia: IsdAsn) -> String {
    ia.to_string().replace(':', "_")
}

fn random_hex(n: usize) -> anyhow::Result<String> {
    let mut b = vec![0u8; n];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(hex::encode(b))
}

/// The most ASes a run lays out: AS k (from 0) has the addresses 127.0.(k + 1).x.
const MAX_RUN_ASES: usize = 255;
/// The most links an AS has in a run: its block of 100 ports holds its services at offsets
/// 0-9 and its link ends from 10.
const MAX_RUN_LINKS: usize = 90;
/// The most hosts an AS has in a run: they are 127.0.k.10 to 127.0.k.254.
const MAX_RUN_HOSTS: usize = 245;

/// Whether the topology fits the addresses and ports a run gives each AS; beyond them two
/// processes would share an address (another AS's host, or the AS's own router) or a port.
fn fits_a_run(topology: &Topology, file: &Path) -> anyhow::Result<()> {
    let file = file.display();
    let n = topology.ases.len();
    if n > MAX_RUN_ASES {
        bail!("{file}: as: {n} ASes; a run gives each its own 127.0.k.0/24, so it lays out at most {MAX_RUN_ASES}");
    }
    for (k, a) in topology.ases.iter().enumerate() {
        let links = topology.links_of(a.ia).count();
        if links > MAX_RUN_LINKS {
            bail!("{file}: as[{k}] ({}): {links} links; a run has ports for {MAX_RUN_LINKS} per AS", a.ia);
        }
        let hosts = topology.hosts.iter().filter(|h| h.ia == a.ia).count();
        if hosts > MAX_RUN_HOSTS {
            bail!("{file}: host: {hosts} hosts in {}; a run has addresses for {MAX_RUN_HOSTS} per AS", a.ia);
        }
    }
    Ok(())
}

impl RunLayout {
    /// Derives every process's config from the topology and writes them under `dir`.
    pub fn write(topology_file: &Path, dir: &Path, port_base: u16) -> anyhow::Result<Self> {
        let topology = Topology::load(topology_file)?;
        fits_a_run(&topology, topology_file)?;
        let n = topology.ases.len();
        if usize::from(port_base) + 100 * n > usize::from(u16::MAX) {
            bail!("--port-base {port_base} leaves no room for {n} ASes (100 ports each)");
        }
        fs::create_dir_all(dir.join("logs")).with_context(|| format!("cannot create {}", dir.display()))?;
        fs::create_dir_all(dir.join("hosts"))?;
        let dir = dir.canonicalize()?;
        fs::copy(topology_file, dir.join("topology.toml"))?;
        let index: BTreeMap<IsdAsn, usize> = topology.ases.iter().enumerate().map(|(k, a)| (a.ia, k)).collect();
        let ip = |k: usize, host: u8| IpAddr::V4(Ipv4Addr::new(127, 0, (k + 1) as u8, host));
        let port = |k: usize, off: usize| port_base + (100 * k + off) as u16;
        // The socket of each link end: (ia, ifid) -> address.
        let mut link_addr = BTreeMap::new();
        for a in &topology.ases {
            let k = index[&a.ia];
            for (j, (local, ..)) in topology.links_of(a.ia).enumerate() {
                link_addr.insert((a.ia, local.ifid), SocketAddr::new(ip(k, 1), port(k, 10 + j)));
            }
        }
        let peers: Vec<Peer> = topology
            .ases
            .iter()
            .map(|a| {
                let k = index[&a.ia];
                Peer {
                    ia: a.ia,
                    control: SocketAddr::new(ip(k, 1), port(k, 2)),
                    drkey: Some(SocketAddr::new(ip(k, 1), port(k, 3))),
                    glwp: a.glwp.is_some().then(|| SocketAddr::new(ip(k, 1), port(k, GLWP_PORT))),
                }
            })
            .collect();
        // One root per ISD; every control service trusts all of them (and checks that a
        // peer's certificate chains to the root of the peer's own ISD).
        let isds: std::collections::BTreeSet<u16> = topology.ases.iter().map(|a| a.ia.isd()).collect();
        let mut roots = BTreeMap::new();
        for isd in isds {
            roots.insert(isd, pki::IsdRoot::load_or_create(&dir.join("pki"), isd)?);
        }
        let trust_roots: Vec<TrustRoot> = roots
            .values()
            .map(|r| TrustRoot { isd: r.isd, cert_file: Path::new("../pki").join(r.cert_file.file_name().unwrap()) })
            .collect();
        // Secrets of an earlier run in the same directory are kept, like the reservations in
        // its state directory that were granted under them. All are made first: pathval's
        // Level-1 keys files hold keys other ASes derive from theirs.
        for a in &topology.ases {
            let as_dir = dir.join(ia_dir(a.ia));
            fs::create_dir_all(&as_dir)?;
            for (file, len) in [("master.key", 32), ("operator.token", 16)] {
                let f = as_dir.join(file);
                let kept = if f.exists() {
                    files::restrict(&f)
                } else {
                    files::write_secret(&f, (random_hex(len)? + "\n").as_bytes())
                };
                kept.with_context(|| format!("cannot write {}", f.display()))?;
            }
        }
        let pathval_plan = topology.pathval_plan(&topology_file.display().to_string())?;
        // Every host's address: 127.0.k.10, .11, ... in topology order per AS.
        let mut host_addrs: BTreeMap<String, (IsdAsn, IpAddr)> = BTreeMap::new();
        let mut per_as: BTreeMap<IsdAsn, u8> = BTreeMap::new();
        for h in &topology.hosts {
            let j = per_as.entry(h.ia).or_insert(10);
            host_addrs.insert(h.name.clone(), (h.ia, ip(index[&h.ia], *j)));
            *j += 1;
        }
        let mut ases = BTreeMap::new();
        for a in &topology.ases {
            let k = index[&a.ia];
            let as_dir = dir.join(ia_dir(a.ia));
            roots[&a.ia.isd()].issue_into(a.ia, &as_dir)?;
            let interfaces = topology
                .links_of(a.ia)
                .map(|(local, remote, _, link)| InterfaceConfig {
                    id: local.ifid,
                    local: link_addr[&(a.ia, local.ifid)],
                    remote: link_addr[&(remote.ia, remote.ifid)],
                    neighbor: remote.ia,
                    capacity_bps: link.capacity_bps,
                    delay_ms: link.delay_ms,
                    class_table: a
                        .router
                        .link_class_table
                        .clone()
                        .unwrap_or_else(|| crate::router::classes::DEFAULT_TABLE.into()),
                })
                .collect();
            let router = RouterConfig {
                ia: a.ia,
                master_secret_file: "master.key".into(),
                internal: SocketAddr::new(ip(k, 1), port(k, 0)),
                management: SocketAddr::new(ip(k, 1), port(k, 1)),
                // The control service's token: one operator credential per AS.
                operator_token_file: Some("operator.token".into()),
                hummingbird: a.router.hummingbird,
                queues: QueueConfig::default(),
                classes: a.router.classes.clone(),
                class_table: a.router.class_table.clone(),
                zlane: topology.zlane_config(a.ia, &a.router),
                pathval: match (&a.router.pathval, pathval_plan.get(&a.ia)) {
                    (Some(p), Some(plan)) => {
                        write_pathval_level1(&dir, &topology, a.ia, &as_dir.join(PATHVAL_LEVEL1))?;
                        Some(PathvalConfig {
                            upstream: plan.upstream.clone(),
                            next: plan.next.clone(),
                            level1_keys_file: Some(PATHVAL_LEVEL1.into()),
                            ..p.clone()
                        })
                    }
                    (p, _) => p.clone(),
                },
                glwp: a.glwp.as_ref().map(|g| RouterGlwpConfig {
                    lifetime_ms: g.lifetime_ms,
                    skew_ms: g.skew_ms,
                    validity_s: g.validity_s,
                    ..Default::default()
                }),
                interfaces,
                scmp: Default::default(),
                workers: None,
                drkey_epochs: a.drkey,
            };
            // A topology that asks for a router config that cannot start stops the run here,
            // naming the AS in the topology file.
            let at = format!("{} (as[{k}].router of {})", topology_file.display(), a.ia);
            router.validate(&at)?;
            let control = ControlConfig {
                ia: a.ia,
                master_secret_file: "master.key".into(),
                listen: SocketAddr::new(ip(k, 1), port(k, 2)),
                topology: "../topology.toml".into(),
                operator_token_file: "operator.token".into(),
                state_dir: "state".into(),
                resid_store: None,
                hop_exp_time: 63,
                // Grants carry the BW code and ResIDs the AS's routers decode and police.
                hummingbird: reservable_grants(&router),
                // The AS's hosts (and its services) are 127.0.k.x.
                host_networks: vec![format!("{}/24", ip(k, 0)).parse().expect("127.0.k.0/24 is a prefix")],
                drkey: Some(DrkeyConfig {
                    listen: SocketAddr::new(ip(k, 1), port(k, 3)),
                    cert_file: pki::CS_CERT_FILE.into(),
                    key_file: pki::CS_KEY_FILE.into(),
                    trust_roots: trust_roots.clone(),
                    // The one statement of the AS's epochs, as the router's and gateway's.
                    epoch_duration_s: a.drkey.epoch_duration_s,
                    grace_s: a.drkey.grace_s,
                }),
                glwp: a
                    .glwp
                    .clone()
                    .map(|g| GlwpConfig { listen: Some(SocketAddr::new(ip(k, 1), port(k, GLWP_PORT))), ..g }),
                peers: peers.iter().filter(|p| p.ia != a.ia).cloned().collect(),
            };
            let gateway_addrs = zlane_gateway::GatewayAddrs {
                listen: SocketAddr::new(ip(k, 1), port(k, 5)),
                metrics: SocketAddr::new(ip(k, 1), port(k, 6)),
                router: router.internal,
                control: control.listen,
            };
            let zlane_gateway = zlane_gateway::gateway_config(topology_file, k, a, &host_addrs, gateway_addrs)?;
            write_toml(&as_dir.join("router.toml"), &router)?;
            write_toml(&as_dir.join("control.toml"), &control)?;
            if let Some(g) = &zlane_gateway {
                write_toml(&as_dir.join(zlane_gateway::CONFIG_FILE), g)?;
            }
            let as_service_metrics = SocketAddr::new(ip(k, 1), port(k, 4));
            ases.insert(a.ia, AsRun { ia: a.ia, dir: as_dir, router, control, as_service_metrics, zlane_gateway });
        }
        let mut hosts = BTreeMap::new();
        for h in &topology.hosts {
            let a = &ases[&h.ia];
            let cfg = HostConfig {
                name: h.name.clone(),
                ia: h.ia,
                addr: host_addrs[&h.name].1,
                router: a.router.internal,
                control: a.control.listen,
                zlane_gateway: a.zlane_gateway.as_ref().map(|g| g.listen),
            };
            write_toml(&dir.join("hosts").join(format!("{}.toml", h.name)), &cfg)?;
            hosts.insert(h.name.clone(), cfg);
        }
        let layout = Self { dir, topology, ases, hosts, market: None };
        layout.write_metrics_targets()?;
        Ok(layout)
    }

    /// Every daemon's metrics endpoint: (role, AS, address).
    pub fn metrics_targets(&self) -> Vec<(Role, IsdAsn, SocketAddr)> {
        let mut out = Vec::new();
        for a in self.ases.values() {
            out.push((Role::Router, a.ia, a.router.management));
            out.push((Role::Control, a.ia, a.control.listen));
            if self.market.is_some() {
                out.push((Role::AsService, a.ia, a.as_service_metrics));
            }
            if let Some(g) = &a.zlane_gateway {
                out.push((Role::ZlaneGateway, a.ia, g.metrics));
            }
        }
        out
    }

    /// Writes `metrics-targets.json`: the targets of [`Self::metrics_targets`] in Prometheus's
    /// `file_sd_configs` format, labelled with `role` and `ia`.
    fn write_metrics_targets(&self) -> anyhow::Result<()> {
        let groups: Vec<_> = self
            .metrics_targets()
            .into_iter()
            .map(|(role, ia, addr)| {
                serde_json::json!({ "targets": [addr.to_string()], "labels": { "role": role.name(), "ia": ia.to_string() } })
            })
            .collect();
        let path = self.dir.join(METRICS_TARGETS);
        fs::write(&path, serde_json::to_string_pretty(&groups)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Every address a process of this run will bind, with what it is for.
    fn addresses(&self) -> Vec<(SocketAddr, bool, String)> {
        let mut out = Vec::new();
        for a in self.ases.values() {
            out.push((a.router.internal, false, format!("router {} internal socket", a.ia)));
            out.push((a.router.management, true, format!("router {} management API", a.ia)));
            out.push((a.control.listen, true, format!("control service {}", a.ia)));
            if let Some(d) = &a.control.drkey {
                out.push((d.listen, true, format!("DRKey service {}", a.ia)));
            }
            if let Some(listen) = a.control.glwp.as_ref().and_then(|g| g.listen) {
                out.push((listen, false, format!("GLWP service {}", a.ia)));
            }
            if self.market.is_some() {
                out.push((a.as_service_metrics, true, format!("AS service {} metrics", a.ia)));
            }
            for i in &a.router.interfaces {
                out.push((i.local, false, format!("router {} interface {}", a.ia, i.id)));
            }
            if let Some(g) = &a.zlane_gateway {
                out.push((g.listen, false, format!("Z-Lane gateway {} socket", a.ia)));
                out.push((g.metrics, true, format!("Z-Lane gateway {} metrics", a.ia)));
            }
        }
        out
    }

    /// Fails with a clear message if any address of the run is taken.
    pub fn check_addresses_free(&self) -> anyhow::Result<()> {
        for (addr, tcp, what) in self.addresses() {
            let taken = if tcp { TcpListener::bind(addr).err() } else { UdpSocket::bind(addr).err() };
            if let Some(e) = taken {
                bail!("cannot start: {addr} ({what}) is not available: {e}; is another run still active? (try --port-base)");
            }
        }
        Ok(())
    }

    /// Adds the bandwidth market: the ledger, the contracts and an AS service per AS.
    pub fn enable_market(&mut self) -> anyhow::Result<()> {
        self.market = Some(self.write_market()?);
        self.write_metrics_targets()
    }

    pub fn host(&self, name: &str) -> anyhow::Result<&HostConfig> {
        self.hosts.get(name).with_context(|| format!("no host `{name}` in topology {}", self.topology.name))
    }

    pub fn host_config_path(&self, name: &str) -> PathBuf {
        self.dir.join("hosts").join(format!("{name}.toml"))
    }
}

/// File name of a pathval router's Level-1 keys in its AS directory.
const PATHVAL_LEVEL1: &str = "pathval-level1.toml";

/// Writes the Level-1 keys every other trusted pathval AS issues to `ia`, for the DRKey epoch
/// now and the next one. The runner made every AS's secret, so it derives them here and stands
/// in for the Level-1 exchange with each issuer's DRKey service that a deployment runs.
fn write_pathval_level1(dir: &Path, topology: &Topology, ia: IsdAsn, file: &Path) -> anyhow::Result<()> {
    use aviary_pathval::{PathvalIssuer, Role};
    let now = crate::clock::unix_s();
    let mut out = Level1KeysFile::default();
    let issuers = topology.ases.iter().filter(|a| a.ia != ia);
    for a in issuers.filter(|a| a.router.pathval.as_ref().is_some_and(|p| p.role == Role::Trusted)) {
        // The issuer's epochs: its keys are derived in them.
        let schedule = a.drkey.schedule(&file.display().to_string(), "drkey")?;
        let current = schedule.epoch_at(now)?;
        let epochs = [current, schedule.next(current)?];
        let secret = crate::config::read_secret(file, "master.key", &dir.join(ia_dir(a.ia)).join("master.key"))?;
        for e in epochs {
            out.keys.push(Level1KeyEntry {
                issuer: a.ia,
                epoch_begin: e.begin_s,
                epoch_end: e.end_s,
                key: hex::encode(PathvalIssuer::new(&secret, e)?.level1(ia).as_bytes()),
            });
        }
    }
    write_toml(file, &out)
}

/// The `[hummingbird]` of an AS's control and AS service: the codec and ResID bound of its
/// routers (grants carry codes they decode and police), and each link's reservable bandwidth
/// derived from its capacity, written out for the operator to see.
pub fn reservable_grants(router: &RouterConfig) -> GrantConfig {
    let interfaces = router
        .interfaces
        .iter()
        .map(|i| crate::reservable::InterfaceBandwidth::for_link(i.id, i.capacity_bps))
        .collect();
    GrantConfig { codec: router.hummingbird.codec, max_res_id: router.hummingbird.max_res_id, interfaces }
}

/// Whether every process of a run is up (`GET /v1/status` of `aviary run`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunHealth {
    pub healthy: bool,
    pub processes: Vec<ProcessHealth>,
}

/// The running processes of a topology. Dropping it stops them all.
pub struct Network {
    pub layout: RunLayout,
    exe: PathBuf,
    procs: Arc<Mutex<Vec<Supervised>>>,
    stopping: Arc<AtomicBool>,
    supervisor: Option<std::thread::JoinHandle<()>>,
}

impl Network {
    /// Starts a router and a control service per AS with the `aviary` binary `exe`, and
    /// waits until every one of them answers; processes that exit are restarted, never given up.
    pub fn start(exe: &Path, layout: RunLayout) -> anyhow::Result<Self> {
        Self::start_with(exe, layout, RestartPolicy::default())
    }

    /// [`Network::start`] with a restart policy of one's own.
    pub fn start_with(exe: &Path, layout: RunLayout, policy: RestartPolicy) -> anyhow::Result<Self> {
        layout.check_addresses_free()?;
        let mut procs = Vec::new();
        let mut roles = vec![Role::Router, Role::Control];
        if layout.market.is_some() {
            roles.push(Role::AsService);
        }
        for a in layout.ases.values() {
            let gateway = a.zlane_gateway.is_some().then_some(Role::ZlaneGateway);
            for &role in roles.iter().chain(&gateway) {
                let cfg = a.dir.join(format!("{}.toml", role.name()));
                let args = vec![role.name().to_string(), "--config".into(), cfg.display().to_string()];
                let log = layout.dir.join("logs").join(format!("{}-{}.log", ia_dir(a.ia), role.name()));
                procs.push(Supervised::start(a.ia, role, args, log, exe)?);
            }
        }
        let mut net = Self {
            layout,
            exe: exe.to_path_buf(),
            procs: Arc::new(Mutex::new(procs)),
            stopping: Arc::new(AtomicBool::new(false)),
            supervisor: None,
        };
        net.wait_ready(Duration::from_secs(15))?;
        let (procs, stopping, exe, log) =
            (net.procs.clone(), net.stopping.clone(), net.exe.clone(), net.layout.dir.join("logs/supervisor.log"));
        net.supervisor = Some(std::thread::spawn(move || supervise(procs, stopping, exe, log, policy)));
        Ok(net)
    }

    /// Waits until every router's management API and every control service answers.
    pub fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        for a in self.layout.ases.values() {
            let gateway = a.zlane_gateway.as_ref().map(|g| ("zlane-gateway", g.metrics));
            for (what, addr) in
                [("router", a.router.management), ("control service", a.control.listen)].into_iter().chain(gateway)
            {
                loop {
                    if ureq::get(&format!("http://{addr}/v1/status")).timeout(Duration::from_millis(500)).call().is_ok()
                    {
                        break;
                    }
                    if let Some(exit) = self.exited(a.ia, what) {
                        bail!("{what} of {} exited ({exit}); see {}", a.ia, self.layout.dir.join("logs").display());
                    }
                    if Instant::now() > deadline {
                        bail!("{what} of {} did not come up within {timeout:?}", a.ia);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        Ok(())
    }

    fn exited(&self, ia: IsdAsn, what: &str) -> Option<String> {
        let mut procs = self.procs.lock().ok()?;
        let p = procs.iter_mut().find(|p| p.ia == ia && what.starts_with(p.role.name()))?;
        p.child_mut()?.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// Process id of a running process (for tests that kill one).
    pub fn pid(&self, ia: IsdAsn, role: Role) -> Option<u32> {
        let procs = self.procs.lock().ok()?;
        procs.iter().find(|p| p.ia == ia && p.role == role)?.child().map(Child::id)
    }

    pub fn pids(&self) -> Vec<u32> {
        self.procs.lock().map(|p| p.iter().filter_map(|s| s.child().map(Child::id)).collect()).unwrap_or_default()
    }

    /// How every process of the run stands; the run is healthy when all are running.
    pub fn health(&self) -> RunHealth {
        health::run_health(&self.procs)
    }

    /// Serves [`Network::health`] on `addr` (`/v1/status`, `/metrics`) until dropped.
    pub fn serve_health(&self, addr: SocketAddr) -> anyhow::Result<health::HealthServer> {
        health::HealthServer::start(addr, self.procs.clone())
    }

    /// Stops every process (SIGTERM, then SIGKILL after a grace period).
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(s) = self.supervisor.take() {
            let _ = s.join();
        }
        let Ok(mut procs) = self.procs.lock() else { return };
        for p in procs.iter_mut() {
            if let Some(c) = p.child() {
                // SAFETY: plain kill(2) on a child we own and have not reaped.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for p in procs.iter_mut() {
            if let ProcState::Running { child: mut c, .. } = std::mem::replace(&mut p.state, ProcState::Stopped) {
                while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_as_has_its_own_secret_and_a_rerun_keeps_it() {
        let dir = aviary_scratch::ScratchDir::new("layout");
        let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/two-isd.toml");
        let layout = RunLayout::write(&topo, &dir, 20000).unwrap();
        let mut secrets = Vec::new();
        for a in layout.ases.values() {
            let own = a.dir.join("master.key");
            // Both processes of an AS read the AS's own secret and nothing else.
            assert_eq!(a.dir.join(&a.router.master_secret_file), own);
            assert_eq!(a.dir.join(&a.control.master_secret_file), own);
            secrets.push(fs::read_to_string(&own).unwrap());
            let cfg = RouterConfig::load(&a.dir.join("router.toml")).unwrap();
            assert_eq!(cfg.interfaces.len(), a.router.interfaces.len());
            ControlConfig::load(&a.dir.join("control.toml")).unwrap();
        }
        let n = secrets.len();
        secrets.sort();
        secrets.dedup();
        assert_eq!(secrets.len(), n);
        // Every link end points at the other end's socket.
        let all: Vec<&InterfaceConfig> = layout.ases.values().flat_map(|a| &a.router.interfaces).collect();
        for i in &all {
            assert!(all.iter().any(|j| j.local == i.remote && j.remote == i.local && j.neighbor != i.neighbor));
        }
        let again = RunLayout::write(&topo, &dir, 20000).unwrap();
        let a = again.ases.values().next().unwrap();
        assert!(secrets.contains(&fs::read_to_string(a.dir.join("master.key")).unwrap()));
    }

    /// A topology larger than a run's addresses is refused, named, before anything is
    /// written: the 256th AS would get the first one's 127.0.1.x, the 246th host of an AS its
    /// router's address.
    #[test]
    fn a_topology_beyond_a_runs_addresses_is_refused() {
        let dir = aviary_scratch::ScratchDir::new("layout-limits");
        let write = |name: &str, ases: usize, hosts: usize| {
            let mut t = String::from("name = \"big\"\n");
            for k in 0..ases {
                t += &format!("[[as]]\nia = \"1-ff00:0:{:x}\"\ncore = true\n", 0x100 + k);
            }
            if ases == 2 {
                t += "[[link]]\na = \"1-ff00:0:100#1\"\nb = \"1-ff00:0:101#1\"\nkind = \"core\"\ncapacity_bps = 1_000_000\n";
            }
            for j in 0..hosts {
                t += &format!("[[host]]\nname = \"h{j}\"\nia = \"1-ff00:0:100\"\n");
            }
            let f = dir.join(format!("{name}.toml"));
            fs::write(&f, t).unwrap();
            let out = dir.join(name);
            (RunLayout::write(&f, &out, 1000).map(|_| ()), out)
        };
        let (r, out) = write("ases", MAX_RUN_ASES + 1, 0);
        let e = r.unwrap_err().to_string();
        assert!(e.contains("ases.toml: as: 256 ASes"), "{e}");
        assert!(!out.exists(), "nothing written");
        let e = write("hosts", 1, MAX_RUN_HOSTS + 1).0.unwrap_err().to_string();
        assert!(e.contains("hosts.toml: host: 246 hosts in 1-ff00:0:100"), "{e}");
        write("fits", 2, MAX_RUN_HOSTS).0.unwrap();
    }
}
