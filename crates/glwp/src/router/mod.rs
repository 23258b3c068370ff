//! Validation at the border router of an on-path AS (the GLWP paper, Alg. 2 lines 9-18),
//! sans-IO: the router gets the whole SCION packet, the interface it arrived on and the time,
//! updates the hop pointer in place and returns a [`Verdict`]. Every drop is counted under a
//! named reason: a shared [`DropReason`] where one fits, else a [`GlwpDrop`].
//!
//! The AS's secret `K_k` is expanded once, when the router is built (and at each rotation); a
//! packet costs one CMAC
//! under it (the hop key, two AES blocks), one key expansion and CMAC under the hop key (the
//! hop authenticator, three AES blocks), a duplicate-filter lookup and a token-bucket update,
//! and no allocation. Packets go through in batches ([`stages`]): the AES work of a batch
//! interleaves, and the duplicate filter's cache misses overlap.
//!
//! **Rotating `K_k`.** [`Processor::rotate_secret`] puts the new `K_k` in front and keeps the one
//! it replaces until a deadline, which must cover every allocation issued under it (ΔT + L + ε
//! after the control service switched). A packet whose hop authenticator fails under the current
//! key is checked again under the previous one before the deadline: both MACs again, for that
//! packet alone and from the MAC inputs the batch already has, so that packets under the current
//! key cost what they did before rotations existed (a few instructions more, docs/glwp.md). The
//! key cannot be picked by ts_exp: allocations issued on either side of the switch share ts_exp
//! values.
//!
//! **The source AS's own packets.** A router built [`Router::with_source_as`] also sends its
//! own AS's GLWP packets out: a packet from inside the AS (ingress 0) with HP = 0 and Src = this
//! AS leaves at π's first egress `j_0`, after the freshness, duplicate and monitor checks (the
//! source AS has no hop key of its own to check). So the source AS's hosts get the guaranteed
//! class on its egress link only within β, and a host over its allocation is cut back before
//! its traffic crosses a link.
//!
//! **Duplicates before the monitor.** Alg. 2 passes a validated packet to the traffic monitor
//! (line 16), then to duplicate suppression (line 17). aviary suppresses duplicates first, so a
//! replayed packet is never charged to its source's allocation: a replaying adversary can
//! neither burn the source's β nor make it look like overuse (property F8).

mod stages;

use aviary_qos::{Claim, Context, DropCounters, DropReason, DuplicateFilter, Processor, Verdict};
use aviary_scion::cmac::CmacKey;
use aviary_scion::forwarding::KeyGenerations;
use aviary_scion::IsdAsn;

use crate::monitor::AidMonitor;
use crate::packet::{PacketError, PATH_TYPE};

pub use stages::BATCH;

aviary_qos::mechanism_drops! {
    /// A GLWP router's own reasons for dropping a packet.
    pub enum GlwpDrop {
        TimestampFuture => "timestamp_future",
        TimestampExpired => "timestamp_expired",
        AllocationExpired => "allocation_expired",
        BadHopAuthenticator => "bad_hop_authenticator",
        Overuse => "overuse",
        MonitorFull => "monitor_full",
        PathComplete => "path_complete",
    }
}

impl From<PacketError> for DropReason {
    fn from(e: PacketError) -> Self {
        match e {
            PacketError::Scion(e) => e.into(),
            PacketError::PathType(_) => DropReason::UnsupportedPathType,
            PacketError::Header(e) => e.into(),
            PacketError::PathLength { .. } | PacketError::HopKeyCount { .. } | PacketError::Emit(_) => {
                DropReason::MalformedPath
            }
            PacketError::SrcMismatch => DropReason::BadSrcIa,
            PacketError::TooLong => DropReason::PktLenOverflow,
        }
    }
}

/// The freshness parameters of Alg. 2: packet lifetime L and clock skew ε, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Freshness {
    pub lifetime_ns: u64,
    pub skew_ns: u64,
}

impl Freshness {
    /// Line 11: `now − ts_pkt ∈ [−ε, L + ε]`.
    pub(crate) fn check_packet(self, ts_pkt_ns: u64, now_ns: u64) -> Result<(), GlwpDrop> {
        if ts_pkt_ns > now_ns.saturating_add(self.skew_ns) {
            return Err(GlwpDrop::TimestampFuture);
        }
        if now_ns - ts_pkt_ns.min(now_ns) > self.lifetime_ns.saturating_add(self.skew_ns) {
            return Err(GlwpDrop::TimestampExpired);
        }
        Ok(())
    }

