//! `aviary lab gas`: the gas of every state-changing contract call of the market (the Hummingbird paper
//! §4.2, §6, Appendix B.1) and of an atomic buy-and-redeem for 1, 2, 4, 8 and 16 hops with the
//! worst-case split, beside the paper's Table 2 (Sui), and the latency of buy-and-redeem to
//! delivery on the embedded ledger.
//!
//! Every gas figure is the `gas_used` of a real receipt: the contracts' committed bytecode
//! executed by revm (Osaka rules, [`EmbeddedLedger`]). Deployments return only an address, so
//! their gas is the deployer's fee divided by the ledger's gas price (exact: base fee = gas
//! price, no tip). The chain runs on a fixed injected clock, so the gas of every row is the same
//! from run to run.
//!
//! **Worst case.** Each piece of a path purchase is a sub-rectangle in the middle of its
//! listing: two splits in time and one in bandwidth, two remainders re-listed (the listing keeps
//! the front part), as in the paper's benchmark. A path of N hops buys 2N pieces from N ASes and
//! files N redeem requests in one transaction.
//!
//! **Units differ.** Sui charges computation in coarse buckets and storage per byte, and
//! refunds 99 % of the storage of deleted objects; the EVM charges gas per opcode and storage
//! slot, and refunds at most a fifth of a transaction's gas. The paper's figures (total SUI =
//! computation + storage − rebate, and USD) are printed beside ours for the shape (which calls
//! cost most, how a path scales), not for a conversion. Our cost is gas × a stated gas price
//! ([`GAS_PRICE_GWEI`]).
//!
//! **Latency.** From submitting `buyAndRedeemPath` for [`LATENCY_HOPS`] hops until the buyer
//! has read all sealed reservations back from the chain and opened them: in between, for each
//! redeem request in the receipt, the AS side (in this process) runs
//! [`ReservationService::fulfil`] (ResID by First Fit, A_K, HPKE seal) and sends
//! `deliverReservation`. Measured once on the in-memory ledger and once on the default,
//! persistent one (each block's changes appended to the ledger's log and fsynced). No network and no
//! consensus: a lower bound, where the paper measures the Sui testnet (Fig. 4).
//!
//! **Scale** ([`scale`]): the latency of `offers` (the client reading a hop's open listings
//! from the market's index) and of a purchase (offers, plan, `buyAndRedeemPath`) with
//! [`scale::OPEN_LISTINGS`] open listings on the hop's interfaces, beside reading the offers by
//! scanning every listing ever created (how the client read them before the index).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context as _, Result};
use aviary_hummingbird::path::MAX_RES_ID;
use aviary_hummingbird::seal::{self, BuyerKey, SealContext};
use aviary_hummingbird::{BwCodec, RedeemRequest, ResIdAllocator, ReservationService, ServiceState};
use aviary_market::bindings::{AsRegistry, BandwidthAssets, Market};
use aviary_market::client::DEFAULT_DELIVERY_WINDOW_S;
use aviary_market::contracts::{self, deploy_test_token, token, AssetSpec, PathPurchase, PriceLimit};
use aviary_market::embedded::{Clock, CHAIN_ID, GAS_PRICE};
use aviary_market::ledger::TX_GAS_CAP;
use aviary_market::registration::{certify, p256_key_from_seed, Registration};
use aviary_market::{Account, Address, Bytes, Deployment, EmbeddedLedger, Ledger, Receipt, B256, U256};
use serde::Serialize;

mod scale;
mod world;
#[cfg(test)]
use world::{gas_from_fee, percentile};
use world::{TempDir, World};

/// The gas price our costs are stated at, gwei (the embedded ledger itself charges 1 gwei).
pub const GAS_PRICE_GWEI: u64 = 10;
/// Path lengths of the atomic buy-and-redeem rows.
pub const PATH_HOPS: [u32; 5] = [1, 2, 4, 8, 16];
/// Path length of the latency rows.
pub const LATENCY_HOPS: u32 = 4;
/// Latency repetitions per ledger (the paper: 100 per path length).
pub const LATENCY_REPS: usize = 100;
/// Latency repetitions per ledger with `quick`.
pub const LATENCY_REPS_QUICK: usize = 3;

/// The chain's clock (Unix s): fixed, so that every run executes the same transactions with
/// the same arguments; blocks still advance one second each.
const T0: u64 = 1_800_000_000;
/// ISD-AS of path hop k: 1-ff00:0:100 + k.
const IA_BASE: u64 = (1 << 48) | 0xff00_0000_0100;
/// Time grid of the issued assets, s.
const GRAN: u32 = 60;
/// Smallest bandwidth a split may leave, kbit/s.
const MIN_BW: u32 = 10;
/// Bandwidth of every issued asset, kbit/s.
const BW: u64 = 1000;
/// Bandwidth of a bought piece in the worst case, kbit/s.
const PIECE_BW: u64 = 200;
/// Posted prices of ingress and egress listings, wei per kbit/s × s.
const PRICE_INGRESS: u128 = 1;
const PRICE_EGRESS: u128 = 2;
/// Interfaces of the issued assets.
const IF_INGRESS: u16 = 1;
const IF_EGRESS: u16 = 2;

