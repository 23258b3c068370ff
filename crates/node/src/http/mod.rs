//! The little HTTP/1.1 of aviary's daemons: the requests and replies of every HTTP API they
//! serve ([`server`]: the control service, the router's management API, the metrics and health
//! endpoints) and the DRKey exchanges where ureq does not fit (Level 1 over TLS with client
//! certificates, Level 2 from a host's own address as TCP source).
//!
//! One request per connection (`Connection: close`), bounded heads and bodies: a peer that
//! sends too much gets an error, never an unbounded buffer.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::SocketAddr;

use thiserror::Error;

pub mod client_limit;
pub mod server;

/// Longest request or response head (request line or status line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// Longest response body a client reads.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest line of a chunked body's framing (chunk size and extensions, or a trailer).
const MAX_CHUNK_LINE: usize = 1024;

#[derive(Debug, Error)]
pub enum HttpError {
    #[error("I/O: {0}")]
    Io(io::Error),
    #[error("the request did not arrive in time")]
    TimedOut,
    #[error("the head is longer than {MAX_HEAD} bytes")]
    HeadTooLong,
    #[error("the body is longer than {0} bytes")]
    BodyTooLong(usize),
    #[error("the connection closed before the message ended")]
    Truncated,
    #[error("malformed HTTP: {0}")]
    Malformed(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("unsupported expectation {0:?}")]
    Expectation(String),
}

/// A timed-out read is [`HttpError::TimedOut`] (a socket's read timeout reports `WouldBlock`).
impl From<io::Error> for HttpError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::TimedOut,
            io::ErrorKind::UnexpectedEof => HttpError::Truncated,
            _ => HttpError::Io(e),
        }
    }
}

impl HttpError {
    /// The status a server answers this error with.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::TimedOut => 408,
            HttpError::HeadTooLong => 431,
            HttpError::BodyTooLong(_) => 413,
            HttpError::Unsupported(_) => 501,
            HttpError::Expectation(_) => 417,
            HttpError::Io(_) | HttpError::Truncated | HttpError::Malformed(_) => 400,
        }
    }
}

/// Reads up to the blank line that ends a head; returns the head and any bytes after it.
fn read_head<R: Read>(r: &mut R) -> Result<(String, Vec<u8>), HttpError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            if end > MAX_HEAD {
                return Err(HttpError::HeadTooLong);
            }
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            let head = String::from_utf8(buf).map_err(|_| HttpError::Malformed("the head is not UTF-8".into()))?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::HeadTooLong);
        }
        let n = r.read(&mut chunk)?;
        if n == 0 {
            return Err(HttpError::Truncated);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A request as a server handles it: the request line, the headers and the whole body.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The target's path, without the query.
    pub path: String,
    /// What follows the `?` of the target (empty if none).
    pub query: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Where the connection came from (set by the server).
    pub peer: Option<SocketAddr>,
}

