//! Per-process configuration files (TOML). `aviary run` writes them from a topology; on
//! real machines an operator writes them by hand with real addresses. Relative paths in a
//! config are relative to the directory of that config file.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use aviary_hummingbird::{BwCodec, RouterParams};
use aviary_pathval::PathvalConfig;
use aviary_scion::IsdAsn;
use aviary_zlane::classes::ZlaneConfig;
use serde::{Deserialize, Serialize};

use crate::reservable::InterfaceBandwidth;
use crate::router::classes::{self, ClassTableConfig};
use crate::router::glwp::RouterGlwpConfig;
use crate::topology::read_toml;
pub use crate::topology::ConfigError;

mod drkey;
pub use drkey::{DrkeyConfig, DrkeyEpochs, Level1KeyEntry, Level1KeysFile, TrustRoot};

/// One inter-AS interface of a border router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceConfig {
    pub id: u16,
    /// The router's socket for this link.
    pub local: SocketAddr,
    /// The neighbour router's socket for this link.
    pub remote: SocketAddr,
    pub neighbor: IsdAsn,
    /// Egress capacity of the link, bit/s.
    pub capacity_bps: u64,
    /// One-way delay added on egress.
    #[serde(default)]
    pub delay_ms: f64,
    /// The class table of this link's egress scheduler (a `[class_table.NAME]`).
    #[serde(default = "default_class_table", skip_serializing_if = "is_default_class_table")]
    pub class_table: String,
}

fn default_class_table() -> String {
    crate::router::classes::DEFAULT_TABLE.to_owned()
}

fn is_default_class_table(t: &str) -> bool {
    t == crate::router::classes::DEFAULT_TABLE
}

/// Queue bounds of every egress interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueConfig {
    pub priority_bytes: usize,
    pub best_effort_bytes: usize,
}

