//! The gateway process's config file: what it needs, and errors that name the file and field.

use std::path::{Path, PathBuf};

use super::config::ZlaneGatewayConfig;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory with the files a gateway config points at, and `gateway.toml` holding `text`.
fn dir_with(name: &str, text: &str) -> (Dir, PathBuf) {
    let dir = std::env::temp_dir().join(format!("aviary-gw-cfg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("master.key"), "00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::write(dir.join("operator.token"), "secret-token\n").unwrap();
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/zlane-gateway.toml");
    std::fs::copy(topo, dir.join("topology.toml")).unwrap();
    let cfg = dir.join("gateway.toml");
    std::fs::write(&cfg, text).unwrap();
    (Dir(dir), cfg)
}

const HEAD: &str = r#"
ia = "1-ff00:0:111"
master_secret_file = "master.key"
listen = "127.0.0.1:0"
router = "127.0.0.1:1"
metrics = "127.0.0.1:0"
control = "127.0.0.1:2"
operator_token_file = "operator.token"
topology = "topology.toml"
"#;

fn table(hosts: &str) -> String {
    format!("{HEAD}[zlane_gateway]\nguarantee_bps = 1000000\ndrkey_protocol = 42\n{hosts}")
}

#[test]
fn a_config_loads_with_its_files_relative_to_it() {
    let (_d, cfg) = dir_with("ok", &table("[[zlane_gateway.hosts]]\nprefix = \"127.0.2.10\"\nrate_bps = 500000\n"));
    let loaded = ZlaneGatewayConfig::load(&cfg).unwrap();
    assert_eq!(loaded.operator_token, "secret-token");
    assert_eq!(loaded.master_secret.current().len(), 16);
    assert_eq!(loaded.topology.ases.len(), 3);
    assert_eq!(loaded.config.zlane_gateway.hosts.len(), 1);
}

#[test]
fn errors_name_the_file_and_the_field() {
    let cases = [
        ("prefix", table("[[zlane_gateway.hosts]]\nprefix = \"127.0.2.10/33\"\n"), "zlane_gateway.hosts[0].prefix"),
        (
            "rate",
            table("[[zlane_gateway.hosts]]\nprefix = \"127.0.2.10\"\nrate_bps = 9000000000\n"),
            "zlane_gateway.hosts[0].rate_bps",
        ),
        (
            "over",
            table("[[zlane_gateway.hosts]]\nprefix = \"127.0.2.0/24\"\nrate_bps = 2000000\n"),
            "zlane_gateway.hosts",
        ),
        ("ia", table("").replace("1-ff00:0:111", "1-ff00:0:999"), "ia"),
        ("token", table("").replace("\"operator.token\"", "\"missing.token\""), "operator_token_file"),
        ("secret", table("").replace("\"master.key\"", "\"missing.key\""), "master_secret_file"),
        ("topology", table("").replace("\"topology.toml\"", "\"missing.toml\""), "topology"),
        ("unknown", format!("{}\nlisten_port = 3\n", HEAD.trim_end()), "listen_port"),
    ];
    for (name, text, field) in cases {
        let (_d, cfg) = dir_with(name, &text);
        let e = ZlaneGatewayConfig::load(&cfg).err().unwrap_or_else(|| panic!("{name}: loads"));
        assert_eq!(e.file, cfg.display().to_string(), "{name}");
        assert!(e.field.contains(field), "{name}: field {:?}: {e}", e.field);
    }
}
