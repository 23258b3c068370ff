//! `aviary lab gas`: the gas of every state-changing contract call of the market (seed 000
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
//! persistent one (the whole state written and fsynced after each block). No network and no
//! consensus: a lower bound, where the paper measures the Sui testnet (Fig. 4).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context as _, Result};
use aviary_hummingbird::crypto::MAX_RES_ID;
use aviary_hummingbird::seal::{self, BuyerKey, SealContext};
use aviary_hummingbird::{BwCodec, RedeemRequest, ReservationService, ServiceState};
use aviary_market::bindings::{AsRegistry, BandwidthAssets, Market};
use aviary_market::contracts::{self, deploy_test_token, token, PathPurchase};
use aviary_market::embedded::{Clock, CHAIN_ID, GAS_PRICE};
use aviary_market::ledger::TX_GAS_CAP;
use aviary_market::registration::{certify, p256_key_from_seed, Registration};
use aviary_market::{Account, Address, Bytes, Deployment, EmbeddedLedger, Ledger, Receipt, B256, U256};
use serde::Serialize;

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
    /// The paper's figure for the comparable operation with its unit (seed 000 Table 2: total
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

/// A figure of seed 000 Table 2: total SUI and USD as printed (two significant figures).
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

    rows.push(world.latency("latency buy-and-redeem to delivery (in memory)", reps)?);
    // The same chain as the default ledger keeps it: persisted to a data directory.
    let dir = TempDir::new()?;
    world.l.snapshot().store(&dir.0)?;
    let mut persisted = World { l: EmbeddedLedger::open_with_clock(&dir.0, clock)?, ..world };
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
        "paper (seed 000, Sui)"
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
    out += "paper: Table 2 total = computation + storage - storage rebate (SUI; USD at 1.221 USD/SUI, 2024-04-18). \
            Sui bills storage per byte and refunds 99% on deletion, the EVM bills gas per slot and refunds at most \
            1/5: compare shapes, not numbers.\n";
    out
}

/// The deployed contracts, the market's participants and the ledger.
struct World {
    l: EmbeddedLedger,
    dep: Deployment,
    owner: Account,
    buyer: Account,
    /// Registered ASes, one per path hop (hop k: ISD-AS `IA_BASE + k`).
    sellers: Vec<Seller>,
    /// The native-currency marketplace all sellers are registered in.
    mp: u64,
}

#[derive(Clone)]
struct Seller {
    account: Account,
    ia: u64,
}

impl World {
    /// Deploy, register the ASes of the longest path and open a marketplace; the rows of the
    /// calls made here are pushed to `rows` (each call once).
    fn setup(mut l: EmbeddedLedger, rows: &mut Vec<GasRow>) -> Result<Self> {
        let owner = l.accounts()[0].clone();
        let buyer = l.accounts()[1].clone();

        let (registry, gas) =
            deploy(&mut l, &owner, &AsRegistry::BYTECODE, aviary_market::registration::P256_VERIFIER)?;
        rows.push(GasRow::new("deploy AsRegistry", None, gas, None));
        let (assets, gas) = deploy(&mut l, &owner, &BandwidthAssets::BYTECODE, registry)?;
        rows.push(GasRow::new("deploy BandwidthAssets", None, gas, None));
        let (market, gas) = deploy(&mut l, &owner, &Market::BYTECODE, assets)?;
        rows.push(GasRow::new("deploy Market", None, gas, None));
        let dep = Deployment { registry, assets, market };

        let root = p256_key_from_seed(ROOT_SEED);
        let r = dep.set_isd_root(&mut l, &owner, 1, root.verifying_key())?;
        rows.push(GasRow::new("AsRegistry.setIsdRoot", None, r.gas_used, None));

        let hops = *PATH_HOPS.iter().max().expect("not empty");
        let mut sellers = vec![];
        for k in 0..u64::from(hops) {
            let account = Account::dev(10 + k as usize);
            l.fund(account.address(), U256::from(100u64) * U256::from(10u64).pow(U256::from(18)))?;
            let ia = IA_BASE + k;
            let r = register(&mut l, &dep, &account, ia)?;
            if k == 0 {
                rows.push(GasRow::new("AsRegistry.register (2 P-256 verifications)", None, r.gas_used, None));
            }
            sellers.push(Seller { account, ia });
        }

        let r = create_marketplace(&mut l, &dep, &owner, Address::ZERO)?;
        rows.push(GasRow::new("Market.createMarketplace", None, r.1.gas_used, paper("0.0028", "0.0034")));
        let mp = r.0;
        for (k, s) in sellers.iter().enumerate() {
            let r = dep.register_seller(&mut l, &s.account, mp)?;
            if k == 0 {
                rows.push(GasRow::new("Market.registerSeller", None, r.gas_used, paper("0.0024", "0.0029")));
            }
            let r = dep.set_approval_for_all(&mut l, &s.account, dep.market, true)?;
            if k == 0 {
                rows.push(GasRow::new("BandwidthAssets.setApprovalForAll", None, r.gas_used, None));
            }
        }
        Ok(Self { l, dep, owner, buyer, sellers, mp })
    }

