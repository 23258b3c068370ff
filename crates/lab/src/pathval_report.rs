//! The HTML report of `aviary lab pathval --report`: the tables and two plots (Fig. 4 and
//! Fig. 10) as inline SVG, no scripts or external files.

use std::fmt::Write;

use crate::html::{page, y_peak, Axes, Series, Svg, YScale};
use crate::pathval::{ordered, PathvalReport};

const COLOURS: [&str; 11] = [
    "#1f5fbf", "#c0392b", "#1b7f3a", "#8e44ad", "#d35400", "#16a085", "#2c3e50", "#b7950b", "#7f8c8d", "#e84393",
    "#000",
];
const W: f64 = 640.0;
const H: f64 = 300.0;
const LEGEND_W: f64 = 140.0;

fn series(k: usize, name: String, dashed: bool, points: Vec<(f64, f64)>) -> Series {
    Series { name, colour: COLOURS[k % COLOURS.len()], dashed, markers: false, points }
}

/// One plot of `series` over integer x, the legend on its right.
fn line_plot(series: &[Series], x_label: &str, y_label: &str) -> String {
    let axes = Axes::integer_x(series, x_label, y_label, YScale::linear_above(y_peak(series)));
    let mut svg = Svg::new(W, H);
    svg.panel((0.0, 0.0), (W - LEGEND_W, H), &axes, series);
    svg.legend((W - LEGEND_W + 8.0, 36.0), (0.0, 15.0), series);
    svg.finish()
}

/// The report page.
pub fn html(r: &PathvalReport) -> String {
    let fig4: Vec<Series> = ordered(&r.by_n)
        .into_iter()
        .filter(|(n, _)| *n >= 3)
        .enumerate()
        .map(|(k, (n, l))| {
            let points = l.fig4_counts.iter().enumerate().map(|(i, c)| ((i + 1) as f64, *c as f64)).collect();
            series(k, format!("N = {n}"), false, points)
        })
        .collect();
    let lengths = ordered(&r.by_n);
    let fig10 = [
        series(0, "measured".into(), false, lengths.iter().map(|(n, l)| (*n as f64, l.fig10_mean_samples)).collect()),
        series(1, "ln N + 0.5772".into(), true, lengths.iter().map(|(n, l)| (*n as f64, l.fig10_paper)).collect()),
        series(2, "H(N-1)".into(), true, lengths.iter().map(|(n, l)| (*n as f64, l.fig10_exact)).collect()),
    ];
    let mut rows5 = String::new();
    for (n, c) in ordered(&r.table5) {
        let _ = write!(
            rows5,
            "<tr><td>{n}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
            c.covers, c.mean_packets, c.paper
        );
    }
    let mut rows4 = String::new();
    for (name, ns) in &r.timing_ns {
        let _ = write!(rows4, "<tr><td>{name}</td><td>{ns:.0}</td></tr>");
    }
    let packets = lengths.first().map_or(0, |(_, l)| l.packets);
    let body = format!(
        r#"<p>Path validation over dynamic paths (<i>Hummingbird: Dynamic Path Validation with Hidden Equal-Probability Sampling</i>), measured by sending {packets} packets per path length through the real source, router and destination processing. N counts the nodes of a path, source and destination included.</p>
<h2>Fig. 4: packets last sampled at each node</h2>
<p>x: the sampling node (1 = source); equal-probability sampling puts packets/(N&minus;1) at every node.</p>
{fig4}
<h2>Fig. 10: samples per packet</h2>
{fig10}
<h2>Table V: packets until every segment is covered</h2>
<table><tr><th>N</th><th>covers</th><th>measured mean</th><th>paper N/(ln N + 0.5772)</th></tr>{rows5}</table>
<h2>Table IV: ns per call (1000-byte payload)</h2>
<table><tr><th>function</th><th>ns</th></tr>{rows4}</table>
<h2>Detection rate per attack</h2>
<p>An untrusted router after node &lfloor;(N&minus;3)/2&rfloor; (the source is node 0) attacks {attack_packets} packets per cell; a packet is detected when a trusted node drops it. Hover a cell for the counts and the rate the analysis predicts.</p>
{detection}
<p>Where the paper's closed forms and these measurements differ, docs/pathval.md says why.</p>"#,
        fig4 = line_plot(&fig4, "sampling node", "packets"),
        attack_packets = r.detection.packets,
        detection = crate::pathval_attack::html_table(&r.detection),
        fig10 = line_plot(&fig10, "N (nodes on the path)", "samples per packet"),
    );
    page("aviary lab pathval", "", &body)
}
