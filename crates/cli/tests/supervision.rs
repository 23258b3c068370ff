//! Supervision as an operator sees it: a process that cannot start is retried with a growing
//! wait, never silently dropped; the run's health endpoint says 503 and names it until it is
//! back; a policy with a limit gives it up visibly.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aviary_node::runner::{Network, RestartPolicy, Role, RunLayout};

fn topology() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml")
}

fn start(name: &str, port_base: u16, policy: RestartPolicy) -> Network {
    let dir = std::env::temp_dir().join(format!("aviary-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let layout = RunLayout::write(&topology(), &dir, port_base).unwrap();
    Network::start_with(Path::new(env!("CARGO_BIN_EXE_aviary")), layout, policy).unwrap()
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
    let net = start("supervise", 36000, policy);
    let health = "127.0.0.1:35999".parse().unwrap();
    let _server = net.serve_health(health).unwrap();
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
    let net = start("give-up", 37000, policy);
    let core = "1-ff00:0:110".parse().unwrap();
    std::fs::write(net.layout.ases[&core].dir.join("control.toml"), "junk\n").unwrap();
    kill(net.pid(core, Role::Control).unwrap());
    wait_for("the control service given up", Duration::from_secs(10), || {
        net.health().processes.iter().any(|p| p.role == "control" && p.ia == core && p.state == "given_up")
    });
    assert!(!net.health().healthy);
    let log = std::fs::read_to_string(net.layout.dir.join("logs/supervisor.log")).unwrap();
    assert!(log.contains("control 1-ff00:0:110") && log.contains("GIVING UP after 2 failures in a row"), "{log}");
}
