//! Rate limiting of discovery requests per neighbour, in proportion to the divergent of the
//! interface it is linked at (the GLWP paper, §VI-A, "Measures against denial of
//! capability"): neighbour i may send requests at `DIV_i · share` bytes per second. GMA's
//! matrices then bound the discovery traffic of each neighbour as they bound its allocations,
//! so no neighbour can crowd out another's requests (F9).
//!
//! One 8-byte token bucket per interface ([`aviary_qos::TokenBucketBank`]), charged with the
//! request's length. Only requests are limited: a response answers a request this AS admitted.

use std::collections::BTreeMap;

use aviary_qos::{Rate, TokenBucketBank};

use crate::matrix::{AllocationMatrix, InterfaceId};
use crate::schedule::{ChangeWindow, MatrixSchedule, Phase};

/// How much discovery traffic a neighbour may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Share of `DIV_i` a neighbour at interface i may use for requests, in millionths.
    pub share_ppm: u32,
    /// Burst of every bucket, bytes; must hold a request of the longest path.
    pub burst_bytes: u16,
}

/// Token buckets of the neighbours' interfaces.
#[derive(Clone, Debug)]
pub struct NeighbourLimiter {
    limit: RateLimit,
    bank: TokenBucketBank,
    index: BTreeMap<InterfaceId, usize>,
    /// The schedule's change and phase the rates were last set for ([`Self::follow`]).
    set_for: Option<(Option<ChangeWindow>, Phase)>,
}

fn rate_of(limit: RateLimit, div_bps: u64) -> Rate {
    let bps = u128::from(div_bps) * u128::from(limit.share_ppm) / 1_000_000;
    u64::try_from(bps).ok().and_then(|bps| Rate::from_bps(bps).ok()).unwrap_or(Rate::MAX)
}

impl NeighbourLimiter {
    /// Buckets for `interfaces` at `DIV_i · share` (rounded down to the buckets' 100 kbit/s
    /// unit, capped at their maximum). Buckets start full.
    pub fn new(limit: RateLimit, matrix: &AllocationMatrix, interfaces: impl IntoIterator<Item = InterfaceId>) -> Self {
        let mut bank = TokenBucketBank::new(limit.burst_bytes);
        let mut index = BTreeMap::new();
        for i in interfaces {
            index.insert(i, bank.push(rate_of(limit, matrix.divergent_bps(i))));
        }
        Self { limit, bank, index, set_for: None }
    }

    /// Sets the rates to the divergents `schedule` gives at `now_ns` (the old matrix's, the
    /// larger of old and new during a change, the new one's), when its change or phase
    /// differs from the last call's; the tokens earned so far are kept.
    pub fn follow(&mut self, schedule: &MatrixSchedule, now_ns: u64) {
        let at = Some((schedule.window(), schedule.phase(now_ns)));
        if self.set_for == at {
            return;
        }
        self.set_for = at;
        for (&i, &id) in &self.index {
            self.bank.set_rate(id, rate_of(self.limit, schedule.divergent_bps(i, now_ns)), now_ns);
        }
    }

    /// The request costs `len` bytes of the bucket of interface `ingress`; `false` when it has
    /// too few tokens or the interface has no bucket.
    pub fn admit(&mut self, ingress: InterfaceId, len: usize, now_ns: u64) -> bool {
        match (self.index.get(&ingress), u32::try_from(len)) {
            (Some(&id), Ok(len)) => self.bank.admit(id, len, now_ns),
            _ => false,
        }
    }

    /// The rate of interface `ingress`'s bucket.
    pub fn rate(&self, ingress: InterfaceId) -> Option<Rate> {
        self.index.get(&ingress).and_then(|&id| self.bank.rate(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::MatrixEntry;

    #[test]
    fn rates_follow_the_divergents() {
        let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
        // DIV_1 = 3 Gbit/s, DIV_2 = 1 Gbit/s.
        let m =
            AllocationMatrix::new([e(1, 2, 2_000_000_000), e(1, 0, 1_000_000_000), e(2, 1, 1_000_000_000)]).unwrap();
        let mut lim = NeighbourLimiter::new(RateLimit { share_ppm: 1_000, burst_bytes: 1000 }, &m, [1, 2]);
        assert_eq!(lim.rate(1), Some(Rate::from_bps(3_000_000).unwrap()));
        assert_eq!(lim.rate(2), Some(Rate::from_bps(1_000_000).unwrap()));
        assert_eq!(lim.rate(3), None);
        assert!(!lim.admit(3, 1, 0), "no bucket, no admission");
        // The burst, then nothing until tokens come back: 1000 B at 1 Mbit/s take 8 ms.
        assert!(lim.admit(2, 1000, 0));
        assert!(!lim.admit(2, 1000, 1_000_000));
        assert!(lim.admit(2, 1000, 8_000_000));
        // Interface 1 earns three times as fast.
        assert!(lim.admit(1, 1000, 0));
        assert!(lim.admit(1, 1000, 8_000_000 / 3 + 1));
    }

    #[test]
    fn rates_follow_the_schedule_through_a_change() {
        let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
        let old = AllocationMatrix::new([e(1, 2, 3_000_000_000), e(2, 1, 1_000_000_000)]).unwrap();
        let new = AllocationMatrix::new([e(1, 2, 1_000_000_000), e(2, 1, 5_000_000_000)]).unwrap();
        let mut schedule = MatrixSchedule::new(old.clone());
        let mut lim = NeighbourLimiter::new(RateLimit { share_ppm: 1_000, burst_bytes: 1000 }, &old, [1, 2]);
        schedule.change(new, 100, 50).unwrap();
        let rates = |lim: &NeighbourLimiter| (lim.rate(1).unwrap(), lim.rate(2).unwrap());
        let mbps = |m: u64| Rate::from_bps(m * 1_000_000).unwrap();
        lim.follow(&schedule, 99);
        assert_eq!(rates(&lim), (mbps(3), mbps(1)), "before t_1: the old divergents");
        lim.follow(&schedule, 100);
        assert_eq!(rates(&lim), (mbps(3), mbps(5)), "in the overlap: the larger of both");
        lim.follow(&schedule, 150);
        assert_eq!(rates(&lim), (mbps(1), mbps(5)), "from t_2: the new divergents");
    }
}
