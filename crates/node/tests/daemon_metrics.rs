//! Every daemon's `/metrics`, fetched over real HTTP after some activity: the counters have the
//! values the activity implies, and the text is valid exposition format.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use aviary_node::api::{self, ReservationRequest};
use aviary_node::clock::unix_s;
use aviary_node::config::ControlConfig;
use aviary_node::control::ControlService;
use aviary_node::runner::RunLayout;

/// Checks `text` against the text format and returns its samples, `name{labels}` -> value.
/// Every sample line is `name{labels} value` with valid names and quoted, escaped label
/// values; every sample belongs to a family whose TYPE came before it (histogram samples by
/// their `_bucket`, `_sum` and `_count` suffixes); no family is declared twice.
fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    let metric_name = |n: &str| {
        let mut c = n.chars();
        c.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let label_name = |n: &str| {
        let mut c = n.chars();
        c.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("bad TYPE line: {line}"));
            assert!(metric_name(name), "bad metric name in {line}");
            assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind), "{line}");
            assert!(types.insert(name.to_owned(), kind.to_owned()).is_none(), "TYPE twice: {line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(metric_name(rest.split(' ').next().unwrap()), "bad HELP line: {line}");
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "unexpected line: {line:?}");
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("no value: {line}"));
        let name = &line[..name_end];
        assert!(metric_name(name), "bad metric name in {line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| name.strip_suffix(s))
            .find(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            .unwrap_or(name);
        assert!(types.contains_key(family), "sample before its TYPE: {line}");
        let mut rest = &line[name_end..];
        if let Some(labels) = rest.strip_prefix('{') {
            // name="value" pairs, values with \\, \" and \n escapes.
            let mut chars = labels.char_indices().peekable();
            loop {
                let start = chars.peek().unwrap().0;
                let eq = labels[start..].find('=').unwrap_or_else(|| panic!("bad labels: {line}")) + start;
                assert!(label_name(&labels[start..eq]), "bad label name in {line}");
                assert_eq!(&labels[eq + 1..eq + 2], "\"", "unquoted label value: {line}");
                while chars.peek().unwrap().0 <= eq + 1 {
                    chars.next();
                }
                loop {
                    match chars.next().unwrap_or_else(|| panic!("unterminated label value: {line}")).1 {
                        '\\' => assert!(matches!(chars.next().map(|c| c.1), Some('\\' | '"' | 'n')), "{line}"),
                        '"' => break,
                        '\n' => panic!("raw line feed: {line}"),
                        _ => {}
                    }
                }
                match chars.next().unwrap_or_else(|| panic!("unterminated labels: {line}")) {
                    (_, ',') => continue,
                    (i, '}') => {
                        rest = &labels[i + 1..];
                        break;
                    }
                    (_, c) => panic!("unexpected {c:?} in {line}"),
                }
            }
        }
        let value = rest.strip_prefix(' ').unwrap_or_else(|| panic!("no space before the value: {line}"));
        let v = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse::<f64>().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        samples.insert(line[..line.len() - value.len() - 1].to_owned(), v);
    }
    samples
}

fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let resp = ureq::get(&format!("http://{addr}/metrics")).call().unwrap();
    assert!(resp.header("Content-Type").unwrap().starts_with("text/plain"));
    parse_exposition(&resp.into_string().unwrap())
}

/// The value of a sample, 0 if it is absent.
fn value(samples: &BTreeMap<String, f64>, key: &str) -> f64 {
    samples.get(key).copied().unwrap_or(0.0)
}

fn sum(samples: &BTreeMap<String, f64>, prefix: &str) -> f64 {
    samples.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum()
}

/// `N` distinct local addresses that no socket holds now; the listeners are held until all are
/// bound, so that no two addresses are the same.
fn free_tcp_addrs<const N: usize>() -> [SocketAddr; N] {
    let held: [TcpListener; N] = std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").unwrap());
    held.map(|l| l.local_addr().unwrap())
}

