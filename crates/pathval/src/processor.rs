//! pathval in a border router: the [`Processor`] a router hosts for packets carrying the
//! pathval option (`Claim::HopByHopOption(0x50)`).
//!
//! pathval packets are routed by destination: they carry SCION's empty path (type 0) and the
//! destination ISD-AS in the address header, and every pathval router picks the egress from
//! its own table ([`NextHops`]), so no router knows the path or its length. What a router
//! does besides depends on its [`Role`] and on where the packet is:
//!
//! - a trusted router receiving from its AS's inside is the **source** node: SrcInitialization
//!   (over the SessionID the host wrote) and Construction for the next trusted node;
//! - a trusted router of the destination AS is the **destination** node: Verification of the
//!   last trusted node's proof and DstVerification, then delivery;
//! - any other trusted router runs the router's Verification, EpSampling, Construction or
//!   Update with the keys of its upstream (by ingress) and next (by chosen egress) trusted
//!   nodes;
//! - an untrusted router forwards the packet untouched, or runs an [`Attack`] on it.
//!
//! Keys (see [`crate::keys`]): a trusted router derives the keys it verifies with from its own
//! AS secret (`K_{i(i+1)}` from its upstream nodes, `K_{0n}` of every source at the
//! destination) and is given the Level-1 keys other ASes issued to it (its next trusted nodes'
//! and, as a source, the destinations').

use std::collections::HashMap;

use aviary_qos::{Claim, Context, ControlError, Processor, Verdict as QosVerdict};
use aviary_scion::drkey::{Epoch, HostAddr as KeyHost, Level1Key, RotatingSecret};
use aviary_scion::wire::header::{path_type, HostAddr};
use aviary_scion::{IsdAsn, ScionView};

use crate::attack::on_the_wire;
use crate::batch::{BatchKeys, MAX_BATCH};
use crate::config::{field_err, Control};
pub use crate::config::{PathvalConfig, PathvalConfigError};
use crate::crypto::{EndToEndKey, LinkKey, SamplingKey};
use crate::header::{locate, PathvalView, OPT_PATHVAL};
use crate::keys::{end_to_end_key_from, link_key_from, PathvalIssuer};
use crate::plan::Role;
use crate::router::{Destination, Freshness, PathvalDrop, Router, Source, Verdict};
use crate::routing::{NextHops, NoNextHop};

const NS_PER_S: u64 = 1_000_000_000;
/// End-to-end keys kept per (source, destination host) pair before the cache starts over.
const E2E_CACHE: usize = 4096;

/// The keys of a trusted router for one DRKey epoch.
struct TrustedKeys {
    issuer: PathvalIssuer,
    /// `(ingress, K_{i(i+1)} with the trusted node behind it)`.
    upstream: Vec<(u16, LinkKey)>,
    /// `(destination, egress, K with the next trusted node)`.
    next: Vec<(IsdAsn, u16, LinkKey)>,
    /// Level-1 keys other ASes issued to this one, for `K_{0n}` as a source.
    level1: Vec<(IsdAsn, Level1Key)>,
    /// `K_{0n}` by (source or destination ISD-AS, source host, destination host).
    e2e: HashMap<(IsdAsn, KeyHostBytes, KeyHostBytes), EndToEndKey>,
}

/// A host address as DRKey encodes it (type/length byte and up to 16 address bytes).
type KeyHostBytes = (u8, [u8; 16]);

fn key_host(h: HostAddr) -> Option<KeyHost> {
    match h {
        HostAddr::V4(a) => Some(KeyHost::from_ip(a.into())),
        HostAddr::V6(a) => Some(KeyHost::from_ip(a.into())),
        _ => None,
    }
}

fn host_bytes(h: &KeyHost) -> KeyHostBytes {
    (h.type_len(), h.encode().0)
}

/// Counters beyond drops.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    initialized: u64,
    forwarded: u64,
    accepted: u64,
    attacked: u64,
}

