//! `aviary market`: the buyer's commands (list offers, plan and buy reservations for a path,
//! resume waiting for them, list the requests and reclaim the undelivered ones, list the
//! assets it owns and resell them) and the seller's delisting and withdrawal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use aviary_market::client::{self, view, RequestState};
use aviary_market::{Account, Address, Deployment, Ledger, RpcLedger, SharedLedger};
use aviary_node::as_service::DeploymentFile;
use aviary_node::buyer::{self, NewPurchase, Purchase, PurchaseRecord};
use aviary_node::config::HostConfig;
use aviary_node::runner::market_setup::PURCHASES_DIR;
use aviary_scion::IsdAsn;
use clap::{Args, Subcommand};

/// Which chain, which contracts, which account.
#[derive(Args)]
pub struct Chain {
    /// A run directory of `aviary run --market` (its ledger, contracts and buyer account).
    #[arg(long, conflicts_with_all = ["ledger_dir", "rpc"])]
    run: Option<PathBuf>,
    /// The embedded ledger's data directory.
    #[arg(long)]
    ledger_dir: Option<PathBuf>,
    /// An EVM node's JSON-RPC URL.
    #[arg(long, conflicts_with = "ledger_dir")]
    rpc: Option<String>,
    /// The deployment file (contract addresses, marketplace).
    #[arg(long)]
    deployment: Option<PathBuf>,
    /// The account key (secp256k1, hex): the buyer's to buy, the seller's to withdraw.
    #[arg(long)]
    account_key: Option<PathBuf>,
    /// The buyer's purchase records (default with --run: RUN/market/purchases): each purchase's
    /// ephemeral key is written here (0600) before the purchase is sent.
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

impl Chain {
    fn open(&self) -> Result<(Box<dyn Ledger>, DeploymentFile, Option<Account>)> {
        let market = self.run.as_ref().map(|r| r.join("market"));
        let deployment = self
            .deployment
            .clone()
            .or_else(|| market.as_ref().map(|m| m.join("deployment.json")))
            .context("--deployment (or --run) is needed")?;
        let key_file = self.account_key.clone().or_else(|| market.as_ref().map(|m| m.join("buyer.key")));
        let account = match key_file {
            Some(f) => Some(Account::from_hex(
                std::fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?.trim(),
            )?),
            None => None,
        };
        let ledger: Box<dyn Ledger> =
            match (&self.rpc, self.ledger_dir.clone().or_else(|| market.map(|m| m.join("ledger")))) {
                (Some(url), _) => Box::new(RpcLedger::connect(url, account.iter().cloned().collect())?),
                (None, Some(dir)) => Box::new(SharedLedger::open(dir)?),
                (None, None) => bail!("say which chain: --run, --ledger-dir or --rpc"),
            };
        Ok((ledger, DeploymentFile::load(&deployment)?, account))
    }

