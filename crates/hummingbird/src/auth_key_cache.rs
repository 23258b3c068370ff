//! A router's cache of expanded authentication keys, for flyover packets that arrive alone.
//!
//! A flyover's verification is a chain of three AES steps: A_K = AES_SV(ResInfo), the
//! FlyoverMAC under A_K (whose key schedule is expanded on the way), and, against construction
//! direction, the hop field's CMAC, whose input waits for the FlyoverMAC. In a batch the
//! chains of many packets overlap; a packet alone waits for its own, about 120 cycles. With
//! A_K's schedule at hand the chain starts at the FlyoverMAC.
//!
//! The cache changes no verdict:
//! - **A hit is exact.** An entry is found by the whole A_K input block (ingress, egress,
//!   ResID, BW, ResStart, ResDuration), compared in full, so it holds the A_K a recomputation
//!   would give. A packet with any reservation field changed misses and is recomputed, and a
//!   forged field still fails the MAC.
//! - **Only verified packets fill it.** A packet that fails its MAC never inserts, so a sender
//!   without a reservation can neither fill nor flush it; a reservation's holder can evict a
//!   reservation whose entry its own shares, which costs the evicted one a recomputation.
//! - **It holds the current SV's keys only.** It is emptied, its keys overwritten, when the SV
//!   rotates; a packet that only the previous SV verifies during a rotation's overlap is
//!   verified without it and does not fill it.
//!
//! It is direct-mapped and small ([`ENTRIES`]): the packets that come alone are those of a
//! lightly loaded router, where few reservations are active at a time. What a packet costs when
//! its reservation is not cached is a row of its own in `aviary bench`.

use aviary_scion::aes::Aes128;
use aviary_scion::cpu::Cpu;

use crate::crypto::SecretValue;

/// Entries of a router's cache: 192 KiB, within a core's L2.
pub const ENTRIES: usize = 1024;

/// An A_K input block ends in two zero bytes (`ResInfo::block`); this one does not, so an
/// empty entry never matches.
const EMPTY: [u8; 16] = [0xff; 16];

/// One reservation's A_K, expanded, behind its input block. Its first cache line holds the
/// block and the first round keys.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    block: [u8; 16],
    key: Aes128,
}

impl Entry {
    /// No reservation's: the schedule of the all-zero key, which is no secret.
    fn empty() -> Self {
        Self { block: EMPTY, key: Aes128::new(&[0; 16]) }
    }
}

/// Expanded A_Ks of recently verified reservations, by their A_K input blocks.
#[derive(Clone)]
pub struct AuthKeyCache {
    entries: Box<[Entry]>,
    /// The A_K expanded for the packet alone being processed, whose reservation was not cached,
    /// and its slot. Boxed: inline, its alignment moved the router's other state, and a packet
    /// alone ran 54 ns instead of 42 (2026-11-29).
    expanded: (usize, Box<Entry>),
    /// Whether `expanded` is the current packet's, to be cached if it verifies. A flag here
    /// rather than in the packet's record: there it cost every batched flyover 14 instructions
    /// (callgrind, 2026-11-29).
    pending: bool,
    counters: AuthKeyCacheCounters,
}

/// What the cache did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuthKeyCacheCounters {
    /// Packets whose A_K was found.
    pub hits: u64,
    /// A_Ks expanded into it after their packets verified.
    pub inserts: u64,
}

impl std::fmt::Debug for AuthKeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthKeyCache").field("entries", &self.entries.len()).field("counters", &self.counters).finish()
    }
}

impl Default for AuthKeyCache {
    fn default() -> Self {
        Self::new()
    }
}

impl AuthKeyCache {
    pub fn new() -> Self {
        Self {
            entries: vec![Entry::empty(); ENTRIES].into_boxed_slice(),
            expanded: (0, Box::new(Entry::empty())),
            pending: false,
            counters: AuthKeyCacheCounters::default(),
        }
    }

