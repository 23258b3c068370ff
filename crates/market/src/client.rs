//! The buyer's side of the market (the Hummingbird paper, §4.1, §4.2): find the listings that cover the hops
//! of a path, plan the cheapest purchase the buyer can pay in one payment token ([`plan`]), buy
//! and redeem every hop
//! in one transaction (re-planning without a listing that made it revert), wait for the ASes to
//! deliver by the requests' deadline, open the sealed reservations, and take back the assets
//! of requests an AS left undelivered ([`delivery`]); and resell what was bought ([`resale`]).
//!
//! A hop is one AS with its ingress and egress interface in the direction of travel; it needs
//! an ingress asset of the first and an egress asset of the second, each covering the wanted
//! interval and bandwidth. The source and destination ASes have no interface on one side
//! (0, the AS's inside), so only ASes with two interfaces on the path can be bought.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use aviary_hummingbird::BuyerKey;

use crate::contracts::{token, Asset, Deployment, IndexedSide, Listing};
use crate::{Account, Ledger, LedgerError, Revert};

pub mod available;
pub mod delivery;
pub mod plan;
pub mod view;
pub mod window;
pub use available::{Available, OpenPiece};
pub mod resale;
pub use delivery::{
    await_deliveries, await_outcomes, current_state, find_requests, reclaim_expired, request_state, Outcome,
    RequestState,
};
pub use plan::{plan_affordable, plan_cheapest, Piece, Plan, PlannedHop, Window};
pub use resale::{list_asset, owned_assets};
pub use view::{TokenBook, TokenInfo};
pub use window::{check_window, next_grid_point, window, MAX_RESERVATION_S};

/// The delivery window a purchase gives the ASes unless told otherwise (s).
pub const DEFAULT_DELIVERY_WINDOW_S: u32 = 600;

/// How the ASes are to deliver a purchase: sealed to `key`, within `window_s` seconds of the
/// purchase (the requests' deadline; after it the buyer may reclaim the assets).
#[derive(Clone, Copy)]
pub struct DeliveryTerms<'a> {
    pub key: &'a BuyerKey,
    pub window_s: u32,
}

/// One AS of a path to reserve, interfaces in the direction of travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopWant {
    pub isd_as: u64,
    pub ingress: u16,
    pub egress: u16,
}

/// An open listing and the asset it offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pub listing_id: U256,
    pub listing: Listing,
    pub asset: Asset,
    pub payment_token: Address,
    /// Whether an account is registered for the asset's ISD-AS: without one, nobody would
    /// deliver the reservation (and the market refuses to sell it), so the planner skips the offer.
    pub issuer_registered: bool,
    /// Whether the seller is not the issuing AS's account: a buyer reselling what it bought.
    /// The planner treats it like any offer (the issuer delivers either way).
    pub resale: bool,
}

impl Offer {
    /// Price of `[start, expiry) × bw` at the posted price (per kbit/s × s).
    pub fn price(&self, start: u64, expiry: u64, bw: u64) -> U256 {
        U256::from(self.listing.pricePerUnit) * U256::from(bw) * U256::from(expiry.saturating_sub(start))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "hop {hop} ({isd_as}): nothing covers {} from {} at {} on interface {interface} ({dir}); {available}",
        view::format_duration(.window.expiry.saturating_sub(.window.start)),
        view::format_utc(.window.start),
        view::format_bandwidth(.window.bandwidth)
    )]
    NoOffer { hop: usize, isd_as: String, interface: u16, dir: &'static str, window: Window, available: Available },
    #[error("hop {hop} ({isd_as}) has no interface on one side: only transit ASes can be bought")]
    NotTransit { hop: usize, isd_as: String },
    #[error("the requested interval [{0}, {1}) is empty")]
    EmptyInterval(u64, u64),
    #[error(
        "{} ({time}) is not on the time grid of {}: the assets split only at its points",
        view::format_utc(*.time),
        view::format_duration(*.granularity)
    )]
    OffGrid { time: u64, granularity: u64 },
    #[error(
        "the window starts at {}, before the chain's time {}: the next grid point is {} ({next})",
        view::format_utc(*.start),
        view::format_utc(*.now),
        view::format_utc(*.next)
    )]
    WindowInPast { start: u64, now: u64, next: u64 },
    #[error(
        "the window is {duration} s long, longer than a reservation can be ({} s, ResDuration is 16 bits): \
         buy shorter windows one after another",
        window::MAX_RESERVATION_S
    )]
    TooLong { duration: u64 },
    #[error("{start} + {duration} s is past the largest time a uint64 holds")]
    TimeOverflow { start: u64, duration: u64 },
    #[error("the price in {} is more than 2^256 - 1 of its smallest unit", token_text(.token))]
    PriceOverflow { token: Address },
    #[error("the cheapest plan needs {needed} of token {token}, the buyer has {available}")]
    Unaffordable { token: Address, needed: U256, available: U256 },
    #[error("the purchase reverted {attempts} times, re-planned each time; last: {last}")]
    GaveUp { attempts: usize, last: Revert },
    #[error("request {0}: no delivery within {1:?}")]
    Timeout(U256, Duration),
    #[error("request {0}: the sealed reservation does not open: {1}")]
    Open(U256, aviary_hummingbird::SealError),
    #[error("request {0}: not delivered, now {1}")]
    Undelivered(U256, RequestState),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

