//! `GET /metrics`: Prometheus text format.
//!
//! The figures are database-wide (every workspace), so on the API port the
//! route needs an admin token. Scrapers rarely carry bearer tokens: serve
//! `--metrics-listen` (a second listener with only `/metrics`, no token) on
//! an address only the scraper reaches. The scrape shows aggregate figures
//! and never goals, outputs or secrets; per-agent series (which name
//! workspaces and agents) are left out unless `--metrics-agent-labels`.
//! Database gauges are computed per scrape ([`crate::store::metrics`]); if
//! the database does not answer in time, the process-local figures are still
//! served and `coordinator_metrics_db_up` is 0.

use axum::{
    Router,
    extract::State,
    http::header,
    response::{IntoResponse, Response},
    routing::get,
};

use super::AppState;
use crate::{
    auth::{Principal, Role},
    error::ApiError,
    metrics::{CONTENT_TYPE, Exposition, HistogramSnapshot, cumulate},
    store::metrics::{self as sql, DbSnapshot, TRUST_BUCKETS},
};

/// Per-statement timeout of the scrape's queries.
pub const STATEMENT_TIMEOUT_MS: u32 = 2000;

/// The metrics route of the API port: admin tokens only.
pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(scrape_with_token))
}

/// The metrics listener's routes: `/metrics` without a token, nothing else.
pub fn open_router(state: AppState) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(state): State<AppState>| scrape(state)),
        )
        .with_state(state)
}

async fn scrape_with_token(
    State(state): State<AppState>,
    who: Principal,
) -> Result<Response, ApiError> {
    who.require(&[Role::Admin])?;
    Ok(scrape(state).await)
}

async fn scrape(state: AppState) -> Response {
    let db = match sql::snapshot(&state.pool, STATEMENT_TIMEOUT_MS).await {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: database figures unavailable");
            None
        }
    };
    let mut out = Exposition::default();
    state.engine.metrics.render(&mut out);
    out.gauge(
        "coordinator_db_pool_connections",
        "Connections this replica's pool holds, idle or in use (per replica).",
        f64::from(state.pool.size()),
    );
    out.gauge(
        "coordinator_db_pool_idle_connections",
        "Idle connections in this replica's pool (per replica).",
        state.pool.num_idle() as f64,
    );
    out.gauge(
        "coordinator_db_pool_max_connections",
        "Largest size of this replica's pool (per replica).",
        f64::from(state.pool.options().get_max_connections()),
    );
    out.gauge(
        "coordinator_db_up",
        "1 if this replica's database answered its last ping (once a second), 0 while it is away (per replica).",
        if state.db_health.is_up() { 1.0 } else { 0.0 },
    );
    out.counter(
        "coordinator_db_outages_total",
        "Times this replica lost its database since it started (per replica).",
        state.db_health.outages(),
    );
    out.counter(
        "coordinator_db_primary_switches_total",
        "Times this replica moved its pool to another server of a multi-host DATABASE_URL (per replica).",
        crate::db::PRIMARY_SWITCHES.load(std::sync::atomic::Ordering::Relaxed),
    );
    out.gauge(
        "coordinator_metrics_db_up",
        "1 if the database figures of this scrape were read, 0 if not.",
        if db.is_some() { 1.0 } else { 0.0 },
    );
    if let Some(db) = &db {
        render_db(&mut out, db, state.metrics_agent_labels);
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], out.finish()).into_response()
}

