//! The traffic monitor of an on-path AS: one token bucket per allocation, keyed by AID, at the
//! allocation's β (the GLWP paper, §V-B and §V-D: the monitor's flow key is the AID).
//!
//! Routers keep no per-allocation state set up in advance: a bucket is claimed for an AID
//! when its first validated packet arrives and freed when its allocation expires. The table
//! has a fixed number of slots, found by linear probing from a keyed hash of the AID over
//! [`PROBES`] slots; claiming, looking up and freeing never allocate. When every probed slot
//! holds a live allocation the packet is refused ([`MonitorVerdict::Full`]) rather than
//! evicting one: a fresh bucket for an evicted allocation would let its source overuse.
//!
//! A bucket refills at β rounded down to 100 kbit/s units (a monitor must never let more
//! through than allocated) and capped at 6.5535 Gbit/s, as `aviary_qos`'s token buckets do;
//! its burst is the monitor's. The same AID with another authentic β (a new discovery after a
//! matrix update) moves the bucket to the later packet's β: both allocations share one bucket,
//! so the source's traffic on the path never exceeds the larger of them (property F3).
//!
//! **One cache line per allocation.** A slot holds the AID, β, ts_exp and the bucket itself
//! (32 bytes, aligned, so a slot never straddles two lines): a packet of a live allocation
//! touches one line, which the router prefetches in its first stage. The bucket counts credit
//! in 1/80 000 of a byte, the amount one ns earns at 100 kbit/s, so that a refill is one
//! multiplication (`elapsed ns · rate`) and a charge one of `len · 80 000`: no division, no
//! rounding (the bucket is exact, where `aviary_qos::TokenBucket` keeps whole bytes and
//! carries the fraction of one in its stamp), and a full 64-bit stamp of ns, so no idle gap
//! is mistaken for another.

use aviary_qos::{prefetch, Rate};

/// Slots probed for one AID.
pub const PROBES: usize = 8;

/// Credit of one byte: ns of one byte at one rate unit (100 kbit/s), `8 bit · 10⁹ / 10⁵`.
const CREDIT_PER_BYTE: u64 = 8 * 1_000_000_000 / aviary_qos::RATE_UNIT_BPS;

/// An allocation's slot with its token bucket: one half of a cache line.
#[repr(C, align(32))]
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    aid: u64,
    /// The bucket's credit at `stamp_ns`, in 1/[`CREDIT_PER_BYTE`] bytes, at most the burst's.
    credit: u64,
    /// ns up to which `credit` is accounted.
    stamp_ns: u64,
    beta_kbps: u32,
    /// Unix s; the slot is free once the time is past it (0: never used).
    ts_exp_s: u32,
}

/// What the monitor decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonitorVerdict {
    /// Within β: charged to the allocation's bucket.
    Within,
    /// Beyond β: the packet is dropped (the overuse is cut back to β).
    Overuse,
    /// No slot free for a new allocation.
    Full,
}

/// Token buckets keyed by AID.
#[derive(Clone, Debug)]
pub struct AidMonitor {
    slots: Box<[Slot]>,
    /// The burst in credit units.
    burst_credit: u64,
    /// Secret multiplier (odd) of the slot hash, so that sources cannot aim AIDs at one slot.
    hash_key: u64,
}

/// The bucket's rate for `beta_kbps` kbit/s: whole 100 kbit/s units, not above β.
pub fn bucket_rate(beta_kbps: u32) -> Rate {
    Rate::from_bps(u64::from(beta_kbps) * 1000).unwrap_or(Rate::MAX)
}

