//! The standard forwarder and the Hummingbird router of a testbed AS on fuzzed packets: no
//! panic, standard SCION packets get the same verdict from both, and a forwarded packet
//! is still a well-formed SCION packet (it then goes on to the next ASes).
//!
//! Input: `[selector][ingress: 2][now: 8][rest]`. Selector bits 0-1: the AS (0-3);
//! bits 2-3: the packet (0, 1: `rest` itself; 2: the valid stamped Hummingbird packet as
//! it arrives at that AS with `rest` XORed over it; 3: the same for a standard packet);
//! bit 4: the AS's real ingress interface instead of `ingress`; bit 5: `now` within 2 s
//! of the packets' sending time instead of any time.
#![no_main]

mod common;

use aviary_hummingbird::testbed::Chain;
use aviary_qos::Verdict;
use aviary_scion::{path_type, ScionView, StandardForwarder};
use libfuzzer_sys::fuzz_target;

use common::{router, testbed, time, xor_onto};

fuzz_target!(|data: &[u8]| {
    if data.len() < 11 {
        return;
    }
    let sel = data[0];
    let at = usize::from(sel & 3);
    let ingress = if sel & 0x10 != 0 { Chain::forward_ingress(at) } else { u16::from_be_bytes([data[1], data[2]]) };
    let now = time(sel & 0x20 != 0, u64::from_be_bytes(data[3..11].try_into().unwrap()));
    let rest = &data[11..];
    let t = testbed();
    let mut pkt = match (sel >> 2) & 3 {
        2 => xor_onto(&t.hbird[at], rest),
        3 => xor_onto(&t.standard[at], rest),
        _ => rest.to_vec(),
    };

    let mut r = router(at);
    let standard = ScionView::new_checked(&pkt[..]).map_or(true, |v| v.path_type() != path_type::HUMMINGBIRD);
    let v_fwd = StandardForwarder::standard(r.forwarding().clone()).process(&mut pkt.clone(), ingress, now);
    let mut v = r.process(&mut pkt, ingress, now);
    if standard {
        assert_eq!(v, v_fwd, "the standard forwarder and Router disagree on a non-Hummingbird packet");
    }
    // A forwarded packet travels on through the rest of the chain.
    let mut next = at + 1;
    while let Verdict::Forward { .. } = v {
        assert!(ScionView::new_checked(&pkt[..]).is_ok(), "forwarded a malformed packet");
        if next == t.chain.ases.len() {
            break;
        }
        v = router(next).process(&mut pkt, Chain::forward_ingress(next), now);
        next += 1;
    }
});
