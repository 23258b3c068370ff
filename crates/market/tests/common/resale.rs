//! Resale ("Market under attack", item 5; the Hummingbird paper, §5: a buyer's opportunity cost
//! is to resell), on any ledger: a buyer lists what it bought on the same marketplace, sold by
//! `buy` and within a path purchase beside the issuer's own pieces, paid to the reseller; and
//! what a reseller must not get away with: listing what it does not own (any more), an
//! expired asset, raising its price under a buyer, selling for a revoked issuer, or acting as
//! the issuer.

use aviary_market::client::open_offers;
use aviary_market::contracts::PathPurchase;
use aviary_market::{Account, Address, Bytes, Ledger, B256, U256};

use super::attacks::{native, setup, spec, Fixture};
use super::{expect_revert, IA1, WINDOW};

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    resold_pieces_are_bought_alone_and_on_a_path(l);
    resellers_cannot_cheat(l);
}

/// The buyer of [s, s + 600) of AS 1's ingress listing (all its bandwidth): the listing moves
/// on to [s + 600, s + 3600). Returns the bought asset and the original listing.
fn buy_first_ten_minutes<L: Ledger>(
    l: &mut L,
    f: &Fixture,
    buyer: &Account,
    interface: u16,
    ingress: bool,
) -> (U256, U256) {
    let listing = f.list(l, &f.as1, &spec(IA1, interface, ingress, f.s, f.s + 3600), 1);
    let price = U256::from(1000 * 600);
    let (asset, _) = f.dep.buy(l, buyer, listing, f.s, f.s + 600, 1000, price, price).unwrap();
    (asset, listing)
}

/// The buyer (no AS) becomes a seller and lists its asset at 3 wei per unit.
fn resell<L: Ledger>(l: &mut L, f: &Fixture, reseller: &Account, asset: U256, price: u128) -> U256 {
    if !f.dep.is_seller(l, f.mp, reseller.address()).unwrap() {
        f.dep.register_seller(l, reseller, f.mp).unwrap();
    }
    f.dep.approve(l, reseller, f.dep.market, asset).unwrap();
    f.dep.create_listing(l, reseller, f.mp, asset, price).unwrap()
}

fn resold_pieces_are_bought_alone_and_on_a_path<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let accts = l.accounts().to_vec();
    let (reseller, second) = (&f.buyer, &accts[4]);
    assert_eq!(f.dep.as_of(l, reseller.address()).unwrap(), 0, "the reseller is no AS");
    let (asset, original) = buy_first_ten_minutes(l, &f, reseller, 1, true);
    let resold = resell(l, &f, reseller, asset, 3);

    // The offers tell the resold listing from the issuer's.
    let offers = open_offers(l, &f.dep).unwrap();
    let by_id = |id: U256| offers.iter().find(|o| o.listing_id == id).unwrap();
    assert!(by_id(resold).resale && by_id(resold).issuer_registered);
    assert!(!by_id(original).resale);
    assert_eq!(by_id(resold).listing.seller, reseller.address());

    // A path [s, s + 1200) x 200 whose ingress side takes the resold piece, then the
    // issuer's: the pieces fuse into one asset; each seller is credited its own price.
    let egress = f.list(l, &f.as1, &spec(IA1, 2, false, f.s, f.s + 3600), 1);
    let hop = PathPurchase {
        ingressListingIds: vec![resold, original],
        egressListingIds: vec![egress],
        startTime: f.s,
        expiryTime: f.s + 1200,
        bandwidth: 200,
    };
    let (from_reseller, from_as) = (U256::from(3 * 200 * 600), U256::from(200 * 600 + 200 * 1200));
    let price = from_reseller + from_as;
    let as_before = f.dep.proceeds_of(l, f.as1.address(), Address::ZERO).unwrap();
    let key = B256::repeat_byte(0x42);
    let (ids, _) = f.dep.buy_and_redeem_path(l, second, vec![hop], key, WINDOW, native(price), price).unwrap();
    let req = f.dep.request_of(l, ids[0]).unwrap();
    let bought = f.dep.asset_of(l, U256::from(req.ingressId)).unwrap();
    assert_eq!((bought.startTime, bought.expiryTime, bought.bandwidth), (f.s, f.s + 1200, 200));
    assert_eq!(req.requester, second.address());
    assert_eq!(f.dep.proceeds_of(l, reseller.address(), Address::ZERO).unwrap(), from_reseller);
    assert_eq!(f.dep.proceeds_of(l, f.as1.address(), Address::ZERO).unwrap() - as_before, from_as);
    // The reseller's bandwidth remainder stays listed by the reseller.
    let rest = f.dep.listing_of(l, resold).unwrap();
    assert_eq!(rest.seller, reseller.address());
    assert_eq!(f.dep.asset_of(l, U256::from(rest.assetId)).unwrap().bandwidth, 800);

    // Bought whole with `buy`, paid by pull to the reseller, who withdraws.
    let whole = U256::from(3 * 800 * 600);
    let (got, _) = f.dep.buy(l, second, resold, f.s, f.s + 600, 800, whole, whole).unwrap();
    assert_eq!(f.dep.owner_of(l, got).unwrap(), second.address());
    let r = f.dep.withdraw(l, reseller, Address::ZERO).unwrap();
    assert_eq!(r, from_reseller + whole);
    assert_eq!(f.dep.proceeds_of(l, reseller.address(), Address::ZERO).unwrap(), U256::ZERO);

    // The issuer delivers to the second buyer, whoever sold the pieces.
    f.dep.deliver_reservation(l, &f.as1, ids[0], Bytes::from(vec![7u8; 80])).unwrap();
}

