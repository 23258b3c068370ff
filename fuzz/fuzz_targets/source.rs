//! `Source::new` and `Source::stamp` on fuzzed templates, reservations and packets: no
//! panic.
//!
//! Input: `[selector][now: 8][reservations: 32 each][rest]`. Selector bits 0-1: the
//! number of reservations; bit 2: the testbed's valid reservations (as many as asked,
//! cycled) instead of ones read from the input; bit 3: `now` within 2 s of the testbed's
//! sending time instead of any time; bit 4: the template is the testbed's with `rest`
//! XORed over it instead of `rest` itself. Each read reservation is
//! `ingress(2) egress(2) res_id(4) bw(2) start(4) duration(2) ak(16)`; a `start` with
//! its top bit set is taken as up to ~2 h before the sending time.
#![no_main]

mod common;

use aviary_hummingbird::crypto::ResInfo;
use aviary_hummingbird::{Reservation, Source};
use libfuzzer_sys::fuzz_target;

use common::{testbed, time, xor_onto, NOW_S};

const RES_LEN: usize = 32;

fn reservation(b: &[u8]) -> Reservation {
    let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let u32_at = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    let start = u32_at(10);
    let start = if start >> 31 == 1 { NOW_S - (start & 0x1fff) } else { start };
    Reservation {
        info: ResInfo {
            ingress: u16_at(0),
            egress: u16_at(2),
            res_id: u32_at(4),
            bw: u16_at(8),
            start,
            duration: u16_at(14),
        },
        ak: b[16..32].try_into().unwrap(),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let sel = data[0];
    let now = time(sel & 0x08 != 0, u64::from_be_bytes(data[1..9].try_into().unwrap()));
    let n = usize::from(sel & 3);
    let t = testbed();
    let mut rest = &data[9..];
    let res: Vec<Reservation> = if sel & 0x04 != 0 {
        t.reservations.iter().cycle().take(n).copied().collect()
    } else {
        if rest.len() < n * RES_LEN {
            return;
        }
        let r = rest[..n * RES_LEN].chunks(RES_LEN).map(reservation).collect();
        rest = &rest[n * RES_LEN..];
        r
    };
    let template = if sel & 0x10 != 0 { xor_onto(&t.template, rest) } else { rest.to_vec() };

    if let Ok(mut src) = Source::new(&template, &res) {
        let _ = src.stamp(&mut template.clone(), now);
        let _ = src.stamp(&mut t.template.clone(), now);
    }
    // The testbed's valid source stamping the fuzzed packet.
    let mut src = Source::new(&t.template, &t.reservations).expect("valid source");
    let _ = src.stamp(&mut template.clone(), now);
});