    fn state_dir(&self) -> Result<PathBuf> {
        self.state_dir
            .clone()
            .or_else(|| self.run.as_ref().map(|r| r.join("market").join(PURCHASES_DIR)))
            .context("--state-dir (or --run) is needed: purchases are recorded there")
    }
}

#[derive(Subcommand)]
pub enum MarketCommand {
    /// Every open listing, cheapest first: AS, interface, direction, start (UTC) and duration,
    /// time grid, bandwidth, minimum piece, price per Mbit/s·s in the token's units, marketplace
    /// and who sells (the issuing AS, or a reseller of what it bought).
    Offers {
        #[command(flatten)]
        chain: Chain,
        /// Only this ISD-AS.
        #[arg(long)]
        ia: Option<IsdAsn>,
    },
    /// Buy reservations on every transit AS of the path a host uses to a destination, in one
    /// transaction; wait for the deliveries and write the reservation file.
    Buy {
        #[command(flatten)]
        chain: Chain,
        /// The sending host's config (its control service gives the path).
        #[arg(long)]
        host: PathBuf,
        /// Destination ISD-AS.
        #[arg(long)]
        dst: IsdAsn,
        /// Which of the control service's paths.
        #[arg(long, default_value_t = 0)]
        path_index: usize,
        #[arg(long)]
        bandwidth_bps: u64,
        /// Start (Unix s, on the time grid; default: the grid's next point after the chain's time).
        #[arg(long)]
        start: Option<u64>,
        /// Length of the window, s: at most 65535 (a reservation's 16-bit ResDuration).
        #[arg(long, default_value_t = 600)]
        duration_s: u64,
        /// Time grid of the assets, s.
        #[arg(long, default_value_t = 60)]
        granularity_s: u64,
        /// Also buy the reverse direction and write its reservation file here (for the destination).
        #[arg(long)]
        reverse_out: Option<PathBuf>,
        /// Show the plan and its price, buy nothing.
        #[arg(long)]
        dry_run: bool,
        /// Pay in this ERC-20 token (its contract address) instead of the native currency. A
        /// purchase is paid in one currency: only listings in marketplaces paid in it are
        /// planned, whatever the others' prices read.
        #[arg(long)]
        token: Option<Address>,
        /// The reservation file to write.
        #[arg(long, required_unless_present = "dry_run")]
        out: Option<PathBuf>,
        /// How long the ASes have to deliver, s (at most a day); after that, `aviary market
        /// reclaim` takes back what was not delivered.
        #[arg(long, default_value_t = client::DEFAULT_DELIVERY_WINDOW_S)]
        delivery_window_s: u32,
        /// How long to wait for the deliveries before leaving it to `aviary market wait`.
        #[arg(long, default_value_t = 60)]
        wait_s: u64,
    },
    /// Resume waiting for the reservations of earlier purchases (of a `buy` that was killed or
    /// gave up waiting): open what arrives and write the reservation files.
    Wait {
        #[command(flatten)]
        chain: Chain,
        /// Only this purchase (its record's file name in the state directory).
        #[arg(long)]
        purchase: Option<String>,
        /// Stop waiting after this long (what arrived is written either way).
        #[arg(long, default_value_t = 60)]
        timeout_s: u64,
    },
    /// The buyer's redeem requests and their state: pending, delivered, expired-reclaimable,
    /// reclaimed.
    Requests {
        #[command(flatten)]
        chain: Chain,
    },
    /// Take back the assets of every request whose delivery deadline passed undelivered.
    Reclaim {
        #[command(flatten)]
        chain: Chain,
    },
    /// The assets the account owns (bought and not redeemed, or reclaimed): what it can resell.
    Assets {
        #[command(flatten)]
        chain: Chain,
    },
    /// Resell an asset the account owns on the deployment's marketplace (the account becomes
    /// a seller there if it is not one). It is sold like the issuer's listings, by the piece;
    /// the issuing AS still delivers the reservation.
    Sell {
        #[command(flatten)]
        chain: Chain,
        /// The asset (see `aviary market assets`).
        #[arg(long)]
        asset: aviary_market::U256,
        /// Price per kbit/s × s, in wei.
        #[arg(long)]
        price_per_unit: u128,
    },
    /// Close one of the account's listings: the market gives the rest of its asset back.
    Delist {
        #[command(flatten)]
        chain: Chain,
        #[arg(long)]
        listing: aviary_market::U256,
    },
    /// A seller's proceeds: the market credits each sale to the seller, who withdraws them
    /// (native currency and the given ERC-20 tokens) to its account (`--account-key`: the AS's).
    Withdraw {
        #[command(flatten)]
        chain: Chain,
        /// Also withdraw these ERC-20 tokens.
        #[arg(long)]
        token: Vec<Address>,
        /// Only show what is due.
        #[arg(long)]
        dry_run: bool,
    },
}

fn ia(isd_as: u64) -> String {
    IsdAsn::from_u64(isd_as).to_string()
}

/// Waits for the purchase recorded at `record`, writes what arrived, says what did not.
fn wait_for(ledger: &dyn Ledger, d: &Deployment, record: &Path, timeout: Duration) -> Result<()> {
    let got = buyer::wait(ledger, d, record, timeout)?;
    let saved = PurchaseRecord::load(record)?;
    for (file, out, what) in [
        (&got.forward, &saved.out, "reservations delivered and opened"),
        (&got.reverse, &saved.reverse_out, "reverse reservations (for the destination)"),
    ] {
        if let (Some(f), Some(out)) = (file, out) {
            println!("{what}: {} ({} hop(s))", out.display(), f.reservations.len());
        }
    }
    for m in &got.missing {
        println!("missing: request {} ({}): {}", m.request, m.ia, m.why);
    }
    if got.missing.is_empty() {
        return Ok(());
    }
    let reclaimable = got.missing.iter().any(|m| matches!(m.state, RequestState::Expired { .. }));
    let hint = if reclaimable {
        "`aviary market reclaim` takes back the assets of the expired ones"
    } else {
        "`aviary market wait` resumes; after a deadline, `aviary market reclaim` takes the assets back"
    };
    bail!("{} of {} reservation(s) missing: {hint}", got.missing.len(), saved.hops)
}

pub fn run(cmd: MarketCommand) -> Result<()> {
    match cmd {
        MarketCommand::Offers { chain, ia: only } => {
            let (ledger, dep, _) = chain.open()?;
            // The market's index of open listings: all sides, or those of one ISD-AS.
            let d = dep.deployment();
            let offers = match only {
                Some(ia) => client::open_offers_on(&*ledger, &d, &d.listed_sides_of(&*ledger, ia.to_u64())?)?,
                None => client::open_offers(&*ledger, &d)?,
            };
            let tokens =
                client::token_infos(&*ledger, offers.iter().map(|o| o.payment_token).collect::<BTreeSet<_>>())?;
            let now = ledger.pending_timestamp()?;
            let rows = view::offer_rows(&offers, &tokens, now);
            println!("chain time {}; {} open listing(s), cheapest first", view::format_utc(now), rows.len());
            print!("{}", view::offers_table(&rows));
        }
        MarketCommand::Buy {
            chain,
            host,
            dst,
            path_index,
            bandwidth_bps,
            start,
            duration_s,
            granularity_s,
            reverse_out,
            dry_run,
            token,
            out,
            delivery_window_s,
            wait_s,
        } => {
            let (mut ledger, dep, account) = chain.open()?;
            let d: Deployment = dep.deployment();
            // The window is checked against the chain's clock before anything else is asked or sent.
            let now = ledger.pending_timestamp()?;
            let start = match start {
                Some(s) => s,
                None => client::next_grid_point(now, granularity_s)?,
            };
            let window = client::window(start, duration_s, bandwidth_bps.div_ceil(1000))?;
            client::check_window(window, granularity_s, now)?;
            let host = HostConfig::load(&host)?;
            let paths = aviary_node::api::fetch_paths(host.control, dst)?;
            let path = paths
                .get(path_index)
                .with_context(|| format!("there are {} paths, not {}", paths.len(), path_index + 1))?;
            let purchase = Purchase {
                start: window.start,
                expiry: window.expiry,
                bandwidth_kbps: window.bandwidth,
                reverse: reverse_out.is_some(),
                wait_for_offers: Duration::ZERO,
                wait_for_delivery: Duration::from_secs(wait_s),
                delivery_window_s,
                payment_token: token.unwrap_or(Address::ZERO),
            };
            let wants = buyer::wants(path, purchase.reverse);
            let plan = buyer::plan(&*ledger, &d, account.as_ref().map(Account::address), &wants, &purchase)?;
            let tokens = client::token_infos(&*ledger, [plan.token])?;
            for line in view::plan_lines(&plan, &tokens) {
                println!("{line}");
            }
            if dry_run {
                return Ok(());
            }
            let account = account.context("--account-key (or --run) is needed to buy")?;
            let new = NewPurchase {
                buyer: account.address(),
                ends: (host.ia, dst),
                reverse: purchase.reverse,
                hops: wants.len(),
                window: purchase.window(),
                out: Some(out.context("--out is needed")?),
                reverse_out,
            };
            let state_dir = chain.state_dir()?;
            let record = buyer::buy(&mut *ledger, &d, &account, &plan, new, &purchase, &state_dir)?;
            println!("bought; purchase recorded in {}", record.display());
            wait_for(&*ledger, &d, &record, purchase.wait_for_delivery)?;
        }
        MarketCommand::Wait { chain, purchase, timeout_s } => {
            let (ledger, dep, _) = chain.open()?;
            let d = dep.deployment();
            let records = PurchaseRecord::all_in(&chain.state_dir()?)?;
            let (mut waited, mut unfinished) = (0, 0);
            for (path, record) in records {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let chosen = purchase.as_ref().map_or(!record.complete, |p| *p == name);
                if chosen {
                    waited += 1;
                    println!("purchase {name}:");
                    // One purchase's trouble (not mined, something missing) does not stop the others.
                    if let Err(e) = wait_for(&*ledger, &d, &path, Duration::from_secs(timeout_s)) {
                        println!("  {e:#}");
                        unfinished += 1;
                    }
                }
            }
            match (waited, unfinished) {
                (0, _) => println!("no purchase to wait for"),
                (_, 0) => {}
                (n, k) => bail!("{k} of {n} purchase(s) not complete"),
            }
        }
        MarketCommand::Requests { chain } => {
            let (ledger, dep, _) = chain.open()?;
            let d = dep.deployment();
            let now = ledger.pending_timestamp()?;
            println!("{:<22} {:>8} {:<16} {:<40}", "purchase", "request", "ISD-AS", "state");
            for (path, mut record) in PurchaseRecord::all_in(&chain.state_dir()?)? {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let requests = record.resolve_requests(&*ledger, &d)?;
                if requests.is_empty() {
                    println!("{name:<22} {:>8} {:<16} not on chain (the purchase was not mined)", "-", "-");
                }
                for id in requests {
                    let req = d.request_of(&*ledger, id)?;
                    let state = client::current_state(&*ledger, &d, &req, now)?;
                    println!("{name:<22} {:>8} {:<16} {state}", id.to_string(), ia(req.isdAs));
                }
            }
        }
        MarketCommand::Reclaim { chain } => {
            let (mut ledger, dep, account) = chain.open()?;
            let d = dep.deployment();
            let account = account.context("--account-key (or --run) is needed: the buyer reclaims")?;
            let mut reclaimed = 0;
            for (path, mut record) in PurchaseRecord::all_in(&chain.state_dir()?)? {
                let requests = record.resolve_requests(&*ledger, &d)?;
                for id in client::reclaim_expired(&mut *ledger, &d, &account, &requests)? {
                    reclaimed += 1;
                    let req = d.request_of(&*ledger, id)?;
                    println!(
                        "request {id} ({}): reclaimed; assets {} and {} are the buyer's again ({})",
                        ia(req.isdAs),
                        req.ingressId,
                        req.egressId,
                        path.display()
                    );
                }
            }
            let now = ledger.pending_timestamp()?;
            println!("{reclaimed} request(s) reclaimed (chain time {now})");
        }
        MarketCommand::Assets { chain } => {
            let (ledger, dep, account) = chain.open()?;
            let account = account.context("--account-key (or --run) is needed: whose assets")?;
            let now = ledger.pending_timestamp()?;
            println!(
                "{:>8} {:<16} {:>5} {:<8} {:>10} {:>10} {:>10} {:>8}",
                "asset", "ISD-AS", "if", "dir", "start", "expiry", "kbit/s", "state"
            );
            for (id, a) in client::owned_assets(&*ledger, &dep.deployment(), account.address())? {
                println!(
                    "{:>8} {:<16} {:>5} {:<8} {:>10} {:>10} {:>10} {:>8}",
                    id.to_string(),
                    ia(a.isdAs),
                    a.interfaceId,
                    if a.isIngress { "ingress" } else { "egress" },
                    a.startTime,
                    a.expiryTime,
                    a.bandwidth,
                    if a.expiryTime > now { "live" } else { "expired" }
                );
            }
        }
        MarketCommand::Sell { chain, asset, price_per_unit } => {
            let (mut ledger, dep, account) = chain.open()?;
            let account = account.context("--account-key (or --run) is needed: the asset's owner sells")?;
            let listing =
                client::list_asset(&mut *ledger, &dep.deployment(), &account, dep.marketplace, asset, price_per_unit)?;
            println!("asset {asset} listed as {listing} at {price_per_unit} wei per kbit/s × s");
        }
        MarketCommand::Delist { chain, listing } => {
            let (mut ledger, dep, account) = chain.open()?;
            let account = account.context("--account-key (or --run) is needed: the listing's seller delists")?;
            let d = dep.deployment();
            let asset = d.listing_of(&*ledger, listing)?.assetId;
            d.delist(&mut *ledger, &account, listing)?;
            println!("listing {listing} closed; asset {asset} is the seller's again");
        }
        MarketCommand::Withdraw { chain, token, dry_run } => {
            let (mut ledger, dep, account) = chain.open()?;
            let d = dep.deployment();
            let account = account.context("--account-key (the seller's account) is needed")?;
            for t in std::iter::once(Address::ZERO).chain(token) {
                let what = if t == Address::ZERO { "native".to_string() } else { format!("token {t}") };
                let due = d.proceeds_of(&*ledger, account.address(), t)?;
                if dry_run {
                    println!("{what}: {due} due to {}", account.address());
                } else {
                    let paid = d.withdraw(&mut *ledger, &account, t)?;
                    println!("{what}: {paid} withdrawn to {}", account.address());
                }
            }
        }
    }
    Ok(())
}
