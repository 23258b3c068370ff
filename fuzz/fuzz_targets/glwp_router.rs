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

use std::net::Ipv4Addr;
use std::sync::OnceLock;

use aviary_glwp::header::Header;
use aviary_glwp::{hop_authenticator, hop_key, locate, AidMonitor, Freshness, HopKeyInput, Router, SourceAllocation};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::{HostAddr, IsdAsn, ScionHeader};
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_750_000_000_000_000_000;
const SECRET: [u8; 16] = [0x11; 16];
const FRESH: Freshness = Freshness { lifetime_ns: 500_000_000, skew_ns: 1_000_000_000 };

fn honest() -> &'static Vec<u8> {
    static H: OnceLock<Vec<u8>> = OnceLock::new();
    H.get_or_init(|| {
        let src = IsdAsn::new(1, 0xff00_0000_0110);
        let path = vec![(0, 1), (2, 3), (4, 0)];
        let (aid, beta, ts_exp) = (7, 8000, (NOW / 1_000_000_000) as u32 + 3600);
        let keys: Vec<[u8; 16]> = [SECRET, [0x22; 16]]
            .iter()
            .zip(&path[1..])
            .map(|(s, &(ingress, egress))| hop_key(s, &HopKeyInput { src, aid, beta, ingress, egress, ts_exp }))
            .collect();
        let source = SourceAllocation { path, aid, beta, ts_exp, hop_keys: keys };
        let addresses = ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: 17,
            path_type: 0,
            dst_ia: IsdAsn::new(1, 0xff00_0000_0112),
            src_ia: src,
            dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            src_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            path: vec![],
        };
        source.packet(&addresses, NOW, b"fuzzed glwp payload").unwrap()
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
