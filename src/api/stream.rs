//! Server-Sent Events: a mission's event log as a live stream.
//!
//! The event table is the source, so any replica serves any stream and a
//! reconnecting client resumes exactly where it left off: each event's SSE
//! id is its gap-free per-mission `seq`, and `Last-Event-ID` (or `?after=`)
//! says where to continue. Streams wake on the engine's `NOTIFY` (one
//! listener per process, shared through a watch channel) and re-check every
//! second anyway. Events are read from the database only as the client
//! pulls them, so a slow client cannot grow server memory beyond one page.

use std::{collections::VecDeque, convert::Infallible, time::Duration};

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::watch;
use uuid::Uuid;

use crate::store::events::{self, EventView};

/// Events read per database round trip.
const PAGE: i64 = 200;
/// Longest a stream waits without re-checking the table.
const RECHECK: Duration = Duration::from_secs(1);

/// Starts this process's one listener on the engine's wake-up channel and
/// returns the receiver streams wait on (it ticks on every notification).
pub fn spawn_wake_listener(pool: PgPool) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(0u64);
    tokio::spawn(async move {
        loop {
            let listener = async {
                let mut l = PgListener::connect_with(&pool).await?;
                l.listen("coordinator_wake").await?;
                Ok::<_, sqlx::Error>(l)
            }
            .await;
            match listener {
                Ok(mut l) => loop {
                    match l.recv().await {
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

struct Cursor {
    pool: PgPool,
    workspace_id: Uuid,
    run_id: Uuid,
    after: i64,
    pending: VecDeque<EventView>,
    wake: watch::Receiver<u64>,
}

/// The mission's events after `after`, then every new one as it is written.
pub fn mission_events(
    pool: PgPool,
    workspace_id: Uuid,
    run_id: Uuid,
    after: i64,
    wake: watch::Receiver<u64>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let cursor = Cursor {
        pool,
        workspace_id,
        run_id,
        after,
        pending: VecDeque::new(),
        wake,
    };
    let stream = futures::stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some(ev) = c.pending.pop_front() {
                c.after = ev.seq;
                let event = Event::default()
                    .id(ev.seq.to_string())
                    .event(ev.kind.clone())
                    .json_data(&ev)
                    .unwrap_or_else(|_| Event::default().comment("unserializable event"));
                return Some((Ok(event), c));
            }
            // Mark what we have seen before reading, so a notification that
            // arrives during the read is not lost.
            c.wake.borrow_and_update();
            match events::list_for_mission(&c.pool, c.workspace_id, c.run_id, c.after, PAGE).await {
                Ok(page) if !page.is_empty() => c.pending.extend(page),
                Ok(_) => {
                    tokio::select! {
                        changed = c.wake.changed() => {
                            if changed.is_err() {
                                tokio::time::sleep(RECHECK).await;
                            }
                        }
                        _ = tokio::time::sleep(RECHECK) => {}
                    }
                }
                Err(e) => {
                    // End the stream; the client reconnects with Last-Event-ID.
                    tracing::warn!(mission = %c.run_id, error = %e, "event stream read failed");
                    return None;
                }
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