/// The pathval processor of one router.
pub struct PathvalProcessor {
    ia: IsdAsn,
    config: PathvalConfig,
    hops: NextHops,
    keys: Option<TrustedKeys>,
    router: Router,
    destination: Destination,
    counts: Counts,
}

impl PathvalProcessor {
    /// The processor of `ia`'s router with `interfaces`, keyed from the AS's master secret
    /// `drkey` for the DRKey epoch `epoch` (from the secret it picks for that epoch) and the
    /// Level-1 keys `level1` other ASes issued to it in that epoch; `sampling` is the router's
    /// own EpSampling key (random per start). `epoch` must be one of the AS's schedule (its
    /// DRKey service's): in any other the router derives keys no host or AS was given.
    pub fn new(
        ia: IsdAsn,
        interfaces: &[u16],
        config: PathvalConfig,
        drkey: &RotatingSecret,
        level1: Vec<(IsdAsn, Level1Key)>,
        sampling: [u8; 16],
        epoch: Epoch,
    ) -> Result<Self, PathvalConfigError> {
        let hops = NextHops::new(&config.routes, interfaces)?;
        let freshness = Freshness { max_age_s: config.max_age_s, max_future_s: config.max_future_s };
        let keys = match config.role {
            Role::Trusted => {
                if config.attack.is_some() {
                    return Err(field_err("attack", "only an untrusted router attacks"));
                }
                let issuer = PathvalIssuer::with_secret(drkey, epoch)?;
                let upstream = config.upstream.iter().map(|u| (u.ingress, issuer.link_key_from(u.node))).collect();
                let mut next = Vec::new();
                for (i, n) in config.next.iter().enumerate() {
                    let l1 = level1.iter().find(|(from, _)| *from == n.node).ok_or_else(|| {
                        field_err(format!("next[{i}].node"), format!("no Level-1 key from {}", n.node))
                    })?;
                    next.push((n.dst, n.egress, link_key_from(&l1.1)));
                }
                Some(TrustedKeys { issuer, upstream, next, level1, e2e: HashMap::new() })
            }
            Role::Untrusted => {
                if let Some(a) = config.attack {
                    if on_the_wire(a, &mut [], 0, &mut aviary_qos::SeededRandom::new(0)).is_none() {
                        return Err(field_err(
                            "attack",
                            format!("`{}` is not an attack a router runs on its own", a.label()),
                        ));
                    }
                }
                None
            }
        };
        let placeholder = EndToEndKey::new([0; 16]);
        Ok(Self {
            ia,
            hops,
            keys,
            router: Router::new(SamplingKey::new(sampling), freshness),
            destination: Destination::new(placeholder, freshness),
            counts: Counts::default(),
            config,
        })
    }

