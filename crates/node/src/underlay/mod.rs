//! Batched UDP I/O for the SCION underlay (Linux: `recvmmsg`, `sendmmsg`, `ppoll`).
//!
//! A [`BatchSocket`] is a non-blocking, unconnected UDP socket (IPv4 or IPv6). Datagrams are
//! received into a preallocated [`RecvBatch`] (default 32 buffers of 2048 bytes) and sent from
//! borrowed slices ([`BatchSocket::send_batch`]) or from a preallocated [`SendBatch`] of owned
//! buffers. Nothing allocates per packet: the `mmsghdr`/`iovec`/`sockaddr_storage` arrays live
//! in the batch structures (or, for borrowed slices, on the stack) and their pointers are
//! filled in right before each system call, so moving a batch never leaves a dangling pointer.
//!
//! Error policy, so that one bad datagram or a dead peer never stops a router:
//! - would-block (`EAGAIN`, `ENOBUFS`, `ENOMEM`): nothing more this time, `Ok` with what went;
//! - a stale ICMP error (`ECONNREFUSED` and friends) reported by a later call: retried;
//! - an error that belongs to one datagram (too large, wrong address family, unreachable
//!   network, ...): that datagram is dropped and counted, the rest of the batch goes on;
//! - anything else (bad descriptor, ...): `Err`.
//!
//! Sockets are unconnected and do not set `IP_RECVERR`, so Linux does not report ICMP errors
//! to them at all; the retry above is a safety net.
//!
//! - [`batch`]: the preallocated [`RecvBatch`] and [`SendBatch`].

mod batch;
#[cfg(test)]
mod tests;

pub use batch::{PushError, RecvBatch, SendBatch};

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thiserror::Error;

/// Datagrams per batch by default (and per `sendmmsg` call for borrowed slices).
pub const DEFAULT_BATCH: usize = 32;
/// Size of each receive/send buffer by default; larger datagrams are truncated.
pub const DEFAULT_BUF_SIZE: usize = 2048;
/// Socket receive and send buffer size requested at bind (best effort).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// Largest batch the kernel accepts per call (`UIO_MAXIOV`).
const MAX_VLEN: usize = 1024;
/// Retries of a call that reported a stale ICMP error instead of doing its work.
const STALE_ERROR_RETRIES: usize = 8;

/// Failure to open a socket, naming the address.
#[derive(Debug, Error)]
pub enum BindError {
    #[error("address {0} is already in use")]
    InUse(SocketAddr),
    #[error("address {0} is not available on this host")]
    NotAvailable(SocketAddr),
    #[error("cannot open a UDP socket on {addr}: {source}")]
    Other {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// Result of a send call. The first `consumed()` items are done (sent or dropped); the
/// rest were not attempted because the socket would block: offer them again later.
#[derive(Debug, Default)]
pub struct SendOutcome {
    /// Datagrams handed to the kernel.
    pub sent: usize,
    /// Datagrams the kernel refused individually (too large, wrong address family,
    /// unreachable network, ...); they will not be retried.
    pub dropped: usize,
    /// The error of the last dropped datagram.
    pub last_drop_error: Option<io::Error>,
}

impl SendOutcome {
    pub fn consumed(&self) -> usize {
        self.sent + self.dropped
    }
}

/// One received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMeta {
    /// Bytes in the buffer (at most the buffer size).
    pub len: usize,
    /// Source address; IPv4-mapped IPv6 sources are reported as IPv4.
    pub from: SocketAddr,
    /// The datagram was longer than the buffer and was cut (`MSG_TRUNC`): drop it.
    pub truncated: bool,
}

const UNSPECIFIED: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));

/// The `mmsghdr` and `iovec` arrays of a batch. They hold raw pointers into the batch's own
/// buffers, written right before each system call and never read by Rust code.
struct MsgArrays {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_storage>,
}

// SAFETY: the raw pointers inside `hdrs`/`iovs` are scratch values that are overwritten
// before every system call (made through `&mut self`) and never dereferenced otherwise, so
// moving the arrays to another thread cannot create shared mutable access.
unsafe impl Send for MsgArrays {}

