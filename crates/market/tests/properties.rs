//! Contract invariants over random operation sequences on the embedded ledger (issue 4, item 6):
//! - an AS's issued bandwidth x time is conserved by split, fuse, transfer, list, buy and
//!   redeem and listing merges (only delivery removes the volume of the two delivered assets);
//! - only an asset's owner transfers, splits, fuses, lists or redeems it (random callers);
//!   only the issuing AS delivers; only the seller delists;
//! - no asset is redeemed twice;
//! - the market holds exactly the sellers' proceeds (pull payments: buys credit, withdrawals pay);
//! - a failed transaction changes nothing but the caller's nonce and fee.
//! - the market's index holds exactly the open listings, each under its asset's interface side.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, OnceLock};

use alloy_sol_types::SolCall;
use aviary_market::bindings::{BandwidthAssets as BA, Market};
use aviary_market::contracts::{request_status, Asset, Deployment};
use aviary_market::registration::{certify, p256_key_from_seed};
use aviary_market::{Account, Address, AssetSpec, Bytes, EmbeddedLedger, Ledger, Receipt, B256, U256};
use common::{market_state, IA1, IA2};
use proptest::prelude::*;

const T0: u64 = 1_900_000_000;
const START: u64 = (T0 / 3600 + 2) * 3600;
const G: u64 = 60;

struct Base {
    ledger: EmbeddedLedger,
    dep: Deployment,
    marketplace: u64,
    issued: BTreeMap<u64, u128>,
}

/// Deployed contracts, two registered selling ASes with assets: built once, forked per case.
fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut l = EmbeddedLedger::in_memory_with_clock(Arc::new(|| T0));
        let a = l.accounts().to_vec();
        let dep = Deployment::deploy_all(&mut l, &a[0]).unwrap();
        let root = p256_key_from_seed(b"root");
        dep.set_isd_root(&mut l, &a[0], 1, root.verifying_key()).unwrap();
        let marketplace = dep.create_marketplace(&mut l, &a[0], Address::ZERO).unwrap();
        let mut issued = BTreeMap::new();
        for (acct, ia) in [(&a[1], IA1), (&a[2], IA2)] {
            let key = p256_key_from_seed(&ia.to_be_bytes());
            let reg = dep
                .registration(
                    &l,
                    ia,
                    certify(&root, ia, key.verifying_key(), l.block_timestamp().unwrap() + 86_400 * 30),
                    &key,
                    acct.address(),
                )
                .unwrap();
            dep.register(&mut l, acct, &reg).unwrap();
            dep.register_seller(&mut l, acct, marketplace).unwrap();
            dep.set_approval_for_all(&mut l, acct, dep.market, true).unwrap();
            for (iface, ingress, start) in
                [(1, true, START), (2, false, START), (1, true, START + 3600), (2, false, START + 3600)]
            {
                let spec = AssetSpec {
                    isd_as: ia,
                    interface_id: iface,
                    is_ingress: ingress,
                    bandwidth: 1000,
                    start_time: start,
                    expiry_time: start + 3600,
                    time_granularity: G as u32,
                    min_bandwidth: 50,
                };
                dep.issue(&mut l, acct, &spec).unwrap();
                *issued.entry(ia).or_default() += 1000 * 3600;
            }
        }
        Base { ledger: l, dep, marketplace, issued }
    })
}

/// Which asset, listing or request an operation acts on: mostly (`own`) one that the caller
/// may act on, so that many operations succeed; otherwise any id ever used (or the next one),
/// to test that the others fail.
#[derive(Clone, Copy, Debug)]
struct Sel {
    own: bool,
    i: u8,
}

#[derive(Clone, Debug)]
enum Op {
    Transfer { caller: usize, asset: Sel, to: usize },
    SplitTime { caller: usize, asset: Sel, k: u8, off_grid: bool },
    SplitBw { caller: usize, asset: Sel, frac: u8 },
    FuseTime { caller: usize, a: Sel, b: Sel },
    FuseBw { caller: usize, a: Sel, b: Sel },
    List { caller: usize, asset: Sel, price: u8 },
    Delist { caller: usize, listing: Sel },
    Buy { caller: usize, listing: Sel, k0: u8, k1: u8, frac: u8 },
    Redeem { caller: usize, ingress: Sel, egress: Sel },
    Deliver { caller: usize, request: Sel },
    Merge { caller: usize, a: Sel, b: Sel },
    Withdraw { caller: usize },
}

/// Callers: the two ASes (accounts 1, 2) and two users (3, 4).
fn caller() -> impl Strategy<Value = usize> {
    1usize..=4
}

fn sel() -> impl Strategy<Value = Sel> {
    (prop::bool::weighted(0.8), any::<u8>()).prop_map(|(own, i)| Sel { own, i })
}

