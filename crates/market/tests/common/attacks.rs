//! Purchases that other parties cannot block (the scenarios of "Market under attack", item 1),
//! on any ledger: a window across two issuing periods, sliver fragmentation, a seller that
//! refuses payment, and a price raised under the buyer's feet.

use alloy_sol_types::SolCall;
use aviary_market::bindings::{BandwidthAssets, Market, RefusingSeller};
use aviary_market::contracts::{deploy_test_token, events, token, PathPurchase, PriceLimit};
use aviary_market::registration::{certify, p256_key_from_seed};
use aviary_market::{Account, Address, AssetSpec, Bytes, Deployment, Ledger, B256, U256};

use super::{cert_expiry, expect_revert, GRAN, IA1, IA2, WINDOW};

/// 1-ff00:0:112: the refusing seller's AS.
const IA3: u64 = (1 << 48) | 0xff00_0000_0112;
const BW: u64 = 1000;

pub(super) struct Fixture {
    pub(super) dep: Deployment,
    pub(super) owner: Account,
    pub(super) as1: Account,
    pub(super) as2: Account,
    pub(super) buyer: Account,
    pub(super) mp: u64,
    /// The first hour of the listings: two hours or more ahead of the chain.
    pub(super) s: u64,
}

pub(super) fn spec(isd_as: u64, interface_id: u16, is_ingress: bool, start: u64, expiry: u64) -> AssetSpec {
    AssetSpec {
        isd_as,
        interface_id,
        is_ingress,
        bandwidth: BW,
        start_time: start,
        expiry_time: expiry,
        time_granularity: GRAN,
        min_bandwidth: 10,
    }
}

pub(super) fn setup<L: Ledger>(l: &mut L) -> Fixture {
    let accts = l.accounts().to_vec();
    let (owner, as1, as2, buyer) = (accts[0].clone(), accts[1].clone(), accts[2].clone(), accts[3].clone());
    let dep = Deployment::deploy_all(l, &owner).unwrap();
    let root = p256_key_from_seed(b"isd 1 root");
    dep.set_isd_root(l, &owner, 1, root.verifying_key()).unwrap();
    let mp = dep.create_marketplace(l, &owner, Address::ZERO).unwrap();
    for (acct, ia) in [(&as1, IA1), (&as2, IA2)] {
        let key = p256_key_from_seed(&ia.to_be_bytes());
        let reg = dep
            .registration(l, ia, certify(&root, ia, key.verifying_key(), cert_expiry(l)), &key, acct.address())
            .unwrap();
        dep.register(l, acct, &reg).unwrap();
        dep.register_seller(l, acct, mp).unwrap();
        dep.set_approval_for_all(l, acct, dep.market, true).unwrap();
    }
    let s = (l.block_timestamp().unwrap() / 3600 + 2) * 3600;
    Fixture { dep, owner, as1, as2, buyer, mp, s }
}

impl Fixture {
    pub(super) fn list<L: Ledger>(&self, l: &mut L, seller: &Account, a: &AssetSpec, price: u128) -> U256 {
        let id = self.dep.issue(l, seller, a).unwrap();
        self.dep.create_listing(l, seller, self.mp, id, price).unwrap()
    }

    fn volume<L: Ledger>(&self, l: &L, listing: U256) -> u64 {
        let a = self.dep.asset_of(l, U256::from(self.dep.listing_of(l, listing).unwrap().assetId)).unwrap();
        a.bandwidth * (a.expiryTime - a.startTime)
    }

    fn open_listings<L: Ledger>(&self, l: &L) -> Vec<U256> {
        let next = self.dep.next_listing_id(l).unwrap().to::<u64>();
        (1..next).map(U256::from).filter(|id| self.dep.listing_of(l, *id).unwrap().seller != Address::ZERO).collect()
    }
}

pub(super) fn native(max: U256) -> Vec<PriceLimit> {
    vec![PriceLimit { token: Address::ZERO, maxTotal: max }]
}

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    window_across_two_periods(l);
    sliver_fragmentation(l);
    seller_refusing_payment(l);
    price_raised_before_the_purchase(l);
}