fn resellers_cannot_cheat<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let accts = l.accounts().to_vec();
    let (reseller, victim) = (&f.buyer, &accts[4]);
    let (asset, _) = buy_first_ten_minutes(l, &f, reseller, 1, true);
    let (egress, _) = buy_first_ten_minutes(l, &f, reseller, 2, false);
    f.dep.register_seller(l, reseller, f.mp).unwrap();
    f.dep.set_approval_for_all(l, reseller, f.dep.market, true).unwrap();

    // An asset it does not own: the issuer's own unlisted asset, or another buyer's.
    let not_mine = f.dep.issue(l, &f.as1, &spec(IA1, 3, true, f.s, f.s + 3600)).unwrap();
    let rv = expect_revert(f.dep.create_listing(l, reseller, f.mp, not_mine, 1), "NotAssetOwner");
    assert_eq!(rv.arg("caller"), Some(reseller.address().to_string().as_str()));
    // Redeemed: in escrow (owned by the asset contract), then delivered (burnt).
    let key = B256::repeat_byte(0x42);
    let request = f.dep.redeem(l, reseller, asset, egress, key, WINDOW).unwrap();
    expect_revert(f.dep.create_listing(l, reseller, f.mp, asset, 1), "NotAssetOwner");
    // A reseller gets no issuer power: it cannot deliver, nor issue for the AS.
    expect_revert(f.dep.deliver_reservation(l, reseller, request, Bytes::from(vec![7u8; 80])), "NotRequestAs");
    expect_revert(f.dep.issue(l, reseller, &spec(IA1, 1, true, f.s, f.s + 3600)), "NotIssuingAs");
    f.dep.deliver_reservation(l, &f.as1, request, Bytes::from(vec![7u8; 80])).unwrap();
    expect_revert(f.dep.create_listing(l, reseller, f.mp, egress, 1), "NotAssetOwner");

    // Front-running its own price: the buyer's limit holds, for `buy` and for a path.
    let (asset, _) = buy_first_ten_minutes(l, &f, reseller, 4, true);
    let listing = resell(l, &f, reseller, asset, 1);
    let quoted = U256::from(200 * 600);
    f.dep.set_price(l, reseller, listing, 50).unwrap();
    let rv = expect_revert(
        f.dep.buy(l, victim, listing, f.s, f.s + 600, 200, quoted, quoted * U256::from(50)),
        "PriceAboveLimit",
    );
    assert_eq!(rv.arg("limit"), Some(quoted.to_string().as_str()));
    let eg = f.list(l, &f.as1, &spec(IA1, 5, false, f.s, f.s + 3600), 1);
    let hop = PathPurchase {
        ingressListingIds: vec![listing],
        egressListingIds: vec![eg],
        startTime: f.s,
        expiryTime: f.s + 600,
        bandwidth: 200,
    };
    let limit = quoted * U256::from(2);
    let r = f.dep.buy_and_redeem_path(l, victim, vec![hop], key, WINDOW, native(limit), limit * U256::from(50));
    expect_revert(r, "PriceAboveLimit");
    let before = l.balance(victim.address()).unwrap();
    assert!(before > U256::ZERO);

    // The issuer is revoked: its resold assets are not sold either; the reseller takes it back.
    f.dep.revoke(l, &f.owner, IA1).unwrap();
    let big = quoted * U256::from(50);
    let rv = expect_revert(f.dep.buy(l, victim, listing, f.s, f.s + 600, 200, big, big), "IssuerNotRegistered");
    assert_eq!(rv.arg("listingId"), Some(listing.to_string().as_str()));
    f.dep.delist(l, reseller, listing).unwrap();
    assert_eq!(f.dep.owner_of(l, asset).unwrap(), reseller.address());

    // An expired asset is not listed at all.
    let now = l.block_timestamp().unwrap();
    l.advance_time(f.s + 600 - now).unwrap();
    let rv = expect_revert(f.dep.create_listing(l, reseller, f.mp, asset, 1), "AssetExpired");
    assert_eq!(rv.arg("expiryTime"), Some((f.s + 600).to_string().as_str()));
}
