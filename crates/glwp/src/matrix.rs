//! An AS's allocation matrix `M` (the GLWP paper, §II-B) with its divergents and convergents
//! (Eq. 1).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::allocation::HopValues;

/// A SCION interface identifier of an AS.
pub type InterfaceId = u16;

/// The local interface: the sources and destinations of traffic inside the AS. A path starts
/// at its source AS's local interface and ends at its destination AS's.
pub const LOCAL_INTERFACE: InterfaceId = 0;

/// One entry of a matrix: at most `bps` for all paths entering at `ingress` and leaving at
/// `egress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixEntry {
    pub ingress: InterfaceId,
    pub egress: InterfaceId,
    pub bps: u64,
}

/// Why a list of entries is no allocation matrix; `index` is the entry's position in the list.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum MatrixError {
    #[error("interface pair ({ingress}, {egress}) is listed twice")]
    DuplicatePair { index: usize, ingress: InterfaceId, egress: InterfaceId },
    #[error("ingress and egress are the same interface {interface}: no loop-free path uses that pair")]
    SameInterface { index: usize, interface: InterfaceId },
    #[error("the divergent or convergent exceeds 2^64 - 1 bit/s")]
    SumOverflow { index: usize },
}

impl MatrixError {
    /// The position of the offending entry in the list given to [`AllocationMatrix::new`].
    pub fn index(&self) -> usize {
        match *self {
            MatrixError::DuplicatePair { index, .. }
            | MatrixError::SameInterface { index, .. }
            | MatrixError::SumOverflow { index } => index,
        }
    }
}

/// `M^(k)` with `DIV_i = Σ_j M_ij` and `CON_j = Σ_i M_ij`. Pairs not listed are 0: no path
/// through them is allocated anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocationMatrix {
    entries: BTreeMap<(InterfaceId, InterfaceId), u64>,
    divergent: BTreeMap<InterfaceId, u64>,
    convergent: BTreeMap<InterfaceId, u64>,
}

impl AllocationMatrix {
    pub fn new(entries: impl IntoIterator<Item = MatrixEntry>) -> Result<Self, MatrixError> {
        let mut m = Self::default();
        for (index, e) in entries.into_iter().enumerate() {
            if e.ingress == e.egress {
                return Err(MatrixError::SameInterface { index, interface: e.ingress });
            }
            if m.entries.insert((e.ingress, e.egress), e.bps).is_some() {
                return Err(MatrixError::DuplicatePair { index, ingress: e.ingress, egress: e.egress });
            }
            let div = m.divergent.entry(e.ingress).or_default();
            *div = div.checked_add(e.bps).ok_or(MatrixError::SumOverflow { index })?;
            let con = m.convergent.entry(e.egress).or_default();
            *con = con.checked_add(e.bps).ok_or(MatrixError::SumOverflow { index })?;
        }
        Ok(m)
    }

    /// `M_ij` (0 for a pair not listed).
    pub fn entry_bps(&self, ingress: InterfaceId, egress: InterfaceId) -> u64 {
        self.entries.get(&(ingress, egress)).copied().unwrap_or(0)
    }

    /// `DIV_i` (Eq. 1).
    pub fn divergent_bps(&self, ingress: InterfaceId) -> u64 {
        self.divergent.get(&ingress).copied().unwrap_or(0)
    }

    /// `CON_j` (Eq. 1).
    pub fn convergent_bps(&self, egress: InterfaceId) -> u64 {
        self.convergent.get(&egress).copied().unwrap_or(0)
    }

    /// What the AS announces for a path through `(ingress, egress)`.
    pub fn hop_values(&self, ingress: InterfaceId, egress: InterfaceId) -> HopValues {
        let (div, m, con) = (self.divergent_bps(ingress), self.entry_bps(ingress, egress), self.convergent_bps(egress));
        // Eq. 1 sums M_ij into both DIV_i and CON_j, so M_ij ≤ both.
        HopValues::new(div, m, con).unwrap_or_else(|_| unreachable!("an entry is part of its own sums"))
    }

    /// The listed entries, ordered by (ingress, egress).
    pub fn entries(&self) -> impl Iterator<Item = MatrixEntry> + '_ {
        self.entries.iter().map(|(&(ingress, egress), &bps)| MatrixEntry { ingress, egress, bps })
    }

    /// Every interface the matrix names, the local interface included if it does.
    pub fn interfaces(&self) -> impl Iterator<Item = InterfaceId> + '_ {
        let mut all: Vec<InterfaceId> = self.divergent.keys().chain(self.convergent.keys()).copied().collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(ingress: InterfaceId, egress: InterfaceId, bps: u64) -> MatrixEntry {
        MatrixEntry { ingress, egress, bps }
    }

    /// DIV and CON of a three-interface AS, summed by hand:
    /// ```text
    ///        to 0  to 1  to 2   DIV
    /// from 0   -    10    20    30
    /// from 1   5    -     7     12
    /// from 2   3    4     -     7
    /// CON      8    14    27
    /// ```
    #[test]
    fn divergents_and_convergents_are_row_and_column_sums() {
        let m =
            AllocationMatrix::new([e(0, 1, 10), e(0, 2, 20), e(1, 0, 5), e(1, 2, 7), e(2, 0, 3), e(2, 1, 4)]).unwrap();
        assert_eq!([0, 1, 2].map(|i| m.divergent_bps(i)), [30, 12, 7]);
        assert_eq!([0, 1, 2].map(|j| m.convergent_bps(j)), [8, 14, 27]);
        let hv = m.hop_values(1, 2);
        assert_eq!((hv.divergent_bps(), hv.entry_bps(), hv.convergent_bps()), (12, 7, 27));
        let none = m.hop_values(3, 1);
        assert_eq!((none.divergent_bps(), none.entry_bps(), none.convergent_bps()), (0, 0, 14));
        assert_eq!(m.interfaces().collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    #[test]
    fn bad_lists_name_the_entry() {
        assert_eq!(
            AllocationMatrix::new([e(0, 1, 1), e(0, 1, 2)]),
            Err(MatrixError::DuplicatePair { index: 1, ingress: 0, egress: 1 })
        );
        assert_eq!(AllocationMatrix::new([e(3, 3, 1)]), Err(MatrixError::SameInterface { index: 0, interface: 3 }));
        let err = AllocationMatrix::new([e(0, 1, u64::MAX), e(2, 1, 1)]).unwrap_err();
        assert_eq!(err, MatrixError::SumOverflow { index: 1 });
        assert_eq!(err.index(), 1);
    }
}