/// One row of the report: a contract call (or a path purchase, or the latency of one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GasRow {
    /// `Contract.function` and the case, e.g. `Market.buy (split time and bandwidth)`;
    /// `deploy Contract`; `latency ...` for the latency rows.
    pub call: String,
    /// Path length for path purchases and latency rows; null for single calls.
    pub hops: Option<u32>,
    /// Gas used (receipts of revm execution). Latency rows: the deliveries' total.
    pub gas: u64,
    /// The gas price of `cost_eth`, gwei.
    pub gas_price_gwei: u64,
    /// gas × gas_price_gwei, ETH.
    pub cost_eth: f64,
    /// The paper's figure for the comparable operation with its unit (the Hummingbird paper's Table 2: total
    /// SUI and USD; Fig. 4 for latency); null where it has none.
    pub paper: Option<String>,
    /// The paper's total in SUI (computation + storage − storage rebate), where it has one.
    pub paper_sui: Option<f64>,
    /// Latency rows: median wall time, ms.
    pub latency_ms: Option<f64>,
    /// Latency rows: 5th percentile, ms (the paper's lower whisker).
    pub latency_p5_ms: Option<f64>,
    /// Latency rows: 95th percentile, ms (the paper's upper whisker).
    pub latency_p95_ms: Option<f64>,
    /// Latency rows: number of measured runs.
    pub repetitions: Option<u32>,
}

impl GasRow {
    fn new(call: impl Into<String>, hops: Option<u32>, gas: u64, paper: Option<Paper>) -> Self {
        Self {
            call: call.into(),
            hops,
            gas,
            gas_price_gwei: GAS_PRICE_GWEI,
            // One division of the exact integer in gwei: the nearest f64 to the decimal value.
            cost_eth: (u128::from(gas) * u128::from(GAS_PRICE_GWEI)) as f64 / 1e9,
            paper: paper.as_ref().map(Paper::text),
            paper_sui: paper.and_then(|p| p.sui.parse().ok()),
            latency_ms: None,
            latency_p5_ms: None,
            latency_p95_ms: None,
            repetitions: None,
        }
    }
}

/// A figure of the Hummingbird paper's Table 2: total SUI and USD as printed (two significant figures).
struct Paper {
    sui: &'static str,
    usd: &'static str,
}

impl Paper {
    fn text(&self) -> String {
        match self.usd.strip_prefix('-') {
            Some(usd) => format!("{} SUI (-${usd})", self.sui),
            None => format!("{} SUI (${})", self.sui, self.usd),
        }
    }
}

const fn paper(sui: &'static str, usd: &'static str) -> Option<Paper> {
    Some(Paper { sui, usd })
}

/// Table 2's buy-and-redeem rows, by hops.
fn paper_path(hops: u32) -> Option<Paper> {
    match hops {
        1 => paper("0.031", "0.038"),
        2 => paper("0.062", "0.076"),
        4 => paper("0.12", "0.15"),
        8 => paper("0.25", "0.30"),
        16 => paper("0.49", "0.60"),
        _ => None,
    }
}

/// The paper's end-to-end latency (Fig. 4).
const PAPER_LATENCY: &str = "Sui testnet: < 3 s in 83% of runs (Fig. 4)";

/// Measures every row (see the module docs). `quick`: fewer latency repetitions.
pub fn run(quick: bool) -> Result<Vec<GasRow>> {
    let reps = if quick { LATENCY_REPS_QUICK } else { LATENCY_REPS };
    let clock: Clock = Arc::new(|| T0);
    let mut rows = vec![];
    let mut world = World::setup(EmbeddedLedger::in_memory_with_clock(clock.clone()), &mut rows)?;
    world.single_calls(&mut rows)?;
    for hops in PATH_HOPS {
        let (gas, _) = world.buy_path(hops, B256::repeat_byte(0x42))?;
        rows.push(GasRow::new("Market.buyAndRedeemPath", Some(hops), gas, paper_path(hops)));
    }
    let gas = world.buy_hop_across_periods(B256::repeat_byte(0x43))?;
    rows.push(GasRow::new("Market.buyAndRedeemPath (1 hop, each side from 2 listings)", Some(1), gas, None));

    rows.push(world.latency("latency buy-and-redeem to delivery (in memory)", reps)?);
    scale::rows(&world, quick, &mut rows)?;
    // The same chain as the default ledger keeps it: persisted to a data directory.
    let dir = TempDir::new()?;
    world.l.snapshot().store(&dir.0)?;
    let mut persisted = world.on(EmbeddedLedger::open_with_clock(&dir.0, clock)?);
    rows.push(persisted.latency("latency buy-and-redeem to delivery (persisted)", reps)?);
    // Rows in the order of the table: deployments, registry, assets, market, paths, latency.
    rows.sort_by_key(|r| section(&r.call));
    Ok(rows)
}