impl Request {
    /// The value of the first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the request carries `Authorization: Bearer <token>`, compared in constant time
    /// (the token is the operator's credential). `token` must not be empty.
    pub fn bears(&self, token: &str) -> bool {
        debug_assert!(!token.is_empty(), "an empty token matches a request without one");
        let given = self.header("Authorization").and_then(|v| v.strip_prefix("Bearer ")).unwrap_or("");
        given.len() == token.len() && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// The body as text; a body that is not UTF-8 is the client's error (400).
    pub fn body_text(&self) -> Result<&str, HttpError> {
        std::str::from_utf8(&self.body).map_err(|_| HttpError::Malformed("the body is not UTF-8".into()))
    }
}

/// Reads one request from `s`: its head, then a body of at most `max_body` bytes framed by
/// `Content-Length` or chunked. A client that waits for `100 Continue` gets it once the head
/// passed (a refused body is never read). Ambiguous framing (both headers, several lengths
/// that differ) is refused: it is how requests are smuggled past a proxy.
pub fn read_request<S: Read + Write>(s: &mut S, max_body: usize) -> Result<Request, HttpError> {
    let (head, rest) = read_head(s)?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed(format!("bad request line {:?}", truncate(line))));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || !is_token(method) || !target.starts_with('/') {
        return Err(HttpError::Malformed(format!("bad request line {:?}", truncate(line))));
    }
    let mut headers = Vec::new();
    for l in lines {
        let (name, value) = l
            .split_once(':')
            .filter(|(name, _)| is_token(name))
            .ok_or_else(|| HttpError::Malformed(format!("bad header line {:?}", truncate(l))))?;
        headers.push((name.to_string(), value.trim_matches([' ', '\t']).to_string()));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut req = Request {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers,
        body: Vec::new(),
        peer: None,
    };

    let framing = framing(&req, max_body)?;
    if framing != Framing::None {
        match req.header("expect") {
            None => {}
            Some(e) if e.eq_ignore_ascii_case("100-continue") => {
                s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                s.flush()?;
            }
            Some(e) => return Err(HttpError::Expectation(truncate(e))),
        }
    }
    let body = rest.as_slice().chain(s);
    req.body = match framing {
        Framing::None => Vec::new(),
        Framing::Length(n) => {
            let mut b = Vec::with_capacity(n);
            body.take(n as u64).read_to_end(&mut b)?;
            if b.len() < n {
                return Err(HttpError::Truncated);
            }
            b
        }
        Framing::Chunked => read_chunked(&mut BufReader::new(body), max_body)?,
    };
    Ok(req)
}

#[derive(Debug, PartialEq, Eq)]
enum Framing {
    None,
    Length(usize),
    Chunked,
}

/// How the body of `req` is framed, refused if longer than `max_body`.
fn framing(req: &Request, max_body: usize) -> Result<Framing, HttpError> {
    let named = |name: &'static str| req.headers.iter().filter(move |(k, _)| k.eq_ignore_ascii_case(name));
    let lengths: Vec<&str> = named("content-length").flat_map(|(_, v)| v.split(',')).map(str::trim).collect();
    let codings: Vec<&str> = named("transfer-encoding").flat_map(|(_, v)| v.split(',')).map(str::trim).collect();
    match (lengths.as_slice(), codings.as_slice()) {
        ([], []) => Ok(Framing::None),
        ([], [coding]) if coding.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
        ([], _) => Err(HttpError::Unsupported(format!("transfer coding {:?}", truncate(&codings.join(", "))))),
        ([first, others @ ..], []) => {
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !digits(first) || others.iter().any(|o| o != first) {
                return Err(HttpError::Malformed(format!("bad Content-Length {:?}", truncate(&lengths.join(", ")))));
            }
            // Too many digits for usize is too long as well.
            match first.parse::<usize>() {
                Ok(n) if n <= max_body => Ok(Framing::Length(n)),
                _ => Err(HttpError::BodyTooLong(max_body)),
            }
        }
        (_, _) => Err(HttpError::Malformed("both Content-Length and Transfer-Encoding".into())),
    }
}

/// A chunked body of at most `max` bytes (extensions and trailers read and ignored).
fn read_chunked<B: BufRead>(r: &mut B, max: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r)?;
        let size = line.split(';').next().unwrap_or_default().trim_matches([' ', '\t']);
        if size.is_empty() || size.len() > 16 || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HttpError::Malformed(format!("bad chunk size {:?}", truncate(&line))));
        }
        let size = u64::from_str_radix(size, 16).expect("at most 16 hex digits");
        if size == 0 {
            break;
        }
        if size > (max - body.len()) as u64 {
            return Err(HttpError::BodyTooLong(max));
        }
        let start = body.len();
        Read::take(&mut *r, size).read_to_end(&mut body)?;
        if ((body.len() - start) as u64) < size {
            return Err(HttpError::Truncated);
        }
        if !read_line(r)?.is_empty() {
            return Err(HttpError::Malformed("a chunk is not followed by CRLF".into()));
        }
    }
    // Trailers, up to the blank line, within a head's length.
    let mut trailers = 0;
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            return Ok(body);
        }
        trailers += line.len();
        if trailers > MAX_HEAD {
            return Err(HttpError::HeadTooLong);
        }
    }
}

