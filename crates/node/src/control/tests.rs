//! Unit tests of the control service's hop fields and grants.

use aviary_scratch::ScratchDir;

use super::*;
use crate::config::read_secret;
use crate::runner::RunLayout;

/// A fresh run of line5 and the control service of `ia` on it, the directory first so that it
/// goes last.
pub(super) fn service(name: &str, ia: &str) -> (ScratchDir, ControlService, RunLayout) {
    let dir = ScratchDir::new(&format!("ctl-{name}"));
    let (c, layout) = service_in(&dir, ia);
    (dir, c, layout)
}

/// The control service of `ia` on the run in `dir`, written again as `aviary run` does when it
/// starts on an existing directory: a restart, when the run is already there.
pub(super) fn service_in(dir: &std::path::Path, ia: &str) -> (ControlService, RunLayout) {
    let topo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
    let layout = RunLayout::write(&topo, dir, 20000).unwrap();
    let a = &layout.ases[&ia.parse().unwrap()];
    let cfg_path = a.dir.join("control.toml");
    let cfg = ControlConfig::load(&cfg_path).unwrap();
    (ControlService::from_config(&cfg, &cfg_path).unwrap(), layout)
}

fn segment(ts: u64) -> SegmentWire {
    SegmentWire { seg_id: 0x1234, timestamp: ts as u32, hops: Vec::new() }
}

#[test]
fn extend_checks_links_and_freshness() {
    // C = 1-ff00:0:110 (core): #1 to B, #2 to D.
    let (_dir, c, layout) = service("extend", "1-ff00:0:110");
    let now = unix_s();
    let ok = c.extend(ExtendRequest { segment: segment(now), cons_ingress: 0, cons_egress: 1 }).unwrap();
    assert_eq!(ok.hops.len(), 1);
    let fail = |r: ExtendRequest| c.extend(r).err().map(|Failure(code, m)| (code, m)).expect("must be refused");
    assert_eq!(fail(ExtendRequest { segment: segment(now), cons_ingress: 2, cons_egress: 1 }).0, 400);
    assert_eq!(fail(ExtendRequest { segment: segment(now), cons_ingress: 0, cons_egress: 9 }).0, 400);
    assert_eq!(
        fail(ExtendRequest { segment: segment(now - 2 * MAX_SEGMENT_AGE_S), cons_ingress: 0, cons_egress: 1 }).0,
        400
    );
    // B may extend C's segment only at the interface linked to C's egress.
    let (_dir_b, b, _) = service("extend-b", "1-ff00:0:112");
    assert!(b.extend(ExtendRequest { segment: ok.clone(), cons_ingress: 1, cons_egress: 2 }).is_ok());
    assert!(b.extend(ExtendRequest { segment: ok.clone(), cons_ingress: 2, cons_egress: 1 }).is_err());
    // The hop field verifies under C's key at C's router.
    let secret = read_secret(std::path::Path::new("t"), "f", &layout.dir.join("1-ff00_0_110/master.key")).unwrap();
    let seg = ok.to_segment().unwrap();
    let key = HopMacKey::from_master_secret(&secret);
    assert_eq!(seg.hops[0].mac, seg.hops[0].compute_mac(&key, 0x1234, seg.timestamp));
}

#[test]
fn grants_need_real_interfaces_and_give_distinct_resids() {
    let (dir, c, _) = service("grant", "1-ff00:0:110");
    let start = unix_s() as u32;
    let req = |ingress, egress| ReservationRequest { ingress, egress, bandwidth_bps: 1_000_000, start, duration: 60 };
    let g1 = c.grant(&req(1, 2)).unwrap();
    let g2 = c.grant(&req(1, 2)).unwrap();
    assert_ne!(g1.reservation.info.res_id, g2.reservation.info.res_id);
    assert!(g1.bandwidth_bps >= 1_000_000);
    assert_eq!(g1.reservation.ak, c.sv.auth_key(&g1.reservation.info));
    assert!(c.grant(&req(1, 7)).is_err());
    assert!(c.grant(&req(2, 2)).is_err());
    let over = ReservationRequest { start: start - 120, ..req(1, 2) };
    assert!(c.grant(&over).is_err(), "a reservation that is already over");
    // ResIDs survive a restart of the service.
    let (c2, _) = service_in(&dir, "1-ff00:0:110");
    assert_ne!(c2.grant(&req(1, 2)).unwrap().reservation.info.res_id, g1.reservation.info.res_id);
}

