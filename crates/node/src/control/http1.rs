//! The little HTTP/1.1 that the DRKey service speaks where tiny_http and ureq do not fit: over
//! a TLS stream with client certificates (Level 1, control service to control service), and
//! from a host's own address as TCP source (Level 2, host to its control service).
//!
//! One request per connection (`Connection: close`), no request bodies, bounded heads and
//! bodies: a peer that sends too much gets an error, never an unbounded buffer.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use thiserror::Error;

/// Longest request or response head (request line or status line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// Longest response body a client reads.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Debug, Error)]
pub enum HttpError {
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("the head is longer than {MAX_HEAD} bytes")]
    HeadTooLong,
    #[error("the body is longer than {MAX_BODY} bytes")]
    BodyTooLong,
    #[error("the connection closed before the head ended")]
    Truncated,
    #[error("malformed HTTP: {0}")]
    Malformed(String),
}

impl HttpError {
    /// The status a server answers this error with.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::HeadTooLong => 431,
            HttpError::BodyTooLong => 413,
            _ => 400,
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

/// A request line: method and target (path with query).
#[derive(Debug, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    pub query: String,
}

/// Reads a request head (the body, if any, is ignored: no endpoint here takes one).
pub fn read_request<R: Read>(r: &mut R) -> Result<RequestHead, HttpError> {
    let (head, _) = read_head(r)?;
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed(format!("bad request line {:?}", truncate(line))));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(HttpError::Malformed(format!("bad request line {:?}", truncate(line))));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(RequestHead { method: method.into(), path: path.into(), query: query.into() })
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Writes a complete JSON response and flushes it.
pub fn write_response<W: Write>(w: &mut W, status: u16, json: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    // One write: over TLS every write is a record, and a reply cut between records is
    // harder to read for a client whose connection is reset.
    let reply = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    w.write_all(reply.as_bytes())?;
    w.flush()
}

/// Writes a `GET` request that asks the server to close the connection after replying.
pub fn write_get<W: Write>(w: &mut W, host: &str, target: &str) -> std::io::Result<()> {
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
        Some(n) if n > MAX_BODY => return Err(HttpError::BodyTooLong),
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
                return Err(HttpError::BodyTooLong);
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
mod tests {
    use super::*;

    #[test]
    fn requests_responses_and_limits() {
        let mut r: &[u8] = b"GET /v1/x?a=1 HTTP/1.1\r\nHost: h\r\n\r\n";
        let h = read_request(&mut r).unwrap();
        assert_eq!((h.method.as_str(), h.path.as_str(), h.query.as_str()), ("GET", "/v1/x", "a=1"));
        let mut junk: &[u8] = b"\x16\x03\x01junk\r\n\r\n";
        assert_eq!(read_request(&mut junk).unwrap_err().status(), 400);
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD + 10));
        assert_eq!(read_request(&mut long.as_bytes()).unwrap_err().status(), 431);
        let mut out = Vec::new();
        write_response(&mut out, 403, "{\"error\":\"no\"}").unwrap();
        let (status, body) = read_response(&mut out.as_slice()).unwrap();
        assert_eq!((status, body.as_slice()), (403, &b"{\"error\":\"no\"}"[..]));
        assert!(query_params("a=1&b=2", &["a", "b"]).is_ok());
        assert!(query_params("a=1&a=2", &["a"]).unwrap_err().contains("twice"));
        assert!(query_params("c=1", &["a"]).unwrap_err().contains("unknown"));
    }
}
