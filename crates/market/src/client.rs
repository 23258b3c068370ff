//! The buyer's side of the market (the Hummingbird paper, §4.1, §4.2): find the listings that cover the hops
//! of a path, plan the cheapest purchase, buy and redeem every hop in one transaction, wait for
//! the ASes to deliver, and open the sealed reservations.
//!
//! A hop is one AS with its ingress and egress interface in the direction of travel; it needs
//! an ingress asset of the first and an egress asset of the second, each covering the wanted
//! interval and bandwidth. The source and destination ASes have no interface on one side
//! (0, the AS's inside), so only ASes with two interfaces on the path can be bought.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use aviary_hummingbird::{BuyerKey, Reservation, SealContext};

use crate::contracts::{Asset, Deployment, Listing, PathPurchase};
use crate::{Account, Ledger, LedgerError};

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
}

impl Offer {
    /// Whether this offer can supply `[start, expiry) × bandwidth` on `interface` in the given
    /// direction of `isd_as`.
    pub fn covers(&self, isd_as: u64, interface: u16, is_ingress: bool, start: u64, expiry: u64, bw: u64) -> bool {
        let a = &self.asset;
        a.isdAs == isd_as
            && a.interfaceId == interface
            && a.isIngress == is_ingress
            && a.startTime <= start
            && expiry <= a.expiryTime
            && bw <= a.bandwidth
    }

