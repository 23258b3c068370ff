//! GLWP discovery on the emulated network (testdata/topologies/glwp.toml): `aviary glwp
//! discover` from h111 to 2-ff00:0:211 runs Alg. 1 between the GLWP services of 111, 110, 210
//! and 211, over UDP between their control services. The allocation is GMA's for the
//! configured matrices, its hop keys pass every on-path AS's router validation, a second
//! discovery gives the same allocation (F3), a minimum above it fails naming the AS, and
//! garbage or strangers' datagrams are dropped and counted. Ports 51000-51499. The helpers are
//! in `glwp_common`, shared with the matrix-update test.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use aviary_glwp::discovery::wire::{Announced, Kind, MessageRepr};
use aviary_glwp::{guarantee, prefix_guarantees, testbed, AidMonitor, Freshness, HopValues, Router, SourceAllocation};
use aviary_node::api::GlwpAllocationWire;
use aviary_node::runner::{Network, RunLayout};
use aviary_node::topology::Topology;
use aviary_qos::{Admission, DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::IsdAsn;

mod glwp_common;
mod prometheus_text;

use glwp_common::{
    configured_hop_values, counted, discover, exe, ia, metrics, now_ns, sample, settled_discovery, topology_file,
    PATH_ASES,
};

const PORT_BASE: u16 = 51000;

/// AS `ia`'s router logic, keyed with the GLWP secret derived from the AS's master secret.
fn router_of(net: &Network, ia: IsdAsn) -> Router {
    let text = std::fs::read_to_string(net.layout.ases[&ia].dir.join("master.key")).unwrap();
    let secret = aviary_glwp::hop_key::as_secret(&hex::decode(text.trim()).unwrap());
    let fresh = Freshness { lifetime_ns: 1_000_000_000, skew_ns: 1_000_000_000 };
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 3_000_000_000, expected_per_window: 1000, false_positive_rate: 1e-9 },
        [7; 16],
    )
    .unwrap();
    Router::new(&secret, fresh, AidMonitor::new(64, 9000, 0x5eed), dups)
}

