//! The bandwidth market of a run (`aviary run --market`, `aviary demo`): the embedded ledger
//! in `<run>/market/ledger`, the contracts deployed by the registry owner (an account of its
//! own, generated for the run: none of the dev accounts, which anyone may use), a root key per
//! ISD (the runner plays each ISD's certificate authority; certificates last
//! [`CERTIFICATE_VALIDITY_S`]), a marketplace paid in the native
//! currency, and per AS a ledger account, an AS key certified by its ISD root and the config
//! of its AS service, which sells half of each link's capacity in both directions (of the 80%
//! reservable; the operator's grants have the rest).
//!
//! ```text
//! market/ledger/                 the embedded ledger (shared by the processes, locked per use)
//! market/deployment.json         contract addresses and the marketplace id
//! market/registry-owner.key      the registry owner's account (sets ISD roots, revokes certificates)
//! market/isd-<n>-root.key        ISD root keys (P-256), the CA's secret
//! market/buyer.key               a funded account for buying (the demo's source)
//! <isd-as>/as-service.toml       the AS service; account.key, as-p256.key, as-cert.json beside it
//! ```
//! An existing market directory is reused as it is (ledger state, keys and deployment).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use aviary_market::registration::{certify, Certificate};
use aviary_market::{Account, Address, Deployment, Ledger, SharedLedger, U256};

use crate::as_service::{AsServiceConfig, DeploymentFile, Direction, LedgerConfig, OfferConfig};
use crate::config::write_toml;
use crate::files;
use crate::runner::RunLayout;

/// Wei every AS account and the buyer start with (100 ETH).
const FUNDS: u128 = 100_000_000_000_000_000_000;
/// Price per kbit/s × s, wei.
pub const PRICE_PER_UNIT: u64 = 1_000_000;
/// Assets: one hour each, on a one-minute grid, two periods on sale.
pub const PERIOD_S: u64 = 3600;
pub const GRANULARITY_S: u32 = 60;
/// How long the AS certificates the runner issues last, from the time the run is set up (a
/// year; a run set up again re-issues them).
pub const CERTIFICATE_VALIDITY_S: u64 = 365 * 24 * 3600;

/// The buyers' purchase records, beside the deployment file in a run's market directory.
pub const PURCHASES_DIR: &str = "purchases";

/// Where the market of a run is.
#[derive(Clone, Debug)]
pub struct MarketLayout {
    pub ledger_dir: PathBuf,
    pub deployment_file: PathBuf,
    pub deployment: DeploymentFile,
    /// A funded account for the run's buyers.
    pub buyer_key_file: PathBuf,
    /// The AS service config of every AS.
    pub as_services: BTreeMap<aviary_scion::IsdAsn, PathBuf>,
}

impl MarketLayout {
    pub fn ledger(&self) -> anyhow::Result<SharedLedger> {
        Ok(SharedLedger::open(&self.ledger_dir)?)
    }

    /// Where the run's buyers keep their purchase records (`aviary market buy/wait/reclaim`).
    pub fn purchases_dir(&self) -> PathBuf {
        self.deployment_file.with_file_name(PURCHASES_DIR)
    }

    pub fn buyer(&self) -> anyhow::Result<Account> {
        let key = std::fs::read_to_string(&self.buyer_key_file)
            .with_context(|| format!("cannot read {}", self.buyer_key_file.display()))?;
        Ok(Account::from_hex(key.trim())?)
    }
}

fn random32() -> anyhow::Result<[u8; 32]> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(b)
}