    /// A packet's checks, then everything but a trusted router's processing, which is left
    /// for the batch ([`Self::process_chunk`]).
    fn prepare(&mut self, ctx: &mut Context<'_>, pkt: &mut [u8]) -> Result<Prepared, PathvalDrop> {
        let (dst, src_ia, hosts) = {
            let v = ScionView::new_checked(&*pkt).map_err(|_| PathvalDrop::BadScionHeader)?;
            if v.path_type() != path_type::EMPTY {
                return Err(PathvalDrop::NotDestinationRouted);
            }
            (v.dst_ia(), v.src_ia(), (key_host(v.src_host()), key_host(v.dst_host())))
        };
        let now_s = ctx.now_ns / NS_PER_S;
        let Some(keys) = self.keys.as_mut() else {
            // Untrusted: forward by the table, attacking first if told to.
            let egress = choose(&mut self.hops, dst, ctx)?;
            if let Some(a) = self.config.attack {
                if on_the_wire(a, pkt, self.counts.attacked, ctx.random) == Some(true) {
                    self.counts.attacked += 1;
                }
            }
            self.counts.forwarded += 1;
            return Ok(Prepared::Done(QosVerdict::unauthenticated(egress)));
        };
        let (Some(src_host), Some(dst_host)) = hosts else { return Err(PathvalDrop::BadScionHeader) };
        if dst == self.ia {
            let k_prev = upstream_key(&keys.upstream, ctx.ingress)?;
            let k0n = e2e_key(&keys.issuer, &keys.level1, &mut keys.e2e, src_ia, (&src_host, &dst_host), None)?;
            self.destination.k0n = k0n;
            if let Verdict::Drop(d) = self.destination.receive(pkt, k_prev, now_s) {
                return Err(d);
            }
            self.counts.accepted += 1;
            return Ok(Prepared::Done(QosVerdict::Deliver));
        }
        let egress = choose(&mut self.hops, dst, ctx)?;
        let next = keys.next.iter().position(|(d, e, _)| *d == dst && *e == egress).ok_or(PathvalDrop::NoNextKey)?;
        if ctx.ingress != 0 {
            return Ok(Prepared::Route { egress, next });
        }
        // Only this AS's hosts have this router as their first node.
        if src_ia != self.ia {
            return Err(PathvalDrop::UnknownUpstream);
        }
        let session_id = {
            let at = locate(pkt)?;
            PathvalView::new_checked(&pkt[at.header])?.session_id()
        };
        let k0n = e2e_key(&keys.issuer, &keys.level1, &mut keys.e2e, dst, (&src_host, &dst_host), Some(dst))?;
        Source { session_id, k0n }.send(pkt, now_s as u32, &keys.next[next].2)?;
        self.counts.initialized += 1;
        self.counts.forwarded += 1;
        Ok(Prepared::Done(QosVerdict::unauthenticated(egress)))
    }

