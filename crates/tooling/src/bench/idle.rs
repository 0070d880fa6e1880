//! Tick cost with idle missions: live missions that have nothing to dispatch.
//!
//! Missions are written straight into the schema (one transaction per level,
//! a few seconds for 10,000) in the shapes an idle fleet has:
//! - 50 %: executing, two tasks `running` on a worker that never answers
//!   (live attempts, lease an hour away);
//! - 10 %: executing, one task `awaiting_human`, one `running`;
//! - 20 %: `awaiting_approval`, a three-step chain of `pending` tasks;
//! - 20 %: `paused`, one task `running` and one `pending` behind it.
//!
//! Then the engine's phase functions are called directly, exactly as one
//! tick of the loop calls them (claim, lease reclaim, sweep), with nothing to
//! do, and each phase is timed. Levels are cumulative (10, then +990, …), so
//! the only thing that changes between levels is the number of idle missions.

use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use super::median;
use crate::{
    auth, db,
    engine::{EngineConfig, dispatch, reconcile},
};

/// Agent that holds every idle attempt; its cap is the schema's maximum so
/// 10,000 missions' attempts fit (the claim never picks it: it is full).
const IDLE_AGENT: &str = "bench-idle";

/// One level's figures, medians in µs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IdleLevel {
    /// Idle missions present.
    pub missions: usize,
    /// One full pass: claim + lease reclaim + sweep.
    pub tick_us: f64,
    /// `dispatch::claim_batch` (runs every tick and on every wake-up).
    pub claim_us: f64,
    /// `reconcile::reclaim_expired_leases` (every tick).
    pub lease_us: f64,
    /// `reconcile::sweep` (every `sweep_interval`, 5 s by default).
    pub sweep_us: f64,
    /// Claim + lease reclaim timed alone, without the sweep between them:
    /// what every tick between two sweeps costs.
    pub hot_us: f64,
    /// Ticks timed.
    pub samples: usize,
}

/// The idle-tick phase's results.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IdleReport {
    /// One entry per level, in order.
    pub levels: Vec<IdleLevel>,
    /// Claim cost once every paused mission also holds a ready task (kept
    /// out of the queue while paused): (queued tasks, µs).
    pub paused_queued_claim: (usize, f64),
}

