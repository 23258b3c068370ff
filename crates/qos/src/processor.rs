//! The seam between a border router process and a mechanism's sans-IO processor.
//!
//! A router hosts one [`Processor`] per mechanism. Each claims the packets it handles (by
//! SCION path type, or by a hop-by-hop extension option it reads); the router hands it batches
//! of those packets with a [`Context`] (the time, the ingress interface, the state of the
//! egress links and a random source the router injects) and gets a [`Verdict`] per packet.
//! Everything else a mechanism needs from the process is here too: its own admissions and drop
//! reasons, counters the router publishes with the mechanism as a label, and typed runtime
//! control that the management API passes through untouched.

use thiserror::Error;

use crate::{Admission, DropReason, Verdict};

/// A kind of packet a processor asks for. Two processors claiming one key is a start-up error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Claim {
    /// SCION path type (common header byte 8).
    PathType(u8),
    /// An option type in the packet's hop-by-hop options extension; a packet carrying a
    /// claimed option goes to its claimant whatever its path type.
    HopByHopOption(u8),
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Claim::PathType(t) => write!(f, "path type {t}"),
            Claim::HopByHopOption(t) => write!(f, "hop-by-hop option {t}"),
        }
    }
}

/// What a router knows of one of its egress links when a batch is processed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkState {
    pub id: u16,
    /// Whether the link can send (capacity above zero).
    pub up: bool,
    pub rate_bps: u64,
    /// Bytes waiting in the link's queues, and the sum of their bounds.
    pub queued_bytes: u64,
    pub queue_limit_bytes: u64,
}

impl LinkState {
    /// Queue fill in parts per million of the bound (0 for a link without queues).
    pub fn fill_ppm(&self) -> u32 {
        if self.queue_limit_bytes == 0 {
            return 0;
        }
        (u128::from(self.queued_bytes.min(self.queue_limit_bytes)) * 1_000_000 / u128::from(self.queue_limit_bytes))
            as u32
    }
}

/// Randomness a processor may use; the router injects it (a CSPRNG seeded from the OS), tests
/// seed it. Mechanisms never create their own.
pub trait RandomSource: Send {
    fn fill_bytes(&mut self, out: &mut [u8]);

    fn next_u64(&mut self) -> u64 {
        let mut b = [0; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
}

/// A deterministic random source for tests and simulations (SplitMix64). Not for secrets.
#[derive(Clone, Debug)]
pub struct SeededRandom(u64);

impl SeededRandom {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
}

impl RandomSource for SeededRandom {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// What a processor is told about a batch: all its packets arrived on `ingress` by `now_ns`.
pub struct Context<'a> {
    pub now_ns: u64,
    /// Interface the batch arrived on; 0 for the AS's inside.
    pub ingress: u16,
    /// Every egress link of the router.
    pub links: &'a [LinkState],
    pub random: &'a mut dyn RandomSource,
}

impl Context<'_> {
    pub fn link(&self, id: u16) -> Option<&LinkState> {
        self.links.iter().find(|l| l.id == id)
    }
}

/// A runtime control request a mechanism refused, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{field}: {reason}")]
pub struct ControlError {
    pub field: String,
    pub reason: String,
}

impl ControlError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { field: field.into(), reason: reason.into() }
    }

    /// A request that does not deserialise into the mechanism's control type.
    pub fn from_json(e: &serde_json::Error) -> Self {
        let text = e.to_string();
        // serde names the offending field in backquotes ("unknown field `x`", "missing field `y`").
        let field = text.split('`').nth(1).unwrap_or("body").to_owned();
        Self { field, reason: text }
    }
}

/// A mechanism's border-router processing.
pub trait Processor: Send {
    /// The mechanism's name: the label of its metrics and its management API path.
    fn name(&self) -> &'static str;

    /// The packets this processor handles.
    fn claims(&self) -> &'static [Claim];

    /// Processes packets that arrived on `ctx.ingress` at `ctx.now_ns`, updating them in place;
    /// `verdicts[i]` is the verdict of `pkts[i]`.
    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]);

    /// Admissions of its own this mechanism forwards with (ids from [`Admission::FIRST_OWN`]),
    /// and their labels, which the router's classifier maps to classes.
    fn admissions(&self) -> &'static [(Admission, &'static str)] {
        &[]
    }

    /// Labels of this mechanism's own drop reasons: [`DropReason::Mechanism`]`(i)` is `[i]`.
    fn drop_reasons(&self) -> &'static [&'static str] {
        &[]
    }

    /// Reports this mechanism's own counters (beyond drops) as `(name, value)`.
    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        let _ = out;
    }

    /// Applies a runtime change, a JSON object of the mechanism's own control type.
    fn control(&mut self, request: &serde_json::Value) -> Result<(), ControlError> {
        let _ = request;
        Err(ControlError::new(self.name(), "this mechanism has no runtime settings"))
    }

    /// The mechanism's runtime settings as they are now (same shape as a control request).
    fn settings(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The AS master secret is now `secret`: the mechanism derives its keys from it and keeps
    /// verifying with the keys they replace until `previous_until_ns` (the rotation's overlap).
    /// Keys are swapped in place: every other piece of state (policers, duplicate filters)
    /// stays. A mechanism with no keys from the AS secret has nothing to do.
    fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        let _ = (secret, previous_until_ns);
    }

    /// [`Processor::rotate_secret`] of a rotation made at `rotated_at_s` (Unix s), which is
    /// what the router calls. Mechanisms with DRKey keys need the instant: an epoch's keys
    /// derive from the secret that was current when they could first be served, the same
    /// choice every process of the AS makes from the same recorded instant.
    fn rotate_secret_at(&mut self, secret: &[u8], previous_until_ns: u64, rotated_at_s: u64) {
        let _ = rotated_at_s;
        self.rotate_secret(secret, previous_until_ns);
    }
}

/// Label of a drop reason of `processor`.
pub fn drop_label(processor: &dyn Processor, reason: DropReason) -> &'static str {
    match reason {
        DropReason::Mechanism(i) => processor.drop_reasons().get(usize::from(i)).copied().unwrap_or("mechanism"),
        shared => shared.label(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_random_is_deterministic_and_fills_partial_chunks() {
        let (mut a, mut b) = (SeededRandom::new(7), SeededRandom::new(7));
        let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
        a.fill_bytes(&mut x);
        b.fill_bytes(&mut y);
        assert_eq!(x, y);
        assert_ne!(x[8..], [0; 5]);
        assert_ne!(SeededRandom::new(8).next_u64(), SeededRandom::new(7).next_u64());
    }

    #[test]
    fn fill_is_in_ppm_of_the_bound() {
        let l = LinkState { queued_bytes: 250, queue_limit_bytes: 1000, ..Default::default() };
        assert_eq!(l.fill_ppm(), 250_000);
        assert_eq!(LinkState { queued_bytes: 5, ..Default::default() }.fill_ppm(), 0);
    }

    #[test]
    fn json_errors_name_the_field() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct C {
            burst_ms: f64,
        }
        let e = serde_json::from_value::<C>(serde_json::json!({"burst": 1})).unwrap_err();
        assert_eq!(ControlError::from_json(&e).field, "burst");
        let e = serde_json::from_value::<C>(serde_json::json!({"burst_ms": "x"})).unwrap_err();
        assert!(ControlError::from_json(&e).reason.contains("invalid type"), "{e}");
    }
}
