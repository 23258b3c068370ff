//! What the tests of a master secret rotation on the emulated network share: the operator's
//! `PUT /v1/keys` on a router, and restarts of an AS's processes under the run's supervisor.

use std::time::{Duration, Instant};

use aviary_node::runner::{Network, Role};
use aviary_scion::IsdAsn;

/// `PUT /v1/keys` on the router of `ia`: the new master secret (hex) and the overlap; the
/// status and body of a refusal.
pub fn put_keys(net: &Network, ia: IsdAsn, secret: &str, overlap_secs: u64) -> Result<(), (u16, String)> {
    let a = &net.layout.ases[&ia];
    let body = serde_json::json!({ "master_secret": secret, "overlap_secs": overlap_secs });
    let bearer = format!("Bearer {}", a.operator_token().unwrap());
    match ureq::put(&format!("http://{}/v1/keys", a.router.management)).set("Authorization", &bearer).send_json(body) {
        Ok(_) => Ok(()),
        Err(ureq::Error::Status(code, r)) => Err((code, r.into_string().unwrap())),
        Err(e) => panic!("{e}"),
    }
}

/// Kills the `role` processes of the ASes `ases`, all before the first is back, and waits until
/// the supervisor has started each again (not until it answers).
pub fn restart(net: &Network, ases: &[IsdAsn], role: Role) {
    let old: Vec<u32> = ases.iter().map(|&ia| net.pid(ia, role).unwrap()).collect();
    for pid in &old {
        // SAFETY: kill(2) on a child process of this test's network, which restarts it.
        assert_eq!(unsafe { libc::kill(*pid as i32, libc::SIGKILL) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for (&ia, old) in ases.iter().zip(old) {
        while net.pid(ia, role).is_none_or(|p| p == old) {
            assert!(Instant::now() < deadline, "{ia}'s {role:?} was not restarted");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
