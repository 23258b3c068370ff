//! The matrix announcement (the GLWP paper, §V-C, consistency-check subprotocol step 1): what
//! an AS tells the neighbour at one of its interfaces `f` about its matrix, authenticated with
//! the pairwise key `K_{sender→neighbour}`. It carries the row and column of `f` before and
//! after the latest change and when that change happens, and for every other interface `x`
//! its divergent and convergent: every hop value the sender can promote for a path that
//! crosses the link at `f` (`DIV_x | M_xf | CON_f` entering at x, `DIV_f | M_fx | CON_x`
//! leaving at x), which the neighbour learns from such paths' discoveries anyway.
//!
//! ```text
//! | kind = 4 (1) | reserved (1) | n (2) | ts (8) | t_1 (8) | t_2 (8) | f (2) | reserved (2) |
//! | before: DIV_f (8) | CON_f (8) | after: DIV_f (8) | CON_f (8) |
//! | n rows: x (2) | reserved (2) | before: M_xf | DIV_x | M_fx | CON_x | after: the same (8 each) |
//! | MAC (16) |
//! ```
//!
//! All integers big-endian; length `80 + 68n` bytes. `t_1 = t_2 = 0`: no change (the values
//! after hold always). docs/glwp.md has the field diagram.

use thiserror::Error;

use crate::matrix::InterfaceId;
use crate::schedule::ChangeWindow;

/// The first byte of an announcement (discovery messages use 1 to 3), so one socket carries both.
pub const KIND: u8 = 4;

/// The most other interfaces one announcement lists; keeps it within 4.4 kB, the size of the
/// longest discovery message.
pub const MAX_ROWS: usize = 64;

/// Field offsets: the one place they are written down.
pub mod field {
    use std::ops::Range;
    pub const KIND: usize = 0;
    pub const RESERVED: usize = 1;
    pub const ROWS: Range<usize> = 2..4;
    pub const TS: Range<usize> = 4..12;
    pub const T1: Range<usize> = 12..20;
    pub const T2: Range<usize> = 20..28;
    pub const FACING: Range<usize> = 28..30;
    pub const RESERVED2: Range<usize> = 30..32;
    pub const FACING_BEFORE: Range<usize> = 32..48;
    pub const FACING_AFTER: Range<usize> = 48..64;
    pub const HEADER_LEN: usize = 64;
    /// `x (2) | reserved (2) | before (32) | after (32)`.
    pub const ROW_LEN: usize = 68;
    pub const ROW_INTERFACE: Range<usize> = 0..2;
    pub const ROW_RESERVED: Range<usize> = 2..4;
    pub const ROW_BEFORE: Range<usize> = 4..36;
    pub const ROW_AFTER: Range<usize> = 36..68;
    pub const MAC_LEN: usize = 16;

    pub const fn row(k: usize) -> Range<usize> {
        HEADER_LEN + ROW_LEN * k..HEADER_LEN + ROW_LEN * (k + 1)
    }
    pub const fn mac(n: usize) -> Range<usize> {
        HEADER_LEN + ROW_LEN * n..HEADER_LEN + ROW_LEN * n + MAC_LEN
    }
}

/// Length of an announcement with `n` rows.
pub const fn announcement_len(n: usize) -> usize {
    field::mac(n).end
}

/// The facing interface's sums: `DIV_f`, `CON_f`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FacingSums {
    pub div_bps: u64,
    pub con_bps: u64,
}

/// What an announcement says about one other interface `x` at one time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RowValues {
    /// `M_xf`: entering at x, leaving towards the neighbour.
    pub into_facing_bps: u64,
    pub div_bps: u64,
    /// `M_fx`: entering from the neighbour, leaving at x.
    pub from_facing_bps: u64,
    pub con_bps: u64,
}

/// One row: interface `x` before and after the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Row {
    pub interface: InterfaceId,
    pub before: RowValues,
    pub after: RowValues,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn sums_from(b: &[u8]) -> FacingSums {
    FacingSums { div_bps: u64_at(b, 0), con_bps: u64_at(b, 8) }
}

fn sums_bytes(s: FacingSums) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&s.div_bps.to_be_bytes());
    b[8..].copy_from_slice(&s.con_bps.to_be_bytes());
    b
}

fn row_values_from(b: &[u8]) -> RowValues {
    RowValues {
        into_facing_bps: u64_at(b, 0),
        div_bps: u64_at(b, 8),
        from_facing_bps: u64_at(b, 16),
        con_bps: u64_at(b, 24),
    }
}

fn row_values_bytes(r: RowValues) -> [u8; 32] {
    let mut b = [0u8; 32];
    for (k, v) in [r.into_facing_bps, r.div_bps, r.from_facing_bps, r.con_bps].into_iter().enumerate() {
        b[8 * k..8 * k + 8].copy_from_slice(&v.to_be_bytes());
    }
    b
}

