//! Server-Sent Events: a mission's, or a whole workspace's, event log as a live stream.
//!
//! The event table is the source, so any replica serves any stream and a
//! reconnecting client resumes exactly where it left off: on a mission
//! stream each event's SSE id is its gap-free per-mission `seq`; on the
//! workspace stream it is the event id, and the stream reads in commit order
//! (see [`events::list_for_workspace`]). `Last-Event-ID` (or `?after=`) says
//! where to continue. Streams wake on a `NOTIFY` that every
//! event-writing commit sends (one listener per process, shared through a
//! watch channel) and re-check every second anyway. Events are read from the database only as the client
//! pulls them, so a slow client cannot grow server memory beyond one page.
//!
//! The rule for a subscriber that stops reading: it is neither dropped nor
//! buffered for. Its stream holds at most one page ([`PAGE`] events) read
//! ahead, plus what the socket buffers take; once it reads again it carries
//! on where it stopped (events pruned meanwhile are skipped, as on any
//! resume). Its connection stays open (a response in flight is never idle),
//! so the connection caps bound how many such streams one client holds.
//! `tests/it/stream_fuzz/crowd.rs` holds the service to that bound.
//!
//! A stream lives only as long as the token that opened it: it ends once
//! the token expires, and a re-check every [`TOKEN_RECHECK`] ends it once the
//! token is revoked; the client's reconnect then gets 401.

use std::{
    collections::VecDeque,
    convert::Infallible,
    time::{Duration, Instant},
};

use axum::{
    http::{HeaderMap, header},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures::Stream;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::watch;
use uuid::Uuid;

use crate::{
    auth::{self, Principal},
    error::ApiError,
    store::events::{self, EventFilter, EventView, LogPosition},
};

/// Events read per database round trip.
const PAGE: i64 = 200;
/// Longest a stream waits without re-checking the table.
const RECHECK: Duration = Duration::from_secs(1);
/// How soon a client should reconnect after losing the stream (the SSE `retry:` field).
const RECONNECT: Duration = Duration::from_secs(1);
/// Comment lines sent on a quiet stream so proxies and clients keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a stream asks the database whether its token was revoked (one
/// primary-key read per stream; expiry needs no read).
pub const TOKEN_RECHECK: Duration = Duration::from_secs(2);

/// Notified at the commit of every transaction that wrote events (a trigger
/// on the event log; see the `event_notify` migration).
pub const EVENTS_CHANNEL: &str = "coordinator_events";

/// Starts this process's one listener on [`EVENTS_CHANNEL`] and returns the
/// receiver streams (and the webhook pump) wait on; it ticks on every
/// notification, and stops (closing its connection) once every receiver is
/// gone, that is when the service that started it has stopped.
pub fn spawn_wake_listener(pool: PgPool) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    tokio::spawn(async move {
        loop {
            let listener = async {
                let mut l = PgListener::connect_with(&pool).await?;
                l.listen(EVENTS_CHANNEL).await?;
                Ok::<_, sqlx::Error>(l)
            }
            .await;
            match listener {
                Ok(mut l) => loop {
                    let got = tokio::select! {
                        got = l.recv() => got,
                        () = tx.closed() => return,
                    };
                    match got {
                        Ok(_) => {
                            tx.send_modify(|n| *n = n.wrapping_add(1));
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "event stream listener lost; reconnecting");
                            break;
                        }
                    }
                },
                Err(e) => tracing::debug!(error = %e, "event stream listener failed"),
            }
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(RECHECK).await;
        }
    });
    rx
}

/// Where a stream reads from, and how far it has read.
enum Source {
    /// One mission's log; the cursor (and SSE id) is the gap-free `seq`.
    Mission { run_id: Uuid, after: i64 },
    /// The workspace's commit-ordered log; the SSE id is the event id.
    Workspace {
        after: LogPosition,
        filter: EventFilter,
    },
}

