//! Admission control of operator grants, alone and interleaved with the AS service's market
//! listings and deliveries on the same interface (one store, as in a run).

use super::tests::{service, service_in};
use super::*;
use crate::as_service::issuance::book_listing;
use crate::as_service::OfferConfig;
use crate::reservable::{as_service_limits, InterfaceBandwidth};

/// Core AS C of line5: interfaces 1 and 2, 10 Mbit/s links, so 8 Mbit/s reservable each way.
const C: &str = "1-ff00:0:110";
const BOUND: u64 = 8_000_000;

fn req(ingress: u16, egress: u16, bandwidth_bps: u64, start: u64, duration: u16) -> ReservationRequest {
    ReservationRequest { ingress, egress, bandwidth_bps, start: start as u32, duration }
}

/// What the codec makes of `bps`: what a grant of `bps` takes.
fn granted(bps: u64) -> u64 {
    BwCodec::Paper.decode_bps(BwCodec::Paper.encode_ceil(bps).unwrap())
}

#[test]
fn grants_fill_an_interface_up_to_the_bound_and_no_further() {
    let (dir, c, _) = service("admit", C);
    let now = unix_s();
    for _ in 0..3 {
        c.grant(&req(1, 2, 2_000_000, now, 600)).unwrap();
    }
    // Exactly what is left (8 − 3 × 2.016 Mbit/s) fits; it is representable, so it is what is taken.
    let rest = BOUND - 3 * granted(2_000_000);
    assert_eq!(granted(rest), rest);
    c.grant(&req(1, 2, rest, now + 300, 600)).unwrap();
    // One more kbit/s overlapping any part of it is refused, with a 409 naming the interface.
    let e = c.grant(&req(1, 2, 1000, now + 599, 60)).unwrap_err();
    assert_eq!(e.status(), 409);
    assert_eq!(e.label(), "no_bandwidth");
    let msg = e.to_string();
    assert!(msg.starts_with("interface 1 (ingress): 0 bit/s reservable from"), "{msg}");
    assert!(msg.ends_with("1 kbit/s requested"), "{msg}");
    // After the first three end, the fourth alone holds [now + 600, now + 900).
    let fits = BwCodec::Paper.decode_bps(BwCodec::Paper.encode_floor(BOUND - rest));
    c.grant(&req(1, 2, fits, now + 600, 60)).unwrap();
    // A non-overlapping interval has the whole bound.
    c.grant(&req(1, 2, granted(7_900_000), now + 900, 60)).unwrap();
    // The egress side is enforced too: interface 2 outbound is as full as interface 1 inbound.
    let e = c.grant(&req(0, 2, 1000, now + 300, 60)).unwrap_err();
    assert!(e.to_string().starts_with("interface 2 (egress): 0 bit/s"), "{e}");
    // The opposite directions of the same interfaces are free (full-duplex links).
    c.grant(&req(2, 1, granted(7_900_000), now, 600)).unwrap();
    // A refused grant took no ResID either.
    let held = c.resids.snapshot().unwrap().resids.held(1).len();
    assert!(c.grant(&req(1, 0, 1000, now + 300, 60)).is_err());
    assert_eq!(c.resids.snapshot().unwrap().resids.held(1).len(), held);
    // The book is persisted: a restarted service refuses as well and counts the same.
    let (again, _) = service_in(&dir, C);
    assert_eq!(again.grant(&req(1, 2, 1000, now + 300, 60)).unwrap_err().label(), "no_bandwidth");
    let book = again.resids.snapshot().unwrap().bandwidth;
    assert_eq!(book.peak(1, Direction::Ingress, now, now + 1000), BOUND);
}

#[test]
fn a_reservable_bandwidth_above_the_link_capacity_stops_the_service_at_start() {
    let (_dir, _, layout) = service("capacity", C);
    let path = layout.ases[&C.parse().unwrap()].dir.join("control.toml");
    let mut cfg = ControlConfig::load(&path).unwrap();
    assert_eq!(cfg.hummingbird.interfaces[0], InterfaceBandwidth::for_link(1, 10_000_000), "the runner writes it");
    cfg.hummingbird.interfaces[1].reservable_bps = Some(50_000_000);
    crate::config::write_toml(&path, &cfg).unwrap();
    let e = ControlService::from_config(&ControlConfig::load(&path).unwrap(), &path).err().unwrap().to_string();
    assert!(e.contains("control.toml") && e.contains("hummingbird.interface[1].reservable_bps"), "{e}");
    assert!(e.contains("more than the link's capacity of 10000000 bit/s"), "{e}");
}

