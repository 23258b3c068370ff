//! The cheapest purchase of a path from the offers at hand, paid in one token, within the
//! buyer's funds.
//!
//! A plan is paid in ONE payment token: the native currency unless the buyer names an ERC-20
//! token. Offers in any other token are not considered at all: prices in different tokens are
//! amounts of different things (1 wei and 1 unit of a 6-decimal token are not comparable), and
//! anyone may create a marketplace paid in any token, so mixing them would let a stranger's
//! listing, numerically "cheaper" in a token the buyer happens to hold, spend that token.
//!
//! Each side of a hop (the ingress or the egress asset of one AS) is a chain of listings: the
//! first covers the start, each next one continues where the previous one ends, the last one
//! reaches the expiry; the market buys their pieces and fuses them (`buyAndRedeemPath`). So a
//! window across two of an AS's issuing periods, or across the fragments that other purchases
//! left, is still one hop. The cheapest chain is a shortest path over the chain's break
//! points (the start and every listed expiry inside the window): an edge from `t` uses a
//! listing whose asset holds `t` and runs to its expiry (or the window's end), at its price for
//! that piece.

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, U256};

use super::{ia_text, Available, ClientError, HopWant, Offer};
use crate::contracts::{PathPurchase, PriceLimit};

/// The interval and bandwidth (kbit/s) to buy on every hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub expiry: u64,
    pub bandwidth: u64,
}

/// The cheapest purchase of every hop in one payment token, with its price.
#[derive(Clone, Debug)]
pub struct Plan {
    pub hops: Vec<PlannedHop>,
    pub start: u64,
    pub expiry: u64,
    pub bandwidth: u64,
    /// What every piece is paid in (zero: the native currency).
    pub token: Address,
    /// Total price in `token`'s smallest unit (wei for the native currency).
    pub total: U256,
}

/// One hop: the pieces of each side in time order, and the hop's price in the plan's token.
#[derive(Clone, Debug)]
pub struct PlannedHop {
    pub want: HopWant,
    pub ingress: Vec<Piece>,
    pub egress: Vec<Piece>,
    pub price: U256,
}

/// The part `[start, expiry)` of an offer that a side buys, and its price.
#[derive(Clone, Debug)]
pub struct Piece {
    pub offer: Offer,
    pub start: u64,
    pub expiry: u64,
    pub price: U256,
}

fn ids(pieces: &[Piece]) -> Vec<U256> {
    pieces.iter().map(|p| p.offer.listing_id).collect()
}

impl Plan {
    pub fn purchases(&self) -> Vec<PathPurchase> {
        self.hops
            .iter()
            .map(|h| PathPurchase {
                ingressListingIds: ids(&h.ingress),
                egressListingIds: ids(&h.egress),
                startTime: self.start,
                expiryTime: self.expiry,
                bandwidth: self.bandwidth,
            })
            .collect()
    }

    /// The planned total as the purchase's price limit: a price raised after planning makes the
    /// purchase revert instead of costing more, and any other token (which the market limits
    /// to zero when it is not named) cannot be charged at all.
    pub fn limits(&self) -> Vec<PriceLimit> {
        vec![PriceLimit { token: self.token, maxTotal: self.total }]
    }

    /// Every listing the plan buys from.
    pub fn listing_ids(&self) -> BTreeSet<U256> {
        self.hops.iter().flat_map(|h| h.ingress.iter().chain(&h.egress)).map(|p| p.offer.listing_id).collect()
    }
}

