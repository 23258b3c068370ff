//! What the Z-Lane tests on the emulated network share: the topology
//! testdata/topologies/zlane-gateway.toml (hosts of 1-ff00:0:111 sending per-AS EPIC through
//! their AS's gateway to 1-ff00:0:112 over the core 1-ff00:0:110), the hosts' sends and the
//! routers' and the gateway's metrics.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, RunLayout};
use aviary_scratch::ScratchDir;

pub use crate::prometheus_text::sample;

/// The AS of the gateway and of its hosts.
pub const SOURCE_AS: &str = "1-ff00:0:111";

pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aviary"))
}

/// The topology's network on ports from `port_base`, in a directory named after `test`; the
/// directory first, so that it goes last.
pub fn start(test: &str, port_base: u16) -> (ScratchDir, Network) {
    let dir = ScratchDir::new(&format!("it-{test}"));
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/zlane-gateway.toml");
    let net = Network::start(&exe(), RunLayout::write(&topology, &dir, port_base).unwrap()).unwrap();
    (dir, net)
}

fn metrics(addr: std::net::SocketAddr) -> String {
    ureq::get(&format!("http://{addr}/metrics")).call().unwrap().into_string().unwrap()
}

pub fn router_metrics(net: &Network, ia: &str) -> String {
    metrics(net.layout.ases[&ia.parse().unwrap()].router.management)
}

pub fn gateway_metrics(net: &Network) -> String {
    metrics(net.layout.ases[&SOURCE_AS.parse().unwrap()].zlane_gateway.as_ref().unwrap().metrics)
}

/// Waits until the gateway has the Level-1 keys of all three ASes (once its AS's control
/// service has fetched them from theirs).
pub fn wait_keyed(net: &Network) {
    let start = Instant::now();
    loop {
        let keyed = sample(&gateway_metrics(net), "aviary_zlane_gateway_keyed_ases", &[]);
        if keyed == 3 {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the gateway has {keyed} of 3 keys");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Packets a router sent in class `class` on interface `ifid`.
pub fn sent(net: &Network, ia: &str, ifid: u16, class: &str) -> u64 {
    let text = router_metrics(net, ia);
    sample(
        &text,
        "aviary_router_sent_packets_total",
        &[&format!("interface=\"{ifid}\""), &format!("class=\"{class}\"")],
    )
}

/// `aviary host --config <name> send --epic ...` towards the sink, started in the background.
pub fn send(net: &Network, name: &str, rate_bps: u64, duration_ms: u64, extra: &[&str]) -> Child {
    let sink = net.layout.hosts["sink"].addr;
    let (rate, duration) = (rate_bps.to_string(), duration_ms.to_string());
    let dst = format!("1-ff00:0:112,{sink}:40000");
    let args = ["send", "--epic", "--dst", &dst, "--flow", name, "--rate-bps", &rate, "--size", "500"];
    Command::new(exe())
        .arg("host")
        .arg("--config")
        .arg(net.layout.host_config_path(name))
        .args(args)
        .args(["--duration-ms", &duration])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn wait_ok(child: Child, what: &str) {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}
