//! What every HTML report of the lab shares: the page around it and line plots drawn as inline
//! SVG (no scripts or external files, so a report opens anywhere and can be mailed as is).

use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A whole report page: `title` (plain text) as the heading, `body` (HTML) below it, and the
/// house table style; `css` adds rules of the page's own.
pub(crate) fn page(title: &str, css: &str, body: &str) -> String {
    let title = escape(title);
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:840px;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}{css}</style>
</head><body>
<h1>{title}</h1>
{body}
</body></html>
"#
    )
}

/// One line of a plot, in data coordinates.
pub(crate) struct Series {
    pub name: String,
    pub colour: &'static str,
    pub dashed: bool,
    /// Draw a dot at every point, for curves known only at a few points.
    pub markers: bool,
    pub points: Vec<(f64, f64)>,
}

/// A plot's vertical axis.
#[derive(Clone, Copy)]
pub(crate) enum YScale {
    /// From 0 to `max`, with five grid lines.
    Linear { max: f64 },
    /// Decades `10^lo` to `10^hi`; zero and values below `10^lo` are drawn at the bottom.
    Log10 { lo: i32, hi: i32 },
}

impl YScale {
    /// A linear scale from 0 to a little above `peak`, four grid steps of 1, 2, 2.5 or 5 times a
    /// power of ten, so that the labels are round numbers.
    pub fn linear_above(peak: f64) -> Self {
        if !(peak > 0.0 && peak.is_finite()) {
            return YScale::Linear { max: 1.0 };
        }
        let raw = peak * 1.1 / 4.0;
        let decade = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * decade).find(|s| *s >= raw).unwrap_or(raw);
        YScale::Linear { max: step * 4.0 }
    }

    /// Position of `v` between 0 (bottom) and 1 (top).
    fn fraction(self, v: f64) -> f64 {
        match self {
            YScale::Linear { max } => v / max,
            YScale::Log10 { lo, hi } => {
                let e = if v > 0.0 { v.log10().max(f64::from(lo)) } else { f64::from(lo) };
                (e - f64::from(lo)) / f64::from(hi - lo)
            }
        }
    }

    fn grid(self) -> Vec<(f64, String)> {
        match self {
            YScale::Linear { max } => (0..=4)
                .map(|i| {
                    let v = max * f64::from(i) / 4.0;
                    (v, format!("{}", (v * 1e6).round() / 1e6))
                })
                .collect(),
            YScale::Log10 { lo, hi } => (lo..=hi).map(|e| (10f64.powi(e), format!("1e{e}"))).collect(),
        }
    }
}

/// What a panel shows besides its lines.
pub(crate) struct Axes {
    pub title: Option<String>,
    pub x_label: String,
    pub y_label: String,
    pub x_range: (f64, f64),
    /// Labelled positions on the x axis.
    pub x_ticks: Vec<(f64, String)>,
    pub y: YScale,
}

impl Axes {
    /// Axes whose x range spans every point of `series`, labelled at every integer.
    pub fn integer_x(series: &[Series], x_label: &str, y_label: &str, y: YScale) -> Self {
        let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 1.0) };
        Axes {
            title: None,
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_range: (lo, hi),
            x_ticks: (lo.ceil() as i64..=hi.floor() as i64).map(|k| (k as f64, k.to_string())).collect(),
            y,
        }
    }
}

/// The highest y of any point of `series` (0 if none).
pub(crate) fn y_peak(series: &[Series]) -> f64 {
    series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max)
}

/// Space around a panel's plotting area for tick labels and axis labels.
const PAD_L: f64 = 60.0;
const PAD_T: f64 = 28.0;
const PAD_B: f64 = 40.0;
const PAD_R: f64 = 12.0;

