//! `aviary`: the command of the suite.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use std::path::PathBuf;

mod glwp;
mod market;

use aviary_lab::{bench, demo, machine};
use aviary_node::runner::{Network, RunLayout};

#[derive(Parser)]
#[command(name = "aviary", version, about = "Inter-domain QoS for SCION: Hummingbird reservations and friends")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum HostMode {
    /// Send a flow (constant bit rate or bursty, best effort or reserved, or an attack).
    Send(aviary_node::host::SendOptions),
    /// Receive flows and report goodput, loss and one-way delay per flow.
    Sink(aviary_node::host::SinkOptions),
    /// A DRKey key of this host from the AS's control service (key and epoch).
    Drkey(aviary_node::host::drkey::DrkeyOptions),
    /// SCMP echo to a host or border router (`ISD-AS,IP`), with round-trip times.
    Ping(aviary_node::host::scmp::PingOptions),
    /// SCMP traceroute to an AS: every AS on the path answers, with round-trip times.
    Traceroute(aviary_node::host::scmp::TracerouteOptions),
    /// Path validation packets routed by destination; this AS's trusted router is the source
    /// node (see docs/pathval.md).
    PathvalSend(aviary_node::host::pathval::PathvalSendOptions),
}

#[derive(Subcommand)]
enum LabCommand {
    /// Gas of every contract call and of atomic buy-and-redeem for 1-16 hops, beside Table 2 of
    /// the Hummingbird paper; the latency of buy-and-redeem to delivery on the embedded ledger.
    Gas {
        /// Fewer latency repetitions.
        #[arg(long)]
        quick: bool,
        /// Print one JSON object per row.
        #[arg(long)]
        json: bool,
    },
    /// Path validation (pathval) measured on 2-12-node paths: sampling per node (Fig. 4), samples
    /// per packet (Fig. 10), packets to cover a path (Table V), per-function times (Table IV) and
    /// the detection rate of each attack against pathval, Baseline, PPV and EPIC-style.
    Pathval {
        /// 2000 instead of 10 000 packets per path length, fewer timing calls, 200 instead of
        /// 2000 packets per detection cell.
        #[arg(long)]
        quick: bool,
        /// Print the results as one JSON object.
        #[arg(long)]
        json: bool,
        /// Also write an HTML report with the tables and plots to this file.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// ResIDs that First-Fit assignment needs on random reservation workloads, against the optimum.
    Resid {
        /// Seed of the workloads.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Smaller workloads.
        #[arg(long)]
        quick: bool,
        /// Print one JSON object per row.
        #[arg(long)]
        json: bool,
    },
    /// GMA allocations (the GLWP paper, Eq. 2) of paths over allocation matrices read from a
    /// JSON file, the preliminary guarantee of every prefix, and the load on every interface pair.
    Gma {
        /// Topology file (JSON): `nodes` with allocation matrices, `links`, optionally `paths`;
        /// e.g. testdata/gma/example.json.
        #[arg(long)]
        input: PathBuf,
        /// Print the report as one JSON object (`paths`, `pair_load`).
        #[arg(long)]
        json: bool,
    },
    /// Fig. 4 of the Z-Lane paper from its model (§5): the source AS's throughput at each of 8
    /// attacked routers for Z-Lane, FIFO, per-flow fairness and local isolation.
    ZlaneModel {
        /// Print the parameters and every curve as one JSON object.
        #[arg(long)]
        json: bool,
        /// How many of the first routers are inside the source's ISD (the paper does not say;
        /// 4 is half of the path: docs/zlane.md).
        #[arg(long = "j", value_name = "N", default_value_t = aviary_lab::zlane_model::DEFAULT_ROUTERS_IN_SOURCE_ISD)]
        j: usize,
        /// Directory for report.html (table and plot).
        #[arg(long, default_value = "aviary-zlane-model")]
        dir: PathBuf,
    },
    /// One router process's forwarding rate (standard SCION and flyover packets at 100, 500 and
    /// 1500-byte payloads) over loopback UDP, beside a bare UDP relay measured in the same run.
    Forward {
        /// 0.25 s windows instead of 3 s (a smoke test; the figures are rough).
        #[arg(long)]
        quick: bool,
        /// Print one JSON object per row (`name`, `payload_bytes`, `workers`, `mpps`, `gbps`,
        /// `relay_mpps`, `ratio_to_relay`).
        #[arg(long)]
        json: bool,
        /// Run directory: the router's config, the logs and report.html.
        #[arg(long, default_value = "aviary-forward")]
        dir: PathBuf,
        /// First of the seven ports of the run, on 127.0.0.1. The default lies below Linux's
        /// ephemeral ports (32768-60999): there a client connection that just closed holds its
        /// port in TIME_WAIT for a minute, and the router's management API could not bind it.
        #[arg(long, default_value_t = 29000)]
        port_base: u16,
        /// Measure the router with 1, 2, ... up to this many worker threads (default: the
        /// number of cores).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
        workers: Option<u16>,
    },
    /// The bare UDP relay `aviary lab forward` measures the router against: every datagram
    /// arriving at `--listen` goes on unchanged to `--to`.
    #[command(hide = true)]
    ForwardRelay {
        #[arg(long)]
        listen: std::net::SocketAddr,
        #[arg(long)]
        to: std::net::SocketAddr,
    },
    /// GLWP on real processes: allocations discovered for three sources whose paths share a
    /// bottleneck; a guaranteed flow at its β (each packet replayed once) against two sources
    /// overusing theirs and a best-effort flood at five times the bottleneck.
    Glwp {
        /// 3 instead of 8 seconds of guaranteed traffic.
        #[arg(long)]
        quick: bool,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
        /// Run directory: report.html, and network/ with configs, logs and allocation files.
        #[arg(long, default_value = "aviary-glwp")]
        dir: PathBuf,
        /// First port of the run; each AS uses 100 ports from here.
        #[arg(long, default_value_t = 35000)]
        port_base: u16,
    },
    /// Table 4 of the Z-Lane paper on real processes: a protected AS at its guarantee through
    /// one border router flooded at four times its egress capacity, under Z-Lane and under FIFO.
    Zlane {
        /// 3 instead of 8 seconds of protected traffic per policy.
        #[arg(long)]
        quick: bool,
        /// Print the report as one JSON object (`runs`: one per router policy).
        #[arg(long)]
        json: bool,
        /// Run directory: one subdirectory per policy with configs and logs, and report.html.
        #[arg(long, default_value = "aviary-zlane")]
        dir: PathBuf,
        /// First port of the runs; each AS uses 100 ports from here.
        #[arg(long, default_value_t = 34000)]
        port_base: u16,
    },
}

#[derive(Subcommand)]
enum Command {
    /// The emulated network of line5 as processes: reserved and best-effort flows under a flood.
    Demo {
        /// Print the summary as one JSON object.
        #[arg(long)]
        json: bool,
        /// How long the legitimate flows send, in milliseconds.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1000..=40_000))]
        duration_ms: u64,
        /// Run directory: configs, logs and report.html.
        #[arg(long, default_value = "aviary-demo")]
        dir: PathBuf,
        /// First port of the run; each AS uses 100 ports from here.
        #[arg(long, default_value_t = 30000)]
        port_base: u16,
        /// Have each transit AS's operator grant the reservations instead of buying them on the market.
        #[arg(long)]
        granted: bool,
    },
    /// Host agent of an AS: traffic sender or sink over SCION/UDP, DRKey keys, ping and traceroute.
    Host {
        /// Host config (TOML), e.g. aviary-run/hosts/source.toml.
        #[arg(long)]
        config: PathBuf,
        #[command(subcommand)]
        mode: HostMode,
    },
    /// Border router of one AS (forwards SCION and Hummingbird packets over UDP).
    Router {
        /// Router config (TOML).
        #[arg(long)]
        config: PathBuf,
    },
    /// Z-Lane gateway of one AS: verifies its hosts' per-AS EPIC packets, flags those within
    /// each host's rate and forwards them to the AS's router.
    ZlaneGateway {
        /// Gateway config (TOML).
        #[arg(long)]
        config: PathBuf,
    },
    /// Control service of one AS: hop fields, paths for hosts, reservations for the operator.
    Control {
        /// Control-service config (TOML).
        #[arg(long)]
        config: PathBuf,
    },
    /// Starts a router and a control service per AS of a topology and supervises them until Ctrl-C.
    Run {
        /// Topology file (TOML), e.g. testdata/topologies/line5.toml.
        topology: PathBuf,
        /// Run directory for configs, secrets and logs.
        #[arg(long, default_value = "aviary-run")]
        dir: PathBuf,
        /// First port of the run; each AS uses 100 ports from here.
        #[arg(long, default_value_t = 30000)]
        port_base: u16,
        /// Also run the bandwidth market: embedded ledger, contracts and an AS service per AS.
        #[arg(long)]
        market: bool,
        /// The run's health endpoint (`/v1/status`: 200 when every process is up, else 503;
        /// `/metrics`); default 127.0.0.1 on the port below --port-base.
        #[arg(long)]
        health: Option<std::net::SocketAddr>,
        /// Give a process up after this many failures in a row and end the run with an error;
        /// without it, processes are restarted with backoff for as long as the run lasts.
        #[arg(long)]
        give_up_after: Option<u32>,
    },
    /// GLWP guarantees: discover a path's allocation through the ASes' GLWP services.
    Glwp {
        #[command(subcommand)]
        command: glwp::GlwpCommand,
    },
    /// The bandwidth market as a buyer: offers, and buying reservations for a path.
    Market {
        #[command(subcommand)]
        command: market::MarketCommand,
    },
    /// AS reservation service: registers the AS, sells its bandwidth, answers redeem requests.
    AsService {
        /// AS service config (TOML).
        #[arg(long)]
        config: PathBuf,
    },
    /// Measurements beside the papers' figures.
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
    /// Per-packet cost on one core, beside the figures of the Hummingbird paper.
    Bench {
        /// Print one JSON object per row.
        #[arg(long)]
        json: bool,
        /// A short run (smoke test); the figures are rough.
        #[arg(long)]
        quick: bool,
    },
}

/// An error reaches the user as one line with its causes (`error: a: b`), whatever
/// `RUST_BACKTRACE` says: backtraces are for panics, not for a config naming a taken address.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let command = Cli::parse().command;
    // A mistyped cap would otherwise be ignored, and a measurement taken on the wrong code.
    aviary_scion::cpu::check_env()?;
    if matches!(command, Command::Lab { .. } | Command::Bench { .. } | Command::Market { .. } | Command::Demo { .. }) {
        exit_quietly_on_broken_pipe();
    }
    match command {
        Command::Router { config } => aviary_node::router::run(&config)?,
        Command::Control { config } => aviary_node::control::run(&config)?,
        Command::ZlaneGateway { config } => aviary_node::gateway::run(&config)?,
        Command::Run { topology, dir, port_base, market, health, give_up_after } => {
            let health = health.unwrap_or_else(|| ([127, 0, 0, 1], port_base.saturating_sub(1)).into());
            run_topology(&topology, &dir, port_base, market, health, give_up_after)?
        }
        Command::AsService { config } => aviary_node::as_service::run(&config)?,
        Command::Market { command } => market::run(command)?,
        Command::Glwp { command } => glwp::run(command)?,
        Command::Demo { json, duration_ms, dir, port_base, granted } => {
            let exe = std::env::current_exe()?;
            let opts = demo::DemoOptions { exe, dir, port_base, duration_ms, progress: true, market: !granted };
            let report = demo::run(&opts)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!(
                    "aviary demo: {} ({}), {:.0} s of traffic\n",
                    report.topology, report.description, report.duration_s
                );
                print!("{}", demo::table(&report));
                println!("\nreport: {}", report.report_html);
            }
        }
        Command::Host { config, mode } => {
            let cfg = aviary_node::config::HostConfig::load(&config)?;
            match mode {
                HostMode::Send(opts) => {
                    let r = aviary_node::host::run_sender(&cfg, &opts)?;
                    eprintln!("{}", serde_json::to_string(&r)?);
                }
                HostMode::Sink(opts) => {
                    let r = aviary_node::host::run_sink(&cfg, &opts)?;
                    eprintln!("{}", serde_json::to_string(&r.flows.keys().collect::<Vec<_>>())?);
                }
                HostMode::Ping(opts) => {
                    let answers = aviary_node::host::scmp::ping(&cfg, &opts, &mut std::io::stdout())?;
                    if !answers.iter().any(|a| matches!(a, aviary_node::host::scmp::Answer::Reply { .. })) {
                        anyhow::bail!("no echo reply from {}", opts.dst);
                    }
                }
                HostMode::Traceroute(opts) => {
                    aviary_node::host::scmp::traceroute(&cfg, &opts, &mut std::io::stdout())?;
                }
                HostMode::PathvalSend(opts) => {
                    let r = aviary_node::host::pathval::send(&cfg, &opts)?;
                    println!("{}", serde_json::to_string(&r)?);
                }
                HostMode::Drkey(opts) => {
                    let req = opts.request(&cfg)?;
                    let r = aviary_node::host::drkey::fetch_host_key(&cfg, &req)?;
                    if opts.json {
                        println!("{}", serde_json::to_string(&r)?);
                    } else {
                        println!("{}", aviary_node::host::drkey::describe(&r));
                    }
                }
            }
        }
        Command::Lab { command: LabCommand::Gas { quick, json } } => {
            let rows = aviary_lab::gas::run(quick)?;
            if json {
                for r in &rows {
                    println!("{}", serde_json::to_string(r)?);
                }
            } else {
                print!("{}", aviary_lab::gas::table(&rows));
            }
        }
        Command::Lab { command: LabCommand::Pathval { quick, json, report } } => {
            let effort = if quick { aviary_lab::pathval::Effort::QUICK } else { aviary_lab::pathval::Effort::FULL };
            let r = aviary_lab::pathval::run(effort);
            if let Some(path) = &report {
                std::fs::write(path, aviary_lab::pathval_report::html(&r))
                    .with_context(|| format!("writing the report {}", path.display()))?;
            }
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                print!("{}", aviary_lab::pathval::table(&r));
                if let Some(path) = &report {
                    println!("report: {}", path.display());
                }
            }
        }
        Command::Lab { command: LabCommand::Resid { seed, quick, json } } => {
            let rows = aviary_lab::resid::run(seed, quick);
            if json {
                for r in &rows {
                    println!("{}", serde_json::to_string(r)?);
                }
            } else {
                print!("{}", aviary_lab::resid::table(&rows));
            }
        }
        Command::Lab { command: LabCommand::Gma { input, json } } => {
            let report = aviary_lab::gma::run_file(&input)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", aviary_lab::gma::table(&report));
            }
        }
        Command::Lab { command: LabCommand::ZlaneModel { json, j, dir } } => {
            let report = aviary_lab::zlane_model::run(j)?;
            let html = aviary_lab::zlane_model::write_report(&report, &dir)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", aviary_lab::zlane_model::table(&report));
                println!("\nreport: {}", html.display());
            }
        }
        Command::Lab { command: LabCommand::Forward { quick, json, dir, port_base, workers } } => {
            use aviary_lab::forward;
            let exe = std::env::current_exe()?;
            let effort = if quick { forward::Effort::QUICK } else { forward::Effort::FULL };
            let most = workers.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), usize::from);
            let workers = (1..=most).collect();
            let opts = forward::ForwardOptions { exe, dir, port_base, effort, workers, progress: !json };
            let report = forward::run(&opts)?;
            if json {
                for row in report.rows() {
                    println!("{}", serde_json::to_string(row)?);
                }
            } else {
                print!("{}", forward::table(&report));
                println!("\nreport: {}", report.report_html);
            }
        }
        Command::Lab { command: LabCommand::ForwardRelay { listen, to } } => {
            let sock = aviary_node::underlay::BatchSocket::bind(listen)?;
            aviary_lab::forward::relay::relay(&sock, to, &std::sync::atomic::AtomicBool::new(false))?
        }
        Command::Lab { command: LabCommand::Glwp { quick, json, dir, port_base } } => {
            let exe = std::env::current_exe()?;
            let duration_ms = if quick { 3_000 } else { 8_000 };
            let opts = aviary_lab::glwp_lab::GlwpLabOptions { exe, dir, port_base, duration_ms, progress: true };
            let report = aviary_lab::glwp_lab::run(&opts)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", aviary_lab::glwp_lab::table(&report));
                println!("\nreport: {}", report.report_html);
            }
        }
        Command::Lab { command: LabCommand::Zlane { quick, json, dir, port_base } } => {
            let exe = std::env::current_exe()?;
            let duration_ms = if quick { 3_000 } else { 8_000 };
            let opts = aviary_lab::zlane_lab::ZlaneLabOptions { exe, dir, port_base, duration_ms, progress: true };
            let report = aviary_lab::zlane_lab::run(&opts)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", aviary_lab::zlane_lab::table(&report));
                println!("\nreport: {}", report.report_html);
            }
        }
        Command::Bench { json, quick } => {
            let effort = if quick { bench::Effort::QUICK } else { bench::Effort::FULL };
            if !json {
                eprintln!("measuring on {} (one core) ...", machine::describe());
            }
            let (rows, clock) = bench::run(effort);
            if json {
                for r in &rows {
                    println!("{}", serde_json::to_string(r)?);
                }
            } else {
                print!("{}", bench::table(&rows));
                println!(
                    "\npaper: Hummingbird, DPDK on a 2.1 GHz Xeon (Tables 3 and 4); GLWP, the same kind of machine; \
                     pathval, Click on a 3 GHz i7 (Table IV, Fig. 5); ours: {}",
                    machine::describe()
                );
                if let Some(c) = clock {
                    println!(
                        "cycles at {:.2} GHz: the core's clock by dependent additions, {:.2} GHz before the rows \
                         and {:.2} after",
                        c.ghz(),
                        c.before_ghz,
                        c.after_ghz
                    );
                }
            }
        }
    }
    Ok(())
}

