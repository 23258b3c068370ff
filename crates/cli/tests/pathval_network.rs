//! pathval on the emulated network as real processes: the diamond of
//! testdata/topologies/pathval.toml, where the trusted router T sends each packet round robin
//! through the untrusted AS U or the trusted AS V to the destination AS D. Asserts from the
//! routers' `/metrics` that both alternatives carried traffic, that D accepted every honest
//! packet, and that once U alters payloads D drops exactly the packets U altered, as
//! `bad_validation_proof`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, RunLayout};

const S: &str = "1-ff00:0:111";
const T: &str = "1-ff00:0:112";
const U: &str = "1-ff00:0:113";
const V: &str = "1-ff00:0:114";
const D: &str = "1-ff00:0:115";
const PACKETS: u64 = 40;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aviary"))
}

fn metrics(net: &Network, ia: &str) -> String {
    let mgmt = net.layout.ases[&ia.parse().unwrap()].router.management;
    ureq::get(&format!("http://{mgmt}/metrics")).call().unwrap().into_string().unwrap()
}

/// A pathval counter (`counter`) or drop count (`reason`) of a router's `/metrics`.
fn pathval_metric(text: &str, family: &str, label: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(family) && l.contains("mechanism=\"pathval\"") && l.contains(label))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

fn counter(net: &Network, ia: &str, name: &str) -> u64 {
    pathval_metric(&metrics(net, ia), "aviary_router_mechanism_events_total", &format!("counter=\"{name}\""))
}

fn dropped(net: &Network, ia: &str, reason: &str) -> u64 {
    pathval_metric(&metrics(net, ia), "aviary_router_mechanism_dropped_packets_total", &format!("reason=\"{reason}\""))
}

/// Waits (routers publish a few times a second) until `f` reaches `want`; returns its value.
fn until(want: u64, f: impl Fn() -> u64) -> u64 {
    let start = Instant::now();
    loop {
        let v = f();
        if v >= want || start.elapsed() > Duration::from_secs(10) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn send(net: &Network, dst: &str) {
    let cfg = net.layout.host_config_path("source");
    let out = Command::new(exe())
        .args(["host", "--config"])
        .arg(cfg)
        .args(["pathval-send", dst, "--count", &PACKETS.to_string(), "--interval-us", "2000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "pathval-send failed: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn dynamic_next_hops_and_destination_verification_over_the_diamond() {
    let dir = aviary_scratch::ScratchDir::new("it-pathval");
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/pathval.toml");
    let net = Network::start(&exe(), RunLayout::write(&topology, &dir, 49000).unwrap()).unwrap();
    net.wait_ready(Duration::from_secs(30)).unwrap();
    let sink = net.layout.host("sink").unwrap().addr;
    let dst = format!("{D},{sink}:40000");

    // Honest: every packet initialised at S, half through U and half through V, all accepted.
    send(&net, &dst);
    assert_eq!(until(PACKETS, || counter(&net, D, "accepted_packets")), PACKETS);
    // Each router publishes its counters a few times a second: D's reaching PACKETS does not
    // mean the others have published theirs yet.
    assert_eq!(until(PACKETS, || counter(&net, S, "initialized_packets")), PACKETS);
    let via = |ia| until(PACKETS / 2, || counter(&net, ia, "forwarded_packets"));
    let (via_u, via_v) = (via(U), via(V));
    assert_eq!((via_u, via_v), (PACKETS / 2, PACKETS / 2), "round robin at T");
    assert_eq!(until(PACKETS, || counter(&net, T, "forwarded_packets")), PACKETS);
    // T samples about half (it is node 2), V verifies what T sampled; D verified some proofs.
    assert!(counter(&net, T, "sampled_packets") > 0);
    assert!(counter(&net, D, "proofs_verified") > 0);
    for reason in ["bad_validation_proof", "bad_concealment", "bad_data_hash", "unknown_upstream"] {
        assert_eq!(dropped(&net, D, reason), 0, "{reason}");
    }

    // U alters payloads (and their DataHash): D drops exactly those, accepts the rest.
    let attack = |ia: &str| {
        let a = &net.layout.ases[&ia.parse().unwrap()];
        ureq::put(&format!("http://{}/v1/mechanisms/pathval", a.router.management))
            .set("Authorization", &format!("Bearer {}", a.operator_token().unwrap()))
            .send_string(r#"{"attack": "payload_alteration"}"#)
    };
    attack(U).unwrap();
    // A trusted router refuses to attack.
    assert!(matches!(attack(T), Err(ureq::Error::Status(400, _))));
    send(&net, &dst);
    let attacked = until(PACKETS / 2, || counter(&net, U, "attacked_packets"));
    assert_eq!(attacked, PACKETS / 2);
    assert_eq!(until(attacked, || dropped(&net, D, "bad_validation_proof")), attacked);
    assert_eq!(until(PACKETS + PACKETS / 2, || counter(&net, D, "accepted_packets")), PACKETS + PACKETS / 2);
}