/// Appends the database-wide families; the per-agent inbox series (labelled
/// by workspace and agent) only with `agent_labels`.
pub fn render_db(out: &mut Exposition, db: &DbSnapshot, agent_labels: bool) {
    out.family(
        "coordinator_tasks",
        "gauge",
        "Tasks by status (database-wide).",
    );
    for (status, n) in &db.tasks_by_status {
        out.sample("coordinator_tasks", &[("status", status)], *n as f64);
    }
    out.family(
        "coordinator_missions",
        "gauge",
        "Missions by status (database-wide).",
    );
    for (status, n) in &db.missions_by_status {
        out.sample("coordinator_missions", &[("status", status)], *n as f64);
    }
    out.gauge(
        "coordinator_queue_ready",
        "Queued tasks whose ready time has passed: the dispatch backlog (database-wide).",
        db.queue_ready as f64,
    );
    out.gauge(
        "coordinator_queue_total",
        "Queued tasks including retries and continuations not yet due (database-wide).",
        db.queue_total as f64,
    );
    out.family(
        "coordinator_decision_queue",
        "gauge",
        "Decisions waiting for people, by kind (database-wide).",
    );
    for (kind, n) in [
        ("governance", db.governance_pending),
        ("tool_approval", db.tool_approvals_pending),
        ("team_decision", db.team_decisions_open),
    ] {
        out.sample("coordinator_decision_queue", &[("kind", kind)], n as f64);
    }
    out.gauge(
        "coordinator_inbox_unread",
        "Unread messages over all agents (database-wide).",
        db.inbox_unread_total as f64,
    );
    if agent_labels {
        out.family(
            "coordinator_inbox_unread_by_agent",
            "gauge",
            "Unread messages of the agents with the deepest inboxes (top 100 only; database-wide).",
        );
        for (ws, agent, n) in &db.inbox_top {
            out.sample(
                "coordinator_inbox_unread_by_agent",
                &[("workspace", ws), ("agent", agent)],
                *n as f64,
            );
        }
    }
    out.family(
        "coordinator_agent_trust",
        "histogram",
        "Trust scores of agents (database-wide).",
    );
    out.histogram(
        "coordinator_agent_trust",
        &[],
        &trust_histogram(&db.trust_counts, db.trust_sum),
    );
    out.family(
        "coordinator_plan_cases",
        "gauge",
        "Finished missions in the plan library by planner and outcome (database-wide).",
    );
    for (planner, ok, failed) in &db.plan_cases {
        out.sample(
            "coordinator_plan_cases",
            &[("planner", planner), ("outcome", "succeeded")],
            *ok as f64,
        );
        out.sample(
            "coordinator_plan_cases",
            &[("planner", planner), ("outcome", "failed")],
            *failed as f64,
        );
    }
    out.family(
        "coordinator_plan_success_ratio",
        "gauge",
        "Succeeded / finished missions per planner, from the plan library (database-wide).",
    );
    for (planner, ok, failed) in &db.plan_cases {
        if let Some(r) = success_ratio(*ok, *failed) {
            out.sample("coordinator_plan_success_ratio", &[("planner", planner)], r);
        }
    }
    out.gauge(
        "coordinator_belief_conflicts",
        "Belief conflicts the BDI cycles have reported (database-wide).",
        db.belief_conflicts as f64,
    );
    out.family(
        "coordinator_events_written_total",
        "counter",
        "Events written: the highest event id (database-wide).",
    );
    out.sample(
        "coordinator_events_written_total",
        &[],
        db.events_written as f64,
    );
}

/// `ok / (ok + failed)`, or `None` with nothing finished.
pub fn success_ratio(ok: i64, failed: i64) -> Option<f64> {
    let total = ok + failed;
    (total > 0).then(|| ok as f64 / total as f64)
}

/// The trust histogram: tenths as `le` buckets, `+Inf` equal to the last.
fn trust_histogram(counts: &[u64; 10], sum: f64) -> HistogramSnapshot {
    let mut raw = counts.to_vec();
    raw.push(0);
    HistogramSnapshot {
        bounds: TRUST_BUCKETS.to_vec(),
        cumulative: cumulate(&raw),
        sum,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_ratio_is_undefined_without_finished_missions() {
        assert_eq!(success_ratio(0, 0), None);
        assert_eq!(success_ratio(3, 1), Some(0.75));
        assert_eq!(success_ratio(0, 2), Some(0.0));
    }

    #[test]
    fn trust_histogram_is_cumulative_with_inf_equal_to_total() {
        let h = trust_histogram(&[1, 0, 0, 0, 2, 0, 0, 0, 0, 1], 2.4);
        assert_eq!(h.cumulative, vec![1, 1, 1, 1, 3, 3, 3, 3, 3, 4, 4]);
        assert_eq!(h.bounds.len() + 1, h.cumulative.len());
    }

    #[test]
    fn database_families_render_with_labels() {
        let db = DbSnapshot {
            tasks_by_status: vec![("succeeded".into(), 3)],
            tool_approvals_pending: 2,
            plan_cases: vec![("llm".into(), 3, 1)],
            ..Default::default()
        };
        let mut out = Exposition::default();
        render_db(&mut out, &db, true);
        let text = out.finish();
        assert!(text.contains("coordinator_tasks{status=\"succeeded\"} 3\n"));
        assert!(text.contains("coordinator_decision_queue{kind=\"tool_approval\"} 2\n"));
        assert!(text.contains("coordinator_plan_success_ratio{planner=\"llm\"} 0.75\n"));
        assert!(text.contains("coordinator_agent_trust_bucket{le=\"+Inf\"} 0\n"));
    }
}
