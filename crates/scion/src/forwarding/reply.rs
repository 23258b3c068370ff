//! The path of a message a border router originates in reply to a packet (an SCMP error, echo
//! or traceroute reply): the packet's standard path reversed and already past this AS's own
//! hop field(s), so that the reply leaves on the interface the packet came in on and the next
//! AS verifies it as usual, as the scionproto border router builds its SCMP replies.
//!
//! The router passes the path in a *settled* state: CurrINF/CurrHF at the hop field through
//! which this AS took the packet, and that segment's SegID the one its MAC is computed under.
//! A packet that was dropped before its SegID was touched, or forwarded, is first brought to
//! that state ([`settle_untouched`], [`settle_forwarded`]); a packet delivered here already
//! is in it.

use crate::forwarding::HopWork;
use crate::wire::path::{chain_seg_id, segment_of, PathError, StandardPath};

/// Settles the path of a packet that arrived on `ingress` and that the forwarder left as it
/// was: against construction direction the SegID is chained with this hop field's MAC first.
pub fn settle_untouched(path: &mut StandardPath, ingress: u16) -> Result<(), PathError> {
    path.validate()?;
    let (ci, ch) = (usize::from(path.curr_inf), usize::from(path.curr_hf));
    let info = path.info[ci];
    if HopWork::chains_before_verifying(&info, ingress, info.peering) {
        path.info[ci].seg_id = chain_seg_id(info.seg_id, &path.hops[ch].mac);
    }
    Ok(())
}

/// Settles the path of a packet the forwarder advanced past this AS (one forwarded to an
/// egress that turned out to be down): back to the last hop field of this AS, undoing the
/// SegID chaining of construction direction.
pub fn settle_forwarded(path: &mut StandardPath) -> Result<(), PathError> {
    path.validate()?;
    let ch = usize::from(path.curr_hf).checked_sub(1).ok_or(PathError::IndexOutOfRange)?;
    let ci = segment_of(path.seg_len, ch);
    path.curr_hf = ch as u8;
    path.curr_inf = ci as u8;
    let info = path.info[ci];
    if info.cons_dir && !info.peering {
        path.info[ci].seg_id = chain_seg_id(info.seg_id, &path.hops[ch].mac);
    }
    Ok(())
}

/// The reply path for a settled `path`: reversed, and past this AS's hop field(s) in the
/// reverse direction. Fails if the packet's path does not lead back out of this AS.
pub fn reply_path(path: &StandardPath) -> Result<StandardPath, PathError> {
    let mut rev = path.clone();
    rev.reverse()?;
    let seg_end = |p: &StandardPath, s: usize| p.seg_len[..=s].iter().map(|l| usize::from(*l)).sum::<usize>();
    let (ci, ch) = (usize::from(rev.curr_inf), usize::from(rev.curr_hf));
    // A crossover this AS made going forward is undone first: its other hop field (the first
    // of the next reversed segment) is where the reply leaves.
    if ch + 1 == seg_end(&rev, ci) && ci + 1 < rev.info.len() && !rev.info[ci].peering {
        rev.curr_hf += 1;
        rev.curr_inf += 1;
    }
    let (ci, ch) = (usize::from(rev.curr_inf), usize::from(rev.curr_hf));
    if ch + 1 >= rev.hops.len() {
        return Err(PathError::IndexOutOfRange);
    }
    let info = rev.info[ci];
    if info.cons_dir && !info.peering {
        rev.info[ci].seg_id = chain_seg_id(info.seg_id, &rev.hops[ch].mac);
    }
    rev.curr_hf += 1;
    rev.curr_inf = segment_of(rev.seg_len, ch + 1) as u8;
    Ok(rev)
}
