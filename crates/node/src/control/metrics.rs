//! The control service's counters, as `GET /metrics` on its API shows them (Prometheus text).
//! Request threads count under one mutex; nothing here is on a forwarding path.

use std::collections::BTreeMap;
use std::sync::Mutex;

use aviary_scion::IsdAsn;

use super::grant_error::GrantError;
use crate::metrics::{process_gauges, Exposition, Kind};

/// Endpoints counted by path; requests to any other path count as `other`, so that a scanner
/// cannot grow the label set.
const ENDPOINTS: &[&str] = &[
    "/v1/segments/extend",
    "/v1/paths",
    "/v1/reservations",
    "/v1/drkey/as-host",
    "/v1/drkey/host-as",
    "/v1/drkey/host-host",
    "/v1/drkey/level1",
    "/v1/glwp/discover",
    "/v1/status",
    "/metrics",
];

/// The `endpoint` label of a request path.
pub fn endpoint_label(path: &str) -> &'static str {
    ENDPOINTS.iter().find(|e| **e == path).copied().unwrap_or("other")
}

/// The `result` label of a path lookup answered with `code`.
pub fn path_lookup_result(code: u16) -> &'static str {
    match code {
        200 => "ok",
        404 => "unknown_destination",
        503 => "no_path",
        400 => "bad_request",
        _ => "error",
    }
}

#[derive(Debug, Default)]
struct Counts {
    requests: BTreeMap<(&'static str, u16), u64>,
    extensions_served: BTreeMap<&'static str, u64>,
    extensions_requested: BTreeMap<(IsdAsn, &'static str), u64>,
    path_lookups: BTreeMap<&'static str, u64>,
    granted: u64,
    refused: BTreeMap<&'static str, u64>,
    errors: BTreeMap<&'static str, u64>,
}

/// What a control service counts while it runs.
#[derive(Debug)]
pub struct ControlMetrics {
    started_unix_s: u64,
    counts: Mutex<Counts>,
}

impl Default for ControlMetrics {
    fn default() -> Self {
        Self { started_unix_s: crate::clock::unix_s(), counts: Mutex::default() }
    }
}

impl ControlMetrics {
    fn with(&self, f: impl FnOnce(&mut Counts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// A request to `path` answered with `code`.
    pub fn request(&self, path: &str, code: u16) {
        self.with(|c| *c.requests.entry((endpoint_label(path), code)).or_default() += 1);
    }

    /// A segment extension this service was asked for: `ok` or `refused`.
    pub fn extension_served(&self, ok: bool) {
        self.with(|c| *c.extensions_served.entry(if ok { "ok" } else { "refused" }).or_default() += 1);
    }

    /// A segment extension this service asked `peer` for.
    pub fn extension_requested(&self, peer: IsdAsn, ok: bool) {
        self.with(|c| {
            *c.extensions_requested.entry((peer, if ok { "ok" } else { "failed" })).or_default() += 1;
            if !ok {
                *c.errors.entry("peer_extension").or_default() += 1;
            }
        });
    }

    pub fn path_lookup(&self, code: u16) {
        self.with(|c| *c.path_lookups.entry(path_lookup_result(code)).or_default() += 1);
    }

    /// The outcome of an operator's reservation request.
    pub fn grant<T>(&self, result: &Result<T, GrantError>) {
        self.with(|c| match result {
            Ok(_) => c.granted += 1,
            Err(e) => {
                *c.refused.entry(e.label()).or_default() += 1;
                if matches!(e, GrantError::Store(_)) {
                    *c.errors.entry("resid_store").or_default() += 1;
                }
            }
        });
    }

    /// An error of the service itself (`resid_store`, `peer_extension`).
    pub fn error(&self, kind: &'static str) {
        self.with(|c| *c.errors.entry(kind).or_default() += 1);
    }

    /// The text for `GET /metrics`; `held` is the number of reservations the AS's ResID store
    /// holds per ingress interface, `None` if it cannot be read.
    pub fn prometheus(&self, ia: IsdAsn, held: Option<&[(u16, usize)]>) -> String {
        let ia = ia.to_string();
        let ia = ia.as_str();
        let mut out = Exposition::new();
        let Ok(c) = self.counts.lock() else { return String::new() };
        let mut f =
            out.family("aviary_control_requests_total", Kind::Counter, "HTTP requests, by endpoint and status.");
        for ((endpoint, code), n) in &c.requests {
            f.sample(&[("ia", ia), ("endpoint", endpoint), ("code", &code.to_string())], *n);
        }
        let mut f = out.family(
            "aviary_control_segment_extensions_served_total",
            Kind::Counter,
            "Segment extensions other control services asked of this one, by result.",
        );
        for (result, n) in &c.extensions_served {
            f.sample(&[("ia", ia), ("result", result)], *n);
        }
        let mut f = out.family(
            "aviary_control_segment_extensions_requested_total",
            Kind::Counter,
            "Segment extensions this service asked of other ASes' control services, by peer and result.",
        );
        for ((peer, result), n) in &c.extensions_requested {
            f.sample(&[("ia", ia), ("peer", &peer.to_string()), ("result", result)], *n);
        }
        let mut f = out.family("aviary_control_path_lookups_total", Kind::Counter, "Path lookups by hosts, by result.");
        for (result, n) in &c.path_lookups {
            f.sample(&[("ia", ia), ("result", result)], *n);
        }
        out.family("aviary_control_reservations_granted_total", Kind::Counter, "Reservations granted to the operator.")
            .sample(&[("ia", ia)], c.granted);
        let mut f = out.family(
            "aviary_control_reservations_refused_total",
            Kind::Counter,
            "Reservation requests refused, by reason.",
        );
        for (reason, n) in &c.refused {
            f.sample(&[("ia", ia), ("reason", reason)], *n);
        }
        let mut f = out.family(
            "aviary_control_resid_store_reservations",
            Kind::Gauge,
            "Reservations the AS's ResID store holds, by ingress interface.",
        );
        for (ingress, n) in held.unwrap_or_default() {
            f.sample(&[("ia", ia), ("ingress", &ingress.to_string())], *n as u64);
        }
        let mut f = out.family("aviary_control_errors_total", Kind::Counter, "Errors of the service itself, by kind.");
        for (kind, n) in &c.errors {
            f.sample(&[("ia", ia), ("kind", kind)], *n);
        }
        process_gauges(&mut out, "aviary_control", &[("ia", ia)], self.started_unix_s);
        out.finish()
    }
}