const SEED: [&str; 8] = [
    "CREATE TEMP TABLE bench_idle_seed (kind text, run_id uuid, t0 uuid, t1 uuid, t2 uuid, a0 uuid, a1 uuid) ON COMMIT DROP",
    "INSERT INTO bench_idle_seed
     SELECT CASE WHEN g % 10 < 5 THEN 'running' WHEN g % 10 = 5 THEN 'waiting'
                 WHEN g % 10 < 8 THEN 'approval' ELSE 'paused' END,
            gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
            gen_random_uuid(), gen_random_uuid()
     FROM generate_series($1::int, $2::int - 1) g",
    "INSERT INTO orchestration_runs (id, workspace_id, goal, autonomy, status, plan_version, started_at)
     SELECT run_id, $1, 'idle bench mission', 'autonomous',
            CASE kind WHEN 'approval' THEN 'awaiting_approval' WHEN 'paused' THEN 'paused' ELSE 'executing' END,
            1, CASE WHEN kind <> 'approval' THEN now() END
     FROM bench_idle_seed",
    "INSERT INTO orchestration_tasks (id, workspace_id, run_id, task_key, task_order, title, task_type, status,
         plan_version, assigned_agent_id, attempt_count, current_attempt_id, lease_owner, lease_expires_at, started_at)
     SELECT t.id, $1, s.run_id, t.key, t.ord, 'idle step', 'research', t.status, 1,
            CASE WHEN t.attempt IS NOT NULL THEN 'bench-idle' END,
            CASE WHEN t.attempt IS NOT NULL THEN 1 ELSE 0 END, t.attempt,
            CASE WHEN t.attempt IS NOT NULL THEN 'bench' END,
            CASE WHEN t.attempt IS NOT NULL THEN now() + interval '1 hour' END,
            CASE WHEN t.attempt IS NOT NULL THEN now() END
     FROM bench_idle_seed s
     CROSS JOIN LATERAL (VALUES
         (s.t0, 's0', 0, CASE s.kind WHEN 'running' THEN 'running' WHEN 'paused' THEN 'running'
                                     WHEN 'waiting' THEN 'awaiting_human' ELSE 'pending' END,
              CASE WHEN s.kind IN ('running', 'paused') THEN s.a0 END),
         (s.t1, 's1', 1, CASE WHEN s.kind IN ('running', 'waiting') THEN 'running' ELSE 'pending' END,
              CASE WHEN s.kind IN ('running', 'waiting') THEN s.a1 END),
         (s.t2, 's2', 2, 'pending', NULL)
     ) AS t(id, key, ord, status, attempt)
     WHERE t.key <> 's2' OR s.kind = 'approval'",
    "INSERT INTO orchestration_task_dependencies (workspace_id, run_id, task_id, depends_on_task_id)
     SELECT $1, run_id, t1, t0 FROM bench_idle_seed WHERE kind IN ('approval', 'paused')
     UNION ALL
     SELECT $1, run_id, t2, t1 FROM bench_idle_seed WHERE kind = 'approval'",
    "INSERT INTO task_attempts (id, workspace_id, run_id, task_id, attempt_number, agent_id, worker_url,
         token_hash, status, dispatched_by, accepted_at)
     SELECT t.current_attempt_id, t.workspace_id, t.run_id, t.id, 1, 'bench-idle', 'http://127.0.0.1:9',
            sha256(t.current_attempt_id::text::bytea), 'running', 'bench', now()
     FROM orchestration_tasks t JOIN bench_idle_seed s ON s.run_id = t.run_id
     WHERE t.current_attempt_id IS NOT NULL",
    "INSERT INTO board_tasks (id, workspace_id, source_type, source_id, run_id, title, column_name)
     SELECT gen_random_uuid(), t.workspace_id, 'orchestration', t.id, t.run_id, t.title,
            CASE t.status WHEN 'running' THEN 'in_progress' WHEN 'awaiting_human' THEN 'needs_human'
                          ELSE 'backlog' END
     FROM orchestration_tasks t JOIN bench_idle_seed s ON s.run_id = t.run_id",
    // Keep the agent's counter true to its live attempts, as the engine does.
    "UPDATE agents SET running_count = (SELECT count(*) FROM task_attempts
                                        WHERE agent_id = 'bench-idle' AND status = 'running')
     WHERE agent_id = 'bench-idle'",
];

