//! The job-queue baseline, measured in the same run on the same server
//! (issue 19): graphile-worker 0.18 (`benches/jobqueue/graphile.mjs`, installed
//! by `scripts/jobqueue-install.sh`) runs no-op jobs in a fresh database of
//! the bench's server, after the engine phases; its figures become the
//! ratios the goals are stated in. Without node or the installed
//! package the section is skipped with one line on stderr.
//!
//! Our side of the single-task comparison is measured here too
//! (`single_latency`): one mission at a time on an idle 1-replica system,
//! from sending its `POST /approve` to its first task's request arriving at
//! the instant worker. Plans need three tasks, so it is a 3-step chain whose
//! root is the one ready task; the next mission starts once it is done.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::{
    BenchArgs, chain_plan,
    env::{BenchEnv, Replica, mission_id},
    in_fresh_database, percentile,
};

/// Single missions timed for [`single_latency`].
const SINGLE_RUNS: usize = 50;
/// Single jobs graphile-worker adds one at a time.
const SINGLE_JOBS: usize = 200;
/// How long the node script may run.
const NODE_LIMIT: Duration = Duration::from_secs(600);

/// `--job-queue`: whether to measure the job-queue baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JobQueueMode {
    /// Measure it if node and the installed package are there, else skip.
    Auto,
    /// Never.
    Off,
}

/// graphile-worker's figures, as `graphile.mjs` prints them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobQueueReport {
    /// graphile-worker's version.
    pub version: String,
    /// Jobs run at once (its `concurrency`).
    pub concurrency: usize,
    /// Jobs in the burst.
    pub jobs: usize,
    /// Burst: jobs/s from the one `addJobs` call until the jobs table is empty.
    pub jobs_per_s: f64,
    /// Burst: add → start, median, ms.
    pub burst_add_to_start_p50_ms: f64,
    /// Burst: add → start, 95th percentile, ms.
    pub burst_add_to_start_p95_ms: f64,
    /// Steps of the chain (each job adds the next).
    pub chain_steps: usize,
    /// First step's start to last step's end, over the steps, ms.
    pub chain_step_ms: f64,
    /// Single jobs added one at a time on an idle worker.
    pub single_jobs: usize,
    /// Single job add → start, median, ms.
    pub single_add_to_start_p50_ms: f64,
    /// Single job add → start, 95th percentile, ms.
    pub single_add_to_start_p95_ms: f64,
}

/// Our single-task latency on an idle system (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SingleLatency {
    /// Missions timed.
    pub runs: usize,
    /// `POST /approve` sent → first task's request at the worker, median, ms.
    pub p50_ms: f64,
    /// The same, 95th percentile, ms.
    pub p95_ms: f64,
}

/// The directory of `graphile.mjs` and its `node_modules`
/// (`COORDINATOR_JOBQUEUE_DIR`, else `benches/jobqueue` of this checkout).
fn script_dir() -> PathBuf {
    std::env::var_os("COORDINATOR_JOBQUEUE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/jobqueue"),
        PathBuf::from,
    )
}

/// Why the baseline cannot run here, if it cannot.
async fn missing() -> Option<String> {
    let dir = script_dir();
    if !dir
        .join("node_modules/graphile-worker/package.json")
        .is_file()
    {
        return Some(format!(
            "graphile-worker is not installed in {} (run scripts/jobqueue-install.sh)",
            dir.display()
        ));
    }
    let node = tokio::process::Command::new("node")
        .arg("--version")
        .output()
        .await;
    match node {
        Ok(out) if out.status.success() => None,
        _ => Some("no `node` on PATH".into()),
    }
}

/// Runs graphile-worker in a fresh database on the server at `server_url`;
/// `None` (with one line on stderr) if it cannot run here or fails.
pub(crate) async fn measure(
    server_url: &str,
    args: &BenchArgs,
) -> anyhow::Result<Option<JobQueueReport>> {
    if args.job_queue == JobQueueMode::Off {
        return Ok(None);
    }
    if let Some(why) = missing().await {
        eprintln!("job-queue baseline skipped: {why}");
        return Ok(None);
    }
    eprintln!("measuring the job-queue baseline (graphile-worker, same server)…");
    let jobs = args.missions * args.tasks;
    let concurrency = args.agents * args.agent_cap.max(1) as usize;
    let chain = args.chain;
    let result = in_fresh_database(server_url, |url| async move {
        run_node(&url, jobs, chain, concurrency).await
    })
    .await;
    match result {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            eprintln!("job-queue baseline skipped: {e:#}");
            Ok(None)
        }
    }
}

