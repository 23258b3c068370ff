//! A key rotation through the router's command path: keys swapped in place, the rotation kept
//! on disk, both keys back after a restart within the overlap (GLWP's `K_k` too), the previous
//! secret gone after it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_qos::{Context, DropReason, Verdict};
use aviary_scratch::ScratchDir;

use super::management::Command;
use super::runtime_state::{state_file, KeyRotation, RuntimeState};
use super::{start, Forwarder};
use crate::clock::unix_ns;
use crate::config::RouterConfig;
use crate::secret_rotation::{drkey_needs_previous_until_ns, previous_secret_file, rotated_at_file};

const S: u64 = 1_000_000_000;

/// A router for AS 0 of `Chain` in a directory of its own, under the chain's old secret: the
/// directory, the config's path and the config.
fn router_dir(name: &str, chains: &[Chain; 2]) -> (ScratchDir, PathBuf, RouterConfig) {
    router_dir_with(name, chains, "")
}

/// The same with `extra` at the end of its config.
fn router_dir_with(name: &str, chains: &[Chain; 2], extra: &str) -> (ScratchDir, PathBuf, RouterConfig) {
    let dir = ScratchDir::new(&format!("rotation-{name}"));
    std::fs::write(dir.join("secret.hex"), hex::encode(chains[0].ases[0].master_secret)).unwrap();
    let toml = format!(
        r#"ia = "{}"
master_secret_file = "secret.hex"
internal = "127.0.0.1:0"
management = "127.0.0.1:0"
workers = 1

[[interface]]
id = {IF_NEXT}
local = "127.0.0.1:0"
remote = "127.0.0.1:9"
neighbor = "{}"
capacity_bps = 1000000
{extra}"#,
        chains[0].ases[0].ia, chains[0].ases[1].ia
    );
    let path = dir.join("router.toml");
    std::fs::write(&path, toml).unwrap();
    let cfg = RouterConfig::load(&path).unwrap();
    (dir, path, cfg)
}

/// The chain's ASes under the old and under the new secret, hop fields a minute old.
fn generations() -> [Chain; 2] {
    let ts = (unix_ns() / S) as u32 - 60;
    [Chain::with_key_generation(2, ts, 0), Chain::with_key_generation(2, ts, 1)]
}

/// The verdict of the router on a standard packet of each generation, from inside the AS.
fn verdicts(fwd: &mut Forwarder, chains: &[Chain; 2]) -> [Verdict; 2] {
    chains.each_ref().map(|c| {
        let mut pkt = c.standard_packet(50);
        let mut v = [Verdict::Deliver];
        let mut ctx = Context { now_ns: unix_ns(), ingress: 0, links: &fwd.link_states, random: &mut fwd.random };
        fwd.pipeline.process_batch(&mut ctx, &mut [&mut pkt[..]], &mut v);
        v[0]
    })
}

