//! Rotating the AS master secret of every AS on a GLWP path, as docs/operations.md tells the
//! operator to (`PUT /v1/keys` on every border router, then the control services restarted one
//! at a time), on the emulated network (testdata/topologies/glwp.toml with ΔT = 40 s,
//! L = ε = 0.5 s; ports 54500-54999): an allocation made before the rotation passes every on-path router after it, also
//! after the control services' restart and a router's own restart; an allocation made after it
//! passes too; a router refuses an overlap shorter than ΔT + L + ε; and once the overlap has
//! ended, the old allocation passes no router.

// Only some of the shared helpers are of use here.
#[allow(dead_code)]
mod glwp_common;
mod prometheus_text;
mod rotation_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, Role, RunLayout};
use glwp_common::{exe, ia, now_ns, sample, settled_discovery, topology_file, PATH_ASES};
use rotation_common::{put_keys, restart};

const PORT_BASE: u16 = 54500;
const S: u64 = 1_000_000_000;
/// ΔT + L + ε of the test's `[as.glwp]` tables, rounded up to whole seconds.
const MIN_OVERLAP_SECS: u64 = 41;
/// The on-path ASes (every AS of the path but the source).
const ON_PATH: [&str; 3] = [PATH_ASES[1], PATH_ASES[2], PATH_ASES[3]];

