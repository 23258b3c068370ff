//! The AS reservation service (`aviary as-service`): the AS's agent on the bandwidth market.
//!
//! Once: register the AS (its P-256 key, certified by its ISD's root, and a proof of
//! possession) and become a seller in the marketplace. Then, every poll: issue and list the
//! assets its config offers for the coming periods, and answer every redeem request addressed
//! to the AS: a ResID by First Fit on the ingress, A_K from the AS's secret, `(ResInfo, A_K)`
//! sealed to the buyer's key ([`aviary_hummingbird::ReservationService`]) and delivered on
//! chain. What it did is kept in `state_dir`, so a restart neither re-issues nor re-answers,
//! and a paid request is never dropped: a request counts as answered only once its delivery
//! is on chain; until then it is retried with backoff, across restarts ([`delivery`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use aviary_hummingbird::{ReservationService, ServiceState};
use aviary_market::contracts::AssetSpec;
use aviary_market::registration::Certificate;
use aviary_market::{Account, Deployment, Ledger, RpcLedger, SharedLedger};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use self::delivery::{Backoff, Delivery, Refusal};

use crate::clock::unix_s;
use crate::config::{read_secret, ConfigError, GrantConfig, RESID_STORE};
use crate::resid_store::{Limits, ResIdStore, StoreError};
use crate::topology::read_toml;

pub mod delivery;
pub mod issuance;
pub mod metrics;
mod requests;

pub use metrics::AsServiceStats;
pub use requests::{FaultPoint, FAULT_ENV};

/// Where the chain is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LedgerConfig {
    /// The embedded ledger in this data directory (shared by the processes of a machine).
    Embedded(PathBuf),
    /// An EVM node's JSON-RPC URL.
    Rpc(String),
}

impl LedgerConfig {
    pub fn open(&self, accounts: Vec<Account>) -> anyhow::Result<Box<dyn Ledger>> {
        Ok(match self {
            LedgerConfig::Embedded(dir) => Box::new(SharedLedger::open(dir)?),
            LedgerConfig::Rpc(url) => Box::new(RpcLedger::connect(url, accounts)?),
        })
    }
}

/// The contracts of a market deployment and the marketplace to sell in (JSON file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentFile {
    pub registry: aviary_market::Address,
    pub assets: aviary_market::Address,
    pub market: aviary_market::Address,
    pub marketplace: u64,
}

impl DeploymentFile {
    pub fn deployment(&self) -> Deployment {
        Deployment { registry: self.registry, assets: self.assets, market: self.market }
    }

    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
    }
}

pub use crate::resid_store::Direction;

/// Bandwidth the AS sells on one side of one interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfferConfig {
    pub interface: u16,
    pub direction: Direction,
    pub bandwidth_kbps: u64,
    /// The smallest piece a buyer may split off.
    pub min_bandwidth_kbps: u32,
    /// Time grid of the assets, s.
    pub granularity_s: u32,
    /// Length of each asset issued, s (a multiple of the granularity, at most 65535).
    pub period_s: u64,
    /// How many periods ahead are on sale.
    pub periods_ahead: u64,
    /// Wei per kbit/s per second.
    pub price_per_unit: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsServiceConfig {
    pub ia: IsdAsn,
    pub master_secret_file: PathBuf,
    pub ledger: LedgerConfig,
    pub deployment_file: PathBuf,
    /// The AS's ledger account (secp256k1 private key, hex).
    pub account_key_file: PathBuf,
    /// The AS's P-256 key (hex scalar) and its certificate by the ISD root (JSON
    /// `{"not_after": <Unix s>, "signature": {"r": …, "s": …}}`).
    pub as_key_file: PathBuf,
    pub certificate_file: PathBuf,
    pub state_dir: PathBuf,
    /// The AS's ResID allocator, shared with its control service (default
    /// `state_dir/resids.json`; both must name the same file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resid_store: Option<PathBuf>,
    #[serde(default)]
    pub hummingbird: GrantConfig,
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// Where to serve `/metrics` and `/v1/status` (HTTP); none if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<SocketAddr>,
    #[serde(rename = "offer", default)]
    pub offers: Vec<OfferConfig>,
}

