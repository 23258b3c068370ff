//! What the AS reservation service did, as its optional `metrics` endpoint shows it:
//! `GET /metrics` (Prometheus text) and `GET /v1/status` (the same as JSON).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use aviary_scion::IsdAsn;
use serde::Serialize;

use crate::metrics::{process_gauges, Exposition, Kind, MetricsError, MetricsServer, Render, CONTENT_TYPE};

/// The counters of one AS service process (they start at 0 with the process).
#[derive(Clone, Debug, Default, Serialize)]
pub struct AsServiceStats {
    pub ia: Option<IsdAsn>,
    pub started_unix_s: u64,
    /// Registrations this process made, by step (`registry`, `seller`); none when the AS was
    /// registered before.
    pub registrations: BTreeMap<&'static str, u64>,
    /// Registered on the AS registry and as a seller.
    pub registered: bool,
    /// Assets issued and listed on the marketplace.
    pub listings_issued: u64,
    /// Periods not listed: less than the offer's minimum piece was left reservable.
    pub listings_skipped: u64,
    /// Redeem requests addressed to this AS that it looked at.
    pub redeem_requests_seen: u64,
    /// Requests answered: a ResID assigned and `(ResInfo, A_K)` sealed to the buyer.
    pub redeem_requests_answered: u64,
    /// Requests closed without a delivery, by reason (`interval_over`, `too_long`,
    /// `bandwidth`, `bad_buyer_key`, `foreign_blob`, `deadline_passed`, ...).
    pub redeem_requests_failed: BTreeMap<&'static str, u64>,
    /// Sealed reservations delivered on chain.
    pub deliveries: u64,
    /// Attempts on a request after a failed one.
    pub delivery_retries: u64,
    /// Failed attempts, by reason (`ledger`: a read or the transaction failed or was refused;
    /// `reverted`; `no_resid`: every ResID taken for now; `resid_store`; `state_file`).
    pub delivery_failures: BTreeMap<&'static str, u64>,
    /// Requests paid for and not yet delivered, oldest first.
    pub open_requests: Vec<OpenRequest>,
    /// Age of the oldest open request, s (0: none open).
    pub oldest_open_request_age_s: u64,
    /// Requests closed without a delivery, as recorded in the state file.
    pub refused_requests: u64,
    /// Polls that failed, by kind (`ledger`: a ledger read or transaction; `other`).
    pub errors: BTreeMap<&'static str, u64>,
    /// Unix time of the ledger's latest block, as of the last poll.
    pub last_block_timestamp_s: u64,
    /// Unix time at which the last poll ended.
    pub last_poll_unix_s: u64,
    /// The next redeem request id to look at.
    pub next_request: u64,
}

/// A request paid for and not yet delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpenRequest {
    pub request: u64,
    /// `pending`, `sealed` or `sent` (see the service's delivery stages).
    pub stage: &'static str,
    /// When the service first saw it (Unix s).
    pub seen_s: u64,
    /// Failed attempts so far.
    pub failures: u32,
    /// No attempt before (Unix s).
    pub next_attempt_s: u64,
    pub last_error: Option<String>,
}

impl AsServiceStats {
    pub fn prometheus(&self) -> String {
        let ia = self.ia.map(|i| i.to_string()).unwrap_or_default();
        let l = [("ia", ia.as_str())];
        let mut out = Exposition::new();
        let mut f = out.family(
            "aviary_as_service_registrations_total",
            Kind::Counter,
            "Registrations this process made on chain, by step (registry, seller).",
        );
        for (step, n) in &self.registrations {
            f.sample(&[l[0], ("step", step)], *n);
        }
        let gauge = Kind::Gauge;
        let counter = Kind::Counter;
        out.family("aviary_as_service_registered", gauge, "1 once the AS is registered and a seller.")
            .sample(&l, u64::from(self.registered));
        out.family("aviary_as_service_listings_issued_total", counter, "Assets issued and listed for sale.")
            .sample(&l, self.listings_issued);
        out.family(
            "aviary_as_service_listings_skipped_total",
            counter,
            "Periods not listed: grants held all but less than the offer's minimum piece.",
        )
        .sample(&l, self.listings_skipped);
        out.family(
            "aviary_as_service_redeem_requests_seen_total",
            counter,
            "Redeem requests addressed to this AS that the service looked at.",
        )
        .sample(&l, self.redeem_requests_seen);
        out.family(
            "aviary_as_service_redeem_requests_answered_total",
            counter,
            "Redeem requests answered with a sealed reservation.",
        )
        .sample(&l, self.redeem_requests_answered);
        let mut f = out.family(
            "aviary_as_service_redeem_requests_failed_total",
            counter,
            "Redeem requests not answered, by reason.",
        );
        for (reason, n) in &self.redeem_requests_failed {
            f.sample(&[l[0], ("reason", reason)], *n);
        }
        out.family("aviary_as_service_deliveries_total", counter, "Sealed reservations delivered on chain.")
            .sample(&l, self.deliveries);
        out.family(
            "aviary_as_service_delivery_retries_total",
            counter,
            "Attempts to seal or deliver a request after a failed attempt.",
        )
        .sample(&l, self.delivery_retries);
        let mut f = out.family(
            "aviary_as_service_delivery_failures_total",
            counter,
            "Failed attempts to seal or deliver a request, by reason; each is retried with backoff.",
        );
        for (reason, n) in &self.delivery_failures {
            f.sample(&[l[0], ("reason", reason)], *n);
        }
        out.family(
            "aviary_as_service_open_requests",
            gauge,
            "Requests paid for and not yet delivered (see /v1/status for each one's stage and last error).",
        )
        .sample(&l, self.open_requests.len() as u64);
        out.family(
            "aviary_as_service_oldest_open_request_age_seconds",
            gauge,
            "Age of the oldest request paid for and not yet delivered (0: none).",
        )
        .sample(&l, self.oldest_open_request_age_s);
        out.family("aviary_as_service_refused_requests", gauge, "Requests closed without a delivery (state file).")
            .sample(&l, self.refused_requests);
        let mut f =
            out.family("aviary_as_service_errors_total", counter, "Polls that failed, by kind (ledger, other).");
        for (kind, n) in &self.errors {
            f.sample(&[l[0], ("kind", kind)], *n);
        }
        out.family(
            "aviary_as_service_last_block_timestamp_seconds",
            gauge,
            "Unix time of the ledger's latest block at the last poll.",
        )
        .sample(&l, self.last_block_timestamp_s);
        out.family("aviary_as_service_last_poll_time_seconds", gauge, "Unix time at which the last poll ended.")
            .sample(&l, self.last_poll_unix_s);
        out.family("aviary_as_service_next_request_id", gauge, "The next redeem request id the service looks at.")
            .sample(&l, self.next_request);
        process_gauges(&mut out, "aviary_as_service", &l, self.started_unix_s);
        out.finish()
    }
}

/// Serves `/metrics` and `/v1/status` of `stats` on `addr` until the server is dropped.
pub fn serve(addr: SocketAddr, stats: Arc<Mutex<AsServiceStats>>) -> Result<MetricsServer, MetricsError> {
    let render: Box<Render> = Box::new(move |path| {
        let s = stats.lock().ok()?.clone();
        match path {
            "/metrics" => Some((s.prometheus(), CONTENT_TYPE)),
            "/v1/status" => Some((serde_json::to_string_pretty(&s).ok()?, "application/json")),
            _ => None,
        }
    });
    MetricsServer::start(addr, render)
}
