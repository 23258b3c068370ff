//! An AS's allocation matrix over time (the GLWP paper, §V-C). Allocations last ΔT, so when an
//! AS changes its matrix at `t_1`, allocations made under the old one stay valid until
//! `t_2 = t_1 + ΔT`. During `[t_1, t_2)` the AS promotes **temporary** hop values (the larger
//! divergent and convergent, the smaller entry of the old and new matrix,
//! [`HopValues::during_update`]); from `t_2` on the new ones. Temporary allocations are at most
//! the old and at most the new ones, so the allocations valid at any time never exceed either
//! matrix: old and temporary ones overlap in `[t_1, t_2)`, temporary and new ones in
//! `[t_2, t_2 + ΔT)`.
//!
//! The time that selects the values is the discovery's `ts_pkt`, not the clock of the AS that
//! reads it: an allocation's expiry is `ts_pkt + ΔT`, so the phase of `ts_pkt` is the phase the
//! allocation was made in, and every AS on the path (and the neighbours that check the values)
//! picks the same phase for one message.

use thiserror::Error;

use crate::allocation::HopValues;
use crate::matrix::{AllocationMatrix, InterfaceId};

/// When a change happens: temporary values from `t1_ns`, the new ones from `t2_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChangeWindow {
    pub t1_ns: u64,
    pub t2_ns: u64,
}

/// Which of the three value sets holds at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Before,
    Temporary,
    After,
}

impl ChangeWindow {
    pub fn phase(&self, at_ns: u64) -> Phase {
        if at_ns < self.t1_ns {
            Phase::Before
        } else if at_ns < self.t2_ns {
            Phase::Temporary
        } else {
            Phase::After
        }
    }
}

/// The values of one path through an AS at `at_ns`, given its values before and after a
/// change in `window` (none: `after` always).
pub fn values_at(before: HopValues, after: HopValues, window: Option<ChangeWindow>, at_ns: u64) -> HopValues {
    match window.map_or(Phase::After, |w| w.phase(at_ns)) {
        Phase::Before => before,
        Phase::Temporary => HopValues::during_update(before, after),
        Phase::After => after,
    }
}

/// Why a matrix change cannot be scheduled.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum ScheduleError {
    /// A second change before `t_2` of the first would leave allocations of three matrices
    /// valid at once, which the temporary values of two do not cover.
    #[error("a change is in progress until {t2_ns} ns; the next may start then")]
    ChangeInProgress { t2_ns: u64 },
    /// The announcement of a link lists every other interface of the old and the new matrix.
    #[error("the matrices name {rows} interfaces besides a link's own; an announcement lists at most {max}")]
    TooManyInterfaces { rows: usize, max: usize },
    /// A resumed schedule whose change ends before it starts.
    #[error("the change window ends ({t2_ns} ns) before it starts ({t1_ns} ns)")]
    Window { t1_ns: u64, t2_ns: u64 },
}

/// An AS's matrix schedule: the matrix before the latest change, and that change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixSchedule {
    before: AllocationMatrix,
    after: AllocationMatrix,
    window: Option<ChangeWindow>,
}

impl MatrixSchedule {
    /// The matrix of an AS that joins with `matrix` (no change).
    pub fn new(matrix: AllocationMatrix) -> Self {
        Self { before: matrix.clone(), after: matrix, window: None }
    }

    /// A schedule as it was: `before` changing to `after` in `window` (none: `after` only),
    /// e.g. read back after a restart.
    pub fn resume(
        before: AllocationMatrix,
        after: AllocationMatrix,
        window: Option<ChangeWindow>,
    ) -> Result<Self, ScheduleError> {
        match window {
            Some(w) if w.t2_ns < w.t1_ns => Err(ScheduleError::Window { t1_ns: w.t1_ns, t2_ns: w.t2_ns }),
            Some(_) => Ok(Self { before, after, window }),
            None => Ok(Self::new(after)),
        }
    }

    /// Which values hold at `at_ns`.
    pub fn phase(&self, at_ns: u64) -> Phase {
        self.window.map_or(Phase::After, |w| w.phase(at_ns))
    }

    /// `DIV_i` at `at_ns`: the old matrix's, the larger of both during the change, the new one's.
    pub fn divergent_bps(&self, i: InterfaceId, at_ns: u64) -> u64 {
        let (b, a) = (self.before.divergent_bps(i), self.after.divergent_bps(i));
        match self.phase(at_ns) {
            Phase::Before => b,
            Phase::Temporary => b.max(a),
            Phase::After => a,
        }
    }

    /// Changes to `new` from `t1_ns` on, definitively at `t1_ns + overlap_ns` (ΔT).
    pub fn change(&mut self, new: AllocationMatrix, t1_ns: u64, overlap_ns: u64) -> Result<(), ScheduleError> {
        if let Some(w) = self.window {
            if t1_ns < w.t2_ns {
                return Err(ScheduleError::ChangeInProgress { t2_ns: w.t2_ns });
            }
        }
        self.before = std::mem::replace(&mut self.after, new);
        self.window = Some(ChangeWindow { t1_ns, t2_ns: t1_ns.saturating_add(overlap_ns) });
        Ok(())
    }

    /// The hop values promoted at `at_ns` for a path through `(ingress, egress)`.
    pub fn hop_values(&self, ingress: InterfaceId, egress: InterfaceId, at_ns: u64) -> HopValues {
        let (b, a) = (self.before.hop_values(ingress, egress), self.after.hop_values(ingress, egress));
        values_at(b, a, self.window, at_ns)
    }

    /// The matrix before the latest change (the only one when there was none).
    pub fn before(&self) -> &AllocationMatrix {
        &self.before
    }

    /// The matrix after the latest change.
    pub fn after(&self) -> &AllocationMatrix {
        &self.after
    }

    pub fn window(&self) -> Option<ChangeWindow> {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::MatrixEntry;

    fn m(entries: &[(u16, u16, u64)]) -> AllocationMatrix {
        AllocationMatrix::new(entries.iter().map(|&(ingress, egress, bps)| MatrixEntry { ingress, egress, bps }))
            .unwrap()
    }

    #[test]
    fn old_then_temporary_then_new() {
        let old = m(&[(1, 2, 60), (1, 0, 40), (0, 2, 20)]);
        let new = m(&[(1, 2, 80), (1, 0, 10), (0, 2, 30)]);
        let mut s = MatrixSchedule::new(old.clone());
        assert_eq!(s.hop_values(1, 2, 0), old.hop_values(1, 2));
        s.change(new.clone(), 100, 50).unwrap();
        assert_eq!(s.hop_values(1, 2, 99), old.hop_values(1, 2));
        // DIV_1 = max(100, 90), M = min(60, 80), CON_2 = max(80, 110).
        assert_eq!(s.hop_values(1, 2, 100), HopValues::new(100, 60, 110).unwrap());
        assert_eq!(s.hop_values(1, 2, 149), HopValues::new(100, 60, 110).unwrap());
        assert_eq!(s.hop_values(1, 2, 150), new.hop_values(1, 2));
        assert_eq!(s.change(old.clone(), 149, 50), Err(ScheduleError::ChangeInProgress { t2_ns: 150 }));
        s.change(old.clone(), 150, 50).unwrap();
        assert_eq!(s.before(), &new);
        assert_eq!(s.hop_values(1, 2, 149), new.hop_values(1, 2), "before the second change: the first's new values");
    }
}
