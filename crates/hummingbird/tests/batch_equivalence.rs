//! Differential property: a router that takes packets in batches (`process_batch`) decides,
//! writes and counts exactly what a router taking the same packets one at a time
//! (`process`) does. The batched stages share per-packet records between packets and
//! interleave their cryptography; nothing of one packet may leak into another's verdict,
//! bytes or counters. Packets are a random mix of standard and flyover packets, valid or
//! with a byte changed or the buffer cut short, arriving at a transit AS.

use std::sync::OnceLock;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Router, RouterParams, Source};
use aviary_qos::Verdict;
use proptest::prelude::*;

const NOW_S: u32 = 1_750_000_000;
const NS: u64 = 1_000_000_000;
const NOW_NS: u64 = NOW_S as u64 * NS;
/// The transit AS of a three-AS chain, where packets are compared.
const AT: usize = 1;

fn chain() -> &'static Chain {
    static CHAIN: OnceLock<Chain> = OnceLock::new();
    CHAIN.get_or_init(|| Chain::new(3, NOW_S - 60))
}

fn params() -> RouterParams {
    RouterParams { max_res_id: 4095, duplicate_suppression: true, ..RouterParams::default() }
}

/// How one packet of the batch is made.
#[derive(Clone, Debug)]
enum Kind {
    Standard,
    /// A flyover at the transit AS under reservation `res_id` with bandwidth code `bw`
    /// (small codes run over their rate within a batch), sent `sent_ago_ms` before arrival.
    Flyover {
        res_id: u32,
        bw: u16,
        sent_ago_ms: u64,
    },
}

#[derive(Clone, Debug)]
struct Spec {
    kind: Kind,
    payload_len: usize,
    /// A byte of the packet (index modulo its length) XORed with a non-zero value.
    flip: Option<(usize, u8)>,
    /// The buffer cut to this fraction (in 1/256) of its length.
    cut: Option<u8>,
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    let kind = prop_oneof![
        Just(Kind::Standard),
        (0u32..4, 1u16..=1023, 0u64..3000).prop_map(|(res_id, bw, sent_ago_ms)| Kind::Flyover {
            res_id,
            bw,
            sent_ago_ms
        }),
    ];
    let flip = proptest::option::weighted(0.3, (any::<usize>(), 1u8..=255));
    let cut = proptest::option::weighted(0.05, any::<u8>());
    (kind, 0usize..600, flip, cut).prop_map(|(kind, payload_len, flip, cut)| Spec { kind, payload_len, flip, cut })
}

/// The packet as it arrives at the transit AS at `now`.
fn packet(s: &Spec, now: u64) -> Vec<u8> {
    let c = chain();
    let mut pkt = match s.kind {
        Kind::Standard => c.standard_packet(s.payload_len),
        Kind::Flyover { res_id, bw, sent_ago_ms } => {
            let res = [(AT, c.grant(AT, res_id, bw, NOW_S - 10, 3600))];
            let sent = now - sent_ago_ms * 1_000_000;
            let mut pkt = c.hbird_packet(&res, (sent / NS) as u32, s.payload_len).unwrap();
            Source::new(&pkt, &[res[0].1]).unwrap().stamp(&mut pkt, sent).unwrap();
            pkt
        }
    };
    c.router(0, params()).process(&mut pkt, Chain::forward_ingress(0), now);
    if let Some((i, x)) = s.flip {
        let i = i % pkt.len();
        pkt[i] ^= x;
    }
    if let Some(cut) = s.cut {
        pkt.truncate(pkt.len() * usize::from(cut) / 256);
    }
    pkt
}

/// Everything a router shows of what it did.
fn observed(r: &Router) -> (aviary_hummingbird::router::FlyoverCounters, u64) {
    (*r.counters(), r.previous_key_packets())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batched_and_single_packets_agree(specs in prop::collection::vec(arb_spec(), 1..=40), offset_ms in 0u64..1000) {
        let now = NOW_NS + offset_ms * 1_000_000;
        let ingress = Chain::forward_ingress(AT);
        let pkts: Vec<Vec<u8>> = specs.iter().map(|s| packet(s, now)).collect();

        let mut single = chain().router(AT, params());
        let mut one_by_one = pkts.clone();
        let single_verdicts: Vec<Verdict> =
            one_by_one.iter_mut().map(|p| single.process(p, ingress, now)).collect();

        let mut batched = chain().router(AT, params());
        let mut together = pkts.clone();
        let mut refs: Vec<&mut [u8]> = together.iter_mut().map(|p| p.as_mut_slice()).collect();
        let mut batch_verdicts = vec![Verdict::Deliver; refs.len()];
        batched.process_batch(&mut refs, ingress, now, &mut batch_verdicts);

        prop_assert_eq!(&batch_verdicts, &single_verdicts);
        prop_assert_eq!(&together, &one_by_one);
        prop_assert_eq!(observed(&batched), observed(&single));
    }
}
