//! The HTML report of `aviary lab zlane-model`: Fig. 4 redrawn as inline SVG (one panel per
//! `F`, as in the paper, log-scale throughput over the routers) and the table.

use std::fmt::Write;

use aviary_zlane::model::Mechanism;

use super::{gbps, paper_value, ratios_at_third_router, ZlaneModelReport, PAPER_RATIO, PAPER_RATIO_ROUTER};
use crate::html::{escape, page, Axes, Series, Svg, YScale};

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 280.0;
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
fn decades(r: &ZlaneModelReport) -> YScale {
    let values = r.curves().iter().flat_map(|m| m.curves.iter().flat_map(|c| c.throughput_gbps.iter().copied()));
    let (lo, hi) = values.filter(|v| *v > 0.0).fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return YScale::Log10 { lo: -1, hi: 1 };
    }
    let lo_decade = lo.log10().floor() as i32;
    YScale::Log10 { lo: lo_decade, hi: (hi.log10().ceil() as i32).max(lo_decade + 1) }
}

/// Fig. 4: a 2 x 2 grid of panels, one per `F`, routers on x, log throughput on y.
fn plot(r: &ZlaneModelReport) -> String {
    let rates = &r.params().offered_rates_gbps;
    let routers = r.params().n_routers;
    let y = decades(r);
    let cols = 2usize;
    let rows = rates.len().div_ceil(cols);
    let (w, h) = (PANEL_W * cols as f64, PANEL_H * rows as f64 + LEGEND_H);
    let curves = |i: usize| -> Vec<Series> {
        Mechanism::ALL
            .into_iter()
            .map(|m| Series {
                name: m.label().into(),
                colour: colour(m),
                dashed: false,
                markers: true,
                points: (1..=routers).map(|n| (n as f64, r.at(m, i, n))).collect(),
            })
            .collect()
    };
    let mut svg = Svg::new(w, h);
    for (i, &f) in rates.iter().enumerate() {
        let series = curves(i);
        let mut axes = Axes::integer_x(&series, "on-path router", "Gbit/s", y);
        axes.title = Some(format!("F = {f} Gbit/s"));
        svg.panel(((i % cols) as f64 * PANEL_W, (i / cols) as f64 * PANEL_H), (PANEL_W, PANEL_H), &axes, &series);
    }
    svg.legend((60.0, h - LEGEND_H / 2.0), (170.0, 0.0), &curves(0));
    svg.finish()
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
    let body = format!(
        r#"<p>The source AS's throughput at each of the {routers} on-path routers, every router attacked with D = {d} Gbit/s
(C = {c} Gbit/s, &mu;<sub>A</sub> = {mu_a}, &mu;<sub>G</sub> = {mu_g}, T = {t} Gbit/s, r<sub>S</sub> = {r_s} Gbit/s,
r<sub>I</sub> = {r_i} Gbit/s; {inside}). Model and its choices: docs/zlane.md
(Z-Lane paper, Eq. (1) and (2)).</p>
{plot}
<p>Z-Lane over FIFO at router {ratio_router}: {ratios}; the paper: "up to {paper_ratio} times".
"paper" columns: what §5.3's text states about Fig. 4; no value is estimated from the figure.</p>
<h2>Throughput (Gbit/s)</h2>
{tables}"#,
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
    );
    page("Z-Lane under DDoS: Fig. 4 from the model of §5", "td:nth-child(2){text-align:left}", &body)
}