/// The rank of a row's section in the table.
fn section(call: &str) -> u8 {
    if call.starts_with("deploy ") {
        0
    } else if call.starts_with("AsRegistry.") {
        1
    } else if call.starts_with("BandwidthAssets.") {
        2
    } else if call.starts_with("Market.buyAndRedeemPath") {
        4
    } else if call.starts_with("Market.") {
        3
    } else {
        5
    }
}

/// The table for a person.
pub fn table(rows: &[GasRow]) -> String {
    let mut out = format!(
        "{:<50} {:>4} {:>10} {:>13} {:>22}  {}\n",
        "call",
        "hops",
        "gas",
        format!("ETH@{GAS_PRICE_GWEI}gwei"),
        "latency ms [p5, p95]",
        "paper (the Hummingbird paper, Sui)"
    );
    for r in rows {
        let hops = r.hops.map_or("-".into(), |h| h.to_string());
        let latency = match (r.latency_ms, r.latency_p5_ms, r.latency_p95_ms) {
            (Some(m), Some(lo), Some(hi)) => format!("{m:.2} [{lo:.2}, {hi:.2}]"),
            (Some(m), _, _) => format!("{m:.2}"),
            _ => "-".into(),
        };
        out += &format!(
            "{:<50} {:>4} {:>10} {:>13.6} {:>22}  {}\n",
            r.call,
            hops,
            r.gas,
            r.cost_eth,
            latency,
            r.paper.as_deref().unwrap_or("-")
        );
    }
    out += &format!(
        "gas: receipts of revm executing the contracts (Osaka, embedded ledger); deploy gas = the deployer's fee / \
         {} gwei.\n",
        GAS_PRICE / 1_000_000_000
    );
    out += &format!("ETH: gas x {GAS_PRICE_GWEI} gwei, a stated price for comparison.\n");
    out += "worst case: each piece bought from the middle of its listing (2 time splits, 1 bandwidth split, 2 \
            remainders re-listed); N hops = 2N pieces from N ASes + N redeem requests in one transaction.\n";
    let paths: Vec<&GasRow> = rows.iter().filter(|r| r.call == "Market.buyAndRedeemPath").collect();
    if let (Some(first), Some(last)) = (paths.first(), paths.last()) {
        let (h0, h1) = (first.hops.unwrap_or(0), last.hops.unwrap_or(0));
        if h1 > h0 && last.gas > first.gas {
            let per_hop = (last.gas - first.gas) / u64::from(h1 - h0);
            out += &format!(
                "path: ~{per_hop} gas per extra hop; {h1} hops use {:.0}% of the {TX_GAS_CAP} gas cap of one \
                 transaction (Osaka); extrapolated, about {} hops fit in one.\n",
                100.0 * last.gas as f64 / TX_GAS_CAP as f64,
                u64::from(h1) + (TX_GAS_CAP - last.gas.min(TX_GAS_CAP)) / per_hop.max(1)
            );
        }
    }
    out += &format!(
        "latency: median [p5, p95] from submitting buyAndRedeemPath ({LATENCY_HOPS} hops) until the buyer has read and \
         opened all {LATENCY_HOPS} sealed reservations; the ASes fulfil (ResID, A_K, HPKE) and deliver in this \
         process; gas = the {LATENCY_HOPS} deliveries. One block per transaction, no network, no consensus.\n"
    );
    out += "scale: offers = the client reading one hop's open listings (index: the market's per-interface index, \
            pages of 500; scan of all: every listing ever created, as before the index), no gas (reads); purchase = \
            offers + plan + buyAndRedeemPath of one hop, gas of the purchase.\n";
    out += &format!("latency measured on {}.\n", build_profile());
    out += "paper: Table 2 total = computation + storage - storage rebate (SUI; USD at 1.221 USD/SUI, 2024-04-18). \
            Sui bills storage per byte and refunds 99% on deletion, the EVM bills gas per slot and refunds at most \
            1/5: compare shapes, not numbers.\n";
    out
}

