//! Connection hygiene: the API's own accept loop (in place of `axum::serve`)
//! with a header-read timeout, an idle keep-alive timeout, a request-body
//! timeout, and caps on open connections overall and per client IP. A
//! connection over a cap is accepted and dropped at once, so neither the
//! listen backlog nor the open-file table fills up.

use std::{
    collections::HashMap,
    convert::Infallible,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, body::Body, extract::ConnectInfo};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{Notify, watch},
    task::JoinSet,
    time::Instant,
};
use tower::ServiceExt;
use tower_http::timeout::TimeoutBody;

/// Default time from accept (or from the first byte of a later request) to a complete request head.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default longest pause between two pieces of a request body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a connection with no request in flight may stay silent.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default deadline of a request: above the LLM planner's (60 s a call, a
/// repair or two), far below "for ever" when a database stops answering.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Default cap on open connections (lowered to fit the open-file limit).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default cap on open connections from one client IP address.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 256;
/// File descriptors kept out of the connection cap: the database pool,
/// outbound calls (dispatches, webhooks, the LLM), the listener and logs.
pub const RESERVED_FDS: u64 = 256;
/// Pause after an accept error such as EMFILE, so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// At most one log line per this period about refused connections.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// Timeouts and caps of client connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From accept, or from the first byte of a later request on a kept-alive
    /// connection, to the end of the request head; then the connection is closed.
    pub header_read_timeout: Duration,
    /// Longest pause between two pieces of a request body (the request then fails).
    pub body_timeout: Duration,
    /// How long a connection with no request in flight may stay silent. A
    /// response being sent (an SSE stream) is never idle.
    pub idle_timeout: Duration,
    /// Open connections overall; lowered at start to fit the open-file limit.
    pub max_connections: usize,
    /// Open connections per client IP address.
    pub max_connections_per_ip: usize,
    /// From a request's head to its answer: past it the request is answered
    /// 503 and its work dropped (a started event stream is exempt).
    pub request_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

impl ConnectionLimits {
    /// These limits with the overall cap lowered to fit an open-file limit of
    /// `fd_limit` (None: unlimited or unknown), keeping [`RESERVED_FDS`] free.
    pub fn fitted_to(mut self, fd_limit: Option<u64>) -> Self {
        if let Some(limit) = fd_limit {
            let budget = if limit > 2 * RESERVED_FDS {
                limit - RESERVED_FDS
            } else {
                limit / 2
            };
            let budget = usize::try_from(budget).unwrap_or(usize::MAX).max(1);
            if self.max_connections > budget {
                tracing::warn!(
                    configured = self.max_connections,
                    fd_limit = limit,
                    lowered_to = budget,
                    "max connections lowered to fit the open-file limit"
                );
                self.max_connections = budget;
            }
        }
        self
    }
}

/// Raises this process's soft open-file limit to its hard limit where the
/// system allows; returns the soft limit in force afterwards (None: unlimited).
pub fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let (Some(soft), hard) = (now.current, now.maximum) else {
        return None;
    };
    // An unlimited hard limit is not a valid soft one on every system: stay finite.
    let target = hard.unwrap_or(1 << 20);
    if target <= soft {
        return Some(soft);
    }
    let raised = Rlimit {
        current: Some(target),
        maximum: hard,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            tracing::info!(from = soft, to = target, "raised the open-file limit");
            Some(target)
        }
        Err(e) => {
            tracing::warn!(limit = soft, error = %e, "could not raise the open-file limit");
            Some(soft)
        }
    }
}

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Overall,
    PerIp,
}

/// Open connections, overall and per client IP.
#[derive(Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// The two caps, and the refusals not yet reported in the log.
struct ConnLimiter {
    max_total: usize,
    max_per_ip: usize,
    counts: Mutex<Counts>,
    refused_overall: AtomicU64,
    refused_per_ip: AtomicU64,
    accept_errors: AtomicU64,
    last_report: Mutex<Option<Instant>>,
}

/// One admitted connection; gives its place back when dropped.
struct Permit {
    limiter: Arc<ConnLimiter>,
    ip: IpAddr,
}