    /// Price of `[start, expiry) × bw` at the posted price (per kbit/s × s).
    pub fn price(&self, start: u64, expiry: u64, bw: u64) -> U256 {
        U256::from(self.listing.pricePerUnit) * U256::from(bw) * U256::from(expiry.saturating_sub(start))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("hop {hop} ({isd_as}): no listing offers interface {interface} ({dir}) for the interval and bandwidth")]
    NoOffer { hop: usize, isd_as: String, interface: u16, dir: &'static str },
    #[error("hop {hop} ({isd_as}) has no interface on one side: only transit ASes can be bought")]
    NotTransit { hop: usize, isd_as: String },
    #[error("the requested interval [{0}, {1}) is empty")]
    EmptyInterval(u64, u64),
    #[error("request {0}: no delivery within {1:?}")]
    Timeout(U256, Duration),
    #[error("request {0}: the sealed reservation does not open: {1}")]
    Open(U256, aviary_hummingbird::SealError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

fn ia_text(isd_as: u64) -> String {
    aviary_scion::IsdAsn::from_u64(isd_as).to_string()
}

/// Every open listing of the market (listing ids are dense from 1).
pub fn open_offers<L: Ledger + ?Sized>(l: &L, d: &Deployment) -> Result<Vec<Offer>, LedgerError> {
    let next = d.next_listing_id(l)?;
    let mut out = Vec::new();
    let mut id = U256::from(1);
    while id < next {
        let listing = d.listing_of(l, id)?;
        if listing.seller != Address::ZERO {
            let asset = d.asset_of(l, U256::from(listing.assetId))?;
            let (_, payment_token) = d.quote(l, id, asset.startTime, asset.expiryTime, asset.bandwidth)?;
            out.push(Offer { listing_id: id, listing, asset, payment_token });
        }
        id += U256::from(1);
    }
    Ok(out)
}

/// The cheapest purchase of every hop, with its price.
#[derive(Clone, Debug)]
pub struct Plan {
    pub hops: Vec<PlannedHop>,
    pub start: u64,
    pub expiry: u64,
    pub bandwidth: u64,
    /// Total price in the native currency (wei).
    pub total: U256,
    /// Total price per ERC-20 token, for hops listed in token-paid marketplaces.
    pub token_totals: BTreeMap<Address, U256>,
}

#[derive(Clone, Debug)]
pub struct PlannedHop {
    pub want: HopWant,
    pub ingress: Offer,
    pub egress: Offer,
    pub price: U256,
}

impl Plan {
    pub fn purchases(&self) -> Vec<PathPurchase> {
        self.hops
            .iter()
            .map(|h| PathPurchase {
                ingressListingId: h.ingress.listing_id,
                egressListingId: h.egress.listing_id,
                startTime: self.start,
                expiryTime: self.expiry,
                bandwidth: self.bandwidth,
            })
            .collect()
    }
}

/// Plans the cheapest purchase of `[start, expiry) × bandwidth` (kbit/s) on every hop, from the
/// offers at hand. Each side of a hop is chosen independently: the cheapest covering listing.
pub fn plan_cheapest(
    offers: &[Offer],
    wants: &[HopWant],
    start: u64,
    expiry: u64,
    bandwidth: u64,
) -> Result<Plan, ClientError> {
    if expiry <= start {
        return Err(ClientError::EmptyInterval(start, expiry));
    }
    let mut hops = Vec::new();
    let mut total = U256::ZERO;
    let mut token_totals = BTreeMap::new();
    for (i, w) in wants.iter().enumerate() {
        if w.ingress == 0 || w.egress == 0 {
            return Err(ClientError::NotTransit { hop: i, isd_as: ia_text(w.isd_as) });
        }
        let cheapest = |interface: u16, is_ingress: bool| {
            offers
                .iter()
                .filter(|o| o.covers(w.isd_as, interface, is_ingress, start, expiry, bandwidth))
                .min_by_key(|o| (o.price(start, expiry, bandwidth), o.listing_id))
                .cloned()
                .ok_or(ClientError::NoOffer {
                    hop: i,
                    isd_as: ia_text(w.isd_as),
                    interface,
                    dir: if is_ingress { "ingress" } else { "egress" },
                })
        };
        let (ingress, egress) = (cheapest(w.ingress, true)?, cheapest(w.egress, false)?);
        for o in [&ingress, &egress] {
            let p = o.price(start, expiry, bandwidth);
            if o.payment_token == Address::ZERO {
                total += p;
            } else {
                *token_totals.entry(o.payment_token).or_insert(U256::ZERO) += p;
            }
        }
        let price = ingress.price(start, expiry, bandwidth) + egress.price(start, expiry, bandwidth);
        hops.push(PlannedHop { want: *w, ingress, egress, price });
    }
    Ok(Plan { hops, start, expiry, bandwidth, total, token_totals })
}

/// Buys and redeems every hop of `plan` in one transaction, the reservations to be sealed to
/// `key`; returns the redeem request ids in hop order. Either every hop is bought or none.
/// Token-paid pieces are paid from the buyer's allowance: the market is approved for each
/// token's total first (an approval stays if the purchase then fails).
pub fn buy_path<L: Ledger + ?Sized>(
    l: &mut L,
    d: &Deployment,
    buyer: &Account,
    plan: &Plan,
    key: &BuyerKey,
) -> Result<Vec<U256>, ClientError> {
    for (token, amount) in &plan.token_totals {
        crate::contracts::token::approve(l, buyer, *token, d.market, *amount)?;
    }
    let (ids, _) = d.buy_and_redeem_path(l, buyer, plan.purchases(), B256::from(key.public()), plan.total)?;
    Ok(ids)
}

/// Waits until every request is delivered and opens the reservations (in request order).
pub fn await_deliveries<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    requests: &[U256],
    key: &BuyerKey,
    timeout: Duration,
) -> Result<Vec<(u64, Reservation)>, ClientError> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    for id in requests {
        let sealed = loop {
            let sealed = d.reservation_of(l, *id)?;
            if !sealed.is_empty() {
                break sealed;
            }
            if Instant::now() > deadline {
                return Err(ClientError::Timeout(*id, timeout));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let req = d.request_of(l, *id)?;
        let ctx = SealContext::new(l.chain_id(), req.isdAs, id.to_be_bytes::<32>());
        let r = aviary_hummingbird::open(&sealed, &ctx, key).map_err(|e| ClientError::Open(*id, e))?;
        out.push((req.isdAs, r));
    }
    Ok(out)
}
