//! The packets the generator offers and the router that must accept them: AS 2 of a five-AS
//! chain, a plain transit hop of the core segment (as in `aviary bench`), is the router under
//! test. Packets are built as AS 0's host sends them and taken through AS 0 and AS 1 in
//! process, so that they reach the router at its own hop field, with valid MACs under its key.

use aviary_hummingbird::reservation::Reservation;
use aviary_hummingbird::testbed::{Chain, IF_NEXT, IF_PREV};
use aviary_hummingbird::{Router, RouterParams, Source};
use aviary_qos::Verdict;
use aviary_scion::wire::path::field::meta;
use aviary_scion::{IsdAsn, ScionView};
use serde::Serialize;

/// The router under test: AS 2 of the chain, transit in the core segment.
pub const TRANSIT: usize = 2;
/// The interface on which the router receives the generator's packets (from AS 1).
pub const INGRESS: u16 = IF_PREV;
/// The interface towards the sink (AS 3).
pub const EGRESS: u16 = IF_NEXT;
/// Distinct packets the generator cycles through (a multiple of the batch size).
pub const POOL: usize = 1024;
const ASES: usize = 5;
const NS: u64 = 1_000_000_000;
/// The reservation's bandwidth code: the largest (BwCodec::Paper: far above any rate a
/// loopback generator reaches), so that policing never demotes the offered load.
const BW_UNLIMITED: u16 = 1023;
const RES_ID: u32 = 1;

/// The kind of packet a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Standard SCION, best effort.
    Scion,
    /// Hummingbird with a flyover at the router under test (verified and policed there).
    Flyover,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Scion, Kind::Flyover];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Scion => "scion",
            Kind::Flyover => "flyover",
        }
    }
}

/// The chain whose AS [`TRANSIT`] is the router under test, with the routers of the ASes before
/// it (in process) and the reservation the router grants.
pub struct Testbed {
    chain: Chain,
    upstream: Vec<Router>,
    reservation: Reservation,
}

impl Testbed {
    /// Hop fields and the reservation valid around `now_ns` (for six hours and one hour).
    pub fn new(now_ns: u64) -> Self {
        let now_s = (now_ns / NS) as u32;
        let chain = Chain::new(ASES, now_s - 60);
        let upstream = (0..TRANSIT).map(|i| chain.router(i, RouterParams::default())).collect();
        let reservation = chain.grant(TRANSIT, RES_ID, BW_UNLIMITED, now_s - 10, 3600);
        Self { chain, upstream, reservation }
    }

    /// The router under test's AS, its master secret and its neighbours on the ingress and
    /// egress link.
    pub fn router_as(&self) -> (IsdAsn, [u8; 16], IsdAsn, IsdAsn) {
        let a = &self.chain.ases;
        (a[TRANSIT].ia, a[TRANSIT].master_secret, a[TRANSIT - 1].ia, a[TRANSIT + 1].ia)
    }

    /// The router under test, in process: what the real one must do with the packets.
    pub fn reference_router(&self) -> Router {
        self.chain.router(TRANSIT, RouterParams::default())
    }

    /// [`POOL`] packets of `kind` with `payload` bytes of payload as they reach the router, sent
    /// at `now_ns` (flyover packets: consecutive Counters, so each is a distinct packet).
    pub fn pool(&mut self, kind: Kind, payload: usize, now_ns: u64) -> Vec<Vec<u8>> {
        let template = self.template(kind, payload, now_ns);
        let mut pool = vec![template; POOL];
        self.restamp(kind, &mut pool, now_ns);
        pool
    }

    /// Makes every packet of `pool` fresh at `now_ns` again: a flyover packet's timestamp must
    /// stay within the router's freshness window. Standard packets need nothing (their hop
    /// fields are valid for hours).
    pub fn restamp(&mut self, kind: Kind, pool: &mut [Vec<u8>], now_ns: u64) {
        if kind == Kind::Scion {
            return;
        }
        let payload = ScionView::new_checked(&pool[0][..]).map_or(0, |v| v.payload().len());
        let template = self.template(kind, payload, now_ns);
        let mut source = Source::new(&template, &[self.reservation]).expect("a path with one flyover");
        for pkt in pool.iter_mut() {
            pkt.copy_from_slice(&template);
            source.stamp(pkt, now_ns).expect("a packet of the template's layout");
            self.through_upstream(pkt, now_ns);
        }
    }

    /// The packet as AS 0's host sends it; a flyover packet still unstamped.
    fn template(&mut self, kind: Kind, payload: usize, now_ns: u64) -> Vec<u8> {
        match kind {
            Kind::Scion => {
                let mut pkt = self.chain.standard_packet(payload);
                self.through_upstream(&mut pkt, now_ns);
                pkt
            }
            Kind::Flyover => {
                let res = [(TRANSIT, self.reservation)];
                self.chain.hbird_packet(&res, (now_ns / NS) as u32, payload).expect("a path with one flyover")
            }
        }
    }

    fn through_upstream(&mut self, pkt: &mut [u8], now_ns: u64) {
        for (i, r) in self.upstream.iter_mut().enumerate() {
            let v = r.process(pkt, Chain::forward_ingress(i), now_ns);
            debug_assert!(matches!(v, Verdict::Forward { .. }), "AS {i}: {v:?}");
        }
    }
}

/// The word of the path's meta header that holds CurrINF and CurrHF (and the segment lengths):
/// what a forwarding router changes in every packet.
pub fn meta_word(pkt: &[u8]) -> Option<u32> {
    let v = ScionView::new_checked(pkt).ok()?;
    let word = v.path().get(meta::WORD)?;
    Some(u32::from_be_bytes(word.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_750_000_000 * NS;

    #[test]
    fn the_router_under_test_forwards_every_pool_packet_and_advances_its_hop() {
        for kind in Kind::ALL {
            let mut bed = Testbed::new(NOW);
            let pool = bed.pool(kind, 100, NOW);
            assert_eq!(pool.len(), POOL);
            let mut router = bed.reference_router();
            let sent = meta_word(&pool[0]).unwrap();
            for (i, pkt) in pool.iter().enumerate() {
                let mut p = pkt.clone();
                let v = router.process(&mut p, INGRESS, NOW + i as u64);
                let want = match kind {
                    Kind::Scion => Verdict::unauthenticated(EGRESS),
                    Kind::Flyover => Verdict::reserved(EGRESS),
                };
                assert_eq!(v, want, "{kind:?} packet {i}");
                assert_eq!(meta_word(pkt), Some(sent), "the pool shares one layout");
                assert_ne!(meta_word(&p), Some(sent), "{kind:?}: CurrHF advanced");
            }
        }
    }

    #[test]
    fn restamped_flyovers_are_fresh_later_and_distinct() {
        let mut bed = Testbed::new(NOW);
        let mut pool = bed.pool(Kind::Flyover, 500, NOW);
        let later = NOW + 30 * NS;
        let mut stale = bed.reference_router();
        let mut p = pool[0].clone();
        stale.process(&mut p, INGRESS, later);
        assert_eq!(stale.counters().stale, 1, "a packet stamped 30 s ago is no longer fresh");
        bed.restamp(Kind::Flyover, &mut pool, later);
        let mut router = bed.reference_router();
        for pkt in &pool {
            let mut p = pkt.clone();
            assert_eq!(router.process(&mut p, INGRESS, later), Verdict::reserved(EGRESS));
        }
        assert_ne!(pool[0], pool[1], "each packet has its own Counter");
        assert_eq!(ScionView::new_checked(&pool[0][..]).unwrap().payload().len(), 500);
    }
}
