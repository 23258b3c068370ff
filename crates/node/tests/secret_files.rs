//! Every file of a run that holds a secret is readable by its owner only (0600), from the
//! moment it exists: account keys, AS keys, CA keys, master secrets (and the `.previous` one
//! of a key rotation), operator tokens, TLS keys and the reservation files buyers write.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use aviary_node::host::ReservationFile;
use aviary_node::runner::RunLayout;
use aviary_node::secret_rotation;

fn is_secret(name: &str) -> bool {
    [".key", ".token", ".previous", ".rotated_at"].iter().any(|s| name.ends_with(s))
        || name.starts_with("reservation")
        || name == "as-service.json"
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn every_secret_file_of_a_run_is_0600() {
    let dir = aviary_scratch::ScratchDir::new("secrets");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
    let mut layout = RunLayout::write(&topo, &dir, 48500).unwrap();
    layout.enable_market().unwrap();
    // What the processes write later: a buyer's reservation file, a key rotation's old secret.
    let sink = layout.host("sink").unwrap().ia;
    ReservationFile { dst: sink, reservations: Vec::new() }.save(&dir.join("reservation-source.json")).unwrap();
    let a = layout.ases.values().next().unwrap();
    let master = a.dir.join(&a.router.master_secret_file);
    secret_rotation::keep(&master, &[7; 32], 1_700_000_000).unwrap();

    let mut all = Vec::new();
    files(&dir, &mut all);
    let secrets: Vec<&PathBuf> =
        all.iter().filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(is_secret)).collect();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let loose: Vec<String> =
        secrets.iter().filter(|p| mode(p) != 0o600).map(|p| format!("{} {:o}", p.display(), mode(p))).collect();
    assert!(loose.is_empty(), "secret files readable by others: {loose:#?}");
    // Per AS: master.key, operator.token, account.key, as-p256.key, cs-tls.key; per ISD two
    // root keys (TLS, market); the buyer's key, the reservation file, the `.previous` and its
    // `.rotated_at`.
    assert!(secrets.len() >= 5 * 5 + 2 + 4, "{secrets:#?}");
    assert!(!all.iter().any(|p| p.extension().is_some_and(|e| e == "tmp")), "{all:#?}");

    // A run directory an earlier version left readable: setting it up again restricts its keys.
    for p in &secrets {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let mut again = RunLayout::write(&topo, &dir, 48500).unwrap();
    again.enable_market().unwrap();
    for name in ["master.key", "operator.token", "account.key", "as-p256.key"] {
        assert_eq!(mode(&a.dir.join(name)), 0o600, "{name}");
    }
    for f in ["market/buyer.key", "market/isd-1-root.key", "pki/isd-1-root.key"] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
}