/// The GLWP topology with a short ΔT, L and ε on every AS, written into `dir`.
fn short_lived_topology(dir: &Path) -> PathBuf {
    let mut value: toml::Value = toml::from_str(&std::fs::read_to_string(topology_file()).unwrap()).unwrap();
    for entry in value["as"].as_array_mut().unwrap() {
        let glwp = entry["glwp"].as_table_mut().unwrap();
        for (k, v) in [("validity_s", 40), ("lifetime_ms", 500), ("skew_ms", 500)] {
            glwp.insert(k.into(), toml::Value::Integer(v));
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("glwp-rotation.toml");
    std::fs::write(&path, toml::to_string(&value).unwrap()).unwrap();
    path
}

/// What the GLWP processor of AS `at`'s router counted (the source AS's forwards its own
/// hosts' packets without a hop key of its own, and checks their freshness and expiry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    passed: u64,
    previous_key: u64,
    bad_hop_authenticator: u64,
    allocation_expired: u64,
}

fn router_counts(net: &Network, at: &str) -> Counts {
    let addr = net.layout.ases[&ia(at)].router.management;
    let text = ureq::get(&format!("http://{addr}/metrics")).call().unwrap().into_string().unwrap();
    let event = |c: &str| {
        sample(&text, "aviary_router_mechanism_events_total", &["mechanism=\"glwp\"", &format!("counter=\"{c}\"")])
    };
    let drop = |r: &str| {
        sample(
            &text,
            "aviary_router_mechanism_dropped_packets_total",
            &["mechanism=\"glwp\"", &format!("reason=\"{r}\"")],
        )
    };
    Counts {
        passed: event("forwarded") + event("delivered"),
        previous_key: event("previous_key_packets"),
        bad_hop_authenticator: drop("bad_hop_authenticator"),
        allocation_expired: drop("allocation_expired"),
    }
}

fn all_counts(net: &Network) -> Vec<Counts> {
    ON_PATH.iter().map(|at| router_counts(net, at)).collect()
}

/// A discovery written with its hop keys to `file`, once the services (just started or
/// restarted) are up and have each other's keys and announcements.
fn allocation(net: &Network, file: &Path) {
    let o = settled_discovery(net, &["--out", file.to_str().unwrap()]);
    assert!(o.status.success(), "discovery failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// Sends about 40 GLWP packets from h111 to h211 under the allocation in `file`; the on-path routers'
/// counts before and after (a router's counters are published every 200 ms).
fn send(net: &Network, file: &Path, dir: &Path) -> (Vec<Counts>, Vec<Counts>) {
    let before = all_counts(net);
    let h211 = net.layout.host("h211").unwrap();
    let report = dir.join("send-report.json");
    let o = Command::new(exe())
        .args(["host", "--config"])
        .arg(net.layout.host_config_path("h111"))
        .args(["send", "--flow", "rotation", "--dst", &format!("{},{}:40000", h211.ia, h211.addr)])
        .args(["--rate-bps", "160000", "--size", "250", "--duration-ms", "500", "--report"])
        .arg(&report)
        .arg("--glwp")
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "send failed: {}", String::from_utf8_lossy(&o.stderr));
    std::thread::sleep(Duration::from_millis(700));
    (before, all_counts(net))
}

/// Every on-path router passed (nearly) every packet of the send, none refused for its hop
/// authenticator; the growth of `previous_key_packets` per router.
fn passed_everywhere(net: &Network, file: &Path, dir: &Path, what: &str) -> Vec<u64> {
    let (before, after) = send(net, file, dir);
    ON_PATH
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(at, (b, a))| {
            assert!(a.passed >= b.passed + 15, "{what}: {at} passed {} of about 40 packets", a.passed - b.passed);
            assert_eq!(a.bad_hop_authenticator, b.bad_hop_authenticator, "{what}: {at} refused some");
            a.previous_key - b.previous_key
        })
        .collect()
}

#[test]
fn an_allocation_outlives_the_rotation_of_every_secret_on_its_path_until_the_overlap_ends() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-rotation");
    let topo = short_lived_topology(&dir.join("input"));
    let net = Network::start(&exe(), RunLayout::write(&topo, &dir.join("run"), PORT_BASE).unwrap()).unwrap();
    let old = dir.join("old-allocation.json");
    allocation(&net, &old);
    assert_eq!(passed_everywhere(&net, &old, &dir, "before the rotation"), [0, 0, 0]);

    // Every AS rotates its routers. An overlap shorter than ΔT + L + ε is refused.
    let (code, body) = put_keys(&net, ia(ON_PATH[0]), &"ab".repeat(32), MIN_OVERLAP_SECS - 1).unwrap_err();
    assert!(code == 400 && body.contains("overlap_secs") && body.contains("41"), "{code} {body}");
    for (n, at) in PATH_ASES.iter().enumerate() {
        put_keys(&net, ia(at), &format!("{:02x}", 0xc0 + n).repeat(32), MIN_OVERLAP_SECS).unwrap();
    }
    let overlap_ends_ns = now_ns() + MIN_OVERLAP_SECS * S;
    let retried = passed_everywhere(&net, &old, &dir, "after the routers' rotation");
    assert!(retried.iter().all(|&n| n >= 15), "previous_key_packets grew by {retried:?}");

    // The control services restart under the new secrets, one at a time, each settled (a
    // discovery through all of them succeeds) before the next goes down: a restarted service
    // fetches the other ASes' DRKey keys from their processes still on the old secret, which
    // serve the keys the new ones will for the epoch (docs/operations.md).
    for at in PATH_ASES {
        restart(&net, &[ia(at)], Role::Control);
        allocation(&net, &dir.join("settled.json"));
    }
    let new = dir.join("new-allocation.json");
    allocation(&net, &new);
    assert_eq!(passed_everywhere(&net, &new, &dir, "new allocation"), [0, 0, 0]);
    passed_everywhere(&net, &old, &dir, "old allocation after the control services' restart");

    // A router restarted within the overlap takes both keys back.
    restart(&net, &[ia(ON_PATH[0])], Role::Router);
    let deadline = Instant::now() + Duration::from_secs(30);
    let management = net.layout.ases[&ia(ON_PATH[0])].router.management;
    while ureq::get(&format!("http://{management}/metrics")).call().is_err() {
        assert!(Instant::now() < deadline, "the restarted router does not answer");
        std::thread::sleep(Duration::from_millis(100));
    }
    passed_everywhere(&net, &old, &dir, "old allocation after a router's restart");
    passed_everywhere(&net, &new, &dir, "new allocation after a router's restart");

    // The overlap ends: the old allocation passes no router (it has expired by then too, as
    // the overlap is meant to make sure, so the source AS's router already refuses it).
    while now_ns() < overlap_ends_ns + S {
        std::thread::sleep(Duration::from_millis(200));
    }
    let source_before = router_counts(&net, PATH_ASES[0]);
    let (before, after) = send(&net, &old, &dir);
    for (at, (b, a)) in ON_PATH.iter().zip(before.iter().zip(&after)) {
        assert_eq!(a.passed, b.passed, "{at} passed the old allocation after the overlap");
    }
    let source_after = router_counts(&net, PATH_ASES[0]);
    let refused = source_after.allocation_expired - source_before.allocation_expired;
    assert!(refused >= 15, "the source AS refused {refused} of about 40");
}
