//! The market's calls: marketplaces, sellers, listings, purchases, proceeds.

use alloy_primitives::{Address, B256, U256};

use super::{first_event, transact, view, Deployment, Listing, PathPurchase, PriceLimit};
use crate::bindings::Market;
use crate::{Account, Ledger, LedgerError, Receipt};

/// One side of an AS's interface, the key of the market's index of open listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct IndexedSide {
    pub isd_as: u64,
    pub interface: u16,
    pub is_ingress: bool,
}

impl Deployment {
    /// Create a marketplace paid in `token` (zero: native currency); returns its id.
    pub fn create_marketplace<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        token: Address,
    ) -> Result<u64, LedgerError> {
        let r = transact(l, from, self.market, &Market::createMarketplaceCall { paymentToken: token }, U256::ZERO)?;
        Ok(first_event::<Market::MarketplaceCreated>(&r, self.market)?.marketplaceId)
    }

    /// Become a seller in `marketplace` (registered ASes only).
    pub fn register_seller<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        marketplace: u64,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.market, &Market::registerSellerCall { marketplaceId: marketplace }, U256::ZERO)
    }

    /// List asset `asset` at `price_per_unit` (per kbit/s × s); returns the listing id. Approve
    /// the market for the asset first (`approve` or `set_approval_for_all`).
    pub fn create_listing<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        marketplace: u64,
        asset: U256,
        price_per_unit: u128,
    ) -> Result<U256, LedgerError> {
        let call =
            Market::createListingCall { marketplaceId: marketplace, assetId: asset, pricePerUnit: price_per_unit };
        let r = transact(l, from, self.market, &call, U256::ZERO)?;
        Ok(first_event::<Market::Listed>(&r, self.market)?.listingId)
    }

    /// Change a listing's price (its seller only).
    pub fn set_price<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        listing: U256,
        price_per_unit: u128,
    ) -> Result<Receipt, LedgerError> {
        transact(
            l,
            from,
            self.market,
            &Market::setPriceCall { listingId: listing, pricePerUnit: price_per_unit },
            U256::ZERO,
        )
    }

    /// Close a listing; the asset returns to its seller.
    pub fn delist<L: Ledger + ?Sized>(&self, l: &mut L, from: &Account, listing: U256) -> Result<Receipt, LedgerError> {
        transact(l, from, self.market, &Market::delistCall { listingId: listing }, U256::ZERO)
    }

    /// Buy [start, expiry) × bandwidth of `listing` for at most `max_price` (in the listing's
    /// token), paying `value` wei (native marketplaces; the excess is refunded); returns the
    /// bought asset's id and the receipt.
    #[allow(clippy::too_many_arguments)] // the contract's arguments, plus ledger, sender, value
    pub fn buy<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        listing: U256,
        start: u64,
        expiry: u64,
        bandwidth: u64,
        max_price: U256,
        value: U256,
    ) -> Result<(U256, Receipt), LedgerError> {
        let call = Market::buyCall {
            listingId: listing,
            startTime: start,
            expiryTime: expiry,
            bandwidth,
            maxPrice: max_price,
        };
        let r = transact(l, from, self.market, &call, value)?;
        Ok((first_event::<Market::Purchased>(&r, self.market)?.assetId, r))
    }

    /// Buy and redeem every hop of a path in one transaction, paying at most `limits` per
    /// token (a token without a limit: nothing) and `value` wei, the ASes to deliver within
    /// `delivery_window_s`; returns the request ids in hop order and the receipt (whose
    /// RedeemRequested events the AS services watch).
    #[allow(clippy::too_many_arguments)] // the contract's arguments, plus ledger, sender, value
    pub fn buy_and_redeem_path<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        hops: Vec<PathPurchase>,
        ephemeral_key: B256,
        delivery_window_s: u32,
        limits: Vec<PriceLimit>,
        value: U256,
    ) -> Result<(Vec<U256>, Receipt), LedgerError> {
        let call = Market::buyAndRedeemPathCall {
            hops,
            ephemeralPubKey: ephemeral_key,
            deliveryWindow: delivery_window_s,
            maxPrices: limits,
        };
        let r = transact(l, from, self.market, &call, value)?;
        Ok((first_event::<Market::PathPurchased>(&r, self.market)?.requestIds, r))
    }

    /// Pay out the caller's proceeds in `token` (zero: native); returns the amount (0: none due).
    pub fn withdraw<L: Ledger + ?Sized>(&self, l: &mut L, from: &Account, token: Address) -> Result<U256, LedgerError> {
        let r = transact(l, from, self.market, &Market::withdrawCall { token }, U256::ZERO)?;
        Ok(crate::contracts::events::<Market::Withdrawn>(&r, self.market).first().map_or(U256::ZERO, |w| w.amount))
    }

    /// Take back an asset the caller sent to the market outside `create_listing`.
    pub fn recover<L: Ledger + ?Sized>(&self, l: &mut L, from: &Account, asset: U256) -> Result<Receipt, LedgerError> {
        transact(l, from, self.market, &Market::recoverCall { assetId: asset }, U256::ZERO)
    }

    /// What `seller` can withdraw in `token` (zero: native).
    pub fn proceeds_of<L: Ledger + ?Sized>(&self, l: &L, seller: Address, token: Address) -> Result<U256, LedgerError> {
        view(l, self.market, &Market::proceedsOfCall { seller, token })
    }

    /// Join `other` into `listing` (one seller, marketplace and price; assets adjacent in time
    /// with equal bandwidth, or equal in time). Anyone may call it.
    pub fn merge_listings<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        listing: U256,
        other: U256,
    ) -> Result<Receipt, LedgerError> {
        let call = Market::mergeListingsCall { listingId: listing, otherListingId: other };
        transact(l, from, self.market, &call, U256::ZERO)
    }

    /// The price of [start, expiry) × bandwidth of `listing` and its payment token.
    pub fn quote<L: Ledger + ?Sized>(
        &self,
        l: &L,
        listing: U256,
        start: u64,
        expiry: u64,
        bandwidth: u64,
    ) -> Result<(U256, Address), LedgerError> {
        let call = Market::quoteCall { listingId: listing, startTime: start, expiryTime: expiry, bandwidth };
        let q = view(l, self.market, &call)?;
        Ok((q.price, q.paymentToken))
    }

    /// Listing `id` (seller zero: none).
    pub fn listing_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<Listing, LedgerError> {
        view(l, self.market, &Market::listingOfCall { listingId: id })
    }

    /// Marketplace `id` (creator zero: none).
    pub fn marketplace_of<L: Ledger + ?Sized>(&self, l: &L, id: u64) -> Result<Market::Marketplace, LedgerError> {
        view(l, self.market, &Market::marketplaceOfCall { marketplaceId: id })
    }

    /// Whether `account` is a seller in `marketplace` (an AS or a reseller).
    pub fn is_seller<L: Ledger + ?Sized>(
        &self,
        l: &L,
        marketplace: u64,
        account: Address,
    ) -> Result<bool, LedgerError> {
        view(l, self.market, &Market::isSellerCall { marketplaceId: marketplace, account })
    }

    /// Open listings `offset` to `offset + limit` of one side of an AS's interface (expired
    /// ones included until closed), with their assets and payment tokens.
    pub fn open_listings<L: Ledger + ?Sized>(
        &self,
        l: &L,
        side: IndexedSide,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Market::OpenListing>, LedgerError> {
        let call = Market::openListingsCall {
            isdAs: side.isd_as,
            interfaceId: side.interface,
            isIngress: side.is_ingress,
            offset: U256::from(offset),
            limit: U256::from(limit),
        };
        view(l, self.market, &call)
    }

    /// How many listings of one side are open (expired ones included until closed).
    pub fn open_listing_count<L: Ledger + ?Sized>(&self, l: &L, side: IndexedSide) -> Result<u64, LedgerError> {
        let call = Market::openListingCountCall {
            isdAs: side.isd_as,
            interfaceId: side.interface,
            isIngress: side.is_ingress,
        };
        let n: U256 = view(l, self.market, &call)?;
        Ok(n.saturating_to())
    }

    /// Every side of every AS that ever had a listing (the index's keys).
    pub fn listed_sides<L: Ledger + ?Sized>(&self, l: &L) -> Result<Vec<IndexedSide>, LedgerError> {
        let mut out = Vec::new();
        for isd_as in view(l, self.market, &Market::listedIssuersCall {})? {
            out.extend(self.listed_sides_of(l, isd_as)?);
        }
        Ok(out)
    }

    /// The sides of `isd_as` that ever had a listing.
    pub fn listed_sides_of<L: Ledger + ?Sized>(&self, l: &L, isd_as: u64) -> Result<Vec<IndexedSide>, LedgerError> {
        let sides = view(l, self.market, &Market::listedSidesOfCall { isdAs: isd_as })?;
        Ok(sides
            .into_iter()
            .map(|s| IndexedSide { isd_as, interface: s.interfaceId, is_ingress: s.isIngress })
            .collect())
    }

    /// Close an expired listing (anyone); the asset returns to its seller.
    pub fn close_expired<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        listing: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.market, &Market::closeExpiredCall { listingId: listing }, U256::ZERO)
    }

    /// The id the next listing gets.
    pub fn next_listing_id<L: Ledger + ?Sized>(&self, l: &L) -> Result<U256, LedgerError> {
        view(l, self.market, &Market::nextListingIdCall {})
    }
}
