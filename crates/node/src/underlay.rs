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

#[cfg(not(target_os = "linux"))]
compile_error!("aviary's UDP underlay uses recvmmsg/sendmmsg/ppoll and supports only Linux");

#[cfg(target_os = "linux")]
pub use imp::*;

#[cfg(target_os = "linux")]
mod imp {
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
                    None => SocketAddr::V6(SocketAddrV6::new(
                        ip,
                        port,
                        u32::from_be(sin6.sin6_flowinfo),
                        sin6.sin6_scope_id,
                    )),
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
            libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENETDOWN
                | libc::EPROTO
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

        /// Datagrams the kernel refused individually since the socket was opened.
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
                fill_hdr(
                    &mut hdrs[i],
                    &mut iovs[i],
                    &mut addrs[i],
                    base.wrapping_add(i * *buf_size),
                    lens[i],
                    addr_len,
                );
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

    /// Preallocated buffers for [`BatchSocket::recv_batch`].
    pub struct RecvBatch {
        data: Vec<u8>,
        buf_size: usize,
        arrays: MsgArrays,
        meta: Vec<RecvMeta>,
        count: usize,
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
        data: Vec<u8>,
        buf_size: usize,
        lens: Vec<usize>,
        dests: Vec<SocketAddr>,
        arrays: MsgArrays,
        /// First queued datagram not yet sent.
        head: usize,
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

