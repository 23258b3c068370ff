//! Shared by the `router` and `source` targets: the four-AS testbed chain with
//! reservations on ASes 1 and 2, and valid packets as they arrive at every AS, made once
//! per fuzzing process.
#![allow(dead_code)]

use std::sync::OnceLock;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Reservation, Router, RouterParams, Source};
use aviary_qos::Verdict;

pub const NOW_S: u32 = 1_750_000_000;
pub const NS: u64 = 1_000_000_000;
/// The time at which the valid packets are sent and processed.
pub const NOW_NS: u64 = NOW_S as u64 * NS + 250_000_000;

pub struct Testbed {
    pub chain: Chain,
    pub reservations: Vec<Reservation>,
    /// The unstamped Hummingbird packet.
    pub template: Vec<u8>,
    /// The stamped Hummingbird packet as it arrives at AS `i`.
    pub hbird: Vec<Vec<u8>>,
    /// A standard SCION packet as it arrives at AS `i`.
    pub standard: Vec<Vec<u8>>,
    /// A fresh router of every AS, to be cloned (making one walks all 65536 interface ids).
    pub routers: Vec<Router>,
}

/// Small policing arrays, so that a fresh router per input is cheap.
pub fn params() -> RouterParams {
    RouterParams { max_res_id: 1023, ..RouterParams::default() }
}

/// A fresh router (fresh policing state) of AS `i`.
pub fn router(i: usize) -> Router {
    testbed().routers[i].clone()
}

pub fn testbed() -> &'static Testbed {
    static T: OnceLock<Testbed> = OnceLock::new();
    T.get_or_init(|| {
        let chain = Chain::new(4, NOW_S - 60);
        let res = [(1, chain.grant(1, 7, 600, NOW_S - 10, 3600)), (2, chain.grant(2, 1000, 600, NOW_S - 30, 120))];
        let template = chain.hbird_packet(&res, NOW_S, 300).expect("template");
        let reservations: Vec<Reservation> = res.iter().map(|r| r.1).collect();
        let mut pkt = template.clone();
        Source::new(&template, &reservations).expect("source").stamp(&mut pkt, NOW_NS).expect("stamp");
        let hbird = walk(&chain, pkt);
        let standard = walk(&chain, chain.standard_packet(300));
        let routers = (0..chain.ases.len()).map(|i| chain.router(i, params())).collect();
        Testbed { chain, reservations, template, hbird, standard, routers }
    })
}

/// The packet as it arrives at every AS of the chain.
fn walk(chain: &Chain, mut pkt: Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..chain.ases.len() {
        out.push(pkt.clone());
        let v = chain.router(i, params()).process(&mut pkt, Chain::forward_ingress(i), NOW_NS);
        assert!(matches!(v, Verdict::Forward { .. } | Verdict::Deliver), "AS {i}: {v:?}");
    }
    out
}

/// `base` with `mask` XORed over its start (a mask longer than `base` is cut).
pub fn xor_onto(base: &[u8], mask: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for (o, m) in out.iter_mut().zip(mask) {
        *o ^= m;
    }
    out
}

/// A time near [`NOW_NS`] (within ±2 s) or any time, as the selector bit says.
pub fn time(near: bool, raw: u64) -> u64 {
    if near {
        NOW_NS - 2 * NS + raw % (4 * NS)
    } else {
        raw
    }
}
