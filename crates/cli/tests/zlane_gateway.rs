//! The Z-Lane gateway as a process on the emulated network (testdata/topologies/zlane-gateway.toml):
//! hosts of 1-ff00:0:111 send per-AS EPIC (`aviary host send --epic`) through their AS's
//! `aviary zlane-gateway` to 1-ff00:0:112 over the core 1-ff00:0:110. A host within its
//! gateway rate gets class G at the routers; the excess of a host over its rate leaves the
//! gateway unflagged and is class A; a host that skips the gateway and sets the QoS flag
//! itself gets no G.

mod prometheus_text;
mod zlane_common;

use std::time::{Duration, Instant};

use zlane_common::{gateway_metrics, router_metrics, sample, send, sent, wait_keyed, wait_ok};

#[test]
fn hosts_through_the_gateway_get_g_within_their_rate_only() {
    let (_dir, net) = zlane_common::start("zlane-gw", 49500);
    wait_keyed(&net);

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
}