fn default_poll_ms() -> u64 {
    200
}

impl AsServiceConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut c: Self = read_toml(path)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let abs = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for p in [
            &mut c.master_secret_file,
            &mut c.deployment_file,
            &mut c.account_key_file,
            &mut c.as_key_file,
            &mut c.certificate_file,
            &mut c.state_dir,
        ] {
            abs(p);
        }
        if let Some(p) = &mut c.resid_store {
            abs(p);
        }
        if let LedgerConfig::Embedded(dir) = &mut c.ledger {
            abs(dir);
        }
        let file = path.display().to_string();
        for (i, o) in c.offers.iter().enumerate() {
            let field = |f: &str| format!("offer[{i}].{f}");
            if o.interface == 0 {
                return Err(ConfigError::new(&file, field("interface"), "0 is the AS's inside, not an interface"));
            }
            if o.granularity_s == 0 || o.period_s == 0 || o.period_s % u64::from(o.granularity_s) != 0 {
                return Err(ConfigError::new(&file, field("period_s"), "must be a positive multiple of granularity_s"));
            }
            if o.period_s > u64::from(u16::MAX) {
                return Err(ConfigError::new(&file, field("period_s"), "a reservation lasts at most 65535 s"));
            }
            if o.bandwidth_kbps < u64::from(o.min_bandwidth_kbps) || o.min_bandwidth_kbps == 0 {
                return Err(ConfigError::new(
                    &file,
                    field("min_bandwidth_kbps"),
                    "must be positive and at most bandwidth_kbps",
                ));
            }
        }
        issuance::check_offers(&file, &c, &c.limits(&file)?)?;
        Ok(c)
    }

    /// The reservable bandwidth of each interface, checked against its capacity.
    pub fn limits(&self, file: &str) -> Result<Limits, ConfigError> {
        crate::reservable::as_service_limits(file, &self.hummingbird.interfaces)
    }
}

/// First Fit's competitive ratio on interval graphs is at most 8 (Narayanaswamy and Subhash
/// Babu): the R of the Hummingbird paper §4.3's bound for an AS that colours with First Fit.
pub const FIRST_FIT_RATIO: u64 = 8;

/// ResID_max = R · TotalBW / MinBW over the ingress interfaces sold (at most as many
/// reservations of at least MinBW are active at once on an interface of TotalBW), and never
/// more than the routers' policing array holds.
pub fn res_id_bound(cfg: &AsServiceConfig) -> u32 {
    let mut per_interface: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
    for o in cfg.offers.iter().filter(|o| o.direction == Direction::Ingress) {
        let e = per_interface.entry(o.interface).or_insert((0, u64::MAX));
        e.0 += o.bandwidth_kbps;
        e.1 = e.1.min(u64::from(o.min_bandwidth_kbps.max(1)));
    }
    let worst = per_interface.values().map(|(total, min)| total / min).max().unwrap_or(0);
    let bound = (FIRST_FIT_RATIO * worst.max(1)).min(u64::from(cfg.hummingbird.max_res_id));
    u32::try_from(bound).unwrap_or(cfg.hummingbird.max_res_id)
}

/// What survives a restart.
#[derive(Debug, Serialize, Deserialize)]
struct PersistedState {
    service: ServiceState,
    /// Start of the first period issued per offer: periods follow each other from there.
    origins: BTreeMap<usize, u64>,
    /// (offer index, period start) already issued and listed.
    issued: BTreeSet<(usize, u64)>,
    /// Requests below this id have been looked at.
    next_request: u64,
    /// Requests paid for and not yet delivered, by request id.
    #[serde(default)]
    deliveries: BTreeMap<u64, Delivery>,
    /// Requests closed without a delivery, by request id.
    #[serde(default)]
    refused: BTreeMap<u64, Refusal>,
}

