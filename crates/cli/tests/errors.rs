//! What a user sees when a command fails: one line naming what is wrong, also with
//! `RUST_BACKTRACE=1` in the environment (backtraces are for panics), and a failing exit code.

use std::process::Command;

#[test]
fn a_failed_command_prints_one_line_without_a_backtrace() {
    let missing = std::env::temp_dir().join(format!("aviary-no-such-config-{}.toml", std::process::id()));
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
