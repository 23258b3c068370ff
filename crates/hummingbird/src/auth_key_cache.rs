//! A router's cache of expanded authentication keys, for flyover packets that arrive alone.
//!
//! A flyover's verification is a chain of three AES steps: A_K = AES_SV(ResInfo), the
//! FlyoverMAC under A_K (whose key schedule is expanded on the way), and, against construction
//! direction, the hop field's CMAC, whose input waits for the FlyoverMAC (SCION chains the
//! SegID with the hop field's MAC, and a flyover's MAC is AggMAC ⊕ FlyoverMAC). In a batch the
//! chains of many packets overlap; a packet alone waits for its own, about 120 cycles. With
//! A_K's schedule at hand the chain starts at the FlyoverMAC; with the hop field's CMAC
//! recalled as well, it ends there.
//!
//! Each entry holds a reservation's expanded A_K and the last hop-field CMAC a packet of it
//! verified with under the AS key ([`Recall`]: the CMAC's input block and output). Packets of
//! one path carry one hop field, so their CMAC inputs are equal once the candidate MAC is
//! chained into the SegID: a packet whose input is the recalled one, and whose candidate the
//! recalled CMAC verifies, has that CMAC without its ten rounds.
//!
//! The cache changes no verdict:
//! - **A hit is exact.** An A_K is found by the whole A_K input block (ingress, egress,
//!   ResID, BW, ResStart, ResDuration), compared in full, so it holds the A_K a recomputation
//!   would give. A packet with any reservation field changed misses and is recomputed, and a
//!   forged field still fails the MAC. A CMAC is recalled only for its whole input block,
//!   compared after the packet's own candidate MAC was chained into it, so it is the CMAC a
//!   recomputation would give; a forged candidate makes another input and is computed.
//! - **It tells nothing by its timing that the verdict does not.** A CMAC is recalled only if it
//!   also verifies the packet's candidate: a packet that fails, even one whose candidate is
//!   right in the two bytes chained into the SegID and wrong in the rest, takes as long as
//!   without the cache, so its time does not say how close its candidate came.
//! - **Only verified packets fill it.** A packet that fails its MAC never inserts, so a sender
//!   without a reservation can neither fill nor flush it; a reservation's holder can evict a
//!   reservation whose entry its own shares, which costs the evicted one a recomputation.
//! - **It holds the current keys' results only.** It is emptied, its keys overwritten, when the
//!   AS secret rotates (the SV and the hop-field key together, [`crate::Router::rotate_secret`]);
//!   a packet that only a previous key verifies during a rotation's overlap is verified
//!   without it and does not fill it.
//!
//! It is direct-mapped and small ([`ENTRIES`]): the packets that come alone are those of a
//! lightly loaded router, where few reservations are active at a time. What a packet costs when
//! its reservation is not cached is a row of its own in `aviary bench`.

use aviary_scion::aes::{Aes128, Chained, Recall};
use aviary_scion::cpu::Cpu;
use aviary_scion::mac::MAC_LEN;

use crate::crypto::SecretValue;

/// Entries of a router's cache: 256 KiB, within a core's L2.
pub const ENTRIES: usize = 1024;

/// An A_K input block ends in two zero bytes (`ResInfo::block`); this one does not, so an
/// empty entry never matches.
const EMPTY: [u8; 16] = [0xff; 16];

/// A hop field's CMAC input block opens with two zero bytes (`aviary_scion::mac::input`); this
/// one does not, so an empty entry recalls nothing.
const NO_RECALL: Recall = [[0xff; 16], [0; 16]];

/// The bytes of a CMAC that are the hop field's MAC, which a recalled CMAC must agree with the
/// candidate in.
const MAC_BYTES: [u8; 16] = {
    let mut m = [0; 16];
    let mut i = 0;
    while i < MAC_LEN {
        m[i] = 0xff;
        i += 1;
    }
    m
};

/// One reservation's A_K, expanded, behind its input block, and the hop-field CMAC its last
/// verified packet alone had. Its first cache line holds the block, the recall and the first
/// round key.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    block: [u8; 16],
    hop: Recall,
    key: Aes128,
}

impl Entry {
    /// No reservation's: the schedule of the all-zero key, which is no secret.
    fn empty() -> Self {
        Self { block: EMPTY, hop: NO_RECALL, key: Aes128::new(&[0; 16]) }
    }
}

/// What the packet alone being processed leaves to cache if it verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    Nothing,
    /// Its reservation missed: the whole entry in `expanded`.
    Entry,
    /// Its reservation hit but its CMAC was not the recalled one: `expanded`'s recall.
    Recall,
}

