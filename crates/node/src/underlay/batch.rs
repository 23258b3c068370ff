//! Preallocated batches of datagrams: buffers, lengths, addresses and the `mmsghdr` arrays
//! the kernel fills or reads, so that nothing allocates per packet.

use std::net::SocketAddr;

use thiserror::Error;

use super::{MsgArrays, RecvMeta, DEFAULT_BATCH, DEFAULT_BUF_SIZE, MAX_VLEN, UNSPECIFIED};

/// Preallocated buffers for [`BatchSocket::recv_batch`].
pub struct RecvBatch {
    pub(super) data: Vec<u8>,
    pub(super) buf_size: usize,
    pub(super) arrays: MsgArrays,
    pub(super) meta: Vec<RecvMeta>,
    pub(super) count: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new(DEFAULT_BATCH, DEFAULT_BUF_SIZE)
    }
}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("capacity", &self.capacity())
            .field("buf_size", &self.buf_size)
            .field("len", &self.count)
            .finish()
    }
}

impl RecvBatch {
    /// `capacity` buffers (1..=1024) of `buf_size` bytes (at least 1).
    pub fn new(capacity: usize, buf_size: usize) -> Self {
        let n = capacity.clamp(1, MAX_VLEN);
        let buf_size = buf_size.max(1);
        let meta = RecvMeta { len: 0, from: UNSPECIFIED, truncated: false };
        Self { data: vec![0; n * buf_size], buf_size, arrays: MsgArrays::new(n), meta: vec![meta; n], count: 0 }
    }
    pub fn capacity(&self) -> usize {
        self.meta.len()
    }
    pub fn buf_size(&self) -> usize {
        self.buf_size
    }
    /// Datagrams received by the last call.
    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Metadata of datagram `i` of the last call.
    pub fn meta(&self, i: usize) -> Option<RecvMeta> {
        self.meta[..self.count].get(i).copied()
    }
    /// Bytes of datagram `i` of the last call.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let m = self.meta(i)?;
        let start = i * self.buf_size;
        Some(&self.data[start..start + m.len])
    }
    /// Bytes of datagram `i`, for processing in place.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        let m = self.meta(i)?;
        let start = i * self.buf_size;
        Some(&mut self.data[start..start + m.len])
    }
    /// The datagrams of the last call with their truncation flags, in arrival order.
    pub fn packets(&self) -> impl Iterator<Item = (&[u8], bool)> + '_ {
        self.iter().map(|(b, m)| (b, m.truncated))
    }
    /// The datagrams of the last call, mutable, with their truncation flags.
    pub fn packets_mut(&mut self) -> impl Iterator<Item = (&mut [u8], bool)> + '_ {
        self.iter_mut().map(|(b, m)| (b, m.truncated))
    }
    /// The datagrams of the last call, in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], RecvMeta)> + '_ {
        self.data.chunks(self.buf_size).zip(&self.meta[..self.count]).map(|(b, m)| (&b[..m.len], *m))
    }
    /// The datagrams of the last call, mutable, in arrival order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&mut [u8], RecvMeta)> + '_ {
        self.data.chunks_mut(self.buf_size).zip(&self.meta[..self.count]).map(|(b, m)| (&mut b[..m.len], *m))
    }
}

/// Why [`SendBatch::push`] refused a datagram.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PushError {
    #[error("send batch is full")]
    Full,
    #[error("datagram of {len} bytes exceeds the {max}-byte buffer")]
    TooLarge { len: usize, max: usize },
}

/// A queue of owned datagrams for [`BatchSocket::send_queued`], with preallocated buffers.
pub struct SendBatch {
    pub(super) data: Vec<u8>,
    pub(super) buf_size: usize,
    pub(super) lens: Vec<usize>,
    pub(super) dests: Vec<SocketAddr>,
    pub(super) arrays: MsgArrays,
    /// First queued datagram not yet sent.
    pub(super) head: usize,
}

impl Default for SendBatch {
    fn default() -> Self {
        Self::new(DEFAULT_BATCH, DEFAULT_BUF_SIZE)
    }
}

impl std::fmt::Debug for SendBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendBatch")
            .field("capacity", &self.capacity())
            .field("buf_size", &self.buf_size)
            .field("queued", &self.len())
            .finish()
    }
}

impl SendBatch {
    /// `capacity` buffers (1..=1024) of `buf_size` bytes (at least 1).
    pub fn new(capacity: usize, buf_size: usize) -> Self {
        let n = capacity.clamp(1, MAX_VLEN);
        let buf_size = buf_size.max(1);
        Self {
            data: vec![0; n * buf_size],
            buf_size,
            lens: Vec::with_capacity(n),
            dests: Vec::with_capacity(n),
            arrays: MsgArrays::new(n),
            head: 0,
        }
    }
    pub fn capacity(&self) -> usize {
        self.arrays.hdrs.len()
    }
    pub fn buf_size(&self) -> usize {
        self.buf_size
    }
    /// Datagrams queued and not yet sent.
    pub fn len(&self) -> usize {
        self.lens.len() - self.head
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// No room for another datagram until the queue is sent.
    pub fn is_full(&self) -> bool {
        self.lens.len() == self.capacity()
    }
    /// Drops every queued datagram.
    pub fn clear(&mut self) {
        self.lens.clear();
        self.dests.clear();
        self.head = 0;
    }
    /// Queues a copy of `pkt` for `to`.
    pub fn push(&mut self, pkt: &[u8], to: SocketAddr) -> Result<(), PushError> {
        if pkt.len() > self.buf_size {
            return Err(PushError::TooLarge { len: pkt.len(), max: self.buf_size });
        }
        self.push_with(to, |buf| {
            buf[..pkt.len()].copy_from_slice(pkt);
            pkt.len()
        })
    }
    /// Queues a datagram for `to` built in place: `build` gets the whole buffer and returns
    /// the length it wrote.
    pub fn push_with(&mut self, to: SocketAddr, build: impl FnOnce(&mut [u8]) -> usize) -> Result<(), PushError> {
        if self.is_full() {
            return Err(PushError::Full);
        }
        let i = self.lens.len();
        let len = build(&mut self.data[i * self.buf_size..(i + 1) * self.buf_size]);
        if len > self.buf_size {
            return Err(PushError::TooLarge { len, max: self.buf_size });
        }
        self.lens.push(len);
        self.dests.push(to);
        Ok(())
    }
}
