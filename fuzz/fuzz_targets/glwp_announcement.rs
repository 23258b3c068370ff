//! GLWP matrix announcements on fuzzed bytes: the checked view never panics, parse/emit
//! reproduces the bytes it accepted, and a neighbour receiving them never panics and accepts a
//! mutated announcement only if it says what the honest one says (anything else would be a
//! forgery past the MAC).
//!
//! Input: `[selector][rest]`. Selector bit 0: `rest` itself (0) or the honest announcement of
//! AS 1 to AS 0 with `rest` XORed over it (1).
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use aviary_glwp::discovery::announcement::{Announcement, AnnouncementRepr};
use aviary_glwp::discovery::{AnnouncementLimit, DiscoveryParams, DrkeyKeys, Neighbourhood};
use aviary_glwp::{AllocationMatrix, Freshness, MatrixEntry};
use aviary_scion::drkey::Epoch;
use aviary_scion::IsdAsn;
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_750_000_000_000_000_000;

fn ia(k: u64) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + k)
}

struct Setup {
    keys: DrkeyKeys,
    receiver: Neighbourhood,
    honest: Vec<u8>,
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let epoch = Epoch::new(1_700_000_000, 1_800_000_000).unwrap();
        let (k0, mut k1) = (DrkeyKeys::new(&[1; 16], epoch).unwrap(), DrkeyKeys::new(&[2; 16], epoch).unwrap());
        let mut keys = k0.clone();
        keys.insert_fetched(ia(1), k1.issue(ia(0)));
        k1.insert_fetched(ia(0), k0.issue(ia(1)));
        let params = DiscoveryParams {
            freshness: Freshness { lifetime_ns: 500_000_000, skew_ns: 1_000_000_000 },
            validity_s: 86_400,
            min_guarantee_bps: 0,
        };
        let limit = AnnouncementLimit { burst: u32::MAX, refill_ns: 1 };
        let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
        let m1 = AllocationMatrix::new([e(1, 2, 1_000), e(2, 1, 700), e(0, 1, 300), e(1, 0, 50)]).unwrap();
        let mut sender = Neighbourhood::new(m1, BTreeMap::from([(1, ia(0))]), params, limit);
        let new = AllocationMatrix::new([e(1, 2, 900), e(2, 1, 800), e(0, 1, 100)]).unwrap();
        sender.change_matrix(new, NOW).unwrap();
        let honest = sender.announcements(&k1, NOW).remove(0).2;
        let receiver = Neighbourhood::new(AllocationMatrix::default(), BTreeMap::from([(7, ia(1))]), params, limit);
        Setup { keys, receiver, honest }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let s = setup();
    let msg = if selector & 1 == 0 {
        rest.to_vec()
    } else {
        let mut m = s.honest.clone();
        m.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
        m
    };
    if let Ok(a) = Announcement::new_checked(&msg[..]) {
        let repr = AnnouncementRepr::parse(&a);
        assert_eq!(repr.emit(|_| a.mac()).unwrap(), msg);
    }
    let mut receiver = s.receiver.clone();
    if receiver.receive(&msg, ia(1), &s.keys, NOW).is_ok() {
        let (got, want) = (Announcement::new_checked(&msg[..]).unwrap(), Announcement::new_checked(&s.honest[..]).unwrap());
        assert_eq!(AnnouncementRepr::parse(&got), AnnouncementRepr::parse(&want), "a forged announcement was accepted");
    }
});
