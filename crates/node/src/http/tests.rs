use std::io::Cursor;

use proptest::prelude::*;

use super::*;

/// A connection's two directions: what the client sent, and what the server wrote back.
struct Duplex {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Duplex {
    fn new(input: impl AsRef<[u8]>) -> Self {
        Self { input: Cursor::new(input.as_ref().to_vec()), output: Vec::new() }
    }
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn request(raw: &str, max_body: usize) -> Result<Request, HttpError> {
    read_request(&mut Duplex::new(raw), max_body)
}

#[test]
fn request_line_headers_and_body() {
    let r = request("POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\ncontent-LENGTH: 5\r\nX-Y:  v w \r\n\r\nhelloEXTRA", 100)
        .unwrap();
    assert_eq!((r.method.as_str(), r.path.as_str(), r.query.as_str()), ("POST", "/v1/x", "a=1"));
    assert_eq!(r.body, b"hello", "the body ends where Content-Length says");
    assert_eq!((r.header("content-length"), r.header("x-y"), r.header("none")), (Some("5"), Some("v w"), None));
    let get = request("GET / HTTP/1.0\r\n\r\n", 0).unwrap();
    assert!(get.body.is_empty() && get.query.is_empty());
}

#[test]
fn malformed_heads_are_refused_with_their_status() {
    let status = |raw: &str| request(raw, 100).unwrap_err().status();
    assert_eq!(status("\x16\x03\x01junk\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/2.0\r\n\r\n"), 400);
    assert_eq!(status("GET noslash HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status("G(T / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"), 400, "obsolete line folding");
    assert_eq!(status(&format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD + 10))), 431);
    assert!(matches!(request("GET / HTTP/1.1\r\nHost: h\r\n", 100), Err(HttpError::Truncated)));
}

#[test]
fn body_framing_that_could_smuggle_a_request_is_refused() {
    let status =
        |headers: &str| request(&format!("POST / HTTP/1.1\r\n{headers}\r\n\r\n0\r\n\r\n"), 100).unwrap_err().status();
    assert_eq!(status("Content-Length: 3\r\nTransfer-Encoding: chunked"), 400);
    assert_eq!(status("Content-Length: 3\r\nContent-Length: 4"), 400);
    assert_eq!(status("Content-Length: 3, 4"), 400);
    assert_eq!(status("Content-Length: +3"), 400);
    assert_eq!(status("Content-Length: "), 400);
    assert_eq!(status("Transfer-Encoding: gzip, chunked"), 501);
    assert_eq!(status("Transfer-Encoding: gzip"), 501);
    // The same length twice is one length.
    let r = request("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", 100).unwrap();
    assert_eq!(r.body, b"ok");
}

#[test]
fn bodies_over_the_limit_are_refused_unread() {
    let mut d = Duplex::new("POST / HTTP/1.1\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(read_request(&mut d, 100).unwrap_err().status(), 413);
    assert!(d.output.is_empty(), "no 100 Continue for a body that is refused");
    let huge = format!("POST / HTTP/1.1\r\nContent-Length: {}0\r\n\r\n", usize::MAX);
    assert_eq!(request(&huge, 100).unwrap_err().status(), 413);
    let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n";
    assert_eq!(request(chunked, 63).unwrap_err().status(), 413);
    assert_eq!(request("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc", 100).unwrap_err().status(), 400);
}

#[test]
fn expect_100_continue_is_answered_before_the_body_only() {
    let mut d = Duplex::new("PUT / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-Continue\r\n\r\nok");
    assert_eq!(read_request(&mut d, 100).unwrap().body, b"ok");
    assert_eq!(d.output, b"HTTP/1.1 100 Continue\r\n\r\n");
    let mut bodiless = Duplex::new("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
    read_request(&mut bodiless, 100).unwrap();
    assert!(bodiless.output.is_empty());
    assert_eq!(
        request("PUT / HTTP/1.1\r\nContent-Length: 2\r\nExpect: coffee\r\n\r\nok", 100).unwrap_err().status(),
        417
    );
}

#[test]
fn chunked_bodies_with_extensions_and_trailers() {
    let raw =
        "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n5;name=v\r\nhello\r\n1\r\n \r\n0\r\nTrailer: t\r\n\r\n";
    assert_eq!(request(raw, 100).unwrap().body, b"hello ");
    let bad = |chunks: &str| request(&format!("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{chunks}"), 100);
    assert_eq!(bad("zz\r\nhello\r\n0\r\n\r\n").unwrap_err().status(), 400);
    assert_eq!(bad("5\r\nhelloX\r\n0\r\n\r\n").unwrap_err().status(), 400, "a chunk longer than its size");
    assert_eq!(bad("5\nhello\r\n0\r\n\r\n").unwrap_err().status(), 400, "a bare LF");
    assert_eq!(bad("11111111111111111\r\n").unwrap_err().status(), 400, "a size of 17 digits");
    assert_eq!(bad(&format!("1;{}\r\n", "e".repeat(2000))).unwrap_err().status(), 400);
    assert!(matches!(bad("5\r\nhel"), Err(HttpError::Truncated)));
    assert!(matches!(bad("0\r\n"), Err(HttpError::Truncated)), "no blank line after the trailers");
    let many_trailers = format!("0\r\n{}\r\n", "T: v\r\n".repeat(MAX_HEAD / 4 + 1));
    assert_eq!(bad(&many_trailers).unwrap_err().status(), 431);
}

proptest! {
    /// Any body, in any chunks, reads back as it was sent; and by Content-Length too.
    #[test]
    fn bodies_read_back_whatever_their_framing(
        body in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(1usize..200, 0..8),
    ) {
        let mut raw = b"POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut rest = body.as_slice();
        for cut in cuts.iter().chain(std::iter::once(&usize::MAX)) {
            let (chunk, tail) = rest.split_at((*cut).min(rest.len()));
            if !chunk.is_empty() {
                raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                raw.extend_from_slice(chunk);
                raw.extend_from_slice(b"\r\n");
            }
            rest = tail;
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        prop_assert_eq!(&read_request(&mut Duplex::new(&raw), 600).unwrap().body, &body);
        let mut by_length = format!("POST /p HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        by_length.extend_from_slice(&body);
        prop_assert_eq!(&read_request(&mut Duplex::new(&by_length), 600).unwrap().body, &body);
        if !body.is_empty() {
            prop_assert_eq!(read_request(&mut Duplex::new(&raw), body.len() - 1).unwrap_err().status(), 413);
        }
    }
}

proptest! {
    /// Whatever a client sends (bytes at random, or a valid chunked request with bytes changed
    /// or cut), the reader answers with a request whose body is within the limit or an error,
    /// and never panics.
    #[test]
    fn any_bytes_give_a_request_within_the_limit_or_an_error(
        noise in proptest::collection::vec(any::<u8>(), 0..300),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        max_body in 0usize..64,
    ) {
        let valid = b"PUT /v1/x?a=1 HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;e=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n".to_vec();
        let mut mutated = valid.clone();
        for (at, byte) in &flips {
            mutated[at.index(valid.len())] = *byte;
        }
        mutated.truncate(cut.index(valid.len() + 1));
        for input in [noise, mutated] {
            if let Ok(r) = read_request(&mut Duplex::new(&input), max_body) {
                prop_assert!(r.body.len() <= max_body);
                prop_assert!(r.path.starts_with('/'));
            }
        }
    }
}

#[test]
fn a_bearer_token_is_matched_exactly() {
    let with = |auth: &str| request(&format!("PUT / HTTP/1.1\r\n{auth}\r\n\r\n"), 0).unwrap();
    assert!(with("Authorization: Bearer s3cret").bears("s3cret"));
    assert!(with("authorization:Bearer s3cret ").bears("s3cret"), "name in any case, whitespace around the value");
    for wrong in ["Authorization: Bearer s3cre", "Authorization: Bearer s3cret2", "Authorization: bearer s3cret"] {
        assert!(!with(wrong).bears("s3cret"), "{wrong}");
    }
    assert!(!with("X-Other: Bearer s3cret").bears("s3cret"));
}

#[test]
fn responses_read_back() {
    let mut out = Vec::new();
    write(&mut out, &Response::error(403, "no")).unwrap();
    assert!(out.starts_with(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"));
    let (status, body) = read_response(&mut out.as_slice()).unwrap();
    assert_eq!((status, body.as_slice()), (403, &b"{\"error\":\"no\"}"[..]));
}

#[test]
fn query_parameters() {
    assert!(query_params("a=1&b=2", &["a", "b"]).is_ok());
    assert!(query_params("a=1&a=2", &["a"]).unwrap_err().contains("twice"));
    assert!(query_params("c=1", &["a"]).unwrap_err().contains("unknown"));
}
