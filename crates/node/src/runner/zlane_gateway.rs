//! The Z-Lane gateway of an AS whose topology entry has `[as.zlane_gateway]`: its config in
//! the run directory (`<isd-as>/zlane-gateway.toml`), with host names in `hosts[].prefix`
//! replaced by the hosts' addresses.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use aviary_scion::IsdAsn;

use crate::config::ConfigError;
use crate::gateway::config::ZlaneGatewayConfig;
use crate::topology::AsEntry;

/// File name of a gateway's config in its AS directory.
pub const CONFIG_FILE: &str = "zlane-gateway.toml";

/// The sockets the runner gives a gateway.
pub struct GatewayAddrs {
    pub listen: SocketAddr,
    pub metrics: SocketAddr,
    pub router: SocketAddr,
    pub control: SocketAddr,
}

/// The gateway config of AS `a` (number `k` of `topology_file`), if it asks for one;
/// `hosts` are the addresses of the topology's hosts by name and AS.
pub fn gateway_config(
    topology_file: &Path,
    k: usize,
    a: &AsEntry,
    hosts: &BTreeMap<String, (IsdAsn, IpAddr)>,
    addrs: GatewayAddrs,
) -> Result<Option<ZlaneGatewayConfig>, ConfigError> {
    let Some(table) = &a.zlane_gateway else { return Ok(None) };
    let mut table = table.clone();
    let field = |f: String| format!("as[{k}].zlane_gateway.{f}");
    for (i, h) in table.hosts.iter_mut().enumerate() {
        if let Some((ia, addr)) = hosts.get(&h.prefix) {
            if *ia != a.ia {
                let why = format!("host `{}` is in {ia}, not in the gateway's AS {}", h.prefix, a.ia);
                return Err(ConfigError::new(topology_file.display(), field(format!("hosts[{i}].prefix")), why));
            }
            h.prefix = addr.to_string();
        }
    }
    table.plan().map_err(|e| ConfigError::new(topology_file.display(), field(e.field()), e.to_string()))?;
    Ok(Some(ZlaneGatewayConfig {
        ia: a.ia,
        master_secret_file: "master.key".into(),
        listen: addrs.listen,
        router: addrs.router,
        metrics: addrs.metrics,
        control: addrs.control,
        operator_token_file: "operator.token".into(),
        topology: "../topology.toml".into(),
        drkey_epochs: a.drkey,
        zlane_gateway: table,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::RunLayout;

    fn topology_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies")
    }

    #[test]
    fn the_runner_writes_the_gateway_and_points_its_ass_hosts_at_it() {
        let dir = aviary_scratch::ScratchDir::new("gw-layout");
        let layout = RunLayout::write(&topology_dir().join("zlane-gateway.toml"), &dir, 21000).unwrap();
        let ia: IsdAsn = "1-ff00:0:111".parse().unwrap();
        let a = &layout.ases[&ia];
        let g = a.zlane_gateway.as_ref().expect("111 has a gateway");
        assert_eq!(g.router, a.router.internal);
        assert_eq!(g.control, a.control.listen);
        // Host names became their addresses.
        let prefixes: Vec<_> = g.zlane_gateway.hosts.iter().map(|h| h.prefix.clone()).collect();
        assert_eq!(prefixes, [layout.hosts["within"].addr.to_string(), layout.hosts["over"].addr.to_string()]);
        let written = crate::gateway::config::ZlaneGatewayConfig::load(&a.dir.join(CONFIG_FILE)).unwrap();
        assert_eq!(written.config.zlane_gateway, g.zlane_gateway);
        assert_eq!(written.config.listen, g.listen);
        for h in ["within", "over", "direct"] {
            assert_eq!(layout.hosts[h].zlane_gateway, Some(g.listen), "{h}");
        }
        assert_eq!(layout.hosts["sink"].zlane_gateway, None);
        for other in ["1-ff00:0:110", "1-ff00:0:112"] {
            assert!(layout.ases[&other.parse().unwrap()].zlane_gateway.is_none());
        }
    }

    #[test]
    fn an_ass_drkey_epochs_reach_its_control_service_router_and_gateway_alike() {
        use crate::config::{ControlConfig, RouterConfig};
        use aviary_scion::drkey::EpochSchedule;
        let text = std::fs::read_to_string(topology_dir().join("zlane-gateway.toml")).unwrap();
        let text = text.replacen(
            "ia = \"1-ff00:0:111\"\n",
            "ia = \"1-ff00:0:111\"\n\n[as.drkey]\nepoch_duration_s = 3600\ngrace_s = 10\n",
            1,
        );
        let dir = aviary_scratch::ScratchDir::new("gw-epochs");
        let topo = dir.join("topology-in.toml");
        std::fs::write(&topo, text).unwrap();
        let layout = RunLayout::write(&topo, &dir.join("run"), 21000).unwrap();
        let hourly = EpochSchedule::new(3600, 10).unwrap();
        for (ia, want) in [("1-ff00:0:111", hourly), ("1-ff00:0:110", EpochSchedule::SCION_DEFAULT)] {
            let a = &layout.ases[&ia.parse().unwrap()];
            // What the processes read back from the files the runner wrote.
            let control = ControlConfig::load(&a.dir.join("control.toml")).unwrap();
            assert_eq!(control.drkey.unwrap().schedule("control.toml").unwrap(), want, "{ia} control");
            let router = RouterConfig::load(&a.dir.join("router.toml")).unwrap();
            assert_eq!(router.drkey_epochs.schedule("router.toml", "drkey_epochs").unwrap(), want, "{ia} router");
            if a.zlane_gateway.is_some() {
                let g = crate::gateway::config::ZlaneGatewayConfig::load(&a.dir.join(CONFIG_FILE)).unwrap();
                assert_eq!(g.schedule, want, "{ia} gateway");
            }
        }
        assert!(layout.ases[&"1-ff00:0:111".parse().unwrap()].zlane_gateway.is_some());
    }

    #[test]
    fn a_gateway_needs_a_zlane_router_and_its_own_hosts() {
        let text = std::fs::read_to_string(topology_dir().join("zlane-gateway.toml")).unwrap();
        let dir = aviary_scratch::ScratchDir::new("gw-bad");
        let cases = [
            // 111's router without its [as.router.zlane] table.
            (
                "norouter",
                text.replacen("[as.router.zlane]\ndrkey_protocol = 42\n\n[as.zlane_gateway]", "[as.zlane_gateway]", 1),
                "as[1].zlane_gateway",
            ),
            ("foreign", text.replace("prefix = \"over\"", "prefix = \"sink\""), "as[1].zlane_gateway.hosts[1].prefix"),
            ("rates", text.replace("rate_bps = 600_000", "rate_bps = 1_600_000"), "as[1].zlane_gateway.hosts"),
        ];
        for (name, topo, field) in cases {
            assert_ne!(topo, text, "{name}: the case changes nothing");
            let file = dir.join(format!("{name}.toml"));
            std::fs::write(&file, topo).unwrap();
            let e = RunLayout::write(&file, &dir.join(name), 21000).unwrap_err();
            let e = e.downcast_ref::<ConfigError>().unwrap_or_else(|| panic!("{name}: {e:#}"));
            assert_eq!(
                (e.file.as_str(), e.field.as_str()),
                (file.display().to_string().as_str(), field),
                "{name}: {e}"
            );
        }
    }
}