/// `aviary run`: start a topology, print where everything is, wait for Ctrl-C (or, with
/// `give_up_after`, until a process is given up).
fn run_topology(
    topology: &std::path::Path,
    dir: &std::path::Path,
    port_base: u16,
    market: bool,
    health: std::net::SocketAddr,
    give_up_after: Option<u32>,
) -> Result<()> {
    let stop = aviary_node::signals::stop_flag();
    let mut layout = RunLayout::write(topology, dir, port_base)?;
    if market {
        layout.enable_market()?;
    }
    let exe = std::env::current_exe()?;
    let policy = aviary_node::runner::RestartPolicy { give_up_after, ..Default::default() };
    let net = Network::start_with(&exe, layout, policy)?;
    let health_server = net.serve_health(health)?;
    // What it listens on, also when port 0 was asked for.
    let health = health_server.addr();
    let l = &net.layout;
    println!("topology {} running in {}", l.topology.name, l.dir.display());
    for a in l.ases.values() {
        println!(
            "  {:<16} router {} (management http://{})  control http://{}",
            a.ia.to_string(),
            a.router.internal,
            a.router.management,
            a.control.listen
        );
        if let Some(g) = &a.zlane_gateway {
            println!("  {:<16} zlane gateway {} (hosts' per-AS EPIC, to the router)", "", g.listen);
        }
    }
    for (name, h) in &l.hosts {
        println!("  host {name:<12} {},{}  config {}", h.ia, h.addr, l.host_config_path(name).display());
    }
    if let Some(m) = &l.market {
        println!("  market: ledger {}, contracts {}", m.ledger_dir.display(), m.deployment_file.display());
    }
    println!("  metrics (GET /metrics; all listed in {}):", l.dir.join(aviary_node::runner::METRICS_TARGETS).display());
    for (role, ia, addr) in l.metrics_targets() {
        println!("    {:<16} {:<13} http://{addr}/metrics", ia.to_string(), role.name());
    }
    println!("  health: http://{health}/v1/status (200 when every process is up, else 503)");
    println!("logs in {}; Ctrl-C stops every process", l.dir.join("logs").display());
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let given_up: Vec<String> = net
            .health()
            .processes
            .iter()
            .filter(|p| p.state == aviary_node::runner::ProcessState::GivenUp)
            .map(|p| format!("{} {} (see {})", p.role, p.ia, p.log.display()))
            .collect();
        if !given_up.is_empty() {
            println!("stopping");
            drop(net);
            anyhow::bail!("gave up on {}", given_up.join(", "));
        }
    }
    println!("stopping");
    drop(net);
    Ok(())
}

/// Commands whose output is a report end quietly when the reader goes away (`aviary lab gas |
/// head`), as Unix tools do. Daemons keep Rust's default (SIGPIPE ignored), so that a client
/// closing its connection early never ends a router or service.
fn exit_quietly_on_broken_pipe() {
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