fn op() -> impl Strategy<Value = Op> {
    let n = any::<u8>;
    prop_oneof![
        (caller(), sel(), caller()).prop_map(|(caller, asset, to)| Op::Transfer { caller, asset, to }),
        (caller(), sel(), n(), prop::bool::weighted(0.2)).prop_map(|(caller, asset, k, o)| Op::SplitTime {
            caller,
            asset,
            k,
            off_grid: o
        }),
        (caller(), sel(), n()).prop_map(|(caller, asset, frac)| Op::SplitBw { caller, asset, frac }),
        (caller(), sel(), sel()).prop_map(|(caller, a, b)| Op::FuseTime { caller, a, b }),
        (caller(), sel(), sel()).prop_map(|(caller, a, b)| Op::FuseBw { caller, a, b }),
        (caller(), sel(), n()).prop_map(|(caller, asset, price)| Op::List { caller, asset, price }),
        (caller(), sel()).prop_map(|(caller, listing)| Op::Delist { caller, listing }),
        (caller(), sel(), n(), n(), n()).prop_map(|(caller, listing, k0, k1, frac)| Op::Buy {
            caller,
            listing,
            k0,
            k1,
            frac
        }),
        (caller(), sel(), sel()).prop_map(|(caller, ingress, egress)| Op::Redeem { caller, ingress, egress }),
        (caller(), sel()).prop_map(|(caller, request)| Op::Deliver { caller, request }),
        (caller(), sel(), sel()).prop_map(|(caller, a, b)| Op::Merge { caller, a, b }),
        caller().prop_map(|caller| Op::Withdraw { caller }),
    ]
}

struct Run {
    l: EmbeddedLedger,
    dep: Deployment,
    marketplace: u64,
    accounts: Vec<Account>,
    /// Volume issued minus volume delivered, per AS.
    volume: BTreeMap<u64, u128>,
    redeemed: HashSet<U256>,
}

fn vol(a: &Asset) -> u128 {
    a.bandwidth as u128 * (a.expiryTime - a.startTime) as u128
}

impl Run {
    /// Any id ever used, or the next unused one.
    fn any_id(next: U256, i: u8) -> U256 {
        U256::from(1 + (i as u64) % next.to::<u64>())
    }

    fn all_assets(&self) -> Vec<(U256, Asset)> {
        let next = self.dep.next_asset_id(&self.l).unwrap().to::<u64>();
        (1..next).map(|i| (U256::from(i), self.dep.asset_of(&self.l, U256::from(i)).unwrap())).collect()
    }

    /// An asset by `sel`: one of `owner`'s for which `filter` holds if `sel.own` and there is one.
    fn asset(&self, sel: Sel, owner: Address, filter: impl Fn(&Asset) -> bool) -> (U256, Asset) {
        let all = self.all_assets();
        let mine: Vec<_> = all.iter().filter(|(_, a)| a.owner == owner && filter(a)).collect();
        if sel.own && !mine.is_empty() {
            return mine[sel.i as usize % mine.len()].clone();
        }
        let id = Self::any_id(U256::from(all.len() + 1), sel.i);
        (id, self.dep.asset_of(&self.l, id).unwrap())
    }

    /// A listing by `sel`: a live one (of `seller` if given) if `sel.own` and there is one.
    fn listing(&self, sel: Sel, seller: Option<Address>) -> U256 {
        let next = self.dep.next_listing_id(&self.l).unwrap();
        let live: Vec<U256> = (1..next.to::<u64>())
            .map(U256::from)
            .filter(|&id| {
                let l = self.dep.listing_of(&self.l, id).unwrap();
                l.seller != Address::ZERO && seller.is_none_or(|s| s == l.seller)
            })
            .collect();
        if sel.own && !live.is_empty() {
            return live[sel.i as usize % live.len()];
        }
        Self::any_id(next, sel.i)
    }

    fn send(&mut self, caller: Address, to: Address, call: impl SolCall, value: U256) -> Receipt {
        let from = self.accounts.iter().find(|a| a.address() == caller).unwrap().clone();
        self.l.send(&from, to, call.abi_encode().into(), value).unwrap()
    }

