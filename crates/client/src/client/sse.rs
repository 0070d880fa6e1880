//! A small Server-Sent Events reader: [`SseParser`] turns bytes into events
//! (the WHATWG `text/event-stream` rules), and [`EventStream`] follows one
//! URL, reconnecting with `Last-Event-ID` when the connection drops, so the
//! caller sees every event once and in order.

use std::{collections::VecDeque, time::Duration};

use futures::{StreamExt, TryStreamExt, stream::BoxStream};
use reqwest::{StatusCode, Url, header};

use super::{ClientError, error_chain};

/// Longest line or event data accepted; beyond it the stream is refused
/// rather than growing memory without bound.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The last event id seen when it was dispatched (`None` when empty).
    pub id: Option<String>,
    /// Its type (`message` when the stream names none).
    pub event: String,
    /// Its data lines, joined with `\n`.
    pub data: String,
}

/// An event or line larger than [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event of the stream is larger than {MAX_EVENT_BYTES} bytes")]
pub struct EventTooLarge;

/// Incremental `text/event-stream` parser: feed it chunks as they arrive,
/// split anywhere (even inside a line ending or a UTF-8 character).
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one
    /// belongs to the same line ending.
    after_cr: bool,
    /// No line seen yet on this connection (a leading BOM is dropped).
    first_line: bool,
    data: String,
    event: String,
    /// The `id:` field as last seen, committed when an event is dispatched.
    id_buffer: String,
    /// The id of the last dispatched event (what a reconnection resumes after).
    last_id: String,
    retry: Option<Duration>,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            data: String::new(),
            event: String::new(),
            id_buffer: String::new(),
            last_id: String::new(),
            retry: None,
        }
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Parses `chunk`, returning the events it completes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.extend_line(&rest[..end])?;
            let line = std::mem::take(&mut self.line);
            if let Some(ev) = self.process_line(&line)? {
                events.push(ev);
            }
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => rest = &rest[end + 2..],
                    Some(_) => rest = &rest[end + 1..],
                    None => {
                        self.after_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[end + 1..];
            }
        }
        self.extend_line(rest)?;
        Ok(events)
    }

    /// The id of the last event (what `Last-Event-ID` should carry).
    pub fn last_event_id(&self) -> Option<&str> {
        (!self.last_id.is_empty()).then_some(self.last_id.as_str())
    }

    /// The reconnection delay the server asked for, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Forgets a partly received event: its connection is gone, and the
    /// server sends it again after `Last-Event-ID`.
    pub fn reset_connection(&mut self) {
        self.line.clear();
        self.after_cr = false;
        self.first_line = true;
        self.data.clear();
        self.event.clear();
        self.id_buffer.clone_from(&self.last_id);
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        if self.line.len() + bytes.len() > MAX_EVENT_BYTES {
            return Err(EventTooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, raw: &[u8]) -> Result<Option<SseEvent>, EventTooLarge> {
        let mut raw = raw;
        if std::mem::take(&mut self.first_line) {
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            return Ok(self.dispatch());
        }
        if raw.starts_with(b":") {
            // A comment: servers send them as keep-alives.
            return Ok(None);
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(EventTooLarge);
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => value.clone_into(&mut self.id_buffer),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        self.last_id.clone_from(&self.id_buffer);
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        Some(SseEvent {
            id: self.last_event_id().map(str::to_owned),
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        })
    }
}

/// How an [`EventStream`] reconnects.
#[derive(Debug, Clone)]
pub struct ReconnectPolicy {
    /// Delay before reconnecting when the server named none (`retry:`).
    pub delay: Duration,
    /// Longest delay between failed attempts (the delay doubles per failure).
    pub max_delay: Duration,
    /// Failed connection attempts in a row before giving up.
    pub max_failures: u32,
    /// Silence (no byte, not even a keep-alive) after which the connection
    /// counts as dropped.
    pub idle_timeout: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_failures: 10,
            // The service sends a keep-alive every 15 s.
            idle_timeout: Duration::from_secs(45),
        }
    }
}

type Body = BoxStream<'static, Result<Vec<u8>, reqwest::Error>>;

/// A followed SSE URL: events in order, across reconnections.
pub struct EventStream {
    http: reqwest::Client,
    url: Url,
    token: Option<String>,
    policy: ReconnectPolicy,
    parser: SseParser,
    body: Option<Body>,
    queue: VecDeque<SseEvent>,
    /// Failed connection attempts in a row.
    failures: u32,
    /// Whether the next connection is a reconnection (and waits first).
    reconnecting: bool,
    reconnects: u32,
    done: bool,
}