impl AidMonitor {
    /// A monitor for up to `capacity` live allocations (rounded up to a power of two, at least
    /// [`PROBES`]), each bucket holding at most `burst_bytes`; `hash_key` is a per-router secret.
    pub fn new(capacity: usize, burst_bytes: u16, hash_key: u64) -> Self {
        let n = capacity.max(PROBES).next_power_of_two();
        Self {
            slots: vec![Slot::default(); n].into_boxed_slice(),
            burst_credit: u64::from(burst_bytes) * CREDIT_PER_BYTE,
            hash_key: hash_key | 1,
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The first slot probed for `aid`.
    fn home(&self, aid: u64) -> usize {
        (aid.wrapping_mul(self.hash_key) >> 32) as usize & (self.slots.len() - 1)
    }

    /// Slot `i` modulo the table's size, without a bounds check (which took 2 instructions for
    /// each of a packet's prefetch and charge: GLWP router at λ = 8, callgrind, 2026-11-26, 563 →
    /// 561 instructions a packet in batches of 32, 741 → 737 one at a time).
    #[inline(always)]
    fn slot(&mut self, i: usize) -> &mut Slot {
        let at = i & (self.slots.len() - 1);
        debug_assert!(self.slots.len().is_power_of_two());
        // SAFETY: `slots.len()` is a power of two (at least PROBES, fixed in `new`), so
        // `at = i mod len < len`.
        unsafe { self.slots.get_unchecked_mut(at) }
    }

    /// Starts loading `aid`'s home slot, where a live allocation almost always is: a router
    /// asks for every packet of a batch before it charges the first.
    pub fn prefetch(&self, aid: u64) {
        let at = self.home(aid);
        debug_assert!(at < self.slots.len());
        // SAFETY: `home` is taken modulo the table's size, a power of two (see `slot`).
        prefetch(unsafe { self.slots.get_unchecked(at) });
    }

    /// Charges `len` bytes at `now_ns` to allocation `aid` of `beta_kbps`, valid until
    /// `ts_exp_s`; the caller has authenticated all three. Inlined into the router's last
    /// stage, where a call's saved and restored registers were a fifth of its cost.
    #[inline(always)]
    pub fn charge(&mut self, aid: u64, beta_kbps: u32, ts_exp_s: u32, len: u32, now_ns: u64) -> MonitorVerdict {
        let now_s = now_ns / 1_000_000_000;
        let start = self.home(aid);
        let mut free = None;
        for i in 0..PROBES {
            let at = start + i;
            let burst_credit = self.burst_credit;
            let slot = self.slot(at);
            let live = u64::from(slot.ts_exp_s) >= now_s;
            if live && slot.aid == aid {
                slot.ts_exp_s = slot.ts_exp_s.max(ts_exp_s);
                // What was earned so far, at the β it was earned at.
                refill(slot, burst_credit, now_ns);
                slot.beta_kbps = beta_kbps;
                return admit(slot, len);
            }
            if !live && free.is_none() {
                free = Some(at);
            }
        }
        let Some(at) = free else { return MonitorVerdict::Full };
        let credit = self.burst_credit;
        let slot = self.slot(at);
        *slot = Slot { aid, credit, stamp_ns: now_ns, beta_kbps, ts_exp_s };
        admit(slot, len)
    }

    /// Bytes the monitor holds, fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.slots)
    }
}

/// Brings `slot`'s credit up to `now_ns` at its β (rounded down to whole rate units), at most
/// `burst_credit`. A time before the stamp earns nothing (and keeps the stamp).
#[inline(always)]
fn refill(slot: &mut Slot, burst_credit: u64, now_ns: u64) {
    if now_ns > slot.stamp_ns {
        let rate = u64::from(bucket_rate(slot.beta_kbps).units());
        // An idle gap of days saturates, then tops the bucket up.
        let earned = (now_ns - slot.stamp_ns).saturating_mul(rate);
        slot.credit = slot.credit.saturating_add(earned).min(burst_credit);
        slot.stamp_ns = now_ns;
    }
}

/// Charges `len` bytes to `slot` if its credit holds them.
#[inline(always)]
fn admit(slot: &mut Slot, len: u32) -> MonitorVerdict {
    // < 2³² · 2¹⁷: no overflow.
    let cost = u64::from(len) * CREDIT_PER_BYTE;
    if cost <= slot.credit {
        slot.credit -= cost;
        MonitorVerdict::Within
    } else {
        MonitorVerdict::Overuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn beta_is_rounded_down_to_the_bank_unit_and_capped() {
        assert_eq!(bucket_rate(99), Rate::ZERO);
        assert_eq!(bucket_rate(1_999).bps(), 1_900_000);
        assert_eq!(bucket_rate(u32::MAX), Rate::MAX);
    }

    #[test]
    fn a_bucket_per_aid_at_its_beta() {
        let mut m = AidMonitor::new(16, 1500, 7);
        let now = 100 * S;
        // 1 Mbit/s: 125 000 B/s; the burst of 1500 B goes at once, then one packet per 12 ms.
        assert_eq!(m.charge(1, 1000, 200, 1500, now), MonitorVerdict::Within);
        assert_eq!(m.charge(1, 1000, 200, 1500, now), MonitorVerdict::Overuse);
        assert_eq!(m.charge(2, 1000, 200, 1500, now), MonitorVerdict::Within, "another AID, its own bucket");
        assert_eq!(m.charge(1, 1000, 200, 1500, now + 12 * S / 1000), MonitorVerdict::Within);
    }

    #[test]
    fn expired_slots_are_reused_and_live_ones_never_evicted() {
        let mut m = AidMonitor::new(8, 1500, 0);
        // hash_key 0 | 1 = 1: every AID below 2^32 starts at slot 0, so all eight collide.
        for aid in 0..8 {
            assert_eq!(m.charge(aid, 1000, 150, 100, 100 * S), MonitorVerdict::Within);
        }
        assert_eq!(m.charge(8, 1000, 150, 100, 100 * S), MonitorVerdict::Full);
        assert_eq!(m.charge(8, 1000, 300, 100, 151 * S), MonitorVerdict::Within, "the others expired");
    }

    #[test]
    fn credit_is_exact_and_never_runs_ahead_of_beta() {
        // 800 kbit/s: 100 000 B/s, one byte per 10 µs. Burst 1000 B, spent at once.
        let mut m = AidMonitor::new(8, 1000, 3);
        let now = 100 * S;
        assert_eq!(m.charge(1, 800, 200, 1000, now), MonitorVerdict::Within);
        // 99.999 µs after: 9.9999 bytes earned, not 10.
        assert_eq!(m.charge(1, 800, 200, 10, now + 99_999), MonitorVerdict::Overuse);
        // 1 ns later the fraction carried over makes the tenth byte whole.
        assert_eq!(m.charge(1, 800, 200, 10, now + 100_000), MonitorVerdict::Within);
        // A time before the last one earns nothing and keeps the stamp.
        assert_eq!(m.charge(1, 800, 200, 1, now), MonitorVerdict::Overuse);
        assert_eq!(m.charge(1, 800, 200, 1, now + 110_000), MonitorVerdict::Within);
        // Below one rate unit (100 kbit/s) nothing refills.
        assert_eq!(m.charge(2, 99, 200, 1000, now), MonitorVerdict::Within);
        assert_eq!(m.charge(2, 99, 200, 1, now + 50 * S), MonitorVerdict::Overuse);
    }

    #[test]
    fn a_new_beta_keeps_what_the_old_one_earned() {
        let mut m = AidMonitor::new(8, 1000, 3);
        let now = 100 * S;
        assert_eq!(m.charge(1, 800, 200, 1000, now), MonitorVerdict::Within);
        // 5 ms at 800 kbit/s: 500 B, then the rate drops to 100 kbit/s (12.5 B/ms).
        assert_eq!(m.charge(1, 100, 200, 500, now + 5 * S / 1000), MonitorVerdict::Within);
        assert_eq!(m.charge(1, 100, 200, 13, now + 6 * S / 1000), MonitorVerdict::Overuse);
        assert_eq!(m.charge(1, 100, 200, 12, now + 6 * S / 1000), MonitorVerdict::Within);
    }
}