#[test]
fn the_checker_refuses_what_the_format_does_not_allow() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\\n\",y=\"\"} 3\n";
    assert_eq!(parse_exposition(ok)["a_total{x=\"q\\\"\\n\",y=\"\"}"], 3.0);
    for bad in [
        "a_total 1\n",                               // no TYPE
        "# TYPE a counter\na{x=1} 1\n",              // unquoted
        "# TYPE a counter\na{x=\"1\"}1\n",           // no space
        "# TYPE a counter\n1a 1\n",                  // bad name
        "# TYPE a counter\na{x=\"\\q\"} 1\n",        // bad escape
        "# TYPE a counter\na x\n",                   // bad value
        "# TYPE a counter\n# TYPE a counter\na 1\n", // declared twice
        "# TYPE a counter\na_bucket{le=\"1\"} 1\n",  // only histograms have buckets
    ] {
        assert!(std::panic::catch_unwind(|| parse_exposition(bad)).is_err(), "accepted: {bad:?}");
    }
}

#[test]
fn control_service_counts_lookups_extensions_and_grants() {
    let dir = aviary_scratch::ScratchDir::new("metrics-ctl");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
    let layout = RunLayout::write(&topo, &dir, 41000).unwrap();
    for a in layout.ases.values() {
        let cfg_path = a.dir.join("control.toml");
        let cfg = ControlConfig::load(&cfg_path).unwrap();
        let svc = ControlService::from_config(&cfg, &cfg_path).unwrap();
        thread::spawn(move || svc.serve(cfg.listen));
    }
    let at = |ia: &str| &layout.ases[&ia.parse().unwrap()];
    let (a, c, e) = (at("1-ff00:0:111"), at("1-ff00:0:110"), at("1-ff00:0:121"));
    let mut tries = 0;
    while ureq::get(&format!("http://{}/v1/status", a.control.listen)).call().is_err() {
        tries += 1;
        assert!(tries < 100, "control service did not come up");
        thread::sleep(Duration::from_millis(20));
    }

    // One path lookup from A to E: A asks C, B, D and E for their hop fields.
    let paths = api::fetch_paths(a.control.listen, e.ia).unwrap();
    assert!(!paths.is_empty());
    // At C: one grant, one refused for an unknown interface, one with a wrong token.
    let token = c.operator_token().unwrap();
    let req = |egress| ReservationRequest {
        ingress: 1,
        egress,
        bandwidth_bps: 1_000_000,
        start: unix_s() as u32,
        duration: 60,
    };
    api::request_reservation(c.control.listen, &token, &req(2)).unwrap();
    assert!(api::request_reservation(c.control.listen, &token, &req(7)).is_err());
    assert!(api::request_reservation(c.control.listen, "wrong", &req(2)).is_err());

    let ia = |x: &aviary_node::runner::AsRun| format!("ia=\"{}\"", x.ia);
    let m = scrape(a.control.listen);
    let la = ia(a);
    assert_eq!(value(&m, &format!("aviary_control_path_lookups_total{{{la},result=\"ok\"}}")), 1.0, "{m:#?}");
    assert_eq!(value(&m, &format!("aviary_control_requests_total{{{la},endpoint=\"/v1/paths\",code=\"200\"}}")), 1.0);
    for peer in ["1-ff00:0:110", "1-ff00:0:112", "1-ff00:0:120", "1-ff00:0:121"] {
        let key = format!("aviary_control_segment_extensions_requested_total{{{la},peer=\"{peer}\",result=\"ok\"}}");
        assert!(value(&m, &key) >= 1.0, "{key}: {m:#?}");
    }
    assert_eq!(sum(&m, "aviary_control_errors_total"), 0.0);
    assert!(value(&m, &format!("aviary_control_start_time_seconds{{{la}}}")) > 1.7e9);

    let m = scrape(c.control.listen);
    let lc = ia(c);
    assert_eq!(value(&m, &format!("aviary_control_reservations_granted_total{{{lc}}}")), 1.0, "{m:#?}");
    let refused = |r: &str| value(&m, &format!("aviary_control_reservations_refused_total{{{lc},reason=\"{r}\"}}"));
    assert_eq!((refused("unknown_interface"), refused("unauthorised")), (1.0, 1.0));
    assert_eq!(sum(&m, "aviary_control_reservations_refused_total"), 2.0);
    assert_eq!(value(&m, &format!("aviary_control_resid_store_reservations{{{lc},ingress=\"1\"}}")), 1.0);
    assert_eq!(value(&m, &format!("aviary_control_resid_store_reservations{{{lc},ingress=\"2\"}}")), 0.0);
    let codes = |code: &str| {
        value(&m, &format!("aviary_control_requests_total{{{lc},endpoint=\"/v1/reservations\",code=\"{code}\"}}"))
    };
    assert_eq!((codes("200"), codes("400"), codes("401")), (1.0, 1.0, 1.0));
    assert!(value(&m, &format!("aviary_control_segment_extensions_served_total{{{lc},result=\"ok\"}}")) >= 1.0);
    // The scrape itself shows up from the second one on.
    let again = scrape(c.control.listen);
    assert_eq!(
        value(&again, &format!("aviary_control_requests_total{{{lc},endpoint=\"/metrics\",code=\"200\"}}")),
        1.0
    );
}

