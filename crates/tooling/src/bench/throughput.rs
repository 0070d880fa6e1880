//! The engine sections of `coordinator bench`: throughput of fan-out
//! missions for each replica count, the dispatch latency of the first
//! count's missions, and the step overhead of one sequential mission.

use std::{
    collections::HashMap,
    time::{Duration, Instant, SystemTime},
};

use futures::{StreamExt, stream};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    Api, BenchArgs, chain_plan,
    env::{BenchEnv, Replica, mission_id, wait_completed, warm_up},
    fanout_plan,
    observe::{DbCost, PhaseCounts, db_cost},
    percentile, report,
};

/// Throughput for each `--replicas` count, and the dispatch latency measured
/// on the first count's missions.
pub(crate) async fn measure(
    env: &BenchEnv,
    args: &BenchArgs,
) -> anyhow::Result<(Vec<report::Throughput>, report::Dispatch)> {
    let mut throughput = Vec::new();
    let mut latencies = Vec::new();
    for (n, &replicas) in args.replicas.iter().enumerate() {
        let up = start_replicas(env, replicas).await?;
        let api = env.api(up[0].base.clone());
        // The agents outlive the replicas (they are rows): register them once.
        if n == 0 {
            env.register_agents(&api, args).await?;
        }
        eprintln!(
            "[{replicas} replica(s)] creating {} + {} missions (warm-up + measured)…",
            args.warmup_missions, args.missions
        );
        let mut warm = create_missions(&api, args, args.warmup_missions + args.missions).await?;
        let ids = warm.split_off(args.warmup_missions);
        // The measured part runs on fresh replicas: the ones that created the
        // missions report their connections' counters as they close, so none
        // of the creating lands in the phase's commits (see `observe`).
        Replica::stop_all(up).await;
        let point = at_replicas(env, args, replicas, &warm, &ids).await?;
        throughput.push(point);
        if replicas == args.replicas[0] {
            latencies = dispatch_latencies(&env.pool, &ids, &env.worker.arrivals()).await?;
        }
    }
    let dispatch = report::Dispatch {
        edges: latencies.len(),
        p50_ms: percentile(&latencies, 50.0),
        p95_ms: percentile(&latencies, 95.0),
        p99_ms: percentile(&latencies, 99.0),
    };
    Ok((throughput, dispatch))
}

/// Starts `count` replicas, their pools sized to fit the server.
async fn start_replicas(env: &BenchEnv, count: usize) -> anyhow::Result<Vec<Replica>> {
    let size = env.replica_pool(count);
    let mut up = Vec::with_capacity(count);
    for _ in 0..count {
        up.push(Replica::start(&env.url, size).await?);
    }
    Ok(up)
}

/// One throughput point: `count` fresh replicas run the `warm` missions
/// first (unmeasured), then the measured missions `ids` approved at once,
/// timed from the first approval to the last completion; CPU time, writing
/// transactions and WAL bytes cover that measured span. The statement and
/// commit counts cover the replicas' whole life, from before they start
/// until they have stopped (their counters arrive as their connections
/// close), so nothing they did is missed: they are divided by all the
/// tasks the replicas ran, warm-up included.
async fn at_replicas(
    env: &BenchEnv,
    args: &BenchArgs,
    count: usize,
    warm: &[Uuid],
    ids: &[Uuid],
) -> anyhow::Result<report::Throughput> {
    let mut phase = match &env.observer {
        Some(o) => Some(o.start_phase(&env.pool).await?),
        None => None,
    };
    let replicas = start_replicas(env, count).await?;
    warm_up(env, &replicas).await?;
    if !warm.is_empty() {
        eprintln!(
            "[{count} replica(s)] warming up on {} missions…",
            warm.len()
        );
        approve_all(env, &replicas, warm, args.client_concurrency).await?;
        wait_all(env, warm).await?;
    }
    eprintln!("[{count} replica(s)] approving and running them…");
    // Lock waiters are sampled over the measured part only.
    if let (Some(o), Some(p)) = (&env.observer, &mut phase) {
        o.start_sampling(p).await?;
    }
    let before = db_cost(&env.server_pool).await.ok();
    let cpu_before = env.observer.as_ref().and_then(|o| o.cpu_sample());
    let started = Instant::now();
    approve_all(env, &replicas, ids, args.client_concurrency).await?;
    wait_all(env, ids).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = env.observer.as_ref().and_then(|o| o.cpu_sample());
    let after = db_cost(&env.server_pool).await.ok();
    if let Some(p) = &mut phase {
        p.stop_sampling().await;
    }
    Replica::stop_all(replicas).await;
    let tasks = (ids.len() * args.tasks) as f64;
    let all_tasks = ((warm.len() + ids.len()) * args.tasks) as f64;
    let counts = match (&env.observer, phase) {
        (Some(o), Some(p)) => o.finish_phase(p, all_tasks).await?,
        _ => PhaseCounts::default(),
    };
    let (bench_cpu, db_cpu) = env.observer.as_ref().map_or((None, None), |o| {
        o.cpu_per_task(cpu_before, cpu_after, tasks)
    });
    let per_task = |pick: fn(&DbCost) -> i64| {
        before
            .zip(after)
            .map(|(b, a)| (pick(&a) - pick(&b)) as f64 / tasks)
    };
    Ok(report::Throughput {
        replicas: count,
        tasks_per_s: tasks / elapsed,
        secs: elapsed,
        write_txns_per_task: per_task(|c| c.next_xid),
        wal_bytes_per_task: per_task(|c| c.wal_lsn),
        stmts_per_task: counts.stmts_per_task,
        commits_per_task: counts.commits_per_task,
        lock_waiters_mean: counts.lock_waiters_mean,
        lock_wait_share: counts.lock_wait_share,
        bench_cpu_ms_per_task: bench_cpu,
        db_cpu_ms_per_task: db_cpu,
        top_statements: counts.top,
    })
}

