//! The HTML report of `aviary lab zlane-model`: Fig. 4 redrawn as inline SVG (one panel per
//! `F`, as in the paper, log-scale throughput over the routers) and the table.

use std::fmt::Write;

use aviary_zlane::model::Mechanism;

use super::{gbps, paper_value, ratios_at_third_router, ZlaneModelReport, PAPER_RATIO, PAPER_RATIO_ROUTER};
use crate::report::escape;

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 280.0;
const PAD_L: f64 = 56.0;
const PAD_R: f64 = 12.0;
const PAD_T: f64 = 28.0;
const PAD_B: f64 = 40.0;
const LEGEND_H: f64 = 28.0;

fn colour(m: Mechanism) -> &'static str {
    match m {
        Mechanism::ZLane => "#1b7f3a",
        Mechanism::Fifo => "#c0392b",
        Mechanism::PerFlowFairness => "#8e44ad",
        Mechanism::LocalIsolation => "#1f5fbf",
    }
}

/// Decades of the log axis: every positive value of every curve fits, zero is drawn at the
/// bottom.
fn decades(r: &ZlaneModelReport) -> (i32, i32) {
    let values = r.curves().iter().flat_map(|m| m.curves.iter().flat_map(|c| c.throughput_gbps.iter().copied()));
    let (lo, hi) = values.filter(|v| *v > 0.0).fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (-1, 1);
    }
    (lo.log10().floor() as i32, (hi.log10().ceil() as i32).max(lo.log10().floor() as i32 + 1))
}

/// Fig. 4: a 2 x 2 grid of panels, one per `F`, routers on x, log throughput on y.
fn plot(r: &ZlaneModelReport) -> String {
    let rates = &r.params().offered_rates_gbps;
    let routers = r.params().n_routers;
    let (lo, hi) = decades(r);
    let cols = 2usize;
    let rows = rates.len().div_ceil(cols);
    let (w, h) = (PANEL_W * cols as f64, PANEL_H * rows as f64 + LEGEND_H);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    for (i, &f) in rates.iter().enumerate() {
        let (ox, oy) = ((i % cols) as f64 * PANEL_W, (i / cols) as f64 * PANEL_H);
        let (left, right, top, bottom) = (ox + PAD_L, ox + PANEL_W - PAD_R, oy + PAD_T, oy + PANEL_H - PAD_B);
        let x = |n: usize| left + (n as f64 - 1.0) / (routers.max(2) as f64 - 1.0) * (right - left);
        let y = |v: f64| {
            let e = if v > 0.0 { v.log10().max(f64::from(lo)) } else { f64::from(lo) };
            bottom - (e - f64::from(lo)) / f64::from(hi - lo) * (bottom - top)
        };
        let _ = write!(
            s,
            r##"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="#888"/><text x="{}" y="{}" text-anchor="middle" font-weight="bold">F = {f} Gbit/s</text>"##,
            right - left,
            bottom - top,
            (left + right) / 2.0,
            top - 8.0
        );
        for e in lo..=hi {
            let yv = y(10f64.powi(e));
            let _ = write!(
                s,
                r##"<line x1="{left}" x2="{right}" y1="{yv:.1}" y2="{yv:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">1e{e}</text>"##,
                left - 4.0,
                yv + 4.0
            );
        }
        for n in 1..=routers {
            let _ = write!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle">{n}</text>"#, x(n), bottom + 14.0);
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">on-path router</text>"#,
            (left + right) / 2.0,
            bottom + 30.0
        );
        let _ = write!(
            s,
            r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">Gbit/s</text>"#,
            ox + 14.0,
            (top + bottom) / 2.0
        );
        for m in Mechanism::ALL {
            let points: Vec<(f64, f64)> = (1..=routers).map(|n| (x(n), y(r.at(m, i, n)))).collect();
            let line: Vec<String> = points.iter().map(|(px, py)| format!("{px:.1},{py:.1}")).collect();
            let c = colour(m);
            let _ = write!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#, line.join(" "));
            for (px, py) in points {
                let _ = write!(s, r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.5" fill="{c}"/>"#);
            }
        }
    }
    let ly = h - LEGEND_H / 2.0;
    for (k, m) in Mechanism::ALL.into_iter().enumerate() {
        let lx = PAD_L + 170.0 * k as f64;
        let c = colour(m);
        let _ = write!(
            s,
            r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            lx + 20.0,
            lx + 25.0,
            ly + 4.0,
            escape(m.label())
        );
    }
    s.push_str("</svg>");
    s
}

fn tables(r: &ZlaneModelReport) -> String {
    let mut out = String::new();
    for (i, &f) in r.params().offered_rates_gbps.iter().enumerate() {
        let _ = write!(
            out,
            "<h3>F = {f} Gbit/s</h3><table><tr><th>router</th><th>ISD</th><th>Z-Lane</th><th>paper</th><th>FIFO</th><th>per-flow fairness</th><th>local isolation</th><th>paper</th></tr>"
        );
        for n in 1..=r.params().n_routers {
            let isd = if n <= r.params().j { "inside" } else { "outside" };
            let paper = |m| paper_value(m, f, n).map_or("–".to_string(), |v| escape(&v.to_string()));
            let _ = write!(
                out,
                "<tr><td>{n}</td><td>{isd}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                gbps(r.at(Mechanism::ZLane, i, n)),
                paper(Mechanism::ZLane),
                gbps(r.at(Mechanism::Fifo, i, n)),
                gbps(r.at(Mechanism::PerFlowFairness, i, n)),
                gbps(r.at(Mechanism::LocalIsolation, i, n)),
                paper(Mechanism::LocalIsolation),
            );
        }
        out.push_str("</table>");
    }
    out
}

/// The whole report page (no scripts or external files).
pub fn html(r: &ZlaneModelReport) -> String {
    let p = r.params();
    let ratios: Vec<String> =
        ratios_at_third_router(r).iter().map(|(f, x)| format!("{x:.1}&times; (F = {f})")).collect();
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>aviary lab zlane-model</title>
<style>body{{font-family:sans-serif;max-width:840px;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:nth-child(2){{text-align:left}}</style>
</head><body>
<h1>Z-Lane under DDoS: Fig. 4 from the model of §5</h1>
<p>The source AS's throughput at each of the {routers} on-path routers, every router attacked with D = {d} Gbit/s
(C = {c} Gbit/s, &mu;<sub>A</sub> = {mu_a}, &mu;<sub>G</sub> = {mu_g}, T = {t} Gbit/s, r<sub>S</sub> = {r_s} Gbit/s,
r<sub>I</sub> = {r_i} Gbit/s; {inside}). Model and its choices: docs/zlane.md
(Z-Lane paper, Eq. (1) and (2)).</p>
{plot}
<p>Z-Lane over FIFO at router {ratio_router}: {ratios}; the paper: "up to {paper_ratio} times".
"paper" columns: what §5.3's text states about Fig. 4; no value is estimated from the figure.</p>
<h2>Throughput (Gbit/s)</h2>
{tables}
</body></html>
"#,
        routers = p.n_routers,
        d = p.attack_gbps,
        c = p.capacity_gbps,
        mu_a = p.share_authenticated,
        mu_g = p.share_guaranteed,
        t = p.isd_other_traffic_gbps,
        r_s = p.source_as_rate_gbps,
        r_i = p.source_isd_rate_gbps,
        inside = escape(&super::inside_source_isd(p.j)),
        plot = plot(r),
        ratio_router = PAPER_RATIO_ROUTER,
        ratios = ratios.join(", "),
        paper_ratio = PAPER_RATIO,
        tables = tables(r),
    )
}