/// An SVG drawing of one or more panels and a legend.
pub(crate) struct Svg {
    s: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Svg {
            s: format!(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
            ),
        }
    }

    /// Draws one panel in the box at (`x`, `y`) of `width` × `height`, labels included.
    pub fn panel(&mut self, (x, y): (f64, f64), (width, height): (f64, f64), axes: &Axes, series: &[Series]) {
        let (left, right, top, bottom) = (x + PAD_L, x + width - PAD_R, y + PAD_T, y + height - PAD_B);
        let (x_lo, x_hi) = axes.x_range;
        let x_span = if x_hi > x_lo { x_hi - x_lo } else { 1.0 };
        let px = |v: f64| left + (v - x_lo) / x_span * (right - left);
        let py = |v: f64| bottom - axes.y.fraction(v) * (bottom - top);
        let s = &mut self.s;
        let _ = write!(
            s,
            r##"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            right - left,
            bottom - top
        );
        if let Some(t) = &axes.title {
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
                (left + right) / 2.0,
                top - 8.0,
                escape(t)
            );
        }
        for (v, label) in axes.y.grid() {
            let yv = py(v);
            let _ = write!(
                s,
                r##"<line x1="{left}" x2="{right}" y1="{yv:.1}" y2="{yv:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{label}</text>"##,
                left - 4.0,
                yv + 4.0
            );
        }
        for (v, label) in &axes.x_ticks {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                px(*v),
                bottom + 14.0,
                escape(label)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            (left + right) / 2.0,
            bottom + 30.0,
            escape(&axes.x_label)
        );
        let _ = write!(
            s,
            r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>"#,
            x + 14.0,
            (top + bottom) / 2.0,
            escape(&axes.y_label)
        );
        for ser in series {
            let (c, dash) = (ser.colour, dash(ser));
            let pts: Vec<String> = ser.points.iter().map(|(a, b)| format!("{:.1},{:.1}", px(*a), py(*b))).collect();
            let _ =
                write!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#, pts.join(" "));
            if ser.markers {
                for (a, b) in &ser.points {
                    let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#, px(*a), py(*b));
                }
            }
        }
    }

    /// A legend entry per series, the first at (`x`, `y`), each next one `step` further.
    pub fn legend(&mut self, (x, y): (f64, f64), step: (f64, f64), series: &[Series]) {
        for (k, ser) in series.iter().enumerate() {
            let (lx, ly) = (x + step.0 * k as f64, y + step.1 * k as f64);
            let (c, dash) = (ser.colour, dash(ser));
            let _ = write!(
                self.s,
                r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
                lx + 20.0,
                lx + 25.0,
                ly + 4.0,
                escape(&ser.name)
            );
        }
    }

    pub fn finish(mut self) -> String {
        self.s.push_str("</svg>");
        self.s
    }
}

fn dash(s: &Series) -> &'static str {
    if s.dashed {
        r#" stroke-dasharray="4 3""#
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, points: &[(f64, f64)]) -> Series {
        Series { name: name.into(), colour: "#000", dashed: false, markers: true, points: points.to_vec() }
    }

    #[test]
    fn points_land_inside_the_plotting_area_on_both_scales() {
        let series = [line("a", &[(1.0, 0.0), (2.0, 5.0), (3.0, 10.0)])];
        for y in [YScale::linear_above(10.0), YScale::Log10 { lo: -1, hi: 1 }] {
            let mut svg = Svg::new(400.0, 300.0);
            let axes = Axes::integer_x(&series, "x", "y", y);
            svg.panel((0.0, 0.0), (400.0, 300.0), &axes, &series);
            let out = svg.finish();
            let circles: Vec<(f64, f64)> = out
                .split("<circle cx=\"")
                .skip(1)
                .map(|c| {
                    let (cx, rest) = c.split_once("\" cy=\"").unwrap();
                    (cx.parse().unwrap(), rest.split_once('"').unwrap().0.parse().unwrap())
                })
                .collect();
            assert_eq!(circles.len(), 3);
            for (cx, cy) in &circles {
                assert!((PAD_L..=400.0 - PAD_R).contains(cx) && (PAD_T..=300.0 - PAD_B).contains(cy), "{cx},{cy}");
            }
            // The first x at the left edge, the last at the right; higher values higher up.
            assert_eq!(circles[0].0, PAD_L);
            assert_eq!(circles[2].0, 400.0 - PAD_R);
            assert!(circles[0].1 > circles[1].1 && circles[1].1 > circles[2].1);
        }
    }

    #[test]
    fn text_is_escaped_and_a_linear_scale_has_round_labels() {
        let series = [line("<a&b>", &[(0.0, 7.3)])];
        let mut svg = Svg::new(100.0, 100.0);
        svg.legend((0.0, 0.0), (0.0, 10.0), &series);
        assert!(svg.finish().contains("&lt;a&amp;b&gt;"));
        for (peak, max) in [(7.3, 10.0), (0.02, 0.04), (95.0, 200.0), (2.5, 4.0), (0.0, 1.0)] {
            let YScale::Linear { max: got } = YScale::linear_above(peak) else { unreachable!() };
            assert!((got - max).abs() < 1e-12, "{peak}: {got} != {max}");
        }
        assert_eq!(page("a<b", "", "x").matches("a&lt;b").count(), 2);
    }
}