fn ia_text(isd_as: u64) -> String {
    aviary_scion::IsdAsn::from_u64(isd_as).to_string()
}

fn token_text(token: &Address) -> String {
    if *token == Address::ZERO {
        "the native currency".into()
    } else {
        format!("token {token}")
    }
}

/// Listings per `openListings` call: a page's reads (about 13 000 gas per listing) stay well
/// under the gas of one call.
pub const OFFER_PAGE: u64 = 500;

/// Every open listing of the market whose asset has not expired (the market refuses to sell
/// an expired one): the market's index, side by side ([`open_offers_on`]).
pub fn open_offers<L: Ledger + ?Sized>(l: &L, d: &Deployment) -> Result<Vec<Offer>, LedgerError> {
    open_offers_on(l, d, &d.listed_sides(l)?)
}

/// The sides a path's hops buy: each hop's ingress interface (ingress) and egress interface
/// (egress).
pub fn sides_of(wants: &[HopWant]) -> Vec<IndexedSide> {
    let mut sides: Vec<IndexedSide> = wants
        .iter()
        .flat_map(|w| {
            [
                IndexedSide { isd_as: w.isd_as, interface: w.ingress, is_ingress: true },
                IndexedSide { isd_as: w.isd_as, interface: w.egress, is_ingress: false },
            ]
        })
        .collect();
    sides.sort();
    sides.dedup();
    sides
}

/// The open, unexpired listings of `sides`, read from the market's index of open listings a
/// page at a time: O(open listings of these sides), whatever the market's history. Pages are
/// separate reads, so a listing that closes meanwhile can move and be missed (or seen twice:
/// duplicates are dropped) by this read; a purchase re-reads after a revert.
pub fn open_offers_on<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    sides: &[IndexedSide],
) -> Result<Vec<Offer>, LedgerError> {
    let now = l.pending_timestamp()?;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut issuers = BTreeMap::new();
    for side in sides {
        let count = d.open_listing_count(l, *side)?;
        let mut offset = 0;
        while offset < count {
            for open in d.open_listings(l, *side, offset, OFFER_PAGE)? {
                if open.asset.expiryTime <= now || !seen.insert(open.listingId) {
                    continue;
                }
                let isd_as = open.asset.isdAs;
                let issuer = match issuers.get(&isd_as) {
                    Some(a) => *a,
                    None => *issuers.entry(isd_as).or_insert(d.account_of(l, isd_as)?),
                };
                let resale = open.listing.seller != issuer;
                out.push(Offer {
                    listing_id: open.listingId,
                    listing: open.listing,
                    asset: open.asset.into(),
                    payment_token: open.paymentToken,
                    issuer_registered: issuer != Address::ZERO,
                    resale,
                });
            }
            offset += OFFER_PAGE;
        }
    }
    out.sort_by_key(|o| o.listing_id);
    Ok(out)
}

/// What `buyer` holds of the payment `token` (zero: the native currency). Only the token the
/// buyer pays in is asked: a listing names its marketplace's token, which anyone may create,
/// so another offer's "token" may be any contract, and calling it could fail or mislead.
pub fn funds_of<L: Ledger + ?Sized>(l: &L, buyer: Address, payment: Address) -> Result<U256, LedgerError> {
    if payment == Address::ZERO {
        l.balance(buyer)
    } else {
        token::balance_of(l, payment, buyer)
    }
}

/// The symbol and decimals of each of `tokens` (zero: the native currency, ETH with 18
/// decimals), for showing amounts. A token that does not answer `symbol()` and `decimals()` as
/// ERC-20 says is shown in its smallest units, named by its address.
pub fn token_infos<L: Ledger + ?Sized>(
    l: &L,
    tokens: impl IntoIterator<Item = Address>,
) -> Result<TokenBook, LedgerError> {
    let mut book = TokenBook::new();
    for t in tokens {
        let info = if t == Address::ZERO {
            TokenInfo::native()
        } else {
            match (token::symbol(l, t), token::decimals(l, t)) {
                (Ok(symbol), Ok(decimals)) => TokenInfo { symbol, decimals },
                (Err(e), _) | (_, Err(e)) if !matches!(e, LedgerError::Revert(_) | LedgerError::Decode(_)) => {
                    return Err(e)
                }
                _ => TokenInfo::unknown(t),
            }
        };
        book.insert(t, info);
    }
    Ok(book)
}

