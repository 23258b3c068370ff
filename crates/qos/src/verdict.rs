//! What a router processor decides for one packet.

use crate::Admission;

/// The outcome of processing one packet at a router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send the (already updated) packet out of `egress`; the router's classifier maps the
    /// admission to a class of that link.
    Forward { egress: u16, admission: Admission },
    /// The packet has reached its destination AS: hand it to the local host or service.
    Deliver,
    /// Discard the packet; the reason is counted.
    Drop(DropReason),
}

impl Verdict {
    pub const fn forward(egress: u16, admission: Admission) -> Self {
        Verdict::Forward { egress, admission }
    }
    /// Forward as traffic of a valid reservation.
    pub const fn reserved(egress: u16) -> Self {
        Self::forward(egress, Admission::RESERVED)
    }
    /// Forward as standard, unauthenticated traffic.
    pub const fn unauthenticated(egress: u16) -> Self {
        Self::forward(egress, Admission::UNAUTHENTICATED)
    }
}

macro_rules! drop_reasons {
    ($($(#[$doc:meta])* $variant:ident => $label:literal),+ $(,)?) => {
        /// Why a packet was dropped: a reason every mechanism shares (parsing and checking SCION
        /// headers), or one of the processor's own. Every reason has a stable label for metrics.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DropReason {
            $($(#[$doc])* $variant,)+
            /// The processor's own reason `i`, labelled by its `Processor::drop_reasons()[i]`.
            Mechanism(u8),
        }

        impl DropReason {
            /// The shared reasons, in the order of [`Self::shared_index`].
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant),+];
            /// The label used in metrics and logs (`"mechanism"` for a processor's own reason,
            /// which the router labels through the processor).
            pub const fn label(self) -> &'static str {
                match self { $(DropReason::$variant => $label,)+ DropReason::Mechanism(_) => "mechanism" }
            }
            /// Position in [`Self::ALL`]; `None` for a processor's own reason.
            pub fn shared_index(self) -> Option<usize> {
                Self::ALL.iter().position(|r| *r == self)
            }
        }
    };
}

drop_reasons! {
    Truncated => "truncated",
    BadVersion => "bad_version",
    LengthMismatch => "length_mismatch",
    BadAddressType => "bad_address_type",
    UnsupportedPathType => "unsupported_path_type",
    MalformedPath => "malformed_path",
    PathIndexOutOfRange => "path_index_out_of_range",
    PktLenOverflow => "pkt_len_overflow",
    ExpiredHop => "expired_hop",
    BadMac => "bad_mac",
    BadIngress => "bad_ingress",
    UnknownEgress => "unknown_egress",
    BadSrcIa => "bad_src_ia",
    BadDstIa => "bad_dst_ia",
    EmptyPathNotLocal => "empty_path_not_local",
    /// EPIC: the packet timestamp lies beyond the allowed clock skew in the future.
    EpicTimestampFuture => "epic_timestamp_future",
    /// EPIC: the packet timestamp is older than the packet lifetime plus clock skew.
    EpicTimestampExpired => "epic_timestamp_expired",
    /// EPIC: a hop validation field does not match.
    BadHvf => "bad_hvf",
    /// A packet whose (source, timestamp) was already seen within the freshness window.
    Duplicate => "duplicate",
}

/// Per-reason drop counters of one processor (no atomics: each core owns its own).
#[derive(Clone, Debug, Default)]
pub struct DropCounters {
    shared: [u64; DropReason::ALL.len()],
    own: [u64; Self::OWN],
}

impl DropCounters {
    /// A processor's own reasons that are counted separately; later ones share the last slot.
    pub const OWN: usize = 16;

    fn slot(&mut self, reason: DropReason) -> &mut u64 {
        match reason {
            DropReason::Mechanism(i) => &mut self.own[usize::from(i).min(Self::OWN - 1)],
            r => &mut self.shared[r.shared_index().unwrap_or(0)],
        }
    }
    pub fn count(&mut self, reason: DropReason) {
        *self.slot(reason) += 1;
    }
    pub fn get(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::Mechanism(i) => self.own[usize::from(i).min(Self::OWN - 1)],
            r => r.shared_index().map_or(0, |i| self.shared[i]),
        }
    }
    pub fn total(&self) -> u64 {
        self.shared.iter().chain(&self.own).sum()
    }
    /// `(reason, count)` for every shared reason (zeros included, in a stable order), then every
    /// own reason with a label in `own_labels`.
    pub fn iter<'a>(&'a self, own_labels: &'a [&'static str]) -> impl Iterator<Item = (&'static str, u64)> + 'a {
        let shared = DropReason::ALL.iter().zip(&self.shared).map(|(r, n)| (r.label(), *n));
        shared.chain(own_labels.iter().zip(&self.own).map(|(l, n)| (*l, *n)))
    }
}

/// Declares a mechanism's own drop reasons: an enum `$name` with one variant per reason, its
/// metric labels (`LABELS[r as usize]`, the order of `ALL`) and the router's reason for each,
/// [`DropReason::Mechanism`] with the variant's index, which [`crate::drop_label`] maps back
/// to the label through the processor.
#[macro_export]
macro_rules! mechanism_drops {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident => $label:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        $vis enum $name {
            $($variant,)+
        }

        impl $name {
            /// Every reason, in the order of [`Self::LABELS`].
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Metric labels; `LABELS[r as usize]` is the label of `r`.
            pub const LABELS: &'static [&'static str] = &[$($label),+];

            pub const fn label(self) -> &'static str {
                Self::LABELS[self as usize]
            }
            /// The router's drop reason: the processor's own reason of the same index.
            pub const fn reason(self) -> $crate::DropReason {
                $crate::DropReason::Mechanism(self as u8)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_counted_separately() {
        let mut c = DropCounters::default();
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.shared_index(), Some(i));
            for _ in 0..=i {
                c.count(*r);
            }
        }
        c.count(DropReason::Mechanism(1));
        c.count(DropReason::Mechanism(1));
        let labels: std::collections::HashSet<_> = c.iter(&["own_a", "own_b"]).map(|(l, _)| l).collect();
        assert_eq!(labels.len(), DropReason::ALL.len() + 2);
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(c.get(*r), i as u64 + 1);
        }
        assert_eq!(c.get(DropReason::Mechanism(0)), 0);
        assert_eq!(c.get(DropReason::Mechanism(1)), 2);
        assert!(c.iter(&["own_a", "own_b"]).any(|x| x == ("own_b", 2)));
        assert_eq!(DropReason::Mechanism(3).shared_index(), None);
    }
}