/// Adds idle missions `from..to` in one transaction.
async fn seed(pool: &PgPool, workspace: Uuid, from: usize, to: usize) -> anyhow::Result<()> {
    let (from, to) = (i32::try_from(from)?, i32::try_from(to)?);
    let mut tx = pool.begin().await?;
    for (i, sql) in SEED.iter().enumerate() {
        let q = sqlx::query(*sql);
        let q = match i {
            1 => q.bind(from).bind(to),
            2..=4 => q.bind(workspace),
            _ => q,
        };
        q.execute(&mut *tx)
            .await
            .with_context(|| format!("seeding idle missions (statement {i})"))?;
    }
    tx.commit().await?;
    // Production tables get this from autovacuum; the bench cannot wait for
    // it, and stale statistics would measure the planner's guess, not the engine.
    sqlx::raw_sql(
        "VACUUM ANALYZE orchestration_runs, orchestration_tasks, orchestration_task_dependencies,
                        task_attempts, board_tasks, task_queue, agents",
    )
    .execute(pool)
    .await?;
    Ok(())
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Times full ticks until `budget` is spent (at least 20, at most 500).
async fn time_ticks(
    pool: &PgPool,
    cfg: &EngineConfig,
    missions: usize,
    budget: Duration,
) -> anyhow::Result<IdleLevel> {
    // Sweeps walk the executing missions a window at a time, as the engine's.
    let mut cursor = reconcile::SweepCursor::default();
    // Warm up: prepared statements and the generic plans that replace the
    // custom ones after five executions.
    for _ in 0..8 {
        dispatch::claim_batch(pool, cfg).await?;
        reconcile::reclaim_expired_leases(pool, cfg).await?;
        reconcile::sweep(pool, cfg, &mut cursor).await?;
    }
    let (mut ticks, mut claims, mut leases, mut sweeps) = (vec![], vec![], vec![], vec![]);
    let started = Instant::now();
    while ticks.len() < 20 || (started.elapsed() < budget && ticks.len() < 500) {
        let t0 = Instant::now();
        let claimed = dispatch::claim_batch(pool, cfg).await?;
        let t1 = Instant::now();
        let reclaimed = reconcile::reclaim_expired_leases(pool, cfg).await?;
        let t2 = Instant::now();
        let touched = reconcile::sweep(pool, cfg, &mut cursor).await?;
        let t3 = Instant::now();
        anyhow::ensure!(
            claimed.is_empty() && reclaimed == 0 && touched == 0,
            "idle missions were not idle: claimed {}, reclaimed {reclaimed}, swept {touched}",
            claimed.len()
        );
        claims.push(micros(t1 - t0));
        leases.push(micros(t2 - t1));
        sweeps.push(micros(t3 - t2));
        ticks.push(micros(t3 - t0));
    }
    // The same two phases again without the sweep between them, so what
    // they cost is not blurred by the caches a long sweep has just cleared.
    let mut hot = Vec::new();
    let started = Instant::now();
    while hot.len() < 20 || (started.elapsed() < budget / 2 && hot.len() < 500) {
        let t = Instant::now();
        dispatch::claim_batch(pool, cfg).await?;
        reconcile::reclaim_expired_leases(pool, cfg).await?;
        hot.push(micros(t.elapsed()));
    }
    Ok(IdleLevel {
        missions,
        hot_us: median(hot),
        samples: ticks.len(),
        tick_us: median(ticks),
        claim_us: median(claims),
        lease_us: median(leases),
        sweep_us: median(sweeps),
    })
}

/// Seeds each level in turn in the (fresh, migrated) database at `url` and
/// times idle ticks there for about `budget` each.
pub async fn measure(url: &str, levels: &[usize], budget: Duration) -> anyhow::Result<IdleReport> {
    let pool = db::connect(url, 4).await?;
    let workspace = {
        let mut conn = pool.acquire().await?;
        auth::workspace_by_name(&mut conn, auth::DEFAULT_WORKSPACE).await?
    };
    sqlx::query(
        "INSERT INTO agents (workspace_id, agent_id, role, skills, endpoint_url, max_concurrency)
         VALUES ($1, $2, 'bench', '{research}', 'http://127.0.0.1:9', 10000)",
    )
    .bind(workspace)
    .bind(IDLE_AGENT)
    .execute(&pool)
    .await?;
    // Never used to send anything: there is nothing to dispatch.
    let cfg = EngineConfig::new("http://127.0.0.1:9");
    let mut report = IdleReport {
        levels: Vec::new(),
        paused_queued_claim: (0, f64::NAN),
    };
    let mut have = 0;
    for &level in levels {
        if level > have {
            eprintln!("[idle] seeding {} idle missions…", level - have);
            seed(&pool, workspace, have, level).await?;
            have = level;
        }
        let l = time_ticks(&pool, &cfg, level, budget).await?;
        eprintln!(
            "[idle] {level} missions: tick {:.0} µs (claim {:.0}, lease {:.0}, sweep {:.0}; {} ticks); claim + lease alone {:.0} µs",
            l.tick_us, l.claim_us, l.lease_us, l.sweep_us, l.samples, l.hot_us
        );
        report.levels.push(l);
    }

    // Give every paused mission a ready (queued) task, as a mission paused
    // with work ready has; pausing takes its rows out of the queue, so the
    // claim must not pay for them.
    let mut tx = pool.begin().await?;
    let queued = sqlx::query(
        "INSERT INTO orchestration_tasks (id, workspace_id, run_id, task_key, task_order, title,
                                          task_type, status, plan_version)
         SELECT gen_random_uuid(), workspace_id, id, 'ready', 9, 'idle step', 'research', 'queued', 1
         FROM orchestration_runs WHERE status = 'paused'",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    sqlx::raw_sql("VACUUM ANALYZE orchestration_tasks, task_queue")
        .execute(&pool)
        .await?;
    for _ in 0..8 {
        dispatch::claim_batch(&pool, &cfg).await?;
    }
    let mut claims = Vec::new();
    let started = Instant::now();
    while claims.len() < 20 || (started.elapsed() < budget && claims.len() < 500) {
        let t = Instant::now();
        let claimed = dispatch::claim_batch(&pool, &cfg).await?;
        anyhow::ensure!(claimed.is_empty(), "a paused mission's task was claimed");
        claims.push(micros(t.elapsed()));
    }
    report.paused_queued_claim = (queued as usize, median(claims));
    eprintln!(
        "[idle] claim with {queued} ready tasks of paused missions: {:.0} µs",
        report.paused_queued_claim.1
    );
    pool.close().await;
    Ok(report)
}
