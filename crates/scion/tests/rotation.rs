//! Key rotation at the standard SCION forwarder: during the overlap every hop field verifies
//! under whichever key (old or new) it was issued with, each hop field of a crossover on its
//! own, with SegIDs chained from the packet's own values; after the overlap only new ones do.

use aviary_qos::{DropReason, Verdict};
use aviary_scion::{combine, AsForwarding, HopMacKey, IsdAsn, Segment, StandardForwarder};
use proptest::prelude::*;
use strategies::udp_packet_over;

mod strategies;

const IF_NEXT: u16 = 1;
const IF_PREV: u16 = 2;
const TS: u32 = 1_750_000_000;
const NOW_NS: u64 = (TS as u64 + 60) * 1_000_000_000;
const UNTIL_NS: u64 = NOW_NS + 1_000_000_000;
const ASES: usize = 4;

fn ia(i: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + i as u64)
}

/// AS `i`'s hop-field key before (`false`) and after (`true`) the rotation (cheap keys, no PBKDF2).
fn key(i: usize, new: bool) -> HopMacKey {
    HopMacKey::new(&[i as u8 + 1 + if new { 100 } else { 0 }; 16])
}

/// The path over four ASes: up (constructed 1→0), core (2→1), down (2→3), traversed against,
/// against and along construction direction; the `k`-th hop field issued (in construction
/// order) is under the new key if `new[k]`.
fn packet(new: [bool; 6], payload_len: usize) -> Vec<u8> {
    let mut k = 0;
    let mut seg = |order: &[usize], seg_id: u16| {
        let mut s = Segment::new(seg_id, TS);
        for (pos, &i) in order.iter().enumerate() {
            let towards = |j: usize| if j > i { IF_NEXT } else { IF_PREV };
            let ingress = if pos == 0 { 0 } else { towards(order[pos - 1]) };
            let egress = if pos + 1 == order.len() { 0 } else { towards(order[pos + 1]) };
            s.push_hop(&key(i, new[k]), 63, ingress, egress);
            k += 1;
        }
        s
    };
    let (up, core, down) = (seg(&[1, 0], 0x2222), seg(&[2, 1], 0x4444), seg(&[2, 3], 0x3333));
    let path = combine(&[(&up, false), (&core, false), (&down, true)]).unwrap();
    udp_packet_over(ia(0), ia(ASES - 1), &path, payload_len)
}

/// Every AS's forwarder, rotated from the old key to the new one with an overlap until `UNTIL_NS`.
fn rotated_routers() -> Vec<StandardForwarder> {
    (0..ASES)
        .map(|i| {
            let ifs = [(i + 1 < ASES).then_some(IF_NEXT), (i > 0).then_some(IF_PREV)];
            let mut fwd = AsForwarding::new(ia(i), key(i, false), ifs.into_iter().flatten());
            fwd.rotate(key(i, true), UNTIL_NS);
            StandardForwarder::standard(fwd)
        })
        .collect()
}

/// The verdict of the last AS that saw the packet.
fn travel(routers: &mut [StandardForwarder], mut pkt: Vec<u8>, now_ns: u64) -> Verdict {
    for (i, r) in routers.iter_mut().enumerate() {
        let ingress = if i == 0 { 0 } else { IF_PREV };
        match r.process(&mut pkt, ingress, now_ns) {
            Verdict::Forward { egress: IF_NEXT, .. } => continue,
            v => return v,
        }
    }
    panic!("forwarded beyond the last AS")
}

proptest! {
    #[test]
    fn any_mix_of_generations_travels_in_the_overlap_and_only_new_hop_fields_after(
        new in any::<[bool; 6]>(),
        payload_len in 0usize..200,
    ) {
        let mut routers = rotated_routers();
        // Delivery at the last AS means every AS (crossovers included) verified its hop fields
        // and wrote back SegIDs the next AS verifies against.
        prop_assert_eq!(travel(&mut routers, packet(new, payload_len), NOW_NS), Verdict::Deliver);
        let old_ones = new.iter().filter(|n| !**n).count() as u64;
        let retried: u64 = routers.iter().map(|r| r.previous_key_packets).sum();
        // A router retries a packet once, whichever of its hop fields failed.
        prop_assert!(retried <= old_ones);
        prop_assert_eq!(retried == 0, old_ones == 0);
        let after = travel(&mut routers, packet(new, payload_len), UNTIL_NS);
        if new.iter().all(|n| *n) {
            prop_assert_eq!(after, Verdict::Deliver);
        } else {
            prop_assert_eq!(after, Verdict::Drop(DropReason::BadMac));
        }
    }
}