impl Default for QueueConfig {
    fn default() -> Self {
        // About 100 ms of a 10 Mbit/s link for best effort; reservation traffic is
        // policed upstream, so its queue only absorbs bursts.
        Self { priority_bytes: 256 * 1024, best_effort_bytes: 128 * 1024 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    pub ia: IsdAsn,
    /// File holding the AS master secret (hex), shared with the AS's control service.
    pub master_secret_file: PathBuf,
    /// Socket for hosts and services inside the AS.
    pub internal: SocketAddr,
    /// HTTP management API: `/metrics`, `/status`, runtime configuration.
    pub management: SocketAddr,
    /// File holding the bearer token without which the management API refuses changes (401);
    /// reads (`/metrics`, `/v1/status`) stay open. Required when `management` is not a
    /// loopback address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_token_file: Option<PathBuf>,
    #[serde(default)]
    pub hummingbird: RouterParams,
    /// Bounds of the plain `default` class table (priority, best effort).
    #[serde(default)]
    pub queues: QueueConfig,
    /// Admission label -> class name (see [`crate::router::classes`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub class_table: BTreeMap<String, ClassTableConfig>,
    /// Makes this a Z-Lane router: EPIC verification, the guarantees of `[zlane]` and the
    /// classes R, N, G, A, U (see [`crate::router::classes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zlane: Option<ZlaneConfig>,
    /// Makes this a pathval router: packets with the pathval option are forwarded by
    /// destination from this table (see docs/pathval.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pathval: Option<PathvalConfig>,
    /// Makes this a GLWP router: data packets of path type 252 are validated and forwarded in
    /// the guaranteed class (see [`crate::router::glwp`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glwp: Option<RouterGlwpConfig>,
    #[serde(rename = "interface", default)]
    pub interfaces: Vec<InterfaceConfig>,
    /// How many SCMP errors the router may send.
    #[serde(default)]
    pub scmp: ScmpConfig,
    /// Forwarding threads (default: the cores available to the process). See
    /// docs/performance.md, "Workers".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// The AS's DRKey epochs, which the Z-Lane and pathval keys and the previous master
    /// secret's lifetime follow; must be the control service's `[drkey]` ones.
    #[serde(default)]
    pub drkey_epochs: DrkeyEpochs,
}

/// The router's budget for SCMP errors: a token bucket over the whole router, so that a flood
/// of bad packets cannot make it a flood of errors. Echo and traceroute replies are not limited.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScmpConfig {
    /// Sustained rate of errors.
    pub errors_per_s: f64,
    /// Errors that may go out back to back.
    pub error_burst: u32,
}

impl Default for ScmpConfig {
    fn default() -> Self {
        Self { errors_per_s: 100.0, error_burst: 20 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    pub ia: IsdAsn,
    /// The control service of that AS.
    pub control: SocketAddr,
    /// Its DRKey Level-1 service (TLS with client certificates), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drkey: Option<SocketAddr>,
    /// Its GLWP service (UDP), if it has one: where discovery messages for it go, and the
    /// only address messages from it are accepted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glwp: Option<SocketAddr>,
}

/// Hummingbird settings of the control service and of the AS service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrantConfig {
    pub codec: BwCodec,
    /// Must not exceed the routers' `hummingbird.max_res_id`.
    pub max_res_id: u32,
    /// Reservable bandwidth per interface (`[[hummingbird.interface]]`, see [`crate::reservable`]).
    #[serde(rename = "interface", skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceBandwidth>,
}

impl Default for GrantConfig {
    fn default() -> Self {
        let p = RouterParams::default();
        Self { codec: p.codec, max_res_id: p.max_res_id, interfaces: Vec::new() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    pub ia: IsdAsn,
    pub master_secret_file: PathBuf,
    /// HTTP API for hosts, other control services and the AS operator.
    pub listen: SocketAddr,
    /// The (public) topology the AS-level routes are computed from.
    pub topology: PathBuf,
    /// File holding the bearer token that authorises operator requests (reservations).
    pub operator_token_file: PathBuf,
    /// Where granted reservations are kept across restarts.
    pub state_dir: PathBuf,
    /// The AS's ResID allocator, shared with its AS reservation service (default
    /// `state_dir/resids.json`; both must name the same file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resid_store: Option<PathBuf>,
    /// ExpTime of the hop fields this AS issues (lifetime (1 + ExpTime) · 337.5 s).
    #[serde(default = "default_exp_time")]
    pub hop_exp_time: u8,
    #[serde(default)]
    pub hummingbird: GrantConfig,
    /// The DRKey service; without it the service serves no DRKey keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drkey: Option<DrkeyConfig>,
    /// The networks of this AS's hosts (`"10.0.0.0/16"`, or an address for one host): the
    /// only addresses host-level DRKey keys are served to. `listen` must be reachable by other
    /// ASes' control services too, and a host's own address as the TCP source is all a host
    /// shows of itself, so without this any machine could ask for the keys of its own address
    /// as if it were one of this AS's hosts. Required with `[drkey]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_networks: Vec<aviary_scion::Prefix>,
    /// The AS's GLWP service (`crate::control::glwp`); it needs the DRKey service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glwp: Option<crate::control::glwp::config::GlwpConfig>,
    #[serde(rename = "peer", default)]
    pub peers: Vec<Peer>,
}

fn default_exp_time() -> u8 {
    63
}

/// What a host agent needs to know about its AS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub name: String,
    pub ia: IsdAsn,
    /// The host's own address (sockets bind to it; it is the SCION source host address).
    pub addr: IpAddr,
    /// The internal socket of the AS's border router.
    pub router: SocketAddr,
    /// The AS's control service.
    pub control: SocketAddr,
    /// The AS's Z-Lane gateway, where the host sends its per-AS EPIC packets (`host send
    /// --epic`); its other traffic goes to the router directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zlane_gateway: Option<SocketAddr>,
}

/// The operator's bearer token in `path`, the `operator_token_file` of the config `file`: its
/// text without surrounding whitespace. An empty one is refused: it would match a request
/// that carries no token at all.
pub(crate) fn read_operator_token(file: &str, path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(file, "operator_token_file", format!("cannot read {}: {e}", path.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(ConfigError::new(file, "operator_token_file", format!("{} is empty", path.display())));
    }
    Ok(token.to_string())
}

pub(crate) fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

pub(crate) fn base_dir(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Reads a hex secret file; errors name the config file and field that pointed at it.
pub fn read_secret(config: &Path, field: &str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(config.display(), field, format!("cannot read {}: {e}", path.display())))?;
    let bytes = hex::decode(text.trim())
        .map_err(|e| ConfigError::new(config.display(), field, format!("{} is not hex: {e}", path.display())))?;
    if bytes.len() < 16 {
        return Err(ConfigError::new(config.display(), field, "a secret needs at least 16 bytes"));
    }
    Ok(bytes)
}

/// The most forwarding threads a router may have.
pub const MAX_WORKERS: usize = 256;

impl RouterConfig {
    /// Forwarding threads: `workers`, else one per core available to the process.
    pub fn worker_count(&self) -> usize {
        self.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_WORKERS))
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut c: Self = read_toml(path)?;
        c.master_secret_file = resolve(&base_dir(path), &c.master_secret_file);
        if let Some(f) = c.operator_token_file.as_mut() {
            *f = resolve(&base_dir(path), f);
        }
        if let Some(f) = c.pathval.as_mut().and_then(|p| p.level1_keys_file.as_mut()) {
            *f = resolve(&base_dir(path), f);
        }
        c.validate(&path.display().to_string())?;
        Ok(c)
    }

