//! The gateway's table of known hosts: open addressing with linear probing over a power-of-two
//! array of cache-line slots, so that a packet's host costs one cache line (its address, rate
//! group and key), which the parse stage can prefetch for every packet of a batch.
//!
//! Host addresses are chosen by the senders, so the home slot comes from a keyed
//! pseudo-random function (AES-128 under a secret key) of the address: nobody without the
//! key can pick addresses that collide. Probes are bounded by [`MAX_PROBE`] slots and the load
//! by one half; a table that would exceed either doubles, up to its maximum size. A full table
//! at its maximum takes no more hosts ([`SlotTable::insert`] says so): the caller handles
//! their packets without an entry.
//!
//! What the per-packet path reads lives in the slots; what it rarely reads (`C`, the hosts'
//! counters) in a parallel array indexed by slot.

#[cfg(test)]
#[path = "host_slots_tests.rs"]
mod tests;

use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_qos::{prefetch, HugeArray};
use aviary_scion::aes::Aes128;
use aviary_scion::drkey::AsHostKey;
use aviary_scion::HostAddr;

/// The most slots a lookup or insertion looks at from a host's home slot.
pub const MAX_PROBE: usize = 32;
/// The fewest slots of a table.
const MIN_SLOTS: usize = 64;

/// A host address in the slot's form: its 16 bytes (IPv4 in the low 4, a service in the low
/// 2) and which kind of address it is (0: a free slot). The gateway makes it once per packet,
/// at parse, for the hash, the lookup and the charge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tag {
    addr: [u8; 16],
    kind: u8,
}

impl Tag {
    const FREE: u8 = 0;
    const KINDS: usize = 4;

    pub fn of(host: &HostAddr) -> Self {
        let mut addr = [0u8; 16];
        let kind = match host {
            HostAddr::V4(a) => {
                addr[12..].copy_from_slice(&a.octets());
                1
            }
            HostAddr::V6(a) => {
                addr = a.octets();
                2
            }
            HostAddr::Svc(s) => {
                addr[14..].copy_from_slice(&s.to_be_bytes());
                3
            }
        };
        Self { addr, kind }
    }

    /// [`Tag::of`] the address of type/length code `type_len` whose bytes on a checked
    /// header are `b` (its 4 or 16), without decoding the address first.
    pub fn from_wire(type_len: u8, b: &[u8]) -> Self {
        const V4: u8 = HostAddr::V4(Ipv4Addr::UNSPECIFIED).type_len();
        const V6: u8 = HostAddr::V6(Ipv6Addr::UNSPECIFIED).type_len();
        let mut addr = [0u8; 16];
        // The same bytes `HostAddr`'s parse reads for each code (a service: the first 2).
        let kind = match type_len {
            V4 => {
                if let Some(a) = b.get(..4) {
                    addr[12..].copy_from_slice(a);
                }
                1
            }
            V6 => {
                if let Ok(a) = b.try_into() {
                    addr = a;
                }
                2
            }
            _ => {
                if let Some(a) = b.get(..2) {
                    addr[14..].copy_from_slice(a);
                }
                3
            }
        };
        Self { addr, kind }
    }

    pub fn host(&self) -> HostAddr {
        let a = &self.addr;
        match self.kind {
            1 => HostAddr::V4(Ipv4Addr::new(a[12], a[13], a[14], a[15])),
            2 => HostAddr::V6(self.addr.into()),
            _ => HostAddr::Svc(u16::from_be_bytes([self.addr[14], self.addr[15]])),
        }
    }
}

/// A host's home-slot hash, computed once per packet (at parse) and used for its prefetch and
/// its lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostHash(u64);

/// What the per-packet path needs of a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// The host's rate group, `None` if no prefix covers it.
    pub group: Option<u32>,
    /// `K_{A_0→A_0:H}` and the start of its epoch.
    pub key: (u32, AsHostKey),
}

/// One slot: one cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: Tag,
    entry: HostEntry,
}

