//! What an AS knows of its neighbours' matrices (the GLWP paper, §V-A consistency checks and
//! §V-C consistency-check subprotocol): its own [`MatrixSchedule`], which it announces to every
//! neighbour ([`Neighbourhood::announcements`]), and the last announcement each neighbour made
//! for each link ([`Neighbourhood::receive`], step 2), against which the hop values a
//! neighbour promotes in discovery are checked ([`Neighbourhood::check_promoted`], step 4).
//!
//! Inconsistency is blamed on the neighbour (F2): a promoted value that differs from what the
//! announcement says for the discovery's `ts_pkt` (old, temporary or new values), a value
//! promoted for a link it never announced while it announced others, an announcement whose
//! entries add up to more than its divergent or convergent, or one that rewrites what an
//! earlier one said (a different past, a second change before the first is over, a change that
//! starts before it is announced). The message is dropped and the blame recorded per neighbour
//! ([`crate::discovery::blame`], which may hold it down). A neighbour not heard from at all has
//! had no chance yet (it or this AS has just started): its values are refused, not blamed.
//!
//! Bounded state: one announcement per link of this AS (a neighbour can announce only for as
//! many links as it has to this AS), and announcements are rate limited per neighbour before
//! their MAC is checked.

use std::collections::BTreeMap;

use aviary_scion::IsdAsn;

use crate::allocation::HopValues;
use crate::discovery::announcement::{
    Announcement, AnnouncementRepr, FacingSums, Row, RowValues, KIND as ANNOUNCEMENT_KIND, MAX_ROWS,
};
use crate::discovery::blame::{Blame, BlameBook, BlamePolicy, BlameReason};
use crate::discovery::crypto::announcement_mac;
use crate::discovery::keys::DiscoveryKeys;
use crate::discovery::verify::auth_eq;
use crate::discovery::{DiscoveryDrop, DiscoveryParams};
use crate::matrix::{AllocationMatrix, InterfaceId};
use crate::schedule::{values_at, ChangeWindow, MatrixSchedule, ScheduleError};

/// How often a neighbour may announce: a bucket of `burst` announcements, one more every
/// `refill_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnnouncementLimit {
    pub burst: u32,
    pub refill_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: u32,
    last_ns: u64,
}

/// Hop values a neighbour promoted in a discovery, as the AS next to it on the path sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promoted {
    pub neighbour: IsdAsn,
    /// This AS's interface at the link to the neighbour.
    pub ours: InterfaceId,
    /// The neighbour's interface pair on the path.
    pub pair: (InterfaceId, InterfaceId),
    /// The neighbour's interface at the link to this AS (one of `pair`).
    pub facing: InterfaceId,
    pub values: HopValues,
    /// The discovery's timestamp, which selects old, temporary or new values.
    pub ts_pkt: u64,
}

/// One AS's schedule and its neighbours' announcements.
#[derive(Clone, Debug)]
pub struct Neighbourhood {
    schedule: MatrixSchedule,
    neighbours: BTreeMap<InterfaceId, IsdAsn>,
    params: DiscoveryParams,
    limit: AnnouncementLimit,
    buckets: BTreeMap<IsdAsn, Bucket>,
    /// By (neighbour, its interface at the link).
    announced: BTreeMap<(IsdAsn, InterfaceId), AnnouncementRepr>,
    /// This AS's interface to a neighbour → the neighbour's interface at that link, as
    /// discoveries showed it (check (ii): the identifiers of the link do not change).
    facing: BTreeMap<(IsdAsn, InterfaceId), InterfaceId>,
    /// The last contradicting announcement of each neighbour, so that the same one re-sent
    /// (every second) is refused without being blamed again: one offence, one blame.
    contradicted: BTreeMap<IsdAsn, AnnouncementRepr>,
    blames: BlameBook,
    last_sent_ns: u64,
}

/// The facing sums and row of `x` of `m` at interface `f`.
fn row_values(m: &AllocationMatrix, f: InterfaceId, x: InterfaceId) -> RowValues {
    RowValues {
        into_facing_bps: m.entry_bps(x, f),
        div_bps: m.divergent_bps(x),
        from_facing_bps: m.entry_bps(f, x),
        con_bps: m.convergent_bps(x),
    }
}