impl ConnLimiter {
    fn new(max_total: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(ConnLimiter {
            max_total,
            max_per_ip,
            counts: Mutex::default(),
            refused_overall: AtomicU64::new(0),
            refused_per_ip: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            last_report: Mutex::new(None),
        })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent even if a holder panicked: each update is one step.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, Refusal> {
        // `::ffff:a.b.c.d` is the IPv4 client it maps.
        let ip = ip.to_canonical();
        let mut counts = self.counts();
        if counts.total >= self.max_total {
            return Err(Refusal::Overall);
        }
        let of_ip = counts.per_ip.entry(ip).or_insert(0);
        if *of_ip >= self.max_per_ip {
            return Err(Refusal::PerIp);
        }
        *of_ip += 1;
        counts.total += 1;
        Ok(Permit {
            limiter: self.clone(),
            ip,
        })
    }

    fn open(&self) -> usize {
        self.counts().total
    }

    /// Counts a refusal and logs the counts at most once per [`REPORT_EVERY`].
    fn refused(&self, why: Refusal) {
        match why {
            Refusal::Overall => &self.refused_overall,
            Refusal::PerIp => &self.refused_per_ip,
        }
        .fetch_add(1, Ordering::Relaxed);
        self.report();
    }

    fn report(&self) {
        let now = Instant::now();
        {
            let mut last = self.last_report.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| now.duration_since(at) < REPORT_EVERY) {
                return;
            }
            *last = Some(now);
        }
        let overall = self.refused_overall.swap(0, Ordering::Relaxed);
        let per_ip = self.refused_per_ip.swap(0, Ordering::Relaxed);
        let accept_errors = self.accept_errors.swap(0, Ordering::Relaxed);
        tracing::warn!(
            refused_at_overall_cap = overall,
            refused_at_per_ip_cap = per_ip,
            accept_errors,
            open = self.open(),
            max_connections = self.max_total,
            max_connections_per_ip = self.max_per_ip,
            "connections refused or failed since the last report (at most one report per {}s)",
            REPORT_EVERY.as_secs()
        );
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.limiter.counts();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_ip.remove(&self.ip);
            }
        }
    }
}

/// Where a connection is: waiting for a request head (since), idle between
/// requests (since), or with requests in flight (how many).
#[derive(Debug, Clone, Copy)]
enum Phase {
    Head(Instant),
    Idle(Instant),
    Busy(usize),
}

/// The phase of one connection, shared by its socket, its service and its watchdog.
struct Tracker {
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Tracker {
    fn new() -> Arc<Self> {
        Arc::new(Tracker {
            // A new connection owes its first request head at once.
            phase: Mutex::new(Phase::Head(Instant::now())),
            changed: Notify::new(),
        })
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes arrived: an idle connection starts a request, and its head is now due.
    fn on_read(&self) {
        let mut phase = self.phase();
        if let Phase::Idle(_) = *phase {
            *phase = Phase::Head(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    fn request_started(&self) {
        let mut phase = self.phase();
        *phase = match *phase {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        };
    }

    fn request_ended(&self) {
        let mut phase = self.phase();
        *phase = match *phase {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        };
        drop(phase);
        self.changed.notify_one();
    }

    /// When the connection is to be closed unless something happens first.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        match *self.phase() {
            Phase::Head(since) => Some(since + limits.header_read_timeout),
            Phase::Idle(since) => Some(since + limits.idle_timeout),
            Phase::Busy(_) => None,
        }
    }
}

/// Marks a request in flight until the response body is done or dropped.
struct InFlight(Arc<Tracker>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A response body that keeps its request in flight while it is sent.
struct TrackedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The client socket: tells the tracker when bytes arrive.
struct TrackedIo {
    inner: TcpStream,
    tracker: Arc<Tracker>,
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.tracker.on_read();
        }
        polled
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Errors of one connection that does not affect the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    )
}

/// Serves `router` on `listener` until `stop` turns true, then stops
/// accepting, lets each connection finish its requests (idle ones close at
/// once) and returns when all are closed. Dropping the returned future (the
/// caller's grace ran out) closes the connections still open.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let limiter = ConnLimiter::new(limits.max_connections, limits.max_connections_per_ip);
    let mut builder = http1::Builder::new();
    builder.keep_alive(true);
    let builder = Arc::new(builder);
    // Owning the connection tasks lets a dropped `serve` cut them all off.
    let mut connections = JoinSet::new();
    let for_connections = stop.clone();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, remote)) => match limiter.try_acquire(remote.ip()) {
                Ok(permit) => {
                    connections.spawn(serve_connection(
                        stream,
                        remote,
                        permit,
                        builder.clone(),
                        router.clone(),
                        limits,
                        for_connections.clone(),
                    ));
                }
                Err(why) => {
                    // Closed at once: the client sees the connection end
                    // before any response, and no descriptor stays held.
                    drop(stream);
                    limiter.refused(why);
                }
            },
            Err(e) if is_connection_error(&e) => {}
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS…: retrying at once would spin.
                limiter.accept_errors.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "accept failed; backing off");
                limiter.report();
                tokio::select! {
                    _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                    _ = stop.wait_for(|stop| *stop) => break,
                }
            }
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Serves one connection, closing it when its head or idle deadline passes.
async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    permit: Permit,
    builder: Arc<http1::Builder>,
    router: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let tracker = Tracker::new();
    // A connection that has sent nothing costs only its socket and this small
    // task: hyper's state and buffers are allocated once bytes (or EOF) arrive.
    let mut first = [0u8; 1];
    tokio::select! {
        // A peek, not `readable()`: readiness alone may be stale, a peeked byte (or EOF) is not.
        peeked = stream.peek(&mut first) => if peeked.is_err() { return; },
        () = tokio::time::sleep(limits.header_read_timeout) => return,
        _ = stop.wait_for(|stop| *stop) => return,
    }
    // Its own statement: a temporary in the awaiting one would keep the
    // unboxed future's space in this task for the connection's life.
    let http = Box::pin(serve_http(
        stream, remote, permit, tracker, builder, router, limits, stop,
    ));
    http.await;
}