/// The router's only worker (the configs here ask for one).
fn forwarder(cfg: &RouterConfig, cfg_path: &Path) -> anyhow::Result<Forwarder> {
    start(cfg, cfg_path).map(|(mut w, _, _)| w.remove(0))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_rotation_keeps_both_keys_across_a_restart_within_the_overlap_and_forgets_the_old_one_after() {
    let chains = generations();
    let (_dir, cfg_path, cfg) = router_dir("restart", &chains);
    let forwarded = Verdict::unauthenticated(IF_NEXT);
    let bad_mac = Verdict::Drop(DropReason::BadMac);

    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [forwarded, bad_mac]);
    let new_secret = chains[1].ases[0].master_secret.to_vec();
    let until = unix_ns() + 3600 * S;
    let at = unix_ns() / S;
    let rotation = Command::MasterSecret { secret: new_secret.clone(), previous_until_ns: until, rotated_at_s: at };
    fwd.apply_and_keep(rotation).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [forwarded, forwarded]);
    // On disk: the new secret where every process of the AS reads it, the previous one beside
    // it, both private, and the deadline in the runtime state.
    let previous = previous_secret_file(&cfg.master_secret_file);
    assert_eq!(std::fs::read_to_string(&cfg.master_secret_file).unwrap().trim(), hex::encode(&new_secret));
    assert_eq!(std::fs::read_to_string(&previous).unwrap().trim(), hex::encode(chains[0].ases[0].master_secret));
    assert_eq!(std::fs::read_to_string(rotated_at_file(&cfg.master_secret_file)).unwrap().trim(), at.to_string());
    assert_eq!((mode(&cfg.master_secret_file), mode(&previous)), (0o600, 0o600));
    let runtime_file = state_file(&cfg_path);
    let kept = Some(KeyRotation { previous_until_ns: until, rotated_at_s: Some(at) });
    assert_eq!(RuntimeState::load(&runtime_file).unwrap().key_rotation, kept);
    drop(fwd);

    // Restarted within the overlap: both keys verify.
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [forwarded, forwarded]);
    drop(fwd);

    // Restarted after it (the deadline moved into the past instead of waiting) while DRKey
    // epochs still derive from the previous secret: the old hop-field key is refused, the
    // previous secret stays on disk.
    let mut state = RuntimeState::load(&runtime_file).unwrap();
    state.key_rotation = Some(KeyRotation { previous_until_ns: unix_ns() - S, rotated_at_s: Some(at) });
    state.save(&runtime_file).unwrap();
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [bad_mac, forwarded]);
    assert!(previous.exists() && rotated_at_file(&cfg.master_secret_file).exists());
    drop(fwd);

    // Restarted once DRKey is done with it too (the rotation moved three days back): the
    // previous secret and its record are gone.
    let long_ago = Some(at - 3 * 86400);
    state.key_rotation = Some(KeyRotation { previous_until_ns: unix_ns() - S, rotated_at_s: long_ago });
    state.save(&runtime_file).unwrap();
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [bad_mac, forwarded]);
    assert!(!previous.exists() && !rotated_at_file(&cfg.master_secret_file).exists());
    assert_eq!(RuntimeState::load(&runtime_file).unwrap().key_rotation, None);
    drop(fwd);

    // A record of an overlap whose previous secret is missing stops the router, naming both.
    state.key_rotation = Some(KeyRotation { previous_until_ns: unix_ns() + 3600 * S, rotated_at_s: Some(at) });
    state.save(&runtime_file).unwrap();
    let e = forwarder(&cfg, &cfg_path).err().unwrap().to_string();
    assert!(e.contains("runtime.json") && e.contains("key_rotation") && e.contains(".previous"), "{e}");
}

#[test]
fn the_previous_secret_leaves_the_disk_when_the_overlap_ends_while_running() {
    let chains = generations();
    let (_dir, cfg_path, cfg) = router_dir("retire", &chains);
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    let until = unix_ns() + 3600 * S;
    let at = unix_ns() / S;
    let secret = chains[1].ases[0].master_secret.to_vec();
    fwd.apply_and_keep(Command::MasterSecret { secret, previous_until_ns: until, rotated_at_s: at }).unwrap();
    let previous = previous_secret_file(&cfg.master_secret_file);
    fwd.retire_previous_secret(until - 1);
    assert!(previous.exists());
    // The overlap is over, but the epoch of the rotation and the next one derive their DRKey
    // keys from the previous secret.
    fwd.retire_previous_secret(until);
    assert!(previous.exists());
    let drkey_until = drkey_needs_previous_until_ns(at, cfg.drkey_epochs.schedule("test", "drkey_epochs").unwrap());
    assert!(drkey_until > until);
    fwd.retire_previous_secret(drkey_until - 1);
    assert!(previous.exists());
    fwd.retire_previous_secret(drkey_until);
    assert!(!previous.exists() && !rotated_at_file(&cfg.master_secret_file).exists());
    assert_eq!(RuntimeState::load(&state_file(&cfg_path)).unwrap().key_rotation, None);
}

