//! Differential property at a segment crossover: the standard forwarder taking a batch
//! (`process_batch`) decides and writes exactly what it does taking the same packets one at a
//! time (`process`), for a random mix of packets at a crossover (two hop fields, two MACs per
//! packet), packets passing through within one segment (one MAC), and either of them with a
//! byte changed or cut short. Stage 3 keeps a crossover's second MAC apart from the batch's
//! first ones; a mix-up shows as a verdict or written bytes differing from the single
//! packet's, and valid packets must be forwarded.

use aviary_qos::Verdict;
use aviary_scion::{combine, AsForwarding, HopMacKey, IsdAsn, Segment, StandardForwarder};
use proptest::prelude::*;
use strategies::udp_packet_over;

mod strategies;

const IF_NEXT: u16 = 1;
const IF_PREV: u16 = 2;
const TS: u32 = 1_750_000_000;
const NOW_NS: u64 = (TS as u64 + 60) * 1_000_000_000;
const ASES: usize = 4;
/// The AS where the batches are compared: a crossover (up to core) for one path, a transit
/// hop for the other.
const AT: usize = 1;

fn ia(i: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + i as u64)
}

fn key(i: usize) -> HopMacKey {
    HopMacKey::new(&[i as u8 + 1; 16])
}

/// A segment constructed over the ASes in `order`.
fn segment(order: &[usize], seg_id: u16) -> Segment {
    let mut s = Segment::new(seg_id, TS);
    for (pos, &i) in order.iter().enumerate() {
        let towards = |j: usize| if j > i { IF_NEXT } else { IF_PREV };
        let ingress = if pos == 0 { 0 } else { towards(order[pos - 1]) };
        let egress = if pos + 1 == order.len() { 0 } else { towards(order[pos + 1]) };
        s.push_hop(&key(i), 63, ingress, egress);
    }
    s
}

/// A packet from AS 0 to AS 3 as it arrives at [`AT`]: over up, core and down segments
/// (`crossover`: a crossover at [`AT`]) or over one segment constructed along the way.
fn packet(crossover: bool, seg_id: u16, payload_len: usize) -> Vec<u8> {
    let path = if crossover {
        let (up, core, down) = (segment(&[1, 0], seg_id), segment(&[2, 1], 0x4444), segment(&[2, 3], 0x3333));
        combine(&[(&up, false), (&core, false), (&down, true)]).unwrap()
    } else {
        combine(&[(&segment(&[0, 1, 2, 3], seg_id), true)]).unwrap()
    };
    let mut pkt = udp_packet_over(ia(0), ia(ASES - 1), &path, payload_len);
    let v = router(0).process(&mut pkt, 0, NOW_NS);
    assert!(matches!(v, Verdict::Forward { egress: IF_NEXT, .. }), "AS 0 forwards: {v:?}");
    pkt
}

fn router(i: usize) -> StandardForwarder {
    let ifs = [(i + 1 < ASES).then_some(IF_NEXT), (i > 0).then_some(IF_PREV)];
    StandardForwarder::standard(AsForwarding::new(ia(i), key(i), ifs.into_iter().flatten()))
}

/// One packet of a batch: its path, and how it is damaged (a byte XORed at a position taken
/// modulo its length, or its length cut to a fraction).
#[derive(Clone, Debug)]
struct Spec {
    crossover: bool,
    seg_id: u16,
    payload_len: usize,
    flip: Option<(usize, u8)>,
    cut: Option<usize>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        any::<u16>(),
        0usize..64,
        prop::option::weighted(0.2, (any::<usize>(), 1u8..)),
        prop::option::weighted(0.1, any::<usize>()),
    )
        .prop_map(|(crossover, seg_id, payload_len, flip, cut)| Spec { crossover, seg_id, payload_len, flip, cut })
}

fn build(s: &Spec) -> Vec<u8> {
    let mut pkt = packet(s.crossover, s.seg_id, s.payload_len);
    if let Some((at, x)) = s.flip {
        let at = at % pkt.len();
        pkt[at] ^= x;
    }
    if let Some(c) = s.cut {
        pkt.truncate(c % pkt.len());
    }
    pkt
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn a_batch_with_crossovers_is_decided_as_its_packets_one_by_one(specs in prop::collection::vec(spec(), 1..=40)) {
        let mut one = router(AT);
        let mut batched = router(AT);
        let mut singles: Vec<Vec<u8>> = specs.iter().map(build).collect();
        let mut batch = singles.clone();
        let single_verdicts: Vec<Verdict> = singles.iter_mut().map(|p| one.process(p, IF_PREV, NOW_NS)).collect();
        let mut refs: Vec<&mut [u8]> = batch.iter_mut().map(|p| p.as_mut_slice()).collect();
        let mut verdicts = vec![Verdict::Deliver; refs.len()];
        batched.process_batch(&mut refs, IF_PREV, NOW_NS, &mut verdicts);
        prop_assert_eq!(&verdicts, &single_verdicts);
        prop_assert_eq!(&batch, &singles);
        for (s, v) in specs.iter().zip(&verdicts) {
            if s.flip.is_none() && s.cut.is_none() {
                prop_assert!(matches!(v, Verdict::Forward { egress: IF_NEXT, .. }), "valid {:?}: {:?}", s, v);
            }
        }
    }
}
