//! pathval's router and destination on fuzzed packets: no panic; a packet that is not a
//! well-formed honest one is never delivered unless it equals, in every field the proofs
//! cover, the honest packet it was derived from.
//!
//! Input: `[selector][rest]`. Selector bit 0: `rest` itself (0) or the honest packet as it
//! leaves the source of a 3-node chain with `rest` XORed over it (1); bit 1: the router's
//! random source seed parity.
#![no_main]

use std::sync::OnceLock;

use aviary_pathval::header::field;
use aviary_pathval::{locate, Chain, Freshness, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_750_000_000;

struct Honest {
    chain: Chain,
    /// The packet as the source sends it.
    sent: Vec<u8>,
}

fn honest() -> &'static Honest {
    static H: OnceLock<Honest> = OnceLock::new();
    H.get_or_init(|| {
        let epoch = Epoch::new(1_749_990_000, 1_750_090_000).unwrap();
        let chain = Chain::new(3, 1, epoch, Freshness { max_age_s: 3, max_future_s: 1 }).unwrap();
        let mut sent = chain.packet(b"fuzzed pathval payload");
        chain.source().send(&mut sent, NOW as u32, chain.link(0)).unwrap();
        Honest { chain, sent }
    })
}

/// The bytes the proofs cover: HopCount, Metadata, Concealment and the payload.
fn covered(pkt: &[u8]) -> Option<Vec<u8>> {
    let at = locate(pkt).ok()?;
    let h = &pkt[at.header.clone()];
    let mut v = vec![h[field::HOP_COUNT]];
    v.extend_from_slice(&h[field::DATA_HASH.start..field::CONCEALMENT.end]);
    v.extend_from_slice(&pkt[at.payload]);
    Some(v)
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let h = honest();
    let mut pkt = if sel & 1 == 0 {
        rest.to_vec()
    } else {
        let mut p = h.sent.clone();
        p.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
        p
    };
    let before = covered(&pkt);
    let mut router = h.chain.routers()[0].clone();
    let mut random = SeededRandom::new(u64::from((sel >> 1) & 1));
    let verdict = router.process(&mut pkt, h.chain.link(0), h.chain.link(1), NOW, &mut random);
    if verdict != (Verdict::Forward { sampled: true }) && verdict != (Verdict::Forward { sampled: false }) {
        assert_eq!(router.stats.drops.total(), 1, "a drop is counted");
        return;
    }
    let mut dst = h.chain.destination().clone();
    if dst.receive(&mut pkt, h.chain.link(1), NOW) == Verdict::Deliver {
        assert_eq!(before, covered(&h.sent), "only the honest packet's covered bytes are delivered");
    }
});
