//! The BDI runtime (seed §16.4): a maintenance cycle scheduled with
//! tokio-cron-scheduler on every replica (default every 30 minutes,
//! `--bdi-interval-secs`) and runnable on demand (`POST /v1/bdi/maintenance`).
//!
//! A PostgreSQL session advisory lock lets exactly one replica run a cycle at
//! a time; the others return [`CycleOutcome::Busy`]. A cycle:
//! 1. prunes intentions: active ones stalled past their strategy's threshold
//!    (open-minded 7 days, cautious 3, single-minded never) are marked
//!    `needs_reconsideration`;
//! 2. re-sorts desires: recomputes every active desire's priority with the
//!    formula of §6.2 and ranks each agent's desires;
//! 3. detects belief conflicts in chunks of 50 subjects, each chunk its own
//!    transaction: same subject, both certainties > 0.7, contradictory
//!    content → one report per pair per day (`GET /v1/bdi/conflicts`);
//! 4. writes the cycle's audit record (counts per phase).
//!
//! A cycle covers one workspace at a time and writes a record per workspace,
//! so a workspace's status and counts are its own: the schedule covers every
//! workspace with BDI state in turn, `POST /v1/bdi/maintenance` the caller's.

use std::time::Duration;

use sqlx::PgPool;
use time::OffsetDateTime;
use tokio_cron_scheduler::{Job, JobScheduler};
use uuid::Uuid;

use super::rules::{self, BELIEF_CHUNK, BeliefFact};
use crate::store::{
    bdi::{self as store, CycleCounts, CycleView},
    events::{self, WorkspaceEvent, payloads},
};

/// Advisory lock key of the BDI maintenance job ("bdimaint" in ASCII).
pub const LOCK_KEY: i64 = 0x6264_696d_6169_6e74;
/// Default seconds between cycles (the seed's 30-minute heartbeat).
pub const DEFAULT_INTERVAL_SECS: u32 = 1800;

/// What one attempt to run a cycle did.
#[derive(Debug, Clone)]
pub enum CycleOutcome {
    /// Another replica holds the lock; nothing done.
    Busy,
    /// The cycle ran; its audit records, one per workspace it covered.
    Ran(Vec<CycleView>),
}

/// The workspaces a cycle covers.
#[derive(Debug, Clone, Copy)]
pub enum Covers {
    /// Every workspace with BDI state, each with its own record (the schedule).
    All,
    /// One workspace (`POST /v1/bdi/maintenance`, for the caller's).
    One(Uuid),
}

