//! Validation at the border router of an on-path AS (the GLWP paper, Alg. 2 lines 9-18),
//! sans-IO: the router gets the whole SCION packet, the interface it arrived on and the time,
//! updates the hop pointer in place and returns a [`Verdict`]. Every drop is counted under a
//! named reason: a shared [`DropReason`] where one fits, else a [`GlwpDrop`].
//!
//! The AS's secret `K_k` is expanded once, when the router is built; a packet costs one CMAC
//! under it (the hop key), one key expansion and CMAC under the hop key (the hop
//! authenticator), a duplicate-filter lookup and a token-bucket update, and no allocation.
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

use aes::Aes128;
use aviary_qos::{Admission, Claim, Context, DropCounters, DropReason, DuplicateFilter, Processor, Verdict};
use aviary_scion::IsdAsn;
use cmac::{Cmac, Mac};

use crate::header::{field::HA_LEN, Header};
use crate::hop_key::{hop_authenticator, HopKeyInput};
use crate::matrix::LOCAL_INTERFACE;
use crate::monitor::{AidMonitor, MonitorVerdict};
use crate::packet::{locate, PacketError, PATH_TYPE};

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
    fn check_allocation(self, ts_exp_s: u32, now_ns: u64) -> Result<(), GlwpDrop> {
        let deadline = now_ns.saturating_add(self.lifetime_ns).saturating_add(self.skew_ns);
        if u64::from(ts_exp_s).saturating_mul(1_000_000_000) < deadline {
            return Err(GlwpDrop::AllocationExpired);
        }
        Ok(())
    }
}

/// What a router counts beyond its drops.
#[derive(Clone, Debug, Default)]
pub struct RouterStats {
    pub drops: DropCounters,
    pub forwarded: u64,
    pub delivered: u64,
}

/// The border router of one on-path AS.
#[derive(Clone)]
pub struct Router {
    /// `K_k`, expanded once.
    secret: Cmac<Aes128>,
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
        let secret = <Cmac<Aes128> as Mac>::new(as_secret.into());
        Self { secret, freshness, monitor, duplicates, source_as: None, stats: RouterStats::default() }
    }

    /// This router also sends the GLWP packets of AS `ia`'s own hosts out (see the module
    /// documentation).
    pub fn with_source_as(mut self, ia: IsdAsn) -> Self {
        self.source_as = Some(ia);
        self
    }

    /// Validates `pkt`, which arrived on interface `ingress` at `now_ns` (ns since the Unix
    /// epoch), and advances its hop pointer.
    pub fn process(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let verdict = match self.validate(pkt, ingress, now_ns) {
            Ok(v) => v,
            Err(reason) => {
                self.stats.drops.count(reason);
                return Verdict::Drop(reason);
            }
        };
        match verdict {
            Verdict::Deliver => self.stats.delivered += 1,
            _ => self.stats.forwarded += 1,
        }
        verdict
    }

    fn validate(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Result<Verdict, DropReason> {
        let at = locate(pkt)?;
        let mut header = Header::new_checked(&mut pkt[at.header]).map_err(DropReason::from)?;
        let (lambda, hp) = (header.lambda(), header.hop_pointer());
        if hp >= lambda {
            return Err(GlwpDrop::PathComplete.reason());
        }
        if ingress == LOCAL_INTERFACE && hp == 0 {
            return self.leave_source_as(&header, at.src, at.pkt_len, now_ns);
        }
        // This AS is on-path AS k = HP + 1: pair k of π, hop authenticator k.
        let k = usize::from(hp) + 1;
        let (i_k, j_k) = header.pair(k).ok_or(DropReason::PathIndexOutOfRange)?;
        if ingress != i_k {
            return Err(DropReason::BadIngress);
        }
        // Only the destination (k = λ) leaves at its local interface, and only it may.
        if (j_k == LOCAL_INTERFACE) != (k == usize::from(lambda)) || i_k == LOCAL_INTERFACE {
            return Err(DropReason::MalformedPath);
        }
        self.freshness.check_packet(header.ts_pkt(), now_ns).map_err(GlwpDrop::reason)?;
        self.freshness.check_allocation(header.ts_exp(), now_ns).map_err(GlwpDrop::reason)?;
        let input = HopKeyInput {
            src: at.src,
            aid: header.aid(),
            beta: header.beta(),
            ingress: i_k,
            egress: j_k,
            ts_exp: header.ts_exp(),
        };
        let mut mac = self.secret.clone();
        mac.update(&input.bytes());
        let hop_key: [u8; 16] = mac.finalize().into_bytes().into();
        let want = hop_authenticator(&hop_key, at.src, header.ts_pkt(), at.pkt_len);
        if !ha_eq(header.hop_authenticator(k), &want) {
            return Err(GlwpDrop::BadHopAuthenticator.reason());
        }
        self.suppress_and_charge(&header, at.src, at.pkt_len, now_ns)?;
        header.advance_hop_pointer();
        Ok(if j_k == LOCAL_INTERFACE { Verdict::Deliver } else { Verdict::forward(j_k, Admission::GUARANTEED) })
    }
}

