//! The buyer client against the attacks on purchases ("Market under attack", item 1), on the
//! embedded ledger with a fixed clock: the default purchase (now, on the grid, for 600 s) at
//! every minute of an issuing period, decoys in other tokens (held, lacked, or not a token at
//! all), a plan gone stale (listing delisted, price raised) re-planned, and offers nobody could deliver skipped; and
//! (item 2) a purchase answered in part, reported per request, the rest reclaimed.

use std::sync::Arc;
use std::time::Duration;

use aviary_hummingbird::BuyerKey;
use aviary_market::bindings::RefusingSeller;
use aviary_market::client::{self, ClientError, HopWant, Outcome, RequestState, Window};
use aviary_market::contracts::{deploy_test_token, token};
use aviary_market::registration::{certify, p256_key_from_seed};
use aviary_market::{Account, Address, AssetSpec, Deployment, EmbeddedLedger, Ledger, B256, U256};

const IA: u64 = (1 << 48) | 0xff00_0000_0110;
/// An issuing period's start (on the hour), and the chain's clock before it.
const H: u64 = 1_800_003_600;
const WANT: [HopWant; 1] = [HopWant { isd_as: IA, ingress: 1, egress: 2 }];

struct Fixture {
    l: EmbeddedLedger,
    d: Deployment,
    owner: Account,
    seller: Account,
    buyer: Account,
    native: u64,
}

fn spec(interface_id: u16, is_ingress: bool, start: u64, expiry: u64) -> AssetSpec {
    AssetSpec {
        isd_as: IA,
        interface_id,
        is_ingress,
        bandwidth: 5000,
        start_time: start,
        expiry_time: expiry,
        time_granularity: 60,
        min_bandwidth: 100,
    }
}

/// A registered AS selling in a native marketplace, the chain's clock at `now`.
fn fixture(now: u64) -> Fixture {
    let mut l = EmbeddedLedger::in_memory_with_clock(Arc::new(move || now));
    let a = l.accounts().to_vec();
    let (owner, seller, buyer) = (a[0].clone(), a[1].clone(), a[2].clone());
    let d = Deployment::deploy_all(&mut l, &owner).unwrap();
    let root = p256_key_from_seed(b"root");
    let key = p256_key_from_seed(b"as");
    d.set_isd_root(&mut l, &owner, 1, root.verifying_key()).unwrap();
    let reg = d
        .registration(
            &l,
            IA,
            certify(&root, IA, key.verifying_key(), l.block_timestamp().unwrap() + 86_400 * 30),
            &key,
            seller.address(),
        )
        .unwrap();
    d.register(&mut l, &seller, &reg).unwrap();
    let native = d.create_marketplace(&mut l, &owner, Address::ZERO).unwrap();
    d.register_seller(&mut l, &seller, native).unwrap();
    d.set_approval_for_all(&mut l, &seller, d.market, true).unwrap();
    Fixture { l, d, owner, seller, buyer, native }
}

impl Fixture {
    fn list(&mut self, marketplace: u64, a: &AssetSpec, price: u128) -> U256 {
        let id = self.d.issue(&mut self.l, &self.seller, a).unwrap();
        self.d.create_listing(&mut self.l, &self.seller, marketplace, id, price).unwrap()
    }

    /// What an AS service with hourly periods and two periods ahead has listed at `H`.
    fn two_periods(&mut self) {
        for (interface, is_ingress) in [(1, true), (2, false)] {
            for k in 0..2 {
                self.list(self.native, &spec(interface, is_ingress, H + 3600 * k, H + 3600 * (k + 1)), 1);
            }
        }
    }

    fn buy(&mut self, w: Window, first: Option<client::Plan>) -> Result<(client::Plan, Vec<U256>), ClientError> {
        let key = BuyerKey::derive(b"buyer");
        let terms = client::DeliveryTerms { key: &key, window_s: client::DEFAULT_DELIVERY_WINDOW_S };
        let start = first.map_or(client::StartFrom::Fresh { token: Address::ZERO }, client::StartFrom::Plan);
        client::buy_cheapest(&mut self.l, &self.d, &self.buyer, &WANT, w, start, terms)
    }
}

fn native_payment() -> client::StartFrom {
    client::StartFrom::Fresh { token: Address::ZERO }
}

/// The default purchase of `aviary market buy` started in minute `m` of the period.
fn default_window(m: u64) -> Window {
    let start = (H + 60 * m + 30) / 60 * 60;
    Window { start, expiry: start + 600, bandwidth: 1000 }
}

