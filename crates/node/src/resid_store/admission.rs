//! Admission control: the bandwidth an AS has promised on each direction of each interface, and
//! the rule that decides whether one more promise fits.
//!
//! The book lives in the AS's ResID store beside the ResIDs, and every decision is taken inside
//! one store transaction (under its lock): an operator grant and a market listing that race for
//! one interface are serialised there, so together they can never exceed the bound.
//!
//! A link is full duplex: traffic entering the AS through interface 1 and traffic leaving through
//! it do not compete, so each interface has one bound per [`Direction`]. A reservation
//! `ingress → egress` takes its bandwidth on `(ingress, Ingress)` and `(egress, Egress)`; interface
//! 0 (the AS's inside) has no link and no bound. The rule: for every instant of the
//! reservation's interval, what is booked on each of its sides plus what it asks must not exceed
//! that interface's reservable bandwidth. Bandwidth is exact integer bit/s throughout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Which way traffic crosses an interface: into the AS (a reservation's ingress, an ingress
/// asset) or out of it (its egress, an egress asset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Ingress,
    Egress,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::Ingress => "ingress",
            Direction::Egress => "egress",
        })
    }
}

/// The reservable bandwidth of each interface (bit/s, each direction), as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits(BTreeMap<u16, u64>);

impl Limits {
    pub fn new(per_interface: impl IntoIterator<Item = (u16, u64)>) -> Self {
        Self(per_interface.into_iter().collect())
    }

    /// The bound of `interface`; `None` for one without a configured bound.
    pub fn get(&self, interface: u16) -> Option<u64> {
        self.0.get(&interface).copied()
    }
}

/// One side of a reservation or one listed asset: `bps` on `interface` in `direction` during
/// `[start, end)` (Unix s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    pub interface: u16,
    pub direction: Direction,
    pub bps: u64,
    pub start: u64,
    pub end: u64,
}

/// Who holds a booking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// An operator grant (the control service).
    Grant { res_id: u32 },
    /// An asset issued on the market (the AS service), named so that issuing it again after a
    /// failed ledger transaction replaces the booking instead of adding a second one.
    Listing { key: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Booked {
    #[serde(flatten)]
    pub leg: Leg,
    pub holder: Holder,
}

/// Why a booking was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AdmissionError {
    #[error(
        "interface {interface} ({direction}): {} reservable from {start} to {end} (Unix s), {} requested",
        fmt_bps(*left),
        fmt_bps(*requested)
    )]
    Exceeded { interface: u16, direction: Direction, start: u64, end: u64, left: u64, requested: u64 },
    #[error("interface {0} has no reservable bandwidth configured")]
    NotConfigured(u16),
}

/// Exact bit/s in the largest unit that divides it: "3 Mbit/s", "1952 kbit/s", "7 bit/s".
pub fn fmt_bps(bps: u64) -> String {
    match bps {
        0 => "0 bit/s".into(),
        b if b % 1_000_000 == 0 => format!("{} Mbit/s", b / 1_000_000),
        b if b % 1_000 == 0 => format!("{} kbit/s", b / 1_000),
        b => format!("{b} bit/s"),
    }
}

/// Every bandwidth promise of an AS that has not ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandwidthBook {
    booked: Vec<Booked>,
}

impl BandwidthBook {
    pub fn booked(&self) -> &[Booked] {
        &self.booked
    }

    /// Forgets promises that ended at or before `now`.
    pub fn expire(&mut self, now: u64) {
        self.booked.retain(|b| b.leg.end > now);
    }

    /// The most bandwidth booked on `(interface, direction)` at any instant of `[start, end)`:
    /// a sweep over the bookings that overlap it (starts and ends as events; at one instant an
    /// end comes before a start, the intervals being half-open).
    pub fn peak(&self, interface: u16, direction: Direction, start: u64, end: u64) -> u64 {
        let mut events: Vec<(u64, bool, u64)> = Vec::new();
        for b in self.booked.iter().map(|b| &b.leg) {
            if b.interface == interface && b.direction == direction && b.start < end && start < b.end {
                events.push((b.start.max(start), true, b.bps));
                events.push((b.end.min(end), false, b.bps));
            }
        }
        // `false < true`: ends sort before starts at the same instant.
        events.sort_unstable();
        let (mut now, mut peak) = (0u128, 0u128);
        for (_, starts, bps) in events {
            if starts {
                now += u128::from(bps);
                peak = peak.max(now);
            } else {
                now -= u128::from(bps);
            }
        }
        u64::try_from(peak).unwrap_or(u64::MAX)
    }

    /// What is left on `(interface, direction)` throughout `[start, end)` under `limit`.
    pub fn left(&self, limit: u64, interface: u16, direction: Direction, start: u64, end: u64) -> u64 {
        limit.saturating_sub(self.peak(interface, direction, start, end))
    }

    /// Books every leg for `holder` if each fits its interface's bound throughout its interval;
    /// otherwise books nothing. Legs on interface 0 (inside the AS) are not bounded.
    pub fn admit(&mut self, limits: &Limits, legs: &[Leg], holder: &Holder) -> Result<(), AdmissionError> {
        let legs: Vec<&Leg> = legs.iter().filter(|l| l.interface != 0).collect();
        for l in &legs {
            let limit = limits.get(l.interface).ok_or(AdmissionError::NotConfigured(l.interface))?;
            let left = self.left(limit, l.interface, l.direction, l.start, l.end);
            if l.bps > left {
                return Err(AdmissionError::Exceeded {
                    interface: l.interface,
                    direction: l.direction,
                    start: l.start,
                    end: l.end,
                    left,
                    requested: l.bps,
                });
            }
        }
        self.booked.extend(legs.into_iter().map(|l| Booked { leg: *l, holder: holder.clone() }));
        Ok(())
    }

