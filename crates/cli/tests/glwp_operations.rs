//! GLWP's control plane as operators run it, on the emulated network
//! (testdata/topologies/glwp.toml, ports 54000-54499):
//!
//! - a GLWP service restarted in the overlap of a matrix change resumes its persisted schedule:
//!   discoveries across it still get its temporary values, and nobody blames anybody, neither
//!   its neighbours (for contradicting what it announced before) nor the restarted service
//!   (for values its neighbours had no chance to announce to it yet);
//! - the blame policy: a neighbour blamed again and again is held down, discoveries through
//!   it are refused, visible on `/metrics`, until the operator clears it.

mod glwp_common;
mod prometheus_text;

use std::path::Path;
use std::time::{Duration, Instant};

use aviary_glwp::HopValues;
use aviary_node::api::{GlwpAllocationWire, GlwpHoldDownReply, GlwpMatrixReply};
use aviary_node::runner::{Network, Role, RunLayout};
use aviary_node::topology::Topology;
use glwp_common::{
    configured_hop_values, counted, discover, exe, ia, metrics, now_ns, sample, settled_discovery, topology_file,
    PATH_ASES,
};

const PORT_BASE: u16 = 54000;
const AS110: &str = "1-ff00:0:110";
const AS210: &str = "2-ff00:0:210";

/// 110's new matrix: the path's pair (1, 2) gets less, every sum within its link.
const NEW_110: [[u64; 3]; 6] =
    [[1, 2, 4_000_000], [1, 0, 2_000_000], [0, 2, 5_000_000], [2, 1, 7_000_000], [2, 0, 4_000_000], [0, 1, 2_000_000]];

fn control(net: &Network, at: &str) -> std::net::SocketAddr {
    net.layout.ases[&ia(at)].control.listen
}

/// The first discovery that succeeds, tried back to back (no pause: a discovery in the
/// moment after a start is what this file is about); `None` after a minute.
fn first_allocation(net: &Network) -> Option<GlwpAllocationWire> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let o = discover(net, &["--json"]);
        if o.status.success() {
            return Some(serde_json::from_slice(&o.stdout).unwrap());
        }
    }
    None
}