#[test]
fn the_same_rotation_twice_keeps_the_previous_secret_and_its_overlap() {
    let chains = generations();
    let (_dir, cfg_path, cfg) = router_dir("retried", &chains);
    let forwarded = Verdict::unauthenticated(IF_NEXT);
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    let (until, at) = (unix_ns() + 3600 * S, unix_ns() / S);
    let secret = chains[1].ases[0].master_secret.to_vec();
    let rotation = |previous_until_ns, rotated_at_s| Command::MasterSecret {
        secret: secret.clone(),
        previous_until_ns,
        rotated_at_s,
    };
    fwd.apply_and_keep(rotation(until, at)).unwrap();
    // An operator retrying after a timeout sends the very same secret again, a little later.
    fwd.apply_and_keep(rotation(until + 60 * S, at + 60)).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [forwarded, forwarded], "the old key still verifies");
    let previous = previous_secret_file(&cfg.master_secret_file);
    assert_eq!(std::fs::read_to_string(&previous).unwrap().trim(), hex::encode(chains[0].ases[0].master_secret));
    assert_eq!(std::fs::read_to_string(rotated_at_file(&cfg.master_secret_file)).unwrap().trim(), at.to_string());
    let kept = RuntimeState::load(&state_file(&cfg_path)).unwrap().key_rotation;
    assert_eq!(kept, Some(KeyRotation { previous_until_ns: until, rotated_at_s: Some(at) }));
    drop(fwd);
    // And after a restart within the overlap.
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(verdicts(&mut fwd, &chains), [forwarded, forwarded]);
}

#[test]
fn a_rotation_a_worker_is_slow_to_take_is_kept_and_the_reply_says_so() {
    let chains = generations();
    let (_dir, cfg_path, _) = router_dir("slow-worker", &chains);
    let toml = std::fs::read_to_string(&cfg_path).unwrap().replace("workers = 1", "workers = 2");
    std::fs::write(&cfg_path, toml).unwrap();
    let cfg = RouterConfig::load(&cfg_path).unwrap();
    // The second worker never runs, so it never confirms the change.
    let (mut workers, _, _) = start(&cfg, &cfg_path).unwrap();
    let mut leader = workers.remove(0);
    let secret = chains[1].ases[0].master_secret.to_vec();
    let (until, at) = (unix_ns() + 3600 * S, unix_ns() / S);
    let rotation = || Command::MasterSecret { secret: secret.clone(), previous_until_ns: until, rotated_at_s: at };
    let e = format!("{:?}", leader.apply_and_keep(rotation()).unwrap_err());
    assert!(e.contains("in force") && e.contains("kept"), "{e}");
    // In force on the leader, so kept for a restart like any rotation.
    let previous = previous_secret_file(&cfg.master_secret_file);
    assert_eq!(std::fs::read_to_string(&cfg.master_secret_file).unwrap().trim(), hex::encode(&secret));
    assert_eq!(std::fs::read_to_string(&previous).unwrap().trim(), hex::encode(chains[0].ases[0].master_secret));
    // The operator's retry finds the rotation done.
    leader.apply_and_keep(rotation()).unwrap();
    assert_eq!(std::fs::read_to_string(&previous).unwrap().trim(), hex::encode(chains[0].ases[0].master_secret));
}

