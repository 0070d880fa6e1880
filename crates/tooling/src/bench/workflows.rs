//! The workflow section of `coordinator bench` (issue 20): token transitions
//! per second of BPMN instances running on the engine, beside the plain
//! mission engine's tasks per second measured in the same run.
//!
//! The process has [`NODES`] nodes: a start event, [`TASKS`] user tasks in a
//! line, an end event. `--workflow-instances` instances of it are started
//! through the API (`--client-concurrency` at once); then
//! `--workflow-clients` client tasks complete the task each instance waits
//! on (`POST /v1/workflow-instances/{id}/tokens/{t}/complete`), round robin
//! over all instances (an instance whose task was completed goes to the back
//! of the queue with its next task), until every instance has ended.
//!
//! **A token transition** is a token taking a sequence flow: an entry of the
//! instance's `history` with `what` = `taken`. Here each completion moves
//! one token over one flow, so the completion phase has [`TASKS`] per
//! instance; they are counted from the histories the last answers carry
//! (minus those already there at the start), not assumed. Each is one
//! request and, inside it, one instance transaction: lock the row, apply the
//! runner's command, write the state and the token projection, commit.
//! Transitions per second are counted over the completion phase's wall time,
//! on one fresh replica, like the throughput phases (and with the same
//! database counts: statements, commits, writing transactions and WAL per
//! transition, lock waiters).
//!
//! The latency of one complete request is reported under that load (which
//! includes queueing: about clients ÷ rate) and alone: [`SOLO_INSTANCES`]
//! more instances driven one request at a time before the phase.
//!
//! A second variant (`--workflow-service-instances`, smaller) runs the same
//! line of service tasks: each is then a one-task mission dispatched to an
//! agent (the instant worker), and the engine, woken by the report, applies
//! finished missions to their instances (`workflows::pump`), timed from the first
//! start to the last instance's end.
//!
//! The section runs last, in the bench's main database, so it changes no
//! other phase's figures.

use std::{
    collections::VecDeque,
    fmt::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use futures::{StreamExt, stream, stream::FuturesUnordered};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    Api, BenchArgs,
    env::{BenchEnv, Replica, warm_up},
    observe::{PhaseCounts, TopStatement, db_cost},
    percentile,
};

/// Nodes of the benchmark process: start event, tasks, end event.
pub const NODES: usize = 20;
/// Tasks in the line.
pub const TASKS: usize = NODES - 2;
/// Instances driven one request at a time for the latency of a lone request.
const SOLO_INSTANCES: usize = 3;

/// What the tasks of the line are.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// People's tasks: completed through the API.
    User,
    /// Agents' tasks: each a one-task mission.
    Service,
}

/// The service-task variant's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceReport {
    /// Instances run.
    pub instances: usize,
    /// Token transitions counted (all of the instances': the start's too).
    pub transitions: u64,
    /// First start request sent → last instance ended, s.
    pub secs: f64,
    /// Transitions per second over that time.
    pub transitions_per_s: f64,
    /// Median of each instance's (end − start) ÷ its tasks, ms: one agent step.
    pub step_ms: f64,
}

/// The workflow section's figures (`--json-out`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowReport {
    /// Instances started and driven to their end.
    pub instances: usize,
    /// Nodes of the process.
    pub nodes: usize,
    /// Client tasks completing tasks at once.
    pub clients: usize,
    /// Instances started per second through the API.
    pub starts_per_s: f64,
    /// Token transitions in the completion phase (`taken` history entries).
    pub transitions: u64,
    /// Wall time of the completion phase, s.
    pub secs: f64,
    /// Transitions per second over that time.
    pub transitions_per_s: f64,
    /// One complete request under the phase's load, median, ms.
    pub complete_p50_ms: f64,
    /// The same, 95th percentile, ms.
    pub complete_p95_ms: f64,
    /// The same, 99th percentile, ms.
    pub complete_p99_ms: f64,
    /// One complete request alone (one client, nothing else running), median, ms.
    pub solo_p50_ms: f64,
    /// The plain engine's tasks per second in the same run (the ratio's denominator).
    pub tasks_per_s: f64,
    /// The replica count of that throughput phase.
    pub tasks_replicas: usize,
    /// Transactions that wrote, per transition.
    #[serde(default)]
    pub write_txns_per_transition: Option<f64>,
    /// WAL bytes per transition.
    #[serde(default)]
    pub wal_bytes_per_transition: Option<f64>,
    /// Top-level statements per transition (`pg_stat_statements`).
    #[serde(default)]
    pub stmts_per_transition: Option<f64>,
    /// Committed transactions per transition, read-only ones too.
    #[serde(default)]
    pub commits_per_transition: Option<f64>,
    /// Lock waiters, mean of samples.
    #[serde(default)]
    pub lock_waiters_mean: Option<f64>,
    /// Share of samples with a lock waiter (0–1).
    #[serde(default)]
    pub lock_wait_share: Option<f64>,
    /// The statements that took the most time (calls per transition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_statements: Vec<TopStatement>,
    /// The service-task variant, if run.
    #[serde(default)]
    pub service: Option<ServiceReport>,
}