/// The AS lists each hour as its own asset; the last ten minutes of an hour plus the first of
/// the next are one hop: two pieces per side, bought and fused, the remainders merged back.
fn window_across_two_periods<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (s, e) = (f.s, f.s + 3600);
    let mut sides = vec![];
    for (is_ingress, interface, price) in [(true, 1, 1), (false, 2, 2)] {
        sides.push(
            [(s, e), (e, e + 3600)].map(|(a, b)| f.list(l, &f.as1, &spec(IA1, interface, is_ingress, a, b), price)),
        );
    }
    let (start, expiry, bw) = (e - 600, e + 600, 400);
    // One listing per side cannot cover the window (what the market allowed before).
    let one = PathPurchase {
        ingressListingIds: vec![sides[0][0]],
        egressListingIds: vec![sides[1][0]],
        startTime: start,
        expiryTime: expiry,
        bandwidth: bw,
    };
    let price = U256::from(3 * bw * 1200);
    let rv = expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, vec![one], B256::ZERO, WINDOW, native(price), price),
        "HopNotCovered",
    );
    assert_eq!(rv.arg("coveredUntil"), Some(e.to_string().as_str()));
    // A gap between the pieces is refused too (the second listing does not hold `e`).
    let late = f.list(l, &f.as1, &spec(IA1, 1, true, e + 60, e + 3600), 1);
    let gap = PathPurchase {
        ingressListingIds: vec![sides[0][0], late],
        egressListingIds: sides[1].to_vec(),
        startTime: start,
        expiryTime: expiry,
        bandwidth: bw,
    };
    let rv = expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, vec![gap], B256::ZERO, WINDOW, native(price), price),
        "OutsideListing",
    );
    assert_eq!(rv.arg("listingId"), Some(late.to_string().as_str()));
    f.dep.delist(l, &f.as1, late).unwrap();

    let before: u64 = sides.iter().flatten().map(|id| f.volume(l, *id)).sum();
    let hop = PathPurchase {
        ingressListingIds: sides[0].to_vec(),
        egressListingIds: sides[1].to_vec(),
        startTime: start,
        expiryTime: expiry,
        bandwidth: bw,
    };
    let (requests, r) =
        f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, native(price), price).unwrap();
    let filed = f.dep.redeem_requests(&r);
    assert_eq!(filed.len(), 1);
    assert_eq!((filed[0].startTime, filed[0].expiryTime, filed[0].bandwidth), (start, expiry, bw));
    assert_eq!(filed[0].requestId, requests[0]);
    // Each side's two bandwidth remainders [e-600, e) and [e, e+600) x 600 became one listing.
    let merged = events::<Market::ListingsMerged>(&r, f.dep.market);
    assert_eq!(merged.len(), 2);
    for m in &merged {
        let a = f.dep.asset_of(l, m.assetId).unwrap();
        assert_eq!((a.startTime, a.expiryTime, a.bandwidth), (start, expiry, BW - bw));
        assert_eq!(f.dep.listing_of(l, m.listingId).unwrap().assetId, m.assetId.to::<u128>());
        assert_eq!(f.dep.listing_of(l, m.mergedListingId).unwrap().seller, Address::ZERO);
    }
    // Volume: what is still listed plus what was bought is what was listed.
    let after: u64 = f.open_listings(l).iter().map(|id| f.volume(l, *id)).sum();
    assert_eq!(after + 2 * bw * 1200, before);
    assert_eq!(f.dep.proceeds_of(l, f.as1.address(), Address::ZERO).unwrap(), price);

    // Anyone may merge a seller's listings of adjacent periods into one; not across prices.
    let ingress_next = f.list(l, &f.as1, &spec(IA1, 1, true, e + 3600, e + 7200), 1);
    let ingress_later = f.list(l, &f.as1, &spec(IA1, 1, true, e + 7200, e + 10800), 1);
    let dearer = f.list(l, &f.as1, &spec(IA1, 1, true, e + 10800, e + 14400), 5);
    f.dep.merge_listings(l, &f.buyer, ingress_later, ingress_next).unwrap();
    let a = f.dep.asset_of(l, U256::from(f.dep.listing_of(l, ingress_later).unwrap().assetId)).unwrap();
    assert_eq!((a.startTime, a.expiryTime), (e + 3600, e + 10800));
    expect_revert(f.dep.merge_listings(l, &f.buyer, ingress_later, dearer), "NotMergeable");
}