/// Why bytes are no announcement.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum AnnouncementError {
    #[error("{actual} bytes are shorter than the {needed} the announcement needs")]
    Truncated { needed: usize, actual: usize },
    #[error("kind {0} is no announcement")]
    UnknownKind(u8),
    #[error("{0} rows: an announcement has at most {MAX_ROWS}")]
    TooManyRows(u16),
    #[error("an announcement of {rows} rows is {needed} bytes, not {actual}")]
    LengthMismatch { rows: u16, needed: usize, actual: usize },
    #[error("a reserved field is not 0")]
    Reserved,
    #[error("the change window starts at {t1_ns} ns, after it ends at {t2_ns} ns")]
    Window { t1_ns: u64, t2_ns: u64 },
}

/// A checked zero-copy view of an announcement that fills its buffer exactly.
#[derive(Debug)]
pub struct Announcement<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Announcement<T> {
    /// Checks the kind, the row count, the exact length, reserved fields and `t_1 ≤ t_2`.
    pub fn new_checked(buf: T) -> Result<Self, AnnouncementError> {
        let b = buf.as_ref();
        if b.len() < field::HEADER_LEN {
            return Err(AnnouncementError::Truncated { needed: field::HEADER_LEN, actual: b.len() });
        }
        if b[field::KIND] != KIND {
            return Err(AnnouncementError::UnknownKind(b[field::KIND]));
        }
        let rows = u16::from_be_bytes([b[field::ROWS.start], b[field::ROWS.start + 1]]);
        if usize::from(rows) > MAX_ROWS {
            return Err(AnnouncementError::TooManyRows(rows));
        }
        let needed = announcement_len(usize::from(rows));
        if b.len() < needed {
            return Err(AnnouncementError::Truncated { needed, actual: b.len() });
        }
        if b.len() != needed {
            return Err(AnnouncementError::LengthMismatch { rows, needed, actual: b.len() });
        }
        let zero = |r: std::ops::Range<usize>| b[r].iter().all(|&x| x == 0);
        if b[field::RESERVED] != 0
            || !zero(field::RESERVED2)
            || (0..usize::from(rows)).any(|k| {
                let r = field::row(k);
                !zero(r.start + field::ROW_RESERVED.start..r.start + field::ROW_RESERVED.end)
            })
        {
            return Err(AnnouncementError::Reserved);
        }
        let (t1_ns, t2_ns) = (u64_at(b, field::T1.start), u64_at(b, field::T2.start));
        if t1_ns > t2_ns {
            return Err(AnnouncementError::Window { t1_ns, t2_ns });
        }
        Ok(Self { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn rows(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[field::ROWS.start], self.b()[field::ROWS.start + 1]]))
    }
    /// When the sender made it, ns since the Unix epoch; strictly increasing per sender.
    pub fn ts_ns(&self) -> u64 {
        u64_at(self.b(), field::TS.start)
    }
    /// The change, or `None` when `t_1 = t_2 = 0`.
    pub fn window(&self) -> Option<ChangeWindow> {
        let (t1_ns, t2_ns) = (u64_at(self.b(), field::T1.start), u64_at(self.b(), field::T2.start));
        (t1_ns != 0 || t2_ns != 0).then_some(ChangeWindow { t1_ns, t2_ns })
    }
    /// `f`, the sender's interface at the link to the receiver.
    pub fn facing(&self) -> InterfaceId {
        u16::from_be_bytes([self.b()[field::FACING.start], self.b()[field::FACING.start + 1]])
    }
    pub fn facing_before(&self) -> FacingSums {
        sums_from(&self.b()[field::FACING_BEFORE])
    }
    pub fn facing_after(&self) -> FacingSums {
        sums_from(&self.b()[field::FACING_AFTER])
    }
    /// Row `k < rows()`.
    pub fn row(&self, k: usize) -> Row {
        let r = &self.b()[field::row(k)];
        Row {
            interface: u16::from_be_bytes([r[field::ROW_INTERFACE.start], r[field::ROW_INTERFACE.start + 1]]),
            before: row_values_from(&r[field::ROW_BEFORE]),
            after: row_values_from(&r[field::ROW_AFTER]),
        }
    }
    /// Everything the MAC covers.
    pub fn authenticated(&self) -> &[u8] {
        &self.b()[..field::mac(self.rows()).start]
    }
    pub fn mac(&self) -> [u8; 16] {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[field::mac(self.rows())]);
        a
    }
}

/// An announcement as values (without its MAC, which [`AnnouncementRepr::emit`] computes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AnnouncementRepr {
    pub ts_ns: u64,
    pub window: Option<ChangeWindow>,
    pub facing: InterfaceId,
    pub facing_before: FacingSums,
    pub facing_after: FacingSums,
    pub rows: Vec<Row>,
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum AnnouncementEmitError {
    #[error("{0} other interfaces: an announcement lists at most {MAX_ROWS}")]
    TooManyRows(usize),
    #[error("a change window that starts after it ends, or at time 0")]
    Window,
}

impl AnnouncementRepr {
    pub fn parse<T: AsRef<[u8]>>(a: &Announcement<T>) -> Self {
        AnnouncementRepr {
            ts_ns: a.ts_ns(),
            window: a.window(),
            facing: a.facing(),
            facing_before: a.facing_before(),
            facing_after: a.facing_after(),
            rows: (0..a.rows()).map(|k| a.row(k)).collect(),
        }
    }