/// Runs one cycle if no other replica is running one.
pub async fn run_once(
    pool: &PgPool,
    replica: &str,
    covers: Covers,
) -> anyhow::Result<CycleOutcome> {
    let mut lock_conn = pool.acquire().await?;
    let locked = sqlx::query_scalar!(r#"SELECT pg_try_advisory_lock($1) AS "locked!""#, LOCK_KEY)
        .fetch_one(&mut *lock_conn)
        .await?;
    if !locked {
        return Ok(CycleOutcome::Busy);
    }
    let result = async {
        match covers {
            Covers::One(w) => Ok(vec![cycle(pool, replica, w).await?]),
            Covers::All => {
                let workspaces = store::workspaces_with_state(&mut lock_conn).await?;
                let mut records = Vec::with_capacity(workspaces.len());
                for w in workspaces {
                    // One workspace's failure does not hold the others back.
                    match cycle(pool, replica, w).await {
                        Ok(record) => records.push(record),
                        Err(e) => {
                            tracing::warn!(workspace_id = %w, error = %e, "bdi: maintenance cycle failed for a workspace")
                        }
                    }
                }
                anyhow::Ok(records)
            }
        }
    }
    .await;
    let unlocked = sqlx::query_scalar!("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        .fetch_one(&mut *lock_conn)
        .await;
    if unlocked.is_err() {
        // A session lock lives as long as the connection: close it rather
        // than return it to the pool still holding the lock.
        drop(lock_conn.detach());
    }
    result.map(CycleOutcome::Ran)
}

/// One workspace's cycle with its audit record.
async fn cycle(pool: &PgPool, replica: &str, workspace_id: Uuid) -> anyhow::Result<CycleView> {
    let started = OffsetDateTime::now_utc();
    let actor = format!("bdi:{replica}");
    let scope = store::Scope::Workspace(workspace_id);
    let counts = maintain(pool, scope, &actor).await?;

    // 4. The audit record.
    let mut tx = pool.begin().await?;
    let record = store::insert_cycle(&mut tx, workspace_id, started, replica, counts).await?;
    store::attribute_conflicts(&mut tx, record.id, started, scope).await?;
    tx.commit().await?;
    Ok(record)
}

/// The maintenance phases (pruning, re-sorting, conflict detection) over the
/// scope (a workspace's agents, or one agent), each in short transactions;
/// their counts.
pub(super) async fn maintain(
    pool: &PgPool,
    scope: store::Scope<'_>,
    actor: &str,
) -> anyhow::Result<CycleCounts> {
    let mut counts = CycleCounts::default();

    // 1. Intention pruning, with an event per marked intention.
    let mut tx = pool.begin().await?;
    let stale = store::mark_stale_intentions(&mut tx, scope).await?;
    for (workspace_id, id, agent_id, strategy) in &stale {
        events::record(
            &mut tx,
            *workspace_id,
            WorkspaceEvent::new(
                None,
                None,
                actor,
                &payloads::BdiIntentionStale {
                    agent_id: agent_id.clone(),
                    intention_id: *id,
                    strategy: strategy.clone(),
                },
            ),
        )
        .await?;
    }
    counts.intentions_pruned = i32::try_from(stale.len()).unwrap_or(i32::MAX);
    // 2. Desire re-sorting.
    counts.desires_resorted =
        i32::try_from(store::resort_desires(&mut tx, scope).await?).unwrap_or(i32::MAX);
    tx.commit().await?;

    // 3. Belief conflicts, chunk by chunk (short transactions).
    let mut after = None;
    loop {
        let mut tx = pool.begin().await?;
        let keys = store::conflict_candidates(&mut tx, scope, after.as_ref(), BELIEF_CHUNK).await?;
        if keys.is_empty() {
            tx.commit().await?;
            break;
        }
        counts.belief_chunks += 1;
        for key in &keys {
            let beliefs = store::group_beliefs(&mut tx, key).await?;
            counts.beliefs_scanned += i32::try_from(beliefs.len()).unwrap_or(i32::MAX);
            let facts: Vec<BeliefFact> = beliefs
                .iter()
                .map(|b| BeliefFact {
                    id: b.id,
                    subject: b.subject.clone(),
                    content: b.content.clone(),
                    certainty: b.certainty,
                })
                .collect();
            let mut found = Vec::new();
            for (a, b) in rules::belief_conflicts(&facts) {
                let (Some(a), Some(b)) = (
                    beliefs.iter().find(|x| x.id == a.id),
                    beliefs.iter().find(|x| x.id == b.id),
                ) else {
                    continue;
                };
                if store::insert_conflict(&mut tx, key.0, a, b).await? {
                    counts.conflicts_found += 1;
                    found.push(payloads::BeliefPair {
                        belief_a: a.id,
                        belief_b: b.id,
                    });
                }
            }
            if !found.is_empty() {
                events::record(
                    &mut tx,
                    key.0,
                    WorkspaceEvent::new(
                        None,
                        None,
                        actor,
                        &payloads::BdiBeliefConflict {
                            agent_id: key.1.clone(),
                            subject: key.2.clone(),
                            pairs: found,
                        },
                    ),
                )
                .await?;
            }
        }
        tx.commit().await?;
        let short = (keys.len() as i64) < BELIEF_CHUNK;
        after = keys.into_iter().last();
        if short {
            break;
        }
    }
    Ok(counts)
}

/// Schedules the cycle on this replica every `every_secs` seconds.
pub async fn schedule(
    pool: PgPool,
    every_secs: u32,
    replica: String,
) -> anyhow::Result<JobScheduler> {
    let scheduler = JobScheduler::new().await?;
    let job = Job::new_repeated_async(
        Duration::from_secs(every_secs.max(1).into()),
        move |_, _| {
            let pool = pool.clone();
            let replica = replica.clone();
            Box::pin(async move {
                match run_once(&pool, &replica, Covers::All).await {
                    Ok(CycleOutcome::Ran(records)) => tracing::info!(
                        workspaces = records.len(),
                        pruned = records.iter().map(|c| c.intentions_pruned).sum::<i32>(),
                        resorted = records.iter().map(|c| c.desires_resorted).sum::<i32>(),
                        conflicts = records.iter().map(|c| c.conflicts_found).sum::<i32>(),
                        "bdi: maintenance cycle done"
                    ),
                    Ok(CycleOutcome::Busy) => {}
                    Err(e) => tracing::warn!(error = %e, "bdi: maintenance cycle failed"),
                }
            })
        },
    )?;
    scheduler.add(job).await?;
    scheduler.start().await?;
    Ok(scheduler)
}
