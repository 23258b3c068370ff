//! The EPIC forwarder (path types 1, 3 and the per-AS path, with DRKey keys and duplicate
//! suppression) on fuzzed packets: no panic, and a forwarded packet is still a well-formed
//! SCION packet.
//!
//! Input: `[path type][ingress: 2][now: 8][rest]`; the path type byte is written over the
//! packet's so that the EPIC types are reached often.
#![no_main]

use std::sync::Mutex;

use aviary_qos::Verdict;
use aviary_scion::drkey::{Epoch, IssuerKeys, Protocol};
use aviary_scion::epic::{Epic, EpicDuplicates, EpicForwarder};
use aviary_scion::wire::header::field;
use aviary_scion::{AsForwarding, HopMacKey, IsdAsn, ScionView};
use libfuzzer_sys::fuzz_target;

static ROUTER: Mutex<Option<EpicForwarder>> = Mutex::new(None);

fn router() -> EpicForwarder {
    let ia = IsdAsn::new(1, 0xff00_0000_0111);
    let fwd = AsForwarding::new(ia, HopMacKey::new(&[1; 16]), [1, 2, 3]);
    let keys = IssuerKeys::new(&[2; 16], Protocol(42), Epoch::new(0, u32::MAX).unwrap()).unwrap();
    let dups = EpicDuplicates::new(1024, 1e-4, [3; 16]).unwrap();
    EpicForwarder::new(fwd, Epic::new(keys, Some(dups)))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 11 {
        return;
    }
    let ingress = u16::from_be_bytes([data[1], data[2]]);
    let now = u64::from_be_bytes(data[3..11].try_into().unwrap());
    let mut pkt = data[11..].to_vec();
    if let Some(t) = pkt.get_mut(field::PATH_TYPE) {
        *t = data[0];
    }
    let mut guard = ROUTER.lock().unwrap();
    let r = guard.get_or_insert_with(router);
    if let Verdict::Forward { .. } = r.process(&mut pkt, ingress, now) {
        ScionView::new_checked(&pkt[..]).expect("a forwarded packet is still well-formed");
    }
});
