//! Every loop-free path between every pair of ASes, along the interface pairs that allocation
//! matrices allow (entry > 0). Their number grows exponentially with the topology's density, so
//! the walk stops with an error after a given number of path prefixes.

use std::collections::{BTreeMap, BTreeSet};

use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::matrix::{InterfaceId, LOCAL_INTERFACE};
use crate::topology::{Hop, Topology};

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum EnumerationError {
    #[error("the topology has more than {limit} loop-free path prefixes; list the paths to allocate instead")]
    TooManyPrefixes { limit: usize },
}

/// One AS on the walk's stack: where the walk entered it and which allowed egresses it has
/// still to try.
struct Frame<'a> {
    ia: IsdAsn,
    ingress: InterfaceId,
    egresses: &'a [InterfaceId],
    next: usize,
}

impl Topology {
    /// Every loop-free path from an AS's local interface to another AS's local interface whose
    /// interface pairs all have a positive matrix entry (paths through other pairs are
    /// allocated nothing), ordered by source AS and then depth first by interface. Fails once
    /// more than `limit` prefixes (paths included) have been visited, before building them all.
    pub fn loop_free_paths(&self, limit: usize) -> Result<Vec<Vec<Hop>>, EnumerationError> {
        // Per AS and ingress: the egresses with a positive entry.
        let mut allowed: BTreeMap<(IsdAsn, InterfaceId), Vec<InterfaceId>> = BTreeMap::new();
        for (&ia, matrix) in &self.nodes {
            for e in matrix.entries().filter(|e| e.bps > 0) {
                allowed.entry((ia, e.ingress)).or_default().push(e.egress);
            }
        }
        let egresses_of = |ia, ingress| allowed.get(&(ia, ingress)).map_or(&[][..], Vec::as_slice);

        let mut paths = Vec::new();
        let mut visited_prefixes = 0usize;
        for &source in self.nodes.keys() {
            let mut on_path = BTreeSet::from([source]);
            // `hops[d]` is the hop of `stack[d]`, present once that frame has moved on.
            let mut hops: Vec<Hop> = Vec::new();
            let mut stack = vec![Frame {
                ia: source,
                ingress: LOCAL_INTERFACE,
                egresses: egresses_of(source, LOCAL_INTERFACE),
                next: 0,
            }];
            while let Some(top) = stack.last_mut() {
                let Some(&egress) = top.egresses.get(top.next) else {
                    on_path.remove(&top.ia);
                    stack.pop();
                    hops.pop();
                    continue;
                };
                top.next += 1;
                let hop = Hop { ia: top.ia, ingress: top.ingress, egress };
                if egress == LOCAL_INTERFACE {
                    // The source's own local pair (0, 0) cannot be listed, so this AS is not the source.
                    visited_prefixes += 1;
                    if visited_prefixes > limit {
                        return Err(EnumerationError::TooManyPrefixes { limit });
                    }
                    let mut path = hops.clone();
                    path.push(hop);
                    paths.push(path);
                    continue;
                }
                let Some((peer, peer_ingress)) = self.peer(top.ia, egress) else { continue };
                if on_path.contains(&peer) {
                    continue;
                }
                visited_prefixes += 1;
                if visited_prefixes > limit {
                    return Err(EnumerationError::TooManyPrefixes { limit });
                }
                hops.push(hop);
                on_path.insert(peer);
                stack.push(Frame {
                    ia: peer,
                    ingress: peer_ingress,
                    egresses: egresses_of(peer, peer_ingress),
                    next: 0,
                });
            }
        }
        Ok(paths)
    }
}
