use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

/// Echoes the request's method, path, `X-Tag` header, body and whether its peer is known;
/// `/panic` panics.
fn echo(req: &Request, _: &ServerStats) -> Response {
    if req.path == "/panic" {
        panic!("a handler's bug");
    }
    let body = serde_json::json!({
        "method": req.method, "path": req.path, "tag": req.header("x-tag"),
        "body": String::from_utf8_lossy(&req.body), "peer": req.peer.is_some(),
    });
    Response::json(200, body.to_string())
}

fn start(limits: Limits) -> Server {
    Server::http("test", "127.0.0.1:0".parse().unwrap(), limits, Arc::new(echo)).unwrap()
}

/// Sends `raw` on a new connection and reads the whole reply (status, body).
fn exchange(server: &Server, raw: &[u8]) -> (u16, String) {
    try_exchange(server, raw).unwrap()
}

fn try_exchange(server: &Server, raw: &[u8]) -> Result<(u16, String), crate::http::HttpError> {
    let mut c = TcpStream::connect(server.addr())?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.write_all(raw)?;
    let (status, body) = crate::http::read_response(&mut c)?;
    Ok((status, String::from_utf8(body).unwrap()))
}

fn read_reply(c: &mut TcpStream) -> (u16, String) {
    let (status, body) = crate::http::read_response(c).unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[test]
fn answers_requests_with_their_body_headers_and_peer() {
    let s = start(Limits::default());
    let (status, body) =
        exchange(&s, b"PUT /v1/x?q=1 HTTP/1.1\r\nX-Tag: t\r\nContent-Length: 4\r\nConnection: keep-alive\r\n\r\nabcd");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v, serde_json::json!({"method": "PUT", "path": "/v1/x", "tag": "t", "body": "abcd", "peer": true}));
}

#[test]
fn connections_over_the_limit_are_refused_and_the_server_recovers() {
    let s = start(Limits { max_connections: 3, ..Limits::default() });
    // Three idle connections hold every place.
    let idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(s.addr()).unwrap()).collect();
    // The fourth is accepted after them (one backlog, in order), over the limit: it is answered
    // without having sent anything.
    let mut fourth = TcpStream::connect(s.addr()).unwrap();
    fourth.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let refused = read_reply(&mut fourth);
    assert_eq!(refused.0, 503, "{}", refused.1);
    assert!(refused.1.contains("too many connections"));
    assert!(s.stats().connections_refused.load(Ordering::Relaxed) >= 1);
    drop(idle);
    // Their places come back once they close (their threads see the end of their streams).
    assert_eq!(exchange_when_free(&s, b"GET / HTTP/1.1\r\n\r\n").0, 200);
}

#[test]
fn a_client_that_trickles_its_request_is_cut_at_the_deadline() {
    let s = start(Limits { request_deadline: Duration::from_millis(300), ..Limits::default() });
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    // A header line every 50 ms: each read is quick, the request never ends. Stops when the
    // server has answered and closed (a write then fails) or after 10 s.
    let mut trickle = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if trickle.write_all(b"X-Slow: y\r\n").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
    assert_eq!(s.stats().requests_timed_out.load(Ordering::Relaxed), 1);
    drop(c);
    writer.join().unwrap();
    // Others are served all along.
    assert_eq!(exchange(&s, b"GET / HTTP/1.1\r\n\r\n").0, 200);
}

#[test]
fn a_body_over_the_limit_is_refused_before_it_is_sent() {
    let s = start(Limits { max_body: 1024, ..Limits::default() });
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 10000000000\r\nExpect: 100-continue\r\n\r\n").unwrap();
    let (status, body) = read_reply(&mut c);
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("longer than 1024 bytes"), "{body}");
    // A body of the limit passes, waiting for 100 Continue as curl does.
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 1024\r\nExpect: 100-continue\r\n\r\n").unwrap();
    let mut interim = [0u8; 25];
    c.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(&[b'a'; 1024]).unwrap();
    assert_eq!(read_reply(&mut c).0, 200);
    assert_eq!(s.stats().requests_refused.load(Ordering::Relaxed), 1);
}

#[test]
fn a_panicking_handler_costs_its_request_only() {
    // One place: every request after the first needs the place the panicked one gave back.
    let s = start(Limits { max_connections: 1, ..Limits::default() });
    for _ in 0..3 {
        let (status, body) = exchange_when_free(&s, b"GET /panic HTTP/1.1\r\n\r\n");
        assert_eq!((status, body.as_str()), (500, "{\"error\":\"internal error\"}"));
    }
    assert_eq!(s.stats().handler_panics.load(Ordering::Relaxed), 3);
    assert_eq!(exchange_when_free(&s, b"GET / HTTP/1.1\r\n\r\n").0, 200);
}

/// [`exchange`] again while the server refuses the connection (a connection that just ended
/// may not have given its place back yet: a 503, or a reset if the request had arrived before
/// the refusal), for up to 5 s.
fn exchange_when_free(server: &Server, raw: &[u8]) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reply = try_exchange(server, raw);
        match reply {
            Ok(reply) if reply.0 != 503 => return reply,
            _ if Instant::now() > deadline => panic!("still refused after 5 s: {reply:?}"),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn a_dropped_server_stops_listening() {
    let s = start(Limits::default());
    let addr = s.addr();
    assert_eq!(exchange(&s, b"GET / HTTP/1.1\r\n\r\n").0, 200);
    drop(s);
    assert!(TcpStream::connect(addr).is_err());
}