    /// Apply `op`; returns its receipt, the caller, and whether the caller was entitled to act
    /// (if not, the operation must fail).
    fn apply(&mut self, op: &Op) -> (Receipt, Address, bool) {
        let addresses: Vec<Address> = self.accounts.iter().map(|a| a.address()).collect();
        let addr = |c: usize| addresses[c];
        let (assets, market) = (self.dep.assets, self.dep.market);
        match *op {
            Op::Transfer { caller, asset, to } => {
                let (me, to) = (addr(caller), addr(to));
                let (id, a) = self.asset(asset, me, |_| true);
                let r = self.send(me, assets, BA::transferFromCall { from: a.owner, to, id }, U256::ZERO);
                if r.status {
                    assert_eq!(self.dep.owner_of(&self.l, id).unwrap(), to);
                }
                (r, me, a.owner == me)
            }
            Op::SplitTime { caller, asset, k, off_grid } => {
                let me = addr(caller);
                let (id, a) = self.asset(asset, me, |a| a.expiryTime - a.startTime > G);
                let slots = a.expiryTime.saturating_sub(a.startTime) / G;
                let time = a.startTime + (1 + k as u64 % slots.max(1)) * G - off_grid as u64;
                (self.send(me, assets, BA::splitTimeCall { id, time }, U256::ZERO), me, a.owner == me)
            }
            Op::SplitBw { caller, asset, frac } => {
                let me = addr(caller);
                let (id, a) = self.asset(asset, me, |_| true);
                let bw = a.bandwidth * frac as u64 / 255;
                (self.send(me, assets, BA::splitBandwidthCall { id, newBandwidth: bw }, U256::ZERO), me, a.owner == me)
            }
            Op::FuseTime { caller, a, b } | Op::FuseBw { caller, a, b } => {
                let me = addr(caller);
                let (ia, x) = self.asset(a, me, |_| true);
                let (ib, y) = match op {
                    Op::FuseTime { .. } => {
                        self.asset(b, me, |y| y.startTime == x.expiryTime && y.bandwidth == x.bandwidth)
                    }
                    _ => self.asset(b, me, |y| y.startTime == x.startTime && y.expiryTime == x.expiryTime),
                };
                let r = match op {
                    Op::FuseTime { .. } => self.send(me, assets, BA::fuseTimeCall { a: ia, b: ib }, U256::ZERO),
                    _ => self.send(me, assets, BA::fuseBandwidthCall { a: ia, b: ib }, U256::ZERO),
                };
                (r, me, x.owner == me && y.owner == me)
            }
            Op::List { caller, asset, price } => {
                let me = addr(caller);
                let (id, a) = self.asset(asset, me, |_| true);
                let call = Market::createListingCall {
                    marketplaceId: self.marketplace,
                    assetId: id,
                    pricePerUnit: price as u128,
                };
                (self.send(me, market, call, U256::ZERO), me, a.owner == me)
            }
            Op::Delist { caller, listing } => {
                let me = addr(caller);
                let id = self.listing(listing, Some(me));
                let seller = self.dep.listing_of(&self.l, id).unwrap().seller;
                (self.send(me, market, Market::delistCall { listingId: id }, U256::ZERO), me, seller == me)
            }
            Op::Buy { caller, listing, k0, k1, frac } => {
                let me = addr(caller);
                let id = self.listing(listing, None);
                let l = self.dep.listing_of(&self.l, id).unwrap();
                let a = self.dep.asset_of(&self.l, U256::from(l.assetId)).unwrap();
                let slots = a.expiryTime.saturating_sub(a.startTime) / G;
                let s = a.startTime + (k0 as u64 % slots.max(1)) * G;
                let e = (s + (1 + k1 as u64 % slots.max(1)) * G).min(a.expiryTime.max(s + G));
                let bw = (a.bandwidth * frac as u64 / 255).max(1);
                let price = self.dep.quote(&self.l, id, s, e, bw).map_or(U256::ZERO, |q| q.0);
                let call =
                    Market::buyCall { listingId: id, startTime: s, expiryTime: e, bandwidth: bw, maxPrice: price };
                let r = self.send(me, market, call, price);
                if r.status {
                    let piece = aviary_market::contracts::first_event::<Market::Purchased>(&r, market).unwrap().assetId;
                    assert_eq!(self.dep.owner_of(&self.l, piece).unwrap(), me, "the buyer owns the piece");
                }
                (r, me, true)
            }
            Op::Redeem { caller, ingress, egress } => {
                let me = addr(caller);
                let (ii, x) = self.asset(ingress, me, |a| a.isIngress);
                let (ie, y) = self.asset(egress, me, |y| {
                    !y.isIngress
                        && (y.isdAs, y.bandwidth, y.startTime, y.expiryTime)
                            == (x.isdAs, x.bandwidth, x.startTime, x.expiryTime)
                });
                let call = BA::redeemCall {
                    ingressId: ii,
                    egressId: ie,
                    ephemeralPubKey: B256::repeat_byte(caller as u8),
                    deliveryWindow: 3600,
                };
                let r = self.send(me, assets, call, U256::ZERO);
                if r.status {
                    assert!(self.redeemed.insert(ii), "asset {ii} redeemed twice");
                    assert!(self.redeemed.insert(ie), "asset {ie} redeemed twice");
                }
                (r, me, x.owner == me && y.owner == me)
            }
            Op::Merge { caller, a, b } => {
                // Anyone may merge; it succeeds only for alike listings, and keeps the volume.
                let me = addr(caller);
                let (x, y) = (self.listing(a, None), self.listing(b, None));
                (
                    self.send(me, market, Market::mergeListingsCall { listingId: x, otherListingId: y }, U256::ZERO),
                    me,
                    true,
                )
            }
            Op::Withdraw { caller } => {
                let me = addr(caller);
                let due = self.dep.proceeds_of(&self.l, me, Address::ZERO).unwrap();
                let before = self.l.balance(me).unwrap();
                let r = self.send(me, market, Market::withdrawCall { token: Address::ZERO }, U256::ZERO);
                assert!(r.status, "a withdrawal to an account that accepts payment succeeds");
                assert_eq!(self.l.balance(me).unwrap(), before + due - r.fee(), "paid what was due");
                (r, me, true)
            }
            Op::Deliver { caller, request } => {
                let next = self.dep.next_request_id(&self.l).unwrap();
                let pending: Vec<U256> = (1..next.to::<u64>())
                    .map(U256::from)
                    .filter(|&id| self.dep.request_of(&self.l, id).unwrap().status == request_status::PENDING)
                    .collect();
                let id = if request.own && !pending.is_empty() {
                    pending[request.i as usize % pending.len()]
                } else {
                    Self::any_id(next, request.i)
                };
                let req = self.dep.request_of(&self.l, id).unwrap();
                let issuer = self.dep.account_of(&self.l, req.isdAs).unwrap();
                // Mostly the issuing AS delivers; otherwise the random caller tries.
                let me = if request.own && issuer != Address::ZERO { issuer } else { addr(caller) };
                let gone: u128 = [req.ingressId, req.egressId]
                    .map(|i| vol(&self.dep.asset_of(&self.l, U256::from(i)).unwrap()))
                    .iter()
                    .sum();
                let call = BA::deliverReservationCall { requestId: id, sealedReservation: Bytes::from(vec![7u8; 80]) };
                let r = self.send(me, assets, call, U256::ZERO);
                if r.status {
                    *self.volume.get_mut(&req.isdAs).unwrap() -= gone;
                }
                (r, me, req.isdAs != 0 && issuer == me)
            }
        }
    }