#[test]
fn the_default_purchase_plans_at_every_minute_of_the_period() {
    let mut f = fixture(H - 60);
    f.two_periods();
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    for m in 0..60 {
        let w = default_window(m);
        let plan =
            client::plan_cheapest(&offers, &WANT, w, Address::ZERO).unwrap_or_else(|e| panic!("minute {m}: {e}"));
        let pieces = if w.expiry > H + 3600 { 2 } else { 1 };
        assert_eq!((plan.hops[0].ingress.len(), plan.hops[0].egress.len()), (pieces, pieces), "minute {m}");
        assert_eq!(plan.total, U256::from(2 * 1000 * 600), "minute {m}");
        for side in [&plan.hops[0].ingress, &plan.hops[0].egress] {
            assert_eq!(side.first().unwrap().start, w.start);
            assert_eq!(side.last().unwrap().expiry, w.expiry);
            assert!(side.windows(2).all(|p| p[0].expiry == p[1].start), "minute {m}: pieces are contiguous");
        }
    }
}

#[test]
fn the_default_purchase_in_the_last_minutes_of_the_period_is_bought() {
    let mut f = fixture(H + 55 * 60 + 30);
    f.two_periods();
    let w = default_window(55);
    let (plan, requests) = f.buy(w, None).unwrap();
    assert_eq!(plan.hops[0].ingress.len(), 2);
    let req = f.d.request_of(&f.l, requests[0]).unwrap();
    for id in [req.ingressId, req.egressId] {
        let a = f.d.asset_of(&f.l, U256::from(id)).unwrap();
        assert_eq!((a.startTime, a.expiryTime, a.bandwidth), (w.start, w.expiry, w.bandwidth));
    }
    // Each side's bandwidth remainders across the period boundary are one listing again.
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    let rest: Vec<_> = offers.iter().filter(|o| o.asset.bandwidth == 4000).collect();
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(rest.iter().all(|o| (o.asset.startTime, o.asset.expiryTime) == (w.start, w.expiry)));
}

#[test]
fn a_cheaper_decoy_in_another_token_is_not_planned() {
    let mut f = fixture(H - 60);
    let tok = deploy_test_token(&mut f.l, &f.owner, "Decoy", "DCY").unwrap();
    let in_token = f.d.create_marketplace(&mut f.l, &f.owner, tok).unwrap();
    f.d.register_seller(&mut f.l, &f.seller, in_token).unwrap();
    f.list(f.native, &spec(1, true, H, H + 3600), 5);
    f.list(f.native, &spec(2, false, H, H + 3600), 5);
    let decoy = f.list(in_token, &spec(1, true, H, H + 3600), 1);
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };

    let offers = client::open_offers(&f.l, &f.d).unwrap();
    let plan = client::plan_cheapest(&offers, &WANT, w, Address::ZERO).unwrap();
    assert!(!plan.listing_ids().contains(&decoy));
    // In the decoy's token nothing covers the egress, and native offers are not mixed in.
    let in_decoy = client::plan_cheapest(&offers, &WANT, w, tok);
    assert!(matches!(in_decoy, Err(ClientError::NoOffer { interface: 2, .. })), "{in_decoy:?}");
    let (bought, _) = f.buy(w, None).unwrap();
    assert!(!bought.listing_ids().contains(&decoy));
    assert_eq!(bought.total, U256::from(2 * 5 * 1000 * 600));

    // Paying in the token, with too little of it: the shortfall is named in the token.
    f.list(in_token, &spec(2, false, H, H + 3600), 1);
    token::mint(&mut f.l, &f.owner, tok, f.buyer.address(), U256::from(5)).unwrap();
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    let funds = client::funds_of(&f.l, f.buyer.address(), tok).unwrap();
    let short = client::plan_affordable(&offers, &WANT, w, tok, funds);
    let needed = U256::from(2 * 1000 * 600);
    assert!(
        matches!(short, Err(ClientError::Unaffordable { token, needed: n, available }) if token == tok && n == needed && available == U256::from(5)),
        "{short:?}"
    );
}

