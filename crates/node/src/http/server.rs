//! The HTTP servers of aviary's daemons, and what each must withstand from whoever can reach its
//! socket: a flood of connections, clients that send slowly or never finish, oversized bodies,
//! handlers that fail.
//!
//! - **At most [`Limits::max_connections`] at once**, each served by a thread of its own; a
//!   connection over that is answered 503 and closed at once. The process never runs out of
//!   file descriptors or threads because of its clients.
//! - **One deadline per request** ([`Limits::request_deadline`]) for the whole head and body,
//!   not a timeout per read: a client that sends a byte every few seconds is answered 408 when
//!   the deadline passes.
//! - **Bounded bodies** ([`Limits::max_body`]): a longer one is refused (413) before it is read.
//! - **The accept loop outlives every error**: when `accept` fails (out of file descriptors,
//!   a connection aborted before it was taken), it counts the error, waits a moment and goes on.
//!   (The server this replaces stopped accepting for good on the first such error.)
//! - **A handler that panics** costs its own request a 500, not the server.
//!
//! Every refusal is counted ([`ServerStats`], exported by each daemon's `/metrics`).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{read_request, write, HttpError, Request, Response};
use crate::metrics::{Exposition, Kind};

/// What one server accepts.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// From the connection's acceptance to the end of its request's body.
    pub request_deadline: Duration,
    /// For each write of the reply.
    pub write_timeout: Duration,
    /// Longest request body.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            request_deadline: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_body: 1 << 20,
        }
    }
}

/// How long, and for how many bytes, a connection is drained after the reply.
const LINGER: Duration = Duration::from_secs(1);
const MAX_LINGER_BYTES: u64 = 1 << 20;
/// How often the accept loop looks whether it should stop.
const STOP_POLL: Duration = Duration::from_millis(200);
/// The pause after a failed `accept` (e.g. no file descriptor left), so as not to spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a server refused or survived, since it started.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Connections over [`Limits::max_connections`] (or no thread to be had), answered 503.
    pub connections_refused: AtomicU64,
    /// `accept` failures.
    pub accept_errors: AtomicU64,
    /// Requests whose head and body did not arrive by the deadline (408).
    pub requests_timed_out: AtomicU64,
    /// Requests refused before a handler saw them: malformed, too long, unsupported (4xx, 501).
    pub requests_refused: AtomicU64,
    /// Requests whose handler panicked (500).
    pub handler_panics: AtomicU64,
}

impl ServerStats {
    /// Counts a request refused for `e` before a handler saw it (a client that went away is
    /// not counted: nobody was refused).
    pub fn count_refusal(&self, e: &HttpError) {
        let counter = match e {
            HttpError::Io(_) | HttpError::Truncated => return,
            HttpError::TimedOut => &self.requests_timed_out,
            _ => &self.requests_refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters of `servers` (each named) as Prometheus families `aviary_http_*`, labelled
    /// with `server`.
    pub fn prometheus(out: &mut Exposition, servers: &[(&str, &ServerStats)]) {
        type Counter = fn(&ServerStats) -> &AtomicU64;
        let families: [(&str, &str, Counter); 5] = [
            ("aviary_http_connections_refused_total", "Connections over the limit, answered 503.", |s| {
                &s.connections_refused
            }),
            ("aviary_http_accept_errors_total", "Failed accepts (e.g. no file descriptor left).", |s| &s.accept_errors),
            ("aviary_http_requests_timed_out_total", "Requests not complete by the deadline (408).", |s| {
                &s.requests_timed_out
            }),
            ("aviary_http_requests_refused_total", "Requests malformed, too long or unsupported.", |s| {
                &s.requests_refused
            }),
            ("aviary_http_handler_panics_total", "Requests whose handler failed (500).", |s| &s.handler_panics),
        ];
        for (name, help, counter) in families {
            let mut family = out.family(name, Kind::Counter, help);
            for (server, stats) in servers {
                family.sample(&[("server", server)], counter(stats).load(Ordering::Relaxed));
            }
        }
    }
}

/// A connection's stream whose reads all end at one deadline.
pub struct DeadlineStream {
    pub tcp: TcpStream,
    deadline: Instant,
}

impl DeadlineStream {
    pub fn new(tcp: TcpStream, deadline: Instant) -> Self {
        Self { tcp, deadline }
    }
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.tcp.set_read_timeout(Some(left))?;
        self.tcp.read(buf)
    }
}

impl Write for DeadlineStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// What serves one accepted connection (in a thread of its own), counting what it refuses in
/// the server's stats.
pub type OnConnection = dyn Fn(DeadlineStream, SocketAddr, &ServerStats) + Send + Sync;

/// What answers one request, given what its server refused so far (for its `/metrics`).
pub type Handler = dyn Fn(&Request, &ServerStats) -> Response + Send + Sync;

/// A listening server; it stops accepting when dropped (connections in progress finish).
pub struct Server {
    addr: SocketAddr,
    stats: Arc<ServerStats>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and answers each HTTP request with `handler`. `name` names the server in
    /// logs and metrics.
    pub fn http(name: &'static str, addr: SocketAddr, limits: Limits, handler: Arc<Handler>) -> io::Result<Self> {
        let on_connection = move |stream: DeadlineStream, peer: SocketAddr, stats: &ServerStats| {
            serve_request(stream, peer, &limits, &*handler, stats)
        };
        Self::connections(name, addr, limits, Arc::new(on_connection))
    }