/// Which build measured the latency rows. A debug build runs the HPKE and X25519 code and
/// revm unoptimised (up to a hundred times slower than a release build): its figures are not
/// comparable with a release build's.
fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "a debug build (X25519, HPKE and the EVM unoptimised, up to 100x slower than release; compare release builds only)"
    } else {
        "a release build"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    /// `run(true)` once for all tests.
    fn rows() -> &'static [GasRow] {
        static ROWS: OnceLock<Vec<GasRow>> = OnceLock::new();
        ROWS.get_or_init(|| run(true).expect("run(true)"))
    }

    #[test]
    fn quick_run_has_every_row_with_gas() {
        let rows = rows();
        // Reads (the offers rows) cost no gas.
        assert!(rows.iter().all(|r| r.gas > 0 || r.call.starts_with("latency offers")), "a row without gas: {rows:#?}");
        let scale: Vec<_> = rows.iter().filter(|r| r.call.contains("open listings")).collect();
        assert_eq!(scale.len(), 3 * scale::OPEN_LISTINGS_QUICK.len());
        let text = table(rows);
        for r in rows {
            assert!(text.contains(&r.call), "{} missing from the table", r.call);
        }
        // One JSON object per row with call, hops and gas.
        for r in rows {
            let v = serde_json::to_value(r).unwrap();
            assert!(v["call"].is_string() && v["gas"].is_u64());
            assert_eq!(v["hops"].is_null(), r.hops.is_none());
        }
        let latency: Vec<_> =
            rows.iter().filter(|r| r.latency_ms.is_some() && r.call.starts_with("latency buy-and-redeem")).collect();
        assert_eq!(latency.len(), 2);
        assert!(latency.iter().all(|r| r.hops == Some(LATENCY_HOPS) && r.repetitions == Some(3)));
    }

    #[test]
    fn every_state_changing_function_has_a_row() {
        let rows = rows();
        for (contract, artifact) in aviary_market::bindings::ARTIFACTS {
            if contract == "TestToken" || contract == "RefusingSeller" {
                continue;
            }
            assert!(rows.iter().any(|r| r.call == format!("deploy {contract}")), "deploy {contract}");
            let artifact: serde_json::Value = serde_json::from_str(artifact).unwrap();
            for f in artifact["abi"].as_array().unwrap() {
                let mutability = f["stateMutability"].as_str().unwrap_or("");
                if f["type"] != "function" || !["nonpayable", "payable"].contains(&mutability) {
                    continue;
                }
                let name = format!("{contract}.{}", f["name"].as_str().unwrap());
                assert!(
                    rows.iter().any(|r| r.call == name || r.call.starts_with(&format!("{name} "))),
                    "no row for {name}"
                );
            }
        }
    }

    #[test]
    fn path_gas_grows_with_hops_and_16_hops_fit_one_transaction() {
        let paths: Vec<&GasRow> = rows().iter().filter(|r| r.call == "Market.buyAndRedeemPath").collect();
        assert_eq!(paths.iter().map(|r| r.hops.unwrap()).collect::<Vec<_>>(), PATH_HOPS);
        for w in paths.windows(2) {
            assert!(
                w[1].gas > w[0].gas,
                "{} hops: {} gas, {} hops: {} gas",
                w[0].hops.unwrap(),
                w[0].gas,
                w[1].hops.unwrap(),
                w[1].gas
            );
        }
        let longest = paths.last().unwrap();
        assert_eq!(longest.hops, Some(16));
        assert!(longest.gas < TX_GAS_CAP, "16 hops: {} gas over the cap {TX_GAS_CAP}", longest.gas);
    }

    #[test]
    fn deploy_gas_from_fees_matches_receipts() {
        // Deploy gas from the fee agrees with receipts: a call's fee / price is its gas_used.
        let mut l = EmbeddedLedger::in_memory_with_clock(Arc::new(|| T0));
        let owner = l.accounts()[0].clone();
        let before = l.balance(owner.address()).unwrap();
        let dep = Deployment::deploy_all(&mut l, &owner).unwrap();
        let all = gas_from_fee(before - l.balance(owner.address()).unwrap()).unwrap();
        let deploys: u64 = rows().iter().filter(|r| r.call.starts_with("deploy ")).map(|r| r.gas).sum();
        assert_eq!(all, deploys, "our deployments cost what deploy_all does");
        let before = l.balance(owner.address()).unwrap();
        let root = p256_key_from_seed(b"root");
        let r = dep.set_isd_root(&mut l, &owner, 1, root.verifying_key()).unwrap();
        assert_eq!(gas_from_fee(before - l.balance(owner.address()).unwrap()).unwrap(), r.gas_used);
    }

    #[test]
    fn percentiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 1.0), 5.0);
        assert!((percentile(&v, 0.95) - 4.8).abs() < 1e-9);
    }
}