/// Plans the cheapest purchase of `w` on every hop from the offers in `token` (zero: the native
/// currency); offers in other tokens are ignored.
pub fn plan_cheapest(offers: &[Offer], wants: &[HopWant], w: Window, token: Address) -> Result<Plan, ClientError> {
    // A window no reservation can hold would be paid for and refused at redemption.
    super::window::check_length(w)?;
    let usable: Vec<&Offer> = offers.iter().filter(|o| o.payment_token == token && o.issuer_registered).collect();
    let mut hops = Vec::new();
    let mut total = U256::ZERO;
    for (i, want) in wants.iter().enumerate() {
        if want.ingress == 0 || want.egress == 0 {
            return Err(ClientError::NotTransit { hop: i, isd_as: ia_text(want.isd_as) });
        }
        let side = |interface: u16, is_ingress: bool| {
            cheapest_chain(&usable, want.isd_as, interface, is_ingress, w).ok_or_else(|| ClientError::NoOffer {
                hop: i,
                isd_as: ia_text(want.isd_as),
                interface,
                dir: if is_ingress { "ingress" } else { "egress" },
                window: w,
                available: Available::on_side(&usable, want.isd_as, interface, is_ingress, w),
            })
        };
        let (ingress, egress) = (side(want.ingress, true)?, side(want.egress, false)?);
        let mut price = U256::ZERO;
        for p in ingress.iter().chain(&egress) {
            add(&mut price, p.price, token)?;
        }
        add(&mut total, price, token)?;
        hops.push(PlannedHop { want: *want, ingress, egress, price });
    }
    Ok(Plan { hops, start: w.start, expiry: w.expiry, bandwidth: w.bandwidth, token, total })
}

/// Plans the cheapest purchase in `token` and checks that `funds` (the buyer's balance of it)
/// pay for it: the cheapest plan in one token is the least any plan in it costs, so one that
/// exceeds the funds means nothing in that token is affordable.
pub fn plan_affordable(
    offers: &[Offer],
    wants: &[HopWant],
    w: Window,
    token: Address,
    funds: U256,
) -> Result<Plan, ClientError> {
    let plan = plan_cheapest(offers, wants, w, token)?;
    if plan.total > funds {
        return Err(ClientError::Unaffordable { token, needed: plan.total, available: funds });
    }
    Ok(plan)
}

/// `sum += price`, or the named overflow (the market would revert with `PriceSumOverflow`).
fn add(sum: &mut U256, price: U256, token: Address) -> Result<(), ClientError> {
    *sum = sum.checked_add(price).ok_or(ClientError::PriceOverflow { token })?;
    Ok(())
}

/// Whether the market can take `bandwidth` off `o` (the piece and any remainder at least the
/// asset's minimum).
fn bandwidth_fits(o: &Offer, bandwidth: u64) -> bool {
    let min = u64::from(o.asset.minBandwidth);
    bandwidth >= min.max(1)
        && bandwidth <= o.asset.bandwidth
        && (bandwidth == o.asset.bandwidth || o.asset.bandwidth - bandwidth >= min)
}

/// The cheapest chain of offers for one side (ties: fewer listings, then lower ids), among
/// offers that fuse with each other (equal time grid and minimum bandwidth).
fn cheapest_chain(offers: &[&Offer], isd_as: u64, interface: u16, is_ingress: bool, w: Window) -> Option<Vec<Piece>> {
    let mut groups: BTreeMap<(u32, u32), Vec<&Offer>> = BTreeMap::new();
    for o in offers {
        let a = &o.asset;
        if a.isdAs == isd_as
            && a.interfaceId == interface
            && a.isIngress == is_ingress
            && a.startTime < w.expiry
            && a.expiryTime > w.start
            && bandwidth_fits(o, w.bandwidth)
        {
            groups.entry((a.timeGranularity, a.minBandwidth)).or_default().push(o);
        }
    }
    groups
        .into_iter()
        .filter(|((gran, _), _)| {
            *gran > 0 && w.start.is_multiple_of(u64::from(*gran)) && w.expiry.is_multiple_of(u64::from(*gran))
        })
        .filter_map(|(_, group)| chain_in(&group, w))
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, chain)| chain)
}

type Cost = (U256, usize, Vec<U256>);

