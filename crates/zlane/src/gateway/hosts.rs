//! The gateway's hosts: a hash map from host address to its rate group and its counters,
//! and one 8-byte token bucket per group (§6.2: "a hash table mapping end host addresses to
//! token buckets").
//!
//! A host gets its entry the first time one of its packets verifies (so spoofed addresses
//! never take room), matched to its group by longest prefix once; later packets cost one
//! lookup. The entry also keeps the host's DRKey key of the current epoch, so that verifying a
//! known host's packets costs no key derivation.

use std::collections::HashMap;

use aviary_qos::TokenBucketBank;
use aviary_scion::drkey::AsHostKey;
use aviary_scion::HostAddr;
use foldhash::fast::RandomState;

use super::config::{Prefix, RatePlan};

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

#[derive(Clone, Copy, Debug)]
struct HostEntry {
    /// The host's rate group, `None` if no prefix covers it.
    group: Option<u32>,
    /// `K_{A_0→A_0:H}` and the start of its epoch.
    key: (u32, AsHostKey),
    counters: HostCounters,
}

#[derive(Clone, Debug)]
pub(super) struct HostTable {
    /// Groups of a single host, by address: an AS may list tens of thousands.
    single: HashMap<HostAddr, u32, RandomState>,
    /// Groups of a prefix, with their index.
    prefixes: Vec<(u32, Prefix)>,
    buckets: TokenBucketBank,
    /// Every host seen, by address: its slot in `entries`. Entries are never removed, so a
    /// slot stays valid.
    slots: HashMap<HostAddr, u32, RandomState>,
    entries: Vec<(HostAddr, HostEntry)>,
}

/// Where a known host's entry is: looked up once per packet, when its key is needed, and used
/// again when its packet is charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HostSlot(u32);

impl HostTable {
    pub fn new(plan: &RatePlan, burst_bytes: u16) -> Self {
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
        Self { single, prefixes, buckets, slots: HashMap::default(), entries: Vec::new() }
    }

    /// The slot of a known host.
    pub fn find(&self, host: &HostAddr) -> Option<HostSlot> {
        self.slots.get(host).map(|i| HostSlot(*i))
    }

    /// The key of the host in `slot` for the epoch starting at `epoch_begin_s`.
    pub fn key(&self, slot: HostSlot, epoch_begin_s: u32) -> Option<AsHostKey> {
        let key = self.entries[slot.0 as usize].1.key;
        (key.0 == epoch_begin_s).then_some(key.1)
    }

    /// Charges `len` bytes of `host` (in `slot`, if it was known when its packet was parsed),
    /// whose packet verified under `key`, at `now_ns` to its group's bucket: whether they are
    /// within the rate, and the host's counters (its entry is made on its first packet).
    pub fn charge(
        &mut self,
        (host, slot): (HostAddr, Option<HostSlot>),
        key: (u32, AsHostKey),
        len: usize,
        now_ns: u64,
    ) -> (bool, &mut HostCounters) {
        let slot = match slot.or_else(|| self.find(&host)) {
            Some(s) => s.0 as usize,
            None => {
                let longest = self.prefixes.iter().filter(|(_, p)| p.contains(&host)).max_by_key(|(_, p)| p.len());
                let group = self.single.get(&host).copied().or_else(|| longest.map(|(i, _)| *i));
                self.slots.insert(host, self.entries.len() as u32);
                self.entries.push((host, HostEntry { group, key, counters: HostCounters::default() }));
                self.entries.len() - 1
            }
        };
        let entry = &mut self.entries[slot].1;
        entry.key = key;
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let within = entry.group.is_some_and(|g| self.buckets.admit(g as usize, len, now_ns));
        (within, &mut entry.counters)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&HostAddr, &HostCounters)> {
        self.entries.iter().map(|(h, e)| (h, &e.counters))
    }

    pub fn get(&self, host: &HostAddr) -> Option<&HostCounters> {
        self.find(host).map(|s| &self.entries[s.0 as usize].1.counters)
    }
}
