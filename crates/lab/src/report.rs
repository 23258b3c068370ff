//! A self-contained HTML report of a demo run: the summary table and a goodput-over-time
//! plot (inline SVG, no scripts or external files, so it opens anywhere).

use std::fmt::Write;

use crate::demo::{DemoReport, FlowSummary};
use crate::html::{escape, page, y_peak, Axes, Series, Svg, YScale};

const W: f64 = 760.0;
const H: f64 = 320.0;

fn colour(kind: &str) -> &'static str {
    match kind {
        "reserved" => "#1b7f3a",
        "best_effort" => "#1f5fbf",
        _ => "#c0392b",
    }
}

/// Goodput of every flow over time, in Mbit/s, attack flows dashed.
fn plot(flows: &[FlowSummary], bin_ms: u64) -> String {
    let bins = flows.iter().map(|f| f.timeline_bps.len()).max().unwrap_or(0).max(1);
    let t_max = bins as f64 * bin_ms as f64 / 1000.0;
    let series: Vec<Series> = flows
        .iter()
        .map(|f| Series {
            name: f.name.clone(),
            colour: colour(&f.kind),
            dashed: f.kind == "attack",
            markers: false,
            points: f
                .timeline_bps
                .iter()
                .enumerate()
                .map(|(i, v)| ((i as f64 + 0.5) * bin_ms as f64 / 1000.0, *v as f64 / 1e6))
                .collect(),
        })
        .collect();
    let axes = Axes {
        title: None,
        x_label: "time (s)".into(),
        y_label: "goodput (Mbit/s)".into(),
        x_range: (0.0, t_max),
        x_ticks: (0..=5).map(|i| t_max * f64::from(i) / 5.0).map(|t| (t, format!("{t:.1}"))).collect(),
        y: YScale::linear_above(y_peak(&series)),
    };
    let mut svg = Svg::new(W, H);
    svg.panel((0.0, 0.0), (W, H), &axes, &series);
    svg.legend((W - 180.0, 42.0), (0.0, 16.0), &series);
    svg.finish()
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
    let body = format!(
        r#"<p>{desc}</p>
<p>Rates count whole SCION packets (headers included), the unit in which reservations are policed. Delays are one-way, sender to sink.</p>
<table><tr><th>flow</th><th>kind</th><th>offered Mbit/s</th><th>reserved Mbit/s</th><th>sent</th><th>received</th><th>goodput Mbit/s</th><th>loss</th><th>p50 ms</th><th>p99 ms</th></tr>
{rows}</table>
<h2>Goodput over time</h2>
{plot}
<p>Run directory (configs, logs): <code>{dir}</code></p>"#,
        desc = escape(&r.description),
        plot = plot(&r.flows, r.bin_ms),
        dir = escape(&r.run_dir),
    );
    page(&format!("aviary demo: {}", r.topology), "td:first-child,td:nth-child(2){text-align:left}", &body)
}
