//! What the market CLI tests share: a run directory of line5 with its market deployed on the
//! embedded ledger, core AS C's reservation service as a real process, and `aviary market`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use aviary_node::runner::market_setup::MarketLayout;
use aviary_node::runner::RunLayout;
use aviary_scratch::ScratchDir;

/// Core AS C of line5: transit from interface 1 to 2.
pub const C: &str = "1-ff00:0:110";

/// A run directory with the market enabled.
pub struct Run {
    pub market: MarketLayout,
    /// C's AS service config.
    pub cfg: PathBuf,
    /// Last, so that it goes after what uses it.
    pub dir: ScratchDir,
}

impl Run {
    /// line5 written to a fresh directory named after `name`, its ports from `port_base`.
    pub fn new(name: &str, port_base: u16) -> Self {
        let dir = ScratchDir::new(&format!("it-{name}"));
        let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
        let mut layout = RunLayout::write(&topo, &dir, port_base).unwrap();
        layout.enable_market().unwrap();
        let market = layout.market.unwrap();
        let cfg = market.as_services[&C.parse().unwrap()].clone();
        Self { market, cfg, dir }
    }

    /// Starts C's AS service (its output in the run directory).
    pub fn start_service(&self) -> Service {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("as-service.log")).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aviary"));
        cmd.args(["as-service", "--config"]).arg(&self.cfg);
        cmd.stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
        Service(cmd.spawn().unwrap())
    }

    /// What the AS service wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("as-service.log")).unwrap_or_default()
    }

    /// `aviary market <args> --run DIR`.
    pub fn market(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_aviary"))
            .arg("market")
            .args(args)
            .arg("--run")
            .arg(self.dir.path())
            .output()
            .unwrap()
    }
}

/// The service process; killed when dropped, so that a failing test leaves none behind.
pub struct Service(pub Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A command's stdout and stderr, for messages and matching.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