    pub fn validate(&self, file: &str) -> Result<(), ConfigError> {
        if self.interfaces.is_empty() {
            return Err(ConfigError::new(file, "interface", "a border router needs at least one [[interface]]"));
        }
        let mut ids = std::collections::BTreeSet::new();
        for (i, f) in self.interfaces.iter().enumerate() {
            let field = |name: &str| format!("interface[{i}].{name}");
            if f.id == 0 {
                return Err(ConfigError::new(file, field("id"), "0 is the AS's inside, not an interface"));
            }
            if !ids.insert(f.id) {
                return Err(ConfigError::new(file, field("id"), format!("interface {} is listed twice", f.id)));
            }
            if f.capacity_bps == 0 {
                return Err(ConfigError::new(file, field("capacity_bps"), "must be positive"));
            }
            if !(0.0..=10_000.0).contains(&f.delay_ms) {
                return Err(ConfigError::new(file, field("delay_ms"), "must be between 0 and 10000"));
            }
            if f.remote.port() == 0 || f.remote.ip().is_unspecified() {
                // Every packet from the neighbour would be dropped as not from it, and every
                // packet to it refused by the kernel.
                let why = format!("{}: the neighbour's socket needs an address and a port", f.remote);
                return Err(ConfigError::new(file, field("remote"), why));
            }
        }
        if self.operator_token_file.is_none() && !self.management.ip().is_loopback() {
            return Err(ConfigError::new(
                file,
                "operator_token_file",
                format!(
                    "required: the management API at {} is reachable from other machines, and anyone who \
                     reaches it could change links and keys without an operator token",
                    self.management
                ),
            ));
        }
        self.drkey_epochs.schedule(file, "drkey_epochs")?;
        if self.workers.is_some_and(|n| !(1..=MAX_WORKERS).contains(&n)) {
            return Err(ConfigError::new(file, "workers", format!("must be between 1 and {MAX_WORKERS}")));
        }
        if !(self.scmp.errors_per_s.is_finite() && self.scmp.errors_per_s >= 0.0) {
            return Err(ConfigError::new(file, "scmp.errors_per_s", "must be a non-negative number"));
        }
        let h = &self.hummingbird;
        if h.max_res_id > aviary_hummingbird::path::MAX_RES_ID {
            return Err(ConfigError::new(file, "hummingbird.max_res_id", "ResIDs have 22 bits"));
        }
        if h.max_packet_len == 0 {
            return Err(ConfigError::new(file, "hummingbird.max_packet_len", "must be positive"));
        }
        if h.duplicate_suppression && h.duplicates_per_window == 0 {
            return Err(ConfigError::new(file, "hummingbird.duplicates_per_window", "must be positive"));
        }
        if h.duplicate_suppression && h.freshness_window_ns() == 0 {
            let msg = "duplicate suppression needs a freshness window";
            return Err(ConfigError::new(file, "hummingbird.freshness_past_ns", msg));
        }
        if self.queues.priority_bytes == 0 || self.queues.best_effort_bytes == 0 {
            let field =
                if self.queues.priority_bytes == 0 { "queues.priority_bytes" } else { "queues.best_effort_bytes" };
            return Err(ConfigError::new(file, field, "must be positive"));
        }
        if let Some(z) = &self.zlane {
            z.plan(self.ia.isd()).map_err(|e| ConfigError::new(file, format!("zlane.{}", e.field()), e.to_string()))?;
        }
        if let Some(p) = &self.pathval {
            let ids: Vec<u16> = self.interfaces.iter().map(|i| i.id).collect();
            aviary_pathval::NextHops::new(&p.routes, &ids)
                .map_err(|e| ConfigError::new(file, format!("pathval.{}", e.field()), e.to_string()))?;
            if p.role == aviary_pathval::Role::Untrusted && p.level1_keys_file.is_some() {
                return Err(ConfigError::new(file, "pathval.level1_keys_file", "an untrusted router holds no keys"));
            }
            if !p.next.is_empty() && p.level1_keys_file.is_none() {
                let msg = "a trusted router with next trusted nodes needs their Level-1 keys";
                return Err(ConfigError::new(file, "pathval.level1_keys_file", msg));
            }
        }
        if let Some(g) = &self.glwp {
            g.check(file)?;
        }
        let tables = self.class_tables(file)?;
        for (i, f) in self.interfaces.iter().enumerate() {
            if !tables.contains_key(&f.class_table) {
                let known: Vec<&str> = tables.keys().map(String::as_str).collect();
                let msg = format!("no class table `{}` (known: {})", f.class_table, known.join(", "));
                return Err(ConfigError::new(file, format!("interface[{i}].class_table"), msg));
            }
        }
        self.guaranteed_bounds(file)?;
        Ok(())
    }

