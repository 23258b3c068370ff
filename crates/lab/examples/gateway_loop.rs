//! A driver for wall time and instruction counts of the Z-Lane gateway rows of `aviary bench`
//! (the same set-up and code path, [`GatewayCase`]): a gateway whose host table holds every
//! host, then `PACKETS` distinct packets in batches of 32.
//!
//! ```text
//! gateway_loop compliant 5 32000 16384 9         # best ns per packet of 9 runs
//! valgrind --tool=callgrind --toggle-collect='*Gateway*process_batch*' \
//!     target/release/examples/gateway_loop compliant 5 32000 4096 1
//! ```
//!
//! Under callgrind, the difference of two counts (4096 and 8192 packets) over the difference of
//! packets cancels the warm-up (one packet per host, also through `process_batch`).
//!
//! Arguments: `compliant|dedup|over-rate`, ASes on the path (2 to 60), hosts (1 to 65 535),
//! packets, runs, and optionally the batch size (1 to 32, the receive ring's; 32 unless given;
//! 1 for one packet at a time).

use aviary_lab::bench::zlane::GatewayCase;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: gateway_loop compliant|dedup|over-rate ASES HOSTS PACKETS RUNS [BATCH]";
    let (compliant, dedup) = match args.get(1).map(String::as_str) {
        Some("compliant") => (true, false),
        Some("dedup") => (true, true),
        Some("over-rate") => (false, false),
        _ => panic!("{usage}"),
    };
    let num = |i: usize| -> u64 { args.get(i).and_then(|a| a.parse().ok()).expect(usage) };
    let (ases, hosts, packets, runs) = (num(2) as usize, num(3) as u16, num(4), num(5));
    let batch = if args.len() > 6 { num(6) as usize } else { 32 };
    assert!((1..=32).contains(&batch), "{usage}: BATCH is 1 to 32");
    let case = GatewayCase::new(ases, compliant, dedup, hosts, packets);
    let best = (0..runs)
        .map(|_| {
            let mut gw = case.warm_gateway();
            case.run_in(&mut gw, batch)
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "{}: {hosts} hosts, {packets} packets in batches of {batch}: {best:.1} ns per packet (best of {runs})",
        case.name
    );
}