    /// Line 12: the allocation must outlive any packet accepted now, `ts_exp ≥ now + L + ε`.
    pub(crate) fn check_allocation(self, ts_exp_s: u32, now_ns: u64) -> Result<(), GlwpDrop> {
        let deadline = now_ns.saturating_add(self.lifetime_ns).saturating_add(self.skew_ns);
        if u64::from(ts_exp_s).saturating_mul(1_000_000_000) < deadline {
            return Err(GlwpDrop::AllocationExpired);
        }
        Ok(())
    }
}

/// The ts_pkt and ts_exp that pass lines 11 and 12 at one time ([`Freshness::window`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    earliest_ns: u64,
    /// `latest − earliest`, the accepted ts_pkt being `earliest..=latest`.
    span_ns: u64,
    min_ts_exp_s: u64,
}

impl Window {
    /// Whether a packet passes both [`Freshness::check_packet`] and
    /// [`Freshness::check_allocation`]: two compares, the first of the offset into the window
    /// (below `earliest`, the offset wraps around to a large value).
    #[inline(always)]
    pub(crate) fn admits(self, ts_pkt_ns: u64, ts_exp_s: u32) -> bool {
        ts_pkt_ns.wrapping_sub(self.earliest_ns) <= self.span_ns && u64::from(ts_exp_s) >= self.min_ts_exp_s
    }
}

impl Freshness {
    /// Lines 11 and 12 at `now_ns` as bounds: the router's stage 1 works them out from the
    /// batch's time (the compiler keeps them out of its loop), so that a packet costs two
    /// compares, where the checks themselves cost eight instructions and a multiplication.
    #[inline(always)]
    pub(crate) fn window(self, now_ns: u64) -> Window {
        let latest = now_ns.saturating_add(self.skew_ns);
        let earliest = now_ns.saturating_sub(self.lifetime_ns.saturating_add(self.skew_ns));
        let deadline = now_ns.saturating_add(self.lifetime_ns).saturating_add(self.skew_ns);
        // `ts_exp · 10⁹ ≥ deadline` (the product of a u32 and 10⁹ never saturates) is
        // `ts_exp ≥ ⌈deadline / 10⁹⌉`.
        Window { earliest_ns: earliest, span_ns: latest - earliest, min_ts_exp_s: deadline.div_ceil(1_000_000_000) }
    }
}

/// What a router counts beyond its drops.
#[derive(Clone, Debug, Default)]
pub struct RouterStats {
    pub drops: DropCounters,
    pub forwarded: u64,
    pub delivered: u64,
    /// Packets whose hop authenticator only the previous `K_k` verified (whatever became of them
    /// after: a replay is counted, then dropped as a duplicate): when it stops growing after a
    /// rotation, no allocation issued under the old key is in use.
    pub previous_key_packets: u64,
}

/// The border router of one on-path AS.
#[derive(Clone)]
pub struct Router {
    /// `K_k`, expanded once, with its CMAC subkeys; after a rotation also the one it replaced,
    /// until its deadline.
    secret: KeyGenerations<CmacKey>,
    freshness: Freshness,
    monitor: AidMonitor,
    duplicates: DuplicateFilter,
    /// This router's AS, if it sends its own hosts' GLWP packets out.
    source_as: Option<IsdAsn>,
    pub stats: RouterStats,
}

impl std::fmt::Debug for Router {
    // Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").field("freshness", &self.freshness).field("stats", &self.stats).finish_non_exhaustive()
    }
}

impl Router {
    /// A router of the AS whose secret is `as_secret` (`K_k`). The duplicate filter's window
    /// must cover the spread of times a packet passes the freshness check, `L + 2ε`.
    pub fn new(as_secret: &[u8; 16], freshness: Freshness, monitor: AidMonitor, duplicates: DuplicateFilter) -> Self {
        let secret = KeyGenerations::new(CmacKey::new(as_secret));
        Self { secret, freshness, monitor, duplicates, source_as: None, stats: RouterStats::default() }
    }

    /// This router also sends the GLWP packets of AS `ia`'s own hosts out (see the module
    /// documentation).
    pub fn with_source_as(mut self, ia: IsdAsn) -> Self {
        self.source_as = Some(ia);
        self
    }

