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

use std::time::Duration;

use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::mpsc;

/// `BEGIN` for a transaction whose event writes are announced afterwards
/// by [`Notifier::committed`] instead of by the trigger.
pub const DEFERRED_BEGIN: &str = "BEGIN; SET LOCAL coordinator.events_notify = 'deferred'";

/// The payload of the notifier's notifications (the trigger's are empty;
/// listeners read neither, but it tells them apart in tests).
pub const DEFERRED_PAYLOAD: &str = "deferred";

/// How long the notifier waits before reconnecting after an error.
const RECONNECT: Duration = Duration::from_secs(1);

/// This replica's coalescing sender of `coordinator_events` notifications;
/// it stops (and closes its connection) when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Notifier {
    poke: mpsc::Sender<()>,
}

impl Notifier {
    /// Starts the sender over its own connection to `pool`'s database.
    pub fn start(pool: &PgPool) -> Notifier {
        // Capacity one: pokes while a notification is owed coalesce into it.
        let (poke, mut owed) = mpsc::channel::<()>(1);
        let (options, pool) = (pool.connect_options(), pool.clone());
        tokio::spawn(async move {
            let mut pending = false;
            while !pool.is_closed() {
                let sent = async {
                    let mut conn = PgConnection::connect_with(&options).await?;
                    sqlx::query("SET synchronous_commit = off")
                        .execute(&mut conn)
                        .await?;
                    loop {
                        if !pending {
                            match owed.recv().await {
                                Some(()) => pending = true,
                                None => return Ok::<(), sqlx::Error>(()),
                            }
                        }
                        sqlx::query("SELECT pg_notify('coordinator_events', $1)")
                            .bind(DEFERRED_PAYLOAD)
                            .execute(&mut conn)
                            .await?;
                        pending = false;
                    }
                }
                .await;
                match sent {
                    Ok(_) => return,
                    // Listeners re-check on their own meanwhile; a
                    // notification owed stays owed until reconnected.
                    Err(e) => {
                        tracing::debug!(error = %e, "event notifier connection lost; reconnecting");
                        tokio::time::sleep(RECONNECT).await;
                    }
                }
            }
        });
        Notifier { poke }
    }

    /// Announces a commit that may have written events.
    pub fn committed(&self) {
        // Full means a notification is already owed, which covers this one.
        let _ = self.poke.try_send(());
    }
}

/// Begins a transaction on `pool`: deferred when `notifier` is set (its
/// caller then calls [`Notifier::committed`] after the commit), plain
/// otherwise, where the trigger notifies at commit as before.
pub async fn begin(
    pool: &PgPool,
    notifier: Option<&Notifier>,
) -> sqlx::Result<Transaction<'static, Postgres>> {
    match notifier {
        Some(_) => pool.begin_with(DEFERRED_BEGIN).await,
        None => pool.begin().await,
    }
}