    /// Up to [`MAX_BATCH`] packets: each prepared on its own, then the trusted router's
    /// packets processed together, their hashing done at once ([`Router::process_batch`]).
    fn process_chunk(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [QosVerdict]) {
        let mut routes: [Option<(u16, usize)>; MAX_BATCH] = [None; MAX_BATCH];
        for ((p, v), r) in pkts.iter_mut().zip(verdicts.iter_mut()).zip(&mut routes) {
            match self.prepare(ctx, p) {
                Ok(Prepared::Done(verdict)) => *v = verdict,
                Ok(Prepared::Route { egress, next }) => *r = Some((egress, next)),
                Err(d) => *v = QosVerdict::Drop(d.reason()),
            }
        }
        let Some(keys) = self.keys.as_ref() else { return };
        let n = pkts.len();
        if routes[..n].iter().all(Option::is_none) {
            return;
        }
        let mut out = [Verdict::Drop(PathvalDrop::UnknownUpstream); MAX_BATCH];
        if let Ok(k_prev) = upstream_key(&keys.upstream, ctx.ingress) {
            let mut batch_keys: [BatchKeys<'_>; MAX_BATCH] = [None; MAX_BATCH];
            for (k, r) in batch_keys.iter_mut().zip(&routes) {
                *k = r.map(|(_, next)| (k_prev, &keys.next[next].2));
            }
            self.router.process_batch(pkts, &batch_keys[..n], ctx.now_ns / NS_PER_S, ctx.random, &mut out[..n]);
        }
        for ((r, o), v) in routes.iter().zip(&out).zip(verdicts) {
            let Some((egress, _)) = r else { continue };
            *v = match o {
                Verdict::Drop(d) => QosVerdict::Drop(d.reason()),
                _ => {
                    self.counts.forwarded += 1;
                    QosVerdict::unauthenticated(*egress)
                }
            };
        }
    }
}

/// A packet after [`PathvalProcessor::prepare`].
enum Prepared {
    /// Decided already: the source's, the destination's and an untrusted router's packets.
    Done(QosVerdict),
    /// A trusted router's, to process with the batch: it leaves by `egress`, toward the next
    /// trusted node whose key is `TrustedKeys::next[next]`.
    Route { egress: u16, next: usize },
}

fn choose(hops: &mut NextHops, dst: IsdAsn, ctx: &Context<'_>) -> Result<u16, PathvalDrop> {
    hops.choose(dst, ctx.links).map_err(|e| match e {
        NoNextHop::UnknownDestination => PathvalDrop::NoRoute,
        NoNextHop::NoLiveAlternative => PathvalDrop::NoLiveNextHop,
    })
}

fn upstream_key(upstream: &[(u16, LinkKey)], ingress: u16) -> Result<&LinkKey, PathvalDrop> {
    upstream.iter().find(|(i, _)| *i == ingress).map(|(_, k)| k).ok_or(PathvalDrop::UnknownUpstream)
}

/// `K_{0n}`: at the destination (`issued_by = None`) derived from this AS's secret for the
/// packet's source; at a source from the Level-1 key the destination AS `issued_by` issued.
/// (Takes the fields of [`TrustedKeys`] it needs, so that the caller may hold link keys.)
fn e2e_key(
    issuer: &PathvalIssuer,
    level1: &[(IsdAsn, Level1Key)],
    cache: &mut HashMap<(IsdAsn, KeyHostBytes, KeyHostBytes), EndToEndKey>,
    other: IsdAsn,
    (src_host, dst_host): (&KeyHost, &KeyHost),
    issued_by: Option<IsdAsn>,
) -> Result<EndToEndKey, PathvalDrop> {
    let id = (other, host_bytes(src_host), host_bytes(dst_host));
    if let Some(k) = cache.get(&id) {
        return Ok(k.clone());
    }
    let k = match issued_by {
        None => issuer.end_to_end_key(other, src_host, dst_host),
        Some(d) => {
            let (_, l1) = level1.iter().find(|(from, _)| *from == d).ok_or(PathvalDrop::NoNextKey)?;
            end_to_end_key_from(l1, src_host, dst_host)
        }
    };
    if cache.len() >= E2E_CACHE {
        cache.clear();
    }
    cache.insert(id, k.clone());
    Ok(k)
}

const CLAIMS: &[Claim] = &[Claim::HopByHopOption(OPT_PATHVAL)];

impl Processor for PathvalProcessor {
    fn name(&self) -> &'static str {
        "pathval"
    }

    fn claims(&self) -> &'static [Claim] {
        CLAIMS
    }

    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [QosVerdict]) {
        for (p, v) in pkts.chunks_mut(MAX_BATCH).zip(verdicts.chunks_mut(MAX_BATCH)) {
            self.process_chunk(ctx, p, v);
        }
    }

    fn drop_reasons(&self) -> &'static [&'static str] {
        PathvalDrop::LABELS
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        out("initialized_packets", self.counts.initialized);
        out("forwarded_packets", self.counts.forwarded);
        out("accepted_packets", self.counts.accepted);
        out("attacked_packets", self.counts.attacked);
        out("sampled_packets", self.router.stats.sampled);
        out("proofs_verified", self.router.stats.proofs_verified + self.destination.stats.proofs_verified);
    }

    fn control(&mut self, request: &serde_json::Value) -> Result<(), ControlError> {
        let c: Control = serde_json::from_value(request.clone()).map_err(|e| ControlError::from_json(&e))?;
        if let Some(a) = c.attack {
            if self.config.role == Role::Trusted {
                return Err(ControlError::new("attack", "only an untrusted router attacks"));
            }
            if on_the_wire(a, &mut [], 0, &mut aviary_qos::SeededRandom::new(0)).is_none() {
                return Err(ControlError::new(
                    "attack",
                    format!("`{}` is not an attack a router runs on its own", a.label()),
                ));
            }
        }
        self.config.attack = c.attack;
        Ok(())
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "role": self.config.role, "attack": self.config.attack })
    }
}
