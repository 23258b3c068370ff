//! The Z-Lane gateway as a process on the emulated network (testdata/topologies/zlane-gateway.toml):
//! hosts of 1-ff00:0:111 send per-AS EPIC (`aviary host send --epic`) through their AS's
//! `aviary zlane-gateway` to 1-ff00:0:112 over the core 1-ff00:0:110. A host within its
//! gateway rate gets class G at the routers; the excess of a host over its rate leaves the
//! gateway unflagged and is class A; a host that skips the gateway and sets the QoS flag
//! itself gets no G.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, RunLayout};

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aviary"))
}

fn start(port_base: u16) -> Network {
    let dir = std::env::temp_dir().join(format!("aviary-it-zlane-gw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/zlane-gateway.toml");
    Network::start(&exe(), RunLayout::write(&topology, &dir, port_base).unwrap()).unwrap()
}

/// The value of the first sample of `name` whose line holds every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

fn metrics(addr: std::net::SocketAddr) -> String {
    ureq::get(&format!("http://{addr}/metrics")).call().unwrap().into_string().unwrap()
}

fn router_metrics(net: &Network, ia: &str) -> String {
    metrics(net.layout.ases[&ia.parse().unwrap()].router.management)
}

fn gateway_metrics(net: &Network) -> String {
    metrics(net.layout.ases[&"1-ff00:0:111".parse().unwrap()].zlane_gateway.as_ref().unwrap().metrics)
}

/// Packets a router sent in class `class` on interface `ifid`.
fn sent(net: &Network, ia: &str, ifid: u16, class: &str) -> u64 {
    let text = router_metrics(net, ia);
    sample(
        &text,
        "aviary_router_sent_packets_total",
        &[&format!("interface=\"{ifid}\""), &format!("class=\"{class}\"")],
    )
}

/// `aviary host --config <name> send --epic ...` towards the sink, started in the background.
fn send(net: &Network, name: &str, rate_bps: u64, duration_ms: u64, extra: &[&str]) -> Child {
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

fn wait_ok(child: Child, what: &str) {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn hosts_through_the_gateway_get_g_within_their_rate_only() {
    let net = start(49500);
    // The gateway has the Level-1 keys of all three ASes once its AS's control service has
    // fetched them from theirs.
    let start = Instant::now();
    loop {
        let keyed = sample(&gateway_metrics(&net), "aviary_zlane_gateway_keyed_ases", &[]);
        if keyed == 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the gateway has {keyed} of 3 keys");
        std::thread::sleep(Duration::from_millis(200));
    }

    // `within` sends 200 kbit/s at a rate of 600 kbit/s; `over` 800 kbit/s at 100 kbit/s.
    let within = send(&net, "within", 200_000, 3000, &[]);
    let over = send(&net, "over", 800_000, 3000, &[]);
    wait_ok(within, "within");
    wait_ok(over, "over");
    std::thread::sleep(Duration::from_secs(1)); // routers publish their counters a few times a second

    let gw = gateway_metrics(&net);
    let host = |name: &str, outcome: &str| {
        let addr = net.layout.hosts[name].addr;
        sample(
            &gw,
            "aviary_zlane_gateway_host_packets_total",
            &[&format!("host=\"{addr}\""), &format!("outcome=\"{outcome}\"")],
        )
    };
    let (within_g, within_over) = (host("within", "compliant"), host("within", "over_rate"));
    let (over_g, over_a) = (host("over", "compliant"), host("over", "over_rate"));
    assert!(within_g >= 100 && within_over == 0, "within: {within_g} compliant, {within_over} over rate\n{gw}");
    assert!(over_g > 0 && over_a > 2 * over_g, "over: {over_g} compliant, {over_a} over rate\n{gw}");
    // Both hosts fit the host table: nothing is untracked (and the family is there to say so).
    assert!(gw.contains("aviary_zlane_gateway_untracked_host_packets_total{"), "{gw}");
    assert_eq!(sample(&gw, "aviary_zlane_gateway_untracked_host_packets_total", &["outcome=\"compliant\""]), 0);
    for reason in ["bad_source_hvf", "malformed_header", "not_per_as_epic"] {
        assert_eq!(sample(&gw, "aviary_zlane_gateway_drops_total", &[&format!("reason=\"{reason}\"")]), 0, "{reason}");
    }

    // The source AS's router (interface 1 to 110) and the core's (interface 2 to 112) send what
    // the gateway flagged as G, and the rest as A; every packet verified.
    let flagged = within_g + over_g;
    for (ia, ifid) in [("1-ff00:0:111", 1), ("1-ff00:0:110", 2)] {
        let (g, a) = (sent(&net, ia, ifid, "G"), sent(&net, ia, ifid, "A"));
        assert!(g > flagged * 9 / 10 && g <= flagged, "{ia}: {g} packets in G, {flagged} flagged by the gateway");
        assert!(a > over_a * 9 / 10 && a <= over_a, "{ia}: {a} packets in A, {over_a} over rate at the gateway");
        let text = router_metrics(&net, ia);
        assert_eq!(sample(&text, "aviary_router_dropped_packets_total", &["reason=\"bad_hvf\""]), 0, "{ia}");
    }

    // `direct` skips the gateway and sets the flag itself: its AS's router drops it, nothing
    // more reaches G.
    let g_before = [sent(&net, "1-ff00:0:111", 1, "G"), sent(&net, "1-ff00:0:110", 2, "G")];
    wait_ok(send(&net, "direct", 200_000, 1000, &["--via-router", "--epic-set-flag"]), "direct");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!([sent(&net, "1-ff00:0:111", 1, "G"), sent(&net, "1-ff00:0:110", 2, "G")], g_before);
    let text = router_metrics(&net, "1-ff00:0:111");
    let bad = sample(&text, "aviary_router_dropped_packets_total", &["reason=\"bad_hvf\""]);
    assert!(bad >= 40, "111 dropped {bad} self-flagged packets as bad_hvf");
    let direct = format!("host=\"{}\"", net.layout.hosts["direct"].addr);
    assert_eq!(sample(&gateway_metrics(&net), "aviary_zlane_gateway_host_packets_total", &[&direct]), 0);

    // Junk on the gateway's socket is dropped with its reason, and the gateway goes on.
    let gw_addr = net.layout.ases[&"1-ff00:0:111".parse().unwrap()].zlane_gateway.as_ref().unwrap().listen;
    let junk = std::net::UdpSocket::bind("127.0.2.99:0").unwrap();
    for pkt in [&[0u8; 3][..], &[0xff; 200][..], &[0u8; 3000][..]] {
        junk.send_to(pkt, gw_addr).unwrap();
    }
    let start = Instant::now();
    loop {
        let gw = gateway_metrics(&net);
        let drops = |r: &str| sample(&gw, "aviary_zlane_gateway_drops_total", &[&format!("reason=\"{r}\"")]);
        if drops("malformed_header") == 2 && drops("truncated") == 1 {
            break;
        }
        let (m, t) = (drops("malformed_header"), drops("truncated"));
        assert!(start.elapsed() < Duration::from_secs(5), "{m} malformed, {t} truncated");
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_ok(send(&net, "within", 200_000, 500, &[]), "within, after the junk");
    std::thread::sleep(Duration::from_millis(500));
    let after = host("within", "compliant");
    let now = sample(
        &gateway_metrics(&net),
        "aviary_zlane_gateway_host_packets_total",
        &[&format!("host=\"{}\"", net.layout.hosts["within"].addr), "outcome=\"compliant\""],
    );
    assert!(now > after, "the gateway still flags: {after} then {now}");

    let dir = net.layout.dir.clone();
    drop(net);
    let _ = std::fs::remove_dir_all(dir);
}
