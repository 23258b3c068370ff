//! Zero-copy view over a Hummingbird path, for routers: the checked constructor validates
//! the meta header against the buffer and that CurrHF points at a hop field that fits in
//! the current segment.

use aviary_scion::wire::path::{segment_of, INFO_LEN};
use aviary_scion::InfoField;

use crate::path::{hop_area, HbirdHop, HbirdPathError, MetaHdr, FLYOVER_BIT, FLYOVER_LINES, HOP_LINES, META_LEN};

#[derive(Clone, Copy, Debug)]
pub struct HbirdPathView<T> {
    buf: T,
    meta: MetaHdr,
    num_inf: usize,
    /// Total hop-field lines.
    lines: usize,
}

impl<T: AsRef<[u8]>> HbirdPathView<T> {
    pub fn new_checked(buf: T) -> Result<Self, HbirdPathError> {
        let b = buf.as_ref();
        let (hop_base, lines) = hop_area(b).ok_or(HbirdPathError::Truncated)?;
        let meta = MetaHdr::decode(b);
        let num_inf = (hop_base - META_LEN) / INFO_LEN;
        let view = Self { buf, meta, num_inf, lines };
        let (ci, ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
        if ch >= lines || ci >= num_inf || segment_of(meta.seg_len, ch) != ci {
            return Err(HbirdPathError::IndexOutOfRange);
        }
        if ch + view.lines_at(ch) > view.segment_end(ci) {
            return Err(HbirdPathError::Misaligned(ci));
        }
        Ok(view)
    }

    pub fn meta(&self) -> MetaHdr {
        self.meta
    }
    pub fn num_info_fields(&self) -> usize {
        self.num_inf
    }
    /// Total lines of hop fields.
    pub fn lines(&self) -> usize {
        self.lines
    }
    /// The line after the last one of segment `s`.
    pub fn segment_end(&self, s: usize) -> usize {
        self.meta.seg_len[..=s.min(2)].iter().map(|l| usize::from(*l)).sum()
    }
    pub fn info_offset(&self, i: usize) -> usize {
        META_LEN + INFO_LEN * i
    }
    /// Offset of the hop field starting at `line`.
    pub fn hop_offset(&self, line: usize) -> usize {
        META_LEN + INFO_LEN * self.num_inf + 4 * line
    }
    /// Info field `i`; panics if `i >= num_info_fields()`.
    pub fn info(&self, i: usize) -> InfoField {
        assert!(i < self.num_inf, "info field {i} of {}", self.num_inf);
        InfoField::parse(&self.buf.as_ref()[self.info_offset(i)..])
    }
    /// Lines of the hop field starting at `line` (by its F bit); panics past the path.
    pub fn lines_at(&self, line: usize) -> usize {
        if self.buf.as_ref()[self.hop_offset(line)] & FLYOVER_BIT != 0 {
            FLYOVER_LINES
        } else {
            HOP_LINES
        }
    }
    /// The hop field starting at `line`, if it lies within the path.
    pub fn hop(&self, line: usize) -> Option<HbirdHop> {
        (line < self.lines && line + self.lines_at(line) <= self.lines)
            .then(|| HbirdHop::parse(&self.buf.as_ref()[self.hop_offset(line)..]))
    }
}