    /// The bytes, with `mac(authenticated bytes)` as the MAC.
    pub fn emit(&self, mac: impl FnOnce(&[u8]) -> [u8; 16]) -> Result<Vec<u8>, AnnouncementEmitError> {
        let n = self.rows.len();
        let rows = u16::try_from(n).ok().filter(|_| n <= MAX_ROWS).ok_or(AnnouncementEmitError::TooManyRows(n))?;
        let (t1, t2) = match self.window {
            None => (0, 0),
            Some(w) if w.t1_ns <= w.t2_ns && w.t2_ns != 0 => (w.t1_ns, w.t2_ns),
            Some(_) => return Err(AnnouncementEmitError::Window),
        };
        let mut b = vec![0u8; announcement_len(n)];
        b[field::KIND] = KIND;
        b[field::ROWS].copy_from_slice(&rows.to_be_bytes());
        b[field::TS].copy_from_slice(&self.ts_ns.to_be_bytes());
        b[field::T1].copy_from_slice(&t1.to_be_bytes());
        b[field::T2].copy_from_slice(&t2.to_be_bytes());
        b[field::FACING].copy_from_slice(&self.facing.to_be_bytes());
        b[field::FACING_BEFORE].copy_from_slice(&sums_bytes(self.facing_before));
        b[field::FACING_AFTER].copy_from_slice(&sums_bytes(self.facing_after));
        for (k, row) in self.rows.iter().enumerate() {
            let r = &mut b[field::row(k)];
            r[field::ROW_INTERFACE].copy_from_slice(&row.interface.to_be_bytes());
            r[field::ROW_BEFORE].copy_from_slice(&row_values_bytes(row.before));
            r[field::ROW_AFTER].copy_from_slice(&row_values_bytes(row.after));
        }
        let at = field::mac(n);
        let tag = mac(&b[..at.start]);
        b[at].copy_from_slice(&tag);
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AnnouncementRepr {
        let v = |k: u64| RowValues { into_facing_bps: k, div_bps: k + 1, from_facing_bps: k + 2, con_bps: k + 3 };
        AnnouncementRepr {
            ts_ns: 7,
            window: Some(ChangeWindow { t1_ns: 10, t2_ns: 20 }),
            facing: 3,
            facing_before: FacingSums { div_bps: 100, con_bps: 90 },
            facing_after: FacingSums { div_bps: 80, con_bps: 70 },
            rows: vec![
                Row { interface: 0, before: v(1), after: v(5) },
                Row { interface: 9, before: v(9), after: v(13) },
            ],
        }
    }

    #[test]
    fn emit_then_parse_is_the_identity() {
        let r = sample();
        let b = r.emit(|_| [0xaa; 16]).unwrap();
        assert_eq!(b.len(), 80 + 68 * 2);
        let a = Announcement::new_checked(&b[..]).unwrap();
        assert_eq!(AnnouncementRepr::parse(&a), r);
        assert_eq!(a.mac(), [0xaa; 16]);
        assert_eq!(a.authenticated(), &b[..b.len() - 16]);
        let none = AnnouncementRepr { window: None, ..r };
        let b = none.emit(|_| [0; 16]).unwrap();
        assert_eq!(Announcement::new_checked(&b[..]).unwrap().window(), None);
    }

    #[test]
    fn malformed_announcements_are_refused() {
        let b = sample().emit(|_| [0; 16]).unwrap();
        assert!(matches!(Announcement::new_checked(&b[..10]), Err(AnnouncementError::Truncated { .. })));
        assert!(matches!(Announcement::new_checked(&b[..b.len() - 1]), Err(AnnouncementError::Truncated { .. })));
        let mut long = b.clone();
        long.push(0);
        assert!(matches!(Announcement::new_checked(&long[..]), Err(AnnouncementError::LengthMismatch { .. })));
        let set = |at: usize, v: u8| {
            let mut c = b.clone();
            c[at] = v;
            Announcement::new_checked(c).map(|_| ())
        };
        assert_eq!(set(field::KIND, 1), Err(AnnouncementError::UnknownKind(1)));
        assert_eq!(set(field::RESERVED, 1), Err(AnnouncementError::Reserved));
        assert_eq!(set(field::RESERVED2.start, 1), Err(AnnouncementError::Reserved));
        assert_eq!(set(field::row(1).start + field::ROW_RESERVED.start, 1), Err(AnnouncementError::Reserved));
        assert_eq!(set(field::ROWS.start, 1), Err(AnnouncementError::TooManyRows(258)));
        assert_eq!(set(field::T1.start, 1), Err(AnnouncementError::Window { t1_ns: (1 << 56) + 10, t2_ns: 20 }));
        let rows = vec![sample().rows[0]; MAX_ROWS + 1];
        assert_eq!(
            AnnouncementRepr { rows, ..sample() }.emit(|_| [0; 16]),
            Err(AnnouncementEmitError::TooManyRows(MAX_ROWS + 1))
        );
    }
}
