//! pathval: path validation over dynamic paths, after the paper *Hummingbird: Dynamic Path
//! Validation with Hidden Equal-Probability Sampling* (called pathval here, so as not to be
//! confused with the Hummingbird reservation system).
//!
//! Trusted routers sample packets so that each of the `N` nodes of a path, whatever `N` is,
//! is the last one to sample a packet with probability `1/N` ([`crypto::SamplingKey`], the
//! paper's Alg. 1); a sampling router proves itself to the next trusted node with a
//! ValidationProof, and a keyed hash (HiddenSample) hides from everyone else whether it did.
//! The source's Concealment lets the destination check what no router sampled.
//!
//! - [`header`]: the 101-byte header of Table III in a SCION hop-by-hop options extension.
//! - [`crypto`]: SHA3-256, KangarooTwelve and AES-CMAC constructions, the sampling PRF.
//! - [`keccak`]: SHA3-256 and KangarooTwelve over many messages at once, Keccak-p in SIMD
//!   across states.
//! - [`functions`]: the paper's six functions, one by one (errata of Alg. 2 fixed).
//! - [`router`]: sans-IO processing at the source, a trusted router and the destination.
//! - [`batch`]: a trusted router's processing of a batch, its hashing done all at once.
//! - [`keys`]: the pairwise and end-to-end keys from DRKey.
//! - [`scheme`]: pathval and the paper's references (Baseline, PPV, EPIC-style) on the same
//!   header and keys.
//! - [`routing`]: dynamic next-hop choice by destination (round robin, least loaded).
//! - [`plan`]: a network's routing tables checked as a whole; upstream and next trusted nodes.
//! - [`config`]: a router's `[pathval]` table.
//! - [`processor`]: pathval as a border router's `aviary_qos::Processor`.
//! - [`chain`]: a whole path in one process, for measurements and tests.
//! - [`attack`]: an untrusted router on the chain attacking packets, and what was detected.
//!
//! The layout, the key derivation and where this implementation departs from the paper are
//! in docs/pathval.md.

pub mod attack;
pub mod batch;
pub mod chain;
pub mod config;
pub mod crypto;
pub mod functions;
pub mod header;
pub mod keccak;
pub mod keys;
pub mod plan;
pub mod processor;
pub mod router;
pub mod routing;
pub mod scheme;

pub use chain::{Chain, Trip};
pub use crypto::{data_hash, EndToEndKey, LinkKey, SamplingKey};
pub use header::{locate, HeaderError, Metadata, PathvalView, HEADER_LEN, OPT_PATHVAL};
pub use keys::{PathvalIssuer, PROTOCOL};
pub use plan::{plan, PlanAs, PlanError, Role, TrustedPlan};
pub use processor::{PathvalConfig, PathvalConfigError, PathvalProcessor};
pub use router::{Destination, Freshness, NodeStats, PathvalDrop, Router, Source, Verdict};
pub use routing::{NextHops, Policy, Route};
pub use scheme::{Scheme, SchemeKind};