    /// The class tables by name, `default` included (Table 2 on a Z-Lane router).
    pub fn class_tables(&self, file: &str) -> Result<BTreeMap<String, aviary_qos::ClassTable>, ConfigError> {
        classes::tables(file, &self.class_table, &self.queues, self.zlane.is_some())
    }

    /// `[classes]` over the router's defaults: on a Z-Lane router every standard admission goes
    /// to its queue of Table 2 unless `[classes]` says otherwise; on a GLWP router with the
    /// plain tables, guaranteed traffic (GLWP's) goes to `priority`, with reservations.
    pub fn class_mapping(&self) -> BTreeMap<String, String> {
        let mut mapping = if self.zlane.is_some() { classes::zlane_mapping() } else { BTreeMap::new() };
        if self.glwp.is_some() && self.zlane.is_none() && self.class_table.is_empty() {
            mapping.insert(classes::GUARANTEED.to_owned(), classes::PLAIN_PRIORITY.to_owned());
        }
        mapping.extend(self.classes.clone());
        mapping
    }

    /// For every interface, its id and the bound of the class guaranteed traffic goes to
    /// (μ_G), which relative Z-Lane guarantees are shares of. Only a Z-Lane router needs it.
    pub fn guaranteed_bounds(&self, file: &str) -> Result<Vec<(u16, aviary_qos::RateBound)>, ConfigError> {
        if self.zlane.is_none() {
            return Ok(Vec::new());
        }
        let tables = self.class_tables(file)?;
        let mapping = self.class_mapping();
        self.interfaces
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let table = &tables[&f.class_table];
                classes::guaranteed_bound(table, &mapping).map(|b| (f.id, b)).ok_or_else(|| {
                    let msg = format!(
                        "class table `{}` has no class with a bound for guaranteed traffic (Z-Lane's μ_G)",
                        f.class_table
                    );
                    ConfigError::new(file, format!("interface[{i}].class_table"), msg)
                })
            })
            .collect()
    }
}

