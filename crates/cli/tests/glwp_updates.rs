//! GLWP matrix updates on the emulated network (testdata/topologies/glwp.toml, ports
//! 53500-53999): 1-ff00:0:110 changes its matrix through the control service
//! (`POST /v1/glwp/matrix`, the update subprotocol of §V-C): its neighbours accept its
//! announcement, and a discovery across it during the overlap gets its temporary hop values
//! and a β no larger than under the old or the new matrix. An AS that instead restarts with
//! another matrix (no update) contradicts what it announced: its neighbours refuse the
//! discoveries through it and blame it (F2), visible on their `/metrics`.

mod glwp_common;
mod prometheus_text;

use std::time::{Duration, Instant};

use aviary_glwp::{guarantee, HopValues};
use aviary_node::api::{GlwpAllocationWire, GlwpMatrixReply};
use aviary_node::runner::{Network, Role, RunLayout};
use aviary_node::topology::Topology;
use glwp_common::{
    configured_hop_values, counted, discover, exe, ia, metrics, now_ns, sample, settled_discovery, topology_file,
    PATH_ASES,
};

const PORT_BASE: u16 = 53500;
const AS110: &str = "1-ff00:0:110";

/// 110's new matrix: the path's pair (1, 2) gets less, others more, every divergent and
/// convergent still within its link.
const NEW_110: [[u64; 3]; 6] =
    [[1, 2, 4_000_000], [1, 0, 2_000_000], [0, 2, 5_000_000], [2, 1, 7_000_000], [2, 0, 4_000_000], [0, 1, 2_000_000]];

fn new_110_values(pair: (u16, u16)) -> HopValues {
    let m = aviary_glwp::AllocationMatrix::new(NEW_110.iter().map(|&[i, j, bps]| aviary_glwp::MatrixEntry {
        ingress: i as u16,
        egress: j as u16,
        bps,
    }))
    .unwrap();
    m.hop_values(pair.0, pair.1)
}

fn post_matrix(net: &Network, token: Option<&str>, body: &serde_json::Value) -> Result<String, (u16, String)> {
    let addr = net.layout.ases[&ia(AS110)].control.listen;
    let mut req = ureq::post(&format!("http://{addr}/v1/glwp/matrix"));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    match req.send_json(body.clone()) {
        Ok(r) => Ok(r.into_string().unwrap()),
        Err(ureq::Error::Status(code, r)) => Err((code, r.into_string().unwrap_or_default())),
        Err(e) => panic!("{e}"),
    }
}

fn blames(net: &Network, at: &str, reason: &str) -> u64 {
    sample(&metrics(net, at), "aviary_glwp_blames_total", &[&format!("neighbour=\"{AS110}\""), reason])
}