impl Source {
    /// The next page of `(sse id, event)` after the cursor, moving the cursor.
    async fn page(
        &mut self,
        pool: &PgPool,
        workspace_id: Uuid,
    ) -> sqlx::Result<Vec<(i64, EventView)>> {
        match self {
            Source::Mission { run_id, after } => {
                let page =
                    events::list_for_mission(pool, workspace_id, *run_id, *after, PAGE).await?;
                // Mission events always have a seq.
                let page: Vec<(i64, EventView)> = page
                    .into_iter()
                    .map(|e| (e.seq.unwrap_or_default(), e))
                    .collect();
                if let Some((seq, _)) = page.last() {
                    *after = *seq;
                }
                Ok(page)
            }
            Source::Workspace { after, filter } => {
                let (page, reached) = events::list_for_workspace(
                    pool,
                    workspace_id,
                    *after,
                    filter,
                    PAGE,
                    PAGE as usize,
                )
                .await?;
                *after = reached;
                Ok(page.into_iter().map(|e| (e.event.id, e.event)).collect())
            }
        }
    }
}

struct Cursor {
    pool: PgPool,
    workspace_id: Uuid,
    who: Principal,
    token_checked: Instant,
    source: Source,
    pending: VecDeque<(i64, EventView)>,
    wake: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
    greeted: bool,
}

/// The mission's events after `after` (a `seq`), then every new one as it
/// is written, while `who`'s token stays valid.
pub fn mission_events(
    pool: PgPool,
    who: Principal,
    run_id: Uuid,
    after: i64,
    wake: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    serve(pool, who, Source::Mission { run_id, after }, wake, stop)
}

/// The workspace's events after `after` that match `filter`, in commit
/// order, then live, while `who`'s token stays valid; a 400 for a filter
/// the database cannot compare (see [`unreadable_filter`]). An attempt
/// token's stream is its own mission's (see [`confine_to_attempt`]).
pub fn workspace_events(
    pool: PgPool,
    who: Principal,
    after: LogPosition,
    mut filter: EventFilter,
    wake: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
) -> Response {
    if let Some(refusal) = unreadable_filter(&filter) {
        return refusal.into_response();
    }
    if let Err(refusal) = confine_to_attempt(&who, &mut filter) {
        return refusal.into_response();
    }
    serve(pool, who, Source::Workspace { after, filter }, wake, stop).into_response()
}

/// An attempt token acts inside its mission only (docs/agents.md): on the
/// workspace stream `mission` defaults to it and another mission is a 403,
/// as on the mission routes. Without this the stream of an attempt token
/// carried every mission of the workspace.
pub(crate) fn confine_to_attempt(
    who: &Principal,
    filter: &mut EventFilter,
) -> Result<(), ApiError> {
    let Some(scope) = who.attempt else {
        return Ok(());
    };
    match filter.mission_id {
        Some(mission) if mission != scope.mission_id => Err(ApiError::Forbidden(format!(
            "an attempt token acts inside mission {} only",
            scope.mission_id
        ))),
        _ => {
            filter.mission_id = Some(scope.mission_id);
            Ok(())
        }
    }
}

/// Why the database would refuse to read with `filter`, as the 400 to give
/// before the stream starts. A stream reads only after its `200` is sent, so
/// a read that fails on the input (PostgreSQL refuses a NUL character in
/// text, SQLSTATE 22021) would end every stream at once and send an
/// `EventSource` into reconnecting for ever; the JSON page of the same
/// request answers 400 (see `ApiError`'s conversion of that error).
fn unreadable_filter(filter: &EventFilter) -> Option<ApiError> {
    [
        ("agent", filter.agent_id.as_deref()),
        ("role", filter.agent_role.as_deref()),
    ]
    .into_iter()
    .find(|(_, text)| text.is_some_and(|t| t.contains('\0')))
    // The JSON page's answer to the same filter (PostgreSQL's refusal): 422.
    .map(|(field, _)| ApiError::Unprocessable {
        code: "unstorable_value",
        message: format!("{field} must not contain NUL characters (\\u0000)"),
        details: serde_json::json!({ "field": field }),
    })
}