#[test]
fn as_service_counts_registrations_and_listings() {
    use aviary_node::as_service::{self, AsService, AsServiceConfig};
    let dir = aviary_scratch::ScratchDir::new("metrics-as");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
    let mut layout = RunLayout::write(&topo, &dir, 41100).unwrap();
    layout.enable_market().unwrap();
    let core = &layout.ases[&"1-ff00:0:110".parse().unwrap()];
    let cfg_path = &layout.market.as_ref().unwrap().as_services[&core.ia];
    let cfg = AsServiceConfig::load(cfg_path).unwrap();
    // The runner gives every AS service a metrics address in its AS's block, and lists it.
    assert_eq!(cfg.metrics, Some(core.as_service_metrics));
    assert_eq!(core.as_service_metrics.port(), core.control.listen.port() + 2);
    let targets: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("metrics-targets.json")).unwrap()).unwrap();
    let listed = |role: &str, addr: SocketAddr| {
        targets.as_array().unwrap().iter().any(|t| {
            t["labels"]["role"] == role
                && t["labels"]["ia"] == core.ia.to_string()
                && t["targets"][0] == addr.to_string()
        })
    };
    assert!(listed("as-service", core.as_service_metrics) && listed("router", core.router.management));
    assert!(listed("control", core.control.listen));

    let offers = cfg.offers.iter().map(|o| o.periods_ahead).sum::<u64>() as f64;
    let mut svc = AsService::new(cfg, cfg_path).unwrap();
    let [addr] = free_tcp_addrs();
    let server = as_service::metrics::serve(addr, svc.stats()).unwrap();
    let before = scrape(server.addr());
    let ia = format!("ia=\"{}\"", core.ia);
    assert_eq!(value(&before, &format!("aviary_as_service_registered{{{ia}}}")), 0.0);
    svc.register().unwrap();
    svc.poll(unix_s());
    let m = scrape(server.addr());
    for step in ["registry", "seller"] {
        assert_eq!(value(&m, &format!("aviary_as_service_registrations_total{{{ia},step=\"{step}\"}}")), 1.0);
    }
    assert_eq!(value(&m, &format!("aviary_as_service_registered{{{ia}}}")), 1.0);
    assert_eq!(value(&m, &format!("aviary_as_service_listings_issued_total{{{ia}}}")), offers, "{m:#?}");
    assert_eq!(value(&m, &format!("aviary_as_service_redeem_requests_seen_total{{{ia}}}")), 0.0);
    assert_eq!(sum(&m, "aviary_as_service_errors_total"), 0.0);
    assert!(value(&m, &format!("aviary_as_service_last_poll_time_seconds{{{ia}}}")) >= unix_s() as f64 - 5.0);
    assert!(value(&m, &format!("aviary_as_service_last_block_timestamp_seconds{{{ia}}}")) > 1.7e9);
    // A second poll issues nothing new; the status JSON says the same as the text.
    svc.poll(unix_s());
    let status: serde_json::Value =
        ureq::get(&format!("http://{}/v1/status", server.addr())).call().unwrap().into_json().unwrap();
    assert_eq!(status["listings_issued"].as_f64(), Some(offers));
    assert_eq!(status["ia"], core.ia.to_string());
    drop(server);
}

/// A fake control service that answers every request with `paths`.
fn control_service(paths: Vec<aviary_node::api::PathWire>) -> SocketAddr {
    let body = serde_json::to_string(&aviary_node::api::PathsReply { paths }).unwrap();
    let answer = move |_: &aviary_node::http::Request, _: &aviary_node::http::server::ServerStats| {
        aviary_node::http::Response::json(200, body.clone())
    };
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = aviary_node::http::server::Server::http("control", any, Default::default(), Arc::new(answer)).unwrap();
    let addr = server.addr();
    // Serves for the rest of the test process.
    std::mem::forget(server);
    addr
}

