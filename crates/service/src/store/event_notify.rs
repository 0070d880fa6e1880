//! Waking the event log's listeners (`coordinator_events`) without the
//! commit-time lock a `NOTIFY` takes.
//!
//! PostgreSQL serializes the commits of notifying transactions on one
//! database-wide lock held through the commit's WAL flush. The trigger on
//! the event log notifies in every transaction that writes events, so the
//! engine's claims and report batches used to commit one at a time. They
//! now begin with [`DEFERRED_BEGIN`], which tells the trigger to stay quiet,
//! and after their commit poke this replica's [`Notifier`]: one task that
//! sends a single `NOTIFY` for however many commits poked it meanwhile, on a
//! connection of its own with `synchronous_commit = off` (a wake-up needs no
//! durability), so the lock is held for microseconds and by one session per
//! replica. A notification lost to a crash is covered by the listeners' own
//! periodic re-check.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::Duration,
};

use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::{Notify, mpsc};

/// `BEGIN` for a transaction whose event writes are announced afterwards
/// by [`Notifier::committed`] instead of by the trigger.
pub const DEFERRED_BEGIN: &str = "BEGIN; SET LOCAL coordinator.events_notify = 'deferred'";

/// The payload of the notifier's notifications (the trigger's are empty;
/// listeners read neither, but it tells them apart in tests).
pub const DEFERRED_PAYLOAD: &str = "deferred";

/// How long the notifier waits before reconnecting after an error.
const RECONNECT: Duration = Duration::from_secs(1);

/// What a notification owes: the event log's listeners, and with [`WAKE`]
/// also every replica's dispatcher (`coordinator_wake`).
const EVENTS: u8 = 1;
/// See [`EVENTS`].
const WAKE: u8 = 2;

/// This replica's coalescing sender of `coordinator_events` (and
/// `coordinator_wake`) notifications; it stops (and closes its connection)
/// when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Notifier {
    poke: mpsc::Sender<()>,
    owed: Arc<AtomicU8>,
    /// This replica's own dispatcher, woken in-process by [`Notifier::work_ready`]
    /// without waiting for the round trip through the server.
    local: Option<Arc<Notify>>,
}

impl Notifier {
    /// Starts the sender over its own connection to `pool`'s database;
    /// `local` is this replica's dispatcher, if one runs here.
    pub fn start(pool: &PgPool, local: Option<Arc<Notify>>) -> Notifier {
        // Capacity one: pokes while a notification is owed coalesce into it.
        let (poke, mut pokes) = mpsc::channel::<()>(1);
        let owed = Arc::new(AtomicU8::new(0));
        let (pool, bits) = (pool.clone(), owed.clone());
        tokio::spawn(async move {
            while !pool.is_closed() {
                let sent = async {
                    // Read on every reconnect: after a failover the pool
                    // points at the new primary (see `db::follow`).
                    let options = pool.connect_options();
                    let mut conn = PgConnection::connect_with(&options).await?;
                    sqlx::query("SET synchronous_commit = off")
                        .execute(&mut conn)
                        .await?;
                    loop {
                        if bits.load(Ordering::Acquire) == 0 && pokes.recv().await.is_none() {
                            return Ok::<(), sqlx::Error>(());
                        }
                        let due = bits.swap(0, Ordering::AcqRel);
                        if due == 0 {
                            continue;
                        }
                        let sent = sqlx::query(
                            "SELECT pg_notify('coordinator_events', $1),
                                    CASE WHEN $2 THEN pg_notify('coordinator_wake', '') END",
                        )
                        .bind(DEFERRED_PAYLOAD)
                        .bind(due & WAKE != 0)
                        .execute(&mut conn)
                        .await;
                        if let Err(e) = sent {
                            // Still owed after reconnecting.
                            bits.fetch_or(due, Ordering::AcqRel);
                            return Err(e);
                        }
                    }
                }
                .await;
                match sent {
                    Ok(()) => return,
                    // Listeners re-check on their own meanwhile.
                    Err(e) => {
                        tracing::debug!(error = %e, "event notifier connection lost; reconnecting");
                        tokio::time::sleep(RECONNECT).await;
                    }
                }
            }
        });
        Notifier { poke, owed, local }
    }

    /// Announces a commit that may have written events.
    pub fn committed(&self) {
        self.owe(EVENTS);
    }

    /// Announces a commit that wrote events and made tasks ready: every
    /// replica's dispatcher is woken too.
    pub fn work_ready(&self) {
        if let Some(local) = &self.local {
            local.notify_one();
        }
        self.owe(EVENTS | WAKE);
    }

    fn owe(&self, what: u8) {
        self.owed.fetch_or(what, Ordering::AcqRel);
        // Full means the sender is already due to look, which covers this.
        let _ = self.poke.try_send(());
    }
}

/// `BEGIN` of the engine's hot transactions whose events the trigger
/// announces; see [`begin`].
pub const HOT_BEGIN: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";

/// [`HOT_BEGIN`] with the event writes announced by [`Notifier::committed`].
pub const HOT_DEFERRED_BEGIN: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; \
     SET LOCAL coordinator.events_notify = 'deferred'";

/// Begins one of the hot transactions (claims, report batches, approvals)
/// on `pool`: deferred when `notifier` is set (its caller then calls
/// [`Notifier::committed`] after the commit), announced by the trigger at
/// commit otherwise.
///
/// Either way its statements run on generic plans. These transactions run
/// the same few prepared statements thousands of times a minute, and with
/// the default `plan_cache_mode` PostgreSQL keeps planning their array
/// (`UNNEST`) statements afresh on every execution, 0.3–0.7 ms each; a
/// generic plan is made once per connection. Every statement's generic plan
/// can use an index (`tests/it/deploy.rs`, `every_query_can_use_an_index`).
/// Measured: +30 % tasks/s and −20 % chain step time (`docs/performance-history.md`).
pub async fn begin(
    pool: &PgPool,
    notifier: Option<&Notifier>,
) -> sqlx::Result<Transaction<'static, Postgres>> {
    pool.begin_with(hot_begin(notifier)).await
}

/// [`begin`] on a connection the caller holds (and keeps after the commit).
pub async fn begin_on<'c>(
    conn: &'c mut PgConnection,
    notifier: Option<&Notifier>,
) -> sqlx::Result<Transaction<'c, Postgres>> {
    conn.begin_with(hot_begin(notifier)).await
}

fn hot_begin(notifier: Option<&Notifier>) -> &'static str {
    match notifier {
        Some(_) => HOT_DEFERRED_BEGIN,
        None => HOT_BEGIN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_transactions_defer_exactly_as_the_trigger_expects() {
        let deferred = DEFERRED_BEGIN.trim_start_matches("BEGIN; ");
        assert!(HOT_DEFERRED_BEGIN.ends_with(deferred));
        assert!(HOT_DEFERRED_BEGIN.starts_with(HOT_BEGIN));
        assert!(!HOT_BEGIN.contains("events_notify"));
    }
}