/// A secret key file: read if present, else created from fresh randomness.
fn key_file(path: &Path) -> anyhow::Result<[u8; 32]> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let b = hex::decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))?;
        files::restrict(path).with_context(|| format!("cannot restrict {}", path.display()))?;
        return b.try_into().map_err(|_| anyhow::anyhow!("{}: expected 32 bytes", path.display()));
    }
    let b = random32()?;
    files::write_secret(path, (hex::encode(b) + "\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(b)
}

fn p256_key(path: &Path) -> anyhow::Result<p256::ecdsa::SigningKey> {
    loop {
        let b = key_file(path)?;
        match p256::ecdsa::SigningKey::from_slice(&b) {
            Ok(k) => return Ok(k),
            // Not a valid scalar (probability ~2^-32): draw again.
            Err(_) => std::fs::remove_file(path)?,
        }
    }
}

impl RunLayout {
    /// Sets up (or reuses) the market of this run; see the module docs.
    pub fn write_market(&self) -> anyhow::Result<MarketLayout> {
        let dir = self.dir.join("market");
        std::fs::create_dir_all(&dir)?;
        let ledger_dir = dir.join("ledger");
        let deployment_file = dir.join("deployment.json");
        let mut ledger = SharedLedger::open(&ledger_dir)?;
        let owner = Account::from_private_key(&key_file(&dir.join("registry-owner.key"))?)?;
        if ledger.balance(owner.address())?.is_zero() {
            ledger.fund(owner.address(), U256::from(FUNDS))?;
        }
        let deployment = match DeploymentFile::load(&deployment_file) {
            Ok(d) => d,
            Err(_) => {
                let d = Deployment::deploy_all(&mut ledger, &owner)?;
                let marketplace = d.create_marketplace(&mut ledger, &owner, Address::ZERO)?;
                let f = DeploymentFile { registry: d.registry, assets: d.assets, market: d.market, marketplace };
                std::fs::write(&deployment_file, serde_json::to_string_pretty(&f)? + "\n")?;
                f
            }
        };
        let d = deployment.deployment();
        let mut isds: Vec<u16> = self.ases.keys().map(|ia| ia.isd()).collect();
        isds.dedup();
        let mut roots = BTreeMap::new();
        for isd in isds {
            let root = p256_key(&dir.join(format!("isd-{isd}-root.key")))?;
            d.set_isd_root(&mut ledger, &owner, isd, root.verifying_key())?;
            roots.insert(isd, root);
        }
        let buyer_key_file = dir.join("buyer.key");
        let buyer = Account::from_private_key(&key_file(&buyer_key_file)?)?;
        if ledger.balance(buyer.address())?.is_zero() {
            ledger.fund(buyer.address(), U256::from(FUNDS))?;
        }
        let mut as_services = BTreeMap::new();
        for a in self.ases.values() {
            let account = Account::from_private_key(&key_file(&a.dir.join("account.key"))?)?;
            if ledger.balance(account.address())?.is_zero() {
                ledger.fund(account.address(), U256::from(FUNDS))?;
            }
            let as_key = p256_key(&a.dir.join("as-p256.key"))?;
            let not_after = ledger.pending_timestamp()? + CERTIFICATE_VALIDITY_S;
            let cert: Certificate = certify(&roots[&a.ia.isd()], a.ia.to_u64(), as_key.verifying_key(), not_after);
            std::fs::write(a.dir.join("as-cert.json"), serde_json::to_string_pretty(&cert)? + "\n")?;
            let offers = a
                .router
                .interfaces
                .iter()
                .flat_map(|i| {
                    [Direction::Ingress, Direction::Egress].map(|direction| OfferConfig {
                        interface: i.id,
                        direction,
                        bandwidth_kbps: i.capacity_bps / 2 / 1000,
                        min_bandwidth_kbps: 100,
                        granularity_s: GRANULARITY_S,
                        period_s: PERIOD_S,
                        periods_ahead: 2,
                        price_per_unit: PRICE_PER_UNIT,
                    })
                })
                .collect();
            let cfg = AsServiceConfig {
                ia: a.ia,
                master_secret_file: "master.key".into(),
                ledger: LedgerConfig::Embedded("../market/ledger".into()),
                deployment_file: "../market/deployment.json".into(),
                account_key_file: "account.key".into(),
                as_key_file: "as-p256.key".into(),
                certificate_file: "as-cert.json".into(),
                state_dir: "state".into(),
                resid_store: None,
                // The same codec, ResID bound and reservable bandwidth as the AS's control service.
                hummingbird: a.control.hummingbird.clone(),
                poll_ms: 200,
                metrics: Some(a.as_service_metrics),
                offers,
            };
            let path = a.dir.join("as-service.toml");
            write_toml(&path, &cfg)?;
            as_services.insert(a.ia, path);
        }
        Ok(MarketLayout { ledger_dir, deployment_file, deployment, buyer_key_file, as_services })
    }
}
