//! Event retention: a scheduled job that prunes events (and webhook
//! deliveries) older than a configured age. It never deletes a mission;
//! `DELETE /v1/missions/{id}` removes a finished one outright, and its
//! `mission.deleted` event then ages out here like any other
//! (`docs/operations.md`, "Removing missions").
//!
//! Every replica schedules the job; a PostgreSQL advisory lock lets one run
//! at a time. Deletes go in small batches, each its own transaction, because
//! a long transaction would hold back the horizon that workspace event
//! streams read up to.

use std::time::Duration;

use sqlx::PgPool;
use time::OffsetDateTime;
use tokio_cron_scheduler::{Job, JobScheduler};

use crate::store::events;

/// Advisory lock key of the retention job ("retentn" in ASCII).
pub const LOCK_KEY: i64 = 0x0072_6574_656e_746e;
/// Rows deleted per transaction.
const BATCH: i64 = 5000;

/// How long events are kept and how often the job looks.
#[derive(Debug, Clone, Copy)]
pub struct RetentionConfig {
    /// Events older than this are deleted; `None` keeps them forever.
    pub max_age: Option<Duration>,
    /// Seconds between runs (cron granularity is one second).
    pub every_secs: u32,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            max_age: Some(Duration::from_secs(30 * 24 * 3600)),
            every_secs: 600,
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneOutcome {
    /// Another replica holds the lock; nothing done.
    Busy,
    /// Deleted this many events and webhook deliveries.
    Pruned {
        /// Events deleted.
        events: u64,
        /// Webhook deliveries deleted.
        deliveries: u64,
    },
}

/// One run: takes the job's advisory lock or returns [`PruneOutcome::Busy`].
pub async fn prune_once(pool: &PgPool, max_age: Duration) -> sqlx::Result<PruneOutcome> {
    let mut conn = pool.acquire().await?;
    let locked = sqlx::query_scalar!(r#"SELECT pg_try_advisory_lock($1) AS "locked!""#, LOCK_KEY)
        .fetch_one(&mut *conn)
        .await?;
    if !locked {
        return Ok(PruneOutcome::Busy);
    }
    let cutoff = OffsetDateTime::now_utc() - max_age;
    let result = async {
        let mut events_deleted = 0;
        loop {
            let n = events::prune_older_than(&mut conn, cutoff, BATCH).await?;
            events_deleted += n;
            if n < BATCH as u64 {
                break;
            }
        }
        let mut deliveries = 0;
        loop {
            let n = crate::store::webhooks::prune_deliveries(&mut conn, cutoff, BATCH).await?;
            deliveries += n;
            if n < BATCH as u64 {
                break;
            }
        }
        Ok::<_, sqlx::Error>(PruneOutcome::Pruned {
            events: events_deleted,
            deliveries,
        })
    }
    .await;
    let unlocked = sqlx::query_scalar!("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        .fetch_one(&mut *conn)
        .await;
    if unlocked.is_err() {
        // A session lock lives as long as the connection: close it rather
        // than return it to the pool still holding the lock.
        drop(conn.detach());
    }
    result
}

/// Schedules the job on this replica; `None` when retention is off.
pub async fn schedule(pool: PgPool, cfg: RetentionConfig) -> anyhow::Result<Option<JobScheduler>> {
    let Some(max_age) = cfg.max_age else {
        return Ok(None);
    };
    let every = cfg.every_secs.max(1);
    let scheduler = JobScheduler::new().await?;
    let job = Job::new_repeated_async(Duration::from_secs(every.into()), move |_, _| {
        let pool = pool.clone();
        Box::pin(async move {
            match prune_once(&pool, max_age).await {
                Ok(PruneOutcome::Pruned { events, deliveries }) if events + deliveries > 0 => {
                    tracing::info!(events, deliveries, "retention: pruned old events");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "retention: prune failed"),
            }
        })
    })?;
    scheduler.add(job).await?;
    scheduler.start().await?;
    Ok(Some(scheduler))
}