    /// The rows of the calls not made by `setup`: registry, assets, market.
    fn single_calls(&mut self, rows: &mut Vec<GasRow>) -> Result<()> {
        let dep = self.dep;
        let (owner, buyer) = (self.owner.clone(), self.buyer.clone());
        let as0 = self.sellers[0].clone();

        // ------------------------------------------------------------ registry
        let leaving = Account::dev(2);
        register(&mut self.l, &dep, &leaving, IA_BASE + 0x100)?;
        let r = dep.deregister(&mut self.l, &leaving)?;
        rows.push(GasRow::new("AsRegistry.deregister", None, r.gas_used, None));
        let revoked = Account::dev(3);
        register(&mut self.l, &dep, &revoked, IA_BASE + 0x101)?;
        let r = dep.revoke(&mut self.l, &owner, IA_BASE + 0x101)?;
        rows.push(GasRow::new("AsRegistry.revoke", None, r.gas_used, None));
        let call = AsRegistry::transferOwnershipCall { newOwner: Account::dev(4).address() };
        let r = contracts::transact(&mut self.l, &owner, dep.registry, &call, U256::ZERO)?;
        rows.push(GasRow::new("AsRegistry.transferOwnership", None, r.gas_used, None));

        // ------------------------------------------------------------ assets
        let (s, e) = self.window()?;
        let (x, r) = self.issue(0, true, IF_INGRESS, s, e)?;
        rows.push(GasRow::new("BandwidthAssets.issue", None, r.gas_used, paper("0.0029", "0.0035")));
        let call = BandwidthAssets::splitTimeCall { id: x, time: s + 1800 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        let x_late = contracts::first_event::<BandwidthAssets::SplitTime>(&r, dep.assets)?.newId;
        rows.push(GasRow::new("BandwidthAssets.splitTime", None, r.gas_used, paper("0.0029", "0.0035")));
        let call = BandwidthAssets::splitBandwidthCall { id: x, newBandwidth: 400 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        let x_bw = contracts::first_event::<BandwidthAssets::SplitBandwidth>(&r, dep.assets)?.newId;
        rows.push(GasRow::new("BandwidthAssets.splitBandwidth", None, r.gas_used, paper("0.0029", "0.0035")));
        let r = dep.fuse_bandwidth(&mut self.l, &as0.account, x, x_bw)?;
        rows.push(GasRow::new("BandwidthAssets.fuseBandwidth", None, r.gas_used, paper("-0.0013", "-0.0016")));
        let r = dep.fuse_time(&mut self.l, &as0.account, x, x_late)?;
        rows.push(GasRow::new("BandwidthAssets.fuseTime", None, r.gas_used, paper("-0.0013", "-0.0016")));

        // Ownership: the AS hands an asset to the buyer, who approves another account for it.
        let r = dep.transfer_from(&mut self.l, &as0.account, as0.account.address(), buyer.address(), x)?;
        rows.push(GasRow::new("BandwidthAssets.transferFrom", None, r.gas_used, None));
        let r = dep.approve(&mut self.l, &buyer, Account::dev(5).address(), x)?;
        rows.push(GasRow::new("BandwidthAssets.approve", None, r.gas_used, None));

        // Redemption by a buyer who holds an ingress and an egress asset; the AS delivers a real
        // sealed reservation (80 bytes, HPKE).
        let buyer_key = BuyerKey::derive(b"aviary lab gas: redeem");
        let (i, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (o, _) = self.issue(0, false, IF_EGRESS, s, e)?;
        for id in [i, o] {
            dep.transfer_from(&mut self.l, &as0.account, as0.account.address(), buyer.address(), id)?;
        }
        let call =
            BandwidthAssets::redeemCall { ingressId: i, egressId: o, ephemeralPubKey: B256::from(buyer_key.public()) };
        let r = contracts::transact(&mut self.l, &buyer, dep.assets, &call, U256::ZERO)?;
        rows.push(GasRow::new("BandwidthAssets.redeem", None, r.gas_used, paper("0.00012", "0.00014")));
        let requests = dep.redeem_requests(&r);
        ensure!(requests.len() == 1, "redeem filed {} requests", requests.len());
        let mut service = service(as0.ia);
        let now = self.l.block_timestamp()?;
        let sealed = fulfil(&mut service, &requests[0], now)?;
        ensure!(sealed.len() == seal::SEALED_LEN, "sealed reservation of {} bytes", sealed.len());
        let r = dep.deliver_reservation(&mut self.l, &as0.account, requests[0].requestId, sealed.into())?;
        rows.push(GasRow::new(
            "BandwidthAssets.deliverReservation (80 B sealed)",
            None,
            r.gas_used,
            paper("-0.0027", "-0.0033"),
        ));
        let (i, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (o, _) = self.issue(0, false, IF_EGRESS, s, e)?;
        let call = BandwidthAssets::redeemForCall {
            ingressId: i,
            egressId: o,
            ephemeralPubKey: B256::from(buyer_key.public()),
            requester: buyer.address(),
        };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        rows.push(GasRow::new("BandwidthAssets.redeemFor", None, r.gas_used, None));

        // ------------------------------------------------------------ market
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (listing, r) = self.list(0, x, PRICE_INGRESS)?;
        rows.push(GasRow::new("Market.createListing", None, r.gas_used, paper("0.0050", "0.0061")));
        let call = Market::setPriceCall { listingId: listing, pricePerUnit: PRICE_INGRESS + 1 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.market, &call, U256::ZERO)?;
        rows.push(GasRow::new("Market.setPrice", None, r.gas_used, None));
        let r = dep.delist(&mut self.l, &as0.account, listing)?;
        rows.push(GasRow::new("Market.delist", None, r.gas_used, None));

        // The last number: new listings for remainders (the listing keeps the original asset,
        // which remains as the front part or the bandwidth remainder).
        let mid = (s + 1200, s + 2400);
        let cases = [
            ("Market.buy (whole listing)", (s, e), BW, paper("-0.0023", "-0.0028"), 0),
            ("Market.buy (split bandwidth)", (s, e), PIECE_BW, paper("0.0039", "0.0048"), 0),
            ("Market.buy (split time)", mid, BW, paper("0.010", "0.012"), 1),
            ("Market.buy (split time and bandwidth)", mid, PIECE_BW, paper("0.016", "0.020"), 2),
        ];
        for (name, (start, expiry), bw, paper, relisted) in cases {
            let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
            let (listing, _) = self.list(0, x, PRICE_INGRESS)?;
            let (price, _) = dep.quote(&self.l, listing, start, expiry, bw)?;
            let (_, r) = dep.buy(&mut self.l, &buyer, listing, start, expiry, bw, price)?;
            let listed = dep.listed(&r).len();
            ensure!(listed == relisted, "{name}: {listed} remainders re-listed, expected {relisted}");
            rows.push(GasRow::new(name, None, r.gas_used, paper));
        }

        // The worst case in an ERC-20 marketplace (the market pulls the price from the buyer).
        let tok = deploy_test_token(&mut self.l, &owner, "Bandwidth Dollar", "BWD")?;
        let (mp_tok, _) = create_marketplace(&mut self.l, &dep, &owner, tok)?;
        dep.register_seller(&mut self.l, &as0.account, mp_tok)?;
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let call = Market::createListingCall { marketplaceId: mp_tok, assetId: x, pricePerUnit: PRICE_INGRESS };
        let r = contracts::transact(&mut self.l, &as0.account, dep.market, &call, U256::ZERO)?;
        let listing = contracts::first_event::<Market::Listed>(&r, dep.market)?.listingId;
        let (price, _) = dep.quote(&self.l, listing, mid.0, mid.1, PIECE_BW)?;
        token::mint(&mut self.l, &buyer, tok, buyer.address(), price)?;
        token::approve(&mut self.l, &buyer, tok, dep.market, price)?;
        let (_, r) = dep.buy(&mut self.l, &buyer, listing, mid.0, mid.1, PIECE_BW, U256::ZERO)?;
        rows.push(GasRow::new("Market.buy (split time and bandwidth, ERC-20)", None, r.gas_used, None));
        Ok(())
    }

    /// A listed asset's interval: whole hours, an hour or more ahead of the chain.
    fn window(&self) -> Result<(u64, u64)> {
        let s = (self.l.block_timestamp()? / 3600 + 2) * 3600;
        Ok((s, s + 3600))
    }

    /// Seller `k` issues a `BW` asset over `[start, expiry)`.
    fn issue(
        &mut self,
        k: usize,
        ingress: bool,
        interface_id: u16,
        start: u64,
        expiry: u64,
    ) -> Result<(U256, Receipt)> {
        let seller = &self.sellers[k];
        let call = BandwidthAssets::issueCall {
            isdAs: seller.ia,
            interfaceId: interface_id,
            isIngress: ingress,
            bandwidth: BW,
            startTime: start,
            expiryTime: expiry,
            timeGranularity: GRAN,
            minBandwidth: MIN_BW,
        };
        let r = contracts::transact(&mut self.l, &seller.account, self.dep.assets, &call, U256::ZERO)?;
        let id = contracts::first_event::<BandwidthAssets::Issued>(&r, self.dep.assets)?.id;
        Ok((id, r))
    }

    /// Seller `k` lists `asset` in the native marketplace.
    fn list(&mut self, k: usize, asset: U256, price: u128) -> Result<(U256, Receipt)> {
        let call = Market::createListingCall { marketplaceId: self.mp, assetId: asset, pricePerUnit: price };
        let r = contracts::transact(&mut self.l, &self.sellers[k].account, self.dep.market, &call, U256::ZERO)?;
        let id = contracts::first_event::<Market::Listed>(&r, self.dep.market)?.listingId;
        Ok((id, r))
    }

    /// Fresh ingress and egress listings at each of the first `hops` sellers, and the path
    /// purchase of the worst case over them with its price.
    fn list_path(&mut self, hops: u32) -> Result<(Vec<PathPurchase>, U256)> {
        let (s, e) = self.window()?;
        let mut path = vec![];
        let mut value = U256::ZERO;
        for k in 0..hops as usize {
            let (i, _) = self.issue(k, true, IF_INGRESS, s, e)?;
            let (o, _) = self.issue(k, false, IF_EGRESS, s, e)?;
            let (li, _) = self.list(k, i, PRICE_INGRESS)?;
            let (lo, _) = self.list(k, o, PRICE_EGRESS)?;
            let hop = PathPurchase {
                ingressListingId: li,
                egressListingId: lo,
                startTime: s + 1200,
                expiryTime: s + 2400,
                bandwidth: PIECE_BW,
            };
            for listing in [li, lo] {
                value += self.dep.quote(&self.l, listing, hop.startTime, hop.expiryTime, hop.bandwidth)?.0;
            }
            path.push(hop);
        }
        Ok((path, value))
    }

    /// Buy and redeem a fresh path of `hops` hops (worst case); its gas and receipt.
    fn buy_path(&mut self, hops: u32, key: B256) -> Result<(u64, Receipt)> {
        let (path, value) = self.list_path(hops)?;
        let (requests, r) = self.dep.buy_and_redeem_path(&mut self.l, &self.buyer, path, key, value)?;
        check_path(&self.dep, hops, &requests, &r)?;
        Ok((r.gas_used, r))
    }

    /// The latency of buy-and-redeem to delivery over `LATENCY_HOPS` hops, `reps` times.
    fn latency(&mut self, call: &str, reps: usize) -> Result<GasRow> {
        let dep = self.dep;
        let sellers: Vec<Seller> = self.sellers[..LATENCY_HOPS as usize].to_vec();
        let mut services: Vec<ReservationService> = sellers.iter().map(|s| service(s.ia)).collect();
        let mut times = vec![];
        let mut gases = vec![];
        for rep in 0..reps.max(1) {
            let (path, value) = self.list_path(LATENCY_HOPS)?;
            let buyer_key = BuyerKey::derive(format!("aviary lab gas: latency {call} {rep}").as_bytes());
            let key = B256::from(buyer_key.public());

            let t = Instant::now();
            let (requests, receipt) = dep.buy_and_redeem_path(&mut self.l, &self.buyer, path, key, value)?;
            let now = self.l.block_timestamp()?;
            let mut gas = 0;
            let mut delivered = vec![];
            for ev in dep.redeem_requests(&receipt) {
                let k = sellers.iter().position(|s| s.ia == ev.isdAs).context("request for an unknown AS")?;
                let sealed = fulfil(&mut services[k], &ev, now)?;
                let r = dep.deliver_reservation(&mut self.l, &sellers[k].account, ev.requestId, sealed.into())?;
                gas += r.gas_used;
                delivered.push((ev.requestId, ev.isdAs));
            }
            for &(id, ia) in &delivered {
                let blob = dep.reservation_of(&self.l, id)?;
                seal::open(&blob, &SealContext::new(CHAIN_ID, ia, id.to_be_bytes::<32>()), &buyer_key)?;
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);

            check_path(&dep, LATENCY_HOPS, &requests, &receipt)?;
            ensure!(delivered.iter().map(|d| d.0).eq(requests.iter().copied()), "not every request was delivered");
            gases.push(gas);
        }
        times.sort_by(f64::total_cmp);
        gases.sort_unstable();
        let mut row = GasRow::new(call, Some(LATENCY_HOPS), gases[gases.len() / 2], None);
        row.paper = Some(PAPER_LATENCY.into());
        row.latency_ms = Some(percentile(&times, 0.5));
        row.latency_p5_ms = Some(percentile(&times, 0.05));
        row.latency_p95_ms = Some(percentile(&times, 0.95));
        row.repetitions = Some(times.len() as u32);
        Ok(row)
    }
}

/// The purchase filed one request per hop and re-listed two remainders per piece.
fn check_path(dep: &Deployment, hops: u32, requests: &[U256], r: &Receipt) -> Result<()> {
    let listed = dep.listed(r).len();
    if requests.len() != hops as usize || listed != 4 * hops as usize {
        bail!("{hops}-hop purchase: {} requests, {listed} remainders re-listed (not the worst case)", requests.len());
    }
    Ok(())
}

/// Deploy `bytecode` with one address argument; the address and the gas (fee / gas price).
fn deploy(l: &mut EmbeddedLedger, from: &Account, bytecode: &Bytes, arg: Address) -> Result<(Address, u64)> {
    let mut code = bytecode.to_vec();
    code.extend_from_slice(arg.into_word().as_slice()); // the ABI encoding of one address
    let before = l.balance(from.address())?;
    let address = l.deploy(from, code.into())?;
    Ok((address, gas_from_fee(before - l.balance(from.address())?)?))
}

/// The gas a transaction used from the fee its sender paid (base fee = gas price, no tip).
fn gas_from_fee(fee: U256) -> Result<u64> {
    let price = U256::from(GAS_PRICE);
    ensure!(fee % price == U256::ZERO, "fee {fee} is not a multiple of the gas price");
    Ok((fee / price).try_into()?)
}

/// The seed of ISD 1's root key.
const ROOT_SEED: &[u8] = b"aviary lab gas: ISD 1 root";

/// Register `account` as `ia` with an AS key certified by ISD 1's root.
fn register(l: &mut EmbeddedLedger, dep: &Deployment, account: &Account, ia: u64) -> Result<Receipt> {
    let root = &p256_key_from_seed(ROOT_SEED);
    let as_key = p256_key_from_seed(format!("aviary lab gas: AS {ia:#x}").as_bytes());
    let cert = certify(root, ia, as_key.verifying_key());
    let reg: Registration = dep.registration(l, ia, cert, &as_key, account.address())?;
    Ok(dep.register(l, account, &reg)?)
}

/// Create a marketplace; its id and the receipt.
fn create_marketplace(
    l: &mut EmbeddedLedger,
    dep: &Deployment,
    from: &Account,
    token: Address,
) -> Result<(u64, Receipt)> {
    let call = Market::createMarketplaceCall { paymentToken: token };
    let r = contracts::transact(l, from, dep.market, &call, U256::ZERO)?;
    let id = contracts::first_event::<Market::MarketplaceCreated>(&r, dep.market)?.marketplaceId;
    Ok((id, r))
}

/// The reservation service of AS `ia` (fresh state, the whole ResID range).
fn service(ia: u64) -> ReservationService {
    let secret = format!("aviary lab gas: master secret {ia:#x}");
    ReservationService::new(ia, CHAIN_ID, secret.as_bytes(), BwCodec::Paper, ServiceState::new(MAX_RES_ID))
}

/// The AS side of a redeem request as the ledger reported it: the sealed reservation.
fn fulfil(service: &mut ReservationService, ev: &BandwidthAssets::RedeemRequested, now: u64) -> Result<Vec<u8>> {
    let req = RedeemRequest {
        request_id: ev.requestId.to_be_bytes::<32>(),
        ingress: ev.ingressInterface,
        egress: ev.egressInterface,
        bandwidth_kbps: ev.bandwidth,
        start: ev.startTime,
        expiry: ev.expiryTime,
        buyer_key: ev.ephemeralPubKey.0,
    };
    // The HPKE ephemeral key's randomness: derived from the request here so that the sealed
    // blobs (and the calldata gas) repeat from run to run; the AS service draws it from the OS.
    let mut ikm = req.request_id;
    ikm[0] ^= 0xa5;
    Ok(service.fulfil(&req, now, &ikm)?.sealed)
}

/// The `q` quantile of sorted samples (linear interpolation).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A data directory for the persisted ledger, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("aviary-lab-gas-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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
        assert!(rows.iter().all(|r| r.gas > 0), "a row without gas: {rows:#?}");
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
        let latency: Vec<_> = rows.iter().filter(|r| r.latency_ms.is_some()).collect();
        assert_eq!(latency.len(), 2);
        assert!(latency.iter().all(|r| r.hops == Some(LATENCY_HOPS) && r.repetitions == Some(3)));
    }

    #[test]
    fn every_state_changing_function_has_a_row() {
        let rows = rows();
        for (contract, artifact) in aviary_market::bindings::ARTIFACTS {
            if contract == "TestToken" {
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