/// Buys and redeems every hop of `plan` in one transaction, the reservations to be sealed and
/// delivered as `terms` say; returns the redeem request ids in hop order. Either every hop is
/// bought or none, at no more than the plan's total in its token and nothing in any other. A
/// plan in an ERC-20 token is paid from the buyer's allowance: the market is approved for the
/// total first (an approval stays if the purchase then fails).
pub fn buy_path<L: Ledger + ?Sized>(
    l: &mut L,
    d: &Deployment,
    buyer: &Account,
    plan: &Plan,
    terms: DeliveryTerms,
) -> Result<Vec<U256>, ClientError> {
    let value = if plan.token == Address::ZERO {
        plan.total
    } else {
        token::approve(l, buyer, plan.token, d.market, plan.total)?;
        U256::ZERO
    };
    let key = B256::from(terms.key.public());
    let (ids, _) = d.buy_and_redeem_path(l, buyer, plan.purchases(), key, terms.window_s, plan.limits(), value)?;
    Ok(ids)
}

/// Where [`buy_cheapest`] starts.
#[derive(Clone, Debug)]
pub enum StartFrom {
    /// A plan already made (one shown to the user): paid, and re-planned, in its token.
    Plan(Plan),
    /// A fresh plan in this payment token (zero: the native currency).
    Fresh { token: Address },
}

/// How often [`buy_cheapest`] re-plans after a reverted purchase before it gives up.
pub const PURCHASE_ATTEMPTS: usize = 4;

/// Plans the cheapest affordable purchase of `w` on every hop from the open offers in one
/// payment token (`start`'s), buys it ([`buy_path`]), and when the purchase reverts, re-reads
/// the offers and re-plans in the same token: without the listing the revert names (sold out,
/// delisted, not coverable), or just from fresh offers (a price changed meanwhile). A failed
/// payment in the plan's token, or a plan that fails again unchanged, is not retried.
///
/// Which listing a revert names is taken at its word: in the native currency no contract but
/// the market and the asset contract runs during a purchase, so only they can name one. In an
/// ERC-20 token the token runs too, and could name an honest listing; it is the token the
/// buyer chose to pay with (and which holds its balance), so that is trusted as far.
pub fn buy_cheapest<L: Ledger + ?Sized>(
    l: &mut L,
    d: &Deployment,
    buyer: &Account,
    wants: &[HopWant],
    w: Window,
    start: StartFrom,
    terms: DeliveryTerms,
) -> Result<(Plan, Vec<U256>), ClientError> {
    let mut without_listings = BTreeSet::new();
    let (payment, mut next) = match start {
        StartFrom::Plan(plan) => (plan.token, Some(plan)),
        StartFrom::Fresh { token } => (token, None),
    };
    let mut last_failed: Option<Vec<crate::contracts::PathPurchase>> = None;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let plan = match next.take() {
            Some(plan) => plan,
            None => {
                let offers: Vec<Offer> = open_offers_on(l, d, &sides_of(wants))?
                    .into_iter()
                    .filter(|o| !without_listings.contains(&o.listing_id))
                    .collect();
                let funds = funds_of(l, buyer.address(), payment)?;
                plan_affordable(&offers, wants, w, payment, funds)?
            }
        };
        let rv = match buy_path(l, d, buyer, &plan, terms) {
            Ok(ids) => return Ok((plan, ids)),
            Err(ClientError::Ledger(LedgerError::Revert(rv))) => rv,
            Err(e) => return Err(e),
        };
        let purchases = plan.purchases();
        let named_listing = rv.arg("listingId").and_then(|v| U256::from_str(v).ok());
        let repeated = last_failed.as_ref() == Some(&purchases);
        // A raised price is no fault of the listing: plan again at the new prices.
        let repriced = matches!(rv.name.as_str(), "PriceAboveLimit" | "PaymentTooLow");
        // Any other error naming a token is a payment in the plan's token that failed (no
        // other token is paid): another plan in it would fail the same way.
        let payment_failed = !repriced && rv.arg("token").is_some();
        if attempt == PURCHASE_ATTEMPTS || payment_failed || (repeated && named_listing.is_none()) {
            return Err(ClientError::GaveUp { attempts: attempt, last: rv });
        }
        if let Some(id) = named_listing.filter(|id| plan.listing_ids().contains(id)) {
            without_listings.insert(id);
        }
        last_failed = Some(purchases);
    }
}