#[test]
fn a_stale_plan_is_replanned_without_the_listing_that_reverted() {
    let mut f = fixture(H - 60);
    let cheap = f.list(f.native, &spec(1, true, H, H + 3600), 1);
    let dear = f.list(f.native, &spec(1, true, H, H + 3600), 3);
    f.list(f.native, &spec(2, false, H, H + 3600), 1);
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    let plan = client::plan_cheapest(&offers, &WANT, w, Address::ZERO).unwrap();
    assert_eq!(plan.hops[0].ingress[0].offer.listing_id, cheap);

    // The seller delists the cheap listing before the purchase lands.
    f.d.delist(&mut f.l, &f.seller, cheap).unwrap();
    let (bought, _) = f.buy(w, Some(plan.clone())).unwrap();
    assert_eq!(bought.hops[0].ingress[0].offer.listing_id, dear);

    // A price raised under the buyer: the purchase reverts (no overcharge) and is re-planned.
    let cheap = f.list(f.native, &spec(1, true, H, H + 3600), 1);
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    let plan = client::plan_cheapest(&offers, &WANT, w, Address::ZERO).unwrap();
    assert_eq!(plan.hops[0].ingress[0].offer.listing_id, cheap);
    f.d.set_price(&mut f.l, &f.seller, cheap, 9).unwrap();
    let credited = |f: &Fixture| f.d.proceeds_of(&f.l, f.seller.address(), Address::ZERO).unwrap();
    let before = credited(&f);
    let (bought, _) = f.buy(w, Some(plan)).unwrap();
    assert_eq!(bought.hops[0].ingress[0].offer.listing_id, dear);
    assert_eq!(
        credited(&f) - before,
        U256::from((3 + 1) * 1000 * 600),
        "the dear listing at its price, not the raised one"
    );
}

#[test]
fn offers_of_an_as_nobody_speaks_for_are_skipped_and_a_failed_plan_is_not_repeated() {
    let mut f = fixture(H - 60);
    f.list(f.native, &spec(1, true, H, H + 3600), 1);
    f.list(f.native, &spec(2, false, H, H + 3600), 1);
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };
    f.d.deregister(&mut f.l, &f.seller).unwrap();
    let offers = client::open_offers(&f.l, &f.d).unwrap();
    assert!(offers.iter().all(|o| !o.issuer_registered));
    let plan = client::plan_cheapest(&offers, &WANT, w, Address::ZERO);
    assert!(matches!(plan, Err(ClientError::NoOffer { .. })), "{plan:?}");

    // A plan that reverts for a reason no listing names (BelowMinBandwidth from the asset
    // contract) is re-planned from fresh offers, which say why nothing serves it.
    let mut g = fixture(H - 60);
    g.list(g.native, &spec(1, true, H, H + 3600), 1);
    g.list(g.native, &spec(2, false, H, H + 3600), 1);
    let offers = client::open_offers(&g.l, &g.d).unwrap();
    let mut plan = client::plan_cheapest(&offers, &WANT, w, Address::ZERO).unwrap();
    plan.bandwidth = 4950; // leaves 50 kbit/s, below the minimum of 100: BelowMinBandwidth
    let err = g.buy(Window { bandwidth: 4950, ..w }, Some(plan)).unwrap_err();
    assert!(matches!(err, ClientError::NoOffer { .. }), "{err:?}");
}

/// "Market under attack", item 2, as the buyer's client sees it: one request delivered as a
/// blob that does not open, one left undelivered past its deadline. Each is reported on its
/// own (never all-or-nothing), the expired one is reclaimed, a buyer that lost its request ids
/// finds them by its key, and expired listings are not offered.
#[test]
fn a_purchase_answered_in_part_is_reported_per_request_and_the_rest_reclaimed() {
    let mut f = fixture(H - 60);
    f.two_periods();
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };
    let key = BuyerKey::derive(b"buyer");
    let terms = client::DeliveryTerms { key: &key, window_s: 120 };
    let mut requests = vec![];
    for _ in 0..2 {
        let (_, ids) = client::buy_cheapest(&mut f.l, &f.d, &f.buyer, &WANT, w, native_payment(), terms).unwrap();
        requests.extend(ids);
    }
    let (silent, garbled) = (requests[0], requests[1]);
    f.d.deliver_reservation(&mut f.l, &f.seller, garbled, vec![9u8; 80].into()).unwrap();

    let outcomes = client::await_outcomes(&f.l, &f.d, &requests, &key, Duration::ZERO).unwrap();
    assert!(
        matches!(outcomes[0], (id, Outcome::Undelivered { state: RequestState::Pending { .. }, .. }) if id == silent)
    );
    assert!(matches!(outcomes[1], (id, Outcome::Unopenable { isd_as: IA, .. }) if id == garbled));
    let all = client::await_deliveries(&f.l, &f.d, &requests, &key, Duration::ZERO);
    assert!(matches!(all, Err(ClientError::Timeout(id, _)) if id == silent), "{all:?}");

    // The buyer lost its request ids: its account and key find them.
    let from = U256::from(1);
    let mine = client::find_requests(&f.l, &f.d, f.buyer.address(), B256::from(key.public()), from).unwrap();
    assert_eq!(mine, requests);
    let other = B256::from(BuyerKey::derive(b"other").public());
    assert!(client::find_requests(&f.l, &f.d, f.buyer.address(), other, from).unwrap().is_empty());

    // Before the deadline nothing is reclaimed; after it, the silent one (only).
    assert!(client::reclaim_expired(&mut f.l, &f.d, &f.buyer, &requests).unwrap().is_empty());
    f.l.advance_time(121).unwrap();
    let outcomes = client::await_outcomes(&f.l, &f.d, &requests, &key, Duration::from_secs(60)).unwrap();
    assert!(matches!(outcomes[0].1, Outcome::Undelivered { state: RequestState::Expired { .. }, .. }));
    assert_eq!(client::reclaim_expired(&mut f.l, &f.d, &f.buyer, &requests).unwrap(), vec![silent]);
    let req = f.d.request_of(&f.l, silent).unwrap();
    for asset in [req.ingressId, req.egressId] {
        assert_eq!(f.d.owner_of(&f.l, U256::from(asset)).unwrap(), f.buyer.address());
    }
    let now = f.l.block_timestamp().unwrap();
    assert_eq!(client::request_state(&req, now), RequestState::Reclaimed);
    assert!(client::reclaim_expired(&mut f.l, &f.d, &f.buyer, &requests).unwrap().is_empty(), "once");

    // Once the listed assets have expired, nothing is offered.
    assert!(!client::open_offers(&f.l, &f.d).unwrap().is_empty());
    f.l.advance_time(H + 7200 - now).unwrap();
    assert!(client::open_offers(&f.l, &f.d).unwrap().is_empty());
}

