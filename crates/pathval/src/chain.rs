//! A path of pathval nodes in one process: a source, trusted routers and a destination, each
//! in its own AS and keyed through DRKey as [`crate::keys`] describes. The lab's figures and
//! the crate's statistical tests run packets through it; it calls the same [`Source`],
//! [`Router`] and [`Destination`] a deployment does.

use std::net::Ipv4Addr;

use aviary_qos::{RandomSource, SeededRandom};
use aviary_scion::drkey::{DrkeyError, Epoch, HostAddr as DrkeyHost};
use aviary_scion::{path_type, HostAddr, IsdAsn, ScionHeader};

use crate::batch::MAX_BATCH;
use crate::crypto::{LinkKey, SamplingKey};
use crate::header::{emit_extension, EXTENSION_LEN};
use crate::keys::PathvalIssuer;
use crate::router::{Destination, Freshness, PathvalDrop, Router, Source, Verdict};
use crate::scheme::{Scheme, SchemeKind};

/// Upper-layer protocol after the extension (UDP), as a real packet would carry.
const UDP: u8 = 17;
const SRC_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// What happened to one packet on the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trip {
    /// `sampled[i]`: node `i` (the source is node 0) put its proof in the packet. The
    /// destination never samples; a dropped packet lists the nodes before the drop.
    pub sampled: Vec<bool>,
    /// The destination's verdict, or the first drop on the way.
    pub verdict: Verdict,
}

/// `nodes` nodes in a row: node 0 the source, node `nodes - 1` the destination.
pub struct Chain {
    scheme: SchemeKind,
    header: ScionHeader,
    source: Source,
    routers: Vec<Router>,
    destination: Destination,
    /// `links[i]` is `K_{i(i+1)}`.
    links: Vec<LinkKey>,
}

impl Chain {
    /// The AS of node `i`.
    pub fn ia(i: usize) -> IsdAsn {
        IsdAsn::new(1, 0xff00_0000_0100 + i as u64)
    }

    /// A chain of `nodes` (at least 2) nodes whose AS secrets and router sampling keys come
    /// from `seed`; every node accepts packets up to `freshness` old.
    pub fn new(nodes: usize, seed: u64, epoch: Epoch, freshness: Freshness) -> Result<Self, DrkeyError> {
        Self::with_scheme(SchemeKind::Pathval, nodes, seed, epoch, freshness)
    }

