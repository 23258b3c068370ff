//! The tables of `aviary lab forward`, text and HTML, with the Hummingbird paper's per-core
//! figures beside ours.

use std::fmt::Write;

use super::{ForwardReport, Measured};
use crate::html::{escape, page};

/// The Hummingbird paper's forwarding rate per core (§7.2, DPDK on a 2.1 GHz Xeon): one packet
/// per its per-packet processing time, 123 ns standard and 308 ns with a flyover; Fig. 5 reaches
/// the 160 Gbit/s line rate with 4 cores at 1500 B payloads and 32 cores at 100 B.
pub const PAPER_MPPS_PER_CORE: [(&str, f64); 2] = [("scion", 1e3 / 123.0), ("flyover", 1e3 / 308.0)];

fn paper(name: &str) -> f64 {
    PAPER_MPPS_PER_CORE.iter().find(|(n, _)| *n == name).map_or(0.0, |p| p.1)
}

fn header(r: &ForwardReport) -> String {
    format!(
        "{}; {:.2} s window after {:.2} s of warm-up per row; Mpps and Gbit/s of SCION packets (header and \
         payload) at the sink; cores: the forwarder process's CPU time over the window\n",
        r.machine,
        r.effort.window.as_secs_f64(),
        r.effort.warmup.as_secs_f64()
    )
}

fn flyover_line(r: &ForwardReport) -> String {
    let f = r.flyovers;
    let all = f.reserved + f.demoted;
    let share = if all > 0 { f.reserved as f64 / all as f64 * 100.0 } else { 0.0 };
    format!(
        "flyover packets the router forwarded as reserved: {} of {} ({share:.2} %; the rest best effort: stale, \
         inactive or over the rate)\n",
        f.reserved, all
    )
}

fn cells(m: &Measured) -> [String; 13] {
    let (r, b) = (&m.router, &m.relay);
    [
        m.row.name.to_owned(),
        m.row.payload_bytes.to_string(),
        m.row.workers.to_string(),
        format!("{:.3}", r.mpps),
        format!("{:.2}", r.gbps),
        format!("{:.2}", r.cores),
        format!("{:.3}", r.mpps_per_core()),
        format!("{:.3}", b.mpps),
        format!("{:.2}", b.cores),
        format!("{:.3}", b.mpps_per_core()),
        format!("{:.2}", m.row.ratio_to_relay),
        format!("{:.3}", r.offered_mpps),
        format!("{:.2}", paper(m.row.name)),
    ]
}

const COLUMNS: [&str; 13] = [
    "name",
    "payload",
    "workers",
    "Mpps",
    "Gbit/s",
    "cores",
    "Mpps/core",
    "relay Mpps",
    "cores",
    "Mpps/core",
    "ratio",
    "offered",
    "paper Mpps/core",
];

/// The table a person reads: per row the router, the relay beside it and the paper.
pub fn table(r: &ForwardReport) -> String {
    let mut out = header(r);
    let line = |c: &[String]| {
        let mut s = format!("{:<8} {:>7} {:>7}", c[0], c[1], c[2]);
        for v in &c[3..] {
            let _ = write!(s, " {v:>10}");
        }
        s + "\n"
    };
    out += &line(&COLUMNS.map(String::from));
    for m in &r.measured {
        out += &line(&cells(m));
    }
    out += &flyover_line(r);
    out
}

/// The report page: the same table.
pub fn html(r: &ForwardReport) -> String {
    let mut body = format!("<p>{}</p><table><tr>", escape(&header(r)));
    for c in COLUMNS {
        let _ = write!(body, "<th>{}</th>", escape(c));
    }
    body += "</tr>";
    for m in &r.measured {
        body += "<tr>";
        for c in cells(m) {
            let _ = write!(body, "<td>{}</td>", escape(&c));
        }
        body += "</tr>";
    }
    let _ = write!(
        body,
        "</table><p>{}</p><p>Columns after the payload: the router (Mpps, Gbit/s, cores, Mpps per core), the bare \
         UDP relay (recvmmsg → sendmmsg, no processing) with the same traffic, the router's rate over the relay's, \
         what the generator offered, and the Hummingbird paper's rate per core (§7.2 and Fig. 5: DPDK on a 2.1 GHz \
         Xeon, 123 ns per standard and 308 ns per flyover packet).</p>",
        escape(&flyover_line(r))
    );
    page("Forwarding rate of one router process beside a bare UDP relay", "", &body)
}