impl Slot {
    const FREE: Slot = Slot { tag: Tag { addr: [0; 16], kind: Tag::FREE }, entry: NO_ENTRY };
}

const NO_ENTRY: HostEntry = HostEntry { group: None, key: (0, AsHostKey::from_bytes([0; 16])) };

/// Hosts by address: their [`HostEntry`] in cache-line slots and their `C` apart.
#[derive(Clone, Debug)]
pub struct SlotTable<C: Copy> {
    hasher: Aes128,
    /// Per kind of address, a secret mask on its hashes: two addresses of the same 16 bytes
    /// and different kinds (an IPv4 host and the IPv6 address `::a.b.c.d`) get unrelated
    /// home slots.
    kind_masks: [u64; Tag::KINDS],
    /// On huge pages: a table of megabytes read at a random slot per packet would otherwise
    /// cost a TLB miss per packet besides the cache miss its prefetch hides.
    slots: HugeArray<Slot>,
    cold: HugeArray<C>,
    len: usize,
    /// The longest probe any host in the table needs: lookups of absent hosts stop there.
    longest_probe: usize,
    max_slots: usize,
    /// How many times the table grew: a slot found at the same count still holds its host
    /// (hosts are never removed, and only growing moves them).
    grows: u32,
}

impl<C: Copy + Default> SlotTable<C> {
    /// A table with room for `hosts` hosts before it grows, growing up to `max_slots` slots (a
    /// power of two; it then holds at most half as many hosts), with the hash under `key`.
    pub fn new(hosts: usize, max_slots: usize, key: &[u8; 16]) -> Self {
        assert!(max_slots.is_power_of_two() && max_slots >= MIN_SLOTS, "max_slots: a power of two from {MIN_SLOTS}");
        let n = (2 * hosts).next_power_of_two().clamp(MIN_SLOTS, max_slots);
        let hasher = Aes128::new(key);
        // Masks from blocks no address takes: a kind byte in the first, 0xff in the rest.
        let kind_masks = std::array::from_fn(|kind| {
            let mut block = [0xff; 16];
            block[0] = kind as u8;
            word(&hasher.encrypt(&block))
        });
        let (slots, cold) = (HugeArray::new(n, Slot::FREE), HugeArray::new(n, C::default()));
        Self { hasher, kind_masks, slots, cold, len: 0, longest_probe: 0, max_slots, grows: 0 }
    }

    pub fn hash(&self, tag: &Tag) -> HostHash {
        self.hash_on(aviary_scion::cpu::Detect, tag)
    }

    /// [`Self::hash`] on the code `cpu` says the CPU runs ([`aviary_scion::cpu::Cpu`]).
    #[inline(always)]
    pub fn hash_on(&self, cpu: impl aviary_scion::cpu::Cpu, tag: &Tag) -> HostHash {
        HostHash(word(&self.hasher.encrypt_on(cpu, &tag.addr)) ^ self.kind_masks[usize::from(tag.kind) % Tag::KINDS])
    }

    fn home(&self, hash: HostHash) -> usize {
        hash.0 as usize & (self.slots.len() - 1)
    }

    /// Starts loading the host's home slot: the first, and almost always the only, slot its
    /// lookup reads.
    pub fn prefetch(&self, hash: HostHash) {
        prefetch(&self.slots[self.home(hash)]);
    }

    /// Starts loading the host's `C`, for a write soon after.
    pub fn prefetch_cold(&self, slot: u32) {
        if let Some(c) = self.cold.get(slot as usize) {
            prefetch(c);
        }
    }

    /// The slot of the host of `tag` (whose hash is `hash`), if it is in the table.
    pub fn find(&self, tag: &Tag, hash: HostHash) -> Option<u32> {
        let tag = *tag;
        let mask = self.slots.len() - 1;
        let home = self.home(hash);
        for i in 0..self.longest_probe {
            let at = (home + i) & mask;
            match self.slots[at].tag {
                t if t == tag => return Some(at as u32),
                t if t.kind == Tag::FREE => return None,
                _ => {}
            }
        }
        None
    }

