//! The tables of `aviary lab glwp`, text and HTML, with what the GLWP paper states beside ours.

use std::fmt::Write;

use super::{FlowRow, GlwpLabReport};
use crate::html::{escape, page};

/// What the GLWP paper states of these properties. It gives no goodput figures for them
/// (its evaluation, §VII, measures the data plane's speed); these are its claims, and its
/// per-packet time at an on-path router, which `aviary bench` compares with ours.
pub struct PaperClaims {
    pub guaranteed: &'static str,
    pub overuse: &'static str,
    pub flood: &'static str,
    pub replay: &'static str,
    pub router_ns_per_packet: u32,
}

pub const PAPER: PaperClaims = PaperClaims {
    guaranteed: "keeps its allocation (F7, no figure)",
    overuse: "detected and cut back by the monitor (F4, no figure)",
    flood: "isolated in its own queue (F7, no figure)",
    replay: "suppressed, not charged to the source (F8, no figure)",
    router_ns_per_packet: 280,
};

fn mbps(bps: u64) -> String {
    format!("{:.2}", bps as f64 / 1e6)
}

fn paper_for(row: &FlowRow) -> &'static str {
    match (row.summary.name.as_str(), row.allocation_bps) {
        ("guaranteed", _) => PAPER.guaranteed,
        (_, Some(_)) => PAPER.overuse,
        _ => PAPER.flood,
    }
}

fn header(r: &GlwpLabReport) -> String {
    format!(
        "bottleneck {}: {} Mbit/s; {} s of the guaranteed flow; paper: no goodput figures, an on-path router \
         takes about {} ns per packet (aviary bench has ours)\n",
        r.bottleneck,
        mbps(r.bottleneck_bps),
        r.duration_s,
        PAPER.router_ns_per_packet
    )
}

/// The table a person reads: the allocations, every flow against its allocation, and what
/// the routers' monitors and duplicate filters dropped.
pub fn table(r: &GlwpLabReport) -> String {
    let mut out = header(r);
    let _ = writeln!(out, "\nallocations (POST /v1/glwp/discover)");
    let _ = writeln!(out, "{:<12} {:<16} {:>10} {:>12}  path", "flow", "AID", "G Mbit/s", "β kbit/s");
    for a in &r.allocations {
        let path: Vec<String> = a.path.iter().map(|ia| ia.to_string()).collect();
        let _ = writeln!(
            out,
            "{:<12} {:<16} {:>10} {:>12}  {}",
            a.flow,
            a.aid,
            mbps(a.guarantee_bps),
            a.beta_kbps,
            path.join(" > ")
        );
    }
    let _ = writeln!(out, "\nflows (Mbit/s at the sink)");
    let _ = writeln!(
        out,
        "{:<12} {:>9} {:>10} {:>9} {:>9}  {:<36} paper",
        "flow", "offered", "allocation", "goodput", "share", "role"
    );
    for f in &r.flows {
        let _ = writeln!(
            out,
            "{:<12} {:>9} {:>10} {:>9} {:>9}  {:<36} {}",
            f.summary.name,
            mbps(f.summary.offered_bps),
            f.allocation_bps.map_or("-".into(), mbps),
            mbps(f.summary.goodput_bps),
            f.share_of_allocation.map_or("-".into(), |s| format!("{:.1} %", s * 100.0)),
            f.role,
            paper_for(f)
        );
    }
    let _ = writeln!(
        out,
        "\nreplayed copies of the guaranteed flow's packets: {}   paper: {}",
        r.replayed_packets, PAPER.replay
    );
    let _ = writeln!(out, "GLWP drops at the routers (this run)");
    for d in &r.routers {
        let drops: Vec<String> = d.drops.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            out,
            "  {:<16} {}",
            d.ia.to_string(),
            if drops.is_empty() { "-".into() } else { drops.join(", ") }
        );
    }
    out
}

/// The report page: the same tables.
pub fn html(r: &GlwpLabReport) -> String {
    let mut body = format!("<p>{}</p>", escape(&header(r)));
    body +=
        "<h2>allocations</h2><table><tr><th>flow</th><th>AID</th><th>G Mbit/s</th><th>β kbit/s</th><th>path</th></tr>";
    for a in &r.allocations {
        let path: Vec<String> = a.path.iter().map(|ia| ia.to_string()).collect();
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&a.flow),
            escape(&a.aid),
            mbps(a.guarantee_bps),
            a.beta_kbps,
            escape(&path.join(" > "))
        );
    }
    body += "</table><h2>flows</h2><table><tr><th>flow</th><th>role</th><th>offered Mbit/s</th><th>allocation</th>\
             <th>goodput</th><th>share</th><th>loss</th><th>paper</th></tr>";
    for f in &r.flows {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td></tr>",
            escape(&f.summary.name),
            escape(&f.role),
            mbps(f.summary.offered_bps),
            f.allocation_bps.map_or("-".into(), mbps),
            mbps(f.summary.goodput_bps),
            f.share_of_allocation.map_or("-".into(), |s| format!("{:.1} %", s * 100.0)),
            f.summary.loss * 100.0,
            escape(paper_for(f))
        );
    }
    let _ = write!(
        body,
        "</table><p>replayed copies of the guaranteed flow's packets: {} (paper: {})</p>\
         <h2>GLWP drops at the routers</h2><table><tr><th>AS</th><th>reason</th><th>packets</th></tr>",
        r.replayed_packets,
        escape(PAPER.replay)
    );
    for d in &r.routers {
        for (reason, n) in &d.drops {
            let _ = write!(body, "<tr><td>{}</td><td>{}</td><td>{n}</td></tr>", d.ia, escape(reason));
        }
    }
    body += "</table>";
    page("GLWP under overuse, replays and a flood", "", &body)
}