/// Bandwidth `(bps, start, end)` promised on one side of one interface never sums to more than
/// the bound at any second of `[from, to)`.
fn assert_within(promised: &[(u64, u64, u64)], from: u64, to: u64) {
    for t in from..to {
        let sum: u64 = promised.iter().filter(|(_, s, e)| *s <= t && t < *e).map(|(b, ..)| b).sum();
        assert!(sum <= BOUND, "{sum} bit/s promised at {t}: {promised:?}");
    }
}

#[test]
fn grants_listings_and_deliveries_interleaved_on_one_interface_stay_within_the_bound() {
    use aviary_hummingbird::{BuyerKey, RedeemRequest, ReservationService, ServiceState};
    let (_dir, c, layout) = service("interleave", C);
    let a = &layout.ases[&C.parse().unwrap()];
    // The AS service of C: its own handle on the shared store, its own (equal) bounds.
    let store = ResIdStore::new(a.dir.join("state").join(crate::config::RESID_STORE), 100_000);
    let limits = as_service_limits("as-service.toml", &[InterfaceBandwidth::for_link(1, 10_000_000)]).unwrap();
    let offer = OfferConfig {
        interface: 1,
        direction: Direction::Ingress,
        bandwidth_kbps: 5000,
        min_bandwidth_kbps: 100,
        granularity_s: 60,
        period_s: 600,
        periods_ahead: 2,
        price_per_unit: 1,
    };
    let now = unix_s();
    let (p0, p1) = (now, now + 600);
    let mut promised = Vec::new();
    let mut grant = |bps: u64, start: u64| {
        let g = c.grant(&req(1, 2, bps, start, 600));
        if let Ok(g) = &g {
            promised.push((g.bandwidth_bps, start, start + 600));
        }
        g.map_err(|e| e.label())
    };
    // Period 0: a grant, then the listing takes the 5 Mbit/s offered from what is left.
    grant(2_000_000, p0).unwrap();
    let listed0 = book_listing(&store, &limits, 0, &offer, p0, now).unwrap();
    assert_eq!(listed0, 5000);
    // The operator now finds only what neither the grant nor the listing holds.
    assert_eq!(grant(2_000_000, p0), Err("no_bandwidth"));
    grant(900_000, p0).unwrap();
    // Period 1: the operator was first, so the listing is shorter (whole kbit/s).
    grant(3_000_000, p1).unwrap();
    let listed1 = book_listing(&store, &limits, 0, &offer, p1, now).unwrap();
    assert_eq!(listed1 * 1000, BOUND - granted(3_000_000));
    // Issuing period 1 again (a retried ledger transaction) books nothing more.
    assert_eq!(book_listing(&store, &limits, 0, &offer, p1, now).unwrap(), listed1);
    let listings = [(listed0 * 1000, p0, p0 + 600), (listed1 * 1000, p1, p1 + 600)];
    // Buyers redeem pieces of the period-0 asset: every delivery succeeds, whatever the
    // operator granted in between, because the asset's bandwidth was booked when it was issued.
    let mut market = ReservationService::new(1, 31337, &[7; 32], BwCodec::Paper, ServiceState::new(1000));
    let buyer = BuyerKey::derive(b"buyer");
    for (k, kbps) in [(1u8, 2000u64), (2, 2000), (3, 1000)] {
        let _ = grant(1_000_000, p0);
        let rr = RedeemRequest {
            request_id: [k; 32],
            ingress: 1,
            egress: 2,
            bandwidth_kbps: kbps,
            start: p0,
            expiry: p0 + 600,
            buyer_key: buyer.public(),
        };
        store.update(|alloc| market.fulfil(&rr, now, &[k; 32], alloc)).unwrap();
    }
    // Grants and issuance race from threads, each with its own store handle (as processes).
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (store, limits, offer, c) = (ResIdStore::new(store.path(), 100_000), &limits, &offer, &c);
            s.spawn(move || {
                for k in 0..5 {
                    let start = now + 1200 + 100 * k;
                    if t % 2 == 0 {
                        let _ = c.grant(&req(1, 2, 1_500_000, start, 600));
                    } else {
                        let _ = book_listing(&store, limits, 1 + t as usize, offer, start, now);
                    }
                }
            });
        }
    });
    let promised: Vec<_> = promised.into_iter().chain(listings).collect();
    assert_within(&promised, now, now + 1200);
    // The store's own book agrees, second by second, over everything booked.
    let book = store.snapshot().unwrap().bandwidth;
    let on_1: Vec<_> = book
        .booked()
        .iter()
        .filter(|b| b.leg.interface == 1 && b.leg.direction == Direction::Ingress)
        .map(|b| (b.leg.bps, b.leg.start, b.leg.end))
        .collect();
    assert!(on_1.len() > promised.len(), "the racing threads booked too");
    assert_within(&on_1, now, now + 2400);
}
