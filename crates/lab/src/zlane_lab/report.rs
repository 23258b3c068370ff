//! The tables of `aviary lab zlane`, text and HTML, with the paper's Table 4 beside ours.

use std::fmt::Write;

use super::{PolicyRun, ZlaneLabReport, CONGESTED_AS, CONGESTED_INTERFACE, PROTECTED_AS};
use crate::html::{escape, page};

/// What the Z-Lane paper states of its border-router DDoS experiment (§6, Table 4), Gbit/s.
/// The text gives AS X's row and the totals only; the other cells are not stated.
pub struct PaperTable4 {
    pub capacity_gbps: f64,
    pub attack_gbps: f64,
    pub as_x_in_gbps: f64,
    pub as_x_out_gbps: f64,
}

pub const PAPER: PaperTable4 =
    PaperTable4 { capacity_gbps: 40.0, attack_gbps: 159.072, as_x_in_gbps: 0.928, as_x_out_gbps: 0.927 };

fn mbps(bps: u64) -> String {
    format!("{:.2}", bps as f64 / 1e6)
}

fn header(r: &ZlaneLabReport) -> String {
    let offered: u64 = r.runs.first().map_or(0, |run| run.flows.iter().map(|f| f.offered_bps).sum());
    format!(
        "egress {CONGESTED_INTERFACE} of {CONGESTED_AS}: {} Mbit/s, offered {} Mbit/s ({:.1}x); {PROTECTED_AS}'s \
         guarantee {} Mbit/s (paper: {} Gbit/s, {} Gbit/s offered ({:.1}x), AS X's guarantee {} Gbit/s)\n",
        mbps(r.capacity_bps),
        mbps(offered),
        offered as f64 / r.capacity_bps as f64,
        mbps(r.protected_guarantee_bps),
        PAPER.capacity_gbps,
        PAPER.attack_gbps + PAPER.as_x_in_gbps,
        (PAPER.attack_gbps + PAPER.as_x_in_gbps) / PAPER.capacity_gbps,
        PAPER.as_x_in_gbps,
    )
}

fn protected_line(run: &PolicyRun) -> (u64, u64) {
    run.flows.first().map_or((0, 0), |f| (f.offered_bps, f.goodput_bps))
}

/// The table a person reads: per policy, every class on the congested egress and the
/// protected AS, Mbit/s, with the paper's AS X beside it.
pub fn table(r: &ZlaneLabReport) -> String {
    let mut out = header(r);
    for run in &r.runs {
        let _ = writeln!(out, "\npolicy {}", run.policy.name());
        let _ = writeln!(out, "{:<14} {:>9} {:>9} {:>9}", "class", "offered", "forwarded", "dropped");
        for c in &run.classes {
            let _ = writeln!(
                out,
                "{:<14} {:>9} {:>9} {:>9}",
                c.class,
                mbps(c.offered_bps),
                mbps(c.forwarded_bps),
                mbps(c.dropped_bps)
            );
        }
        let (offered, goodput) = protected_line(run);
        let _ = writeln!(
            out,
            "{:<14} {:>9} {:>9} {:>9}   share {:.1} % of its guarantee   paper AS X: in {} out {} Gbit/s ({:.1} %)",
            "protected AS",
            mbps(offered),
            mbps(goodput),
            mbps(offered.saturating_sub(goodput)),
            run.protected_share * 100.0,
            PAPER.as_x_in_gbps,
            PAPER.as_x_out_gbps,
            PAPER.as_x_out_gbps / PAPER.as_x_in_gbps * 100.0
        );
    }
    out
}

/// The report page: the same tables, and every flow as sent and received.
pub fn html(r: &ZlaneLabReport) -> String {
    let mut body = format!("<p>{}</p>", escape(&header(r)));
    for run in &r.runs {
        let _ = write!(
            body,
            "<h2>policy {}</h2><table><tr><th>class</th><th>offered Mbit/s</th><th>forwarded</th><th>dropped</th></tr>",
            run.policy.name()
        );
        for c in &run.classes {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.class),
                mbps(c.offered_bps),
                mbps(c.forwarded_bps),
                mbps(c.dropped_bps)
            );
        }
        body += "</table><table><tr><th>flow</th><th>offered Mbit/s</th><th>goodput</th><th>loss</th></tr>";
        for f in &run.flows {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1} %</td></tr>",
                escape(&f.name),
                mbps(f.offered_bps),
                mbps(f.goodput_bps),
                f.loss * 100.0
            );
        }
        let _ = write!(
            body,
            "</table><p>protected AS: {:.1} % of its guarantee (paper, AS X: {} of {} Gbit/s)</p>",
            run.protected_share * 100.0,
            PAPER.as_x_out_gbps,
            PAPER.as_x_in_gbps
        );
    }
    page("Z-Lane under DDoS: one congested border router", "", &body)
}