#[test]
fn discovery_across_two_isds() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp");
    let net = Network::start(&exe(), RunLayout::write(&topology_file(), &dir, PORT_BASE).unwrap()).unwrap();
    let topo = Topology::load(&topology_file()).unwrap();

    // The allocation, written 0600 for a data sender.
    let file = dir.join("alloc.json");
    let o = settled_discovery(&net, &["--out", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "discover failed:\n{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let alloc: GlwpAllocationWire = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let ases: Vec<String> = alloc.hops.iter().map(|h| h.ia.to_string()).collect();
    assert_eq!(ases, PATH_ASES);
    assert!(stdout.contains(&alloc.aid) && stdout.contains(&alloc.guarantee_bps.to_string()), "{stdout}");

    // β is GMA's allocation of the hop values the topology configures.
    let hop_values: Vec<HopValues> =
        alloc.hops.iter().map(|h| configured_hop_values(&topo, h.ia, (h.ingress, h.egress))).collect();
    for (h, hv) in alloc.hops.iter().zip(&hop_values) {
        assert_eq!(
            (h.div_bps, h.m_bps, h.con_bps),
            (hv.divergent_bps(), hv.entry_bps(), hv.convergent_bps()),
            "{}",
            h.ia
        );
    }
    let g = guarantee(&hop_values);
    assert!(g > 0);
    assert_eq!(alloc.guarantee_bps, g);
    assert_eq!(u64::from(alloc.beta_kbps), g / 1000);

    // The hop keys the services issued pass each on-path AS's router validation.
    let keys: Vec<[u8; 16]> =
        alloc.hops[1..].iter().map(|h| hex::decode(h.hop_key.as_ref().unwrap()).unwrap().try_into().unwrap()).collect();
    let source = SourceAllocation {
        path: alloc.hops.iter().map(|h| (h.ingress, h.egress)).collect(),
        aid: u64::from_str_radix(&alloc.aid, 16).unwrap(),
        beta: alloc.beta_kbps,
        ts_exp: alloc.ts_exp,
        hop_keys: keys,
    };
    let now = now_ns();
    let mut pkt = source.packet(&testbed::addresses(alloc.src), now, b"guaranteed").unwrap();
    for (k, h) in alloc.hops.iter().enumerate().skip(1) {
        let want = if h.egress == 0 { Verdict::Deliver } else { Verdict::forward(h.egress, Admission::GUARANTEED) };
        assert_eq!(router_of(&net, h.ia).process(&mut pkt, h.ingress, now), want, "router of {} (hop {k})", h.ia);
    }
    // Another AS's secret does not validate them.
    let mut pkt = source.packet(&testbed::addresses(alloc.src), now, b"guaranteed").unwrap();
    let h1 = &alloc.hops[1];
    assert_ne!(
        router_of(&net, ia(PATH_ASES[2])).process(&mut pkt, h1.ingress, now),
        Verdict::forward(h1.egress, Admission::GUARANTEED)
    );
    assert!(
        counted(&net, PATH_ASES[0], "aviary_glwp_allocations_completed_total", &[PATH_ASES[0]], 1) >= 1,
        "the source counts the allocation"
    );
    for a in &PATH_ASES[1..3] {
        assert!(counted(&net, a, "aviary_glwp_discovery_messages_total", &["direction=\"forward\""], 1) >= 1, "{a}");
        assert!(counted(&net, a, "aviary_glwp_discovery_messages_total", &["direction=\"backward\""], 1) >= 1, "{a}");
    }

    // F3: a second discovery of the same path gives the same AID and β.
    let o = discover(&net, &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again: GlwpAllocationWire = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((again.aid.as_str(), again.beta_kbps), (alloc.aid.as_str(), alloc.beta_kbps));
    assert!(again.hops.iter().all(|h| h.hop_key.is_none()), "--json prints no hop keys");

    // A minimum above the guarantee fails, naming the AS where the guarantee falls below it.
    let prelim = prefix_guarantees(&hop_values);
    let at = prelim.iter().position(|&p| p < g + 1).unwrap();
    let o = discover(&net, &["--min-bps", &(g + 1).to_string()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains(PATH_ASES[at]) && stderr.contains("below"), "{stderr}");

    // Garbage is dropped as what it is; a well-formed message from an address that is no
    // peer's GLWP service is dropped before any processing.
    let target: SocketAddr = net.layout.ases[&ia(PATH_ASES[1])].control.glwp.as_ref().unwrap().listen.unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let truncated =
        sample(&metrics(&net, PATH_ASES[1]), "aviary_glwp_discovery_drops_total", &["reason=\"truncated\""]);
    // Three bytes: shorter than any message.
    stranger.send_to(b"abc", target).unwrap();
    assert!(
        counted(&net, PATH_ASES[1], "aviary_glwp_discovery_drops_total", &["reason=\"truncated\""], truncated + 1)
            > truncated
    );
    let request = MessageRepr {
        kind: Kind::Request,
        hop_pointer: 1,
        ts_pkt: now_ns(),
        aid: 1,
        ases: vec![ia(PATH_ASES[0]), ia(PATH_ASES[1])],
        path: vec![(0, 1), (1, 0)],
        auths: vec![[0; 16]; 2],
        hop_values: vec![Announced::default(); 2],
        sealed: vec![[0; 16]; 1],
    }
    .to_bytes()
    .unwrap();
    stranger.send_to(&request, target).unwrap();
    assert!(counted(&net, PATH_ASES[1], "aviary_glwp_transport_drops_total", &["reason=\"unknown_sender\""], 1) >= 1);

    // One host cannot spend its AS's discovery budget alone: past its burst (20) its requests
    // are refused with 429 and Retry-After, before their bodies are read, and counted; at its
    // rate (10 a second) it is served again.
    let control = net.layout.ases[&ia(PATH_ASES[0])].control.listen;
    let post = || match ureq::post(&format!("http://{control}/v1/glwp/discover")).send_string("not json") {
        Err(ureq::Error::Status(code, r)) => (code, r.header("Retry-After").map(str::to_string)),
        other => panic!("a body that is not JSON is refused: {other:?}"),
    };
    let replies: Vec<_> = (0..40).map(|_| post()).collect();
    let limited = replies.iter().filter(|(code, _)| *code == 429).count();
    assert!((15..=25).contains(&limited), "{limited} of 40 refused for the rate: {replies:?}");
    assert!(replies.iter().all(|r| *r == (400, None) || *r == (429, Some("1".into()))), "{replies:?}");
    assert!(counted(&net, PATH_ASES[0], "aviary_glwp_host_discoveries_rate_limited_total", &[], 15) >= 15);
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(post(), (400, None), "a token is back after a tenth of a second");
}

/// An on-path AS whose threshold τ is above the preliminary guarantee at it refuses: the
/// refusal goes from it straight to the source's service, which believes it (its hop values
/// are authentic) and names it.
#[test]
fn an_as_refuses_below_its_threshold() {
    let dir = aviary_scratch::ScratchDir::new("it-glwp-refuse");
    let topo = Topology::load(&topology_file()).unwrap();
    let path = [(0, 1), (1, 2), (2, 1), (1, 0)];
    let hop_values: Vec<HopValues> =
        PATH_ASES.iter().zip(path).map(|(a, p)| configured_hop_values(&topo, ia(a), p)).collect();
    let tau = prefix_guarantees(&hop_values)[2] + 1;
    let text = std::fs::read_to_string(topology_file()).unwrap();
    let at_210 = "ia = \"2-ff00:0:210\"\ncore = true\n[as.glwp]\n";
    assert!(text.contains(at_210));
    let strict = text.replace(at_210, &format!("{at_210}min_guarantee_bps = {tau}\n"));
    let file = dir.join("glwp-strict.toml");
    std::fs::write(&file, strict).unwrap();
    let net = Network::start(&exe(), RunLayout::write(&file, &dir.join("run"), PORT_BASE + 200).unwrap()).unwrap();
    let o = settled_discovery(&net, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("2-ff00:0:210 (position 2 of the path) refused"), "{stderr}");
    assert!(counted(&net, PATH_ASES[2], "aviary_glwp_discovery_outcomes_total", &["outcome=\"refused\""], 1) >= 1);
    assert!(counted(&net, PATH_ASES[0], "aviary_glwp_refusals_received_total", &[PATH_ASES[0]], 1) >= 1);
}
