//! A topology states how an AS's router differs from the defaults; `aviary run` composes it into
//! that AS's router config, and the Hummingbird codec and ResID bound into its control service
//! and AS service too, so that every process of the AS agrees.

use std::path::PathBuf;

use aviary_hummingbird::BwCodec;
use aviary_node::config::{ControlConfig, RouterConfig};
use aviary_node::runner::RunLayout;
use aviary_scratch::ScratchDir;

const TOPOLOGY: &str = r#"
name = "two"

[[as]]
ia = "1-ff00:0:110"
core = true

[as.router]
link_class_table = "zlane"

[as.router.hummingbird]
burst_ns = 200000000
codec = "linear"
max_res_id = 5000

[as.router.classes]
reserved = "R"

[as.router.class_table.zlane]
policy = "bounded_shares"
class = [
  { name = "R", queue_bytes = 20000, lower = "10%", upper = "10%" },
  { name = "U", queue_bytes = 20000 },
]

[[as]]
ia = "1-ff00:0:111"

[[link]]
a = "1-ff00:0:110#1"
b = "1-ff00:0:111#1"
kind = "parent"
capacity_bps = 10_000_000
"#;

/// A directory holding `text` as a topology file: the directory, the file and where to run it.
fn write(name: &str, text: &str) -> (ScratchDir, PathBuf, PathBuf) {
    let dir = ScratchDir::new(&format!("topology-router-{name}"));
    let topo = dir.join("topology.toml");
    std::fs::write(&topo, text).unwrap();
    let run = dir.join("run");
    (dir, topo, run)
}

#[test]
fn an_as_router_settings_reach_its_router_control_and_as_service() {
    let (_dir, topo, run) = write("ok", TOPOLOGY);
    let mut layout = RunLayout::write(&topo, &run, 42000).unwrap();
    layout.enable_market().unwrap();
    let core = &layout.ases[&"1-ff00:0:110".parse().unwrap()];
    let router = RouterConfig::load(&core.dir.join("router.toml")).unwrap();
    router.validate("router.toml").unwrap();
    assert_eq!(router.hummingbird.burst_ns, 200_000_000);
    assert_eq!(router.hummingbird.codec, BwCodec::Linear);
    assert_eq!(router.classes.get("reserved").map(String::as_str), Some("R"));
    assert!(router.class_table.contains_key("zlane"));
    assert!(router.interfaces.iter().all(|i| i.class_table == "zlane"));
    let control = ControlConfig::load(&core.dir.join("control.toml")).unwrap();
    assert_eq!((control.hummingbird.codec, control.hummingbird.max_res_id), (BwCodec::Linear, 5000));
    let as_service = &layout.market.as_ref().unwrap().as_services[&core.ia];
    let text = std::fs::read_to_string(as_service).unwrap();
    assert!(text.contains("codec = \"linear\"") && text.contains("max_res_id = 5000"), "{text}");

    // The other AS keeps every default.
    let leaf = &layout.ases[&"1-ff00:0:111".parse().unwrap()];
    let router = RouterConfig::load(&leaf.dir.join("router.toml")).unwrap();
    assert_eq!(router.hummingbird, Default::default());
    assert!(router.interfaces.iter().all(|i| i.class_table == "default"));
}

#[test]
fn a_router_table_that_cannot_start_stops_the_run_naming_the_as() {
    let bad = TOPOLOGY.replace("link_class_table = \"zlane\"", "link_class_table = \"missing\"");
    let (_dir, topo, run) = write("bad-table", &bad);
    let e = RunLayout::write(&topo, &run, 42100).unwrap_err().to_string();
    assert!(e.contains("as[0].router of 1-ff00:0:110") && e.contains("no class table `missing`"), "{e}");

    let bad = TOPOLOGY.replace("upper = \"10%\"", "upper = \"ten\"");
    let (_dir, topo, run) = write("bad-bound", &bad);
    let e = RunLayout::write(&topo, &run, 42200).unwrap_err().to_string();
    assert!(e.contains("class_table.zlane.class[0].upper"), "{e}");

    let bad = TOPOLOGY.replace("max_res_id = 5000", "max_res_id = 99999999");
    let (_dir, topo, run) = write("bad-resid", &bad);
    let e = RunLayout::write(&topo, &run, 42300).unwrap_err().to_string();
    assert!(e.contains("hummingbird.max_res_id"), "{e}");

    let bad = TOPOLOGY.replace("burst_ns = 200000000", "burst = 1");
    let (_dir, topo, _) = write("unknown-field", &bad);
    let e = aviary_node::topology::Topology::load(&topo).unwrap_err().to_string();
    assert!(e.contains("burst"), "{e}");
}
