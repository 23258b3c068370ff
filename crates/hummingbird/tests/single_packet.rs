//! Differential test of the single packet's own stages 2 and 3 (`HopExtension::crypto_single`:
//! the hop field's CMAC inside the flyover's AES chain) against the batched stages: a router
//! given one packet at a time (`process`) decides and writes exactly what a router given the
//! same packets as batches (`process_batch`) does, at every AS of paths with segments in and
//! against construction direction, at crossovers and not, for flyover hops and standard hops
//! of a Hummingbird path, for the packets with any one byte changed (forged MACs, SegIDs,
//! reservation fields…), under a wrong A_K, and in a key rotation's overlap.

use aviary_hummingbird::testbed::{Chain, EXP_TIME, IF_NEXT, IF_PREV};
use aviary_hummingbird::{Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::{combine, Segment};

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const NOW: u64 = T0 as u64 * S + 250_000_000;
const ASES: usize = 5;

fn params() -> RouterParams {
    RouterParams { max_res_id: 4095, duplicate_suppression: true, ..RouterParams::default() }
}

/// The segments of a path from AS 0 to the last AS, each `(from, to, cons_dir)`: constructed
/// from AS `from` towards AS `to`, traversed in construction direction or against it.
type Shape = &'static [(usize, usize, bool)];

/// Every direction and crossover the router treats apart.
const SHAPES: [Shape; 5] = [
    // One segment along construction direction: transit hops that do not chain the SegID.
    &[(0, 4, true)],
    // One segment against it: every transit hop chains the SegID with its MAC first.
    &[(4, 0, false)],
    // A crossover at AS 2 from a segment along construction direction.
    &[(0, 2, true), (2, 4, true)],
    // A crossover at AS 2 from a segment against it.
    &[(2, 0, false), (2, 4, true)],
    // The testbed's up, core and down segments: crossovers at ASes 1 and 3, AS 2 as in the
    // bench rows.
    &[(1, 0, false), (3, 1, false), (3, 4, true)],
];

/// A chain of the testbed's ASes (keys of `generation`) over a path of `shape`.
fn chain(shape: Shape, generation: u8) -> Chain {
    let mut chain = Chain::with_key_generation(ASES, T0 - 60, generation);
    let segments: Vec<Segment> = shape
        .iter()
        .enumerate()
        .map(|(k, &(from, to, _))| {
            let mut s = Segment::new(0x1000 + 0x1111 * k as u16, T0 - 60);
            let up = to > from;
            let hops: Vec<usize> = if up { (from..=to).collect() } else { (to..=from).rev().collect() };
            for &i in &hops {
                let towards = |j: usize| if j > i { IF_NEXT } else { IF_PREV };
                let prev = if up { i.checked_sub(1) } else { Some(i + 1) };
                let next = if up { Some(i + 1) } else { i.checked_sub(1) };
                let ingress = if i == from { 0 } else { towards(prev.expect("a hop before")) };
                let egress = if i == to { 0 } else { towards(next.expect("a hop after")) };
                s.push_hop(&chain.ases[i].mac_key, EXP_TIME, ingress, egress);
            }
            s
        })
        .collect();
    let with_dirs: Vec<(&Segment, bool)> = segments.iter().zip(shape).map(|(s, &(_, _, d))| (s, d)).collect();
    chain.path = combine(&with_dirs).expect("a valid path");
    chain
}

/// A flyover packet with reservations at the ASes `at`, stamped at `sent_ns`.
fn flyover_packet(chain: &Chain, reservations: &[(usize, Reservation)], sent_ns: u64) -> Vec<u8> {
    let mut pkt = chain.hbird_packet(reservations, (sent_ns / S) as u32, 120).unwrap();
    let res: Vec<Reservation> = reservations.iter().map(|r| r.1).collect();
    Source::new(&pkt, &res).unwrap().stamp(&mut pkt, sent_ns).unwrap();
    pkt
}

fn grants(chain: &Chain, at: impl Iterator<Item = usize>) -> Vec<(usize, Reservation)> {
    at.map(|i| (i, chain.grant(i, 7 + i as u32, 600, T0 - 10, 3600))).collect()
}

/// `pkt` through the routers of ASes `0..i` (each must forward it): the packet as AS `i` gets it.
fn arriving(chain: &Chain, mut pkt: Vec<u8>, i: usize) -> Vec<u8> {
    for j in 0..i {
        let v = chain.router(j, params()).process(&mut pkt, Chain::forward_ingress(j), NOW);
        assert!(matches!(v, Verdict::Forward { .. }), "AS {j} refused the packet: {v:?}");
    }
    pkt
}

/// Two routers of AS `i`, one given packets alone and one given them as batches, that must
/// stay in step.
struct Pair {
    single: Router,
    batched: Router,
    ingress: u16,
}

impl Pair {
    fn new(single: Router, batched: Router, i: usize) -> Self {
        Self { single, batched, ingress: Chain::forward_ingress(i) }
    }

    /// `pkt` through both (in the batched one as a batch of itself and a copy, the copy's
    /// verdict that of a second arrival); both must agree on everything. Returns the verdict.
    fn agree(&mut self, pkt: &[u8], now: u64) -> Verdict {
        let (mut one, mut two) = (pkt.to_vec(), pkt.to_vec());
        let v = self.single.process(&mut one, self.ingress, now);
        let (mut a, mut b) = (pkt.to_vec(), pkt.to_vec());
        let mut verdicts = [Verdict::Deliver; 2];
        self.batched.process_batch(&mut [&mut a, &mut b], self.ingress, now, &mut verdicts);
        let v2 = self.single.process(&mut two, self.ingress, now);
        assert_eq!(verdicts, [v, v2], "verdicts");
        assert_eq!((&a, &b), (&one, &two), "written bytes");
        assert_eq!(self.batched.counters(), self.single.counters(), "counters");
        assert_eq!(self.batched.previous_key_packets(), self.single.previous_key_packets());
        v
    }
}

#[test]
fn single_packets_agree_with_batches_at_every_hop_and_for_every_changed_byte() {
    let mut forwarded = 0;
    let mut refused_for_mac = 0;
    for (k, shape) in SHAPES.iter().enumerate() {
        let chain = chain(shape, 0);
        for i in 0..ASES {
            // A flyover at every AS, and at every AS but this one (a standard hop of a
            // Hummingbird path here).
            for flyover_here in [true, false] {
                let res = grants(&chain, (0..ASES).filter(|&j| flyover_here || j != i));
                let pkt = arriving(&chain, flyover_packet(&chain, &res, NOW), i);
                let mut pair = Pair::new(chain.router(i, params()), chain.router(i, params()), i);
                let v = pair.agree(&pkt, NOW);
                let expected = if i + 1 == ASES {
                    Verdict::Deliver
                } else {
                    let egress = chain.router(i, params()).process(&mut pkt.clone(), pair.ingress, NOW);
                    assert!(matches!(egress, Verdict::Forward { .. }), "shape {k}, AS {i}: {egress:?}");
                    egress
                };
                assert_eq!(v, expected, "shape {k}, AS {i}, flyover {flyover_here}");
                if flyover_here && i + 1 < ASES {
                    assert!(matches!(v, Verdict::Forward { admission: Admission::RESERVED, .. }), "{v:?}");
                }
                forwarded += 1;
                for at in 0..pkt.len() {
                    for x in [0x01, 0x80] {
                        let mut forged = pkt.clone();
                        forged[at] ^= x;
                        if pair.agree(&forged, NOW) == Verdict::Drop(DropReason::BadMac) {
                            refused_for_mac += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(forwarded, SHAPES.len() * ASES * 2);
    // Every changed byte of a hop field's MAC or of what the MACs cover is refused; so that the
    // comparison above cannot pass by refusing nothing, a good share of the changes are.
    assert!(refused_for_mac > 1000, "{refused_for_mac} refused for their MAC");
}

#[test]
fn a_flyover_under_a_wrong_authentication_key_is_refused_alone_and_in_a_batch() {
    for shape in SHAPES {
        let chain = chain(shape, 0);
        for i in 0..ASES - 1 {
            let mut res = grants(&chain, 0..ASES);
            res[i].1.ak[5] ^= 0x20;
            let pkt = arriving(&chain, flyover_packet(&chain, &res, NOW), i);
            let mut pair = Pair::new(chain.router(i, params()), chain.router(i, params()), i);
            assert_eq!(pair.agree(&pkt, NOW), Verdict::Drop(DropReason::BadMac), "AS {i}");
        }
    }
}

#[test]
fn single_packets_agree_with_batches_in_a_rotation_overlap_and_after_it() {
    let until = NOW + 5 * S;
    for shape in SHAPES {
        let (old, new) = (chain(shape, 0), chain(shape, 1));
        for i in 0..ASES - 1 {
            let rotated = || {
                let mut r = old.router(i, params());
                r.rotate_secret(&new.ases[i].master_secret, until);
                r
            };
            let mut pair = Pair::new(rotated(), rotated(), i);
            // Hop fields and reservations all under the old keys, or all under the new ones:
            // during the overlap both verify.
            let old_pkt = arriving(&old, flyover_packet(&old, &grants(&old, 0..ASES), NOW), i);
            // Sent a millisecond earlier: another packet to the duplicate filter.
            let new_pkt = arriving(&new, flyover_packet(&new, &grants(&new, 0..ASES), NOW - S / 1000), i);
            for pkt in [&old_pkt, &new_pkt] {
                let v = pair.agree(pkt, NOW);
                assert!(matches!(v, Verdict::Forward { admission: Admission::RESERVED, .. }), "AS {i}: {v:?}");
                let mut forged = pkt.clone();
                let last = forged.len() - 1;
                forged[last] ^= 1;
                pair.agree(&forged, NOW);
            }
            assert!(pair.single.previous_key_packets() > 0, "AS {i}: the old keys verified nothing");
            // After the overlap the old keys are refused.
            let later = until + S;
            let v = Pair::new(rotated(), rotated(), i).agree(&old_pkt, later);
            assert_eq!(v, Verdict::Drop(DropReason::BadMac), "AS {i}");
        }
    }
}
