//! Sums a purchase cannot overflow ("Market under attack", item 7): listings at the largest
//! price a listing can hold, each piece's price still fits in 256 bits, but two of them do not.
//! The market names the overflow instead of reverting with `Panic(0x11)`. The client's planner
//! never sends such a purchase: a window this long is longer than a reservation can be, and
//! within the longest one (65 535 s) no piece's price comes near 2^256.

use aviary_market::client::{self, ClientError, HopWant, Window};
use aviary_market::contracts::PathPurchase;
use aviary_market::{Account, Address, AssetSpec, Ledger, B256, U256};

use super::attacks::{native, setup, Fixture};
use super::{expect_revert, GRAN, IA1, IA2, WINDOW};

/// The whole uint64 bandwidth, until the last grid point a uint64 time can hold.
fn huge(isd_as: u64, interface_id: u16, is_ingress: bool, start: u64) -> AssetSpec {
    AssetSpec {
        isd_as,
        interface_id,
        is_ingress,
        bandwidth: u64::MAX,
        start_time: start,
        expiry_time: u64::MAX / u64::from(GRAN) * u64::from(GRAN),
        time_granularity: GRAN,
        min_bandwidth: 10,
    }
}

/// A hop of `seller`'s AS: its ingress at `ingress_price`, its egress at `egress_price`.
fn hop<L: Ledger>(l: &mut L, f: &Fixture, seller: &Account, ia: u64, prices: (u128, u128)) -> PathPurchase {
    let ingress = f.list(l, seller, &huge(ia, 1, true, f.s), prices.0);
    let egress = f.list(l, seller, &huge(ia, 2, false, f.s), prices.1);
    PathPurchase {
        ingressListingIds: vec![ingress],
        egressListingIds: vec![egress],
        startTime: f.s,
        expiryTime: huge(ia, 1, true, f.s).expiry_time,
        bandwidth: u64::MAX,
    }
}

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    bill_overflow(l);
    proceeds_overflow(l);
}

/// Two sellers' pieces at the top price: the buyer's total in the native currency overflows.
fn bill_overflow<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (as1, as2) = (f.as1.clone(), f.as2.clone());
    let hops = vec![hop(l, &f, &as1, IA1, (u128::MAX, 1)), hop(l, &f, &as2, IA2, (u128::MAX, 1))];
    let wants: Vec<HopWant> = [IA1, IA2].map(|isd_as| HopWant { isd_as, ingress: 1, egress: 2 }).to_vec();
    let w = Window { start: hops[0].startTime, expiry: hops[0].expiryTime, bandwidth: u64::MAX };
    let offers = client::open_offers(l, &f.dep).unwrap();
    match client::plan_cheapest(&offers, &wants, w, Address::ZERO) {
        Err(ClientError::TooLong { .. }) => {}
        other => panic!("expected TooLong, got {other:?}"),
    }
    let rv = expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, hops, B256::ZERO, WINDOW, native(U256::MAX), U256::ZERO),
        "PriceSumOverflow",
    );
    assert_eq!(rv.arg("token"), Some(Address::ZERO.to_checksum(None).as_str()));
}

/// One seller's ingress and egress at the top price: its proceeds overflow (checked before the
/// bill, which would overflow too).
fn proceeds_overflow<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let as1 = f.as1.clone();
    let hops = vec![hop(l, &f, &as1, IA1, (u128::MAX, u128::MAX))];
    let rv = expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, hops, B256::ZERO, WINDOW, native(U256::MAX), U256::ZERO),
        "ProceedsOverflow",
    );
    assert_eq!(rv.arg("seller"), Some(as1.address().to_checksum(None).as_str()));
}