    /// [`Self::new`] running `scheme` instead of pathval (at most 255 nodes, the HopCount's
    /// range).
    pub fn with_scheme(
        scheme: SchemeKind,
        nodes: usize,
        seed: u64,
        epoch: Epoch,
        freshness: Freshness,
    ) -> Result<Self, DrkeyError> {
        assert!((2..=255).contains(&nodes), "a path has a source and a destination, and at most 255 nodes");
        let mut rng = SeededRandom::new(seed);
        let issuers = (0..nodes)
            .map(|_| {
                let mut master = [0u8; 16];
                rng.fill_bytes(&mut master);
                PathvalIssuer::new(&master, epoch)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let links = (1..nodes).map(|i| issuers[i].link_key_from(Self::ia(i - 1))).collect();
        let (src, dst) = (DrkeyHost::Ipv4(SRC_HOST), DrkeyHost::Ipv4(DST_HOST));
        let k0n = issuers[nodes - 1].end_to_end_key(Self::ia(0), &src, &dst);
        let mut session_id = [0u8; 16];
        rng.fill_bytes(&mut session_id);
        let routers = (1..nodes - 1)
            .map(|_| {
                let mut k = [0u8; 16];
                rng.fill_bytes(&mut k);
                Router::new(SamplingKey::new(k), freshness)
            })
            .collect();
        let header = ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: aviary_scion::wire::extension::HOP_BY_HOP,
            path_type: path_type::EMPTY,
            dst_ia: Self::ia(nodes - 1),
            src_ia: Self::ia(0),
            dst_host: HostAddr::V4(DST_HOST),
            src_host: HostAddr::V4(SRC_HOST),
            path: Vec::new(),
        };
        Ok(Self {
            scheme,
            header,
            source: Source { session_id, k0n: k0n.clone() },
            routers,
            destination: Destination::new(k0n, freshness),
            links,
        })
    }

    pub fn nodes(&self) -> usize {
        self.links.len() + 1
    }
    pub fn scheme(&self) -> SchemeKind {
        self.scheme
    }
    pub fn source(&self) -> &Source {
        &self.source
    }
    pub fn routers(&self) -> &[Router] {
        &self.routers
    }
    pub fn destination(&self) -> &Destination {
        &self.destination
    }
    /// `K_{i(i+1)}`.
    pub fn link(&self, i: usize) -> &LinkKey {
        &self.links[i]
    }

    /// A SCION packet carrying `payload` behind a zeroed pathval header.
    pub fn packet(&self, payload: &[u8]) -> Vec<u8> {
        let h = self.header.len();
        let mut pkt = vec![0; h + EXTENSION_LEN + payload.len()];
        self.header.emit(EXTENSION_LEN + payload.len(), &mut pkt).expect("the chain's header is valid");
        emit_extension(UDP, &mut pkt[h..]);
        pkt[h + EXTENSION_LEN..].copy_from_slice(payload);
        pkt
    }

    /// The scheme as node `i` runs it.
    fn scheme_at(&self, i: usize) -> Scheme {
        self.scheme.at(i as u8, self.nodes() as u8)
    }

    /// The source's part: fills in the header of `pkt`, created at `timestamp`, for node 1.
    /// Returns whether the source put a proof in it.
    pub fn send(&self, pkt: &mut [u8], timestamp: u32) -> Result<bool, PathvalDrop> {
        self.source.send_as(self.scheme_at(0), pkt, timestamp, &self.links[0])
    }

    /// Node `i` (`1 ≤ i < nodes`: a router, or the destination last) processes `pkt` as if it
    /// came from node `i - 1`.
    pub fn step(&mut self, i: usize, pkt: &mut [u8], now_s: u64, random: &mut dyn RandomSource) -> Verdict {
        let scheme = self.scheme_at(i);
        if i == self.nodes() - 1 {
            return self.destination.receive_as(scheme, pkt, &self.links[i - 1], now_s);
        }
        self.routers[i - 1].process_as(scheme, pkt, (&self.links[i - 1], &self.links[i]), now_s, random)
    }

    /// [`Self::step`] at router `i` (`1 ≤ i < nodes - 1`) for a batch of packets, hashed
    /// together as a deployed router does ([`Router::process_batch`]); pathval only.
    pub fn step_batch(
        &mut self,
        i: usize,
        pkts: &mut [&mut [u8]],
        now_s: u64,
        random: &mut dyn RandomSource,
        verdicts: &mut [Verdict],
    ) {
        assert!(self.scheme == SchemeKind::Pathval, "only pathval routers process batches");
        assert!((1..self.nodes() - 1).contains(&i), "node {i} is not a router");
        let keys = [Some((&self.links[i - 1], &self.links[i])); MAX_BATCH];
        for (p, v) in pkts.chunks_mut(MAX_BATCH).zip(verdicts.chunks_mut(MAX_BATCH)) {
            self.routers[i - 1].process_batch(p, &keys, now_s, random, v);
        }
    }

    /// Sends a packet created at `timestamp` from the source and hands it to each node in
    /// turn, `hook(i, pkt)` seeing it on the wire between node `i` and node `i + 1`.
    pub fn run_with(
        &mut self,
        pkt: &mut [u8],
        timestamp: u32,
        now_s: u64,
        random: &mut dyn RandomSource,
        mut hook: impl FnMut(usize, &mut [u8]),
    ) -> Trip {
        let mut sampled = match self.send(pkt, timestamp) {
            Ok(s) => vec![s],
            Err(d) => return Trip { sampled: Vec::new(), verdict: Verdict::Drop(d) },
        };
        hook(0, pkt);
        let last = self.nodes() - 1;
        for i in 1..last {
            match self.step(i, pkt, now_s, random) {
                Verdict::Forward { sampled: s } => sampled.push(s),
                other => return Trip { sampled, verdict: other },
            }
            hook(i, pkt);
        }
        let verdict = self.step(last, pkt, now_s, random);
        Trip { sampled, verdict }
    }

    /// [`Self::run_with`] without looking at the packet on the way.
    pub fn run(&mut self, pkt: &mut [u8], timestamp: u32, now_s: u64, random: &mut dyn RandomSource) -> Trip {
        self.run_with(pkt, timestamp, now_s, random, |_, _| {})
    }
}
