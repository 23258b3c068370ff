//! No stranded money or assets ("Market under attack", item 2), on any ledger: an AS that
//! misses the delivery deadline (the buyer reclaims, a late delivery reverts), an AS that
//! "delivers" an empty or malformed blob, a listing bought after its asset expired, and an
//! asset sent to the market outside createListing.

use aviary_market::contracts::{request_status, PathPurchase, MAX_DELIVERY_WINDOW_S};
use aviary_market::{Address, Bytes, Ledger, B256, U256};

use super::attacks::{native, setup, spec, Fixture};
use super::{expect_revert, IA1, WINDOW};

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    missed_deadline_is_reclaimed(l);
    malformed_blobs_are_refused(l);
    expired_listings_cannot_be_bought(l);
    assets_sent_to_the_market_are_recovered(l);
}

const BW: u64 = 1000;

/// Lists an ingress (interface 1) and an egress (interface 2) asset of AS 1 for [s, s + 3600)
/// and buys [s, s + 600) of both as one hop, to be delivered within `window`; returns the
/// request id.
fn buy_hop<L: Ledger>(l: &mut L, f: &Fixture, window: u32) -> U256 {
    let price = U256::from(2 * 200 * 600);
    let key = B256::repeat_byte(0x42);
    let hop = list_hop(l, f);
    let (requests, _) = f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], key, window, native(price), price).unwrap();
    requests[0]
}

/// Lists an ingress (interface 1) and an egress (interface 2) asset of AS 1 for [s, s + 3600);
/// the hop that buys [s, s + 600) of both at 200 kbit/s.
fn list_hop<L: Ledger>(l: &mut L, f: &Fixture) -> PathPurchase {
    let ingress = f.list(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600), 1);
    let egress = f.list(l, &f.as1, &spec(IA1, 2, false, f.s, f.s + 3600), 1);
    PathPurchase {
        ingressListingIds: vec![ingress],
        egressListingIds: vec![egress],
        startTime: f.s,
        expiryTime: f.s + 600,
        bandwidth: 200,
    }
}

/// A sealed reservation's shape: 80 bytes, non-zero encapsulated key.
fn well_formed_blob() -> Bytes {
    Bytes::from(vec![7u8; 80])
}

/// The AS stays silent past the deadline: the buyer (and nobody else) takes both assets back,
/// once; the AS's late delivery reverts; the buyer redeems the returned assets again.
fn missed_deadline_is_reclaimed<L: Ledger>(l: &mut L) {
    let f = setup(l);
    for bad in [0, MAX_DELIVERY_WINDOW_S + 1] {
        let hop = list_hop(l, &f);
        let price = U256::from(2 * 200 * 600);
        let r = f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, bad, native(price), price);
        assert_eq!(expect_revert(r, "BadDeliveryWindow").arg("deliveryWindow"), Some(bad.to_string().as_str()));
    }

    let id = buy_hop(l, &f, 60);
    let req = f.dep.request_of(l, id).unwrap();
    assert!(req.deadline >= l.block_timestamp().unwrap() && req.deadline <= l.block_timestamp().unwrap() + 60);
    let (ingress, egress) = (U256::from(req.ingressId), U256::from(req.egressId));
    // Before the deadline: nobody reclaims, not even the buyer.
    expect_revert(f.dep.reclaim(l, &f.buyer, id), "DeadlineNotPassed");
    let now = l.block_timestamp().unwrap();
    l.advance_time(req.deadline + 1 - now).unwrap();
    // After it: the AS's delivery is too late; only the buyer reclaims.
    let rv = expect_revert(f.dep.deliver_reservation(l, &f.as1, id, well_formed_blob()), "DeliveryTooLate");
    assert_eq!(rv.arg("deadline"), Some(req.deadline.to_string().as_str()));
    expect_revert(f.dep.reclaim(l, &f.as1, id), "NotRequester");
    expect_revert(f.dep.reclaim(l, &f.owner, id), "NotRequester");
    f.dep.reclaim(l, &f.buyer, id).unwrap();
    assert_eq!(f.dep.request_of(l, id).unwrap().status, request_status::RECLAIMED);
    for a in [ingress, egress] {
        assert_eq!(f.dep.owner_of(l, a).unwrap(), f.buyer.address(), "the assets are the buyer's again");
    }
    expect_revert(f.dep.reclaim(l, &f.buyer, id), "RequestNotPending");
    expect_revert(f.dep.deliver_reservation(l, &f.as1, id, well_formed_blob()), "RequestNotPending");

    // The buyer redeems them again, with a new key and a longer window; the AS delivers.
    let again = f.dep.redeem(l, &f.buyer, ingress, egress, B256::repeat_byte(0x43), WINDOW).unwrap();
    f.dep.deliver_reservation(l, &f.as1, again, well_formed_blob()).unwrap();
    assert_eq!(f.dep.request_of(l, again).unwrap().status, request_status::DELIVERED);
    expect_revert(f.dep.reclaim(l, &f.buyer, again), "RequestNotPending");
}