    /// The sellers' native proceeds, summed.
    fn proceeds(&self) -> U256 {
        self.accounts.iter().map(|a| self.dep.proceeds_of(&self.l, a.address(), Address::ZERO).unwrap()).sum()
    }

    /// Sum of bandwidth x time over the live (owned or escrowed) assets of each AS.
    fn live_volume(&self) -> BTreeMap<u64, u128> {
        let mut out: BTreeMap<u64, u128> = self.volume.keys().map(|&ia| (ia, 0)).collect();
        let next = self.dep.next_asset_id(&self.l).unwrap().to::<u64>();
        for id in 1..next {
            let a = self.dep.asset_of(&self.l, U256::from(id)).unwrap();
            if a.owner != Address::ZERO {
                *out.get_mut(&a.isdAs).unwrap() += vol(&a);
            }
        }
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn market_invariants_hold_for_random_operations(ops in prop::collection::vec(op(), 1..40)) {
        let b = base();
        let mut run = Run {
            l: b.ledger.fork(),
            dep: b.dep,
            marketplace: b.marketplace,
            accounts: b.ledger.accounts().to_vec(),
            volume: b.issued.clone(),
            redeemed: HashSet::new(),
        };
        let who: Vec<Address> = run.accounts[1..=4].iter().map(|a| a.address()).collect();
        for op in &ops {
            let before = market_state(&run.l, &run.dep, None, &who);
            let (r, caller, entitled) = run.apply(op);
            if !entitled {
                prop_assert!(!r.status, "{op:?} succeeded for a caller that is not entitled");
            }
            if !r.status {
                let mut expected = before;
                *expected.balances.get_mut(&caller).unwrap() -= r.fee();
                prop_assert_eq!(market_state(&run.l, &run.dep, None, &who), expected, "failed {:?} changed state", op);
            }
            prop_assert_eq!(run.live_volume(), run.volume.clone(), "volume not conserved after {:?}", op);
            prop_assert_eq!(run.l.balance(run.dep.market).unwrap(), run.proceeds(), "market balance != proceeds after {:?}", op);
            prop_assert_eq!(common::index::indexed(&run.l, &run.dep), common::index::live(&run.l, &run.dep), "index of open listings wrong after {:?}", op);
        }
    }
}
