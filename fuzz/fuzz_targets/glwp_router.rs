//! GLWP's router on fuzzed packets: no panic, every packet is forwarded, delivered or counted
//! as a drop, and a packet is only accepted if its hop authenticator is the one a reference
//! computation (`hop_key`, `hop_authenticator` over the fields as the header view reads them)
//! gives for exactly the bytes it carries: a router that ignored a covered byte would accept a
//! mutated packet whose carried authenticator is the honest one, and fail this. (A mutated
//! packet whose 24-bit authenticator collides by chance is a forgery the reference accepts
//! too, so a long fuzz run cannot fail on one.)
//!
//! Input: `[selector][rest]`. Selector bit 0: `rest` itself (0) or the honest packet with
//! `rest` XORed over it (1); bits 1-3: the ingress interface.
#![no_main]

use std::sync::OnceLock;

use aviary_glwp::header::Header;
use aviary_glwp::{hop_authenticator, hop_key, locate, testbed, AidMonitor, Freshness, HopKeyInput, Router};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, Verdict};
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_750_000_000_000_000_000;
const SECRET: [u8; 16] = [0x11; 16];
const FRESH: Freshness = Freshness { lifetime_ns: 500_000_000, skew_ns: 1_000_000_000 };

fn honest() -> &'static Vec<u8> {
    static H: OnceLock<Vec<u8>> = OnceLock::new();
    H.get_or_init(|| {
        let path = [(0, 1), (2, 3), (4, 0)];
        let alloc = (7, 8000, (NOW / 1_000_000_000) as u32 + 3600);
        let source = testbed::allocation(testbed::SRC_IA, &path, alloc, &[SECRET, [0x22; 16]]);
        source.packet(&testbed::addresses(testbed::SRC_IA), NOW, b"fuzzed glwp payload").unwrap()
    })
}

/// The hop authenticator the router must have checked: of the hop the hop pointer names,
/// recomputed from the packet's own fields under AS 1's secret.
fn reference_check(pkt: &[u8]) -> Option<bool> {
    let at = locate(pkt).ok()?;
    let h = Header::new_checked(&pkt[at.header.clone()]).ok()?;
    // On-path AS k = HP + 1 checks pair k and hop authenticator k.
    let k = usize::from(h.hop_pointer()) + 1;
    let (ingress, egress) = h.pair(k)?;
    let input = HopKeyInput { src: h.src(), aid: h.aid(), beta: h.beta(), ingress, egress, ts_exp: h.ts_exp() };
    let expected = hop_authenticator(&hop_key(&SECRET, &input), h.src(), h.ts_pkt(), at.pkt_len);
    Some(h.hop_authenticator(k)? == expected)
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let mut pkt = if sel & 1 == 0 {
        rest.to_vec()
    } else {
        let mut p = honest().clone();
        p.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
        p
    };
    let ingress = u16::from((sel >> 1) & 7);
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 3_000_000_000, expected_per_window: 1000, false_positive_rate: 1e-9 },
        [1; 16],
    )
    .unwrap();
    let mut router = Router::new(&SECRET, FRESH, AidMonitor::new(8, 9000, 3), dups);
    let before = pkt.clone();
    let verdict = router.process(&mut pkt, ingress, NOW);
    let s = &router.stats;
    assert_eq!(s.drops.total() + s.forwarded + s.delivered, 1);
    if !matches!(verdict, Verdict::Drop(_)) {
        assert_eq!(reference_check(&before), Some(true), "accepted a packet whose hop authenticator does not verify");
    }
});
