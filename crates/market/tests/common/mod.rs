//! The scenario both ledgers must pass (one body, generic over the ledger), and the helpers the
//! integration tests share.
#![allow(dead_code)]

pub mod attacks;
pub mod hardhat;
pub mod index;
pub mod overflow;
pub mod registry;
pub mod resale;
pub mod stranded;

use std::collections::BTreeMap;
use std::fmt::Debug;

use alloy_sol_types::SolCall;
use aviary_market::bindings::Market;
use aviary_market::contracts::{
    deploy_test_token, request_status, token, Asset, Listing, PathPurchase, PriceLimit, RedeemRequest,
};
use aviary_market::registration::{self, certify, p256_key_from_seed};
use aviary_market::{Account, Address, AssetSpec, Bytes, Deployment, Ledger, LedgerError, Revert, B256, U256};

/// 1-ff00:0:110 and 1-ff00:0:111.
pub const IA1: u64 = (1 << 48) | 0xff00_0000_0110;
pub const IA2: u64 = (1 << 48) | 0xff00_0000_0111;
pub const GRAN: u32 = 60;
/// The delivery window of the tests' redeem requests (s).
pub const WINDOW: u32 = 600;

/// The expiry of the tests' AS certificates: 30 days from the chain's time (the scenarios
/// advance it by a day at most).
pub fn cert_expiry<L: Ledger>(l: &L) -> u64 {
    l.block_timestamp().unwrap() + 30 * 24 * 3600
}

/// The error must be a revert named `name`.
pub fn expect_revert<T: Debug>(r: Result<T, LedgerError>, name: &str) -> Revert {
    match r {
        Err(LedgerError::Revert(rv)) if rv.name == name => rv,
        other => panic!("expected revert {name}, got {other:?}"),
    }
}

/// Everything a purchase could change: native and token balances of the given accounts, every
/// asset, listing and request ever created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarketState {
    pub balances: BTreeMap<Address, U256>,
    pub token_balances: BTreeMap<Address, U256>,
    pub assets: Vec<Asset>,
    pub listings: Vec<Listing>,
    pub requests: Vec<RedeemRequest>,
}

pub fn market_state<L: Ledger>(l: &L, dep: &Deployment, token: Option<Address>, who: &[Address]) -> MarketState {
    let mut balances = BTreeMap::new();
    let mut token_balances = BTreeMap::new();
    for &a in who.iter().chain([dep.market, dep.assets].iter()) {
        balances.insert(a, l.balance(a).unwrap());
        if let Some(t) = token {
            token_balances.insert(a, token::balance_of(l, t, a).unwrap());
        }
    }
    let n = dep.next_asset_id(l).unwrap().to::<u64>();
    let assets = (1..n).map(|i| dep.asset_of(l, U256::from(i)).unwrap()).collect();
    let n = dep.next_listing_id(l).unwrap().to::<u64>();
    let listings = (1..n).map(|i| dep.listing_of(l, U256::from(i)).unwrap()).collect();
    let n = dep.next_request_id(l).unwrap().to::<u64>();
    let requests = (1..n).map(|i| dep.request_of(l, U256::from(i)).unwrap()).collect();
    MarketState { balances, token_balances, assets, listings, requests }
}

/// What the scenario leaves behind, for checks after it (persistence).
pub struct World {
    pub dep: Deployment,
    pub token: Address,
    pub who: Vec<Address>,
}

fn spec(isd_as: u64, interface_id: u16, is_ingress: bool, bw: u64, start: u64, expiry: u64) -> AssetSpec {
    AssetSpec {
        isd_as,
        interface_id,
        is_ingress,
        bandwidth: bw,
        start_time: start,
        expiry_time: expiry,
        time_granularity: GRAN,
        min_bandwidth: 10,
    }
}