impl Router {
    /// A packet of this AS's own host, on its way to on-path AS 1: forwarded on `j_0` in the
    /// guaranteed class if fresh, not a replay and within β; its hop pointer stays at 0.
    fn leave_source_as(
        &mut self,
        header: &Header<&mut [u8]>,
        src: IsdAsn,
        pkt_len: u16,
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if self.source_as != Some(src) {
            // A host of this AS sending under another AS's name, or a router that sends no
            // GLWP of its own: nothing here may leave as GLWP.
            return Err(DropReason::BadSrcIa);
        }
        let (i_0, j_0) = header.pair(0).ok_or(DropReason::PathIndexOutOfRange)?;
        if i_0 != LOCAL_INTERFACE || j_0 == LOCAL_INTERFACE {
            return Err(DropReason::MalformedPath);
        }
        self.freshness.check_packet(header.ts_pkt(), now_ns).map_err(GlwpDrop::reason)?;
        self.freshness.check_allocation(header.ts_exp(), now_ns).map_err(GlwpDrop::reason)?;
        self.suppress_and_charge(header, src, pkt_len, now_ns)?;
        Ok(Verdict::forward(j_0, Admission::GUARANTEED))
    }

    /// Line 17 before line 16: a replay is dropped before it can be charged to its source.
    fn suppress_and_charge(
        &mut self,
        header: &Header<&mut [u8]>,
        src: IsdAsn,
        pkt_len: u16,
        now_ns: u64,
    ) -> Result<(), DropReason> {
        let mut dup_key = [0u8; 16];
        dup_key[..8].copy_from_slice(&src.to_bytes());
        dup_key[8..].copy_from_slice(&header.ts_pkt().to_be_bytes());
        if !self.duplicates.check_and_insert(&dup_key, now_ns) {
            return Err(DropReason::Duplicate);
        }
        match self.monitor.charge(header.aid(), header.beta(), header.ts_exp(), u32::from(pkt_len), now_ns) {
            MonitorVerdict::Within => Ok(()),
            MonitorVerdict::Overuse => Err(GlwpDrop::Overuse.reason()),
            MonitorVerdict::Full => Err(GlwpDrop::MonitorFull.reason()),
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
        for (pkt, verdict) in pkts.iter_mut().zip(verdicts) {
            *verdict = self.process(pkt, ctx.ingress, ctx.now_ns);
        }
    }

    fn drop_reasons(&self) -> &'static [&'static str] {
        GlwpDrop::LABELS
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        out("forwarded", self.stats.forwarded);
        out("delivered", self.stats.delivered);
    }
}

/// Constant-time comparison of a received hop authenticator with the recomputed one.
fn ha_eq(got: Option<[u8; HA_LEN]>, want: &[u8; HA_LEN]) -> bool {
    got.is_some_and(|got| got.iter().zip(want).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0)
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
}