    /// Binds `addr` and runs `on_connection` for each connection, within `limits`' number of
    /// connections and with the stream's reads ending at `limits`' deadline (for a protocol
    /// inside the connection, e.g. TLS; [`Self::http`] for plain HTTP).
    pub fn connections(
        name: &'static str,
        addr: SocketAddr,
        limits: Limits,
        on_connection: Arc<OnConnection>,
    ) -> io::Result<Self> {
        let stats = Arc::new(ServerStats::default());
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (stats, stop) = (stats.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("{name}-accept"))
                .spawn(move || accept_loop(name, &listener, &limits, &stats, &stop, &on_connection))?
        };
        Ok(Self { addr, stats, stop, accept: Some(accept) })
    }

    /// The address it listens on (the port is known even when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> &Arc<ServerStats> {
        &self.stats
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Frees a connection's place when its thread ends, however it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn accept_loop(
    name: &'static str,
    listener: &TcpListener,
    limits: &Limits,
    stats: &Arc<ServerStats>,
    stop: &AtomicBool,
    on_connection: &Arc<OnConnection>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut last_warning: Option<Instant> = None;
    let mut warn = |what: std::fmt::Arguments<'_>| {
        // At most one warning a second: a flood must not flood the log too.
        if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            tracing::warn!(server = name, "{what}");
            last_warning = Some(Instant::now());
        }
    };
    while !stop.load(Ordering::Relaxed) {
        if !wait_readable(listener, STOP_POLL) {
            continue;
        }
        let (tcp, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => continue,
            Err(e) => {
                stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                warn(format_args!("cannot accept a connection: {e}"));
                std::thread::sleep(ACCEPT_BACKOFF);
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= limits.max_connections {
            stats.connections_refused.fetch_add(1, Ordering::Relaxed);
            warn(format_args!("more than {} connections at once; refusing", limits.max_connections));
            refuse(tcp);
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(active.clone());
        let deadline = Instant::now() + limits.request_deadline;
        let (on_connection, stats_of_connection, write_timeout) =
            (on_connection.clone(), stats.clone(), limits.write_timeout);
        let spawned = std::thread::Builder::new().name(format!("{name}-conn")).spawn(move || {
            let _slot = slot;
            // Accepted sockets do not inherit the listener's non-blocking mode on Linux; set
            // both anyway, as the reads' deadline relies on a blocking socket.
            if tcp.set_nonblocking(false).and_then(|_| tcp.set_write_timeout(Some(write_timeout))).is_ok() {
                on_connection(DeadlineStream::new(tcp, deadline), peer, &stats_of_connection);
            }
        });
        if let Err(e) = spawned {
            // The closure, its slot and its socket are gone with the error.
            stats.connections_refused.fetch_add(1, Ordering::Relaxed);
            warn(format_args!("no thread for a connection: {e}"));
        }
    }
}

/// Whether `listener` has a connection to accept within `timeout`.
fn wait_readable(listener: &TcpListener, timeout: Duration) -> bool {
    let mut fd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, for the duration of the call.
    let n = unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
    n > 0
}

/// Answers a connection over the limit without waiting on it. What the client already sent is
/// read first, so that closing does not reset the connection (which can discard the reply
/// before the client reads it); what it sends later may still be met with a reset.
fn refuse(tcp: TcpStream) {
    let mut reply = Vec::new();
    let _ = write(&mut reply, &Response::error(503, "too many connections"));
    if tcp.set_nonblocking(true).is_ok() {
        // At most 64 KiB: a client pushing data must not hold the accept loop.
        let mut sent = [0u8; 4096];
        for _ in 0..16 {
            if !matches!((&tcp).read(&mut sent), Ok(n) if n > 0) {
                break;
            }
        }
        let _ = (&tcp).write(&reply);
        let _ = tcp.shutdown(Shutdown::Write);
    }
}

fn serve_request(
    mut stream: DeadlineStream,
    peer: SocketAddr,
    limits: &Limits,
    handler: &Handler,
    stats: &ServerStats,
) {
    let response = match read_request(&mut stream, limits.max_body) {
        Ok(mut req) => {
            req.peer = Some(peer);
            catch_unwind(AssertUnwindSafe(|| handler(&req, stats))).unwrap_or_else(|_| {
                stats.handler_panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(path = %req.path, "a request's handler panicked");
                Response::error(500, "internal error")
            })
        }
        // The client went away: nobody to answer.
        Err(HttpError::Io(_) | HttpError::Truncated) => return,
        Err(e) => {
            stats.count_refusal(&e);
            tracing::debug!(%peer, "request refused: {e}");
            Response::error(e.status(), &e.to_string())
        }
    };
    if write(&mut stream.tcp, &response).is_ok() {
        linger(stream.tcp);
    }
}

/// Closes a connection whose reply was written: a client still sending (a refused body, an
/// oversized head) would otherwise get a reset that can discard the reply before it reads it.
/// Drains it for at most [`LINGER`] and [`MAX_LINGER_BYTES`].
pub fn linger(tcp: TcpStream) {
    let _ = tcp.shutdown(Shutdown::Write);
    let mut rest = DeadlineStream::new(tcp, Instant::now() + LINGER).take(MAX_LINGER_BYTES);
    let _ = io::copy(&mut rest, &mut io::sink());
}

#[cfg(test)]
mod tests;