/// Slivers of 60 s x 10 kbit/s bought every 540 s cut the listing into pieces of at most
/// 540 s at full bandwidth; a 600 s window at 500 kbit/s is still bought, across the pieces.
fn sliver_fragmentation<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (s, e) = (f.s, f.s + 3600);
    let ingress = f.list(l, &f.as1, &spec(IA1, 1, true, s, e), 1);
    let egress = f.list(l, &f.as1, &spec(IA1, 2, false, s, e), 1);
    let attacker = &f.owner;
    for listing in [ingress, egress] {
        for k in 0..6u64 {
            let at = s + 480 + 540 * k;
            let mut listing = listing;
            // The listing that holds `at` now (remainders move to new listings).
            for id in f.open_listings(l) {
                let a = f.dep.asset_of(l, U256::from(f.dep.listing_of(l, id).unwrap().assetId)).unwrap();
                if a.startTime <= at && at + 60 <= a.expiryTime && a.bandwidth == BW {
                    listing = id;
                }
            }
            let p = U256::from(10 * 60);
            f.dep.buy(l, attacker, listing, at, at + 60, 10, p, p).unwrap();
        }
    }
    // Every 600 s window now crosses a sliver: no listing holds one at full bandwidth.
    let (start, expiry, bw) = (s + 1200, s + 1800, 500);
    let holders = |l: &L, is_ingress: bool| -> Vec<U256> {
        let mut v: Vec<(u64, U256)> = f
            .open_listings(l)
            .into_iter()
            .filter_map(|id| {
                let a = f.dep.asset_of(l, U256::from(f.dep.listing_of(l, id).unwrap().assetId)).unwrap();
                let usable = a.isIngress == is_ingress && a.bandwidth >= bw && a.bandwidth - bw >= 10;
                (usable && a.startTime < expiry && a.expiryTime > start).then_some((a.startTime, id))
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, id)| id).collect()
    };
    let (ins, outs) = (holders(l, true), holders(l, false));
    assert!(ins.len() >= 2 && outs.len() >= 2, "the window spans fragments: {ins:?} {outs:?}");
    for id in ins.iter().chain(&outs) {
        let a = f.dep.asset_of(l, U256::from(f.dep.listing_of(l, *id).unwrap().assetId)).unwrap();
        assert!(!(a.startTime <= start && expiry <= a.expiryTime), "listing {id} alone holds the window");
    }
    let hop = PathPurchase {
        ingressListingIds: ins,
        egressListingIds: outs,
        startTime: start,
        expiryTime: expiry,
        bandwidth: bw,
    };
    let price = U256::from(2 * bw * 600);
    let (_, r) = f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, native(price), price).unwrap();
    let filed = f.dep.redeem_requests(&r);
    assert_eq!((filed[0].startTime, filed[0].expiryTime, filed[0].bandwidth), (start, expiry, bw));
}

/// A registered AS whose account is a contract that reverts on any native payment lists the
/// cheapest offer. Paying sellers by pull, the purchase goes through; only the seller's own
/// withdrawal fails.
fn seller_refusing_payment<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let refuser = l.deploy(&f.owner, RefusingSeller::BYTECODE.clone()).unwrap();
    let exec = |l: &mut L, to: Address, data: Vec<u8>| {
        let call = RefusingSeller::executeCall { to, data: Bytes::from(data) };
        l.send(&f.owner, refuser, call.abi_encode().into(), U256::ZERO).unwrap().into_result()
    };
    let root = p256_key_from_seed(b"isd 1 root");
    let key = p256_key_from_seed(b"refusing AS");
    let reg =
        f.dep.registration(l, IA3, certify(&root, IA3, key.verifying_key(), cert_expiry(l)), &key, refuser).unwrap();
    exec(l, f.dep.registry, reg.call().abi_encode()).unwrap();
    exec(l, f.dep.market, Market::registerSellerCall { marketplaceId: f.mp }.abi_encode()).unwrap();
    let approve = BandwidthAssets::setApprovalForAllCall { operator: f.dep.market, approved: true };
    exec(l, f.dep.assets, approve.abi_encode()).unwrap();
    let (s, e) = (f.s, f.s + 3600);
    let mut listings = vec![];
    for (is_ingress, interface) in [(true, 1), (false, 2)] {
        let issue = spec(IA3, interface, is_ingress, s, e).issue_call();
        let r = exec(l, f.dep.assets, issue.abi_encode()).unwrap();
        let id = events::<BandwidthAssets::Issued>(&r, f.dep.assets)[0].id;
        let list = Market::createListingCall { marketplaceId: f.mp, assetId: id, pricePerUnit: 1 };
        let r = exec(l, f.dep.market, list.abi_encode()).unwrap();
        listings.push(events::<Market::Listed>(&r, f.dep.market)[0].listingId);
    }
    assert_eq!(f.dep.as_of(l, refuser).unwrap(), IA3);
    let hop = PathPurchase {
        ingressListingIds: vec![listings[0]],
        egressListingIds: vec![listings[1]],
        startTime: s,
        expiryTime: s + 600,
        bandwidth: 100,
    };
    let price = U256::from(2 * 100 * 600);
    let (requests, _) =
        f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, native(price), price).unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(f.dep.proceeds_of(l, refuser, Address::ZERO).unwrap(), price);
    // Its own withdrawal reverts (its receive refuses), and its proceeds stay.
    let withdrawal = exec(l, f.dep.market, Market::withdrawCall { token: Address::ZERO }.abi_encode());
    let rv = expect_revert(withdrawal, "PaymentFailed");
    assert_eq!(rv.arg("amount"), Some(price.to_string().as_str()));
    assert_eq!(f.dep.proceeds_of(l, refuser, Address::ZERO).unwrap(), price);
}

