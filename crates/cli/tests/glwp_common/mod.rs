//! What the GLWP tests on the emulated network share: the topology testdata/topologies/glwp.toml,
//! the CLI's discovery from h111 to 2-ff00:0:211, and the control services' metrics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use aviary_glwp::HopValues;
use aviary_node::runner::Network;
use aviary_node::topology::Topology;
use aviary_scion::IsdAsn;

pub use crate::prometheus_text::sample;

/// The ASes of the path from h111 to h211.
pub const PATH_ASES: [&str; 4] = ["1-ff00:0:111", "1-ff00:0:110", "2-ff00:0:210", "2-ff00:0:211"];

pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_aviary"))
}

pub fn topology_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/glwp.toml")
}

pub fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

pub fn discover(net: &Network, extra: &[&str]) -> Output {
    Command::new(exe())
        .args(["glwp", "discover", "--host"])
        .arg(net.layout.host_config_path("h111"))
        .args(["--dst", "2-ff00:0:211"])
        .args(extra)
        .output()
        .unwrap()
}

/// A discovery once the services are up (the source's, just started or restarted, may still
/// refuse connections), have fetched each other's keys and heard each other's announcements:
/// until then the messages are dropped as `no_key` or `not_announced` and the CLI reports a
/// timeout, so a refused connection and a timeout are tried again, for at most a minute, after
/// which the test fails with what each on-path service dropped.
pub fn settled_discovery(net: &Network, extra: &[&str]) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = discover(net, extra);
        // Until every service has fetched the others' Level-1 keys, a request goes unanswered
        // (an on-path AS drops it as `no_key`) or its answer cannot be checked yet at the source
        // (a refusal from an AS whose key the source is still fetching); likewise until the
        // neighbours' announcements are in (re-sent every second).
        let stderr = String::from_utf8_lossy(&o.stderr);
        let starting = stderr.to_lowercase().contains("connection refused");
        let keys_pending = stderr.contains("no answer after")
            || stderr.contains("rejected: no_key")
            || stderr.contains("rejected: not_announced");
        if !(starting || keys_pending) {
            return o;
        }
        if Instant::now() > deadline {
            panic!("no discovery succeeded within a minute; the CLI said:\n{stderr}\n{}", drops_on_path(net));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// What the on-path services dropped and which key fetches failed, for a failure's message: a
/// discovery that never gets through is otherwise only "no answer" at the source.
fn drops_on_path(net: &Network) -> String {
    let mut report = String::new();
    for ia_text in PATH_ASES {
        report.push_str(&format!("{ia_text}:\n"));
        for line in metrics(net, ia_text).lines().filter(|l| {
            l.starts_with("aviary_glwp_discovery_drops_total")
                || l.starts_with("aviary_glwp_transport_drops_total")
                || l.starts_with("aviary_glwp_key_fetch_errors_total")
        }) {
            report.push_str(&format!("  {line}\n"));
        }
    }
    report
}

pub fn metrics(net: &Network, ia_text: &str) -> String {
    let addr = net.layout.ases[&ia(ia_text)].control.listen;
    ureq::get(&format!("http://{addr}/metrics")).call().unwrap().into_string().unwrap()
}

/// Waits until `name{labels}` at `ia` reaches `at_least`; its value.
pub fn counted(net: &Network, ia_text: &str, name: &str, labels: &[&str], at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = sample(&metrics(net, ia_text), name, labels);
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The hop values of AS `ia` for pair `(i, j)` from the topology file, as configured.
pub fn configured_hop_values(topo: &Topology, ia: IsdAsn, (i, j): (u16, u16)) -> HopValues {
    let a = topo.as_entry(ia).unwrap();
    let links: Vec<u16> = topo.links_of(ia).map(|(l, ..)| l.ifid).collect();
    let plan = a.glwp.as_ref().unwrap().plan("glwp.toml", "glwp", &links).unwrap();
    plan.matrix.hop_values(i, j)
}

pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}
