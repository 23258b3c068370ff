//! Zero-copy view over a standard path, for routers: one checked constructor validates the
//! meta header against the buffer, after which every field access is in bounds.

use crate::wire::path::{
    field, num_info_fields, segment_of, set_seg_id, HopField, InfoField, MetaHdr, PathError, HOP_LEN, INFO_LEN,
    MAX_HOPS, META_LEN,
};

#[derive(Clone, Copy, Debug)]
pub struct StandardPathView<T> {
    buf: T,
    meta: MetaHdr,
    num_inf: usize,
    num_hops: usize,
}

impl<T: AsRef<[u8]>> StandardPathView<T> {
    /// Checks segment lengths, the path length they imply (the buffer must hold exactly the
    /// path) and that CurrINF/CurrHF point into the same segment.
    pub fn new_checked(buf: T) -> Result<Self, PathError> {
        let b = buf.as_ref();
        if b.len() < META_LEN {
            return Err(PathError::Truncated);
        }
        let meta = MetaHdr::decode(b[field::meta::WORD].try_into().expect("4 bytes"));
        let num_inf = num_info_fields(meta.seg_len)?;
        if num_inf == 0 {
            return Err(PathError::BadSegLens(meta.seg_len));
        }
        let num_hops: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
        if num_hops > MAX_HOPS {
            return Err(PathError::TooManyHops(num_hops));
        }
        let expected = META_LEN + INFO_LEN * num_inf + HOP_LEN * num_hops;
        if b.len() != expected {
            return Err(PathError::LengthMismatch { expected, actual: b.len() });
        }
        let (ci, ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
        if ch >= num_hops || ci >= num_inf || segment_of(meta.seg_len, ch) != ci {
            return Err(PathError::IndexOutOfRange);
        }
        Ok(Self { buf, meta, num_inf, num_hops })
    }

    pub fn meta(&self) -> MetaHdr {
        self.meta
    }
    pub fn num_info_fields(&self) -> usize {
        self.num_inf
    }
    pub fn num_hops(&self) -> usize {
        self.num_hops
    }
    /// Offset of info field `i` in the path.
    pub fn info_offset(&self, i: usize) -> usize {
        META_LEN + INFO_LEN * i
    }
    /// Offset of hop field `i` in the path.
    pub fn hop_offset(&self, i: usize) -> usize {
        META_LEN + INFO_LEN * self.num_inf + HOP_LEN * i
    }
    /// Info field `i`; panics if `i >= num_info_fields()`.
    pub fn info(&self, i: usize) -> InfoField {
        assert!(i < self.num_inf, "info field {i} of {}", self.num_inf);
        let off = self.info_offset(i);
        InfoField::from_bytes(self.buf.as_ref()[off..off + INFO_LEN].try_into().expect("INFO_LEN bytes"))
    }
    /// Hop field `i`; panics if `i >= num_hops()`.
    pub fn hop(&self, i: usize) -> HopField {
        assert!(i < self.num_hops, "hop field {i} of {}", self.num_hops);
        let off = self.hop_offset(i);
        HopField::from_bytes(self.buf.as_ref()[off..off + HOP_LEN].try_into().expect("HOP_LEN bytes"))
    }
    /// The construction-direction ingress and egress interfaces of hop field `i`, without
    /// decoding the rest of it (for walks over every hop field of a path); panics if
    /// `i >= num_hops()`.
    pub fn hop_interfaces(&self, i: usize) -> (u16, u16) {
        assert!(i < self.num_hops, "hop field {i} of {}", self.num_hops);
        let b = &self.buf.as_ref()[self.hop_offset(i)..];
        let read = |r: std::ops::Range<usize>| u16::from_be_bytes(b[r].try_into().expect("2 bytes"));
        (read(field::hop::CONS_INGRESS), read(field::hop::CONS_EGRESS))
    }
    pub fn curr_info(&self) -> InfoField {
        self.info(usize::from(self.meta.curr_inf))
    }
    pub fn curr_hop(&self) -> HopField {
        self.hop(usize::from(self.meta.curr_hf))
    }
}

impl<'a> StandardPathView<&'a [u8]> {
    /// The whole path, as checked.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
}

impl<T> StandardPathView<T> {
    /// The same checked path over another buffer holding the same bytes (a path embedded in a
    /// larger header, re-borrowed immutably or mutably), without checking it again.
    pub(crate) fn rebind<U>(&self, buf: U) -> StandardPathView<U> {
        StandardPathView { buf, meta: self.meta, num_inf: self.num_inf, num_hops: self.num_hops }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> StandardPathView<T> {
    pub fn set_seg_id(&mut self, info: usize, seg_id: u16) {
        let off = self.info_offset(info);
        set_seg_id(self.buf.as_mut(), off, seg_id);
    }
    /// Moves CurrINF/CurrHF (the caller keeps them consistent with the segments).
    pub fn set_current(&mut self, curr_inf: u8, curr_hf: u8) {
        self.meta.curr_inf = curr_inf;
        self.meta.curr_hf = curr_hf;
        let m = self.meta.encode();
        self.buf.as_mut()[field::meta::WORD].copy_from_slice(&m);
    }
}