impl MsgArrays {
    fn new(n: usize) -> Self {
        // SAFETY: these are plain C structs of integers and raw pointers, for which all-zero
        // bytes are a valid value (null pointers, zero lengths).
        let (hdr, iov, addr) = unsafe {
            (mem::zeroed::<libc::mmsghdr>(), mem::zeroed::<libc::iovec>(), mem::zeroed::<libc::sockaddr_storage>())
        };
        Self { hdrs: vec![hdr; n], iovs: vec![iov; n], addrs: vec![addr; n] }
    }
}

/// Points `hdr` at one buffer and one address.
fn fill_hdr(
    hdr: &mut libc::mmsghdr,
    iov: &mut libc::iovec,
    addr: &mut libc::sockaddr_storage,
    base: *mut u8,
    len: usize,
    addr_len: libc::socklen_t,
) {
    iov.iov_base = base.cast();
    iov.iov_len = len;
    hdr.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
    hdr.msg_hdr.msg_namelen = addr_len;
    hdr.msg_hdr.msg_iov = iov;
    hdr.msg_hdr.msg_iovlen = 1;
    hdr.msg_hdr.msg_control = ptr::null_mut();
    hdr.msg_hdr.msg_controllen = 0;
    hdr.msg_hdr.msg_flags = 0;
    hdr.msg_len = 0;
}