    /// Books a listing of up to `leg.bps`, as much as is left throughout its interval in whole
    /// kbit/s (the unit of the market's assets), replacing an earlier booking under the same
    /// `key`; refused if less than `min_bps` is left. Returns the bit/s booked.
    pub fn admit_listing(&mut self, limits: &Limits, key: &str, leg: Leg, min_bps: u64) -> Result<u64, AdmissionError> {
        let holder = Holder::Listing { key: key.to_string() };
        self.booked.retain(|b| b.holder != holder);
        let limit = limits.get(leg.interface).ok_or(AdmissionError::NotConfigured(leg.interface))?;
        let left = self.left(limit, leg.interface, leg.direction, leg.start, leg.end) / 1000 * 1000;
        let bps = leg.bps.min(left);
        if bps < min_bps.max(1) {
            return Err(AdmissionError::Exceeded {
                interface: leg.interface,
                direction: leg.direction,
                start: leg.start,
                end: leg.end,
                left,
                requested: min_bps,
            });
        }
        self.booked.push(Booked { leg: Leg { bps, ..leg }, holder });
        Ok(bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const IN: Direction = Direction::Ingress;
    const OUT: Direction = Direction::Egress;

    fn leg(interface: u16, direction: Direction, bps: u64, start: u64, end: u64) -> Leg {
        Leg { interface, direction, bps, start, end }
    }

    fn grant(b: &mut BandwidthBook, l: &Limits, legs: &[Leg]) -> Result<(), AdmissionError> {
        b.admit(l, legs, &Holder::Grant { res_id: 0 })
    }

    #[test]
    fn up_to_the_bound_and_not_one_bit_more() {
        let limits = Limits::new([(1, 8_000_000), (2, 8_000_000)]);
        let mut b = BandwidthBook::default();
        grant(&mut b, &limits, &[leg(1, IN, 5_000_000, 0, 100), leg(2, OUT, 5_000_000, 0, 100)]).unwrap();
        // Overlapping [50, 150): exactly the 3 Mbit/s left fits, one bit more does not.
        let e = grant(&mut b, &limits, &[leg(1, IN, 3_000_001, 50, 150)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "interface 1 (ingress): 3 Mbit/s reservable from 50 to 150 (Unix s), 3000001 bit/s requested"
        );
        grant(&mut b, &limits, &[leg(1, IN, 3_000_000, 50, 150)]).unwrap();
        // Touching but not overlapping intervals do not add up.
        grant(&mut b, &limits, &[leg(1, IN, 3_000_000, 150, 200)]).unwrap();
        grant(&mut b, &limits, &[leg(1, IN, 5_000_000, 100, 150)]).unwrap();
        assert_eq!(b.peak(1, IN, 0, 200), 8_000_000);
        // The other direction of the same interface is free; an unbounded inside is fine.
        grant(&mut b, &limits, &[leg(0, IN, u64::MAX, 0, 10), leg(1, OUT, 8_000_000, 0, 200)]).unwrap();
        // The egress side refuses even when the ingress side fits, and nothing is booked.
        let before = b.clone();
        let e = grant(&mut b, &limits, &[leg(1, OUT, 1, 0, 300), leg(2, OUT, 3_000_001, 0, 10)]);
        assert!(matches!(e, Err(AdmissionError::Exceeded { interface: 1, direction: OUT, .. })), "{e:?}");
        assert_eq!(b, before);
        assert_eq!(grant(&mut b, &limits, &[leg(7, IN, 1, 0, 10)]), Err(AdmissionError::NotConfigured(7)));
        b.expire(150);
        assert_eq!(b.peak(1, IN, 0, 200), 3_000_000);
    }

    #[test]
    fn a_listing_takes_what_is_left_and_replaces_itself() {
        let limits = Limits::new([(1, 8_000_000)]);
        let mut b = BandwidthBook::default();
        grant(&mut b, &limits, &[leg(1, IN, 3_500_500, 10, 20)]).unwrap();
        let l = leg(1, IN, 5_000_000, 0, 3600);
        assert_eq!(b.admit_listing(&limits, "o0p0", l, 100_000), Ok(4_499_000), "whole kbit/s");
        // Issuing again (after a failed ledger transaction) does not book twice.
        assert_eq!(b.admit_listing(&limits, "o0p0", l, 100_000), Ok(4_499_000));
        assert_eq!(b.peak(1, IN, 0, 3600), 7_999_500);
        let e = b.admit_listing(&limits, "o0p1", l, 100_000).unwrap_err();
        assert!(e.to_string().contains("0 bit/s reservable"), "{e}");
        assert_eq!(fmt_bps(1_952_000), "1952 kbit/s");
    }

    proptest! {
        #[test]
        fn whatever_is_admitted_never_exceeds_the_bound(
            reqs in proptest::collection::vec((1u16..3, any::<bool>(), 1u64..4_000_000, 0u64..100, 1u64..40), 1..60)
        ) {
            let limits = Limits::new([(1, 5_000_000), (2, 7_000_000)]);
            let mut b = BandwidthBook::default();
            for (i, out, bps, start, len) in reqs {
                let d = if out { OUT } else { IN };
                let _ = grant(&mut b, &limits, &[leg(i, d, bps, start, start + len)]);
            }
            // Brute force, second by second.
            for i in 1..3u16 {
                for d in [IN, OUT] {
                    for t in 0..140 {
                        let sum: u64 = b.booked().iter().map(|x| &x.leg)
                            .filter(|x| x.interface == i && x.direction == d && x.start <= t && t < x.end)
                            .map(|x| x.bps).sum();
                        prop_assert!(sum <= limits.get(i).unwrap());
                        prop_assert!(sum <= b.peak(i, d, 0, 200));
                    }
                }
            }
        }
    }
}