    /// How many times the table grew so far; see [`SlotTable::grows`].
    pub fn grows(&self) -> u32 {
        self.grows
    }

    /// Whether `slot` holds the host of `tag` (slots move when the table grows).
    pub fn holds(&self, slot: u32, tag: &Tag) -> bool {
        self.slots.get(slot as usize).is_some_and(|s| s.tag == *tag)
    }

    pub fn entry(&self, slot: u32) -> &HostEntry {
        &self.slots[slot as usize].entry
    }

    pub fn entry_mut(&mut self, slot: u32) -> &mut HostEntry {
        &mut self.slots[slot as usize].entry
    }

    pub fn cold(&self, slot: u32) -> &C {
        &self.cold[slot as usize]
    }

    pub fn cold_mut(&mut self, slot: u32) -> &mut C {
        &mut self.cold[slot as usize]
    }

    /// Enters the host of `tag`, not yet in the table, with `entry`: its slot, or `None` if the table is
    /// at its maximum size and has no room for it within [`MAX_PROBE`] slots of its home or
    /// within its load bound.
    pub fn insert(&mut self, tag: &Tag, entry: HostEntry) -> Option<u32> {
        let hash = self.hash(tag);
        loop {
            let room = 2 * (self.len + 1) <= self.slots.len();
            if let Some(probe) = room.then(|| self.free_probe(hash)).flatten() {
                let at = (self.home(hash) + probe) & (self.slots.len() - 1);
                self.slots[at] = Slot { tag: *tag, entry };
                self.len += 1;
                self.longest_probe = self.longest_probe.max(probe + 1);
                return Some(at as u32);
            }
            if self.slots.len() >= self.max_slots {
                return None;
            }
            self.grow();
        }
    }

    /// How far from `hash`'s home the first free slot is, within [`MAX_PROBE`].
    fn free_probe(&self, hash: HostHash) -> Option<usize> {
        let (mask, home) = (self.slots.len() - 1, self.home(hash));
        (0..MAX_PROBE.min(self.slots.len())).find(|i| self.slots[(home + i) & mask].tag.kind == Tag::FREE)
    }

    /// Doubles the table, every host re-entered from its new home slot. At a quarter of the
    /// load there is always room; should a host's probe exceed [`MAX_PROBE`] all the same
    /// (only under hashes far from random), lookups look that far.
    fn grow(&mut self) {
        let n = 2 * self.slots.len();
        let (mut slots, mut cold) = (HugeArray::new(n, Slot::FREE), HugeArray::new(n, C::default()));
        self.longest_probe = 0;
        for (slot, c) in self.slots.iter().zip(self.cold.iter()).filter(|(s, _)| s.tag.kind != Tag::FREE) {
            let home = self.hash(&slot.tag).0 as usize;
            let probe = (0..n).find(|i| slots[(home + i) & (n - 1)].tag.kind == Tag::FREE).unwrap_or_default();
            let at = (home + probe) & (n - 1);
            (slots[at], cold[at]) = (*slot, *c);
            self.longest_probe = self.longest_probe.max(probe + 1);
        }
        (self.slots, self.cold) = (slots, cold);
        self.grows = self.grows.wrapping_add(1);
    }

    /// Every host in the table, with its `C`.
    pub fn iter(&self) -> impl Iterator<Item = (HostAddr, &C)> {
        self.slots.iter().zip(self.cold.iter()).filter(|(s, _)| s.tag.kind != Tag::FREE).map(|(s, c)| (s.tag.host(), c))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

/// The first 8 bytes of a cipher block, as a hash.
fn word(block: &[u8; 16]) -> u64 {
    u64::from_le_bytes([block[0], block[1], block[2], block[3], block[4], block[5], block[6], block[7]])
}
