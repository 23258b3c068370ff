//! One AS rotates its master secret on the emulated network (testdata/topologies/glwp.toml,
//! ports 55000-55499) as docs/operations.md says: `PUT /v1/keys` on its router, then its
//! control service restarted on its own while every other AS keeps running. The other ASes
//! fetched its DRKey Level-1 keys before the rotation and keep them for the epoch, so the
//! restarted service must serve and use the very same keys: GLWP discoveries through the AS
//! keep succeeding and no AS drops a discovery message as `bad_authenticator`.
//!
//! Likewise for per-AS EPIC through a Z-Lane gateway (testdata/topologies/zlane-gateway.toml):
//! the gateway's AS rotates and restarts its control service, then its gateway, while the
//! routers of the path keep the keys they derive; the hosts' packets keep getting class G.

// Only some of the shared helpers are of use here.
#[allow(dead_code)]
mod glwp_common;
mod prometheus_text;
mod rotation_common;
mod zlane_common;

use aviary_node::runner::{Network, Role, RunLayout};
use aviary_node::secret_rotation::{previous_secret_file, rotated_at_file};
use glwp_common::{discover, exe, ia, metrics, sample, settled_discovery, topology_file, PATH_ASES};
use rotation_common::{put_keys, restart};
use zlane_common::{sent, SOURCE_AS};

const PORT_BASE: u16 = 55000;
const ZLANE_PORT_BASE: u16 = 55250;
/// The core AS in the middle of the path from h111 to h211, which rotates.
const ROTATED: &str = PATH_ASES[1];
/// The overlap a `[glwp]` router takes by default with the default ΔT, L and ε.
const OVERLAP_SECS: u64 = 90_002;

/// Discovery messages AS `at` dropped because an authenticator did not verify under its keys.
fn bad_authenticators(net: &Network, at: &str) -> u64 {
    sample(&metrics(net, at), "aviary_glwp_discovery_drops_total", &["reason=\"bad_authenticator\""])
}

fn assert_discovers(net: &Network, what: &str) {
    let o = settled_discovery(net, &["--json"]);
    assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn discoveries_through_an_as_keep_working_when_it_rotates_its_secret_and_restarts_its_control_service_alone() {
    let dir = aviary_scratch::ScratchDir::new("it-drkey-rotation");
    let net = Network::start(&exe(), RunLayout::write(&topology_file(), &dir, PORT_BASE).unwrap()).unwrap();
    // Every service has the others' Level-1 keys of this epoch (and of the next) once a
    // discovery through all of them succeeds: the rotated AS's keys are cached by the others.
    assert_discovers(&net, "before the rotation");
    let before: Vec<u64> = PATH_ASES.iter().map(|at| bad_authenticators(&net, at)).collect();

    let rotated = &net.layout.ases[&ia(ROTATED)];
    put_keys(&net, rotated.ia, &"5a".repeat(32), OVERLAP_SECS).unwrap();
    let master = rotated.dir.join(&rotated.control.master_secret_file);
    assert!(previous_secret_file(&master).exists() && rotated_at_file(&master).exists(), "no record of the rotation");
    // Its issuers read the new secret at start: the control service, here the only one (the
    // topology has no market, hence no AS service, and no Z-Lane gateway).
    assert_eq!((net.pid(rotated.ia, Role::AsService), net.pid(rotated.ia, Role::ZlaneGateway)), (None, None));
    restart(&net, &[rotated.ia], Role::Control);

    assert_discovers(&net, "after the rotated AS's control service restarted");
    for n in 0..3 {
        let o = discover(&net, &["--json"]);
        assert!(o.status.success(), "discovery {n} after the restart: {}", String::from_utf8_lossy(&o.stderr));
    }
    // The others verified the restarted service's authenticators under the keys they fetched
    // before the rotation, and it verified theirs (its counters began at its restart).
    for (at, b) in PATH_ASES.iter().zip(before) {
        let b = if *at == ROTATED { 0 } else { b };
        assert_eq!(bad_authenticators(&net, at), b, "{at} dropped discovery messages as bad_authenticator");
    }
}

/// Per-AS EPIC packets of host `within` (inside its gateway rate) that the gateway's AS's router
/// and the core's sent in class G, each AS's hop validation field having verified: about 50
/// are sent.
fn g_through_every_router(net: &Network, what: &str) {
    let routers = [(SOURCE_AS, 1), ("1-ff00:0:110", 2)];
    let bad_hvf = |at: &str| {
        let text = zlane_common::router_metrics(net, at);
        zlane_common::sample(&text, "aviary_router_dropped_packets_total", &["reason=\"bad_hvf\""])
    };
    let before: Vec<(u64, u64)> = routers.iter().map(|&(at, ifid)| (sent(net, at, ifid, "G"), bad_hvf(at))).collect();
    zlane_common::wait_ok(zlane_common::send(net, "within", 200_000, 1000, &[]), what);
    std::thread::sleep(std::time::Duration::from_secs(1)); // routers publish their counters a few times a second
    for (&(at, ifid), (g, bad)) in routers.iter().zip(before) {
        let g = sent(net, at, ifid, "G") - g;
        assert!(g >= 40, "{what}: {at} sent {g} of about 50 packets in G");
        assert_eq!(bad_hvf(at), bad, "{what}: {at} dropped packets as bad_hvf");
    }
}

#[test]
fn per_as_epic_keeps_class_g_when_the_gateway_as_rotates_and_restarts_its_issuers_one_at_a_time() {
    let (_dir, net) = zlane_common::start("drkey-rotation-zlane", ZLANE_PORT_BASE);
    zlane_common::wait_keyed(&net);
    g_through_every_router(&net, "before the rotation");

    let source = ia(SOURCE_AS);
    put_keys(&net, source, &"7b".repeat(32), 86_400).unwrap();
    // The issuers one at a time, each answering before the next goes down.
    for role in [Role::Control, Role::ZlaneGateway] {
        restart(&net, &[source], role);
        net.wait_ready(std::time::Duration::from_secs(15)).unwrap();
    }
    zlane_common::wait_keyed(&net);
    g_through_every_router(&net, "after the rotation and the restarts");
}