impl ControlConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut c: Self = read_toml(path)?;
        let base = base_dir(path);
        for p in [&mut c.master_secret_file, &mut c.topology, &mut c.operator_token_file, &mut c.state_dir] {
            *p = resolve(&base, p);
        }
        if let Some(p) = &mut c.resid_store {
            *p = resolve(&base, p);
        }
        let file = path.display().to_string();
        if let Some(d) = &mut c.drkey {
            d.cert_file = resolve(&base, &d.cert_file);
            d.key_file = resolve(&base, &d.key_file);
            for r in &mut d.trust_roots {
                r.cert_file = resolve(&base, &r.cert_file);
            }
            d.schedule(&file)?;
            if d.trust_roots.is_empty() {
                return Err(ConfigError::new(&file, "drkey.trust_roots", "names no ISD root"));
            }
            if c.host_networks.is_empty() {
                let why = "names no network: with [drkey], the networks of this AS's hosts, the only addresses host keys are served to";
                return Err(ConfigError::new(&file, "host_networks", why));
            }
        }
        if c.hummingbird.max_res_id > aviary_hummingbird::path::MAX_RES_ID {
            return Err(ConfigError::new(&file, "hummingbird.max_res_id", "ResIDs have 22 bits"));
        }
        if let Some(g) = &c.glwp {
            if g.listen.is_none() {
                return Err(ConfigError::new(&file, "glwp.listen", "the GLWP service needs a UDP socket"));
            }
            if c.drkey.is_none() {
                let why = "the GLWP service needs the DRKey service (a [drkey] table) for its keys";
                return Err(ConfigError::new(&file, "glwp", why));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in c.peers.iter().enumerate() {
            if !seen.insert(p.ia) {
                return Err(ConfigError::new(&file, format!("peer[{i}].ia"), format!("{} is listed twice", p.ia)));
            }
        }
        Ok(c)
    }
}

impl ControlConfig {
    /// The AS's shared ResID allocator file.
    pub fn resid_store(&self) -> PathBuf {
        self.resid_store.clone().unwrap_or_else(|| self.state_dir.join(RESID_STORE))
    }
}

/// File name of an AS's ResID allocator in its state directory.
pub const RESID_STORE: &str = "resids.json";

impl HostConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        read_toml(path)
    }
}

