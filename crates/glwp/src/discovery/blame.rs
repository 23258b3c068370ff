//! What an AS holds against its neighbours (the GLWP paper, §V-A: an inconsistent neighbour
//! "can be blamed", and the AS "can refuse any further allocation requests"): every blame
//! counted per neighbour and reason for the operator, and a cut-off policy. After
//! [`BlamePolicy::blames`] blames within [`BlamePolicy::window_ns`] the neighbour is **held
//! down**: discoveries through it are refused for [`BlamePolicy::hold_down_ns`]. Blames decay:
//! only those within the window count towards the next hold-down, and a hold-down ends on its
//! own (or when the operator clears it), so a neighbour that was wrong once, e.g. an
//! announcement lost at a bad moment, is never shut out for good.
//!
//! Bounded state: per neighbour (at most one per link of this AS) its counters and the times
//! of at most `blames` recent blames.

use std::collections::{BTreeMap, VecDeque};

use aviary_scion::IsdAsn;

/// Why a neighbour was blamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlameReason {
    /// It promoted hop values other than it announced for that time.
    InconsistentValues,
    /// It promoted hop values over a link it never announced, though it announced others.
    Unannounced,
    /// An announcement contradicts itself or an earlier one.
    ContradictingAnnouncement,
}

impl BlameReason {
    pub const ALL: [BlameReason; 3] =
        [BlameReason::InconsistentValues, BlameReason::Unannounced, BlameReason::ContradictingAnnouncement];

    pub fn label(self) -> &'static str {
        match self {
            BlameReason::InconsistentValues => "inconsistent_values",
            BlameReason::Unannounced => "unannounced",
            BlameReason::ContradictingAnnouncement => "contradicting_announcement",
        }
    }
}

/// What a neighbour was blamed for, for the operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blame {
    /// Per reason, in the order of [`BlameReason::ALL`].
    pub counts: [u64; 3],
    pub last: BlameReason,
    pub last_ns: u64,
    /// How often the policy held the neighbour down.
    pub hold_downs: u64,
    /// Discoveries through the neighbour are refused until then (0: never held down).
    pub held_until_ns: u64,
}

impl Blame {
    pub fn count(&self, reason: BlameReason) -> u64 {
        self.counts[reason as usize]
    }

    pub fn held_down_at(&self, now_ns: u64) -> bool {
        now_ns < self.held_until_ns
    }
}

/// When blame cuts a neighbour off: `blames` blames within `window_ns` hold it down for
/// `hold_down_ns`. `blames = 0` never holds anyone down (blames are still counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlamePolicy {
    pub blames: u32,
    pub window_ns: u64,
    pub hold_down_ns: u64,
}

impl Default for BlamePolicy {
    /// Conservative: a burst of 10 blames within a minute (no honest neighbour gets there:
    /// each blame is a message whose values contradict the neighbour's own signed
    /// announcement) holds it down for 5 minutes.
    fn default() -> Self {
        Self { blames: 10, window_ns: 60_000_000_000, hold_down_ns: 300_000_000_000 }
    }
}

/// The blame records of one AS's neighbours under a policy.
#[derive(Clone, Debug, Default)]
pub struct BlameBook {
    policy: BlamePolicy,
    records: BTreeMap<IsdAsn, Blame>,
    /// The times of the blames of each neighbour within the policy's window, oldest first.
    recent: BTreeMap<IsdAsn, VecDeque<u64>>,
}

impl BlameBook {
    pub fn new(policy: BlamePolicy) -> Self {
        Self { policy, records: BTreeMap::new(), recent: BTreeMap::new() }
    }

