//! The schemes compared in one harness: pathval and the paper's three references (§VI-A,
//! §VI-F), each processing real packet bytes at the source, a trusted router and the
//! destination, so that the same attacks can be measured against all of them.
//!
//! All four carry the pathval header of [`crate::header`] and the same keys (a link key per
//! pair of adjacent trusted nodes, the end-to-end key of source and destination), and differ
//! in which node verifies and which constructs a proof:
//!
//! - **pathval**: equal-probability sampling, hidden sample state (the paper's Alg. 1 and 2).
//! - **Baseline** (§VI-A): every trusted router verifies the previous node's ValidationProof
//!   and constructs its own; no HiddenSample. Works on dynamic paths.
//! - **PPV** (probabilistic path validation, static paths): the source, knowing the path
//!   length `N`, marks one of the `N - 1` sampling nodes uniformly in plaintext; that node
//!   constructs a proof, the next one verifies it, the others only count the hop.
//! - **EPIC-style** per-hop validation (static paths): as Baseline, and every node also drops
//!   a packet whose HopCount is not its own position on the static path.
//!
//! Every scheme's destination also checks the source's Concealment.

use aviary_qos::RandomSource;

use crate::crypto::{data_hash, uniform_below, EndToEndKey, LinkKey, SamplingKey};
use crate::functions::{self, HeaderMut};
use crate::router::PathvalDrop;

/// Which scheme a path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemeKind {
    Pathval,
    Baseline,
    Ppv,
    Epic,
}

impl SchemeKind {
    pub const ALL: [SchemeKind; 4] = [SchemeKind::Pathval, SchemeKind::Baseline, SchemeKind::Ppv, SchemeKind::Epic];

    pub const fn label(self) -> &'static str {
        match self {
            SchemeKind::Pathval => "pathval",
            SchemeKind::Baseline => "baseline",
            SchemeKind::Ppv => "ppv",
            SchemeKind::Epic => "epic",
        }
    }

    /// The scheme as node `index` of a static path of `nodes` nodes runs it (pathval and
    /// Baseline ignore the position: they work on paths of unknown length).
    pub const fn at(self, index: u8, nodes: u8) -> Scheme {
        let at = StaticHop { index, nodes };
        match self {
            SchemeKind::Pathval => Scheme::Pathval,
            SchemeKind::Baseline => Scheme::Baseline,
            SchemeKind::Ppv => Scheme::Ppv(at),
            SchemeKind::Epic => Scheme::Epic(at),
        }
    }
}

/// A node's position on a static path, which PPV and EPIC know in advance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticHop {
    /// The source is node 0.
    pub index: u8,
    pub nodes: u8,
}

/// The processing one node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Pathval,
    Baseline,
    Ppv(StaticHop),
    Epic(StaticHop),
}

/// What a router did with a packet it forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routed {
    /// It verified an upstream proof.
    pub verified: bool,
    /// It put its own proof in the packet.
    pub sampled: bool,
}

impl Scheme {
    /// The source, after SrcInitialization: whether it put a proof in the packet.
    pub fn source_proof(self, hdr: &mut HeaderMut<'_>, k_next: &LinkKey) -> Result<bool, PathvalDrop> {
        match self {
            Scheme::Pathval => functions::construction(hdr, k_next).map(|()| true),
            Scheme::Baseline | Scheme::Epic(_) => functions::prove(hdr, k_next).map(|_| true),
            Scheme::Ppv(at) => {
                // The mark is public anyway, so the source draws it from its own MAC, which is
                // pseudo-random and needs no further key.
                let marked = uniform_below(&hdr.concealment(), u16::from(at.nodes) - 1);
                hdr.set_ppv_sampled_node(marked);
                if marked == at.index {
                    functions::prove(hdr, k_next)?;
                } else {
                    functions::count_hop(hdr)?;
                }
                Ok(marked == at.index)
            }
        }
    }

    /// A trusted router: verification of the upstream proof where the scheme asks for one,
    /// then its own proof or the hop count alone.
    pub fn route(
        self,
        hdr: &mut HeaderMut<'_>,
        payload: &[u8],
        keys: (&LinkKey, &LinkKey),
        sampling: &SamplingKey,
        random: &mut dyn RandomSource,
    ) -> Result<Routed, PathvalDrop> {
        let (k_prev, k_next) = keys;
        match self {
            Scheme::Pathval => {
                let verified = functions::verification(hdr, payload, k_prev)?;
                let sampled = functions::ep_sampling(hdr, sampling);
                if sampled {
                    functions::construction(hdr, k_next)?;
                } else {
                    functions::update(hdr, k_next, random)?;
                }
                Ok(Routed { verified, sampled })
            }
            Scheme::Baseline | Scheme::Epic(_) => {
                self.check_position(hdr)?;
                functions::verify_validation_proof(hdr, payload, k_prev)?;
                functions::prove(hdr, k_next)?;
                Ok(Routed { verified: true, sampled: true })
            }
            Scheme::Ppv(at) => {
                let verified = ppv_checks(hdr, at);
                if verified {
                    functions::verify_validation_proof(hdr, payload, k_prev)?;
                }
                let sampled = hdr.ppv_sampled_node() == at.index;
                if sampled {
                    functions::prove(hdr, k_next)?;
                } else {
                    functions::count_hop(hdr)?;
                }
                Ok(Routed { verified, sampled })
            }
        }
    }

    /// The destination: verification of the last proof where the scheme asks for one (whether
    /// it did is returned), then DstVerification. DstVerification needs the payload's DataHash
    /// in any case, so it is computed once, first, for both.
    pub fn accept(
        self,
        hdr: &HeaderMut<'_>,
        payload: &[u8],
        k_prev: &LinkKey,
        k0n: &EndToEndKey,
    ) -> Result<bool, PathvalDrop> {
        let payload_hash = data_hash(payload);
        let verified = match self {
            Scheme::Pathval => functions::verification_hashed(hdr, &payload_hash, k_prev)?,
            Scheme::Baseline | Scheme::Epic(_) => {
                self.check_position(hdr)?;
                functions::verify_validation_proof_hashed(hdr, &payload_hash, k_prev)?;
                true
            }
            Scheme::Ppv(at) => {
                let check = ppv_checks(hdr, at);
                if check {
                    functions::verify_validation_proof_hashed(hdr, &payload_hash, k_prev)?;
                }
                check
            }
        };
        functions::dst_verification_hashed(hdr, &payload_hash, k0n)?;
        Ok(verified)
    }

    /// EPIC: a packet must arrive at the position the static path gives this node.
    fn check_position(self, hdr: &HeaderMut<'_>) -> Result<(), PathvalDrop> {
        match self {
            Scheme::Epic(at) if hdr.hop_count() != at.index => Err(PathvalDrop::OffStaticPath),
            _ => Ok(()),
        }
    }
}

/// PPV: whether this node verifies a proof, i.e. follows the node the source marked.
fn ppv_checks(hdr: &HeaderMut<'_>, at: StaticHop) -> bool {
    u16::from(hdr.ppv_sampled_node()) + 1 == u16::from(at.index)
}