/// Shortest path from `w.start` to `w.expiry` over the offers' expiries (see the module doc).
fn chain_in(group: &[&Offer], w: Window) -> Option<(Cost, Vec<Piece>)> {
    let mut points: Vec<u64> = group.iter().map(|o| o.asset.expiryTime.min(w.expiry)).collect();
    points.push(w.start);
    points.sort_unstable();
    points.dedup();
    let mut best: BTreeMap<u64, (Cost, Vec<Piece>)> = BTreeMap::new();
    best.insert(w.start, ((U256::ZERO, 0, Vec::new()), Vec::new()));
    for &t in points.iter().filter(|t| **t >= w.start && **t < w.expiry) {
        let Some((cost, chain)) = best.get(&t).cloned() else { continue };
        for o in group.iter().filter(|o| o.asset.startTime <= t && t < o.asset.expiryTime) {
            let end = o.asset.expiryTime.min(w.expiry);
            let mut ids = cost.2.clone();
            ids.push(o.listing_id);
            let price = o.price(t, end, w.bandwidth);
            // An overflowing chain costs the most; the hop's sum then names the overflow.
            let next = (cost.0.saturating_add(price), cost.1 + 1, ids);
            if best.get(&end).is_none_or(|(c, _)| next < *c) {
                let mut chain = chain.clone();
                chain.push(Piece { offer: (*o).clone(), start: t, expiry: end, price });
                best.insert(end, (next, chain));
            }
        }
    }
    best.remove(&w.expiry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::MAX_RESERVATION_S;
    use crate::contracts::{Asset, Listing};
    use proptest::prelude::*;

    const IA: u64 = (1 << 48) | 0xff00_0000_0110;
    const WANT: [HopWant; 1] = [HopWant { isd_as: IA, ingress: 1, egress: 2 }];
    const NATIVE: Address = Address::ZERO;

    fn offer(id: u64, interface: u16, start: u64, expiry: u64, bandwidth: u64, price: u128) -> Offer {
        Offer {
            listing_id: U256::from(id),
            listing: Listing {
                seller: Address::repeat_byte(1),
                marketplaceId: 1,
                openSlot: 0,
                pricePerUnit: price,
                assetId: id as u128,
            },
            asset: Asset {
                owner: Address::repeat_byte(2),
                isdAs: IA,
                interfaceId: interface,
                isIngress: interface == 1,
                bandwidth,
                startTime: start,
                expiryTime: expiry,
                timeGranularity: 60,
                minBandwidth: 10,
            },
            payment_token: Address::ZERO,
            issuer_registered: true,
            resale: false,
        }
    }

    #[test]
    fn overlapping_listings_are_priced_from_the_cursor() {
        // Ingress: [0, 600) at 1 and [300, 1200) at 1; the second piece starts at 600, not 300.
        let offers = [offer(1, 1, 0, 600, 100, 1), offer(2, 1, 300, 1200, 100, 1), offer(3, 2, 0, 1200, 100, 1)];
        let plan = plan_cheapest(&offers, &WANT, Window { start: 0, expiry: 1200, bandwidth: 50 }, NATIVE).unwrap();
        let ingress: Vec<_> = plan.hops[0].ingress.iter().map(|p| (p.start, p.expiry, p.price)).collect();
        assert_eq!(ingress, [(0, 600, U256::from(50 * 600)), (600, 1200, U256::from(50 * 600))]);
        assert_eq!(plan.total, U256::from(2 * 50 * 1200));
    }

    /// Prices in different tokens are never compared or added: a plan takes only offers in its
    /// token, however low another token's number is, and an offer in another token cannot
    /// even fill a side nothing else covers.
    #[test]
    fn a_plan_is_paid_in_one_token_and_ignores_the_others() {
        let six = Address::repeat_byte(6);
        let in_six = |o: Offer| Offer { payment_token: six, ..o };
        let offers = [
            offer(1, 1, 0, 3600, 1000, 5),
            in_six(offer(2, 1, 0, 3600, 1000, 1)),
            offer(3, 2, 0, 3600, 1000, 5),
            in_six(offer(4, 2, 0, 3600, 1000, 1)),
            in_six(offer(5, 2, 0, 600, 1000, 1)),
        ];
        let w = Window { start: 0, expiry: 600, bandwidth: 100 };
        let native = plan_cheapest(&offers, &WANT, w, NATIVE).unwrap();
        assert_eq!(native.listing_ids(), [U256::from(1), U256::from(3)].into());
        assert_eq!((native.token, native.total), (NATIVE, U256::from(2 * 5 * 100 * 600)));
        assert_eq!(native.limits().len(), 1);
        let tokens = plan_cheapest(&offers, &WANT, w, six).unwrap();
        assert_eq!(tokens.listing_ids(), [U256::from(2), U256::from(4)].into());
        assert_eq!((tokens.token, tokens.total), (six, U256::from(2 * 100 * 600)));
        // Only the token covers the egress: no native plan, not a mixed one.
        let e = plan_cheapest(&[offers[0].clone(), offers[3].clone()], &WANT, w, NATIVE).unwrap_err();
        assert!(matches!(e, ClientError::NoOffer { interface: 2, .. }), "{e:?}");
        // The cheapest plan in the token exceeds the funds: nothing in it is affordable.
        let e = plan_affordable(&offers, &WANT, w, six, U256::from(2 * 100 * 600 - 1)).unwrap_err();
        assert!(matches!(e, ClientError::Unaffordable { token, .. } if token == six), "{e:?}");
        plan_affordable(&offers, &WANT, w, six, U256::from(2 * 100 * 600)).unwrap();
    }

    #[test]
    fn a_remainder_below_the_minimum_or_an_off_grid_window_is_not_planned() {
        let offers = [offer(1, 1, 0, 600, 100, 1), offer(2, 2, 0, 600, 100, 1)];
        let w = Window { start: 0, expiry: 600, bandwidth: 95 };
        assert!(matches!(plan_cheapest(&offers, &WANT, w, NATIVE), Err(ClientError::NoOffer { .. })));
        let w = Window { start: 30, expiry: 600, bandwidth: 50 };
        assert!(matches!(plan_cheapest(&offers, &WANT, w, NATIVE), Err(ClientError::NoOffer { .. })));
    }

    #[test]
    fn an_uncovered_window_names_what_is_open_on_the_interface() {
        // Egress: 1 Mbit/s for [0, 600) and [1200, 1800); nothing at 2 Mbit/s, a gap in the middle.
        let offers = [offer(1, 1, 0, 3600, 5000, 1), offer(2, 2, 0, 600, 1000, 1), offer(3, 2, 1200, 1800, 1000, 1)];
        let w = Window { start: 0, expiry: 1800, bandwidth: 2000 };
        let e = plan_cheapest(&offers, &WANT, w, NATIVE).unwrap_err();
        let ClientError::NoOffer { interface: 2, ref available, .. } = e else { panic!("{e:?}") };
        assert_eq!(available.pieces.iter().map(|p| p.listing_id).collect::<Vec<_>>(), [U256::from(2), U256::from(3)]);
        assert_eq!(
            e.to_string(),
            "hop 0 (1-ff00:0:110): nothing covers 30 min from 1970-01-01T00:00:00Z at 2 Mbit/s on interface 2 \
             (egress); open there: 1 Mbit/s from 1970-01-01T00:00:00Z to 1970-01-01T00:10:00Z (listing 2, grid \
             1 min, min 10 kbit/s); 1 Mbit/s from 1970-01-01T00:20:00Z to 1970-01-01T00:30:00Z (listing 3, grid \
             1 min, min 10 kbit/s)"
        );
        // Far from the window: only the nearest piece before it is named.
        let w = Window { start: 2400, expiry: 3000, bandwidth: 100 };
        let ClientError::NoOffer { available, .. } = plan_cheapest(&offers, &WANT, w, NATIVE).unwrap_err() else {
            panic!()
        };
        assert_eq!(available.pieces.iter().map(|p| p.listing_id).collect::<Vec<_>>(), [U256::from(3)]);
        let none = [offer(1, 1, 0, 3600, 5000, 1)];
        let e = plan_cheapest(&none, &WANT, w, NATIVE).unwrap_err();
        assert!(e.to_string().ends_with("interface 2 (egress); nothing is listed there"), "{e}");
    }

    #[test]
    fn a_price_sum_past_256_bits_is_a_named_error() {
        // A piece is below 2^128 × 2^64 × 2^16 (the longest window), so no plan gets here; the
        // sum is checked all the same.
        let mut sum = U256::MAX;
        let e = add(&mut sum, U256::from(1), Address::ZERO).unwrap_err();
        assert!(matches!(e, ClientError::PriceOverflow { token: Address::ZERO }), "{e:?}");
    }

    #[test]
    fn a_window_longer_than_a_reservation_is_not_planned_even_if_offered() {
        let (top, end) = (u128::MAX, u64::MAX / 60 * 60);
        let offers = [offer(1, 1, 0, end, u64::MAX, top), offer(2, 2, 0, end, u64::MAX, top)];
        let longest = MAX_RESERVATION_S / 60 * 60;
        plan_cheapest(&offers, &WANT, Window { start: 0, expiry: longest, bandwidth: 100 }, NATIVE).unwrap();
        let w = Window { start: 0, expiry: longest + 60, bandwidth: 100 };
        let e = plan_cheapest(&offers, &WANT, w, NATIVE).unwrap_err();
        assert!(matches!(e, ClientError::TooLong { duration: 65_580 }), "{e:?}");
        let w = Window { start: 0, expiry: end, bandwidth: u64::MAX };
        assert!(matches!(plan_cheapest(&offers, &WANT, w, NATIVE), Err(ClientError::TooLong { .. })));
    }

    proptest! {
        /// Over random fragments (on a 60 s grid) of one AS's ingress listings: a plan's pieces
        /// are contiguous, each inside its listing, cover the window, and sum to its price; it
        /// costs no more than any single listing that covers the window alone; and a window
        /// that the fragments cover without a gap at the bandwidth is always planned.
        #[test]
        fn plans_are_contiguous_cover_the_window_and_are_cheapest(
            frags in prop::collection::vec((0u64..20, 1u64..6, 50u64..200, 1u128..5), 1..12),
            (s, len) in (0u64..20, 1u64..10),
        ) {
            let mut offers: Vec<Offer> = frags
                .iter()
                .enumerate()
                .map(|(i, (a, d, bw, p))| offer(i as u64 + 1, 1, a * 60, (a + d) * 60, *bw, *p))
                .collect();
            offers.push(offer(99, 2, 0, 3600, 1000, 1));
            let w = Window { start: s * 60, expiry: (s + len) * 60, bandwidth: 40 };
            let covered = (s..s + len).all(|m| offers[..frags.len()].iter().any(|o| o.asset.startTime <= m * 60 && m * 60 < o.asset.expiryTime));
            match plan_cheapest(&offers, &WANT, w, NATIVE) {
                Ok(plan) => {
                    let side = &plan.hops[0].ingress;
                    prop_assert_eq!(side.first().unwrap().start, w.start);
                    prop_assert_eq!(side.last().unwrap().expiry, w.expiry);
                    for p in side {
                        prop_assert!(p.offer.asset.startTime <= p.start && p.expiry <= p.offer.asset.expiryTime);
                        prop_assert_eq!(p.price, p.offer.price(p.start, p.expiry, w.bandwidth));
                    }
                    prop_assert!(side.windows(2).all(|x| x[0].expiry == x[1].start));
                    let sum: U256 = side.iter().map(|p| p.price).sum();
                    for o in offers[..frags.len()].iter().filter(|o| o.asset.startTime <= w.start && w.expiry <= o.asset.expiryTime) {
                        prop_assert!(sum <= o.price(w.start, w.expiry, w.bandwidth));
                    }
                }
                Err(e) => prop_assert!(!covered, "covered but not planned: {}", e),
            }
        }
    }
}
