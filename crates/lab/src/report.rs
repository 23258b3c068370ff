//! A self-contained HTML report of a demo run: the summary table and a goodput-over-time
//! plot (inline SVG, no scripts or external files, so it opens anywhere).

use std::fmt::Write;

use crate::demo::{DemoReport, FlowSummary};

const W: f64 = 760.0;
const H: f64 = 320.0;
const PAD_L: f64 = 64.0;
const PAD_R: f64 = 16.0;
const PAD_T: f64 = 16.0;
const PAD_B: f64 = 40.0;

fn colour(kind: &str) -> &'static str {
    match kind {
        "reserved" => "#1b7f3a",
        "best_effort" => "#1f5fbf",
        _ => "#c0392b",
    }
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Goodput of every flow over time, in Mbit/s.
fn plot(flows: &[FlowSummary], bin_ms: u64) -> String {
    let bins = flows.iter().map(|f| f.timeline_bps.len()).max().unwrap_or(0).max(1);
    let peak = flows.iter().flat_map(|f| f.timeline_bps.iter().copied()).max().unwrap_or(1).max(1) as f64 / 1e6;
    // A multiple of the four grid steps, so that the axis labels are round numbers.
    let y_max = ((peak * 1.1) / 4.0).ceil().max(1.0) * 4.0;
    let t_max = bins as f64 * bin_ms as f64 / 1000.0;
    let x = |t: f64| PAD_L + t / t_max * (W - PAD_L - PAD_R);
    let y = |v: f64| H - PAD_B - v / y_max * (H - PAD_T - PAD_B);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r##"<rect x="{PAD_L}" y="{PAD_T}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
        W - PAD_L - PAD_R,
        H - PAD_T - PAD_B
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let (x2, yv, tx, ty) = (W - PAD_R, y(v), PAD_L - 6.0, y(v) + 4.0);
        let _ = write!(
            s,
            r##"<line x1="{PAD_L}" x2="{x2}" y1="{yv:.1}" y2="{yv:.1}" stroke="#eee"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{v:.1}</text>"##
        );
    }
    for i in 0..=5 {
        let t = t_max * f64::from(i) / 5.0;
        let _ = write!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{t:.1}</text>"#, x(t), H - PAD_B + 16.0);
    }
    let _ =
        write!(s, r#"<text x="{}" y="{}" text-anchor="middle">time (s)</text>"#, (PAD_L + W - PAD_R) / 2.0, H - 6.0);
    let _ = write!(
        s,
        r#"<text transform="translate(14,{}) rotate(-90)" text-anchor="middle">goodput (Mbit/s)</text>"#,
        (PAD_T + H - PAD_B) / 2.0
    );
    for (k, f) in flows.iter().enumerate() {
        let pts: Vec<String> = f
            .timeline_bps
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x((i as f64 + 0.5) * bin_ms as f64 / 1000.0), y(*v as f64 / 1e6)))
            .collect();
        let c = colour(&f.kind);
        let dash = if f.kind == "attack" { r#" stroke-dasharray="4 3""# } else { "" };
        let _ = write!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#, pts.join(" "));
        let ly = PAD_T + 14.0 + 16.0 * k as f64;
        let _ = write!(
            s,
            r#"<line x1="{0}" x2="{1}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/><text x="{2}" y="{3}">{4}</text>"#,
            W - PAD_R - 170.0,
            W - PAD_R - 150.0,
            W - PAD_R - 145.0,
            ly + 4.0,
            escape(&f.name)
        );
    }
    s.push_str("</svg>");
    s
}

/// The whole report page.
pub fn html(r: &DemoReport) -> String {
    let mut rows = String::new();
    for f in &r.flows {
        let reserved = f.reserved_bps.map_or("–".to_string(), |b| format!("{:.2}", b as f64 / 1e6));
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{reserved}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}%</td><td>{:.1}</td><td>{:.1}</td></tr>",
            escape(&f.name),
            escape(&f.kind),
            f.offered_bps as f64 / 1e6,
            f.sent_packets,
            f.received_packets,
            f.goodput_bps as f64 / 1e6,
            f.loss * 100.0,
            f.p50_ms,
            f.p99_ms
        );
    }
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>aviary demo: {topo}</title>
<style>body{{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child,td:nth-child(2){{text-align:left}}</style>
</head><body>
<h1>aviary demo: {topo}</h1>
<p>{desc}</p>
<p>Rates count whole SCION packets (headers included), the unit in which reservations are policed. Delays are one-way, sender to sink.</p>
<table><tr><th>flow</th><th>kind</th><th>offered Mbit/s</th><th>reserved Mbit/s</th><th>sent</th><th>received</th><th>goodput Mbit/s</th><th>loss</th><th>p50 ms</th><th>p99 ms</th></tr>
{rows}</table>
<h2>Goodput over time</h2>
{plot}
<p>Run directory (configs, logs): <code>{dir}</code></p>
</body></html>
"#,
        topo = escape(&r.topology),
        desc = escape(&r.description),
        plot = plot(&r.flows, r.bin_ms),
        dir = escape(&r.run_dir),
    )
}