impl WorkflowReport {
    /// Transitions per second over the plain engine's tasks per second.
    pub fn x_tasks(&self) -> f64 {
        self.transitions_per_s / self.tasks_per_s
    }
}

/// The process as a BPMN document: `start → t01 → … → t18 → end`.
fn process_xml(kind: Kind) -> String {
    let element = match kind {
        Kind::User => "userTask",
        Kind::Service => "serviceTask",
    };
    let mut nodes = String::from(r#"<startEvent id="start"/>"#);
    let mut flows = String::new();
    let mut previous = "start".to_owned();
    for i in 1..=TASKS {
        let id = format!("t{i:02}");
        let _ = write!(nodes, r#"<{element} id="{id}" name="Step {i}"/>"#);
        let _ = write!(
            flows,
            r#"<sequenceFlow id="f{i:02}" sourceRef="{previous}" targetRef="{id}"/>"#
        );
        previous = id;
    }
    nodes.push_str(r#"<endEvent id="end"/>"#);
    let _ = write!(
        flows,
        r#"<sequenceFlow id="f{:02}" sourceRef="{previous}" targetRef="end"/>"#,
        TASKS + 1
    );
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="bench" targetNamespace="https://coordinator.dev/bench"><process id="line" isExecutable="true">{nodes}{flows}</process></definitions>"#
    )
}

/// Imports `xml` as a new workflow; its id (refused unless it validates).
async fn import(api: &Api, xml: String, name: &str) -> anyhow::Result<Uuid> {
    let path = format!("/v1/workflows/import?name={name}");
    let req = api
        .http
        .post(format!("{}{path}", api.base))
        .header(reqwest::header::CONTENT_TYPE, "application/xml")
        .body(xml);
    let w = api.send(&path, req).await?;
    if w["validation"]["valid"] != true {
        bail!("the bench's process does not validate: {}", w["validation"]);
    }
    w["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .context("workflow id")
}

/// A user task waiting: the instance and its token.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    id: Uuid,
    token: i64,
}

/// Where an instance stands after an answer.
enum Next {
    /// Its next task waits on this token.
    Task(i64),
    /// It completed, with this many `taken` entries in its history.
    Done(u64),
}

/// `taken` entries in an instance view's history.
fn taken(view: &Value) -> u64 {
    view["history"].as_array().map_or(0, |h| {
        h.iter().filter(|s| s["what"] == "taken").count() as u64
    })
}

/// Reads where an instance view stands; an instance that is neither running
/// with a person's task nor completed is an error.
fn next(view: &Value) -> anyhow::Result<Next> {
    match view["status"].as_str() {
        Some("completed") => Ok(Next::Done(taken(view))),
        Some("running") => view["human_tasks"][0]["token"]
            .as_i64()
            .map(Next::Task)
            .with_context(|| {
                format!(
                    "instance {} runs but waits on no person's task: incidents {}",
                    view["id"], view["incidents"]
                )
            }),
        other => bail!(
            "instance {} ended {other:?}: incidents {}",
            view["id"],
            view["incidents"]
        ),
    }
}

/// Starts `n` instances of `workflow`, `concurrency` at once; their views.
async fn start_instances(
    api: &Api,
    workflow: Uuid,
    n: usize,
    concurrency: usize,
) -> anyhow::Result<Vec<Value>> {
    let path = format!("/v1/workflows/{workflow}/instances");
    stream::iter(0..n)
        .map(|i| {
            let path = &path;
            async move {
                api.post(path, json!({ "business_key": format!("bench-{i}") }))
                    .await
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect::<Vec<anyhow::Result<Value>>>()
        .await
        .into_iter()
        .collect()
}

/// The instance's first task, and how many flows it took to get there.
fn waiting(view: &Value) -> anyhow::Result<(Waiting, u64)> {
    let id = view["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .context("instance id")?;
    match next(view)? {
        Next::Task(token) => Ok((Waiting { id, token }, taken(view))),
        Next::Done(_) => bail!("instance {id} completed at its start"),
    }
}

/// Completes `w`'s task with an empty form; the answer and its time in ms.
async fn complete(api: &Api, w: Waiting) -> anyhow::Result<(Waiting, Value, f64)> {
    let t = Instant::now();
    let view = api
        .post(
            &format!(
                "/v1/workflow-instances/{}/tokens/{}/complete",
                w.id, w.token
            ),
            json!({ "output": {} }),
        )
        .await?;
    Ok((w, view, t.elapsed().as_secs_f64() * 1000.0))
}

/// What driving instances to their end recorded.
struct Driven {
    /// `taken` entries in the ended instances' histories.
    taken: u64,
    /// Instances that completed.
    completed: usize,
    /// Each complete request, ms.
    latencies: Vec<f64>,
}

/// Completes every instance's tasks until all have ended, `clients`
/// requests at once, round robin: an instance goes to the back of the queue
/// with its next task.
async fn drive(api: Arc<Api>, start: Vec<Waiting>, clients: usize) -> anyhow::Result<Driven> {
    let mut queue: VecDeque<Waiting> = start.into();
    let mut running = FuturesUnordered::new();
    let mut driven = Driven {
        taken: 0,
        completed: 0,
        latencies: Vec::with_capacity(queue.len() * TASKS),
    };
    loop {
        while running.len() < clients.max(1)
            && let Some(w) = queue.pop_front()
        {
            let api = api.clone();
            // A task each, so the answers are parsed on every core.
            running.push(tokio::spawn(async move { complete(&api, w).await }));
        }
        let Some(joined) = running.next().await else {
            break;
        };
        let (w, view, ms) = joined.context("a completing client panicked")??;
        driven.latencies.push(ms);
        match next(&view)? {
            Next::Task(token) => queue.push_back(Waiting { id: w.id, token }),
            Next::Done(n) => {
                driven.taken += n;
                driven.completed += 1;
            }
        }
    }
    Ok(driven)
}

/// The instances of the phase, started on a replica of their own.
struct Prepared {
    waiting: Vec<Waiting>,
    /// `taken` entries already in their histories (the start's flow).
    taken_at_start: u64,
    starts_per_s: f64,
    /// Lone complete requests, ms.
    solo_ms: Vec<f64>,
}

/// Imports the user-task process, starts the instances and times lone
/// requests on [`SOLO_INSTANCES`] more, on a replica stopped afterwards (so
/// none of this is in the phase's database counts).
async fn prepare(env: &BenchEnv, args: &BenchArgs) -> anyhow::Result<Prepared> {
    let replica = Replica::start(&env.url, env.replica_pool(1)).await?;
    let api = env.api(replica.base.clone());
    let result = async {
        let workflow = import(&api, process_xml(Kind::User), "bench-user-line").await?;
        eprintln!(
            "[workflows] starting {} instances of a {NODES}-node process…",
            args.workflow_instances
        );
        let t = Instant::now();
        let views = start_instances(
            &api,
            workflow,
            args.workflow_instances,
            args.client_concurrency,
        )
        .await?;
        let starts_per_s = views.len() as f64 / t.elapsed().as_secs_f64();
        let mut waiting = Vec::with_capacity(views.len());
        let mut taken_at_start = 0;
        for v in &views {
            let (w, n) = self::waiting(v)?;
            waiting.push(w);
            taken_at_start += n;
        }
        let mut solo_ms = Vec::new();
        for v in start_instances(&api, workflow, SOLO_INSTANCES, 1).await? {
            let mut w = self::waiting(&v)?.0;
            loop {
                let (_, view, ms) = complete(&api, w).await?;
                solo_ms.push(ms);
                match next(&view)? {
                    Next::Task(token) => w.token = token,
                    Next::Done(_) => break,
                }
            }
        }
        solo_ms.sort_by(f64::total_cmp);
        Ok(Prepared {
            waiting,
            taken_at_start,
            starts_per_s,
            solo_ms,
        })
    }
    .await;
    replica.stop().await;
    result
}

/// The completion phase's raw figures.
struct Phase {
    driven: Driven,
    secs: f64,
    counts: PhaseCounts,
    /// Writing transactions and WAL bytes over the phase.
    cost: Option<(i64, i64)>,
}

/// Drives the prepared instances to their end on a fresh replica, counted
/// as a throughput phase is (see `throughput::at_replicas`).
async fn completion_phase(
    env: &BenchEnv,
    args: &BenchArgs,
    prepared: &Prepared,
) -> anyhow::Result<Phase> {
    let mut phase = match &env.observer {
        Some(o) => Some(o.start_phase(&env.pool).await?),
        None => None,
    };
    let replica = Replica::start(&env.url, env.replica_pool(1)).await?;
    warm_up(env, std::slice::from_ref(&replica)).await?;
    if let (Some(o), Some(p)) = (&env.observer, &mut phase) {
        o.start_sampling(p).await?;
    }
    eprintln!(
        "[workflows] completing their tasks, {} clients…",
        args.workflow_clients
    );
    let api = Arc::new(env.api(replica.base.clone()));
    let before = db_cost(&env.server_pool).await.ok();
    let started = Instant::now();
    let driven = drive(api, prepared.waiting.clone(), args.workflow_clients).await;
    let secs = started.elapsed().as_secs_f64();
    let after = db_cost(&env.server_pool).await.ok();
    if let Some(p) = &mut phase {
        p.stop_sampling().await;
    }
    replica.stop().await;
    let driven = driven?;
    let transitions = driven.taken.saturating_sub(prepared.taken_at_start) as f64;
    let counts = match (&env.observer, phase) {
        (Some(o), Some(p)) => o.finish_phase(p, transitions.max(1.0)).await?,
        _ => PhaseCounts::default(),
    };
    let cost = before
        .zip(after)
        .map(|(b, a)| (a.next_xid - b.next_xid, a.wal_lsn - b.wal_lsn));
    Ok(Phase {
        driven,
        secs,
        counts,
        cost,
    })
}

/// Runs the section (see the module docs).
pub(crate) async fn measure(
    env: &BenchEnv,
    args: &BenchArgs,
    engine: (usize, f64),
) -> anyhow::Result<WorkflowReport> {
    let prepared = prepare(env, args).await?;
    let phase = completion_phase(env, args, &prepared).await?;
    let d = &phase.driven;
    anyhow::ensure!(
        d.completed == prepared.waiting.len(),
        "{} of {} instances completed",
        d.completed,
        prepared.waiting.len()
    );
    let transitions = d.taken.saturating_sub(prepared.taken_at_start);
    let mut latencies = d.latencies.clone();
    latencies.sort_by(f64::total_cmp);
    let per = |v: i64| v as f64 / transitions.max(1) as f64;
    let (tasks_replicas, tasks_per_s) = engine;
    let service = match args.workflow_service_instances {
        0 => None,
        n => Some(service(env, args, n).await?),
    };
    Ok(WorkflowReport {
        instances: prepared.waiting.len(),
        nodes: NODES,
        clients: args.workflow_clients,
        starts_per_s: prepared.starts_per_s,
        transitions,
        secs: phase.secs,
        transitions_per_s: transitions as f64 / phase.secs,
        complete_p50_ms: percentile(&latencies, 50.0),
        complete_p95_ms: percentile(&latencies, 95.0),
        complete_p99_ms: percentile(&latencies, 99.0),
        solo_p50_ms: percentile(&prepared.solo_ms, 50.0),
        tasks_per_s,
        tasks_replicas,
        write_txns_per_transition: phase.cost.map(|c| per(c.0)),
        wal_bytes_per_transition: phase.cost.map(|c| per(c.1)),
        stmts_per_transition: phase.counts.stmts_per_task,
        commits_per_transition: phase.counts.commits_per_task,
        lock_waiters_mean: phase.counts.lock_waiters_mean,
        lock_wait_share: phase.counts.lock_wait_share,
        top_statements: phase.counts.top,
        service,
    })
}

/// The service-task variant: `n` instances whose tasks are missions, on a
/// fresh replica, from the first start request to the last instance's end.
async fn service(env: &BenchEnv, args: &BenchArgs, n: usize) -> anyhow::Result<ServiceReport> {
    eprintln!(
        "[workflows] running {n} instances of the same line of service tasks (each a mission)…"
    );
    let replica = Replica::start(&env.url, env.replica_pool(1)).await?;
    let api = env.api(replica.base.clone());
    let result = async {
        let workflow = import(&api, process_xml(Kind::Service), "bench-service-line").await?;
        let started = Instant::now();
        let views = start_instances(&api, workflow, n, args.client_concurrency).await?;
        let ids: Vec<Uuid> = views
            .iter()
            .map(|v| v["id"].as_str().and_then(|s| s.parse().ok()))
            .collect::<Option<_>>()
            .context("instance id")?;
        let limit = Duration::from_secs(60 + (n * TASKS) as u64 / 10);
        wait_ended(env, &ids, limit).await?;
        let secs = started.elapsed().as_secs_f64();
        let ended: Vec<anyhow::Result<Value>> = stream::iter(&ids)
            .map(|id| {
                let api = &api;
                async move { api.get(&format!("/v1/workflow-instances/{id}")).await }
            })
            .buffer_unordered(args.client_concurrency.max(1))
            .collect()
            .await;
        let mut transitions = 0;
        for v in ended {
            match next(&v?)? {
                Next::Done(t) => transitions += t,
                Next::Task(_) => bail!("a service-task instance waits on a person"),
            }
        }
        let step_ms: f64 = sqlx::query_scalar(
            "SELECT percentile_cont(0.5) WITHIN GROUP (
                        ORDER BY extract(epoch FROM finished_at - created_at))::float8
                    * 1000 / $2
             FROM workflow_instances WHERE id = ANY($1)",
        )
        .bind(&ids)
        .bind(TASKS as f64)
        .fetch_one(&env.pool)
        .await?;
        Ok(ServiceReport {
            instances: n,
            transitions,
            secs,
            transitions_per_s: transitions as f64 / secs,
            step_ms,
        })
    }
    .await;
    replica.stop().await;
    result
}

/// Waits until none of `ids` runs; an instance that ended otherwise than
/// completed is an error.
async fn wait_ended(env: &BenchEnv, ids: &[Uuid], limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let (running, failed): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status = 'running'),
                    count(*) FILTER (WHERE status NOT IN ('running', 'completed'))
             FROM workflow_instances WHERE id = ANY($1)",
        )
        .bind(ids)
        .fetch_one(&env.pool)
        .await?;
        anyhow::ensure!(
            failed == 0,
            "{failed} service-task instance(s) did not complete"
        );
        if running == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{running} service-task instance(s) still running after {} s",
                limit.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Prints the section's lines and appends its figures to the last line.
pub(crate) fn print(w: &WorkflowReport, baseline_ms: f64, line: &mut Vec<String>) {
    println!(
        "workflows, {} instances of a {}-node process (start, {} user tasks in a line, end), {} clients: started at {:.0} instances/s; {} token transitions in {:.2} s = {:.0} transitions/s ({:.2}× the plain engine's {:.0} tasks/s, {} replica(s), same run)",
        w.instances,
        w.nodes,
        w.nodes.saturating_sub(2),
        w.clients,
        w.starts_per_s,
        w.transitions,
        w.secs,
        w.transitions_per_s,
        w.x_tasks(),
        w.tasks_per_s,
        w.tasks_replicas
    );
    println!(
        "  a token transition = a token taking a sequence flow (history `what` = `taken`): here one per user-task completion, i.e. one request and one instance transaction (lock, runner command, token projection, commit)"
    );
    let mut costs = Vec::new();
    if let Some(v) = w.stmts_per_transition {
        costs.push(format!("{v:.1} statements"));
    }
    if let Some(v) = w.commits_per_transition {
        costs.push(format!("{v:.1} commits"));
    }
    if let (Some(x), Some(b)) = (w.write_txns_per_transition, w.wal_bytes_per_transition) {
        costs.push(format!("{x:.2} writing transactions, {b:.0} WAL bytes"));
    }
    if let (Some(mean), Some(share)) = (w.lock_waiters_mean, w.lock_wait_share) {
        costs.push(format!(
            "lock waiters {mean:.2} ({:.0} % of samples)",
            share * 100.0
        ));
    }
    println!(
        "  complete request under {} clients: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; alone: p50 {:.2} ms ({:.1}× baseline){}",
        w.clients,
        w.complete_p50_ms,
        w.complete_p95_ms,
        w.complete_p99_ms,
        w.solo_p50_ms,
        w.solo_p50_ms / baseline_ms,
        if costs.is_empty() {
            String::new()
        } else {
            format!("; per transition {}", costs.join(", "))
        }
    );
    if !w.top_statements.is_empty() {
        println!(
            "  top statements by total time, completion phase (calls per transition, mean ms, share of time):"
        );
        for s in &w.top_statements {
            println!(
                "  {:>6.2} {:>8.3} ms {:>5.1} %  {}",
                s.calls_per_task,
                s.mean_ms,
                s.time_share * 100.0,
                s.query
            );
        }
    }
    line.extend([
        format!("wf_transitions_per_s={:.0}", w.transitions_per_s),
        format!("wf_transitions_x_tasks={:.2}", w.x_tasks()),
        format!("wf_complete_p50_ms={:.2}", w.complete_p50_ms),
        format!("wf_complete_p95_ms={:.2}", w.complete_p95_ms),
        format!("wf_complete_solo_p50_ms={:.2}", w.solo_p50_ms),
        format!("wf_starts_per_s={:.0}", w.starts_per_s),
    ]);
    if let Some(v) = w.stmts_per_transition {
        line.push(format!("wf_stmts_per_transition={v:.1}"));
    }
    if let Some(v) = w.commits_per_transition {
        line.push(format!("wf_commits_per_transition={v:.1}"));
    }
    if let (Some(x), Some(b)) = (w.write_txns_per_transition, w.wal_bytes_per_transition) {
        line.push(format!("wf_write_txns_per_transition={x:.2}"));
        line.push(format!("wf_wal_bytes_per_transition={b:.0}"));
    }
    if let Some(s) = &w.service {
        println!(
            "workflows, service tasks (each task a one-task mission dispatched to an agent, its outcome applied when the report wakes the engine): {} instances, {} transitions in {:.2} s = {:.0} transitions/s; one agent step p50 {:.0} ms",
            s.instances, s.transitions, s.secs, s.transitions_per_s, s.step_ms
        );
        line.push(format!(
            "wf_service_transitions_per_s={:.0}",
            s.transitions_per_s
        ));
        line.push(format!("wf_service_step_ms={:.0}", s.step_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_is_a_line_of_twenty_nodes() {
        let xml = process_xml(Kind::User);
        assert_eq!(xml.matches("<userTask ").count(), TASKS);
        assert_eq!(xml.matches("<sequenceFlow ").count(), NODES - 1);
        assert!(xml.contains(r#"<sequenceFlow id="f01" sourceRef="start" targetRef="t01"/>"#));
        assert!(xml.contains(r#"<sequenceFlow id="f19" sourceRef="t18" targetRef="end"/>"#));
        assert_eq!(
            process_xml(Kind::Service).matches("<serviceTask ").count(),
            TASKS
        );
    }

    #[test]
    fn views_read_as_the_next_task_or_the_end() {
        let running = json!({"id": "x", "status": "running", "human_tasks": [{"token": 7}],
                             "history": [{"what": "entered"}, {"what": "taken"}]});
        assert!(matches!(next(&running).unwrap(), Next::Task(7)));
        assert_eq!(taken(&running), 1);
        let done = json!({"status": "completed", "history": [{"what": "taken"}, {"what": "taken"}, {"what": "completed"}]});
        assert!(matches!(next(&done).unwrap(), Next::Done(2)));
        assert!(next(&json!({"status": "running", "human_tasks": []})).is_err());
        assert!(next(&json!({"status": "failed"})).is_err());
    }
}