/// The whole market scenario of issue 4 on any ledger.
pub fn scenario<L: Ledger>(l: &mut L) -> World {
    let accts = l.accounts().to_vec();
    let (owner, as1, as2, buyer, stranger) = (&accts[0], &accts[1], &accts[2], &accts[3], &accts[4]);
    let dep = Deployment::deploy_all(l, owner).unwrap();

    // Funding a new account (embedded: minted; JSON-RPC: sent from the first account).
    let newcomer = Account::from_private_key(&[0x5a; 32]).unwrap();
    let one_eth = U256::from(10u64).pow(U256::from(18));
    l.fund(newcomer.address(), one_eth).unwrap();
    assert_eq!(l.balance(newcomer.address()).unwrap(), one_eth);

    // ---------------------------------------------------------------- registration
    let root1 = p256_key_from_seed(b"isd 1 root");
    let root2 = p256_key_from_seed(b"isd 2 root");
    let as1_key = p256_key_from_seed(b"as 1-ff00:0:110");
    let as2_key = p256_key_from_seed(b"as 1-ff00:0:111");
    dep.set_isd_root(l, owner, 1, root1.verifying_key()).unwrap();
    dep.set_isd_root(l, owner, 2, root2.verifying_key()).unwrap();
    expect_revert(dep.set_isd_root(l, stranger, 1, root2.verifying_key()), "NotOwner");

    // A certificate from the wrong root (ISD 2's key certifying an ISD 1 AS).
    let not_after = cert_expiry(l);
    let bad_cert = certify(&root2, IA1, as1_key.verifying_key(), not_after);
    let reg = dep.registration(l, IA1, bad_cert, &as1_key, as1.address()).unwrap();
    let rv = expect_revert(dep.register(l, as1, &reg), "BadCertificate");
    assert_eq!(rv.arg("isdAs"), Some(IA1.to_string().as_str()));

    // A proof of possession made for another account.
    let cert1 = certify(&root1, IA1, as1_key.verifying_key(), not_after);
    let for_as2 = dep.registration(l, IA1, cert1, &as1_key, as2.address()).unwrap();
    let rv = expect_revert(dep.register(l, as1, &for_as2), "BadProofOfPossession");
    assert_eq!(rv.to_string(), format!("BadProofOfPossession(isdAs={IA1}, account={})", as1.address()));

    // The digests signed here are byte for byte those the contract computes.
    let local = registration::certificate_digest(IA1, as1_key.verifying_key(), not_after);
    assert_eq!(dep.certificate_digest(l, IA1, as1_key.verifying_key(), not_after).unwrap(), local);
    let nonce = dep.registration_nonce(l, as1.address()).unwrap();
    let local = registration::registration_digest(dep.registry, l.chain_id(), as1.address(), nonce);
    assert_eq!(dep.registration_digest(l, as1.address()).unwrap(), local);

    // The real thing.
    let reg1 = dep.registration(l, IA1, cert1, &as1_key, as1.address()).unwrap();
    dep.register(l, as1, &reg1).unwrap();
    assert_eq!(dep.as_of(l, as1.address()).unwrap(), IA1);
    assert_eq!(dep.account_of(l, IA1).unwrap(), as1.address());
    assert_eq!(dep.as_key(l, IA1).unwrap(), registration::public_key_xy(as1_key.verifying_key()));

    // Replay: after deregistering, the same proof fails since the nonce moved on.
    dep.deregister(l, as1).unwrap();
    assert_eq!(dep.as_of(l, as1.address()).unwrap(), 0);
    expect_revert(dep.register(l, as1, &reg1), "BadProofOfPossession");
    let reg1 = dep.registration(l, IA1, cert1, &as1_key, as1.address()).unwrap();
    assert_eq!(dep.registration_nonce(l, as1.address()).unwrap(), U256::from(1));
    dep.register(l, as1, &reg1).unwrap();

    let cert2 = certify(&root1, IA2, as2_key.verifying_key(), not_after);
    let reg2 = dep.registration(l, IA2, cert2, &as2_key, as2.address()).unwrap();
    expect_revert(
        dep.register(l, as1, &dep.registration(l, IA2, cert2, &as2_key, as1.address()).unwrap()),
        "AccountAlreadyRegistered",
    );
    dep.register(l, as2, &reg2).unwrap();

    // ---------------------------------------------------------------- issue, split, fuse
    let now = l.block_timestamp().unwrap();
    let s = (now / 3600 + 2) * 3600; // an hour or more ahead, on every grid used here
    let e = s + 3600;
    expect_revert(dep.issue(l, stranger, &spec(IA1, 1, true, 1000, s, e)), "NotIssuingAs");
    expect_revert(dep.issue(l, as1, &spec(IA1, 1, true, 1000, s + 1, e)), "OffGranularity");

    let x = dep.issue(l, as1, &spec(IA1, 3, true, 1000, s, e)).unwrap();
    let original = dep.asset_of(l, x).unwrap();
    assert_eq!(original.owner, as1.address());
    let x_late = dep.split_time(l, as1, x, s + 600).unwrap();
    let rv = expect_revert(dep.split_time(l, as1, x, s + 301), "OffGranularity");
    assert_eq!(rv.to_string(), format!("OffGranularity(time={}, timeGranularity=60)", s + 301));
    expect_revert(dep.split_time(l, stranger, x, s + 300), "NotAssetOwner");
    let x_bw = dep.split_bandwidth(l, as1, x, 400).unwrap();
    expect_revert(dep.split_bandwidth(l, as1, x, 595), "BelowMinBandwidth");
    assert_eq!(dep.asset_of(l, x).unwrap().bandwidth, 600);
    assert_eq!(dep.asset_of(l, x_bw).unwrap().bandwidth, 400);
    expect_revert(dep.fuse_time(l, as1, x, x_late), "IncompatibleAssets"); // 600 vs 1000 kbit/s
    dep.fuse_bandwidth(l, as1, x, x_bw).unwrap();
    dep.fuse_time(l, as1, x, x_late).unwrap();
    assert_eq!(dep.asset_of(l, x).unwrap(), original);
    expect_revert(dep.owner_of(l, x_late), "UnknownAsset");

    // ---------------------------------------------------------------- native marketplace
    let mp = dep.create_marketplace(l, owner, Address::ZERO).unwrap();
    for a in [as1, as2] {
        dep.register_seller(l, a, mp).unwrap();
        dep.set_approval_for_all(l, a, dep.market, true).unwrap();
    }
    expect_revert(dep.register_seller(l, as1, mp), "AlreadySeller");
    assert!(dep.is_seller(l, mp, as2.address()).unwrap());
    assert!(!dep.is_seller(l, mp, stranger.address()).unwrap());
    let lx = dep.create_listing(l, as1, mp, x, 2).unwrap();
    assert_eq!(dep.owner_of(l, x).unwrap(), dep.market);

    // A sub-rectangle [s+600, s+1200) x 300 at 2 wei per kbit/s x s.
    let (price, pay_token) = dep.quote(l, lx, s + 600, s + 1200, 300).unwrap();
    assert_eq!((price, pay_token), (U256::from(2 * 300 * 600), Address::ZERO));
    let err = dep.buy(l, buyer, lx, s + 600, s + 1200, 300, price, price - U256::from(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("reverted: PaymentTooLow(required={price}, available={})", price - U256::from(1))
    );
    expect_revert(dep.buy(l, buyer, lx, s + 601, s + 1200, 300, price, price), "OffGranularity");
    expect_revert(dep.buy(l, buyer, U256::from(999), s, e, 10, price, price), "UnknownListing");
    // A price above the buyer's limit reverts, however much it sends.
    let rv =
        expect_revert(dep.buy(l, buyer, lx, s + 600, s + 1200, 300, price - U256::from(1), price), "PriceAboveLimit");
    assert_eq!(rv.arg("price"), Some(price.to_string().as_str()));

    let (buyer_before, seller_before) = (l.balance(buyer.address()).unwrap(), l.balance(as1.address()).unwrap());
    let overpay = price + U256::from(12345);
    let (piece, receipt) = dep.buy(l, buyer, lx, s + 600, s + 1200, 300, price, overpay).unwrap();
    assert_eq!(l.balance(buyer.address()).unwrap(), buyer_before - price - receipt.fee(), "excess refunded");
    // The seller is paid by pull: credited now, paid when it withdraws.
    assert_eq!(l.balance(as1.address()).unwrap(), seller_before);
    assert_eq!(dep.proceeds_of(l, as1.address(), Address::ZERO).unwrap(), price);
    assert_eq!(l.balance(dep.market).unwrap(), price);
    expect_revert(dep.merge_listings(l, stranger, lx, lx), "NotMergeable");
    let before_withdraw = l.balance(as1.address()).unwrap();
    assert_eq!(dep.withdraw(l, as1, Address::ZERO).unwrap(), price);
    assert_eq!(dep.withdraw(l, as1, Address::ZERO).unwrap(), U256::ZERO, "paid once");
    assert!(l.balance(as1.address()).unwrap() > before_withdraw + price - U256::from(10u64.pow(15)));
    assert_eq!(dep.proceeds_of(l, as1.address(), Address::ZERO).unwrap(), U256::ZERO);
    assert_eq!(l.balance(dep.market).unwrap(), U256::ZERO);
    let bought = dep.asset_of(l, piece).unwrap();
    assert_eq!(bought.owner, buyer.address());
    assert_eq!((bought.startTime, bought.expiryTime, bought.bandwidth), (s + 600, s + 1200, 300));
    // Worst case: three remainders, the listing keeps x, two new listings point to it.
    let listed = dep.listed(&receipt);
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|ev| ev.parentListingId == lx));
    let mut volume = 300 * 600;
    for id in [lx].into_iter().chain(listed.iter().map(|ev| ev.listingId)) {
        let a = dep.asset_of(l, U256::from(dep.listing_of(l, id).unwrap().assetId)).unwrap();
        assert_eq!(a.owner, dep.market);
        volume += a.bandwidth * (a.expiryTime - a.startTime);
    }
    assert_eq!(volume, 1000 * 3600, "remainders and the piece cover the listed asset");
    expect_revert(dep.delist(l, stranger, lx), "NotListingSeller");
    dep.delist(l, as1, lx).unwrap();
    assert_eq!(dep.owner_of(l, x).unwrap(), as1.address());

    // ---------------------------------------------------------------- ERC-20 marketplace
    let tok = deploy_test_token(l, owner, "Test", "TST").unwrap();
    let mp_tok = dep.create_marketplace(l, owner, tok).unwrap();
    dep.register_seller(l, as1, mp_tok).unwrap();
    assert_eq!(dep.marketplace_of(l, mp_tok).unwrap().paymentToken, tok);
    token::mint(l, buyer, tok, buyer.address(), U256::from(1_000_000_000u64)).unwrap();
    let y = dep.issue(l, as1, &spec(IA1, 4, false, 500, s, e)).unwrap();
    let ly = dep.create_listing(l, as1, mp_tok, y, 3).unwrap();
    let (price, pay_token) = dep.quote(l, ly, s, s + 1800, 500).unwrap();
    assert_eq!((price, pay_token), (U256::from(3 * 500 * 1800), tok));
    token::approve(l, buyer, tok, dep.market, price - U256::from(5)).unwrap();
    let rv = expect_revert(dep.buy(l, buyer, ly, s, s + 1800, 500, price, U256::ZERO), "PaymentTooLow");
    assert_eq!(rv.arg("available"), Some((price - U256::from(5)).to_string().as_str()));
    token::approve(l, buyer, tok, dep.market, price).unwrap();
    let (t_buyer, t_seller) =
        (token::balance_of(l, tok, buyer.address()).unwrap(), token::balance_of(l, tok, as1.address()).unwrap());
    let (piece, _) = dep.buy(l, buyer, ly, s, s + 1800, 500, price, U256::ZERO).unwrap();
    assert_eq!(token::balance_of(l, tok, buyer.address()).unwrap(), t_buyer - price);
    assert_eq!(token::balance_of(l, tok, dep.market).unwrap(), price);
    assert_eq!(dep.proceeds_of(l, as1.address(), tok).unwrap(), price);
    assert_eq!(dep.withdraw(l, as1, tok).unwrap(), price);
    assert_eq!(token::balance_of(l, tok, as1.address()).unwrap(), t_seller + price);
    assert_eq!(dep.owner_of(l, piece).unwrap(), buyer.address());

    // ---------------------------------------------------------------- buy and redeem a path
    let mut listings = vec![];
    for (acct, ia) in [(as1, IA1), (as2, IA2)] {
        let i = dep.issue(l, acct, &spec(ia, 1, true, 1000, s, e)).unwrap();
        let o = dep.issue(l, acct, &spec(ia, 2, false, 1000, s, e)).unwrap();
        listings.push(dep.create_listing(l, acct, mp, i, 1).unwrap());
        listings.push(dep.create_listing(l, acct, mp, o, 2).unwrap());
    }
    let hop = |ingress: U256, egress: U256| PathPurchase {
        ingressListingIds: vec![ingress],
        egressListingIds: vec![egress],
        startTime: s + 1200,
        expiryTime: s + 2400,
        bandwidth: 200,
    };
    let hops = vec![hop(listings[0], listings[1]), hop(listings[2], listings[3])];
    let mut total = U256::ZERO;
    for h in &hops {
        for &id in h.ingressListingIds.iter().chain(&h.egressListingIds) {
            total += dep.quote(l, id, h.startTime, h.expiryTime, h.bandwidth).unwrap().0;
        }
    }
    assert_eq!(total, U256::from((1 + 2) * 2 * 200 * 1200));
    let key = B256::repeat_byte(0x42);
    let who = vec![owner.address(), as1.address(), as2.address(), buyer.address(), stranger.address()];

    // Failing purchases change nothing but the buyer's gas.
    let unknown = vec![hops[0].clone(), hop(listings[2], U256::from(9999))];
    let too_low = total - U256::from(1);
    for (path, value, name) in [(unknown, total, "UnknownListing"), (hops.clone(), too_low, "PaymentTooLow")] {
        let before = market_state(l, &dep, Some(tok), &who);
        let limits = vec![PriceLimit { token: Address::ZERO, maxTotal: total }];
        let call = Market::buyAndRedeemPathCall {
            hops: path,
            ephemeralPubKey: key,
            deliveryWindow: WINDOW,
            maxPrices: limits,
        };
        let r = l.send(buyer, dep.market, call.abi_encode().into(), value).unwrap();
        assert!(!r.status);
        assert!(r.logs.is_empty());
        let fee = r.fee();
        expect_revert(r.into_result(), name);
        let mut expected = before.clone();
        *expected.balances.get_mut(&buyer.address()).unwrap() -= fee;
        assert_eq!(market_state(l, &dep, Some(tok), &who), expected, "{name} changed state");
    }

    let limit = |max: U256| vec![PriceLimit { token: Address::ZERO, maxTotal: max }];
    let rv = expect_revert(
        dep.buy_and_redeem_path(l, buyer, hops.clone(), key, WINDOW, limit(too_low), total),
        "PriceAboveLimit",
    );
    assert_eq!(rv.arg("limit"), Some(too_low.to_string().as_str()));
    expect_revert(dep.buy_and_redeem_path(l, buyer, hops.clone(), key, WINDOW, vec![], total), "PriceAboveLimit");
    let before = market_state(l, &dep, Some(tok), &who);
    let (requests, receipt) = dep.buy_and_redeem_path(l, buyer, hops, key, WINDOW, limit(total), total).unwrap();
    assert_eq!(requests.len(), 2);
    let filed = dep.redeem_requests(&receipt);
    assert_eq!(filed.iter().map(|ev| ev.isdAs).collect::<Vec<_>>(), vec![IA1, IA2]);
    assert!(filed.iter().all(|ev| ev.requester == buyer.address() && ev.ephemeralPubKey == key));
    assert_eq!(filed.iter().map(|ev| ev.requestId).collect::<Vec<_>>(), requests);
    for ev in &filed {
        assert_eq!((ev.bandwidth, ev.startTime, ev.expiryTime), (200, s + 1200, s + 2400));
        assert_eq!((ev.ingressInterface, ev.egressInterface), (1, 2));
        assert_eq!(dep.owner_of(l, ev.ingressId).unwrap(), dep.assets, "escrowed");
        assert_eq!(dep.owner_of(l, ev.egressId).unwrap(), dep.assets, "escrowed");
    }
    let credited = |who: &Account| dep.proceeds_of(l, who.address(), Address::ZERO).unwrap();
    assert_eq!(credited(as1), U256::from(3 * 200 * 1200));
    assert_eq!(credited(as2), U256::from(3 * 200 * 1200));
    assert_eq!(before.balances[&buyer.address()] - l.balance(buyer.address()).unwrap(), total + receipt.fee());
    assert_eq!(l.balance(dep.market).unwrap(), total);

    // ---------------------------------------------------------------- delivery
    let (r1, r2) = (requests[0], requests[1]);
    let sealed = Bytes::from(vec![7u8; 80]);
    let rv = expect_revert(dep.deliver_reservation(l, stranger, r1, sealed.clone()), "NotRequestAs");
    assert_eq!(rv.to_string(), format!("NotRequestAs(requestId={r1}, caller={})", stranger.address()));
    expect_revert(dep.deliver_reservation(l, as2, r1, sealed.clone()), "NotRequestAs");
    let receipt = dep.deliver_reservation(l, as1, r1, sealed.clone()).unwrap();
    let delivered = dep.deliveries(&receipt);
    assert_eq!(delivered.len(), 1);
    assert_eq!((delivered[0].requestId, delivered[0].requester), (r1, buyer.address()));
    assert_eq!(dep.reservation_of(l, r1).unwrap(), sealed);
    expect_revert(dep.deliver_reservation(l, as1, r1, sealed.clone()), "RequestNotPending");
    expect_revert(dep.owner_of(l, filed[0].ingressId), "UnknownAsset");
    assert_eq!(dep.request_of(l, r1).unwrap().status, request_status::DELIVERED);
    assert_eq!(dep.request_of(l, r2).unwrap().status, request_status::PENDING, "the other hop is still pending");
    assert!(dep.reservation_of(l, r2).unwrap().is_empty());

    // Time moves on: a redeem of an expired asset is refused.
    let z_in = dep.issue(l, as2, &spec(IA2, 5, true, 100, s, s + 60)).unwrap();
    let z_out = dep.issue(l, as2, &spec(IA2, 6, false, 100, s, s + 60)).unwrap();
    let t0 = l.block_timestamp().unwrap();
    l.advance_time(s + 60 - t0).unwrap();
    assert!(l.block_timestamp().unwrap() >= s + 60);
    expect_revert(dep.redeem(l, as2, z_in, z_out, key, WINDOW), "AssetExpired");

    World { dep, token: tok, who }
}