/// One CRLF-terminated line of a chunked body's framing, without the CRLF.
fn read_line<B: BufRead>(r: &mut B) -> Result<String, HttpError> {
    let mut line = Vec::new();
    Read::take(&mut *r, MAX_CHUNK_LINE as u64 + 2).read_until(b'\n', &mut line)?;
    let Some(line) = line.strip_suffix(b"\r\n") else {
        return Err(if line.len() > MAX_CHUNK_LINE {
            HttpError::Malformed("a line of the chunked framing is too long".into())
        } else if line.ends_with(b"\n") {
            HttpError::Malformed("a line of the chunked framing does not end in CRLF".into())
        } else {
            HttpError::Truncated
        });
    };
    String::from_utf8(line.to_vec()).map_err(|_| HttpError::Malformed("the chunked framing is not UTF-8".into()))
}

/// RFC 9110's token: what a method and a header name are made of.
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

/// What a server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// `Retry-After`, in seconds, of a refusal that ends by itself.
    pub retry_after_s: Option<u64>,
}

impl Response {
    pub fn json(status: u16, body: String) -> Self {
        Self { status, content_type: "application/json", body, retry_after_s: None }
    }

    /// 429 with `Retry-After`: the client asked more often than it may.
    pub fn too_many_requests(retry: client_limit::RetryAfter, message: &str) -> Self {
        Self { retry_after_s: Some(retry.secs()), ..Self::error(429, message) }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Self {
        Self::json(status, serde_json::json!({ "error": message }).to_string())
    }

    pub fn with_type(status: u16, content_type: &'static str, body: String) -> Self {
        Self { status, content_type, body, retry_after_s: None }
    }
}

/// The reason phrase of `status`.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

/// Writes a complete response and flushes it.
pub fn write(w: &mut impl Write, r: &Response) -> io::Result<()> {
    // One write: over TLS every write is a record, and a reply cut between records is
    // harder to read for a client whose connection is reset.
    let retry = r.retry_after_s.map(|s| format!("Retry-After: {s}\r\n")).unwrap_or_default();
    let reply = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{}",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len(),
        r.body
    );
    w.write_all(reply.as_bytes())?;
    w.flush()
}

/// Writes a `GET` request that asks the server to close the connection after replying.
pub fn write_get<W: Write>(w: &mut W, host: &str, target: &str) -> io::Result<()> {
    let req = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
    w.write_all(req.as_bytes())?;
    w.flush()
}

/// Reads a response: status and body (by `Content-Length`, else up to the end of the stream).
pub fn read_response<R: Read>(r: &mut R) -> Result<(u16, Vec<u8>), HttpError> {
    let (head, mut body) = read_head(r)?;
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|s| s.get(2..5))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Malformed(format!("bad status line {:?}", truncate(status_line))))?;
    let mut length = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                let n = v.trim().parse::<usize>().map_err(|_| HttpError::Malformed("bad Content-Length".into()))?;
                length = Some(n);
            } else if k.trim().eq_ignore_ascii_case("transfer-encoding") {
                return Err(HttpError::Malformed("chunked replies are not supported".into()));
            }
        }
    }
    match length {
        Some(n) if n > MAX_BODY => return Err(HttpError::BodyTooLong(MAX_BODY)),
        Some(n) => {
            if body.len() < n {
                let mut more = vec![0u8; n - body.len()];
                r.read_exact(&mut more)?;
                body.extend_from_slice(&more);
            }
            body.truncate(n);
        }
        None => {
            r.take((MAX_BODY + 1 - body.len().min(MAX_BODY)) as u64).read_to_end(&mut body)?;
            if body.len() > MAX_BODY {
                return Err(HttpError::BodyTooLong(MAX_BODY));
            }
        }
    }
    Ok((status, body))
}

/// `k=v&k=v` without percent-decoding (no value here needs it); every key must be one of
/// `known`, at most once.
pub fn query_params<'a>(query: &'a str, known: &[&str]) -> Result<BTreeMap<&'a str, &'a str>, String> {
    let mut out = BTreeMap::new();
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("query parameter {:?} has no value", truncate(kv)))?;
        if !known.contains(&k) {
            return Err(format!("unknown query parameter {:?} (known: {})", truncate(k), known.join(", ")));
        }
        if out.insert(k, v).is_some() {
            return Err(format!("query parameter {k} is given twice"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