fn sums(m: &AllocationMatrix, f: InterfaceId) -> FacingSums {
    FacingSums { div_bps: m.divergent_bps(f), con_bps: m.convergent_bps(f) }
}

/// Check (iii) for one time: no entry above its sums.
fn sums_hold(facing: FacingSums, rows: impl Iterator<Item = RowValues> + Clone) -> bool {
    let total = |f: fn(&RowValues) -> u64| rows.clone().map(|r| u128::from(f(&r))).sum::<u128>();
    total(|r| r.from_facing_bps) <= u128::from(facing.div_bps)
        && total(|r| r.into_facing_bps) <= u128::from(facing.con_bps)
        && rows.clone().all(|r| r.into_facing_bps <= r.div_bps && r.from_facing_bps <= r.con_bps)
}

/// What `a` says the neighbour promotes at `at_ns` for its pair `(i, j)`, one of which is
/// `a.facing`; `None` if the values are impossible (never the case after [`sums_hold`]).
fn announced_values(a: &AnnouncementRepr, (i, j): (InterfaceId, InterfaceId), at_ns: u64) -> Option<HopValues> {
    let f = a.facing;
    let other = if i == f { j } else { i };
    let row = a.rows.iter().find(|r| r.interface == other).copied();
    let row = row.unwrap_or(Row { interface: other, before: RowValues::default(), after: RowValues::default() });
    let hv = |s: FacingSums, r: RowValues| {
        if i == f {
            HopValues::new(s.div_bps, r.from_facing_bps, r.con_bps).ok()
        } else {
            HopValues::new(r.div_bps, r.into_facing_bps, s.con_bps).ok()
        }
    };
    Some(values_at(hv(a.facing_before, row.before)?, hv(a.facing_after, row.after)?, a.window, at_ns))
}

/// Whether two announcements say the same (a re-sent one: only the timestamp differs).
fn same_schedule(a: &AnnouncementRepr, b: &AnnouncementRepr) -> bool {
    (a.window, a.facing_before, a.facing_after, &a.rows) == (b.window, b.facing_before, b.facing_after, &b.rows)
}

/// Whether an AS with links at `links` can announce matrices `ms` together: the announcement
/// for each link lists every other interface of them, at most [`MAX_ROWS`].
pub fn check_announceable(
    ms: &[&AllocationMatrix],
    links: impl IntoIterator<Item = InterfaceId>,
) -> Result<(), ScheduleError> {
    let mut all: Vec<InterfaceId> = ms.iter().flat_map(|m| m.interfaces()).collect();
    all.sort_unstable();
    all.dedup();
    for f in links {
        let rows = all.iter().filter(|&&x| x != f).count();
        if rows > MAX_ROWS {
            return Err(ScheduleError::TooManyInterfaces { rows, max: MAX_ROWS });
        }
    }
    Ok(())
}

impl Neighbourhood {
    pub fn new(
        matrix: AllocationMatrix,
        neighbours: BTreeMap<InterfaceId, IsdAsn>,
        params: DiscoveryParams,
        limit: AnnouncementLimit,
    ) -> Self {
        Self {
            schedule: MatrixSchedule::new(matrix),
            neighbours,
            params,
            limit,
            buckets: BTreeMap::new(),
            announced: BTreeMap::new(),
            facing: BTreeMap::new(),
            contradicted: BTreeMap::new(),
            blames: BlameBook::default(),
            last_sent_ns: 0,
        }
    }

    pub fn schedule(&self) -> &MatrixSchedule {
        &self.schedule
    }

    /// Step 1: changes this AS's matrix to `new`, requested at `now_ns`. The temporary values
    /// start `L + ε` later, so that the announcements reach the neighbours before any
    /// discovery stamped in the new phase (a source's clock may be ε ahead); the new ones
    /// ΔT after that. Announce afterwards ([`Self::announcements`]).
    pub fn change_matrix(&mut self, new: AllocationMatrix, now_ns: u64) -> Result<ChangeWindow, ScheduleError> {
        check_announceable(&[self.schedule.after(), &new], self.neighbours.keys().copied())?;
        let f = self.params.freshness;
        let t1 = now_ns.saturating_add(f.lifetime_ns).saturating_add(f.skew_ns);
        self.schedule.change(new, t1, u64::from(self.params.validity_s) * 1_000_000_000)?;
        Ok(self.schedule.window().unwrap_or(ChangeWindow { t1_ns: t1, t2_ns: t1 }))
    }