pub struct AsService {
    cfg: AsServiceConfig,
    ledger: Box<dyn Ledger>,
    deployment: DeploymentFile,
    account: Account,
    service: ReservationService,
    origins: BTreeMap<usize, u64>,
    issued: BTreeSet<(usize, u64)>,
    next_request: u64,
    deliveries: BTreeMap<u64, Delivery>,
    refused: BTreeMap<u64, Refusal>,
    backoff: Backoff,
    /// Where to die, for tests ([`FAULT_ENV`]).
    fault: Option<FaultPoint>,
    state_file: PathBuf,
    /// The AS's one ResID allocator, shared with its control service.
    resids: ResIdStore,
    /// Reservable bandwidth per interface; listings are admitted in `resids`.
    limits: Limits,
    stats: Arc<Mutex<AsServiceStats>>,
}

fn read_hex_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    hex::decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))
}

impl AsService {
    pub fn new(cfg: AsServiceConfig, cfg_path: &Path) -> anyhow::Result<Self> {
        let account = Account::from_hex(&hex::encode(read_hex_file(&cfg.account_key_file)?))?;
        let ledger = cfg.ledger.open(vec![account.clone()])?;
        Self::with_ledger(cfg, cfg_path, account, ledger)
    }

    /// [`Self::new`] on a ledger of the caller's (a test's, that delays or drops transactions).
    pub fn with_ledger(
        cfg: AsServiceConfig,
        cfg_path: &Path,
        account: Account,
        ledger: Box<dyn Ledger>,
    ) -> anyhow::Result<Self> {
        let secret = read_secret(cfg_path, "master_secret_file", &cfg.master_secret_file)?;
        let deployment = DeploymentFile::load(&cfg.deployment_file)?;
        std::fs::create_dir_all(&cfg.state_dir)?;
        let state_file = cfg.state_dir.join("as-service.json");
        let persisted: Option<PersistedState> = match std::fs::read(&state_file) {
            Ok(b) => Some(serde_json::from_slice(&b).with_context(|| format!("corrupt {}", state_file.display()))?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Not "no state": started afresh, the service would issue and list every period
            // already on chain again and re-seal the requests it delivered.
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", state_file.display())),
        };
        let p = persisted.unwrap_or_else(|| PersistedState {
            service: ServiceState::new(res_id_bound(&cfg)),
            origins: BTreeMap::new(),
            issued: BTreeSet::new(),
            next_request: 1,
            deliveries: BTreeMap::new(),
            refused: BTreeMap::new(),
        });
        let (mut state, origins, issued, next_request) = (p.service, p.origins, p.issued, p.next_request);
        state.res_id_cap = res_id_bound(&cfg);
        let store = cfg.resid_store.clone().unwrap_or_else(|| cfg.state_dir.join(RESID_STORE));
        let resids = ResIdStore::new(store, cfg.hummingbird.max_res_id);
        let limits = cfg.limits(&cfg_path.display().to_string())?;
        // A state written when this service had an allocator of its own: its reservations move
        // into the AS's shared allocator, once.
        let legacy = state.legacy_resids.take();
        if let Some(old) = &legacy {
            resids
                .update(|a| {
                    a.absorb(old);
                    Ok::<_, std::convert::Infallible>(())
                })
                .with_context(|| format!("{}: resid_store", cfg_path.display()))?;
        } else {
            resids.snapshot().with_context(|| format!("{}: resid_store", cfg_path.display()))?;
        }
        let service =
            ReservationService::new(cfg.ia.to_u64(), ledger.chain_id(), &secret, cfg.hummingbird.codec, state);
        let stats = AsServiceStats { ia: Some(cfg.ia), started_unix_s: unix_s(), next_request, ..Default::default() };
        let stats = Arc::new(Mutex::new(stats));
        let svc = Self {
            cfg,
            ledger,
            deployment,
            account,
            service,
            origins,
            issued,
            next_request,
            deliveries: p.deliveries,
            refused: p.refused,
            backoff: Backoff::DEFAULT,
            fault: None,
            state_file,
            resids,
            limits,
            stats,
        };
        if legacy.is_some() {
            svc.persist()?;
        }
        Ok(svc)
    }

    /// The counters, as the metrics endpoint shows them.
    pub fn stats(&self) -> Arc<Mutex<AsServiceStats>> {
        self.stats.clone()
    }

    fn count(&self, f: impl FnOnce(&mut AsServiceStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }

    /// One round: issue what is due, answer requests; a failure is logged and counted. Paid
    /// requests are answered even when issuing fails.
    pub fn poll(&mut self, now: u64) {
        let issued = self.issue_due(now).map(|_| ());
        let answered = self.answer_requests(now).map(|_| ());
        for e in [issued, answered].into_iter().filter_map(Result::err) {
            let kind = if e.downcast_ref::<aviary_market::LedgerError>().is_some() { "ledger" } else { "other" };
            self.count(|s| *s.errors.entry(kind).or_default() += 1);
            tracing::warn!("{e:#}");
        }
        let block = self.ledger.block_timestamp().ok();
        let next_request = self.next_request;
        self.count(|s| {
            s.last_block_timestamp_s = block.unwrap_or(s.last_block_timestamp_s);
            s.last_poll_unix_s = unix_s();
            s.next_request = next_request;
        });
    }

    fn persist(&self) -> anyhow::Result<()> {
        let state = PersistedState {
            service: self.service.state().clone(),
            origins: self.origins.clone(),
            issued: self.issued.clone(),
            next_request: self.next_request,
            deliveries: self.deliveries.clone(),
            refused: self.refused.clone(),
        };
        // Atomic and synced: a crash leaves the state before or after a step, never half.
        crate::files::write_secret(&self.state_file, &serde_json::to_vec(&state)?)
            .with_context(|| format!("cannot write {}", self.state_file.display()))
    }

    /// Registers the AS and becomes a seller, unless already done.
    pub fn register(&mut self) -> anyhow::Result<()> {
        let d = self.deployment.deployment();
        let ia = self.cfg.ia.to_u64();
        let me = self.account.address();
        if d.as_of(&*self.ledger, me)? != ia {
            let key = p256::ecdsa::SigningKey::from_slice(&read_hex_file(&self.cfg.as_key_file)?)
                .context("as_key_file: not a P-256 private key")?;
            let cert: Certificate = serde_json::from_str(
                &std::fs::read_to_string(&self.cfg.certificate_file)
                    .with_context(|| format!("cannot read {}", self.cfg.certificate_file.display()))?,
            )
            .with_context(|| format!("{}", self.cfg.certificate_file.display()))?;
            let reg = d.registration(&*self.ledger, ia, cert, &key, me)?;
            d.register(&mut *self.ledger, &self.account, &reg).context("registration")?;
            self.count(|s| *s.registrations.entry("registry").or_default() += 1);
            tracing::info!(ia = %self.cfg.ia, account = %me, "registered on the AS registry");
        }
        if !d.is_seller(&*self.ledger, self.deployment.marketplace, me)? {
            d.register_seller(&mut *self.ledger, &self.account, self.deployment.marketplace)?;
            self.count(|s| *s.registrations.entry("seller").or_default() += 1);
        }
        // Asked apart from the seller's registration: a crash between the two transactions
        // left a seller whose every listing reverted (MarketNotApproved), for good.
        if !d.is_approved_for_all(&*self.ledger, me, d.market)? {
            d.set_approval_for_all(&mut *self.ledger, &self.account, d.market, true)?;
        }
        self.count(|s| s.registered = true);
        Ok(())
    }

    /// Issues and lists the assets of every offer for the coming periods. Periods follow each
    /// other from the first issue (on the granularity grid), so the asset on sale when the
    /// service starts covers a whole period from then.
    pub fn issue_due(&mut self, now: u64) -> anyhow::Result<usize> {
        let d = self.deployment.deployment();
        let mut n = 0;
        for (i, o) in self.cfg.offers.clone().iter().enumerate() {
            let gran = u64::from(o.granularity_s);
            let origin = *self.origins.entry(i).or_insert(now / gran * gran);
            let current = origin + now.saturating_sub(origin) / o.period_s * o.period_s;
            for k in 0..o.periods_ahead {
                let start = current + k * o.period_s;
                if self.issued.contains(&(i, start)) {
                    continue;
                }
                // Booked before it is issued (see [`issuance`]); booking again after a failed
                // ledger transaction replaces the earlier booking.
                let bandwidth = match issuance::book_listing(&self.resids, &self.limits, i, o, start, now) {
                    Ok(kbps) => kbps,
                    Err(StoreError::Refused(e)) => {
                        tracing::warn!(offer = i, start, "period not listed: {e}");
                        self.issued.insert((i, start));
                        self.persist()?;
                        self.count(|s| s.listings_skipped += 1);
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                if bandwidth < o.bandwidth_kbps {
                    tracing::info!(offer = i, start, bandwidth, "period listed short: grants hold the rest");
                }
                let spec = AssetSpec {
                    isd_as: self.cfg.ia.to_u64(),
                    interface_id: o.interface,
                    is_ingress: o.direction == Direction::Ingress,
                    bandwidth,
                    start_time: start,
                    expiry_time: start + o.period_s,
                    time_granularity: o.granularity_s,
                    min_bandwidth: o.min_bandwidth_kbps,
                };
                let asset = d.issue(&mut *self.ledger, &self.account, &spec)?;
                d.create_listing(
                    &mut *self.ledger,
                    &self.account,
                    self.deployment.marketplace,
                    asset,
                    u128::from(o.price_per_unit),
                )?;
                self.issued.insert((i, start));
                self.persist()?;
                self.count(|s| s.listings_issued += 1);
                n += 1;
            }
        }
        // Forget periods long over.
        self.issued.retain(|(i, s)| self.cfg.offers.get(*i).is_some_and(|o| s + o.period_s * 2 > now));
        Ok(n)
    }
}

/// Runs the service from its config file until the process is stopped.
pub fn run(cfg_path: &Path) -> anyhow::Result<()> {
    let cfg = AsServiceConfig::load(cfg_path)?;
    let poll = Duration::from_millis(cfg.poll_ms);
    let metrics_addr = cfg.metrics;
    let mut svc = AsService::new(cfg, cfg_path)?;
    if let Ok(point) = std::env::var(FAULT_ENV) {
        svc.fault = Some(point.parse().map_err(anyhow::Error::msg)?);
    }
    // Up before registering, so that an operator sees a service that cannot register.
    let _metrics = metrics_addr.map(|addr| metrics::serve(addr, svc.stats())).transpose()?;
    svc.register()?;
    tracing::info!(ia = %svc.cfg.ia, metrics = ?metrics_addr, "AS reservation service up");
    let stop = crate::signals::stop_flag();
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        svc.poll(unix_s());
        std::thread::sleep(poll);
    }
    Ok(())
}

#[cfg(test)]
mod delivery_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra_offer: &str) -> String {
        format!(
            r#"ia = "1-ff00:0:110"
master_secret_file = "master.key"
ledger = {{ embedded = "ledger" }}
deployment_file = "deployment.json"
account_key_file = "account.key"
as_key_file = "as.key"
certificate_file = "cert.json"
state_dir = "state"

[[hummingbird.interface]]
id = 1
capacity_bps = 10000000

[[hummingbird.interface]]
id = 2
capacity_bps = 200000000

[[offer]]
interface = 1
direction = "ingress"
bandwidth_kbps = 5000
min_bandwidth_kbps = 100
granularity_s = 60
period_s = 3600
periods_ahead = 2
price_per_unit = 1000
{extra_offer}"#
        )
    }

    fn load(text: &str) -> Result<AsServiceConfig, ConfigError> {
        let dir = aviary_scratch::ScratchDir::new("as-cfg");
        let f = dir.join("as-service.toml");
        std::fs::write(&f, text).unwrap();
        AsServiceConfig::load(&f)
    }

    #[test]
    fn config_paths_are_resolved_and_errors_name_the_field() {
        let c = load(&config("")).unwrap();
        assert!(c.state_dir.is_absolute() && matches!(&c.ledger, LedgerConfig::Embedded(d) if d.is_absolute()));
        let e = load(&config("").replace("period_s = 3600", "period_s = 3601")).unwrap_err();
        assert_eq!(e.field, "offer[0].period_s");
        let e = load(&config("").replace("period_s = 3600", "period_s = 72000")).unwrap_err();
        assert_eq!(e.field, "offer[0].period_s");
        let e = load(&config("").replace("min_bandwidth_kbps = 100", "min_bandwidth_kbps = 6000")).unwrap_err();
        assert_eq!(e.field, "offer[0].min_bandwidth_kbps");
        let e = load(&config("").replace("interface = 1", "interface = 0")).unwrap_err();
        assert_eq!(e.field, "offer[0].interface");
        // Offers must fit the reservable bandwidth (80% of 10 Mbit/s here), per side.
        let e = load(&config("").replace("bandwidth_kbps = 5000", "bandwidth_kbps = 8001")).unwrap_err();
        assert_eq!(e.field, "offer[0].bandwidth_kbps");
        assert!(e.message.contains("8001 kbit/s, more than its 8 Mbit/s reservable"), "{e}");
        let twice = config("").split("[[offer]]").nth(1).unwrap().replace("5000", "3000");
        load(&format!("{}[[offer]]{twice}", config(""))).expect("5 + 3 Mbit/s fit exactly");
        let twice = twice.replace("3000", "3001");
        let e = load(&format!("{}[[offer]]{twice}", config(""))).unwrap_err();
        assert_eq!(e.field, "offer[1].bandwidth_kbps");
        let egress = twice.replace("\"ingress\"", "\"egress\"");
        load(&format!("{}[[offer]]{egress}", config(""))).expect("the other direction has its own bound");
        let e = load(&config("").replace("interface = 1\ndirection", "interface = 3\ndirection")).unwrap_err();
        assert_eq!(e.field, "offer[0].interface");
        let e =
            load(&config("").replace("capacity_bps = 10000000", "capacity_bps = 10000000\nreservable_bps = 10000001"))
                .unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[0].reservable_bps");
        let e = load(&config("").replace("direction = \"ingress\"", "direction = \"sideways\"")).unwrap_err();
        assert!(e.to_string().contains("as-service.toml"), "{e}");
    }

    #[test]
    fn res_id_bound_is_r_times_total_over_min() {
        let c = load(&config("")).unwrap();
        assert_eq!(res_id_bound(&c), 8 * 5000 / 100);
        // Egress offers do not count; the router's array caps the bound.
        let egress = "[[offer]]\ninterface = 2\ndirection = \"egress\"\nbandwidth_kbps = 100000\nmin_bandwidth_kbps = 1\ngranularity_s = 60\nperiod_s = 60\nperiods_ahead = 1\nprice_per_unit = 1\n";
        assert_eq!(res_id_bound(&load(&config(egress)).unwrap()), 400);
        let mut small = load(&config("")).unwrap();
        small.hummingbird.max_res_id = 10;
        assert_eq!(res_id_bound(&small), 10);
    }
}
