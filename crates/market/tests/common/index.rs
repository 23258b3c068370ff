//! The market's index of open listings per interface side ("Market under attack", item 6), on
//! any ledger: after every kind of change (listing, whole and partial purchases, a path bought
//! across listings with its leftovers merged, delisting, merging, closing an expired listing)
//! the index holds exactly the open listings, each under its asset's side, and the client reads
//! only the sides it asks for.

use std::collections::{BTreeMap, BTreeSet};

use aviary_market::client::{self, HopWant};
use aviary_market::contracts::{IndexedSide, PathPurchase};
use aviary_market::{Address, Deployment, Ledger, B256, U256};

use super::attacks::{native, setup, spec};
use super::{expect_revert, IA1, IA2, WINDOW};

const BW: u64 = 1000;

/// The open listings by side, read from the index (pages of 2, to cross page boundaries).
pub fn indexed<L: Ledger + ?Sized>(l: &L, dep: &Deployment) -> BTreeMap<IndexedSide, BTreeSet<U256>> {
    let mut out = BTreeMap::new();
    for side in dep.listed_sides(l).unwrap() {
        let n = dep.open_listing_count(l, side).unwrap();
        let mut ids = BTreeSet::new();
        for offset in (0..n).step_by(2) {
            for (i, open) in dep.open_listings(l, side, offset, 2).unwrap().into_iter().enumerate() {
                assert_eq!(dep.listing_of(l, open.listingId).unwrap(), open.listing, "stale listing in the index");
                assert_eq!(
                    u64::from(open.listing.openSlot),
                    offset + i as u64 + 1,
                    "listing's slot != its position + 1"
                );
                assert!(ids.insert(open.listingId), "listing {} indexed twice", open.listingId);
            }
        }
        assert_eq!(ids.len() as u64, n);
        if !ids.is_empty() {
            out.insert(side, ids);
        }
    }
    out
}

/// The open listings by side, from every listing ever created.
pub fn live<L: Ledger + ?Sized>(l: &L, dep: &Deployment) -> BTreeMap<IndexedSide, BTreeSet<U256>> {
    let mut out: BTreeMap<IndexedSide, BTreeSet<U256>> = BTreeMap::new();
    let next = dep.next_listing_id(l).unwrap().to::<u64>();
    for id in (1..next).map(U256::from) {
        let listing = dep.listing_of(l, id).unwrap();
        if listing.seller == Address::ZERO {
            continue;
        }
        let a = dep.asset_of(l, U256::from(listing.assetId)).unwrap();
        let side = IndexedSide { isd_as: a.isdAs, interface: a.interfaceId, is_ingress: a.isIngress };
        out.entry(side).or_default().insert(id);
    }
    out
}

fn check<L: Ledger>(l: &L, dep: &Deployment, after: &str) {
    assert_eq!(indexed(l, dep), live(l, dep), "index differs from the open listings after {after}");
}

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    index_follows_every_change(l);
}

fn index_follows_every_change<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (s, h) = (f.s, 3600);
    let price = |secs: u64| U256::from(BW * secs);
    // Two hours per side of AS 1 (interfaces 1 in, 2 out), one of AS 2, and a third side.
    let mut ids = vec![];
    for k in 0..2 {
        ids.push(f.list(l, &f.as1, &spec(IA1, 1, true, s + h * k, s + h * (k + 1)), 1));
        ids.push(f.list(l, &f.as1, &spec(IA1, 2, false, s + h * k, s + h * (k + 1)), 1));
    }
    let other = f.list(l, &f.as2, &spec(IA2, 1, true, s, s + h), 1);
    let third = f.list(l, &f.as1, &spec(IA1, 3, false, s, s + h), 1);
    check(l, &f.dep, "listing");
    let in1 = IndexedSide { isd_as: IA1, interface: 1, is_ingress: true };
    assert_eq!(f.dep.open_listing_count(l, in1).unwrap(), 2);
    assert_eq!(
        f.dep.listed_sides_of(l, IA2).unwrap(),
        vec![IndexedSide { isd_as: IA2, interface: 1, is_ingress: true }]
    );

    // The client reads the sides a hop needs, and only those.
    let want = [HopWant { isd_as: IA1, ingress: 1, egress: 2 }];
    let offers = client::open_offers_on(l, &f.dep, &client::sides_of(&want)).unwrap();
    let got: BTreeSet<U256> = offers.iter().map(|o| o.listing_id).collect();
    assert_eq!(got, ids.iter().copied().collect());
    assert_eq!(client::open_offers(l, &f.dep).unwrap().len(), 6);

    // A piece from the middle: the remainders are listed and indexed under the same side.
    f.dep.buy(l, &f.buyer, other, s + 600, s + 1200, BW / 2, price(300), price(300)).unwrap();
    check(l, &f.dep, "a purchase with remainders");
    // The whole of a listing: it leaves the index.
    f.dep.buy(l, &f.buyer, third, s, s + h, BW, price(h), price(h)).unwrap();
    check(l, &f.dep, "a whole purchase");
    // A hop across the two hours of each side: four pieces, leftovers merged back.
    let hop = PathPurchase {
        ingressListingIds: vec![ids[0], ids[2]],
        egressListingIds: vec![ids[1], ids[3]],
        startTime: s + h - 600,
        expiryTime: s + h + 600,
        bandwidth: BW / 2,
    };
    let total = price(1200);
    f.dep.buy_and_redeem_path(l, &f.buyer, vec![hop], B256::ZERO, WINDOW, native(total), total).unwrap();
    check(l, &f.dep, "a path purchase across listings");
    // Merging two listings closes one; delisting closes another.
    let a = f.list(l, &f.as2, &spec(IA2, 1, true, s + h, s + 2 * h), 1);
    let b = f.list(l, &f.as2, &spec(IA2, 1, true, s + 2 * h, s + 3 * h), 1);
    f.dep.merge_listings(l, &f.as2, a, b).unwrap();
    check(l, &f.dep, "mergeListings");
    f.dep.delist(l, &f.as2, a).unwrap();
    check(l, &f.dep, "delist");

    // An expired listing stays indexed (the client skips it) until anyone closes it.
    let short = f.list(l, &f.as2, &spec(IA2, 4, false, s, s + 600), 1);
    expect_revert(f.dep.close_expired(l, &f.buyer, short), "ListingNotExpired");
    let now = l.block_timestamp().unwrap();
    l.advance_time(s + 600 - now).unwrap();
    check(l, &f.dep, "expiry");
    assert!(client::open_offers(l, &f.dep).unwrap().iter().all(|o| o.listing_id != short));
    let asset = f.dep.listing_of(l, short).unwrap().assetId;
    f.dep.close_expired(l, &f.buyer, short).unwrap();
    check(l, &f.dep, "closeExpired");
    assert_eq!(f.dep.asset_of(l, U256::from(asset)).unwrap().owner, f.as2.address(), "back with its seller");
    expect_revert(f.dep.close_expired(l, &f.buyer, short), "UnknownListing");
}