/// Waits until the missions `ids` are done, polling through the observer
/// when there is one (its polls are its own, left out of the counts).
async fn wait_all(env: &BenchEnv, ids: &[Uuid]) -> anyhow::Result<()> {
    let limit = Duration::from_secs(600);
    match &env.observer {
        Some(o) => o.wait_completed(ids, limit).await,
        None => wait_completed(&env.pool, ids, limit).await,
    }
}

/// Creates `count` fan-out missions (awaiting approval) through `api`.
async fn create_missions(api: &Api, args: &BenchArgs, count: usize) -> anyhow::Result<Vec<Uuid>> {
    let plan = fanout_plan(args.tasks);
    stream::iter(0..count)
        .map(|i| {
            let plan = plan.clone();
            async move {
                let m = api
                    .post(
                        "/v1/missions",
                        json!({"goal": format!("bench mission {i}"), "plan": plan}),
                    )
                    .await?;
                mission_id(&m)
            }
        })
        .buffer_unordered(args.client_concurrency)
        .collect::<Vec<anyhow::Result<Uuid>>>()
        .await
        .into_iter()
        .collect()
}

/// Approves every mission, `concurrency` at a time.
async fn approve_all(
    env: &BenchEnv,
    replicas: &[Replica],
    ids: &[Uuid],
    concurrency: usize,
) -> anyhow::Result<()> {
    let approvals: Vec<anyhow::Result<Value>> = stream::iter(ids.iter().enumerate())
        .map(|(i, id)| {
            // Spread approvals over the replicas like a load balancer would.
            let api = env.api(replicas[i % replicas.len()].base.clone());
            async move {
                api.post(&format!("/v1/missions/{id}/approve"), json!({}))
                    .await
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    for a in approvals {
        a?;
    }
    Ok(())
}

/// Step overhead: one `--chain`-step sequential mission on one replica.
pub(crate) async fn chain(env: &BenchEnv, args: &BenchArgs) -> anyhow::Result<report::Chain> {
    eprintln!("running a {}-step sequential mission…", args.chain);
    let replica = Replica::start(&env.url, 10).await?;
    let api = env.api(replica.base.clone());
    let m = api
        .post("/v1/missions", json!({"goal": "bench chain", "autonomy": "autonomous", "plan": chain_plan(args.chain)}))
        .await?;
    let chain_id = mission_id(&m)?;
    wait_completed(&env.pool, &[chain_id], Duration::from_secs(120)).await?;
    let (span_ms,): (f64,) = sqlx::query_as(
        "SELECT extract(epoch FROM max(finished_at) - min(started_at))::float8 * 1000 FROM orchestration_tasks WHERE run_id = $1",
    )
    .bind(chain_id)
    .fetch_one(&env.pool)
    .await?;
    let step_overhead_ms = span_ms / args.chain as f64;
    let chain_latencies =
        dispatch_latencies(&env.pool, &[chain_id], &env.worker.arrivals()).await?;
    replica.stop().await;
    Ok(report::Chain {
        steps: args.chain,
        step_overhead_ms,
        dispatch_p50_ms: percentile(&chain_latencies, 50.0),
    })
}

/// Milliseconds from each parent's completion to its child's arrival at the worker.
async fn dispatch_latencies(
    pool: &PgPool,
    runs: &[Uuid],
    arrivals: &HashMap<Uuid, SystemTime>,
) -> anyhow::Result<Vec<f64>> {
    let rows: Vec<(Uuid, time::OffsetDateTime)> = sqlx::query_as(
        "SELECT a.id, p.finished_at
         FROM orchestration_task_dependencies d
         JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
         JOIN task_attempts a ON a.task_id = d.task_id AND a.attempt_number = 1
         WHERE d.run_id = ANY($1) AND p.finished_at IS NOT NULL",
    )
    .bind(runs)
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (attempt, parent_done) in rows {
        if let Some(arrived) = arrivals.get(&attempt) {
            let arrived = time::OffsetDateTime::from(*arrived);
            out.push((arrived - parent_done).as_seconds_f64() * 1000.0);
        }
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}