impl EventStream {
    /// Follows `url` (nothing is sent until the first [`EventStream::next`]).
    pub fn new(
        http: reqwest::Client,
        url: Url,
        token: Option<String>,
        policy: ReconnectPolicy,
    ) -> Self {
        EventStream {
            http,
            url,
            token,
            policy,
            parser: SseParser::new(),
            body: None,
            queue: VecDeque::new(),
            failures: 0,
            reconnecting: false,
            reconnects: 0,
            done: false,
        }
    }

    /// Resumes after this event id, as if it had been received.
    pub fn resume_after(mut self, last_event_id: impl Into<String>) -> Self {
        self.parser.last_id = last_event_id.into();
        self.parser.id_buffer.clone_from(&self.parser.last_id);
        self
    }

    /// How many times the stream reconnected.
    pub fn reconnects(&self) -> u32 {
        self.reconnects
    }

    /// The id of the last event received.
    pub fn last_event_id(&self) -> Option<&str> {
        self.parser.last_event_id()
    }

    /// The next event; `None` once the server ended the stream for good
    /// (204) or after an error was returned. Errors are returned when the
    /// service refuses the stream, or when reconnecting failed
    /// [`ReconnectPolicy::max_failures`] times in a row.
    pub async fn next(&mut self) -> Option<Result<SseEvent, ClientError>> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Some(Ok(ev));
            }
            if self.done {
                return None;
            }
            let Some(body) = self.body.as_mut() else {
                if let Err(e) = self.connect().await {
                    self.done = true;
                    return Some(Err(e));
                }
                continue;
            };
            match tokio::time::timeout(self.policy.idle_timeout, body.next()).await {
                Ok(Some(Ok(chunk))) => match self.parser.push(&chunk) {
                    Ok(events) => self.queue.extend(events),
                    Err(e) => {
                        self.done = true;
                        self.body = None;
                        return Some(Err(ClientError::Decode {
                            url: self.url.to_string(),
                            message: e.to_string(),
                        }));
                    }
                },
                // Dropped, ended by the server, or silent too long: resume.
                Ok(Some(Err(e))) => {
                    tracing::debug!(error = %error_chain(&e), "event stream dropped");
                    self.drop_connection();
                }
                Ok(None) | Err(_) => self.drop_connection(),
            }
        }
    }

    fn drop_connection(&mut self) {
        self.body = None;
        self.parser.reset_connection();
        self.reconnecting = true;
    }

    fn delay(&self) -> Duration {
        let base = self.parser.retry().unwrap_or(self.policy.delay);
        let factor = 2u32.saturating_pow(self.failures.min(16));
        base.saturating_mul(factor)
            .min(self.policy.max_delay.max(base))
    }

    /// Connects (waiting first if this is a reconnection), retrying
    /// transient failures; `Ok` once a body is open or the stream is over.
    async fn connect(&mut self) -> Result<(), ClientError> {
        loop {
            if self.reconnecting {
                tokio::time::sleep(self.delay()).await;
                self.reconnects += 1;
            }
            self.reconnecting = true;
            let mut req = self
                .http
                .get(self.url.clone())
                .header(header::ACCEPT, "text/event-stream")
                .header(header::CACHE_CONTROL, "no-cache");
            if let Some(t) = &self.token {
                req = req.bearer_auth(t);
            }
            if let Some(id) = self.parser.last_event_id() {
                req = req.header("Last-Event-ID", id);
            }
            let failure = match req.send().await {
                Ok(resp) if resp.status() == StatusCode::NO_CONTENT => {
                    // The server says: do not reconnect.
                    self.done = true;
                    return Ok(());
                }
                Ok(resp) if resp.status().is_success() => {
                    let content_type = resp
                        .headers()
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    if !content_type.starts_with("text/event-stream") {
                        return Err(ClientError::Decode {
                            url: self.url.to_string(),
                            message: format!(
                                "expected an event stream, got content type '{content_type}'"
                            ),
                        });
                    }
                    self.failures = 0;
                    self.parser.reset_connection();
                    self.body = Some(resp.bytes_stream().map_ok(|b| b.to_vec()).boxed());
                    return Ok(());
                }
                Ok(resp) => {
                    let status = resp.status();
                    let err = ClientError::from_response(resp, &self.url).await;
                    let transient = status.is_server_error()
                        || status == StatusCode::REQUEST_TIMEOUT
                        || status == StatusCode::TOO_MANY_REQUESTS;
                    if !transient {
                        return Err(err);
                    }
                    err
                }
                Err(e) => ClientError::transport(&self.url, &e),
            };
            self.failures += 1;
            if self.failures >= self.policy.max_failures {
                return Err(failure);
            }
            tracing::debug!(error = %failure, failures = self.failures, "event stream reconnect failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ev(id: Option<&str>, event: &str, data: &str) -> SseEvent {
        SseEvent {
            id: id.map(str::to_owned),
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    /// Feeds `chunks` one by one, collecting every event.
    fn parse(chunks: &[&[u8]]) -> (Vec<SseEvent>, SseParser) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.push(c).expect("push"));
        }
        (out, p)
    }

    const STREAM: &str = "id: 1\nevent: task.queued\ndata: {\"seq\":1}\n\n\
                          : keep-alive\n\n\
                          id: 2\nevent: task.dispatched\ndata: line one\ndata: line two\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            ev(Some("1"), "task.queued", "{\"seq\":1}"),
            ev(Some("2"), "task.dispatched", "line one\nline two"),
        ]
    }

    #[test]
    fn whole_stream_in_one_chunk() {
        let (events, p) = parse(&[STREAM.as_bytes()]);
        assert_eq!(events, expected());
        assert_eq!(p.last_event_id(), Some("2"));
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for i in 0..=bytes.len() {
            let (events, _) = parse(&[&bytes[..i], &bytes[i..]]);
            assert_eq!(events, expected(), "split at {i}");
        }
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse(&single).0, expected());
    }

    #[test]
    fn crlf_and_cr_line_endings_even_split_between_cr_and_lf() {
        let crlf = STREAM.replace('\n', "\r\n");
        let cr = STREAM.replace('\n', "\r");
        for s in [&crlf, &cr] {
            let bytes = s.as_bytes();
            for i in 0..=bytes.len() {
                let (events, _) = parse(&[&bytes[..i], &bytes[i..]]);
                assert_eq!(events, expected(), "split at {i} of {s:?}");
            }
        }
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let s = "data: café ✓\n\n".as_bytes();
        let at = s.iter().position(|b| *b == 0xE2).expect("✓") + 1;
        let (events, _) = parse(&[&s[..at], &s[at..]]);
        assert_eq!(events, vec![ev(None, "message", "café ✓")]);
    }

    #[test]
    fn comments_and_keep_alives_dispatch_nothing() {
        let (events, p) = parse(&[b": hello\n\n:\n\n: ping\n"]);
        assert!(events.is_empty());
        assert_eq!(p.last_event_id(), None);
    }

    #[test]
    fn field_rules() {
        let (events, p) = parse(&[b"\xEF\xBB\xBFdata:no space\n\n\
                data\n\n\
                data:  two spaces\nunknown: x\nevent\n\n\
                id: 7\n\n\
                retry: 2500\nretry: soon\ndata: after retry\n\n\
                id: bad\0id\ndata: x\n\n"]);
        assert_eq!(
            events,
            vec![
                ev(None, "message", "no space"),
                // `data` alone is an empty data line: an event with empty data.
                ev(None, "message", ""),
                ev(None, "message", " two spaces"),
                // `id: 7` alone dispatches nothing but sets the id.
                ev(Some("7"), "message", "after retry"),
                // An id with NUL is ignored.
                ev(Some("7"), "message", "x"),
            ]
        );
        assert_eq!(p.retry(), Some(Duration::from_millis(2500)));
        assert_eq!(p.last_event_id(), Some("7"));
    }

    #[test]
    fn event_type_does_not_leak_into_the_next_event() {
        let (events, _) = parse(&[b"event: a\ndata: 1\n\ndata: 2\n\nevent: b\n\ndata: 3\n\n"]);
        assert_eq!(
            events,
            vec![
                ev(None, "a", "1"),
                ev(None, "message", "2"),
                ev(None, "message", "3")
            ]
        );
    }

    #[test]
    fn a_partial_event_is_dropped_on_reconnect_and_not_counted_as_received() {
        let mut p = SseParser::new();
        assert_eq!(
            p.push(b"id: 3\ndata: done\n\nid: 4\ndata: half")
                .expect("push"),
            vec![ev(Some("3"), "message", "done")]
        );
        // Event 4 never completed: resume after 3.
        assert_eq!(p.last_event_id(), Some("3"));
        p.reset_connection();
        assert_eq!(p.last_event_id(), Some("3"));
        assert_eq!(
            p.push(b"id: 4\ndata: whole\n\n").expect("push"),
            vec![ev(Some("4"), "message", "whole")]
        );
    }

    #[test]
    fn oversized_lines_are_refused() {
        let mut p = SseParser::new();
        let big = vec![b'a'; MAX_EVENT_BYTES];
        assert!(p.push(b"data: ").is_ok());
        assert_eq!(p.push(&big), Err(EventTooLarge));
    }

    mod reconnect {
        use wiremock::{
            Match, Mock, MockServer, Request, ResponseTemplate,
            matchers::{header, method, path},
        };

        use super::*;

        struct NoLastEventId;
        impl Match for NoLastEventId {
            fn matches(&self, r: &Request) -> bool {
                !r.headers.contains_key("last-event-id")
            }
        }

        fn sse(body: &str) -> ResponseTemplate {
            ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), "text/event-stream")
        }

        fn fast() -> ReconnectPolicy {
            ReconnectPolicy {
                delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
                max_failures: 3,
                idle_timeout: Duration::from_secs(5),
            }
        }

        async fn next(s: &mut EventStream) -> SseEvent {
            tokio::time::timeout(Duration::from_secs(10), s.next())
                .await
                .expect("event in time")
                .expect("stream open")
                .expect("event")
        }

        #[tokio::test]
        async fn resumes_after_the_last_event_id_when_the_connection_ends() {
            let server = MockServer::start().await;
            Mock::given(method("GET"))
                .and(path("/events"))
                .and(NoLastEventId)
                .and(header("accept", "text/event-stream"))
                .and(header("authorization", "Bearer t0k"))
                .respond_with(sse(
                    "retry: 10\nid: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: cut",
                ))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(method("GET"))
                .and(path("/events"))
                .and(header("last-event-id", "2"))
                .and(header("authorization", "Bearer t0k"))
                .respond_with(sse("id: 3\ndata: c\n\n"))
                .expect(1)
                .mount(&server)
                .await;
            Mock::given(method("GET"))
                .and(path("/events"))
                .and(header("last-event-id", "3"))
                .respond_with(ResponseTemplate::new(204))
                .mount(&server)
                .await;
            let url = Url::parse(&format!("{}/events", server.uri())).expect("url");
            let mut s = EventStream::new(reqwest::Client::new(), url, Some("t0k".into()), fast());
            let got = [next(&mut s).await, next(&mut s).await, next(&mut s).await];
            let data: Vec<&str> = got.iter().map(|e| e.data.as_str()).collect();
            assert_eq!(data, ["a", "b", "c"]);
            assert_eq!(s.last_event_id(), Some("3"));
            assert!(s.next().await.is_none(), "204 ends the stream");
            assert_eq!(s.reconnects(), 2);
        }

        #[tokio::test]
        async fn a_refusal_is_an_error_not_a_reconnect() {
            let server = MockServer::start().await;
            Mock::given(method("GET"))
                .respond_with(ResponseTemplate::new(404).set_body_json(serde_json::json!(
                    {"error": {"code": "not_found", "message": "no mission", "details": null}}
                )))
                .expect(1)
                .mount(&server)
                .await;
            let url = Url::parse(&server.uri()).expect("url");
            let mut s = EventStream::new(reqwest::Client::new(), url, None, fast());
            match s.next().await {
                Some(Err(ClientError::Api { status, code, .. })) => {
                    assert_eq!((status, code.as_str()), (404, "not_found"));
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
            assert!(s.next().await.is_none());
        }

        #[tokio::test]
        async fn gives_up_after_repeated_server_errors() {
            let server = MockServer::start().await;
            Mock::given(method("GET"))
                .respond_with(ResponseTemplate::new(503).set_body_string("down"))
                .expect(3)
                .mount(&server)
                .await;
            let url = Url::parse(&server.uri()).expect("url");
            let mut s = EventStream::new(reqwest::Client::new(), url, None, fast());
            match s.next().await {
                Some(Err(ClientError::Http { status: 503, .. })) => {}
                other => panic!("expected the last 503, got {other:?}"),
            }
        }

        #[tokio::test]
        async fn a_silent_connection_is_replaced() {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            // A server that sends one event and then neither data nor keep-alives.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = tokio::spawn(async move {
                let mut held = Vec::new();
                let mut requests = Vec::new();
                for body in ["id: 1\ndata: a\n\n", "id: 2\ndata: b\n\n"] {
                    let (mut sock, _) = listener.accept().await.expect("accept");
                    let mut buf = vec![0u8; 4096];
                    let n = sock.read(&mut buf).await.expect("read");
                    requests.push(String::from_utf8_lossy(&buf[..n]).to_lowercase());
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                transfer-encoding: chunked\r\n\r\n";
                    let chunk = format!("{:x}\r\n{body}\r\n", body.len());
                    sock.write_all(head.as_bytes()).await.expect("write");
                    sock.write_all(chunk.as_bytes()).await.expect("write");
                    held.push(sock);
                }
                requests
            });
            let url = Url::parse(&format!("http://{addr}/events")).expect("url");
            let mut policy = fast();
            policy.idle_timeout = Duration::from_millis(300);
            let mut s = EventStream::new(reqwest::Client::new(), url, None, policy);
            assert_eq!(next(&mut s).await.data, "a");
            assert_eq!(next(&mut s).await.data, "b");
            let requests = server.await.expect("server");
            assert!(!requests[0].contains("last-event-id"), "{}", requests[0]);
            assert!(requests[1].contains("last-event-id: 1"), "{}", requests[1]);
        }
    }
}