    /// Blames `n` for `reason` at `now_ns`; holds it down if that makes `policy.blames` within
    /// the window.
    pub fn blame(&mut self, n: IsdAsn, reason: BlameReason, now_ns: u64) {
        let b = self.records.entry(n).or_insert(Blame {
            counts: [0; 3],
            last: reason,
            last_ns: now_ns,
            hold_downs: 0,
            held_until_ns: 0,
        });
        b.counts[reason as usize] += 1;
        (b.last, b.last_ns) = (reason, now_ns);
        let p = self.policy;
        if p.blames == 0 {
            return;
        }
        let recent = self.recent.entry(n).or_default();
        recent.push_back(now_ns);
        while recent.front().is_some_and(|&t| now_ns.saturating_sub(t) >= p.window_ns)
            || recent.len() > p.blames as usize
        {
            recent.pop_front();
        }
        if recent.len() >= p.blames as usize {
            recent.clear();
            b.hold_downs += 1;
            b.held_until_ns = now_ns.saturating_add(p.hold_down_ns);
        }
    }

    /// Whether discoveries through `n` are refused at `now_ns`.
    pub fn held_down(&self, n: IsdAsn, now_ns: u64) -> bool {
        self.records.get(&n).is_some_and(|b| b.held_down_at(now_ns))
    }

    /// The operator's reset: ends `n`'s hold-down and forgets its recent blames (the counters
    /// stay, for the record). Whether it was held down at `now_ns`.
    pub fn clear(&mut self, n: IsdAsn, now_ns: u64) -> bool {
        self.recent.remove(&n);
        match self.records.get_mut(&n) {
            Some(b) => {
                let was = b.held_down_at(now_ns);
                b.held_until_ns = 0;
                was
            }
            None => false,
        }
    }

    pub fn records(&self) -> &BTreeMap<IsdAsn, Blame> {
        &self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn book(blames: u32) -> BlameBook {
        BlameBook::new(BlamePolicy { blames, window_ns: 10 * S, hold_down_ns: 100 * S })
    }

    #[test]
    fn enough_blames_within_the_window_hold_a_neighbour_down_until_it_ends() {
        let (n, other) = (IsdAsn::new(1, 1), IsdAsn::new(1, 2));
        let mut b = book(3);
        b.blame(n, BlameReason::InconsistentValues, 0);
        b.blame(n, BlameReason::Unannounced, S);
        assert!(!b.held_down(n, S));
        b.blame(n, BlameReason::InconsistentValues, 2 * S);
        assert!(b.held_down(n, 2 * S) && b.held_down(n, 102 * S - 1));
        assert!(!b.held_down(n, 102 * S), "the hold-down ends on its own");
        assert!(!b.held_down(other, 2 * S), "per neighbour");
        let r = b.records()[&n];
        assert_eq!(
            (r.hold_downs, r.count(BlameReason::InconsistentValues), r.last),
            (1, 2, BlameReason::InconsistentValues)
        );
    }

    #[test]
    fn blames_decay_out_of_the_window() {
        let n = IsdAsn::new(1, 1);
        let mut b = book(3);
        // Two a window apart, forever: never three within one.
        for k in 0..20 {
            b.blame(n, BlameReason::InconsistentValues, k * 6 * S);
        }
        assert!(!b.held_down(n, 120 * S));
        assert_eq!(b.records()[&n].hold_downs, 0);
        assert_eq!(b.records()[&n].count(BlameReason::InconsistentValues), 20);
    }

    #[test]
    fn the_operator_clears_a_hold_down_and_a_zero_policy_never_holds() {
        let n = IsdAsn::new(1, 1);
        let mut b = book(1);
        b.blame(n, BlameReason::ContradictingAnnouncement, 5);
        assert!(b.held_down(n, 6));
        assert!(b.clear(n, 6));
        assert!(!b.held_down(n, 6) && !b.clear(n, 6));
        assert_eq!(b.records()[&n].count(BlameReason::ContradictingAnnouncement), 1, "the record stays");
        let mut off = book(0);
        for t in 0..100 {
            off.blame(n, BlameReason::InconsistentValues, t);
        }
        assert!(!off.held_down(n, 100));
    }
}
