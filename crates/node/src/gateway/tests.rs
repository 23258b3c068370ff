//! The gateway process's config file: what it needs, and errors that name the file and field.

use std::path::{Path, PathBuf};

use aviary_scratch::ScratchDir;

use super::config::ZlaneGatewayConfig;

/// A directory with the files a gateway config points at, and `gateway.toml` holding `text`.
fn dir_with(name: &str, text: &str) -> (ScratchDir, PathBuf) {
    let dir = ScratchDir::new(&format!("gw-cfg-{name}"));
    std::fs::write(dir.join("master.key"), "00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::write(dir.join("operator.token"), "secret-token\n").unwrap();
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/zlane-gateway.toml");
    std::fs::copy(topo, dir.join("topology.toml")).unwrap();
    let cfg = dir.join("gateway.toml");
    std::fs::write(&cfg, text).unwrap();
    (dir, cfg)
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
fn the_ass_drkey_epochs_default_to_scions() {
    use aviary_scion::drkey::EpochSchedule;
    let (_d, cfg) = dir_with("epochs-default", &table(""));
    assert_eq!(ZlaneGatewayConfig::load(&cfg).unwrap().schedule, EpochSchedule::SCION_DEFAULT);
    let text = format!("{HEAD}[drkey_epochs]\nepoch_duration_s = 3600\n{}", table("").replace(HEAD, ""));
    let (_d, cfg) = dir_with("epochs-hour", &text);
    assert_eq!(ZlaneGatewayConfig::load(&cfg).unwrap().schedule, EpochSchedule::new(3600, 5).unwrap());
}

/// A stand-in for the AS's control service: answers every `GET /v1/drkey/level1` with a key
/// of the epoch that `schedule` has at the request's `at`.
fn control_with(schedule: aviary_scion::drkey::EpochSchedule, subject: aviary_scion::IsdAsn) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let query = line.split_whitespace().nth(1).unwrap_or("").split_once('?').map_or("", |q| q.1).to_owned();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let param = |k: &str| query.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).unwrap().to_owned();
            let epoch = schedule.epoch_at(param("at").parse().unwrap()).unwrap();
            let reply = crate::api::Level1Reply {
                issuer: param("issuer").parse().unwrap(),
                subject,
                protocol: param("protocol").parse().unwrap(),
                epoch: crate::api::EpochWire { begin: epoch.begin_s, end: epoch.end_s },
                key: "00".repeat(16),
            };
            let body = serde_json::to_string(&reply).unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes()).and_then(|()| conn.write_all(body.as_bytes()));
        }
    });
    addr
}

/// A gateway whose `[drkey_epochs]` are not its control service's learns so from the first
/// reply for its own AS's key and must stop, naming both tables' fields; with the same epochs
/// it takes the keys.
#[test]
fn a_gateway_refuses_epochs_other_than_its_control_services() {
    use super::keys::{KeyCache, KeySource};
    use aviary_scion::drkey::EpochSchedule;
    let own: aviary_scion::IsdAsn = "1-ff00:0:111".parse().unwrap();
    let control = control_with(EpochSchedule::SCION_DEFAULT, own);
    let source = || KeySource { control, token: "t".into(), subject: own, protocol: 42, issuers: vec![own] };
    let hourly = KeyCache::new(EpochSchedule::new(3600, 5).unwrap());
    assert!(!hourly.fetch_round(&source()));
    let why = hourly.schedule_mismatch().expect("the mismatch is found");
    assert!(why.contains("drkey_epochs") && why.contains("[drkey] epoch_duration_s"), "{why}");
    assert!(why.contains("86400 s long") && why.contains("epoch_duration_s = 3600"), "{why}");
    let same = KeyCache::new(EpochSchedule::SCION_DEFAULT);
    assert!(same.fetch_round(&source()), "both epochs' keys arrive");
    assert_eq!(same.schedule_mismatch(), None);
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
        (
            "epochs",
            format!("{HEAD}[drkey_epochs]\nepoch_duration_s = 0\n{}", table("").replace(HEAD, "")),
            "drkey_epochs.epoch_duration_s",
        ),
        (
            "grace",
            format!("{HEAD}[drkey_epochs]\nepoch_duration_s = 60\ngrace_s = 60\n{}", table("").replace(HEAD, "")),
            "drkey_epochs.grace_s",
        ),
    ];
    for (name, text, field) in cases {
        let (_d, cfg) = dir_with(name, &text);
        let e = ZlaneGatewayConfig::load(&cfg).err().unwrap_or_else(|| panic!("{name}: loads"));
        assert_eq!(e.file, cfg.display().to_string(), "{name}");
        assert!(e.field.contains(field), "{name}: field {:?}: {e}", e.field);
    }
}