fn allocation(o: &std::process::Output) -> GlwpAllocationWire {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_matrix_change_keeps_discovery_going_with_temporary_values() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-update");
    let net = Network::start(&exe(), RunLayout::write(&topology_file(), &dir, PORT_BASE).unwrap()).unwrap();
    let topo = Topology::load(&topology_file()).unwrap();
    let old = allocation(&settled_discovery(&net, &["--json"]));
    let pair_110 = (old.hops[1].ingress, old.hops[1].egress);
    let hop_values = |a: &GlwpAllocationWire| -> Vec<HopValues> {
        a.hops.iter().map(|h| HopValues::new(h.div_bps, h.m_bps, h.con_bps).unwrap()).collect()
    };
    let old_values = hop_values(&old);
    assert_eq!(old_values[1], configured_hop_values(&topo, ia(AS110), pair_110));

    // The operator's API: the token is needed, a bad matrix is refused naming the field.
    let token = net.layout.ases[&ia(AS110)].operator_token().unwrap();
    let body = serde_json::json!({ "matrix": NEW_110 });
    assert_eq!(post_matrix(&net, None, &body).unwrap_err().0, 401);
    let (code, msg) = post_matrix(&net, Some(&token), &serde_json::json!({ "matrix": [[1, 9, 1]] })).unwrap_err();
    assert!(code == 400 && msg.contains("body.matrix[0]") && msg.contains("not a link"), "{code} {msg}");
    let too_much = serde_json::json!({ "matrix": [[0, 1, 30_000_000]] });
    let (code, msg) = post_matrix(&net, Some(&token), &too_much).unwrap_err();
    assert!(code == 400 && msg.contains("capacity"), "{code} {msg}");

    let reply: GlwpMatrixReply = serde_json::from_str(&post_matrix(&net, Some(&token), &body).unwrap()).unwrap();
    assert_eq!(reply.t2_ns - reply.t1_ns, 86_400 * 1_000_000_000, "the overlap is ΔT");
    let (code, msg) = post_matrix(&net, Some(&token), &body).unwrap_err();
    assert!(code == 409 && msg.contains("in progress"), "{code} {msg}");

    // Into the overlap: the temporary values, and β no larger than under either matrix.
    while now_ns() <= reply.t1_ns {
        std::thread::sleep(Duration::from_millis(100));
    }
    let during = allocation(&settled_discovery(&net, &["--json"]));
    let during_values = hop_values(&during);
    let new_hop = new_110_values(pair_110);
    assert_eq!(during_values[1], HopValues::during_update(old_values[1], new_hop));
    let mut new_values = old_values.clone();
    new_values[1] = new_hop;
    assert_eq!(during.guarantee_bps, guarantee(&during_values));
    assert!(during.guarantee_bps <= old.guarantee_bps, "{} > old {}", during.guarantee_bps, old.guarantee_bps);
    assert!(during.guarantee_bps <= guarantee(&new_values), "{} > new", during.guarantee_bps);
    assert!(during.guarantee_bps < old.guarantee_bps, "the entry went down, so must β");

    // The neighbours accepted the change: announcements counted, no blame for 110.
    for at in [PATH_ASES[0], PATH_ASES[2]] {
        assert!(counted(&net, at, "aviary_glwp_announcements_total", &["direction=\"accepted\""], 1) >= 1);
        assert_eq!(blames(&net, at, "reason=\"inconsistent_values\""), 0, "{at}");
        assert_eq!(blames(&net, at, "reason=\"contradicting_announcement\""), 0, "{at}");
    }
}

#[test]
fn an_as_changing_its_matrix_without_the_update_is_blamed() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-blame");
    let net = Network::start(&exe(), RunLayout::write(&topology_file(), &dir, PORT_BASE + 250).unwrap()).unwrap();
    allocation(&settled_discovery(&net, &["--json"]));

    // 110's control service restarts with another matrix in its config: it announces that as
    // if it had always had it, and promotes it.
    let cfg = net.layout.ases[&ia(AS110)].dir.join("control.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let mut value: toml::Value = toml::from_str(&text).unwrap();
    let matrix = toml::Value::try_from(NEW_110.iter().map(|r| r.map(|x| x as i64)).collect::<Vec<_>>()).unwrap();
    value["glwp"].as_table_mut().unwrap().insert("matrix".into(), matrix);
    std::fs::write(&cfg, toml::to_string(&value).unwrap()).unwrap();
    let pid = net.pid(ia(AS110), Role::Control).unwrap();
    // SAFETY: kill(2) on a child process of this test's network, which restarts it.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);

    // Its neighbours refuse the contradicting announcement and the discoveries through it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let refused = loop {
        let o = discover(&net, &["--json"]);
        let refused = sample(
            &metrics(&net, PATH_ASES[2]),
            "aviary_glwp_discovery_drops_total",
            &["reason=\"inconsistent_neighbour\""],
        );
        if refused > 0 || Instant::now() > deadline {
            assert!(!o.status.success(), "a discovery across the inconsistent AS succeeded");
            break refused;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(refused >= 1, "2-ff00:0:210 never refused 110's values");
    assert!(blames(&net, PATH_ASES[2], "reason=\"inconsistent_values\"") >= 1);
    for at in [PATH_ASES[0], PATH_ASES[2]] {
        assert!(
            blames(&net, at, "reason=\"contradicting_announcement\"") >= 1,
            "{at} did not blame 110's announcement"
        );
    }
}