/// Writes a config as TOML.
pub fn write_toml<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = toml::to_string_pretty(value)?;
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router_toml(extra: &str) -> String {
        format!(
            r#"ia = "1-ff00:0:110"
master_secret_file = "secret.hex"
internal = "127.0.0.1:31000"
management = "127.0.0.1:31001"
{extra}
[[interface]]
id = 1
local = "127.0.0.1:31002"
remote = "127.0.0.1:31003"
neighbor = "1-ff00:0:111"
capacity_bps = 1000000
"#
        )
    }

    fn load_router(text: &str) -> Result<RouterConfig, ConfigError> {
        let dir = aviary_scratch::ScratchDir::new("cfg");
        let f = dir.join("router.toml");
        std::fs::write(&f, text).unwrap();
        RouterConfig::load(&f)
    }

    #[test]
    fn router_config_round_trip_and_relative_paths() {
        let c = load_router(&router_toml("")).unwrap();
        assert!(c.master_secret_file.is_absolute());
        assert_eq!(c.hummingbird, RouterParams::default());
        let again: RouterConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn a_management_api_off_loopback_needs_an_operator_token() {
        let exposed = router_toml("").replace("management = \"127.0.0.1:31001\"", "management = \"0.0.0.0:31001\"");
        let e = load_router(&exposed).unwrap_err();
        assert_eq!(e.field, "operator_token_file", "{e}");
        assert!(e.to_string().contains("router.toml") && e.message.contains("0.0.0.0:31001"), "{e}");
        let with_token = exposed.replace("[[interface]]", "operator_token_file = \"operator.token\"\n[[interface]]");
        let c = load_router(&with_token).unwrap();
        assert!(c.operator_token_file.unwrap().is_absolute(), "resolved beside the config");
        assert_eq!(load_router(&router_toml("")).unwrap().operator_token_file, None, "loopback: optional");
    }

    #[test]
    fn operator_tokens_are_read_trimmed_and_never_empty() {
        let dir = aviary_scratch::ScratchDir::new("token");
        let f = dir.join("operator.token");
        std::fs::write(&f, "  s3cret\n").unwrap();
        assert_eq!(read_operator_token("cfg.toml", &f).unwrap(), "s3cret");
        // An empty token would let through every request that carries none.
        std::fs::write(&f, " \n").unwrap();
        let e = read_operator_token("cfg.toml", &f).unwrap_err();
        assert_eq!((e.file.as_str(), e.field.as_str()), ("cfg.toml", "operator_token_file"));
        assert!(e.message.contains("empty"), "{e}");
        let e = read_operator_token("cfg.toml", &dir.join("missing")).unwrap_err();
        assert!(e.message.contains("cannot read"), "{e}");
    }

    #[test]
    fn router_config_errors_name_the_field() {
        let e = load_router(&router_toml("[hummingbird]\nburst_ms = 3\n")).unwrap_err();
        assert!(e.field.contains("burst_ms"), "{e}");
        let e = load_router(&router_toml("").replace("id = 1", "id = 0")).unwrap_err();
        assert_eq!(e.field, "interface[0].id");
        let e = load_router(&router_toml("").replace("capacity_bps = 1000000", "capacity_bps = 0")).unwrap_err();
        assert_eq!(e.field, "interface[0].capacity_bps");
        let e = load_router(&router_toml("").replace("127.0.0.1:31003", "localhost")).unwrap_err();
        assert!(e.to_string().contains("router.toml") && e.field.contains("remote"), "{e}");
        for remote in ["127.0.0.1:0", "0.0.0.0:31003", "[::]:31003"] {
            let e = load_router(&router_toml("").replace("127.0.0.1:31003", remote)).unwrap_err();
            assert_eq!(e.field, "interface[0].remote", "{remote}: {e}");
        }
        for bad in ["workers = 0\n", "workers = 100000\n"] {
            let e = load_router(&router_toml(bad)).unwrap_err();
            assert_eq!(e.field, "workers", "{bad}");
            assert!(e.to_string().contains("router.toml"), "{e}");
        }
        let e = load_router(&router_toml("workers = -2\n")).unwrap_err();
        assert!(e.to_string().contains("workers"), "{e}");
        assert_eq!(load_router(&router_toml("workers = 3\n")).unwrap().worker_count(), 3);
        assert!(load_router(&router_toml("")).unwrap().worker_count() >= 1);
    }

    #[test]
    fn drkey_epochs_default_to_scions_and_errors_name_file_and_field() {
        use aviary_scion::drkey::EpochSchedule;
        let c = load_router(&router_toml("")).unwrap();
        assert_eq!(c.drkey_epochs.schedule("f", "drkey_epochs").unwrap(), EpochSchedule::SCION_DEFAULT);
        let c = load_router(&router_toml("[drkey_epochs]\nepoch_duration_s = 3600\n")).unwrap();
        assert_eq!(c.drkey_epochs.schedule("f", "drkey_epochs").unwrap(), EpochSchedule::new(3600, 5).unwrap());
        let cases = [
            ("[drkey_epochs]\nepoch_duration_s = 0\n", "drkey_epochs.epoch_duration_s"),
            ("[drkey_epochs]\nepoch_duration_s = 3600\ngrace_s = 3600\n", "drkey_epochs.grace_s"),
            // Parse errors name the key by its line.
            ("[drkey_epochs]\nepoch_duration_s = -1\n", "`epoch_duration_s`"),
            // A misspelt field is not a silent default.
            ("[drkey_epochs]\nepoch_duration = 3600\n", "epoch_duration"),
        ];
        for (text, field) in cases {
            let e = load_router(&router_toml(text)).unwrap_err();
            assert!(e.file.ends_with("router.toml"), "{text}: {e}");
            assert!(e.field.contains(field) || e.message.contains(field), "{text}: {e}");
        }
        // The control service's `[drkey]` checks its fields by the same rule.
        let d = |epoch_duration_s, grace_s| DrkeyConfig {
            listen: "127.0.0.1:1".parse().unwrap(),
            cert_file: "c".into(),
            key_file: "k".into(),
            trust_roots: Vec::new(),
            epoch_duration_s,
            grace_s,
        };
        assert_eq!(d(0, 0).schedule("control.toml").unwrap_err().field, "drkey.epoch_duration_s");
        assert_eq!(d(60, 60).schedule("control.toml").unwrap_err().field, "drkey.grace_s");
        assert_eq!(d(3600, 5).epochs(), DrkeyEpochs { epoch_duration_s: 3600, grace_s: 5 });
    }

    #[test]
    fn hummingbird_profile_with_overrides() {
        use aviary_hummingbird::{PolicedLength, Profile};
        let text = "[hummingbird]\nburst_ns = 50000000\nprofile = \"scionproto\"\nduplicate_suppression = true\n";
        let c = load_router(&router_toml(text)).unwrap();
        let want = RouterParams { burst_ns: 50_000_000, duplicate_suppression: true, ..Profile::Scionproto.params() };
        assert_eq!(c.hummingbird, want);
        assert_eq!(c.hummingbird.policed_length, PolicedLength::Payload);
        let e = load_router(&router_toml("[hummingbird]\nprofile = \"go\"\n")).unwrap_err();
        assert!(e.to_string().contains("profile") || e.field.contains("profile"), "{e}");
        let e = load_router(&router_toml("[hummingbird]\nmax_packet_len = 0\n")).unwrap_err();
        assert_eq!(e.field, "hummingbird.max_packet_len");
        let text = "[hummingbird]\nduplicate_suppression = true\nduplicates_per_window = 0\n";
        assert_eq!(load_router(&router_toml(text)).unwrap_err().field, "hummingbird.duplicates_per_window");
    }

    #[test]
    fn control_glwp_table_needs_a_socket_and_drkey() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/two-machines");
        let base = std::fs::read_to_string(dir.join("control-110.toml")).unwrap();
        let load = |glwp: &str| {
            let scratch = aviary_scratch::ScratchDir::new("cfg-glwp");
            let f = scratch.join("control.toml");
            let text = base.replace("[[peer]]", &format!("{glwp}\n[[peer]]"));
            std::fs::write(&f, text).unwrap();
            ControlConfig::load(&f)
        };
        let e = load("[glwp]\nmatrix = []").unwrap_err();
        assert_eq!(e.field, "glwp.listen", "{e}");
        let e = load("[glwp]\nlisten = \"127.0.0.1:30007\"\nmatrix = []").unwrap_err();
        assert_eq!(e.field, "glwp", "{e}");
        assert!(e.message.contains("[drkey]"), "{e}");
        let e = load("[glwp]\nlisten = \"127.0.0.1:30007\"\nmatrix = [[0, 1]]").unwrap_err();
        assert!(e.file.ends_with(".toml") && e.field.contains("matrix"), "{e}");
    }

    /// Host keys need the networks they may go to: a `[drkey]` table without them is refused,
    /// named, and written prefixes are checked as prefixes.
    #[test]
    fn control_drkey_needs_host_networks() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/two-machines");
        let base = std::fs::read_to_string(dir.join("control-110.toml")).unwrap();
        let drkey = "[drkey]\nlisten = \"127.0.0.1:30003\"\ncert_file = \"c.pem\"\nkey_file = \"c.key\"\n\
                     [[drkey.trust_roots]]\nisd = 1\ncert_file = \"root.pem\"\n";
        let load = |top: &str| {
            let scratch = aviary_scratch::ScratchDir::new("cfg-host-networks");
            let f = scratch.join("control.toml");
            std::fs::write(&f, format!("{top}{base}").replace("[[peer]]", &format!("{drkey}[[peer]]"))).unwrap();
            ControlConfig::load(&f)
        };
        let e = load("").unwrap_err();
        assert_eq!(e.field, "host_networks", "{e}");
        assert!(e.file.ends_with("control.toml"), "{e}");
        let c = load("host_networks = [\"10.0.0.0/16\", \"2001:db8::1\"]\n").unwrap();
        assert_eq!(c.host_networks, ["10.0.0.0/16".parse().unwrap(), "2001:db8::1/128".parse().unwrap()]);
        let e = load("host_networks = [\"10.0.1.0/8\"]\n").unwrap_err();
        assert!(e.to_string().contains("host_networks") && e.to_string().contains("beyond its length"), "{e}");
    }

    #[test]
    fn documented_example_configs_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/two-machines");
        for f in ["router-110.toml", "router-111.toml"] {
            RouterConfig::load(&dir.join(f)).unwrap();
        }
        for f in ["control-110.toml", "control-111.toml"] {
            ControlConfig::load(&dir.join(f)).unwrap();
        }
        HostConfig::load(&dir.join("host-111.toml")).unwrap();
        crate::topology::Topology::load(&dir.join("topology.toml")).unwrap();
    }
}
