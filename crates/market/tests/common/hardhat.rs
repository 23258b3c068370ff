//! A Hardhat 2 node process for a test: started from `contracts/` with its config (chain id
//! 31337, Osaka, RIP-7212 P256VERIFY, the dev accounts), killed when the guard is dropped so
//! no node outlives its test, even when the test panics.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aviary_market::{Account, RpcLedger};

pub struct HardhatNode {
    child: Child,
    pub url: String,
    log: PathBuf,
}

fn contracts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts")
}

/// The pinned Hardhat of `contracts/package-lock.json`, installed with `npm ci` if a fresh
/// clone has none yet, so that the README's test command works by itself. A lock keeps test
/// processes running at once from installing it twice.
fn ensure_installed(dir: &Path) -> PathBuf {
    let bin = dir.join("node_modules/.bin/hardhat");
    if bin.exists() {
        return bin;
    }
    let lock = File::create(Path::new(env!("CARGO_TARGET_TMPDIR")).join("npm-ci.lock")).unwrap();
    lock.lock().unwrap();
    if !bin.exists() {
        eprintln!("installing the pinned Hardhat: npm ci in {}", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .status()
            .expect("npm (Node.js) is needed to install the pinned Hardhat the JSON-RPC tests run");
        assert!(status.success(), "npm ci in {} failed ({status})", dir.display());
    }
    assert!(bin.exists(), "npm ci did not install {}", bin.display());
    bin
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl HardhatNode {
    /// Start a node and wait until it answers `eth_chainId`, installing the pinned Hardhat
    /// first on a fresh clone. Fails (does not skip) when it cannot be installed.
    pub fn start(name: &str) -> (Self, RpcLedger) {
        let dir = contracts_dir();
        let bin = ensure_installed(&dir);
        let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hardhat-{name}.log"));
        // A port picked free may be taken before the node binds it: try a few.
        for _ in 0..3 {
            let port = free_port();
            let out = File::create(&log).unwrap();
            let child = Command::new(&bin)
                .args(["node", "--config", "hardhat.config.js", "--hostname", "127.0.0.1", "--port"])
                .arg(port.to_string())
                .current_dir(&dir)
                .env("HARDHAT_DISABLE_TELEMETRY_PROMPT", "true")
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .expect("start hardhat node");
            let mut node = HardhatNode { child, url: format!("http://127.0.0.1:{port}"), log: log.clone() };
            if let Some(ledger) = node.wait_ready() {
                return (node, ledger);
            }
        }
        panic!("hardhat node did not start; log: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// The ledger once the node answers; None if the process exited first.
    fn wait_ready(&mut self) -> Option<RpcLedger> {
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return None;
            }
            if let Ok(ledger) = RpcLedger::connect(&self.url, Account::dev_accounts()) {
                return Some(ledger);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("hardhat node at {} did not answer within 90 s; log: {}", self.url, self.log.display());
    }
}

impl Drop for HardhatNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