    /// Step 1: one announcement per link, `(neighbour, this AS's interface, bytes)`, made at
    /// `now_ns` (sent at the start, after a change, and again now and then in case one was
    /// lost).
    pub fn announcements<K: DiscoveryKeys>(&mut self, keys: &K, now_ns: u64) -> Vec<(IsdAsn, InterfaceId, Vec<u8>)> {
        // Strictly increasing, so a receiver can tell a replay from a newer announcement.
        let ts_ns = now_ns.max(self.last_sent_ns + 1);
        self.last_sent_ns = ts_ns;
        let (before, after) = (self.schedule.before(), self.schedule.after());
        let mut others: Vec<InterfaceId> = before.interfaces().chain(after.interfaces()).collect();
        others.sort_unstable();
        others.dedup();
        self.neighbours
            .iter()
            .filter_map(|(&f, &to)| {
                let rows = others
                    .iter()
                    .filter(|&&x| x != f)
                    .map(|&x| Row { interface: x, before: row_values(before, f, x), after: row_values(after, f, x) })
                    .collect();
                let repr = AnnouncementRepr {
                    ts_ns,
                    window: self.schedule.window(),
                    facing: f,
                    facing_before: sums(before, f),
                    facing_after: sums(after, f),
                    rows,
                };
                let key = keys.key_to(to);
                // Never fails: every matrix of the schedule passed `check_announceable`.
                repr.emit(|b| announcement_mac(&key, b)).ok().map(|bytes| (to, f, bytes))
            })
            .collect()
    }

    /// Step 2: an announcement from the GLWP service of `from` at `now_ns`, checked and stored.
    pub fn receive<K: DiscoveryKeys>(
        &mut self,
        msg: &[u8],
        from: IsdAsn,
        keys: &K,
        now_ns: u64,
    ) -> Result<(), DiscoveryDrop> {
        let a = Announcement::new_checked(msg)?;
        let links = self.neighbours.values().filter(|&&n| n == from).count();
        if links == 0 {
            return Err(DiscoveryDrop::WrongNeighbour);
        }
        if !self.admit(from, now_ns) {
            return Err(DiscoveryDrop::RateLimited);
        }
        self.params.check_fresh(a.ts_ns(), now_ns)?;
        let key = keys.key_from(from).ok_or(DiscoveryDrop::NoKey)?;
        if !auth_eq(&announcement_mac(&key, a.authenticated()), &a.mac()) {
            return Err(DiscoveryDrop::BadAuthenticator);
        }
        let repr = AnnouncementRepr::parse(&a);
        let stored = self.announced.get(&(from, repr.facing));
        if stored.is_some_and(|s| repr.ts_ns <= s.ts_ns) {
            return Err(DiscoveryDrop::Replayed);
        }
        let known = self.announced.keys().filter(|(n, _)| *n == from).count();
        if stored.is_none() && known >= links {
            // More links than it has to this AS: state a neighbour cannot grow.
            return Err(DiscoveryDrop::WrongNeighbour);
        }
        if !Self::consistent(stored, &repr) {
            let again =
                self.contradicted.get(&from).is_some_and(|c| c.facing == repr.facing && same_schedule(c, &repr));
            if !again {
                self.blame(from, BlameReason::ContradictingAnnouncement, now_ns);
                self.contradicted.insert(from, repr);
            }
            return Err(DiscoveryDrop::ContradictingAnnouncement);
        }
        self.announced.insert((from, repr.facing), repr);
        Ok(())
    }

    /// An announcement on its own (check (iii) before and after) and against the one before.
    fn consistent(stored: Option<&AnnouncementRepr>, new: &AnnouncementRepr) -> bool {
        let rows = |after: bool| new.rows.iter().map(move |r| if after { r.after } else { r.before });
        if !sums_hold(new.facing_before, rows(false)) || !sums_hold(new.facing_after, rows(true)) {
            return false;
        }
        let Some(old) = stored else { return true };
        if same_schedule(old, new) {
            return true;
        }
        // A new change: announced ahead of its start, after the previous one is over, and
        // from what the previous one changed to.
        let Some(w) = new.window else { return false };
        let old_end = old.window.map_or(0, |o| o.t2_ns);
        let before_matches = new.facing_before == old.facing_after
            && old.rows.iter().all(|r| new.rows.iter().any(|n| n.interface == r.interface && n.before == r.after))
            && new
                .rows
                .iter()
                .all(|n| old.rows.iter().any(|r| r.interface == n.interface) || n.before == RowValues::default());
        w.t1_ns >= new.ts_ns && w.t1_ns >= old_end && before_matches
    }

