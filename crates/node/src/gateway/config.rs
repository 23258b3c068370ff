//! The config file of `aviary zlane-gateway`: where the gateway listens, where its AS's router
//! and control service are, the AS's secrets, and the `[zlane_gateway]` table of
//! `aviary_zlane::gateway` (rates and policy).
//!
//! ```toml
//! ia = "1-ff00:0:111"
//! master_secret_file = "master.key"       # the AS's, as its router's
//! listen = "127.0.0.2:30005"              # UDP: hosts send their per-AS EPIC packets here
//! router = "127.0.0.2:30000"              # the AS router's internal socket
//! metrics = "127.0.0.2:30006"             # HTTP: /metrics, /v1/status
//! control = "127.0.0.2:30002"             # the AS's control service (Level-1 keys)
//! operator_token_file = "operator.token"  # what the control service asks of infrastructure
//! topology = "../topology.toml"           # links, to tell which AS owns each hop field
//! [drkey_epochs]                          # the AS's, as its control service's [drkey]
//! epoch_duration_s = 86400
//! grace_s = 5
//! [zlane_gateway]
//! guarantee_bps = 2000000
//! drkey_protocol = 42
//! [[zlane_gateway.hosts]]
//! prefix = "127.0.2.10"
//! rate_bps = 1000000
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use aviary_scion::IsdAsn;
use aviary_zlane::gateway::GatewayConfig;
use serde::{Deserialize, Serialize};

use crate::config::{base_dir, read_operator_token, resolve, ConfigError, DrkeyEpochs};
use crate::secret_rotation;
use crate::topology::{read_toml, Topology};
use aviary_scion::drkey::{EpochSchedule, RotatingSecret};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZlaneGatewayConfig {
    pub ia: IsdAsn,
    /// The AS's master secret (hex): the gateway verifies its hosts' sources with it.
    pub master_secret_file: PathBuf,
    /// UDP socket the AS's hosts send their per-AS EPIC packets to.
    pub listen: SocketAddr,
    /// The internal socket of the AS's border router, where packets go on.
    pub router: SocketAddr,
    /// HTTP endpoint: `/metrics` (Prometheus text) and `/v1/status`.
    pub metrics: SocketAddr,
    /// The AS's control service, which hands the gateway the Level-1 keys other ASes issued.
    pub control: SocketAddr,
    /// File holding the AS's operator token, which the control service asks infrastructure for.
    pub operator_token_file: PathBuf,
    /// The topology file: its links tell which AS each hop field of a path belongs to.
    pub topology: PathBuf,
    /// The AS's DRKey epochs, which the gateway's own keys follow and its Level-1 keys are
    /// fetched for; must be the control service's `[drkey]` ones (checked against its replies).
    #[serde(default)]
    pub drkey_epochs: DrkeyEpochs,
    pub zlane_gateway: GatewayConfig,
}

/// A loaded config with what its files hold.
pub struct LoadedGateway {
    pub config: ZlaneGatewayConfig,
    /// The AS master secret with the record of its last rotation (the gateway derives DRKey
    /// keys).
    pub master_secret: RotatingSecret,
    /// The schedule of `drkey_epochs`.
    pub schedule: EpochSchedule,
    pub operator_token: String,
    pub topology: Topology,
}

impl ZlaneGatewayConfig {
    /// Reads and checks the file; every error names the file and the field.
    pub fn load(path: &Path) -> Result<LoadedGateway, ConfigError> {
        let mut c: Self = read_toml(path)?;
        let base = base_dir(path);
        for p in [&mut c.master_secret_file, &mut c.operator_token_file, &mut c.topology] {
            *p = resolve(&base, p);
        }
        let file = path.display().to_string();
        c.zlane_gateway
            .plan()
            .map_err(|e| ConfigError::new(&file, format!("zlane_gateway.{}", e.field()), e.to_string()))?;
        let schedule = c.drkey_epochs.schedule(&file, "drkey_epochs")?;
        let master_secret = secret_rotation::load(path, "master_secret_file", &c.master_secret_file)?;
        let operator_token = read_operator_token(&file, &c.operator_token_file)?;
        let topology = Topology::load(&c.topology)
            .map_err(|e| ConfigError::new(&file, "topology", format!("{}: {}: {}", e.file, e.field, e.message)))?;
        if topology.as_entry(c.ia).is_none() {
            return Err(ConfigError::new(
                &file,
                "ia",
                format!("{} is not in the topology {}", c.ia, c.topology.display()),
            ));
        }
        Ok(LoadedGateway { config: c, master_secret, schedule, operator_token, topology })
    }
}
