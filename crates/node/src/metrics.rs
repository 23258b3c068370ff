//! The Prometheus text exposition format (version 0.0.4), written by every daemon: counters,
//! gauges and histograms with labels, each family with its `# HELP` and `# TYPE` lines before
//! its samples, label values and help texts escaped as the format requires. A
//! [`MetricsServer`] serves a daemon's text over HTTP when the daemon has no API of its own.
//!
//! ```
//! use aviary_node::metrics::{Exposition, Kind};
//! let mut out = Exposition::new();
//! out.family("aviary_example_total", Kind::Counter, "Things seen.").sample(&[("flow", "a")], 3u64);
//! assert_eq!(out.finish(), "# HELP aviary_example_total Things seen.\n# TYPE aviary_example_total counter\naviary_example_total{flow=\"a\"} 3\n");
//! ```

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::http::server::{Limits, Server, ServerStats};
use crate::http::{Request, Response};

/// Content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// The type of a metric family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A sample value: integers are written exactly, floats as the format spells them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) if v.is_nan() => f.write_str("NaN"),
            Value::Float(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Value::Float(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

/// Whether `name` is a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
pub fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Whether `name` is a valid label name (`[a-zA-Z_][a-zA-Z0-9_]*`).
pub fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Appends `value` with `\`, `"` and line feeds escaped (label values).
fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Appends `help` with `\` and line feeds escaped (HELP lines).
fn escape_help(out: &mut String, help: &str) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A document in the text format, built family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a family: its HELP and TYPE lines. Its samples follow through the returned
    /// [`Family`], so the samples of a family always stay together.
    pub fn family<'a>(&'a mut self, name: &'a str, kind: Kind, help: &str) -> Family<'a> {
        debug_assert!(is_metric_name(name), "bad metric name {name:?}");
        let _ = write!(self.out, "# HELP {name} ");
        escape_help(&mut self.out, help);
        let _ = writeln!(self.out, "\n# TYPE {name} {}", kind.name());
        Family { out: &mut self.out, name }
    }

    /// A family of one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: impl Into<Value>) {
        self.family(name, kind, help).sample(&[], value);
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// The samples of one family.
pub struct Family<'a> {
    out: &'a mut String,
    name: &'a str,
}

impl Family<'_> {
    /// One sample `name{labels} value`.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: impl Into<Value>) -> &mut Self {
        self.line("", labels, None, value.into());
        self
    }

    /// The samples of a histogram (`_bucket` per bound and `+Inf`, `_sum`, `_count`).
    pub fn histogram(&mut self, labels: &[(&str, &str)], h: &Histogram) -> &mut Self {
        let mut cumulative = 0;
        for (bound, n) in h.bounds.iter().zip(&h.counts) {
            cumulative += n;
            self.line("_bucket", labels, Some(Value::Float(*bound)), Value::Int(cumulative));
        }
        self.line("_bucket", labels, Some(Value::Float(f64::INFINITY)), Value::Int(h.count));
        self.line("_sum", labels, None, Value::Float(h.sum));
        self.line("_count", labels, None, Value::Int(h.count));
        self
    }

    fn line(&mut self, suffix: &str, labels: &[(&str, &str)], le: Option<Value>, value: Value) {
        let out = &mut *self.out;
        out.push_str(self.name);
        out.push_str(suffix);
        if !labels.is_empty() || le.is_some() {
            out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                debug_assert!(is_label_name(k), "bad label name {k:?}");
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{k}=\"");
                escape_label_value(out, v);
                out.push('"');
            }
            if let Some(le) = le {
                let sep = if labels.is_empty() { "" } else { "," };
                let _ = write!(out, "{sep}le=\"{le}\"");
            }
            out.push('}');
        }
        let _ = writeln!(out, " {value}");
    }
}

/// Observations counted into fixed buckets (upper bounds, ascending).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); above the last bound only in `count`.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "bounds must ascend");
        Self { bounds, counts: vec![0; bounds.len()], sum: 0.0, count: 0 }
    }

    pub fn observe(&mut self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
}

/// Process start time and uptime gauges, `{prefix}_start_time_seconds` and
/// `{prefix}_uptime_seconds`.
pub fn process_gauges(out: &mut Exposition, prefix: &str, labels: &[(&str, &str)], started_unix_s: u64) {
    let now = crate::clock::unix_s();
    out.family(&format!("{prefix}_start_time_seconds"), Kind::Gauge, "Unix time at which the process started.")
        .sample(labels, started_unix_s);
    out.family(&format!("{prefix}_uptime_seconds"), Kind::Gauge, "Seconds since the process started.")
        .sample(labels, now.saturating_sub(started_unix_s));
}

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("metrics endpoint cannot listen on {addr}: {reason}")]
    Listen { addr: SocketAddr, reason: String },
}

/// What a [`MetricsServer`] answers to `GET path`: the body and its content type, or `None`
/// for a 404.
pub type Render = dyn Fn(&str) -> Option<(String, &'static str)> + Send + Sync;

/// An HTTP endpoint ([`crate::http::server`]) answering GET requests with what `render` gives
/// (at least `/metrics`, to which it adds what the endpoint itself refused); it stops when
/// dropped.
pub struct MetricsServer {
    server: Server,
}

impl MetricsServer {
    pub fn start(addr: SocketAddr, render: Box<Render>) -> Result<Self, MetricsError> {
        let handler = move |req: &Request, stats: &ServerStats| {
            let found = (req.method == "GET").then(|| render(&req.path)).flatten();
            match found {
                Some((mut body, ctype)) => {
                    if req.path == "/metrics" {
                        let mut out = Exposition::new();
                        ServerStats::prometheus(&mut out, &[("metrics", stats)]);
                        body += &out.finish();
                    }
                    Response::with_type(200, ctype, body)
                }
                None => Response::with_type(404, "text/plain", format!("no such endpoint: {}\n", req.path)),
            }
        };
        let server = Server::http("metrics", addr, Limits::default(), Arc::new(handler))
            .map_err(|e| MetricsError::Listen { addr, reason: e.to_string() })?;
        Ok(Self { server })
    }

    /// The address it listens on (the port is known even when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_exact_and_escaped() {
        let mut out = Exposition::new();
        out.family("aviary_test_requests_total", Kind::Counter, "Requests, by path \\ and\nstatus.")
            .sample(&[("path", "/a\"b\\c\nd"), ("code", "200")], 7u64)
            .sample(&[("path", "/"), ("code", "404")], 0u64);
        out.single("aviary_test_temperature", Kind::Gauge, "A float.", 0.25);
        out.single("aviary_test_ceiling", Kind::Gauge, "Infinite.", f64::INFINITY);
        let mut h = Histogram::new(&[0.5, 1.0]);
        for v in [0.25, 0.75, 0.75, 2.0] {
            h.observe(v);
        }
        out.family("aviary_test_delay_seconds", Kind::Histogram, "Delays.").histogram(&[("flow", "f")], &h);
        let expected = r#"# HELP aviary_test_requests_total Requests, by path \\ and\nstatus.
# TYPE aviary_test_requests_total counter
aviary_test_requests_total{path="/a\"b\\c\nd",code="200"} 7
aviary_test_requests_total{path="/",code="404"} 0
# HELP aviary_test_temperature A float.
# TYPE aviary_test_temperature gauge
aviary_test_temperature 0.25
# HELP aviary_test_ceiling Infinite.
# TYPE aviary_test_ceiling gauge
aviary_test_ceiling +Inf
# HELP aviary_test_delay_seconds Delays.
# TYPE aviary_test_delay_seconds histogram
aviary_test_delay_seconds_bucket{flow="f",le="0.5"} 1
aviary_test_delay_seconds_bucket{flow="f",le="1"} 3
aviary_test_delay_seconds_bucket{flow="f",le="+Inf"} 4
aviary_test_delay_seconds_sum{flow="f"} 3.75
aviary_test_delay_seconds_count{flow="f"} 4
"#;
        assert_eq!(out.finish(), expected);
    }

    #[test]
    fn names_are_checked() {
        assert!(is_metric_name("aviary_x:y_total") && is_metric_name("_a") && !is_metric_name("1a"));
        assert!(!is_metric_name("a-b") && !is_metric_name(""));
        assert!(is_label_name("le") && !is_label_name("a:b") && !is_label_name("9"));
    }

    #[test]
    fn server_answers_what_render_gives_and_404_otherwise() {
        let render: Box<Render> = Box::new(|path| (path == "/metrics").then(|| ("x 1\n".to_string(), CONTENT_TYPE)));
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render).unwrap();
        let url = |p: &str| format!("http://{}{p}", server.addr());
        let r = ureq::get(&url("/metrics")).call().unwrap();
        assert_eq!(r.header("Content-Type"), Some(CONTENT_TYPE));
        let text = r.into_string().unwrap();
        assert!(text.starts_with("x 1\n# HELP aviary_http_connections_refused_total "), "{text}");
        assert!(text.contains("aviary_http_requests_refused_total{server=\"metrics\"} 0\n"), "{text}");
        assert!(matches!(ureq::get(&url("/other")).call(), Err(ureq::Error::Status(404, _))));
        drop(server);
    }
}