    fn admit(&mut self, from: IsdAsn, now_ns: u64) -> bool {
        let limit = self.limit;
        let b = self.buckets.entry(from).or_insert(Bucket { tokens: limit.burst, last_ns: now_ns });
        if limit.refill_ns > 0 && now_ns > b.last_ns {
            let earned = (now_ns - b.last_ns) / limit.refill_ns;
            if earned > 0 {
                b.tokens = u32::try_from(u64::from(b.tokens) + earned).unwrap_or(u32::MAX).min(limit.burst);
                b.last_ns += earned * limit.refill_ns;
            }
        }
        if b.tokens == 0 {
            return false;
        }
        b.tokens -= 1;
        true
    }

    fn blame(&mut self, n: IsdAsn, reason: BlameReason, now_ns: u64) {
        self.blames.blame(n, reason, now_ns);
    }

    /// Step 4: the values a neighbour promoted, against its announcement for their time.
    pub fn check_promoted(&mut self, p: &Promoted, now_ns: u64) -> Result<(), DiscoveryDrop> {
        let n = p.neighbour;
        if self.facing.get(&(n, p.ours)).is_some_and(|&f| f != p.facing) {
            self.blame(n, BlameReason::InconsistentValues, now_ns);
            return Err(DiscoveryDrop::InconsistentNeighbour);
        }
        let Some(a) = self.announced.get(&(n, p.facing)) else {
            // Nothing heard from the neighbour yet (this AS or it has just started, or its
            // announcements wait for its key): not yet known, refused but not blamed; its
            // announcement comes within a second. Having announced its other links but not
            // this one, it had its chance.
            if self.has_heard(n) {
                self.blame(n, BlameReason::Unannounced, now_ns);
            }
            return Err(DiscoveryDrop::NotAnnounced);
        };
        if announced_values(a, p.pair, p.ts_pkt) != Some(p.values) {
            self.blame(n, BlameReason::InconsistentValues, now_ns);
            return Err(DiscoveryDrop::InconsistentNeighbour);
        }
        self.facing.entry((n, p.ours)).or_insert(p.facing);
        Ok(())
    }

    /// Whether an announcement of `n` is stored, for any of its links to this AS.
    pub fn has_heard(&self, n: IsdAsn) -> bool {
        self.announced.range((n, 0)..=(n, InterfaceId::MAX)).next().is_some()
    }

    /// The blame records, per neighbour.
    pub fn blames(&self) -> &BTreeMap<IsdAsn, Blame> {
        self.blames.records()
    }

    /// Sets the policy that holds blamed neighbours down; the records start afresh (set it
    /// before the AS runs).
    pub fn set_blame_policy(&mut self, policy: BlamePolicy) {
        self.blames = BlameBook::new(policy);
    }

    /// Whether discoveries through `n` are refused at `now_ns` (the blame policy held it down).
    pub fn held_down(&self, n: IsdAsn, now_ns: u64) -> bool {
        self.blames.held_down(n, now_ns)
    }

    /// The operator's reset of `n`'s hold-down; whether it was held down.
    pub fn clear_hold_down(&mut self, n: IsdAsn, now_ns: u64) -> bool {
        self.blames.clear(n, now_ns)
    }

    /// Takes up `schedule` as this AS's own, e.g. the one it had before a restart (persisted
    /// by the caller), instead of the matrix it was built with.
    pub fn resume(&mut self, schedule: MatrixSchedule) -> Result<(), ScheduleError> {
        check_announceable(&[schedule.before(), schedule.after()], self.neighbours.keys().copied())?;
        self.schedule = schedule;
        Ok(())
    }
}

/// Whether a datagram is an announcement (else a discovery message), by its first byte.
pub fn is_announcement(msg: &[u8]) -> bool {
    msg.first() == Some(&ANNOUNCEMENT_KIND)
}