#[test]
fn routers_sharing_the_secret_files_record_one_instant_for_a_rotation() {
    let chains = generations();
    let (_dir, cfg_path, cfg) = router_dir("shared", &chains);
    let (mut first, mut second) = (forwarder(&cfg, &cfg_path).unwrap(), forwarder(&cfg, &cfg_path).unwrap());
    let until = unix_ns() + 3600 * S;
    let at = unix_ns() / S;
    let secret = chains[1].ases[0].master_secret.to_vec();
    first
        .apply_and_keep(Command::MasterSecret { secret: secret.clone(), previous_until_ns: until, rotated_at_s: at })
        .unwrap();
    // The same rotation a little later on the second router: the first one's instant stays.
    second.apply_and_keep(Command::MasterSecret { secret, previous_until_ns: until, rotated_at_s: at + 90 }).unwrap();
    assert_eq!(std::fs::read_to_string(rotated_at_file(&cfg.master_secret_file)).unwrap().trim(), at.to_string());
    let kept = RuntimeState::load(&state_file(&cfg_path)).unwrap().key_rotation.unwrap();
    assert_eq!(kept.rotated_at_s, Some(at));
}

/// A GLWP packet for AS 0 (its destination, entering on `IF_NEXT`) of an allocation issued
/// under each generation's master secret, and the router's verdicts on them.
fn glwp_verdicts(fwd: &mut Forwarder, chains: &[Chain; 2]) -> [Verdict; 2] {
    let now = unix_ns();
    let ts_exp = (now / S) as u32 + 3600;
    chains.each_ref().map(|c| {
        let k_k = aviary_glwp::hop_key::as_secret(&c.ases[0].master_secret);
        let alloc = aviary_glwp::testbed::allocation(SRC, &[(0, 7), (IF_NEXT, 0)], (1, 1000, ts_exp), &[k_k]);
        let mut pkt = alloc.packet(&aviary_glwp::testbed::addresses(SRC), unix_ns(), &[0; 40]).unwrap();
        let mut v = [Verdict::Deliver];
        let mut ctx = Context { now_ns: now, ingress: IF_NEXT, links: &fwd.link_states, random: &mut fwd.random };
        fwd.pipeline.process_batch(&mut ctx, &mut [&mut pkt[..]], &mut v);
        v[0]
    })
}

const SRC: aviary_scion::IsdAsn = aviary_glwp::testbed::SRC_IA;

#[test]
fn a_glwp_router_keeps_the_previous_k_k_across_a_restart_within_the_overlap() {
    let chains = generations();
    let (_dir, cfg_path, cfg) = router_dir_with("glwp", &chains, "\n[glwp]\nvalidity_s = 60\n");
    let bad_ha = Verdict::Drop(aviary_glwp::GlwpDrop::BadHopAuthenticator.reason());
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(glwp_verdicts(&mut fwd, &chains), [Verdict::Deliver, bad_ha]);
    let new_secret = chains[1].ases[0].master_secret.to_vec();
    fwd.apply_and_keep(Command::MasterSecret {
        secret: new_secret,
        previous_until_ns: unix_ns() + 3600 * S,
        rotated_at_s: unix_ns() / S,
    })
    .unwrap();
    assert_eq!(glwp_verdicts(&mut fwd, &chains), [Verdict::Deliver, Verdict::Deliver]);
    drop(fwd);

    // Restarted within the overlap: the router starts from the previous secret and rotates.
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(glwp_verdicts(&mut fwd, &chains), [Verdict::Deliver, Verdict::Deliver]);
    let glwp = fwd.pipeline.processors().find(|p| p.name() == "glwp").unwrap();
    let mut previous_key_packets = None;
    glwp.counters(&mut |name, v| {
        if name == "previous_key_packets" {
            previous_key_packets = Some(v);
        }
    });
    assert_eq!(previous_key_packets, Some(1));
    drop(fwd);

    // Restarted after it: the old key's allocations are refused.
    let runtime_file = state_file(&cfg_path);
    let mut state = RuntimeState::load(&runtime_file).unwrap();
    state.key_rotation = Some(KeyRotation { previous_until_ns: unix_ns() - S, rotated_at_s: None });
    state.save(&runtime_file).unwrap();
    let mut fwd = forwarder(&cfg, &cfg_path).unwrap();
    assert_eq!(glwp_verdicts(&mut fwd, &chains), [bad_ha, Verdict::Deliver]);
    drop(fwd);
}
