//! The HTML report of `aviary lab pathval --report`: the tables and two plots (Fig. 4 and
//! Fig. 10) as inline SVG, no scripts or external files.

use std::fmt::Write;

use crate::pathval::{ordered, PathvalReport};

const W: f64 = 640.0;
const H: f64 = 300.0;
const PAD_L: f64 = 56.0;
const PAD_R: f64 = 150.0;
const PAD_T: f64 = 14.0;
const PAD_B: f64 = 40.0;
const COLOURS: [&str; 11] = [
    "#1f5fbf", "#c0392b", "#1b7f3a", "#8e44ad", "#d35400", "#16a085", "#2c3e50", "#b7950b", "#7f8c8d", "#e84393",
    "#000",
];

/// One line of a plot.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

fn line_plot(series: &[Series], x_label: &str, y_label: &str) -> String {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let y_peak = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let y_max = if y_peak > 0.0 { y_peak * 1.1 } else { 1.0 };
    let x_span = (x_max - x_min).max(1.0);
    let x = |v: f64| PAD_L + (v - x_min) / x_span * (W - PAD_L - PAD_R);
    let y = |v: f64| H - PAD_B - v / y_max * (H - PAD_T - PAD_B);
    let mut s = format!(
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
        let _ = write!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{v:.1}</text>"#, PAD_L - 6.0, y(v) + 4.0);
    }
    for k in (x_min as i64)..=(x_max as i64) {
        let _ = write!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{k}</text>"#, x(k as f64), H - PAD_B + 16.0);
    }
    let _ =
        write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{x_label}</text>"#, (PAD_L + W - PAD_R) / 2.0, H - 6.0);
    let _ = write!(
        s,
        r#"<text transform="translate(14,{}) rotate(-90)" text-anchor="middle">{y_label}</text>"#,
        (PAD_T + H - PAD_B) / 2.0
    );
    for (k, ser) in series.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let dash = if ser.dashed { r#" stroke-dasharray="4 3""# } else { "" };
        let pts: Vec<String> = ser.points.iter().map(|(a, b)| format!("{:.1},{:.1}", x(*a), y(*b))).collect();
        let _ = write!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#, pts.join(" "));
        let ly = PAD_T + 10.0 + 15.0 * k as f64;
        let lx = W - PAD_R + 10.0;
        let _ = write!(
            s,
            r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 18.0,
            lx + 22.0,
            ly + 4.0,
            ser.name
        );
    }
    s.push_str("</svg>");
    s
}

/// The report page.
pub fn html(r: &PathvalReport) -> String {
    let fig4: Vec<Series> = ordered(&r.by_n)
        .into_iter()
        .filter(|(n, _)| *n >= 3)
        .map(|(n, l)| Series {
            name: format!("N = {n}"),
            points: l.fig4_counts.iter().enumerate().map(|(i, c)| ((i + 1) as f64, *c as f64)).collect(),
            dashed: false,
        })
        .collect();
    let lengths = ordered(&r.by_n);
    let fig10 = [
        Series {
            name: "measured".into(),
            points: lengths.iter().map(|(n, l)| (*n as f64, l.fig10_mean_samples)).collect(),
            dashed: false,
        },
        Series {
            name: "ln N + 0.5772".into(),
            points: lengths.iter().map(|(n, l)| (*n as f64, l.fig10_paper)).collect(),
            dashed: true,
        },
        Series {
            name: "H(N-1)".into(),
            points: lengths.iter().map(|(n, l)| (*n as f64, l.fig10_exact)).collect(),
            dashed: true,
        },
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
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>aviary lab pathval</title>
<style>body{{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style>
</head><body>
<h1>aviary lab pathval</h1>
<p>Path validation over dynamic paths (<i>Hummingbird: Dynamic Path Validation with Hidden Equal-Probability Sampling</i>), measured by sending {packets} packets per path length through the real source, router and destination processing. N counts the nodes of a path, source and destination included.</p>
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
<p>Where the paper's closed forms and these measurements differ, docs/pathval.md says why.</p>
</body></html>
"#,
        fig4 = line_plot(&fig4, "sampling node", "packets"),
        attack_packets = r.detection.packets,
        detection = crate::pathval_attack::html_table(&r.detection),
        fig10 = line_plot(&fig10, "N (nodes on the path)", "samples per packet"),
    )
}
