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
//! A bucket refills at β rounded down to the bank's 100 kbit/s units (a monitor must never
//! let more through than allocated) and capped at the bank's largest rate; its burst is the
//! bank's. The same AID with another authentic β (a new discovery after a matrix update)
//! moves the bucket to the later packet's β: both allocations share one bucket, so the
//! source's traffic on the path never exceeds the larger of them (property F3).

use aviary_qos::{prefetch, Rate, TokenBucketBank};

/// Slots probed for one AID.
pub const PROBES: usize = 8;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    aid: u64,
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
    buckets: TokenBucketBank,
    /// Secret multiplier (odd) of the slot hash, so that sources cannot aim AIDs at one slot.
    hash_key: u64,
}

/// A rate in the bank's units not above `beta_kbps` kbit/s.
pub fn bucket_rate(beta_kbps: u32) -> Rate {
    Rate::from_bps(u64::from(beta_kbps) * 1000).unwrap_or(Rate::MAX)
}

impl AidMonitor {
    /// A monitor for up to `capacity` live allocations (rounded up to a power of two, at least
    /// [`PROBES`]), each bucket holding at most `burst_bytes`; `hash_key` is a per-router secret.
    pub fn new(capacity: usize, burst_bytes: u16, hash_key: u64) -> Self {
        let n = capacity.max(PROBES).next_power_of_two();
        let mut buckets = TokenBucketBank::with_capacity(burst_bytes, n);
        for _ in 0..n {
            buckets.push(Rate::ZERO);
        }
        Self { slots: vec![Slot::default(); n].into_boxed_slice(), buckets, hash_key: hash_key | 1 }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The first slot probed for `aid`.
    fn home(&self, aid: u64) -> usize {
        (aid.wrapping_mul(self.hash_key) >> 32) as usize & (self.slots.len() - 1)
    }

    /// Starts loading `aid`'s home slot and its bucket, where a live allocation almost always
    /// is: a router asks for every packet of a batch before it charges the first.
    pub fn prefetch(&self, aid: u64) {
        let at = self.home(aid);
        prefetch(&self.slots[at]);
        self.buckets.prefetch(at);
    }

    /// Charges `len` bytes at `now_ns` to allocation `aid` of `beta_kbps`, valid until
    /// `ts_exp_s`; the caller has authenticated all three.
    pub fn charge(&mut self, aid: u64, beta_kbps: u32, ts_exp_s: u32, len: u32, now_ns: u64) -> MonitorVerdict {
        let now_s = now_ns / 1_000_000_000;
        let mask = self.slots.len() - 1;
        let start = self.home(aid);
        let mut free = None;
        for i in 0..PROBES {
            let at = (start + i) & mask;
            let slot = &mut self.slots[at];
            let live = u64::from(slot.ts_exp_s) >= now_s;
            if live && slot.aid == aid {
                slot.ts_exp_s = slot.ts_exp_s.max(ts_exp_s);
                if slot.beta_kbps != beta_kbps {
                    slot.beta_kbps = beta_kbps;
                    self.buckets.set_rate(at, bucket_rate(beta_kbps), now_ns);
                }
                return self.admit(at, len, now_ns);
            }
            if !live && free.is_none() {
                free = Some(at);
            }
        }
        let Some(at) = free else { return MonitorVerdict::Full };
        self.slots[at] = Slot { aid, beta_kbps, ts_exp_s };
        self.buckets.set_rate(at, bucket_rate(beta_kbps), now_ns);
        self.buckets.reset(at);
        self.admit(at, len, now_ns)
    }

    fn admit(&mut self, at: usize, len: u32, now_ns: u64) -> MonitorVerdict {
        if self.buckets.admit(at, len, now_ns) {
            MonitorVerdict::Within
        } else {
            MonitorVerdict::Overuse
        }
    }

    /// Bytes the monitor holds, fixed at construction.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.slots) + self.buckets.memory_bytes()
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
}