/// A marketplace anyone created, paid in a token the buyer holds, with a sliver listed at a
/// numerically lower price: a purchase in the native currency neither plans it (1 unit of a
/// token and 1 wei are not comparable) nor touches the buyer's balance of that token.
#[test]
fn a_decoy_in_a_token_the_buyer_holds_takes_none_of_it() {
    let mut f = fixture(H - 60);
    let attacker = f.l.accounts()[3].clone();
    let tok = deploy_test_token(&mut f.l, &attacker, "Six", "SIX").unwrap();
    let decoys = f.d.create_marketplace(&mut f.l, &attacker, tok).unwrap();
    f.d.register_seller(&mut f.l, &f.seller, decoys).unwrap();
    let held = U256::from(10u64).pow(U256::from(18));
    token::mint(&mut f.l, &attacker, tok, f.buyer.address(), held).unwrap();
    let honest = f.list(f.native, &spec(1, true, H, H + 3600), 5);
    f.list(f.native, &spec(2, false, H, H + 3600), 5);
    let decoy = f.list(decoys, &spec(1, true, H, H + 3600), 1);
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };

    let (bought, _) = f.buy(w, None).unwrap();
    assert_eq!(bought.hops[0].ingress[0].offer.listing_id, honest);
    assert!(bought.listing_ids().iter().all(|id| *id != decoy));
    assert_eq!(bought.total, U256::from(2 * 5 * 1000 * 600));
    assert_eq!(token::balance_of(&f.l, tok, f.buyer.address()).unwrap(), held, "no token taken");
    assert_eq!(token::allowance(&f.l, tok, f.buyer.address(), f.d.market).unwrap(), U256::ZERO, "none approved");
}

/// A listing in a marketplace whose "token" reverts on every call: the buyer never calls it,
/// so it neither fails nor blocks a purchase in the native currency on the same side.
#[test]
fn a_listing_whose_token_reverts_does_not_block_buying() {
    let mut f = fixture(H - 60);
    let hostile = f.l.deploy(&f.owner, RefusingSeller::BYTECODE.clone()).unwrap();
    assert!(token::balance_of(&f.l, hostile, f.buyer.address()).is_err(), "its balanceOf reverts");
    let in_hostile = f.d.create_marketplace(&mut f.l, &f.owner, hostile).unwrap();
    f.d.register_seller(&mut f.l, &f.seller, in_hostile).unwrap();
    f.list(in_hostile, &spec(1, true, H, H + 3600), 1);
    let honest = f.list(f.native, &spec(1, true, H, H + 3600), 5);
    f.list(f.native, &spec(2, false, H, H + 3600), 5);
    let w = Window { start: H, expiry: H + 600, bandwidth: 1000 };

    let (bought, _) = f.buy(w, None).unwrap();
    assert_eq!(bought.hops[0].ingress[0].offer.listing_id, honest);
}