#[test]
fn operator_grants_and_market_deliveries_share_one_allocator() {
    use aviary_hummingbird::{BuyerKey, BwCodec, RedeemRequest, ReservationService, ServiceState};
    let (dir, c, layout) = service("shared", "1-ff00:0:110");
    let a = &layout.ases[&"1-ff00:0:110".parse().unwrap()];
    // The AS service of the same AS, on the store its config names by default.
    let store = ResIdStore::new(a.dir.join("state").join(crate::config::RESID_STORE), 100_000);
    assert_eq!(store.path(), ControlConfig::load(&a.dir.join("control.toml")).unwrap().resid_store());
    let mut market = ReservationService::new(1, 31337, &[7; 32], BwCodec::Paper, ServiceState::new(1000));
    let buyer = BuyerKey::derive(b"buyer");
    let now = unix_s();
    let start = now as u32;
    let mut ids = Vec::new();
    for k in 0..6u8 {
        // Overlapping reservations on ingress 1, alternately granted and bought.
        if k % 2 == 0 {
            let req = ReservationRequest { ingress: 1, egress: 2, bandwidth_bps: 1_000_000, start, duration: 600 };
            ids.push(c.grant(&req).unwrap().reservation.info.res_id);
        } else {
            let rr = RedeemRequest {
                request_id: [k; 32],
                ingress: 1,
                egress: 2,
                bandwidth_kbps: 1000,
                start: now + 10,
                expiry: now + 300,
                buyer_key: buyer.public(),
            };
            let f = store.update(|alloc| market.fulfil(&rr, now, &[k; 32], alloc)).unwrap();
            ids.push(f.reservation.info.res_id);
        }
    }
    // A restarted control service sees the market's ResIDs too.
    let (c2, _) = service_in(&dir, "1-ff00:0:110");
    let req = ReservationRequest { ingress: 1, egress: 2, bandwidth_bps: 1_000_000, start, duration: 600 };
    ids.push(c2.grant(&req).unwrap().reservation.info.res_id);
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "a ResID was handed out twice on one ingress: {ids:?}");
    assert_eq!(store.snapshot().unwrap().resids.held(1).len(), 7);
}

#[test]
fn hop_fields_carry_their_full_cmac_in_path_order() {
    // C (core) then B extend a segment; σ of each is the CMAC its router recomputes, whose
    // first 6 bytes are the hop field's MAC.
    let (_dir, c, layout) = service("sigma", "1-ff00:0:110");
    let (_dir_b, b, layout_b) = service("sigma-b", "1-ff00:0:112");
    let now = unix_s();
    let seg = c.extend(ExtendRequest { segment: segment(now), cons_ingress: 0, cons_egress: 1 }).unwrap();
    let seg = b.extend(ExtendRequest { segment: seg, cons_ingress: 1, cons_egress: 0 }).unwrap();
    let built = seg.to_segment().unwrap();
    let keys = [layout.dir.join("1-ff00_0_110"), layout_b.dir.join("1-ff00_0_112")];
    for (k, (hop, dir)) in seg.hops.iter().zip(keys).enumerate() {
        let secret = read_secret(std::path::Path::new("t"), "f", &dir.join("master.key")).unwrap();
        let h = &built.hops[k];
        let block = mac_input(built.beta(k), built.timestamp, h.exp_time, h.cons_ingress, h.cons_egress);
        let sigma = HopMacKey::from_master_secret(&secret).cmac_block(&block);
        assert_eq!(hop.sigma, hex::encode(sigma), "hop {k}");
        assert_eq!(&sigma[..6], &h.mac, "hop {k}");
    }
    // Down (in construction order) and up (reversed) as combine_from lays them out.
    let plan = |from: usize, up: bool| {
        let hops =
            seg.hops.iter().map(|h| HopPlan { ia: h.ia, cons_ingress: h.cons_ingress, cons_egress: h.cons_egress });
        let kind = if up { crate::routes::SegmentKind::Up } else { crate::routes::SegmentKind::Down };
        SegmentPlan { kind, hops: hops.collect(), from }
    };
    let sig: Vec<_> = seg.hops.iter().map(|h| h.sigma.clone()).collect();
    assert_eq!(path_sigmas(std::slice::from_ref(&seg), &[plan(0, false)]), sig);
    let reversed: Vec<_> = sig.iter().rev().cloned().collect();
    assert_eq!(path_sigmas(std::slice::from_ref(&seg), &[plan(0, true)]), reversed);
    assert_eq!(path_sigmas(std::slice::from_ref(&seg), &[plan(1, false)]), sig[1..]);
    // An AS that left σ out: no σ for the path, rather than misaligned ones.
    let mut old = seg.clone();
    old.hops[0].sigma.clear();
    assert!(path_sigmas(&[old], &[plan(0, false)]).is_empty());
}
