//! The Z-Lane router and gateway derive the AS's DRKey keys in the epochs they are given,
//! which must be the AS's DRKey service's: with one-hour epochs, in the second hour of a day,
//! they hold the keys the DRKey service derives with that schedule, and with SCION's default
//! (one day) they would not, so every packet would fail (the bug one stated schedule per AS
//! prevents).

use aviary_qos::{Admission, Context, LinkState, Processor, RateBound, SeededRandom, Verdict};
use aviary_scion::drkey::{EpochSchedule, IssuerKeyring, Protocol, RotatingSecret};
use aviary_scion::{AsForwarding, IsdAsn};
use aviary_zlane::classes::ZlaneConfig;
use aviary_zlane::gateway::{Gateway, GatewayConfig};
use aviary_zlane::router::ZlaneRouter;
use aviary_zlane::testbed::{Net, IF_NEXT, PROTOCOL};

const S: u64 = 1_000_000_000;
const DAY: u64 = 86_400;

/// Ten minutes into the second hour of a day: one-hour and one-day epochs begin apart.
fn second_hour() -> u64 {
    let t = 1_750_000_000;
    t - t % DAY + 3600 + 600
}

fn hourly() -> EpochSchedule {
    EpochSchedule::new(3600, 5).unwrap()
}

fn zlane_config(ases: Vec<IsdAsn>) -> ZlaneConfig {
    ZlaneConfig { ases, isds: vec![], rates: Default::default(), burst_bytes: 15_000, drkey_protocol: PROTOCOL }
}

fn router(net: &Net, schedule: EpochSchedule, now_ns: u64) -> ZlaneRouter {
    let a = &net.ases[0];
    let fwd = AsForwarding::new(a.ia, a.mac_key.clone(), [IF_NEXT]);
    let secret = RotatingSecret::new(&a.master_secret).unwrap();
    let cfg = zlane_config(net.ases.iter().map(|a| a.ia).collect());
    ZlaneRouter::new(fwd, &secret, schedule, cfg, [(IF_NEXT, RateBound::Ppm(500_000))], now_ns).unwrap()
}

fn gateway(net: &Net, schedule: EpochSchedule, now_ns: u64) -> Gateway {
    let cfg = GatewayConfig {
        guarantee_bps: 1_000_000,
        burst_bytes: 15_000,
        over_rate: Default::default(),
        drkey_protocol: PROTOCOL,
        suppress_duplicates: false,
        hosts: Vec::new(),
    };
    let secret = RotatingSecret::new(&net.ases[0].master_secret).unwrap();
    Gateway::new(net.src_ia(), &secret, schedule, &cfg, now_ns).unwrap()
}

#[test]
fn router_and_gateway_keys_are_the_drkey_services_of_the_same_schedule_only() {
    let t = second_hour();
    let net = Net::with_schedule(2, t * S, hourly());
    let peer = net.ases[1].ia;
    // The DRKey service's derivation (the control service's `IssuerKeyring`) with one-hour epochs.
    let secret = RotatingSecret::new(&net.ases[0].master_secret).unwrap();
    let service = IssuerKeyring::with_secret(secret, Protocol(PROTOCOL), hourly(), t).unwrap();
    assert_eq!(service.current().epoch().begin_s as u64, t - 600);

    for keyring in [router(&net, hourly(), t * S).keyring(), gateway(&net, hourly(), t * S).keyring()] {
        assert_eq!(keyring.schedule(), hourly());
        assert_eq!(keyring.current().epoch(), service.current().epoch());
        assert_eq!(keyring.current().level1(peer), service.current().level1(peer));
    }
    // SCION's default, as the router and gateway had hard-coded: another epoch, other keys.
    let default = EpochSchedule::SCION_DEFAULT;
    for keyring in [router(&net, default, t * S).keyring(), gateway(&net, default, t * S).keyring()] {
        assert_ne!(keyring.current().epoch(), service.current().epoch());
        assert_ne!(keyring.current().level1(peer), service.current().level1(peer));
    }
}

/// The admission the source AS's Z-Lane router gives `pkt`.
fn verdict(router: &mut ZlaneRouter, pkt: &mut [u8], now_ns: u64) -> Verdict {
    let links = [LinkState { id: IF_NEXT, up: true, rate_bps: 100_000_000, ..Default::default() }];
    let mut random = SeededRandom::new(1);
    let mut ctx = Context { now_ns, ingress: 0, links: &links, random: &mut random };
    let mut v = [Verdict::Deliver];
    router.process_batch(&mut ctx, &mut [pkt], &mut v);
    v[0]
}

#[test]
fn a_hosts_packet_sealed_with_hourly_keys_passes_only_a_router_with_hourly_epochs() {
    let t = second_hour();
    let mut net = Net::with_schedule(2, t * S, hourly());
    let host = std::net::Ipv4Addr::new(10, 0, 0, 1);
    let pkt = net.packet(host, 200, t * S);
    let mut same = router(&net, hourly(), t * S);
    assert!(matches!(
        verdict(&mut same, &mut pkt.clone(), t * S),
        Verdict::Forward { egress: IF_NEXT, admission: Admission::AUTHENTICATED }
    ));
    let mut other = router(&net, EpochSchedule::SCION_DEFAULT, t * S);
    let v = verdict(&mut other, &mut pkt.clone(), t * S);
    assert!(!matches!(v, Verdict::Forward { admission: Admission::AUTHENTICATED, .. }), "{v:?}");
}
