//! The life of one paid redeem request in the AS service, kept in its state file so that a
//! crash at any point neither drops the request nor answers it twice:
//!
//! ```text
//! pending ──seal──▶ sealed ──send──▶ sent ──mined──▶ delivered (leaves this table)
//!    │                 ▲               │
//!    │                 └───failed──────┘   (retried with backoff, the same blob)
//!    └──refused──▶ refused (recorded with its reason, never retried)
//! ```
//!
//! A pending, sealed or sent request whose delivery deadline has passed (and whose reservation
//! is not on chain) is refused as `deadline_passed`: the contract would revert the delivery, and
//! the buyer may reclaim the assets.
//!
//! - **pending**: seen on chain, not sealed yet (every ResID taken for now: asked again later).
//! - **sealed**: `(ResInfo, A_K)` sealed to the buyer; the blob is persisted before it is
//!   sent, and the ResID is held in the AS's store under the request's id, so every retry
//!   delivers the same reservation and no retry takes a second ResID.
//! - **sent**: the delivery transaction `tx` was handed to the chain at `at_s` and is waiting to
//!   be mined (a JSON-RPC node; the embedded ledger mines as it receives, so a delivery there
//!   goes from sealed to delivered in one step, and [`super::FaultPoint::AfterSend`] lets a
//!   test die between the two).
//!
//! Before every send, and after a restart, the chain is asked first: a request whose
//! reservation is already on chain is delivered if the blob is this service's, and never sent
//! twice. (The contract would refuse a second delivery anyway: `RequestNotPending`.)
//! Time is passed in (Unix s); nothing here touches the ledger.

use aviary_market::{Bytes, B256};
use serde::{Deserialize, Serialize};

/// Where a request is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "stage")]
pub enum Stage {
    Pending,
    Sealed { sealed: Bytes, res_id: u32 },
    Sent { sealed: Bytes, res_id: u32, tx: B256, at_s: u64 },
}

impl Stage {
    pub fn label(&self) -> &'static str {
        match self {
            Stage::Pending => "pending",
            Stage::Sealed { .. } => "sealed",
            Stage::Sent { .. } => "sent",
        }
    }

    /// The sealed reservation and its ResID, once sealed.
    pub fn sealed(&self) -> Option<(&Bytes, u32)> {
        match self {
            Stage::Pending => None,
            Stage::Sealed { sealed, res_id } | Stage::Sent { sealed, res_id, .. } => Some((sealed, *res_id)),
        }
    }
}

/// An open request: paid, not yet delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    #[serde(flatten)]
    pub stage: Stage,
    /// When the service first saw the request (Unix s).
    pub seen_s: u64,
    /// Failed attempts so far.
    pub failures: u32,
    /// No attempt before this time (Unix s).
    pub next_attempt_s: u64,
    /// What went wrong last, for the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Delivery {
    pub fn new(now: u64) -> Self {
        Self { stage: Stage::Pending, seen_s: now, failures: 0, next_attempt_s: now, last_error: None }
    }

    pub fn due(&self, now: u64) -> bool {
        now >= self.next_attempt_s
    }

    /// Records a failed attempt at `now`; the next one waits as `backoff` says.
    pub fn failed(&mut self, now: u64, backoff: Backoff, error: String) {
        self.failures = self.failures.saturating_add(1);
        self.next_attempt_s = now.saturating_add(backoff.wait_s(self.failures));
        self.last_error = Some(error);
    }
}

/// A request closed without a delivery: what the service could not answer, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// A counter label: `interval_over`, `too_long`, `bandwidth`, `bad_buyer_key`, ... or
    /// `foreign_blob` (the chain holds a reservation for it that this service did not seal), or
    /// `deadline_passed` (too late to deliver).
    pub reason: String,
    pub message: String,
    pub at_s: u64,
}

/// Exponential backoff with a cap: `first_s`, twice that, four times, ... at most `cap_s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub first_s: u64,
    pub cap_s: u64,
}

impl Backoff {
    /// The AS service's: 1 s after the first failure, doubling up to 5 minutes.
    pub const DEFAULT: Backoff = Backoff { first_s: 1, cap_s: 300 };

    /// The wait after the `failures`-th failure in a row (≥ 1).
    pub fn wait_s(&self, failures: u32) -> u64 {
        let doublings = failures.saturating_sub(1).min(63);
        self.first_s.saturating_mul(1u64 << doublings).min(self.cap_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Backoff::DEFAULT;
        let waits: Vec<u64> = (1..=11).map(|n| b.wait_s(n)).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(b.wait_s(u32::MAX), 300);
        let mut d = Delivery::new(100);
        assert!(d.due(100));
        d.failed(100, b, "no gas".into());
        d.failed(101, b, "no gas".into());
        assert_eq!((d.failures, d.next_attempt_s), (2, 103));
        assert!(!d.due(102) && d.due(103));
    }

    proptest! {
        #[test]
        fn backoff_never_shrinks_and_never_exceeds_the_cap(first in 1u64..1000, cap in 1u64..100_000, n in 1u32..200) {
            let b = Backoff { first_s: first, cap_s: cap };
            prop_assert!(b.wait_s(n) <= b.wait_s(n + 1));
            prop_assert!(b.wait_s(n) <= cap);
        }
    }

    #[test]
    fn the_state_round_trips_with_its_blob() {
        let d = Delivery {
            stage: Stage::Sent { sealed: Bytes::from(vec![1, 2, 3]), res_id: 7, tx: B256::repeat_byte(9), at_s: 6 },
            ..Delivery::new(5)
        };
        let text = serde_json::to_string(&d).unwrap();
        assert!(text.contains(r#""stage":"sent""#) && text.contains(r#""sealed":"0x010203""#), "{text}");
        assert_eq!(serde_json::from_str::<Delivery>(&text).unwrap(), d);
        assert_eq!(d.stage.sealed(), Some((&Bytes::from(vec![1, 2, 3]), 7)));
    }
}