/// Runs `graphile.mjs` and parses its JSON line.
async fn run_node(
    url: &str,
    jobs: usize,
    chain: usize,
    concurrency: usize,
) -> anyhow::Result<JobQueueReport> {
    let dir = script_dir();
    let child = tokio::process::Command::new("node")
        .arg(dir.join("graphile.mjs"))
        .args(["--url", url])
        .args(["--jobs", &jobs.to_string()])
        .args(["--chain", &chain.to_string()])
        .args(["--single", &SINGLE_JOBS.to_string()])
        .args(["--concurrency", &concurrency.to_string()])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting node")?;
    let out = tokio::time::timeout(NODE_LIMIT, child.wait_with_output())
        .await
        .context("graphile.mjs did not finish in time")??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        anyhow::bail!(
            "graphile.mjs failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse(&stdout)
}

/// The last JSON line of the script's output.
pub(crate) fn parse(stdout: &str) -> anyhow::Result<JobQueueReport> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .context("no JSON line in graphile.mjs's output")?;
    serde_json::from_str(line).context("parsing graphile.mjs's JSON line")
}

/// Our single-task latency on an idle 1-replica system (module docs).
pub(crate) async fn single_latency(env: &BenchEnv) -> anyhow::Result<SingleLatency> {
    eprintln!("timing {SINGLE_RUNS} single missions on an idle replica…");
    let replica = Replica::start(&env.url, env.replica_pool(1)).await?;
    let api = env.api(replica.base.clone());
    let mut sent = Vec::with_capacity(SINGLE_RUNS);
    let result = async {
        for i in 0..SINGLE_RUNS {
            let m = api
                .post(
                    "/v1/missions",
                    json!({"goal": format!("bench single {i}"), "plan": chain_plan(3)}),
                )
                .await?;
            let id = mission_id(&m)?;
            // Let the creation's own work settle: the system is idle when approving.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let at = SystemTime::now();
            api.post(&format!("/v1/missions/{id}/approve"), json!({}))
                .await?;
            super::env::wait_completed(&env.pool, &[id], Duration::from_secs(60)).await?;
            sent.push((id, at));
        }
        anyhow::Ok(())
    }
    .await;
    replica.stop().await;
    result?;
    let arrivals = env.worker.arrivals();
    let mut ms = Vec::with_capacity(sent.len());
    for (run, at) in sent {
        let attempts: Vec<Uuid> =
            sqlx::query_scalar("SELECT id FROM task_attempts WHERE run_id = $1")
                .bind(run)
                .fetch_all(&env.pool)
                .await?;
        // The root is the first of the mission's tasks to reach the worker.
        if let Some(first) = attempts.iter().filter_map(|a| arrivals.get(a)).min()
            && let Ok(d) = first.duration_since(at)
        {
            ms.push(d.as_secs_f64() * 1000.0);
        }
    }
    ms.sort_by(f64::total_cmp);
    Ok(SingleLatency {
        runs: ms.len(),
        p50_ms: percentile(&ms, 50.0),
        p95_ms: percentile(&ms, 95.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_json_line_is_the_report() {
        let out = "WARNING: pool\n{\"version\":\"0.18.0\",\"concurrency\":256,\"jobs\":1000,\"jobs_per_s\":1287.2,\"burst_secs\":0.78,\"burst_add_to_start_p50_ms\":323.3,\"burst_add_to_start_p95_ms\":624.7,\"chain_steps\":20,\"chain_step_ms\":16.9,\"single_jobs\":200,\"single_add_to_start_p50_ms\":2.3,\"single_add_to_start_p95_ms\":6.5}\n";
        let r = parse(out).expect("parsed");
        assert_eq!((r.jobs, r.chain_steps), (1000, 20));
        assert_eq!(r.single_add_to_start_p95_ms, 6.5);
        assert!(parse("no json here").is_err());
    }
}
