//! The gateway's hosts: a table from host address to its rate group, its key and its counters
//! ([`SlotTable`]), and one 8-byte token bucket per group (§6.2: "a hash table mapping end
//! host addresses to token buckets").
//!
//! A host gets its entry the first time one of its packets verifies (so spoofed addresses
//! never take room), matched to its group by longest prefix once; later packets cost one
//! lookup, in a cache line the parse stage prefetched. The entry also keeps the host's DRKey
//! key of the current epoch, so that verifying a known host's packets costs no key derivation.
//! A host that finds the table full (more than [`MAX_HOST_SLOTS`]` / 2` hosts) is matched to
//! its group on every packet, and its packets are counted together with every such host's.

use std::collections::HashMap;

use aviary_qos::TokenBucketBank;
use aviary_scion::drkey::AsHostKey;
use aviary_scion::HostAddr;
use foldhash::fast::RandomState;

use super::config::{Prefix, RatePlan};
use super::host_slots::{HostEntry, HostHash, SlotTable, Tag};

/// The most slots of the host table: 32 MiB, for up to 262 144 hosts.
pub const MAX_HOST_SLOTS: usize = 1 << 19;

/// What the gateway did with one host's packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCounters {
    /// Within the host's rate: flagged and re-authenticated.
    pub compliant_packets: u64,
    pub compliant_bytes: u64,
    /// Beyond it, forwarded without the flag or dropped (by policy).
    pub over_rate_packets: u64,
    pub over_rate_bytes: u64,
    /// Over-rate packets dropped (policy `drop`).
    pub dropped_packets: u64,
}

#[derive(Clone, Debug)]
pub(super) struct HostTable {
    /// Groups of a single host, by address: an AS may list tens of thousands. Read once per
    /// host, when it is entered.
    single: HashMap<HostAddr, u32, RandomState>,
    /// Groups of a prefix, with their index.
    prefixes: Vec<(u32, Prefix)>,
    buckets: TokenBucketBank,
    /// Every host seen while there was room.
    known: SlotTable<HostCounters>,
    /// The packets of hosts that found the table full.
    untracked: HostCounters,
}

/// Where a known host's entry is: looked up once per packet, when its key is needed, and used
/// again when its packet is charged; with the table's count of growths when it was found, which
/// tells whether it still holds the host without comparing its address again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HostSlot {
    slot: u32,
    grows: u32,
}

impl HostTable {
    /// The table of `plan`'s groups, whose hosts' home slots are hashed under `hash_key`
    /// (a secret: senders choose their addresses), growing up to `max_slots`.
    pub fn new(plan: &RatePlan, burst_bytes: u16, hash_key: &[u8; 16], max_slots: usize) -> Self {
        let mut buckets = TokenBucketBank::with_capacity(burst_bytes, plan.groups.len());
        for (_, rate) in &plan.groups {
            buckets.push(*rate);
        }
        let (mut single, mut prefixes) = (HashMap::default(), Vec::new());
        for (i, (p, _)) in plan.groups.iter().enumerate() {
            match p.single_host() {
                Some(h) => {
                    single.insert(h, i as u32);
                }
                None => prefixes.push((i as u32, *p)),
            }
        }
        let known = SlotTable::new(single.len(), max_slots, hash_key);
        Self { single, prefixes, buckets, known, untracked: HostCounters::default() }
    }

    /// The hash of the slot of `tag`'s host, and a prefetch of that slot: at parse, so that
    /// the lookups of a stage's packets find their slots in the cache.
    /// `cpu` says which AES code the hash runs on ([`aviary_scion::cpu::Cpu`]).
    #[inline(always)]
    pub fn prefetch_on(&self, cpu: impl aviary_scion::cpu::Cpu, tag: &Tag) -> HostHash {
        let hash = self.known.hash_on(cpu, tag);
        self.known.prefetch(hash);
        hash
    }

    /// The slot of a known host (`hash` from [`HostTable::prefetch_on`]); prefetches its bucket
    /// and counters, which its charge reads.
    pub fn find(&self, tag: &Tag, hash: HostHash) -> Option<HostSlot> {
        let slot = self.known.find(tag, hash)?;
        if let Some(g) = self.known.entry(slot).group {
            self.buckets.prefetch(g as usize);
        }
        self.known.prefetch_cold(slot);
        Some(HostSlot { slot, grows: self.known.grows() })
    }

    /// The key of the host in `slot` for the epoch starting at `epoch_begin_s`.
    pub fn key(&self, slot: HostSlot, epoch_begin_s: u32) -> Option<AsHostKey> {
        let key = self.known.entry(slot.slot).key;
        (key.0 == epoch_begin_s).then_some(key.1)
    }

    /// Charges `len` bytes of the host of `tag` (in `slot`, if it was known when its packet was parsed),
    /// whose packet verified under `key`, at `now_ns` to its group's bucket: whether they are
    /// within the rate, and the host's counters (its entry is made on its first packet).
    pub fn charge(
        &mut self,
        (tag, slot): (&Tag, Option<HostSlot>),
        key: (u32, AsHostKey),
        len: usize,
        now_ns: u64,
    ) -> (bool, &mut HostCounters) {
        // A host entered by an earlier packet of the same stage has a slot by now; one that
        // had a slot may have moved since, if such an entry made the table grow (and only
        // then: hosts are never removed).
        let slot = match slot {
            Some(s) if s.grows == self.known.grows() => {
                debug_assert!(self.known.holds(s.slot, tag), "a slot found since the last growth");
                Some(s.slot)
            }
            _ => self.known.find(tag, self.known.hash(tag)),
        };
        let (group, counters) = match slot {
            Some(s) => {
                let entry = self.known.entry_mut(s);
                entry.key = key;
                (entry.group, self.known.cold_mut(s))
            }
            None => {
                let group = self.group_of(&tag.host());
                match self.known.insert(tag, HostEntry { group, key }) {
                    Some(s) => (group, self.known.cold_mut(s)),
                    None => (group, &mut self.untracked),
                }
            }
        };
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let within = group.is_some_and(|g| self.buckets.admit(g as usize, len, now_ns));
        (within, counters)
    }

    /// The group of `host`: its own, or its longest prefix's.
    fn group_of(&self, host: &HostAddr) -> Option<u32> {
        let longest = self.prefixes.iter().filter(|(_, p)| p.contains(host)).max_by_key(|(_, p)| p.len());
        self.single.get(host).copied().or_else(|| longest.map(|(i, _)| *i))
    }

    pub fn iter(&self) -> impl Iterator<Item = (HostAddr, &HostCounters)> {
        self.known.iter()
    }

    pub fn get(&self, host: &HostAddr) -> Option<&HostCounters> {
        let tag = Tag::of(host);
        let slot = self.known.find(&tag, self.known.hash(&tag))?;
        Some(self.known.cold(slot))
    }

    /// The packets of hosts that found the table full, together.
    pub fn untracked(&self) -> &HostCounters {
        &self.untracked
    }
}