    /// `K_k` is now `as_secret`; the key it replaces verifies until `previous_until_ns`, and a
    /// key of an earlier rotation still in its overlap is forgotten. The duplicate filter and
    /// the monitor are kept: a rotation gives no allocation fresh budget.
    pub fn rotate(&mut self, as_secret: &[u8; 16], previous_until_ns: u64) {
        self.secret.rotate(CmacKey::new(as_secret), previous_until_ns);
    }

    /// Validates `pkt`, which arrived on interface `ingress` at `now_ns` (ns since the Unix
    /// epoch), and advances its hop pointer: the stages of [`Self::process_batch`] sized for
    /// one packet.
    pub fn process(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let mut verdict = [Verdict::Deliver];
        self.run_fastest::<1>(&mut [pkt], ingress, now_ns, &mut verdict);
        verdict[0]
    }

    /// Validates packets that arrived on `ingress` at `now_ns`, [`BATCH`] at a time, with the
    /// same verdicts (and the same effect on the duplicate filter and the monitor) as
    /// [`Self::process`] on each in turn: see [`stages`] for how.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        for (pkts, verdicts) in pkts.chunks_mut(BATCH).zip(verdicts.chunks_mut(BATCH)) {
            self.run_fastest::<BATCH>(pkts, ingress, now_ns, verdicts);
        }
    }
}

impl Processor for Router {
    fn name(&self) -> &'static str {
        "glwp"
    }

    fn claims(&self) -> &'static [Claim] {
        &[Claim::PathType(PATH_TYPE)]
    }

    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
        Router::process_batch(self, pkts, ctx.ingress, ctx.now_ns, verdicts);
    }

    fn drop_reasons(&self) -> &'static [&'static str] {
        GlwpDrop::LABELS
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        out("forwarded", self.stats.forwarded);
        out("delivered", self.stats.delivered);
        out("previous_key_packets", self.stats.previous_key_packets);
    }

    /// `K_k` of the new master secret, as the GLWP service derives it for the hop keys it issues.
    fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        self.rotate(&crate::hop_key::as_secret(secret), previous_until_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_line_up_with_reasons() {
        assert_eq!(GlwpDrop::ALL.len(), GlwpDrop::LABELS.len());
        assert!(GlwpDrop::ALL.len() <= DropCounters::OWN);
        for (i, d) in GlwpDrop::ALL.iter().enumerate() {
            assert_eq!(*d as usize, i);
            assert_eq!(d.reason(), DropReason::Mechanism(i as u8));
        }
    }

    #[test]
    fn freshness_window() {
        const S: u64 = 1_000_000_000;
        let f = Freshness { lifetime_ns: S, skew_ns: 2 * S };
        let now = 100 * S;
        assert!(f.check_packet(now + 2 * S, now).is_ok() && f.check_packet(now - 3 * S, now).is_ok());
        assert_eq!(f.check_packet(now + 2 * S + 1, now), Err(GlwpDrop::TimestampFuture));
        assert_eq!(f.check_packet(now - 3 * S - 1, now), Err(GlwpDrop::TimestampExpired));
        assert!(f.check_allocation(103, now).is_ok());
        assert_eq!(f.check_allocation(102, now), Err(GlwpDrop::AllocationExpired));
    }

    /// The window's two compares admit what both checks admit, at and around every bound, for
    /// times near 0 (where the bounds saturate) and near u64::MAX.
    #[test]
    fn window_matches_the_checks() {
        const S: u64 = 1_000_000_000;
        for f in [Freshness { lifetime_ns: S, skew_ns: 2 * S }, Freshness { lifetime_ns: S / 3, skew_ns: 7 }] {
            for now in [0, 5, 3 * S - 1, 3 * S, 100 * S + 17, u64::from(u32::MAX) * S, u64::MAX - S, u64::MAX] {
                let w = f.window(now);
                let late = now.saturating_sub(f.lifetime_ns + f.skew_ns);
                let early = now.saturating_add(f.skew_ns);
                let deadline_s = (now.saturating_add(f.lifetime_ns + f.skew_ns) / S) as u32;
                for ts in [0, 1, late.saturating_sub(1), late, late + 1, now, early - 1, early, early.saturating_add(1)]
                {
                    for exp in [0, deadline_s.saturating_sub(1), deadline_s, deadline_s.saturating_add(1), u32::MAX] {
                        let both = f.check_packet(ts, now).is_ok() && f.check_allocation(exp, now).is_ok();
                        assert_eq!(w.admits(ts, exp), both, "{f:?} now {now} ts {ts} exp {exp}");
                    }
                }
            }
        }
    }
}