/// Every blame any AS of the path holds against any neighbour, as `(at, line)`.
fn all_blames(net: &Network) -> Vec<(String, String)> {
    PATH_ASES
        .iter()
        .flat_map(|at| {
            metrics(net, at)
                .lines()
                .filter(|l| l.starts_with("aviary_glwp_blames_total{") && !l.ends_with(" 0"))
                .map(|l| (at.to_string(), l.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn restart_control(net: &Network, at: &str) {
    let old = net.pid(ia(at), Role::Control).unwrap();
    // SAFETY: kill(2) on a child process of this test's network, which restarts it.
    assert_eq!(unsafe { libc::kill(old as i32, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while net.pid(ia(at), Role::Control).is_none_or(|p| p == old) {
        assert!(Instant::now() < deadline, "{at}'s control service was not restarted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_service_restarted_in_the_overlap_keeps_its_schedule_and_nobody_is_blamed() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-ops-restart");
    let net = Network::start(&exe(), RunLayout::write(&topology_file(), &dir, PORT_BASE).unwrap()).unwrap();
    let old = first_allocation(&net).expect("no discovery succeeded at the start");
    assert_eq!(all_blames(&net), vec![], "blamed at the start, before announcements could arrive");
    let pair_110 = (old.hops[1].ingress, old.hops[1].egress);
    let old_110 = HopValues::new(old.hops[1].div_bps, old.hops[1].m_bps, old.hops[1].con_bps).unwrap();
    let topo = Topology::load(&topology_file()).unwrap();
    assert_eq!(old_110, configured_hop_values(&topo, ia(AS110), pair_110));

    let token = net.layout.ases[&ia(AS110)].operator_token().unwrap();
    let reply: GlwpMatrixReply = ureq::post(&format!("http://{}/v1/glwp/matrix", control(&net, AS110)))
        .set("Authorization", &format!("Bearer {token}"))
        .send_json(serde_json::json!({ "matrix": NEW_110 }))
        .unwrap()
        .into_json()
        .unwrap();
    let persisted = net.layout.ases[&ia(AS110)].dir.join("state/glwp_schedule.json");
    assert!(persisted.exists(), "{} not written", persisted.display());
    while now_ns() <= reply.t1_ns {
        std::thread::sleep(Duration::from_millis(100));
    }

    // 110 restarts in the overlap: it must go on with the temporary values it announced.
    restart_control(&net, AS110);
    let during = first_allocation(&net).expect("no discovery across the restarted AS succeeded");
    let new_110 = aviary_glwp::AllocationMatrix::new(NEW_110.iter().map(|&[i, j, bps]| aviary_glwp::MatrixEntry {
        ingress: i as u16,
        egress: j as u16,
        bps,
    }))
    .unwrap()
    .hop_values(pair_110.0, pair_110.1);
    let during_110 = HopValues::new(during.hops[1].div_bps, during.hops[1].m_bps, during.hops[1].con_bps).unwrap();
    assert_eq!(during_110, HopValues::during_update(old_110, new_110), "the temporary values after the restart");
    // Its announcements (re-sent every second) have reached the neighbours by now.
    counted(&net, PATH_ASES[2], "aviary_glwp_announcements_total", &["direction=\"accepted\""], 3);
    assert_eq!(all_blames(&net), vec![], "a restart in the overlap was blamed");
}

/// The topology with `extra` set in the `[as.glwp]` table of `at`, written into `dir`.
fn topology_with(dir: &Path, at: &str, extra: &[(&str, i64)]) -> std::path::PathBuf {
    let mut value: toml::Value = toml::from_str(&std::fs::read_to_string(topology_file()).unwrap()).unwrap();
    let entry = value["as"].as_array_mut().unwrap().iter_mut().find(|a| a["ia"].as_str() == Some(at)).unwrap();
    let glwp = entry["glwp"].as_table_mut().unwrap();
    for &(k, v) in extra {
        glwp.insert(k.into(), toml::Value::Integer(v));
    }
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("glwp-topology.toml");
    std::fs::write(&path, toml::to_string(&value).unwrap()).unwrap();
    path
}

fn clear_hold_down(net: &Network, token: Option<&str>) -> Result<GlwpHoldDownReply, u16> {
    let mut req = ureq::delete(&format!("http://{}/v1/glwp/hold-down/{AS110}", control(net, AS210)));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    match req.call() {
        Ok(r) => Ok(r.into_json().unwrap()),
        Err(ureq::Error::Status(code, _)) => Err(code),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_neighbour_blamed_again_and_again_is_held_down_until_the_operator_clears_it() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-ops-hold");
    // 210 holds a neighbour down after 3 blames within a minute, for an hour.
    let topo = topology_with(&dir.join("input"), AS210, &[("blame_limit", 3), ("hold_down_s", 3600)]);
    let net = Network::start(&exe(), RunLayout::write(&topo, &dir.join("run"), PORT_BASE + 250).unwrap()).unwrap();
    assert!(settled_discovery(&net, &["--json"]).status.success(), "no discovery succeeded at the start");
    let held = |net: &Network| {
        sample(&metrics(net, AS210), "aviary_glwp_neighbour_held_down", &[&format!("neighbour=\"{AS110}\"")])
    };
    assert_eq!(held(&net), 0);

    // 110 restarts with another matrix in its config (no update): its announcement contradicts
    // the one before (one blame, however often it is re-sent), and each discovery through it
    // promotes values other than it announced (one blame each), until 210 holds it down.
    let cfg = net.layout.ases[&ia(AS110)].dir.join("control.toml");
    let mut value: toml::Value = toml::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let matrix = toml::Value::try_from(NEW_110.iter().map(|r| r.map(|x| x as i64)).collect::<Vec<_>>()).unwrap();
    value["glwp"].as_table_mut().unwrap().insert("matrix".into(), matrix);
    std::fs::write(&cfg, toml::to_string(&value).unwrap()).unwrap();
    restart_control(&net, AS110);

    let deadline = Instant::now() + Duration::from_secs(120);
    while held(&net) == 0 {
        assert!(!discover(&net, &["--json"]).status.success(), "a discovery across the inconsistent AS succeeded");
        assert!(Instant::now() < deadline, "210 never held 110 down");
    }
    let n110 = format!("neighbour=\"{AS110}\"");
    let text = metrics(&net, AS210);
    assert!(sample(&text, "aviary_glwp_hold_downs_total", &[&n110]) >= 1);
    assert_eq!(
        sample(&text, "aviary_glwp_blames_total", &[&n110, "contradicting_announcement"]),
        1,
        "re-sent, blamed once"
    );
    assert!(sample(&text, "aviary_glwp_blames_total", &[&n110, "inconsistent_values"]) >= 1);
    // Discoveries through 110 are now refused at 210 as held down, and counted.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = discover(&net, &["--json"]);
        assert!(!o.status.success(), "a discovery across the held-down AS succeeded");
        let n = sample(&metrics(&net, AS210), "aviary_glwp_discovery_drops_total", &["reason=\"neighbour_held_down\""]);
        if n > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "210 never refused a discovery through the held-down 110");
    }

    // The operator clears it: the token is needed; then it is no longer held down.
    assert_eq!(clear_hold_down(&net, None).unwrap_err(), 401);
    let token = net.layout.ases[&ia(AS210)].operator_token().unwrap();
    let reply = clear_hold_down(&net, Some(&token)).unwrap();
    assert!(reply.was_held_down && reply.neighbour == ia(AS110), "{reply:?}");
    assert_eq!(held(&net), 0, "still held down after the operator cleared it");
}