    /// The entry of a reservation: its ingress and ResID, unique together while it lasts,
    /// multiplicatively hashed so that the consecutive ResIDs an AS assigns spread. From values
    /// in registers, not from the input block's bytes: its address is on the packet's chain.
    #[inline(always)]
    fn slot(ingress: u16, res_id: u32) -> usize {
        const { assert!(ENTRIES.is_power_of_two()) };
        let id = u64::from(ingress) << 32 | u64::from(res_id);
        (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - ENTRIES.trailing_zeros())) as usize
    }

    /// The expanded A_K of the reservation whose A_K input block is `block` (the reservation
    /// `res_id` on `ingress`), if cached.
    #[inline(always)]
    pub fn get(&mut self, (ingress, res_id): (u16, u32), block: &[u8; 16]) -> Option<&Aes128> {
        // SAFETY: `slot` is below `ENTRIES`, the length of `entries`.
        let e = unsafe { self.entries.get_unchecked(Self::slot(ingress, res_id)) };
        if e.block != *block {
            return None;
        }
        self.pending = false;
        self.counters.hits += 1;
        Some(&e.key)
    }

    /// A packet's chain where its reservation is not cached: A_K of `ak_block` under `sv` (the
    /// current SV), the FlyoverMAC of `mac_block` under A_K and the block beside it, as
    /// [`Aes128::fresh_key_chain_beside_on`] computes them; A_K is left expanded aside for
    /// [`Self::insert_expanded`] (of the reservation `res_id` on `ingress`), its round keys
    /// stored off the chain. Inlined beside the cached chain, whose results then stay in
    /// registers: called, a packet whose reservation was cached ran 51 ns instead of 46
    /// (2026-11-29).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn chain_expanding(
        &mut self,
        cpu: impl Cpu,
        sv: &SecretValue,
        (ingress, res_id): (u16, u32),
        ak_block: &[u8; 16],
        mac_block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        let (slot, e) = (&mut self.expanded.0, &mut *self.expanded.1);
        *slot = Self::slot(ingress, res_id);
        self.pending = true;
        e.block = *ak_block;
        sv.cipher().fresh_key_chain_beside_keeping_on(cpu, ak_block, mac_block, other, other_in, feed, &mut e.key)
    }

    /// Puts the A_K [`Self::chain_expanding`] expanded for the packet being processed into the
    /// cache, in place of whatever was in its entry, if that packet missed. Called once the
    /// packet verified; [`Self::get`] (a hit) and [`Self::forget_expanded`] (a batch, whose
    /// A_Ks are not expanded) say there is nothing to cache.
    #[inline(always)]
    pub fn insert_expanded(&mut self) {
        if self.pending {
            self.insert_pending();
        }
    }

    #[cold]
    #[inline(never)]
    fn insert_pending(&mut self) {
        let (slot, e) = (self.expanded.0, *self.expanded.1);
        self.entries[slot] = e;
        self.pending = false;
        self.counters.inserts += 1;
    }

    /// Nothing expanded is to be cached: the packets that follow come in a batch (or a packet
    /// alone is verified again, in a rotation's overlap).
    #[inline(always)]
    pub fn forget_expanded(&mut self) {
        self.pending = false;
    }

    /// Forgets every key, overwriting them (the SV they were derived under is being replaced).
    pub fn clear(&mut self) {
        self.pending = false;
        let empty = Entry::empty();
        for e in self.entries.iter_mut().chain([&mut *self.expanded.1]) {
            // Volatile: the old keys are overwritten even though nothing reads them again.
            // SAFETY: `e` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(e, empty) };
        }
    }

    pub fn counters(&self) -> AuthKeyCacheCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::ResInfo;
    use aviary_scion::cpu::Detect;
    use proptest::prelude::*;

    fn res(res_id: u32) -> ResInfo {
        ResInfo { ingress: 2, egress: 3, res_id, bw: 800, start: 1_750_000_000, duration: 3600 }
    }

    fn get<'a>(cache: &'a mut AuthKeyCache, r: &ResInfo) -> Option<&'a Aes128> {
        cache.get((r.ingress, r.res_id), &r.block())
    }

    const OTHER_IN: [u8; 16] = [2; 16];

    /// The chain of a packet of `r` whose A_K was not cached, with the block beside it under
    /// `other`.
    fn chain(
        cache: &mut AuthKeyCache,
        sv: &SecretValue,
        r: &ResInfo,
        mac_block: &[u8; 16],
        other: &Aes128,
    ) -> ([u8; 16], [u8; 16]) {
        cache.chain_expanding(Detect, sv, (r.ingress, r.res_id), &r.block(), mac_block, other, &OTHER_IN, None)
    }

    fn insert(cache: &mut AuthKeyCache, sv: &SecretValue, r: &ResInfo) {
        chain(cache, sv, r, &[1; 16], &Aes128::new(&[3; 16]));
        cache.insert_expanded();
    }

    #[test]
    fn holds_the_key_a_recomputation_gives() {
        let sv = SecretValue::new(&[7; 16]);
        let other = Aes128::new(&[3; 16]);
        let mut cache = AuthKeyCache::new();
        let r = res(5);
        let block = [0x42; 16];
        let fresh = Aes128::new(&sv.auth_key(&r)).encrypt(&block);
        assert!(get(&mut cache, &r).is_none());
        assert_eq!(chain(&mut cache, &sv, &r, &block, &other), (fresh, other.encrypt(&OTHER_IN)));
        assert!(get(&mut cache, &r).is_none(), "expanded, not yet cached");
        cache.insert_expanded();
        assert_eq!(get(&mut cache, &r).expect("inserted").encrypt(&block), fresh);
        assert_eq!(cache.counters(), AuthKeyCacheCounters { hits: 1, inserts: 1 });
    }

    #[test]
    fn consecutive_res_ids_take_distinct_entries() {
        let slots: std::collections::HashSet<usize> =
            (0..ENTRIES as u32 / 2).map(|id| AuthKeyCache::slot(2, id)).collect();
        // A multiplicative hash of consecutive keys collides rarely; a constant slot would be 1.
        assert!(slots.len() > ENTRIES / 2 * 9 / 10, "{} distinct slots", slots.len());
    }

    #[test]
    fn clearing_forgets_every_key() {
        let sv = SecretValue::new(&[7; 16]);
        let mut cache = AuthKeyCache::new();
        for id in 0..64 {
            insert(&mut cache, &sv, &res(id));
        }
        cache.clear();
        assert!((0..64).all(|id| get(&mut cache, &res(id)).is_none()));
        let (x, zero_key) = ([0x42; 16], Aes128::new(&[0; 16]));
        let mut all = cache.entries.iter().chain([&*cache.expanded.1]);
        assert!(all.all(|e| e.block == EMPTY && e.key.encrypt(&x) == zero_key.encrypt(&x)));
    }

    proptest! {
        /// Any field of the reservation changed, in any bit, misses, even where the ingress and
        /// ResID, which find the entry, are the same: an entry is never taken for its slot.
        #[test]
        fn only_the_exact_block_hits(id in 0u32..(1 << 22), byte in 0usize..14, bit in 0u8..8) {
            let sv = SecretValue::new(&[9; 16]);
            let mut cache = AuthKeyCache::new();
            let r = res(id);
            let mut other = r.block();
            other[byte] ^= 1 << bit;
            prop_assert!(get(&mut cache, &r).is_none());
            insert(&mut cache, &sv, &r);
            prop_assert!(cache.get((r.ingress, r.res_id), &other).is_none());
            prop_assert!(get(&mut cache, &r).is_some());
        }

        /// No A_K input block (its last two bytes zero) matches an empty entry.
        #[test]
        fn no_block_matches_an_empty_entry(ingress: u16, id in 0u32..(1 << 22), mut block: [u8; 16]) {
            block[14..].fill(0);
            prop_assert!(AuthKeyCache::new().get((ingress, id), &block).is_none());
        }
    }
}
