//! What a user sees when a command fails: one line naming what is wrong, also with
//! `RUST_BACKTRACE=1` in the environment (backtraces are for panics), and a failing exit code.

use std::process::Command;

#[test]
fn a_failed_command_prints_one_line_without_a_backtrace() {
    let dir = aviary_scratch::ScratchDir::new("no-such-config");
    let missing = dir.join("router.toml");
    for backtrace in ["0", "1", "full"] {
        let out = Command::new(env!("CARGO_BIN_EXE_aviary"))
            .args(["router", "--config"])
            .arg(&missing)
            .env("RUST_BACKTRACE", backtrace)
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "RUST_BACKTRACE={backtrace}: {err}");
        assert!(lines[0].starts_with("error: ") && lines[0].contains(&*missing.to_string_lossy()), "{err}");
    }
}

fn router_config(dir: &std::path::Path, interfaces: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("master.key"), "00112233445566778899aabbccddeeff\n").unwrap();
    let cfg = dir.join("router.toml");
    let text = format!(
        "ia = \"1-ff00:0:110\"\nmaster_secret_file = \"master.key\"\ninternal = \"127.0.0.1:0\"\n\
         management = \"127.0.0.1:0\"\n{interfaces}"
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

fn router_error(cfg: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_aviary")).args(["router", "--config"]).arg(cfg).output().unwrap();
    assert!(!out.status.success());
    String::from_utf8(out.stderr).unwrap().lines().filter(|l| l.starts_with("error: ")).collect()
}

#[test]
fn a_router_names_the_file_and_field_of_a_taken_address_or_a_missing_interface() {
    let dir = aviary_scratch::ScratchDir::new("router-errors");
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let interfaces = format!(
        "[[interface]]\nid = 1\nlocal = \"127.0.0.1:0\"\nremote = \"127.0.0.1:9\"\nneighbor = \"1-ff00:0:111\"\n\
         capacity_bps = 1000000\n\
         [[interface]]\nid = 2\nlocal = \"{addr}\"\nremote = \"127.0.0.1:9\"\nneighbor = \"1-ff00:0:112\"\n\
         capacity_bps = 1000000\n"
    );
    let cfg = router_config(&dir.join("taken"), &interfaces);
    let err = router_error(&cfg);
    let want = format!("{}: interface[1].local: address {addr} is already in use", cfg.display());
    assert!(err.contains(&want), "{err}");

    let cfg = router_config(&dir.join("none"), "");
    let err = router_error(&cfg);
    assert!(err.contains(&format!("{}: interface:", cfg.display())) && err.contains("at least one"), "{err}");
}
