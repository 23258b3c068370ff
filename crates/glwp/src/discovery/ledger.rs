//! The consistency checks of a neighbour's announcements (the GLWP paper, §V-A, Alg. 1
//! line 33): an AS remembers the hop values each neighbour announced and refuses a response
//! in which the neighbour contradicts itself, since inconsistent values could make GMA
//! over-allocate (F2). Announcements are inconsistent when
//!
//! 1. one interface pair of the neighbour got a different entry `M`,
//! 2. one of its interfaces got a different divergent or convergent, or the interface facing
//!    this AS changed its identifier,
//! 3. the entries announced for the pairs entering (leaving) at one interface add up to more
//!    than that interface's divergent (convergent).
//!
//! This is state per neighbour, not per allocation, and bounded: at most `capacity` pairs per
//! neighbour are remembered (later pairs are checked against what is remembered). A neighbour
//! that changes its matrix announces that first (§V-C, a later step); until then a change
//! reads as inconsistency.

use std::collections::BTreeMap;

use aviary_scion::IsdAsn;

use crate::allocation::HopValues;
use crate::matrix::InterfaceId;

#[derive(Clone, Debug, Default)]
struct Announcements {
    entries: BTreeMap<(InterfaceId, InterfaceId), u64>,
    divergent: BTreeMap<InterfaceId, u64>,
    convergent: BTreeMap<InterfaceId, u64>,
    /// Our interface → the neighbour's interface at the other end of that link.
    facing: BTreeMap<InterfaceId, InterfaceId>,
}

/// One neighbour's announcement as this AS sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Announcement {
    pub neighbour: IsdAsn,
    /// The neighbour's interface pair on the path.
    pub pair: (InterfaceId, InterfaceId),
    pub values: HopValues,
    /// This AS's interface to the neighbour and the neighbour's interface at that link.
    pub link: (InterfaceId, InterfaceId),
}

/// What every neighbour announced so far.
#[derive(Clone, Debug)]
pub struct NeighbourLedger {
    capacity: usize,
    neighbours: BTreeMap<IsdAsn, Announcements>,
}

impl NeighbourLedger {
    pub fn new(capacity: usize) -> Self {
        Self { capacity, neighbours: BTreeMap::new() }
    }

    /// Checks `a` against what its neighbour announced before; `false` if inconsistent.
    pub fn check(&self, a: &Announcement) -> bool {
        let Some(seen) = self.neighbours.get(&a.neighbour) else { return true };
        let (i, j) = a.pair;
        let v = a.values;
        let same = |map: &BTreeMap<InterfaceId, u64>, key, value| map.get(&key).is_none_or(|&x| x == value);
        if seen.entries.get(&(i, j)).is_some_and(|&m| m != v.entry_bps())
            || !same(&seen.divergent, i, v.divergent_bps())
            || !same(&seen.convergent, j, v.convergent_bps())
            || seen.facing.get(&a.link.0).is_some_and(|&f| f != a.link.1)
        {
            return false;
        }
        // Sums over the remembered pairs, with this one's entry in place of a remembered one.
        let others = seen.entries.iter().filter(|(&pair, _)| pair != (i, j));
        let (mut out_of_i, mut into_j) = (u128::from(v.entry_bps()), u128::from(v.entry_bps()));
        for (&(pi, pj), &m) in others {
            if pi == i {
                out_of_i += u128::from(m);
            }
            if pj == j {
                into_j += u128::from(m);
            }
        }
        out_of_i <= u128::from(v.divergent_bps()) && into_j <= u128::from(v.convergent_bps())
    }

    /// Remembers a consistent announcement (as far as capacity allows).
    pub fn record(&mut self, a: &Announcement) {
        let seen = self.neighbours.entry(a.neighbour).or_default();
        if seen.entries.len() >= self.capacity && !seen.entries.contains_key(&a.pair) {
            return;
        }
        seen.entries.insert(a.pair, a.values.entry_bps());
        seen.divergent.insert(a.pair.0, a.values.divergent_bps());
        seen.convergent.insert(a.pair.1, a.values.convergent_bps());
        seen.facing.insert(a.link.0, a.link.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(pair: (u16, u16), div: u64, m: u64, con: u64) -> Announcement {
        Announcement { neighbour: IsdAsn::new(1, 5), pair, values: HopValues::new(div, m, con).unwrap(), link: (7, 2) }
    }

    #[test]
    fn each_kind_of_inconsistency_is_caught() {
        let mut l = NeighbourLedger::new(16);
        let first = a((1, 2), 100, 60, 80);
        assert!(l.check(&first));
        l.record(&first);
        assert!(l.check(&first), "the same again");
        assert!(!l.check(&a((1, 2), 100, 50, 80)), "(1) another entry for the pair");
        assert!(!l.check(&a((1, 3), 90, 10, 80)), "(2) another divergent of interface 1");
        assert!(!l.check(&a((4, 2), 50, 10, 70)), "(2) another convergent of interface 2");
        assert!(!l.check(&Announcement { link: (7, 9), ..first }), "(2) the facing interface changed");
        assert!(!l.check(&a((1, 3), 100, 41, 80)), "(3) 60 + 41 > DIV_1 = 100");
        assert!(l.check(&a((1, 3), 100, 40, 80)), "60 + 40 = DIV_1");
        assert!(!l.check(&a((4, 2), 50, 21, 80)), "(3) 60 + 21 > CON_2 = 80");
    }

    #[test]
    fn capacity_bounds_what_is_remembered() {
        let mut l = NeighbourLedger::new(1);
        l.record(&a((1, 2), 100, 60, 80));
        l.record(&a((1, 3), 100, 40, 80));
        assert!(l.check(&a((1, 3), 100, 30, 80)), "pair (1, 3) was not remembered");
        assert!(!l.check(&a((1, 2), 100, 61, 80)));
    }
}
