//! The slot table against a `HashMap` model: random insertions and lookups, addresses of
//! every kind (with the same 16 bytes across kinds), hosts whose home slots collide, and
//! tables that fill up.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;

const KEY: [u8; 16] = *b"host table tests";

fn entry(i: u32) -> HostEntry {
    HostEntry { group: (!i.is_multiple_of(3)).then_some(i), key: (i, AsHostKey::from_bytes([i as u8; 16])) }
}

/// A host of each kind from `n`; IPv4 `n` and IPv6 `::n` share their 16 bytes.
fn host(kind: u8, n: u16) -> HostAddr {
    let v4 = Ipv4Addr::from(u32::from(n) | 0x0a00_0000);
    match kind % 3 {
        0 => HostAddr::V4(v4),
        1 => HostAddr::V6(Ipv6Addr::from(u128::from(v4.to_bits()))),
        _ => HostAddr::Svc(n),
    }
}

/// Checks every host of the model is found with its entry and count, and `absent` is not.
fn agrees(t: &SlotTable<u64>, model: &HashMap<HostAddr, (HostEntry, u64)>, absent: &[HostAddr]) {
    assert_eq!(t.len(), model.len());
    for (h, (e, c)) in model {
        let slot = t.find(&Tag::of(h), t.hash(&Tag::of(h))).unwrap_or_else(|| panic!("{h:?} lost"));
        assert_eq!((t.entry(slot), t.cold(slot)), (e, c));
    }
    for h in absent.iter().filter(|h| !model.contains_key(h)) {
        assert_eq!(t.find(&Tag::of(h), t.hash(&Tag::of(h))), None, "{h:?} found but never entered");
    }
    let mut listed: Vec<_> = t.iter().map(|(h, c)| (h, *c)).collect();
    let mut want: Vec<_> = model.iter().map(|(h, (_, c))| (*h, *c)).collect();
    listed.sort_by_key(|(h, _)| format!("{h:?}"));
    want.sort_by_key(|(h, _)| format!("{h:?}"));
    assert_eq!(listed, want);
}

proptest! {
    /// Enters hosts (a host already in is updated, as the gateway does), counts a packet of
    /// each in its cold part, and looks others up; a table at its maximum may refuse hosts,
    /// but only when it holds half its slots or a host's probe would be too long.
    #[test]
    fn the_table_agrees_with_a_hash_map(
        ops in proptest::collection::vec((0u8..3, 0u16..300, any::<bool>()), 1..400),
        max_log in 6u32..10,
    ) {
        let max_slots = 1usize << max_log;
        let mut t: SlotTable<u64> = SlotTable::new(0, max_slots, &KEY);
        let mut model: HashMap<HostAddr, (HostEntry, u64)> = HashMap::new();
        let mut seen = Vec::new();
        for (i, (kind, n, enter)) in ops.into_iter().enumerate() {
            let h = host(kind, n);
            seen.push(h);
            if !enter {
                prop_assert_eq!(t.find(&Tag::of(&h), t.hash(&Tag::of(&h))).is_some(), model.contains_key(&h));
                continue;
            }
            let e = entry(i as u32);
            match t.find(&Tag::of(&h), t.hash(&Tag::of(&h))) {
                Some(slot) => {
                    *t.entry_mut(slot) = e;
                    *t.cold_mut(slot) += 1;
                    let m = model.get_mut(&h).expect("found, so in the model");
                    (m.0, m.1) = (e, m.1 + 1);
                }
                None => match t.insert(&Tag::of(&h), e) {
                    Some(slot) => {
                        *t.cold_mut(slot) += 1;
                        prop_assert!(model.insert(h, (e, 1)).is_none());
                    }
                    None => prop_assert!(2 * (model.len() + 1) > max_slots || model.len() >= MAX_PROBE),
                },
            }
            agrees(&t, &model, &seen);
        }
    }
}

/// `n` IPv4 hosts whose home slots in a table of `slots` slots are all slot 0: what an
/// adversary who knew the key would send.
fn colliding(t: &SlotTable<u64>, slots: usize, n: usize) -> Vec<HostAddr> {
    (0u32..)
        .map(|i| HostAddr::V4(Ipv4Addr::from(0x0a00_0000 | i)))
        .filter(|h| (t.hash(&Tag::of(h)).0 as usize).is_multiple_of(slots))
        .take(n)
        .collect()
}

#[test]
fn colliding_hosts_fill_a_full_table_up_to_the_probe_bound_and_no_further() {
    let mut t: SlotTable<u64> = SlotTable::new(0, 64, &KEY);
    let hosts = colliding(&t, 64, 40);
    let mut model = HashMap::new();
    for (i, h) in hosts.iter().enumerate() {
        match t.insert(&Tag::of(h), entry(i as u32)) {
            Some(_) => assert!(model.insert(*h, (entry(i as u32), 0)).is_none()),
            None => assert!(i >= 32, "host {i} refused with room for it"),
        }
    }
    // At 64 slots the load bound (32 hosts) and the probe bound (32 slots) meet.
    assert_eq!(model.len(), 32);
    agrees(&t, &model, &hosts);
}

#[test]
fn colliding_hosts_make_a_table_below_its_maximum_grow_apart() {
    let mut t: SlotTable<u64> = SlotTable::new(0, 1 << 12, &KEY);
    let hosts = colliding(&t, 64, 40);
    let model: HashMap<_, _> = hosts.iter().enumerate().map(|(i, h)| (*h, (entry(i as u32), 0))).collect();
    for (i, h) in hosts.iter().enumerate() {
        assert!(t.insert(&Tag::of(h), entry(i as u32)).is_some(), "host {i} refused below the maximum");
    }
    agrees(&t, &model, &hosts);
    // Under another key the same addresses do not collide: the home slot is secret.
    let other: SlotTable<u64> = SlotTable::new(0, 64, b"another hash key");
    let homes: std::collections::HashSet<_> = hosts.iter().map(|h| other.hash(&Tag::of(h)).0 % 64).collect();
    assert!(homes.len() > 10, "{} home slots", homes.len());
}

#[test]
fn a_slot_is_one_cache_line() {
    assert_eq!(std::mem::size_of::<Slot>(), 64);
    assert_eq!(std::mem::align_of::<Slot>(), 64);
}

proptest! {
    /// The tag made from a header's bytes is the tag of the address the header's parse gives.
    #[test]
    fn tags_from_the_wire_are_tags_of_the_parsed_addresses(v4: u32, v6: u128, svc: u16) {
        let hosts = [HostAddr::V4(Ipv4Addr::from(v4)), HostAddr::V6(Ipv6Addr::from(v6)), HostAddr::Svc(svc)];
        for h in hosts {
            let (wire, len) = h.to_wire();
            prop_assert_eq!(Tag::from_wire(h.type_len(), &wire[..len]), Tag::of(&h));
        }
    }
}