/// The HTTP part of [`serve_connection`].
#[allow(clippy::too_many_arguments)]
async fn serve_http(
    stream: TcpStream,
    remote: SocketAddr,
    _permit: Permit,
    tracker: Arc<Tracker>,
    builder: Arc<http1::Builder>,
    router: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(TrackedIo {
        inner: stream,
        tracker: tracker.clone(),
    });
    let service_tracker = tracker.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        service_tracker.request_started();
        let in_flight = InFlight(service_tracker.clone());
        let mut request =
            request.map(|body| Body::new(TimeoutBody::new(limits.body_timeout, body)));
        // What `into_make_service_with_connect_info` gave: the rate limiter keys anonymous callers by IP.
        request.extensions_mut().insert(ConnectInfo(remote));
        let router = router.clone();
        async move {
            let response = match router.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|inner| TrackedBody {
                inner,
                _in_flight: in_flight,
            }))
        }
    });
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    let mut stopping = false;
    loop {
        let deadline = tracker
            .deadline(&limits)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                // Idle connections close now; busy ones after their response.
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(deadline) => {
                if tracker.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    // No request is in flight, so dropping the connection loses nothing.
                    tracing::debug!(phase = ?*tracker.phase(), "closing a connection past its deadline");
                    return;
                }
            }
            () = tracker.changed.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_overall_and_per_ip_and_free_on_drop() {
        let limiter = ConnLimiter::new(3, 2);
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let a1 = limiter.try_acquire(a).expect("first");
        let a2 = limiter.try_acquire(a).expect("second");
        assert_eq!(limiter.try_acquire(a).err(), Some(Refusal::PerIp));
        // The IPv4-mapped form is the same client.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert_eq!(limiter.try_acquire(mapped).err(), Some(Refusal::PerIp));
        let b1 = limiter.try_acquire(b).expect("other ip");
        assert_eq!(limiter.try_acquire(b).err(), Some(Refusal::Overall));
        drop(a1);
        let a3 = limiter.try_acquire(a).expect("freed");
        drop((a2, a3, b1));
        assert_eq!(limiter.open(), 0);
        assert!(limiter.counts().per_ip.is_empty());
    }

    #[test]
    fn the_overall_cap_fits_the_fd_limit() {
        let limits = ConnectionLimits::default();
        assert_eq!(limits.fitted_to(None).max_connections, 4096);
        assert_eq!(limits.fitted_to(Some(1 << 20)).max_connections, 4096);
        assert_eq!(
            limits.fitted_to(Some(1024)).max_connections,
            1024 - RESERVED_FDS as usize
        );
        assert_eq!(limits.fitted_to(Some(300)).max_connections, 150);
    }
}