/// Expanded A_Ks of recently verified reservations, by their A_K input blocks.
#[derive(Clone)]
pub struct AuthKeyCache {
    entries: Box<[Entry]>,
    /// The A_K expanded for the packet alone being processed, whose reservation was not cached,
    /// and its slot. Boxed: inline, its alignment moved the router's other state, and a packet
    /// alone ran 54 ns instead of 42 (2026-11-29).
    expanded: (usize, Box<Entry>),
    /// What of `expanded` is the current packet's, to be cached if it verifies. Here rather
    /// than in the packet's record: there a flag cost every batched flyover 14 instructions
    /// (callgrind, 2026-11-29).
    pending: Pending,
    counters: AuthKeyCacheCounters,
}

/// What the cache did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuthKeyCacheCounters {
    /// Packets whose A_K was found.
    pub hits: u64,
    /// A_Ks expanded into it after their packets verified.
    pub inserts: u64,
    /// Packets whose hop-field CMAC was recalled, not computed.
    pub mac_recalls: u64,
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
            pending: Pending::Nothing,
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

    /// The slot of the reservation whose A_K input block is `block` (the reservation `res_id` on
    /// `ingress`), if cached.
    #[inline(always)]
    fn find(&self, (ingress, res_id): (u16, u32), block: &[u8; 16]) -> Option<usize> {
        let slot = Self::slot(ingress, res_id);
        (self.entry(slot).block == *block).then_some(slot)
    }

    #[inline(always)]
    fn entry(&self, slot: usize) -> &Entry {
        debug_assert!(slot < ENTRIES);
        // SAFETY: every slot is `Self::slot`'s, below `ENTRIES`, the length of `entries`.
        unsafe { self.entries.get_unchecked(slot) }
    }

    /// The chain of a flyover packet alone, and the block beside it, as
    /// [`Aes128::fresh_key_chain_beside_on`] computes them: `y`, the FlyoverMAC of `mac_block`
    /// under A_K = AES_SV(`ak_block`) (the reservation `res_id` on `ingress`; `sv` the current
    /// SV), and `z`, the hop field's CMAC of `other_in` under `other` (the AS key's current
    /// cipher), fed with `y` where `feed` says. Where the reservation is cached the chain starts
    /// at the FlyoverMAC, and where `z`'s input is the recalled one, `z` is recalled; what it
    /// computed instead is left aside for [`Self::insert_expanded`] if the packet verifies.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn chain(
        &mut self,
        cpu: impl Cpu,
        sv: &SecretValue,
        reservation: (u16, u32),
        ak_block: &[u8; 16],
        mac_block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> ([u8; 16], [u8; 16]) {
        let Some(slot) = self.find(reservation, ak_block) else {
            let c = self.chain_expanding(cpu, sv, reservation, ak_block, mac_block, other, other_in, feed);
            return (c.y, c.z);
        };
        self.counters.hits += 1;
        let e = self.entry(slot);
        let Some(feed) = feed else {
            // The CMAC's rounds run beside the FlyoverMAC's: nothing to recall.
            let out = e.key.chain_beside_on(cpu, mac_block, other, other_in, None);
            self.pending = Pending::Nothing;
            return out;
        };
        // Recalled only where the CMAC would verify the candidate (`y ⊕ mix`, the MAC's bytes):
        // a packet that fails takes as long as without the recall, so its time tells nothing of
        // how close its candidate came.
        let c = e.key.chain_recalling_on(cpu, mac_block, other, other_in, feed, &e.hop, &MAC_BYTES);
        if c.recalled {
            self.counters.mac_recalls += 1;
            self.pending = Pending::Nothing;
        } else {
            self.expanded.0 = slot;
            self.expanded.1.hop = [c.z_in, c.z];
            self.pending = Pending::Recall;
        }
        (c.y, c.z)
    }

    /// The chain where the reservation is not cached: A_K is expanded aside, its round keys
    /// stored off the chain, with the CMAC that followed, for [`Self::insert_expanded`].
    /// Inlined beside the cached chain, whose results then stay in registers: called, a packet
    /// whose reservation was cached ran 51 ns instead of 46 (2026-11-29).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn chain_expanding(
        &mut self,
        cpu: impl Cpu,
        sv: &SecretValue,
        (ingress, res_id): (u16, u32),
        ak_block: &[u8; 16],
        mac_block: &[u8; 16],
        other: &Aes128,
        other_in: &[u8; 16],
        feed: Option<(&[u8; 16], &[u8; 16])>,
    ) -> Chained {
        let (slot, e) = (&mut self.expanded.0, &mut *self.expanded.1);
        *slot = Self::slot(ingress, res_id);
        self.pending = Pending::Entry;
        e.block = *ak_block;
        let c =
            sv.cipher().fresh_key_chain_beside_keeping_on(cpu, ak_block, mac_block, other, other_in, feed, &mut e.key);
        e.hop = [c.z_in, c.z];
        c
    }

    /// Puts what [`Self::chain`] computed for the packet being processed into the cache: the
    /// A_K it expanded with its CMAC, in place of whatever was in its entry, if its reservation
    /// missed; its CMAC, in place of the recalled one, if only that missed. Called once the
    /// packet verified; a packet that missed nothing, and [`Self::forget_expanded`] (a batch,
    /// which computes no chain here), leave nothing to cache.
    #[inline(always)]
    pub fn insert_expanded(&mut self) {
        if self.pending != Pending::Nothing {
            self.insert_pending();
        }
    }

    #[cold]
    #[inline(never)]
    fn insert_pending(&mut self) {
        let (slot, e) = (self.expanded.0, *self.expanded.1);
        match self.pending {
            Pending::Nothing => {}
            Pending::Entry => {
                self.entries[slot] = e;
                self.counters.inserts += 1;
            }
            Pending::Recall => self.entries[slot].hop = e.hop,
        }
        self.pending = Pending::Nothing;
    }

    /// Nothing expanded is to be cached: the packets that follow come in a batch (or a packet
    /// alone is verified again, in a rotation's overlap).
    #[inline(always)]
    pub fn forget_expanded(&mut self) {
        self.pending = Pending::Nothing;
    }

    /// Forgets every key and CMAC, overwriting them (the AS secret they were derived from is
    /// being replaced).
    pub fn clear(&mut self) {
        self.pending = Pending::Nothing;
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

    fn get<'a>(cache: &'a AuthKeyCache, r: &ResInfo) -> Option<&'a Aes128> {
        cache.find((r.ingress, r.res_id), &r.block()).map(|slot| &cache.entry(slot).key)
    }

    const OTHER_IN: [u8; 16] = [2; 16];
    /// SCION's feed: the candidate MAC's first two bytes into the SegID's place.
    const FEED: [u8; 16] = [0x80, 0x80, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80];

    /// The chain of a packet alone of `r`, with the block `wire` beside it under `other`, fed
    /// with the candidate `y ⊕ mix` where a `mix` is given.
    fn chain(
        cache: &mut AuthKeyCache,
        sv: &SecretValue,
        r: &ResInfo,
        mac_block: &[u8; 16],
        other: &Aes128,
        wire: &[u8; 16],
        mix: Option<&[u8; 16]>,
    ) -> ([u8; 16], [u8; 16]) {
        let feed = mix.map(|mix| (&FEED, mix));
        cache.chain(Detect, sv, (r.ingress, r.res_id), &r.block(), mac_block, other, wire, feed)
    }

    /// The same, computed without the cache.
    fn recomputed(
        sv: &SecretValue,
        r: &ResInfo,
        mac_block: &[u8; 16],
        other: &Aes128,
        wire: &[u8; 16],
        mix: Option<&[u8; 16]>,
    ) -> ([u8; 16], [u8; 16]) {
        let y = Aes128::new(&sv.auth_key(r)).encrypt(mac_block);
        let mut z_in = *wire;
        if let Some(mix) = mix {
            z_in[2] ^= y[0] ^ mix[0];
            z_in[3] ^= y[1] ^ mix[1];
        }
        (y, other.encrypt(&z_in))
    }

    fn insert(cache: &mut AuthKeyCache, sv: &SecretValue, r: &ResInfo) {
        chain(cache, sv, r, &[1; 16], &Aes128::new(&[3; 16]), &OTHER_IN, None);
        cache.insert_expanded();
    }

    fn counters(hits: u64, inserts: u64, mac_recalls: u64) -> AuthKeyCacheCounters {
        AuthKeyCacheCounters { hits, inserts, mac_recalls }
    }

    #[test]
    fn holds_the_key_a_recomputation_gives() {
        let sv = SecretValue::new(&[7; 16]);
        let other = Aes128::new(&[3; 16]);
        let mut cache = AuthKeyCache::new();
        let r = res(5);
        let block = [0x42; 16];
        let fresh = Aes128::new(&sv.auth_key(&r)).encrypt(&block);
        assert!(get(&cache, &r).is_none());
        assert_eq!(chain(&mut cache, &sv, &r, &block, &other, &OTHER_IN, None), (fresh, other.encrypt(&OTHER_IN)));
        assert!(get(&cache, &r).is_none(), "expanded, not yet cached");
        cache.insert_expanded();
        assert_eq!(get(&cache, &r).expect("inserted").encrypt(&block), fresh);
        assert_eq!(chain(&mut cache, &sv, &r, &block, &other, &OTHER_IN, None), (fresh, other.encrypt(&OTHER_IN)));
        assert_eq!(cache.counters(), counters(1, 1, 0));
    }

    /// What a valid packet of `r` carries against construction direction, for a hop field
    /// whose CMAC input (its SegID chained with its MAC) is `input`: the input with the SegID
    /// as on the wire, and the `mix` (AggMAC) that makes its candidate `y ⊕ mix` that MAC.
    fn valid(
        sv: &SecretValue,
        r: &ResInfo,
        mac_block: &[u8; 16],
        other: &Aes128,
        input: [u8; 16],
    ) -> ([u8; 16], [u8; 16]) {
        let y = Aes128::new(&sv.auth_key(r)).encrypt(mac_block);
        let mac = other.encrypt(&input);
        let mut wire = input;
        wire[2] ^= mac[0];
        wire[3] ^= mac[1];
        let mut mix = [0; 16];
        for i in 0..MAC_LEN {
            mix[i] = y[i] ^ mac[i];
        }
        (wire, mix)
    }

    /// Against construction direction: a packet alone whose CMAC input is the one its
    /// reservation's last verified packet had, and whose candidate that CMAC verifies, gets the
    /// CMAC recalled; any other packet, including one with the recalled input whose candidate
    /// the CMAC refuses, gets its own computed. Only a verified packet's CMAC replaces the
    /// recalled one, and a recall without its A_K is never used.
    #[test]
    fn recalls_only_the_cmac_that_verifies_the_same_input() {
        let sv = SecretValue::new(&[7; 16]);
        let other = Aes128::new(&[3; 16]);
        let mut cache = AuthKeyCache::new();
        let r = res(5);
        let block = [0x42; 16];
        let run = |cache: &mut AuthKeyCache, wire: &[u8; 16], mix: &[u8; 16]| {
            let want = recomputed(&sv, &r, &block, &other, wire, Some(mix));
            assert_eq!(chain(cache, &sv, &r, &block, &other, wire, Some(mix)), want, "the chain a recomputation gives");
        };
        let (wire, mix) = valid(&sv, &r, &block, &other, [0, 0, 1, 2, 3, 4, 5, 6, 0, 7, 0, 1, 0, 2, 0, 0]);
        // Missed and verified: the A_K and the CMAC are cached, and the next packet recalls.
        run(&mut cache, &wire, &mix);
        cache.insert_expanded();
        run(&mut cache, &wire, &mix);
        assert_eq!(cache.counters(), counters(1, 1, 1));
        // The recalled input with a candidate wrong in its last byte, or in its first: computed.
        for byte in [MAC_LEN - 1, 0] {
            let mut forged = mix;
            forged[byte] ^= 1;
            run(&mut cache, &wire, &forged);
            cache.forget_expanded();
        }
        assert_eq!(cache.counters(), counters(3, 1, 1));
        // Another hop field's valid packet: computed, and recalled after it only once verified.
        let (other_wire, other_mix) = valid(&sv, &r, &block, &other, [0, 0, 9, 9, 3, 4, 5, 6, 0, 7, 0, 1, 0, 2, 0, 0]);
        run(&mut cache, &other_wire, &other_mix);
        cache.forget_expanded();
        run(&mut cache, &other_wire, &other_mix);
        cache.insert_expanded();
        run(&mut cache, &other_wire, &other_mix);
        run(&mut cache, &wire, &mix);
        assert_eq!(cache.counters(), counters(7, 1, 2));
        // Along construction direction the CMAC runs beside the chain: nothing recalled.
        assert_eq!(
            chain(&mut cache, &sv, &r, &block, &other, &OTHER_IN, None),
            recomputed(&sv, &r, &block, &other, &OTHER_IN, None)
        );
        assert_eq!(cache.counters(), counters(8, 1, 2));
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
        assert!((0..64).all(|id| get(&cache, &res(id)).is_none()));
        let (x, zero_key) = ([0x42; 16], Aes128::new(&[0; 16]));
        let mut all = cache.entries.iter().chain([&*cache.expanded.1]);
        assert!(all.all(|e| e.block == EMPTY && e.hop == NO_RECALL && e.key.encrypt(&x) == zero_key.encrypt(&x)));
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
            prop_assert!(get(&cache, &r).is_none());
            insert(&mut cache, &sv, &r);
            prop_assert!(cache.find((r.ingress, r.res_id), &other).is_none());
            prop_assert!(get(&cache, &r).is_some());
        }

        /// No A_K input block (its last two bytes zero) matches an empty entry.
        #[test]
        fn no_block_matches_an_empty_entry(ingress: u16, id in 0u32..(1 << 22), mut block: [u8; 16]) {
            block[14..].fill(0);
            prop_assert!(AuthKeyCache::new().find((ingress, id), &block).is_none());
        }
    }
}