/// Writes `addr` as a `sockaddr_in`/`sockaddr_in6` for a socket of the given family
/// (IPv4 destinations on an IPv6 socket become IPv4-mapped addresses, IPv4-mapped
/// destinations on an IPv4 socket plain IPv4); returns the length.
fn write_sockaddr(addr: SocketAddr, v6_socket: bool, out: &mut libc::sockaddr_storage) -> libc::socklen_t {
    let addr = match (addr, v6_socket) {
        (SocketAddr::V4(a), true) => SocketAddr::V6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0)),
        (SocketAddr::V6(a), false) => match a.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::V4(SocketAddrV4::new(ip, a.port())),
            None => SocketAddr::V6(a),
        },
        (a, _) => a,
    };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr type.
            let sin = unsafe { &mut *(out as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
            sin.sin_zero = [0; 8];
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(out as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo().to_be();
            sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
            sin6.sin6_scope_id = a.scope_id();
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// Reads an address the kernel wrote; IPv4-mapped IPv6 addresses become IPv4.
fn read_sockaddr(s: &libc::sockaddr_storage, len: libc::socklen_t) -> SocketAddr {
    let len = len as usize;
    match i32::from(s.ss_family) {
        libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, which fits in it.
            let sin = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6, which fits in it.
            let sin6 = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            match ip.to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                None => {
                    SocketAddr::V6(SocketAddrV6::new(ip, port, u32::from_be(sin6.sin6_flowinfo), sin6.sin6_scope_id))
                }
            }
        }
        _ => UNSPECIFIED,
    }
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

fn would_block(code: i32) -> bool {
    code == libc::EAGAIN || code == libc::EWOULDBLOCK || code == libc::ENOBUFS || code == libc::ENOMEM
}

/// Errors a UDP socket reports later for an ICMP message about an earlier datagram.
fn stale_icmp_error(code: i32) -> bool {
    matches!(
        code,
        libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::ENETDOWN | libc::EPROTO
    )
}

/// Errors about the first datagram of a `sendmmsg` call itself.
fn per_datagram_error(code: i32) -> bool {
    matches!(
        code,
        libc::EMSGSIZE
            | libc::EAFNOSUPPORT
            | libc::EINVAL
            | libc::ENETUNREACH
            | libc::EHOSTUNREACH
            | libc::EHOSTDOWN
            | libc::ENETDOWN
            | libc::EPERM
            | libc::EACCES
            | libc::EADDRNOTAVAIL
            | libc::EDESTADDRREQ
    )
}

/// A non-blocking UDP socket with batched receive and send.
#[derive(Debug)]
pub struct BatchSocket {
    sock: UdpSocket,
    local: SocketAddr,
    v6: bool,
    kernel_drops: AtomicU64,
}

impl BatchSocket {
    /// Binds a non-blocking socket to `addr` (port 0: any free port) and asks for
    /// [`SOCKET_BUFFER_BYTES`] of receive and send buffer (best effort).
    pub fn bind(addr: SocketAddr) -> Result<Self, BindError> {
        let sock = UdpSocket::bind(addr).map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => BindError::InUse(addr),
            io::ErrorKind::AddrNotAvailable => BindError::NotAvailable(addr),
            _ => BindError::Other { addr, source: e },
        })?;
        let s = Self::from_std(sock).map_err(|source| BindError::Other { addr, source })?;
        s.set_buffer_sizes(SOCKET_BUFFER_BYTES);
        Ok(s)
    }

    /// Wraps an already bound socket and makes it non-blocking.
    pub fn from_std(sock: UdpSocket) -> io::Result<Self> {
        sock.set_nonblocking(true)?;
        let local = sock.local_addr()?;
        Ok(Self { sock, local, v6: local.is_ipv6(), kernel_drops: AtomicU64::new(0) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    /// Requests receive and send buffers of `bytes` each: first beyond the system limit
    /// (`SO_*BUFFORCE`, needs CAP_NET_ADMIN), else up to it. Best effort; failures are
    /// logged at debug level. See [`Self::buffer_sizes`] for what was granted.
    pub fn set_buffer_sizes(&self, bytes: usize) {
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
            if self.setsockopt_int(libc::SOL_SOCKET, force, v).is_err() {
                if let Err(e) = self.setsockopt_int(libc::SOL_SOCKET, plain, v) {
                    tracing::debug!(local = %self.local, error = %e, "cannot set socket buffer size");
                }
            }
        }
    }

    /// The receive and send buffer sizes the kernel granted (it reports twice the
    /// requested value, counting its bookkeeping).
    pub fn buffer_sizes(&self) -> io::Result<(usize, usize)> {
        Ok((
            self.getsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUF)? as usize,
            self.getsockopt_int(libc::SOL_SOCKET, libc::SO_SNDBUF)? as usize,
        ))
    }

    fn setsockopt_int(&self, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
        // SAFETY: the option value is a valid c_int of the given length, living across the call.
        let r = unsafe {
            libc::setsockopt(
                self.sock.as_raw_fd(),
                level,
                name,
                (&v as *const libc::c_int).cast(),
                mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn getsockopt_int(&self, level: i32, name: i32) -> io::Result<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: v and len are valid for writes of the sizes passed.
        let r = unsafe {
            libc::getsockopt(self.sock.as_raw_fd(), level, name, (&mut v as *mut libc::c_int).cast(), &mut len)
        };
        if r == 0 {
            Ok(v)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Receives up to `batch.capacity()` waiting datagrams without blocking; returns how
    /// many (0 when none is waiting). Read them with [`RecvBatch::get`] and friends until
    /// the next call. Truncated datagrams are flagged, not dropped.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.count = 0;
        let n = batch.meta.len();
        let RecvBatch { data, buf_size, arrays, meta, count } = batch;
        let MsgArrays { hdrs, iovs, addrs } = arrays;
        let mut stale = 0;
        loop {
            let base = data.as_mut_ptr();
            for i in 0..n {
                let addr_len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                fill_hdr(
                    &mut hdrs[i],
                    &mut iovs[i],
                    &mut addrs[i],
                    base.wrapping_add(i * *buf_size),
                    *buf_size,
                    addr_len,
                );
            }
            // SAFETY: hdrs[..n] point to n distinct iovecs, each covering buf_size bytes of
            // `data` (n * buf_size bytes long) and to n sockaddr_storage of the given
            // length; all are exclusively borrowed for the duration of the call.
            let r = unsafe {
                libc::recvmmsg(
                    self.sock.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    ptr::null_mut(),
                )
            };
            if r >= 0 {
                let r = r as usize;
                for i in 0..r {
                    let h = &hdrs[i];
                    meta[i] = RecvMeta {
                        len: (h.msg_len as usize).min(*buf_size),
                        from: read_sockaddr(&addrs[i], h.msg_hdr.msg_namelen),
                        truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
                    };
                }
                *count = r;
                return Ok(r);
            }
            let e = io::Error::last_os_error();
            let code = errno(&e);
            if code == libc::EINTR {
                continue;
            }
            if would_block(code) {
                return Ok(0);
            }
            if stale_icmp_error(code) {
                stale += 1;
                if stale <= STALE_ERROR_RETRIES {
                    continue;
                }
                return Ok(0);
            }
            return Err(e);
        }
    }

    /// Sends `items` (datagram, destination) in order with as few `sendmmsg` calls as
    /// possible, without blocking. Returns `n`: `items[..n]` are done (sent, or refused
    /// individually by the kernel and counted in [`Self::kernel_drops`]), `items[n..]` were
    /// not attempted because the socket would block; offer them again later.
    pub fn send_batch(&self, items: &[(&[u8], SocketAddr)]) -> io::Result<usize> {
        self.send_batch_outcome(items).map(|o| o.consumed())
    }

    /// [`Self::send_batch`] with the sent and dropped counts apart.
    pub fn send_batch_outcome(&self, items: &[(&[u8], SocketAddr)]) -> io::Result<SendOutcome> {
        // SAFETY: all-zero bytes are a valid value of these plain C structs.
        let mut hdrs: [libc::mmsghdr; DEFAULT_BATCH] = unsafe { mem::zeroed() };
        let mut iovs: [libc::iovec; DEFAULT_BATCH] = unsafe { mem::zeroed() };
        let mut addrs: [libc::sockaddr_storage; DEFAULT_BATCH] = unsafe { mem::zeroed() };
        let mut total = SendOutcome::default();
        for chunk in items.chunks(DEFAULT_BATCH) {
            for (i, (pkt, to)) in chunk.iter().enumerate() {
                let addr_len = write_sockaddr(*to, self.v6, &mut addrs[i]);
                // The kernel only reads through this pointer (sendmmsg).
                let base = pkt.as_ptr().cast_mut();
                fill_hdr(&mut hdrs[i], &mut iovs[i], &mut addrs[i], base, pkt.len(), addr_len);
            }
            let o = self.sendmmsg_all(&mut hdrs[..chunk.len()])?;
            let done = o.consumed() == chunk.len();
            total.sent += o.sent;
            total.dropped += o.dropped;
            if o.last_drop_error.is_some() {
                total.last_drop_error = o.last_drop_error;
            }
            if !done {
                break;
            }
        }
        Ok(total)
    }

    /// Datagrams the kernel dropped on arrival since the socket was opened, because its receive
    /// buffer was full (the socket's drop counter, `SO_MEMINFO`); 0 where the kernel does not
    /// tell.
    pub fn kernel_receive_drops(&self) -> u64 {
        /// `SO_MEMINFO` of <asm-generic/socket.h> (Linux 4.6 on); the `libc` crate lacks it.
        const SO_MEMINFO: libc::c_int = 55;
        let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
        let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `info` and updates `len`.
        let rc = unsafe {
            libc::getsockopt(self.sock.as_raw_fd(), libc::SOL_SOCKET, SO_MEMINFO, info.as_mut_ptr().cast(), &mut len)
        };
        let drops = libc::SK_MEMINFO_DROPS as usize;
        if rc == 0 && len as usize >= (drops + 1) * 4 {
            u64::from(info[drops])
        } else {
            0
        }
    }

    /// Datagrams the kernel refused individually on sending since the socket was opened.
    pub fn kernel_drops(&self) -> u64 {
        self.kernel_drops.load(Ordering::Relaxed)
    }

    /// Sends one datagram; see [`Self::send_batch_outcome`].
    pub fn send_to(&self, pkt: &[u8], to: SocketAddr) -> io::Result<SendOutcome> {
        self.send_batch_outcome(&[(pkt, to)])
    }

    /// Sends the queued datagrams of `batch` from the oldest on; sent and dropped ones
    /// leave the queue, the rest stay for the next call.
    pub fn send_queued(&self, batch: &mut SendBatch) -> io::Result<SendOutcome> {
        let (head, count) = (batch.head, batch.lens.len());
        if head == count {
            return Ok(SendOutcome::default());
        }
        let SendBatch { data, buf_size, lens, dests, arrays, head: head_ref } = batch;
        let MsgArrays { hdrs, iovs, addrs } = arrays;
        let base = data.as_mut_ptr();
        for i in head..count {
            let addr_len = write_sockaddr(dests[i], self.v6, &mut addrs[i]);
            fill_hdr(&mut hdrs[i], &mut iovs[i], &mut addrs[i], base.wrapping_add(i * *buf_size), lens[i], addr_len);
        }
        let o = self.sendmmsg_all(&mut hdrs[head..count])?;
        *head_ref += o.consumed();
        if *head_ref == lens.len() {
            batch.clear();
        }
        Ok(o)
    }

    /// Sends prepared messages until all are consumed or the socket would block.
    fn sendmmsg_all(&self, hdrs: &mut [libc::mmsghdr]) -> io::Result<SendOutcome> {
        let mut out = SendOutcome::default();
        let mut stale = 0;
        while out.consumed() < hdrs.len() {
            let rest = &mut hdrs[out.consumed()..];
            let vlen = rest.len().min(MAX_VLEN);
            // SAFETY: every header in `rest` was filled by `fill_hdr` for this call and
            // points to an iovec over a live buffer of the stated length and to a
            // sockaddr of the stated length; the kernel only reads them (and writes
            // msg_len).
            let r = unsafe {
                libc::sendmmsg(self.sock.as_raw_fd(), rest.as_mut_ptr(), vlen as libc::c_uint, libc::MSG_DONTWAIT)
            };
            if r > 0 {
                out.sent += r as usize;
                continue;
            }
            if r == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            let code = errno(&e);
            if code == libc::EINTR {
                continue;
            }
            if would_block(code) {
                break;
            }
            // A refused earlier datagram is reported once and the current one was not
            // sent: try it again.
            if code == libc::ECONNREFUSED {
                stale += 1;
                if stale <= STALE_ERROR_RETRIES {
                    continue;
                }
                break;
            }
            if per_datagram_error(code) {
                tracing::debug!(local = %self.local, error = %e, "datagram dropped by the kernel");
                out.dropped += 1;
                out.last_drop_error = Some(e);
                self.kernel_drops.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if out.consumed() > 0 {
                // Report progress; the error comes back on the next call.
                break;
            }
            return Err(e);
        }
        Ok(out)
    }
}

impl AsRawFd for BatchSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// Waits until one of `sockets` has a datagram (or a pending error) to read, or `timeout`
/// passes (`None`: forever; nanosecond precision). Sets `ready[i]` for each socket that
/// is readable and returns how many are. A signal interrupting the wait returns `Ok(0)`.
/// `ready` must be at least as long as `sockets`.
pub fn wait_readable(sockets: &[&BatchSocket], timeout: Option<Duration>, ready: &mut [bool]) -> io::Result<usize> {
    wait_readable_on(sockets.iter().map(|s| s.as_raw_fd()), sockets.len(), timeout, ready)
}

/// [`wait_readable`] on descriptors a caller keeps (sockets, or an eventfd that wakes a thread),
/// so that a loop waiting on the same set every round builds no list per round.
pub fn wait_readable_fds(fds: &[RawFd], timeout: Option<Duration>, ready: &mut [bool]) -> io::Result<usize> {
    wait_readable_on(fds.iter().copied(), fds.len(), timeout, ready)
}

fn wait_readable_on(
    fds: impl Iterator<Item = RawFd>,
    count: usize,
    timeout: Option<Duration>,
    ready: &mut [bool],
) -> io::Result<usize> {
    if ready.len() < count {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} readiness flags for {count} descriptors", ready.len()),
        ));
    }
    ready.fill(false);
    const STACK: usize = 64;
    let pfd = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let mut on_stack = [libc::pollfd { fd: -1, events: 0, revents: 0 }; STACK];
    let mut on_heap = Vec::new();
    let fds: &mut [libc::pollfd] = if count <= STACK {
        for (slot, fd) in on_stack.iter_mut().zip(fds) {
            *slot = pfd(fd);
        }
        &mut on_stack[..count]
    } else {
        on_heap.extend(fds.map(pfd));
        &mut on_heap
    };
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds points to fds.len() initialised pollfds, ts_ptr is null or points to a
    // timespec that outlives the call, and a null signal mask leaves the mask unchanged.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ts_ptr, ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if errno(&e) == libc::EINTR { Ok(0) } else { Err(e) };
    }
    let mut n = 0;
    for (flag, fd) in ready.iter_mut().zip(fds.iter()) {
        // POLLERR counts: the next receive clears the pending error; ignoring it would
        // make every later wait return at once.
        *flag = fd.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
        n += usize::from(*flag);
    }
    Ok(n)
}
