//! Whether this replica's database answers: a watcher that pings the pool
//! once a second, says so in one log line when the database goes away and
//! one when it is back, and keeps the figures `/metrics` shows
//! (`coordinator_db_up`, `coordinator_db_outages_total`). The loops
//! themselves (engine, streams, webhooks, scheduled jobs) retry on their
//! own; this is what an operator reads.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use sqlx::{Connection, PgConnection, PgPool};

/// How often the pool is pinged.
const PING_EVERY: Duration = Duration::from_secs(1);
/// How long a ping may take before the database counts as away.
const PING_TIMEOUT: Duration = Duration::from_secs(3);

/// The database's state as this replica's watcher last saw it.
#[derive(Debug)]
pub struct Health {
    up: AtomicBool,
    outages: AtomicU64,
}

impl Health {
    /// Whether the last ping was answered.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Times the database went away since this replica started.
    pub fn outages(&self) -> u64 {
        self.outages.load(Ordering::Relaxed)
    }
}

/// Starts watching `pool` until it is closed or nobody holds the returned
/// [`Health`] any more (the service that asked for it stopped).
pub fn watch(pool: PgPool) -> Arc<Health> {
    let health = Arc::new(Health {
        up: AtomicBool::new(true),
        outages: AtomicU64::new(0),
    });
    // A weak handle: a stopped service drops its state, and the watcher
    // with it, instead of pinging its pool for the life of the process.
    let weak = Arc::downgrade(&health);
    tokio::spawn(async move {
        let mut down_since: Option<Instant> = None;
        loop {
            tokio::time::sleep(PING_EVERY).await;
            let Some(state) = weak.upgrade() else {
                return;
            };
            if pool.is_closed() {
                return;
            }
            let ping = async {
                let mut conn = pool.acquire().await?;
                sqlx::query("SELECT 1").execute(&mut *conn).await
            };
            match tokio::time::timeout(PING_TIMEOUT, ping).await {
                Ok(Ok(_)) => {
                    if let Some(since) = down_since.take() {
                        state.up.store(true, Ordering::Relaxed);
                        tracing::warn!(
                            away_secs = since.elapsed().as_secs_f64().round(),
                            "the database answers again; work resumes"
                        );
                    }
                }
                // Closing the pool (shutdown) is not an outage.
                Ok(Err(sqlx::Error::PoolClosed)) => return,
                failed => {
                    if down_since.is_none() {
                        down_since = Some(Instant::now());
                        state.up.store(false, Ordering::Relaxed);
                        state.outages.fetch_add(1, Ordering::Relaxed);
                        let cause = match failed {
                            Ok(Err(e)) if !matches!(e, sqlx::Error::PoolTimedOut) => e.to_string(),
                            _ => why_no_connection(&pool).await,
                        };
                        tracing::warn!(%cause, "the database is unreachable: requests answer 503 and the engine, streams and jobs retry until it is back");
                    }
                }
            }
        }
    });
    health
}

/// What a fresh connection to the pool's server meets, for the log: the
/// pool itself only says it timed out.
async fn why_no_connection(pool: &PgPool) -> String {
    let options = pool.connect_options();
    match tokio::time::timeout(PING_TIMEOUT, PgConnection::connect_with(&options)).await {
        Ok(Err(e)) => e.to_string(),
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            "the pool had no connection to spare within its timeout (the server accepts new ones)"
                .into()
        }
        Err(_) => format!("no answer within {} s", PING_TIMEOUT.as_secs()),
    }
}

/// Whether `e` says the database (not the statement) failed: no connection
/// within the pool's timeout, a connection lost, or a server shutting down,
/// crashing, failing over or out of connections. Callers retry these later.
pub fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => db.code().as_deref().is_some_and(server_went_away),
        _ => false,
    }
}

/// SQLSTATEs that mean the server, not the statement, failed: connection
/// exceptions (08), operator intervention (57P: shutdown, crash, starting
/// up), too many connections (53300) and a read-only standby (25006).
fn server_went_away(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P") || matches!(code, "53300" | "25006")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_going_away_is_unavailable_and_a_bad_statement_is_not() {
        for code in [
            "08006", "08001", "57P01", "57P02", "57P03", "53300", "25006",
        ] {
            assert!(server_went_away(code), "{code}");
        }
        for code in ["23505", "40001", "42P01", "22021", "P0001"] {
            assert!(!server_went_away(code), "{code}");
        }
        assert!(unavailable(&sqlx::Error::PoolTimedOut));
        assert!(unavailable(&sqlx::Error::Io(
            std::io::ErrorKind::ConnectionReset.into()
        )));
        assert!(!unavailable(&sqlx::Error::RowNotFound));
    }
}