#[derive(clap::Parser)]
struct SendCli {
    #[command(flatten)]
    opts: aviary_node::host::SendOptions,
}

#[test]
fn sender_and_sink_show_their_flow_while_they_run() {
    use aviary_hummingbird::as_hops;
    use aviary_hummingbird::testbed::Chain;
    use aviary_node::config::HostConfig;
    use aviary_node::host::{run_sender, run_sink, SinkOptions};
    use clap::Parser;

    let chain = Chain::new(2, unix_s() as u32 - 60);
    let ases = as_hops(&chain.path)
        .iter()
        .zip(&chain.ases)
        .map(|(h, a)| aviary_node::routes::AsOnRoute { ia: a.ia, ingress: h.ingress, egress: h.egress })
        .collect();
    let path = aviary_node::api::PathWire {
        ases,
        path: hex::encode(chain.path.to_bytes().unwrap()),
        expiry: u64::from(u32::MAX),
        sigmas: Vec::new(),
    };
    let sink_port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sink_addr: SocketAddr = format!("127.0.0.1:{sink_port}").parse().unwrap();
    let host = |name: &str, ia| HostConfig {
        name: name.into(),
        ia,
        addr: "127.0.0.1".parse().unwrap(),
        // No router: the sender's packets go straight to the sink.
        router: sink_addr,
        control: control_service(vec![path.clone()]),
        zlane_gateway: None,
    };
    let [sink_metrics, send_metrics] = free_tcp_addrs();
    let sink_cfg = host("sink", chain.dst_ia());
    let opts = SinkOptions {
        listen_port: sink_port,
        duration_ms: Some(3000),
        report: None,
        bin_ms: 100,
        metrics: Some(sink_metrics),
    };
    let sink = thread::spawn(move || run_sink(&sink_cfg, &opts).unwrap());
    thread::sleep(Duration::from_millis(200));

    // 500-byte packets at 400 kbit/s for one second: 100 packets.
    let dst = format!("{},127.0.0.1:{sink_port}", chain.dst_ia());
    let send_cfg = host("source", chain.src_ia());
    let metrics = send_metrics.to_string();
    let args =
        ["send", "--dst", &dst, "--flow", "m1", "--rate-bps", "400000", "--size", "500", "--duration-ms", "1000"];
    let opts = SendCli::parse_from(args.iter().chain(&["--metrics", metrics.as_str()])).opts;
    let sender = thread::spawn(move || run_sender(&send_cfg, &opts).unwrap());
    thread::sleep(Duration::from_millis(500));
    let mid = scrape(send_metrics);
    let l = "host=\"source\",flow=\"m1\",kind=\"best_effort\"";
    let sent_mid = value(&mid, &format!("aviary_host_sent_packets_total{{{l}}}"));
    let sent = sender.join().unwrap();
    assert!(sent_mid > 0.0 && sent_mid <= sent.sent_packets as f64, "{sent_mid} of {sent:?}");
    assert!(sent.sent_packets >= 50, "{sent:?}");
    assert!(ureq::get(&format!("http://{send_metrics}/metrics")).call().is_err(), "the endpoint ends with the flow");

    thread::sleep(Duration::from_millis(200));
    let m = scrape(sink_metrics);
    let l = "host=\"sink\",flow=\"m1\"";
    let n = sent.sent_packets as f64;
    assert_eq!(value(&m, &format!("aviary_host_received_packets_total{{{l}}}")), n, "{m:#?}");
    assert_eq!(value(&m, &format!("aviary_host_received_bytes_total{{{l}}}")), n * 500.0);
    assert_eq!(value(&m, &format!("aviary_host_one_way_delay_seconds_count{{{l}}}")), n);
    assert_eq!(value(&m, &format!("aviary_host_one_way_delay_seconds_bucket{{{l},le=\"+Inf\"}}")), n);
    assert!(value(&m, &format!("aviary_host_one_way_delay_seconds_bucket{{{l},le=\"1\"}}")) >= n * 0.9);
    assert_eq!(value(&m, &format!("aviary_host_lost_packets{{{l}}}")), 0.0);
    assert_eq!(value(&m, "aviary_host_malformed_datagrams_total{host=\"sink\"}"), 0.0);
    let report = sink.join().unwrap();
    assert_eq!(report.flows["m1"].received_packets, sent.sent_packets);
}