/// Empty, short, long and zero-key blobs are refused; the request stays pending, and after
/// its deadline the buyer reclaims it.
fn malformed_blobs_are_refused<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let id = buy_hop(l, &f, 60);
    let mut zero_key = vec![7u8; 80];
    zero_key[..32].fill(0);
    for (blob, len) in [(vec![], 0), (vec![7u8; 79], 79), (vec![7u8; 81], 81), (zero_key, 80)] {
        let rv = expect_revert(f.dep.deliver_reservation(l, &f.as1, id, blob.into()), "MalformedReservation");
        assert_eq!(rv.arg("length"), Some(len.to_string().as_str()));
    }
    assert_eq!(f.dep.request_of(l, id).unwrap().status, request_status::PENDING);
    assert!(f.dep.reservation_of(l, id).unwrap().is_empty());
    let deadline = f.dep.request_of(l, id).unwrap().deadline;
    let now = l.block_timestamp().unwrap();
    l.advance_time(deadline + 1 - now).unwrap();
    f.dep.reclaim(l, &f.buyer, id).unwrap();
}

/// A listing whose asset has expired is not sold (alone or in a path); nor is a piece of a
/// live listing that lies wholly in the past.
fn expired_listings_cannot_be_bought<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let short = f.list(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 600), 1);
    let long = f.list(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600), 1);
    let egress = f.list(l, &f.as1, &spec(IA1, 2, false, f.s, f.s + 3600), 1);
    let now = l.block_timestamp().unwrap();
    l.advance_time(f.s + 600 - now).unwrap();
    let price = U256::from(BW * 600);
    let rv = expect_revert(f.dep.buy(l, &f.buyer, short, f.s, f.s + 600, BW, price, price), "ListingExpired");
    assert_eq!(rv.arg("listingId"), Some(short.to_string().as_str()));
    let rv = expect_revert(f.dep.buy(l, &f.buyer, long, f.s, f.s + 600, BW, price, price), "WindowInPast");
    assert_eq!(rv.arg("expiryTime"), Some((f.s + 600).to_string().as_str()));
    let hop = PathPurchase {
        ingressListingIds: vec![short],
        egressListingIds: vec![egress],
        startTime: f.s,
        expiryTime: f.s + 600,
        bandwidth: BW,
    };
    let two = price * U256::from(2);
    let r = f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, native(two), two);
    expect_revert(r, "ListingExpired");
    // The live rest of the long listing still sells.
    f.dep.buy(l, &f.buyer, long, f.s + 600, f.s + 1200, BW, price, price).unwrap();
    // The seller takes the expired one back.
    f.dep.delist(l, &f.as1, short).unwrap();
}

/// Assets transferred to the market without createListing go back to their sender, and only
/// to it; listed assets and assets that moved on cannot be "recovered" by anyone.
fn assets_sent_to_the_market_are_recovered<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let stray = f.dep.issue(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600)).unwrap();
    f.dep.transfer_from(l, &f.as1, f.as1.address(), f.dep.market, stray).unwrap();
    assert_eq!(f.dep.owner_of(l, stray).unwrap(), f.dep.market);
    assert_eq!(f.dep.sender_of(l, stray).unwrap(), f.as1.address());
    let rv = expect_revert(f.dep.recover(l, &f.buyer, stray), "NotRecoverable");
    assert_eq!(rv.arg("caller"), Some(f.buyer.address().to_string().as_str()));
    f.dep.recover(l, &f.as1, stray).unwrap();
    assert_eq!(f.dep.owner_of(l, stray).unwrap(), f.as1.address());
    assert_eq!(f.dep.sender_of(l, stray).unwrap(), Address::ZERO);
    expect_revert(f.dep.recover(l, &f.as1, stray), "NotRecoverable");

    // Once listed (the market took it itself), its former sender cannot pull it out.
    let listing = f.dep.create_listing(l, &f.as1, f.mp, stray, 1).unwrap();
    expect_revert(f.dep.recover(l, &f.as1, stray), "NotRecoverable");
    assert_eq!(f.dep.listing_of(l, listing).unwrap().seller, f.as1.address());

    // A buyer's asset sent to the market by mistake comes back to the buyer, not to the AS.
    let price = U256::from(BW * 600);
    let (piece, _) = f.dep.buy(l, &f.buyer, listing, f.s, f.s + 600, BW, price, price).unwrap();
    f.dep.transfer_from(l, &f.buyer, f.buyer.address(), f.dep.market, piece).unwrap();
    expect_revert(f.dep.recover(l, &f.as1, piece), "NotRecoverable");
    f.dep.recover(l, &f.buyer, piece).unwrap();
    assert_eq!(f.dep.owner_of(l, piece).unwrap(), f.buyer.address());
}
