//! What a router processor decides for one packet.

/// Forwarding class on an egress interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Traffic of a valid, non-exhausted reservation.
    Priority,
    /// Everything else.
    BestEffort,
}

/// The outcome of processing one packet at a router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send the (already updated) packet out of `egress` in `class`.
    Forward { egress: u16, class: Class },
    /// The packet has reached its destination AS: hand it to the local host or service.
    Deliver,
    /// Discard the packet; the reason is counted.
    Drop(DropReason),
}

impl Verdict {
    pub const fn priority(egress: u16) -> Self {
        Verdict::Forward { egress, class: Class::Priority }
    }
    pub const fn best_effort(egress: u16) -> Self {
        Verdict::Forward { egress, class: Class::BestEffort }
    }
}

macro_rules! drop_reasons {
    ($($variant:ident => $label:literal),+ $(,)?) => {
        /// Why a packet was dropped. Every variant has a stable label for metrics.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum DropReason { $($variant),+ }

        impl DropReason {
            /// All reasons, in discriminant order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant),+];
            /// The label used in metrics and logs.
            pub const fn label(self) -> &'static str {
                match self { $(DropReason::$variant => $label),+ }
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
}

/// Per-reason drop counters of one processor (no atomics: each core owns its own).
#[derive(Clone, Debug, Default)]
pub struct DropCounters {
    counts: [u64; DropReason::ALL.len()],
}

impl DropCounters {
    pub fn count(&mut self, reason: DropReason) {
        self.counts[reason as usize] += 1;
    }
    pub fn get(&self, reason: DropReason) -> u64 {
        self.counts[reason as usize]
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    /// `(label, count)` for every reason, zeros included, in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        DropReason::ALL.iter().map(|r| (r.label(), self.counts[*r as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_counted_separately() {
        let mut c = DropCounters::default();
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
            for _ in 0..=i {
                c.count(*r);
            }
        }
        let labels: std::collections::HashSet<_> = c.iter().map(|(l, _)| l).collect();
        assert_eq!(labels.len(), DropReason::ALL.len());
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(c.get(*r), i as u64 + 1);
        }
    }
}