/// The seller raises the price between the buyer's quote and its purchase: with a limit, the
/// purchase reverts and costs nothing but gas, although the buyer's allowance would cover more.
fn price_raised_before_the_purchase<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let tok = deploy_test_token(l, &f.owner, "Test", "TST").unwrap();
    let mp_tok = f.dep.create_marketplace(l, &f.owner, tok).unwrap();
    f.dep.register_seller(l, &f.as2, mp_tok).unwrap();
    let asset = f.dep.issue(l, &f.as2, &spec(IA2, 1, true, f.s, f.s + 3600)).unwrap();
    let listing = f.dep.create_listing(l, &f.as2, mp_tok, asset, 2).unwrap();
    let (quoted, _) = f.dep.quote(l, listing, f.s, f.s + 600, 100).unwrap();
    token::mint(l, &f.buyer, tok, f.buyer.address(), U256::from(10_000_000u64)).unwrap();
    token::approve(l, &f.buyer, tok, f.dep.market, U256::from(10_000_000u64)).unwrap();
    f.dep.set_price(l, &f.as2, listing, 20).unwrap();
    let before = token::balance_of(l, tok, f.buyer.address()).unwrap();
    let rv = expect_revert(f.dep.buy(l, &f.buyer, listing, f.s, f.s + 600, 100, quoted, U256::ZERO), "PriceAboveLimit");
    assert_eq!(rv.arg("price"), Some((quoted * U256::from(10)).to_string().as_str()));
    assert_eq!(token::balance_of(l, tok, f.buyer.address()).unwrap(), before);
    // The same on a path purchase, per token: the limit is the quoted total.
    let egress = f.dep.issue(l, &f.as2, &spec(IA2, 2, false, f.s, f.s + 3600)).unwrap();
    let egress = f.dep.create_listing(l, &f.as2, mp_tok, egress, 2).unwrap();
    let hop = PathPurchase {
        ingressListingIds: vec![listing],
        egressListingIds: vec![egress],
        startTime: f.s,
        expiryTime: f.s + 600,
        bandwidth: 100,
    };
    let limits = vec![PriceLimit { token: tok, maxTotal: quoted * U256::from(2) }];
    let rv = expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop.clone()], B256::ZERO, WINDOW, limits, U256::ZERO),
        "PriceAboveLimit",
    );
    assert_eq!(rv.arg("token"), Some(tok.to_string().as_str()));
    assert_eq!(token::balance_of(l, tok, f.buyer.address()).unwrap(), before);
    // At the new price, with a limit that covers it, the purchase goes through.
    let limits = vec![PriceLimit { token: tok, maxTotal: quoted * U256::from(11) }];
    f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, limits, U256::ZERO).unwrap();
    assert_eq!(token::balance_of(l, tok, f.buyer.address()).unwrap(), before - quoted * U256::from(11));
}