    /// Waits until one of `sockets` has a datagram (or a pending error) to read, or `timeout`
    /// passes (`None`: forever; nanosecond precision). Sets `ready[i]` for each socket that
    /// is readable and returns how many are. A signal interrupting the wait returns `Ok(0)`.
    /// `ready` must be at least as long as `sockets`.
    pub fn wait_readable(sockets: &[&BatchSocket], timeout: Option<Duration>, ready: &mut [bool]) -> io::Result<usize> {
        if ready.len() < sockets.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} readiness flags for {} sockets", ready.len(), sockets.len()),
            ));
        }
        ready.fill(false);
        const STACK: usize = 64;
        let pfd = |s: &&BatchSocket| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let mut on_stack = [libc::pollfd { fd: -1, events: 0, revents: 0 }; STACK];
        let mut on_heap = Vec::new();
        let fds: &mut [libc::pollfd] = if sockets.len() <= STACK {
            for (slot, s) in on_stack.iter_mut().zip(sockets) {
                *slot = pfd(s);
            }
            &mut on_stack[..sockets.len()]
        } else {
            on_heap.extend(sockets.iter().map(pfd));
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

    #[cfg(test)]
    mod tests {
        use std::time::Instant;

        use super::*;

        fn localhost() -> SocketAddr {
            "127.0.0.1:0".parse().unwrap()
        }

        /// Receives on `sock` until `want` datagrams from `from` arrived or 10 s passed.
        /// Datagrams from elsewhere (a parallel test that reuses a port a test closed) are
        /// ignored.
        fn recv_n(
            sock: &BatchSocket,
            batch: &mut RecvBatch,
            from: SocketAddr,
            want: usize,
        ) -> Vec<(Vec<u8>, RecvMeta)> {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut got = Vec::new();
            let mut ready = [false];
            while got.len() < want && Instant::now() < deadline {
                wait_readable(&[sock], Some(Duration::from_millis(100)), &mut ready).unwrap();
                let n = sock.recv_batch(batch).unwrap();
                assert_eq!(n, batch.len());
                got.extend(batch.iter().filter(|(_, m)| m.from == from).map(|(b, m)| (b.to_vec(), m)));
            }
            got
        }

        /// The source address an IPv4 loopback peer sees for datagrams from the dual-stack `dual`.
        fn dual_addr(dual: &BatchSocket) -> SocketAddr {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), dual.local_addr().port())
        }

        fn payload(i: usize) -> Vec<u8> {
            let len = 1 + (i * 37) % 1400;
            (0..len).map(|j| (i * 7 + j) as u8).collect()
        }

        #[test]
        fn hundred_datagrams_in_batches() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let mut batch = RecvBatch::default();
            let pkts: Vec<Vec<u8>> = (0..100).map(payload).collect();
            let mut received = Vec::new();
            // 20 at a time: well inside any socket buffer, and more than one recvmmsg per
            // round when they arrive in pieces.
            for chunk in pkts.chunks(20) {
                let items: Vec<(&[u8], SocketAddr)> = chunk.iter().map(|p| (&p[..], b.local_addr())).collect();
                let o = a.send_batch_outcome(&items).unwrap();
                assert_eq!((o.sent, o.dropped), (chunk.len(), 0));
                received.extend(recv_n(&b, &mut batch, a.local_addr(), chunk.len()));
                assert_eq!(received.len() % 20, 0);
            }
            assert_eq!(received.len(), 100);
            for (i, (data, meta)) in received.iter().enumerate() {
                assert_eq!(data, &pkts[i], "datagram {i}");
                assert_eq!(meta.len, pkts[i].len());
                assert_eq!(meta.from, a.local_addr());
                assert!(!meta.truncated);
            }
        }

        #[test]
        fn more_than_one_chunk_in_one_call() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let pkts: Vec<Vec<u8>> = (0..70u8).map(|i| vec![i; 100]).collect();
            let items: Vec<(&[u8], SocketAddr)> = pkts.iter().map(|p| (&p[..], b.local_addr())).collect();
            assert_eq!(a.send_batch(&items).unwrap(), 70);
            let got = recv_n(&b, &mut RecvBatch::new(8, 256), a.local_addr(), 70);
            let firsts: Vec<u8> = got.iter().map(|(d, _)| d[0]).collect();
            assert_eq!(firsts, (0..70u8).collect::<Vec<_>>());
        }

        #[test]
        fn ipv6_peers() {
            let Ok(a) = BatchSocket::bind("[::1]:0".parse().unwrap()) else {
                eprintln!("no IPv6 loopback here; skipped");
                return;
            };
            let b = BatchSocket::bind("[::1]:0".parse().unwrap()).unwrap();
            let n = a.send_batch(&[(&b"six"[..], b.local_addr()), (&b"again"[..], b.local_addr())]).unwrap();
            assert_eq!(n, 2);
            let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 2);
            assert_eq!(got[0].0, b"six");
            assert_eq!(got[1].0, b"again");
            assert_eq!(got[0].1.from, a.local_addr());

            // A dual-stack socket talks to an IPv4 peer; the peer's address stays IPv4.
            let Ok(dual) = BatchSocket::bind("[::]:0".parse().unwrap()) else { return };
            let v4 = BatchSocket::bind(localhost()).unwrap();
            if dual.send_to(b"to v4", v4.local_addr()).unwrap().sent == 1 {
                let got = recv_n(&v4, &mut RecvBatch::default(), dual_addr(&dual), 1);
                assert_eq!(got[0].0, b"to v4");
                v4.send_to(b"back", got[0].1.from).unwrap();
                let back = recv_n(&dual, &mut RecvBatch::default(), v4.local_addr(), 1);
                assert_eq!(back[0].0, b"back");
                assert_eq!(back[0].1.from, v4.local_addr());
            }
        }

        #[test]
        fn oversized_datagram_is_flagged_truncated() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let big = [0xab; 100];
            a.send_batch(&[(&big[..], b.local_addr()), (&b"small"[..], b.local_addr())]).unwrap();
            let got = recv_n(&b, &mut RecvBatch::new(4, 64), a.local_addr(), 2);
            assert!(got[0].1.truncated);
            assert_eq!(got[0].1.len, 64);
            assert_eq!(got[0].0, &big[..64]);
            assert!(!got[1].1.truncated);
            assert_eq!(got[1].0, b"small");
            // Nothing waiting: the batch is empty, packets() yields nothing.
            let mut batch = RecvBatch::new(4, 64);
            assert_eq!(b.recv_batch(&mut batch).unwrap(), 0);
            assert_eq!(batch.packets().count(), 0);
        }

        #[test]
        fn wait_readable_times_out_and_reports_readiness() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let mut ready = [true, true];

            let t = Instant::now();
            let n = wait_readable(&[&a, &b], Some(Duration::from_millis(50)), &mut ready).unwrap();
            let waited = t.elapsed();
            assert_eq!((n, ready), (0, [false, false]));
            // Generous bounds only: it waited, and it came back.
            assert!(waited >= Duration::from_millis(20), "{waited:?}");
            assert!(waited < Duration::from_secs(30), "{waited:?}");

            assert_eq!(wait_readable(&[&a, &b], Some(Duration::ZERO), &mut ready).unwrap(), 0);

            a.send_to(b"ping", b.local_addr()).unwrap();
            let n = wait_readable(&[&a, &b], Some(Duration::from_secs(10)), &mut ready).unwrap();
            assert_eq!((n, ready), (1, [false, true]));
            let mut batch = RecvBatch::default();
            assert_eq!(b.recv_batch(&mut batch).unwrap(), 1);
            assert_eq!(batch.get(0), Some(&b"ping"[..]));
            assert_eq!(batch.get(1), None);
            // Drained: nothing ready again.
            assert_eq!(wait_readable(&[&a, &b], Some(Duration::from_millis(1)), &mut ready).unwrap(), 0);
            assert_eq!(b.recv_batch(&mut batch).unwrap(), 0);
            assert!(batch.is_empty());

            let err = wait_readable(&[&a, &b], None, &mut [false]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }

        #[test]
        fn closed_port_does_not_break_later_io() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let closed = {
                let c = BatchSocket::bind(localhost()).unwrap();
                c.local_addr()
            };
            let mut batch = RecvBatch::default();
            for round in 0..5u8 {
                let o = a.send_batch_outcome(&[(&[round][..], closed), (&[round, 1][..], b.local_addr())]).unwrap();
                assert_eq!((o.sent, o.dropped), (2, 0), "round {round}: {o:?}");
                // The ICMP port-unreachable has had time to arrive: neither receiving on the
                // sender nor the next send may fail.
                std::thread::sleep(Duration::from_millis(5));
                assert_eq!(a.recv_batch(&mut batch).unwrap(), 0);
                let got = recv_n(&b, &mut batch, a.local_addr(), 1);
                assert_eq!(got.len(), 1);
                assert_eq!(got[0].0, [round, 1]);
            }
        }

        #[test]
        fn bad_datagrams_are_dropped_not_fatal() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let huge = vec![0u8; 70_000];
            let v6: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
            let items: [(&[u8], SocketAddr); 4] =
                [(b"one", b.local_addr()), (&huge, b.local_addr()), (b"two", v6), (b"three", b.local_addr())];
            let o = a.send_batch_outcome(&items).unwrap();
            assert_eq!((o.sent, o.dropped), (2, 2), "{o:?}");
            assert!(o.last_drop_error.is_some());
            assert_eq!(a.kernel_drops(), 2);
            assert_eq!(a.send_batch(&items[1..3]).unwrap(), 2);
            assert_eq!(a.kernel_drops(), 4);
            let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 2);
            assert_eq!(got[0].0, b"one");
            assert_eq!(got[1].0, b"three");
        }

        #[test]
        fn send_queue() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let b = BatchSocket::bind(localhost()).unwrap();
            let mut q = SendBatch::new(3, 16);
            assert_eq!(q.push(&[0; 17], b.local_addr()), Err(PushError::TooLarge { len: 17, max: 16 }));
            q.push(b"first", b.local_addr()).unwrap();
            q.push_with(b.local_addr(), |buf| {
                buf[..6].copy_from_slice(b"second");
                6
            })
            .unwrap();
            q.push(b"third", b.local_addr()).unwrap();
            assert!(q.is_full());
            assert_eq!(q.push(b"x", b.local_addr()), Err(PushError::Full));
            assert_eq!(q.len(), 3);
            let o = a.send_queued(&mut q).unwrap();
            assert_eq!(o.sent, 3);
            assert!(q.is_empty() && !q.is_full());
            assert_eq!(a.send_queued(&mut q).unwrap().consumed(), 0);
            let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 3);
            let data: Vec<&[u8]> = got.iter().map(|(d, _)| &d[..]).collect();
            assert_eq!(data, [&b"first"[..], b"second", b"third"]);
        }

        #[test]
        fn in_use_address_is_named() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let err = BatchSocket::bind(a.local_addr()).unwrap_err();
            assert!(matches!(err, BindError::InUse(addr) if addr == a.local_addr()));
            assert_eq!(err.to_string(), format!("address {} is already in use", a.local_addr()));
        }

        #[test]
        fn buffers_are_enlarged() {
            let a = BatchSocket::bind(localhost()).unwrap();
            let (rcv, snd) = a.buffer_sizes().unwrap();
            // Best effort: at least the usual default, whatever the system limit.
            assert!(rcv > 0 && snd > 0);
        }
    }
}
