//! ResID assignment per ingress interface by online interval colouring (First Fit,
//! the Hummingbird paper, §4.3): a new reservation gets the smallest ResID not held by any reservation
//! on the same ingress whose validity overlaps its own. The paper sizes the policing array
//! as ResID_max = R·TotalBW/MinBW with R = 3, the ratio of the optimal online algorithm
//! (Kierstead–Trotter); First Fit's worst case on interval graphs is between 5 and 8 times
//! the most reservations active at once, so an AS using it needs R = 8 for a guarantee.
//! On random workloads it stays within about 10% of the optimum (`aviary lab resid`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum ResIdError {
    #[error("every ResID up to {0} is taken during the requested interval")]
    Exhausted(u32),
    #[error("empty interval: a reservation must last at least one second")]
    EmptyInterval,
}

/// One assigned ResID and the interval `[start, end)` (Unix s) it is held for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub res_id: u32,
    pub start: u64,
    pub end: u64,
    /// Who it was assigned to, when the assigner names it ([`ResIdAllocator::assign_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

/// ResIDs held per ingress interface; serialisable so an AS service can persist it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResIdAllocator {
    max_res_id: u32,
    held: BTreeMap<u16, Vec<Held>>,
}

impl ResIdAllocator {
    /// ResIDs are assigned from 0 to `max_res_id` (the router's policing array size − 1).
    pub fn new(max_res_id: u32) -> Self {
        Self { max_res_id, held: BTreeMap::new() }
    }

    pub fn max_res_id(&self) -> u32 {
        self.max_res_id
    }

    /// Assigns from now on up to `max_res_id`, the bound the routers' policing array has now
    /// (an operator may have resized it since this allocator was saved). ResIDs already held
    /// stay held.
    pub fn set_max_res_id(&mut self, max_res_id: u32) {
        self.max_res_id = max_res_id;
    }

    /// The smallest ResID free on `ingress` throughout `[start, end)`, now held.
    pub fn assign(&mut self, ingress: u16, start: u64, end: u64) -> Result<u32, ResIdError> {
        self.assign_within(ingress, start, end, self.max_res_id)
    }

    /// [`assign`](Self::assign) with ResIDs up to `cap` only (an issuer that sized its share of
    /// the policing array below the routers' bound).
    pub fn assign_within(&mut self, ingress: u16, start: u64, end: u64, cap: u32) -> Result<u32, ResIdError> {
        self.assign_held(ingress, start, end, cap, None)
    }

    /// [`assign_within`](Self::assign_within) for `holder`, idempotently: if `holder` already
    /// holds a ResID on `ingress` for `[start, end)`, that ResID again. An assigner that crashes
    /// after the allocator was saved but before it recorded the ResID itself gets the same one
    /// back, rather than a second.
    pub fn assign_for(
        &mut self,
        holder: &str,
        ingress: u16,
        start: u64,
        end: u64,
        cap: u32,
    ) -> Result<u32, ResIdError> {
        let mine = |h: &&Held| h.holder.as_deref() == Some(holder) && (h.start, h.end) == (start, end);
        if let Some(h) = self.held(ingress).iter().find(mine) {
            return Ok(h.res_id);
        }
        self.assign_held(ingress, start, end, cap, Some(holder.to_string()))
    }

    fn assign_held(
        &mut self,
        ingress: u16,
        start: u64,
        end: u64,
        cap: u32,
        holder: Option<String>,
    ) -> Result<u32, ResIdError> {
        let cap = cap.min(self.max_res_id);
        if end <= start {
            return Err(ResIdError::EmptyInterval);
        }
        let held = self.held.entry(ingress).or_default();
        let mut taken: Vec<u32> = held.iter().filter(|h| h.start < end && start < h.end).map(|h| h.res_id).collect();
        taken.sort_unstable();
        taken.dedup();
        let id = taken.iter().enumerate().find(|(i, &t)| *i as u32 != t).map_or(taken.len() as u32, |(i, _)| i as u32);
        if id > cap {
            return Err(ResIdError::Exhausted(cap));
        }
        held.push(Held { res_id: id, start, end, holder });
        Ok(id)
    }

    /// Forgets reservations that ended at or before `now`; their ResIDs are free again.
    pub fn expire(&mut self, now: u64) {
        for held in self.held.values_mut() {
            held.retain(|h| h.end > now);
        }
    }

    /// Takes over the reservations another allocator held (a state written before one allocator
    /// served the whole AS); what it held keeps its ResIDs.
    pub fn absorb(&mut self, other: &ResIdAllocator) {
        for (ingress, held) in &other.held {
            let mine = self.held.entry(*ingress).or_default();
            for h in held {
                if !mine.contains(h) {
                    mine.push(h.clone());
                }
            }
        }
    }

    /// The reservations held on `ingress`.
    pub fn held(&self, ingress: u16) -> &[Held] {
        self.held.get(&ingress).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_fit_reuses_ids_after_an_interval_ends() {
        let mut a = ResIdAllocator::new(10);
        assert_eq!(a.assign(1, 0, 10), Ok(0));
        assert_eq!(a.assign(1, 5, 15), Ok(1));
        assert_eq!(a.assign(1, 10, 20), Ok(0), "[0,10) and [10,20) do not overlap");
        assert_eq!(a.assign(2, 0, 10), Ok(0), "interfaces are independent");
        assert_eq!(a.assign(1, 3, 3), Err(ResIdError::EmptyInterval));
    }

    #[test]
    fn exhaustion_is_an_error() {
        let mut a = ResIdAllocator::new(1);
        a.assign(1, 0, 10).unwrap();
        a.assign(1, 0, 10).unwrap();
        assert_eq!(a.assign(1, 0, 10), Err(ResIdError::Exhausted(1)));
        a.expire(10);
        assert_eq!(a.assign(1, 0, 10), Ok(0));
    }

    #[test]
    fn a_holder_asking_again_gets_the_same_id() {
        let mut a = ResIdAllocator::new(10);
        assert_eq!(a.assign_for("r1", 1, 0, 10, 10), Ok(0));
        assert_eq!(a.assign_for("r2", 1, 0, 10, 10), Ok(1));
        assert_eq!(a.assign_for("r1", 1, 0, 10, 10), Ok(0));
        assert_eq!(a.held(1).len(), 2);
        // Another interval or interface is another reservation.
        assert_eq!(a.assign_for("r1", 1, 5, 15, 10), Ok(2));
        assert_eq!(a.assign_for("r1", 2, 0, 10, 10), Ok(0));
        let back: ResIdAllocator = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    proptest! {
        #[test]
        fn overlapping_reservations_never_share_an_id(
            reqs in proptest::collection::vec((0u16..3, 0u64..100, 1u64..30), 1..80)
        ) {
            let mut a = ResIdAllocator::new(u32::MAX);
            for (ingress, start, len) in reqs {
                a.assign(ingress, start, start + len).unwrap();
            }
            for ingress in 0..3 {
                let h = a.held(ingress);
                for (i, x) in h.iter().enumerate() {
                    for y in &h[i + 1..] {
                        let overlap = x.start < y.end && y.start < x.end;
                        prop_assert!(!(overlap && x.res_id == y.res_id), "{x:?} {y:?}");
                    }
                    // First Fit: every smaller id is held by an overlapping reservation
                    // assigned before this one.
                    for smaller in 0..x.res_id {
                        prop_assert!(h[..i].iter().any(|y| y.res_id == smaller && x.start < y.end && y.start < x.end));
                    }
                }
            }
        }
    }
}