fn serve(
    pool: PgPool,
    who: Principal,
    source: Source,
    wake: watch::Receiver<u64>,
    stop: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let cursor = Cursor {
        pool,
        workspace_id: who.workspace_id,
        who,
        token_checked: Instant::now(),
        source,
        pending: VecDeque::new(),
        wake,
        stop,
        greeted: false,
    };
    let stream = futures::stream::unfold(cursor, |mut c| async move {
        if !c.greeted {
            // Tell clients how soon to reconnect after a dropped connection.
            c.greeted = true;
            let hello = Event::default().retry(RECONNECT).comment("stream open");
            return Some((Ok(hello), c));
        }
        loop {
            if *c.stop.borrow() {
                // The server is stopping: end the stream; the client
                // reconnects (to another replica) with Last-Event-ID.
                return None;
            }
            if !c.token_still_valid().await {
                // Revoked or expired: end the stream; the reconnect gets 401.
                return None;
            }
            if let Some((id, ev)) = c.pending.pop_front() {
                let event = Event::default()
                    .id(id.to_string())
                    .event(ev.kind.clone())
                    .json_data(&ev)
                    .unwrap_or_else(|_| Event::default().comment("unserializable event"));
                return Some((Ok(event), c));
            }
            // Mark what we have seen before reading, so a notification that
            // arrives during the read is not lost.
            c.wake.borrow_and_update();
            match c.source.page(&c.pool, c.workspace_id).await {
                Ok(page) if !page.is_empty() => c.pending.extend(page),
                Ok(_) => {
                    tokio::select! {
                        changed = c.wake.changed() => {
                            if changed.is_err() {
                                tokio::time::sleep(RECHECK).await;
                            }
                        }
                        _ = c.stop.changed() => {}
                        _ = tokio::time::sleep(RECHECK) => {}
                    }
                }
                // The database is away: keep the stream open (keep-alive
                // comments go on) and read again shortly. Ending it would
                // send the client to a reconnect that gets 503, which an
                // EventSource takes as final.
                Err(e) if crate::db::unavailable(&e) => {
                    tracing::debug!(error = %e, "event stream waits for the database");
                    tokio::select! {
                        _ = c.stop.changed() => {}
                        _ = tokio::time::sleep(RECHECK) => {}
                    }
                }
                Err(e) => {
                    // End the stream; the client reconnects with Last-Event-ID.
                    tracing::warn!(error = %e, "event stream read failed");
                    return None;
                }
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

impl Cursor {
    /// Whether the stream's token still works: expiry is checked every
    /// time, revocation against the database every [`TOKEN_RECHECK`] (a
    /// failed read ends the stream too, except while the database is away).
    async fn token_still_valid(&mut self) -> bool {
        if self.who.expired_at(time::OffsetDateTime::now_utc()) {
            return false;
        }
        if self.token_checked.elapsed() < TOKEN_RECHECK {
            return true;
        }
        self.token_checked = Instant::now();
        match auth::still_valid(&self.pool, &self.who).await {
            Ok(valid) => valid,
            // Revocation cannot be read while the database is away; it is
            // read again [`TOKEN_RECHECK`] after it is back.
            Err(e) if crate::db::unavailable(&e) => true,
            Err(e) => {
                tracing::warn!(error = %e, "event stream token check failed");
                false
            }
        }
    }
}

/// Whether the client asked for an event stream rather than a JSON page.
pub fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// The `Last-Event-ID` a reconnecting client sent, if any; 400 when it is not an id.
pub fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    v.to_str()
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid(
                "Last-Event-ID",
                "Last-Event-ID must be an id this stream sent (a non-negative integer)",
            )
        })
}
