//! SCMP on the emulated network as real processes: `aviary host ping` to border routers near
//! and far, `aviary host traceroute` through the transit ASes of line5, and the External
//! Interface Down error a router sends when the link a packet needs is down.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, RunLayout};
use aviary_scratch::ScratchDir;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aviary"))
}

/// line5 in a directory of its own; the directory first, so that it goes last.
fn line5(port_base: u16) -> (ScratchDir, Network) {
    let dir = ScratchDir::new("it-scmp");
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
    let net = Network::start(&exe(), RunLayout::write(&topology, &dir, port_base).unwrap()).unwrap();
    (dir, net)
}

/// `aviary host --config <source> <args>`: its exit status and stdout.
fn host(net: &Network, args: &[&str]) -> (bool, String) {
    let cfg = net.layout.host_config_path("source");
    let out = Command::new(exe()).arg("host").arg("--config").arg(cfg).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Retries `args` until it succeeds (control services need a moment for their first paths).
fn host_until_ok(net: &Network, args: &[&str]) -> String {
    let start = Instant::now();
    loop {
        let (ok, out) = host(net, args);
        if ok || start.elapsed() > Duration::from_secs(30) {
            assert!(ok, "aviary host {args:?} failed:\n{out}");
            return out;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn router_ip(net: &Network, ia: &str) -> String {
    net.layout.ases[&ia.parse().unwrap()].router.internal.ip().to_string()
}

/// A router's SCMP counter once it has reached `at_least` (routers publish their metrics a
/// few times a second), or as it stands after two seconds.
fn scmp_counter(net: &Network, ia: &str, kind: &str, at_least: u64) -> u64 {
    let mgmt = net.layout.ases[&ia.parse().unwrap()].router.management;
    let start = Instant::now();
    loop {
        let text = ureq::get(&format!("http://{mgmt}/metrics")).call().unwrap().into_string().unwrap();
        let n = text
            .lines()
            .find(|l| l.starts_with("aviary_router_scmp_messages_total") && l.contains(&format!("kind=\"{kind}\"")))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0);
        if n >= at_least || start.elapsed() > Duration::from_secs(2) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ping_traceroute_and_interface_down_over_line5() {
    let (_dir, net) = line5(48000);

    // Ping the far router (four AS hops and a segment crossover away), the core AS's router
    // and the source AS's own router (empty path).
    for ia in ["1-ff00:0:121", "1-ff00:0:110", "1-ff00:0:111"] {
        let dst = format!("{ia},{}", router_ip(&net, ia));
        let out = host_until_ok(&net, &["ping", &dst, "-c", "3", "--interval-ms", "100"]);
        let replies = out.lines().filter(|l| l.contains(&format!("from {dst} time="))).count();
        assert!(replies >= 2, "ping {dst}:\n{out}");
        assert!(out.contains("3 sent"), "{out}");
    }
    assert!(scmp_counter(&net, "1-ff00:0:121", "echo_reply", 2) >= 2);

    // Traceroute: every AS of the path answers, in path order, with the interface the
    // request entered it by (the source AS: the one it leaves by).
    let out = host_until_ok(&net, &["traceroute", "1-ff00:0:121"]);
    let hops: Vec<(String, String)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].to_string(), f[2].to_string())
        })
        .collect();
    let want = [
        ("1-ff00:0:111", "IF=1"),
        ("1-ff00:0:112", "IF=2"),
        ("1-ff00:0:110", "IF=1"),
        ("1-ff00:0:120", "IF=1"),
        ("1-ff00:0:121", "IF=1"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(hops, want, "{out}");
    assert_eq!(scmp_counter(&net, "1-ff00:0:110", "traceroute_reply", 1), 1);

    // C's link to D goes down: a ping to E comes back as External Interface Down from C,
    // naming the interface.
    let c = &net.layout.ases[&"1-ff00:0:110".parse().unwrap()];
    ureq::put(&format!("http://{}/v1/interfaces/2", c.router.management))
        .set("Authorization", &format!("Bearer {}", c.operator_token().unwrap()))
        .send_string(r#"{"capacity_bps": 0}"#)
        .unwrap();
    let dst = format!("1-ff00:0:121,{}", router_ip(&net, "1-ff00:0:121"));
    let (ok, out) = host(&net, &["ping", &dst, "-c", "2", "--interval-ms", "100"]);
    assert!(!ok, "no echo reply crosses a link that is down:\n{out}");
    let from_c =
        format!("from 1-ff00:0:110,{}: external interface down (type 5, code 0)", router_ip(&net, "1-ff00:0:110"));
    assert_eq!(out.lines().filter(|l| l.contains(&from_c)).count(), 2, "{out}");
    assert_eq!(scmp_counter(&net, "1-ff00:0:110", "external_interface_down", 2), 2);
}
