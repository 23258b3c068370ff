//! Supervision as an operator sees it: a process that cannot start is retried with a growing
//! wait, never silently dropped; the run's health endpoint says 503 and names it until it is
//! back; a policy with a limit gives it up visibly.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, ProcessState, RestartPolicy, Role, RunLayout};
use aviary_scratch::ScratchDir;

fn topology() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml")
}

/// line5 in a directory of its own; the directory first, so that it goes last.
fn start(name: &str, port_base: u16, policy: RestartPolicy) -> (ScratchDir, Network) {
    let dir = ScratchDir::new(&format!("it-{name}"));
    let layout = RunLayout::write(&topology(), &dir, port_base).unwrap();
    let net = Network::start_with(Path::new(env!("CARGO_BIN_EXE_aviary")), layout, policy).unwrap();
    (dir, net)
}

fn status(addr: std::net::SocketAddr) -> (u16, serde_json::Value) {
    let r = match ureq::get(&format!("http://{addr}/v1/status")).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("health endpoint: {e}"),
    };
    (r.status(), r.into_json().unwrap())
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < timeout, "{what} within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill(pid: u32) {
    // SAFETY: kill(2) on a child process of this test's network.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
}

#[test]
fn a_router_that_cannot_start_is_retried_with_backoff_and_reported_until_it_is_back() {
    let policy = RestartPolicy { first_backoff: Duration::from_millis(100), ..Default::default() };
    let (_dir, net) = start("supervise", 45000, policy);
    // A port of the kernel's choosing: a fixed one in its ephemeral range (32768-60999) can be
    // held for a minute by the TIME_WAIT of a client connection that used it.
    let server = net.serve_health("127.0.0.1:0".parse().unwrap()).unwrap();
    let health = server.addr();
    assert_eq!(status(health).0, 200);

    let core = "1-ff00:0:110".parse().unwrap();
    let cfg = net.layout.ases[&core].dir.join("router.toml");
    let good = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, "this is not a router config\n").unwrap();
    kill(net.pid(core, Role::Router).unwrap());

    // Failing again and again: restarting, never given up, 503 naming it.
    let router = |h: &serde_json::Value| {
        h["processes"].as_array().unwrap().iter().find(|p| p["role"] == "router" && p["ia"] == "1-ff00:0:110").cloned()
    };
    wait_for("four failures in a row", Duration::from_secs(10), || {
        router(&status(health).1).unwrap()["failures_in_a_row"].as_u64().unwrap() >= 4
    });
    let (code, h) = status(health);
    assert_eq!((code, h["healthy"].as_bool()), (503, Some(false)));
    let r = router(&h).unwrap();
    assert!(matches!(r["state"].as_str(), Some("restarting" | "running")), "{r}");
    assert!(r["last_exit"].as_str().unwrap().contains("exit status"), "{r}");
    let log = std::fs::read_to_string(net.layout.dir.join("logs/supervisor.log")).unwrap();
    assert!(log.contains("failures in a row") && log.contains("restarting in 800"), "{log}");
    assert!(!log.contains("GIVING UP"), "{log}");

    // Repaired, it comes back and the run is healthy again.
    std::fs::write(&cfg, good).unwrap();
    wait_for("the router back", Duration::from_secs(40), || status(health).0 == 200);
    assert_eq!(router(&status(health).1).unwrap()["state"], "running");
}

#[test]
fn a_policy_with_a_limit_gives_up_visibly() {
    let policy =
        RestartPolicy { first_backoff: Duration::from_millis(50), give_up_after: Some(2), ..Default::default() };
    let (_dir, net) = start("give-up", 46000, policy);
    let core = "1-ff00:0:110".parse().unwrap();
    std::fs::write(net.layout.ases[&core].dir.join("control.toml"), "junk\n").unwrap();
    kill(net.pid(core, Role::Control).unwrap());
    wait_for("the control service given up", Duration::from_secs(10), || {
        net.health().processes.iter().any(|p| p.role == "control" && p.ia == core && p.state == ProcessState::GivenUp)
    });
    assert!(!net.health().healthy);
    let log = std::fs::read_to_string(net.layout.dir.join("logs/supervisor.log")).unwrap();
    assert!(log.contains("control 1-ff00:0:110") && log.contains("GIVING UP after 2 failures in a row"), "{log}");
}

#[test]
fn runtime_changes_survive_a_router_restart() {
    let (_dir, net) =
        start("runtime", 47000, RestartPolicy { first_backoff: Duration::from_millis(50), ..Default::default() });
    let core = "1-ff00:0:110".parse().unwrap();
    let a = &net.layout.ases[&core];
    let mgmt = a.router.management;
    let bearer = format!("Bearer {}", a.operator_token().unwrap());
    let put = |path: &str, body: &str| {
        ureq::put(&format!("http://{mgmt}{path}")).set("Authorization", &bearer).send_string(body).unwrap()
    };
    put("/v1/interfaces/2", r#"{"capacity_bps": 3000000}"#);
    put("/v1/interfaces/2", r#"{"delay_ms": 7.5}"#);
    put("/v1/mechanisms/hummingbird", r#"{"burst_ms": 25}"#);
    let secret = "42".repeat(32);
    put("/v1/keys", &format!(r#"{{"master_secret": "{secret}"}}"#));

    let pid = net.pid(core, Role::Router).unwrap();
    kill(pid);
    wait_for("the router back", Duration::from_secs(10), || {
        net.pid(core, Role::Router).is_some_and(|p| p != pid)
            && ureq::get(&format!("http://{mgmt}/v1/status")).call().is_ok()
    });
    let s: serde_json::Value = ureq::get(&format!("http://{mgmt}/v1/status")).call().unwrap().into_json().unwrap();
    let iface = s["interfaces"].as_array().unwrap().iter().find(|i| i["id"] == 2).unwrap().clone();
    assert_eq!((iface["capacity_bps"].as_u64(), iface["delay_ms"].as_f64()), (Some(3_000_000), Some(7.5)), "{iface}");
    assert_eq!(s["burst_ms"].as_f64(), Some(25.0), "{s}");
    let kept = std::fs::read_to_string(a.dir.join(&a.router.master_secret_file)).unwrap();
    assert_eq!(kept.trim(), secret);
    // A state file the router cannot use stops it with the file and field named, not silently.
    let state = a.dir.join("router.toml.runtime.json");
    assert!(state.exists());
    std::fs::write(&state, r#"{"links": {"2": {"capacity": 1}}}"#).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aviary"))
        .args(["router", "--config"])
        .arg(a.dir.join("router.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("router.toml.runtime.json") && err.contains("capacity"), "{err}");
}
