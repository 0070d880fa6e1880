//! The HTTP surface: `/v1` REST routes (one file per resource), health
//! probes, the web board at `/` ([`web`]), and [`Application`], which
//! binds, serves and runs the engine.

pub mod agents;
pub mod attempts;
pub mod attention;
pub mod bdi;
pub mod blackboard;
pub mod board;
pub mod connections;
pub mod contract;
pub mod contract_net;
pub mod doc;
pub mod events;
pub mod extract;
pub mod governance;
pub mod handoffs;
pub mod mcp;
pub mod messages;
pub mod metrics;
mod mission_errors;
pub mod missions;
pub mod openapi;
pub mod organisation;
pub mod page;
pub mod plan_library;
pub mod rate_limit;
pub mod reservations;
pub mod stream;
pub mod team_decisions;
pub mod timeline;
pub mod tokens;
pub mod tool_approvals;
pub mod tools;
pub mod web;
pub mod webhooks;
pub mod workflow_instances;
pub mod workflows;
pub mod workforce;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{DefaultBodyLimit, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::json;
use sqlx::PgPool;
use tokio::{net::TcpListener, sync::watch};
use tower_http::{catch_panic::CatchPanicLayer, trace::TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    engine::{Engine, EngineConfig},
    missions::PlanningConfig,
    retention::{self, RetentionConfig},
    webhooks::{
        RetryPolicy,
        deliver::{self, PumpConfig},
    },
};

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub pool: PgPool,
    /// Engine settings (leases, retries) that callbacks apply.
    pub engine: Arc<EngineConfig>,
    /// Planning settings.
    pub planning: Arc<PlanningConfig>,
    /// Client for calls to workers (cancel notifications).
    pub http: crate::egress::Client,
    /// Ticks on every engine wake-up: event streams wait on it.
    pub wake: tokio::sync::watch::Receiver<u64>,
    /// Seconds between scheduled BDI maintenance cycles (shown by its status).
    pub bdi_interval_secs: u32,
    /// Turns true when the server starts shutting down: open streams end,
    /// so a graceful shutdown does not wait on them forever.
    pub stop: watch::Receiver<bool>,
    /// Per-credential request limits of this replica.
    pub limiter: Arc<rate_limit::RateLimiter>,
    /// Whether `/metrics` shows series labelled by workspace and agent.
    pub metrics_agent_labels: bool,
    /// Client for webhook deliveries (webhook egress policy); `http` is the
    /// agent client (agent egress policy).
    pub webhook_http: crate::egress::Client,
    /// Whether the database answers, as this replica's watcher sees it.
    pub db_health: Arc<crate::db::Health>,
    /// How long a request may take before it is answered 503.
    pub request_timeout: std::time::Duration,
}

impl AppState {
    /// What the chat tools need of this state.
    pub fn tools(&self) -> crate::tools::ToolContext<'_> {
        crate::tools::ToolContext {
            pool: &self.pool,
            planning: &self.planning,
            http: &self.http,
            approval_timeout_secs: self.engine.tool_approval_timeout.as_secs(),
            wake: &self.wake,
            notifier: self.engine.events_notifier.as_ref(),
        }
    }
}

/// The router with every route and layer.
pub fn router(state: AppState) -> Router {
    let limiter = axum::middleware::from_fn_with_state(state.clone(), rate_limit::limit_anonymous);
    let deadline = axum::middleware::from_fn_with_state(state.clone(), deadline);
    // The document is built once for the process (`document`).
    let (api, _) = slices().split_for_parts();
    api.merge(metrics::router())
        .merge(mcp::router())
        .merge(openapi::router(document()))
        // Only `/` and `/assets/…`: unknown paths still get the JSON 404 below.
        .merge(web::router())
        .fallback(extract::not_found)
        .method_not_allowed_fallback(extract::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(deadline)
        .layer(limiter)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .with_state(state)
}

/// Answers 503 `unavailable` to a request still unanswered at its deadline
/// (a database that stopped answering mid-statement, a lock held for ever)
/// and drops its work, whose transaction rolls back. An event stream is
/// answered at once, so only its start is timed.
async fn deadline(
    State(state): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let route = req.uri().path().to_owned();
    match tokio::time::timeout(state.request_timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) => {
            let secs = state.request_timeout.as_secs();
            tracing::warn!(route, secs, "a request passed its deadline; answered 503");
            crate::error::ApiError::Unavailable(format!(
                "the request did not finish within its deadline ({secs} s); try again"
            ))
            .into_response()
        }
    }
}

/// Every documented operation: each slice brings its routes and their
/// OpenAPI paths together.
fn slices() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .merge(agents::router())
        .merge(missions::router())
        .merge(attention::router())
        .merge(blackboard::router())
        .merge(attempts::router())
        .merge(events::router())
        .merge(board::router())
        .merge(webhooks::router())
        .merge(messages::router())
        .merge(organisation::router())
        .merge(reservations::router())
        .merge(contract_net::router())
        .merge(governance::router())
        .merge(workforce::router())
        .merge(handoffs::router())
        .merge(bdi::router())
        .merge(tool_approvals::router())
        .merge(team_decisions::router())
        .merge(timeline::router())
        .merge(plan_library::router())
        .merge(workflows::router())
        .merge(workflow_instances::router())
        .merge(tokens::router())
        .merge(tools::router())
}

/// The whole OpenAPI document, as `/openapi.json` serves it (built once).
pub fn document() -> &'static serde_json::Value {
    static DOCUMENT: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(|| contract::served(&finished()));
    &DOCUMENT
}

/// The typed document with every operation and the rules of `finish`,
/// before `contract` writes the checks' rules into its JSON.
pub(crate) fn finished() -> utoipa::openapi::OpenApi {
    let mut doc = slices().into_openapi();
    openapi::finish(&mut doc);
    doc
}

/// The span of one request: method and route (never the query, which may
/// carry a token), joined to the caller's trace when it sent `traceparent`
/// (a worker's callback joins the trace of its dispatch).
fn request_span(req: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| req.uri().path(), |m| m.as_str());
    let span = tracing::info_span!(
        "http.request",
        otel.name = format!("{} {route}", req.method()),
        otel.kind = "server",
        http.request.method = %req.method(),
        http.route = route,
    );
    crate::telemetry::adopt_parent(&span, req.headers());
    span
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    let body = json!({ "error": { "code": "internal_error", "message": "internal error; it has been logged", "details": null } });
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

/// Liveness: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "health",
    operation_id = "healthz",
    responses((status = 200, description = "Alive", body = doc::Health))
)]
async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

/// Readiness: the database answers within 2 s and has every migration this binary knows.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "health",
    operation_id = "readyz",
    responses(
        (status = 200, description = "Ready", body = doc::Health),
        (status = 503, description = "The database is not reachable, or reachable but behind this binary's migrations (`unavailable`; `details.missing_migrations` lists the versions not applied)", body = doc::ErrorBody)
    )
)]
async fn readyz(State(state): State<AppState>) -> Response {
    // `_sqlx_migrations` belongs to sqlx, not to our schema, so it is read with
    // an unchecked query (the offline `.sqlx/` data cannot describe it).
    let applied = tokio::time::timeout(
        Duration::from_secs(2),
        sqlx::query_scalar::<_, i64>("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(&state.pool),
    )
    .await;
    let applied = match applied {
        Ok(Ok(versions)) => versions,
        _ => {
            let body = json!({ "error": { "code": "unavailable", "message": "the database is not reachable", "details": null } });
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
    };
    let missing = crate::db::missing_migrations(&applied);
    if missing.is_empty() {
        return axum::Json(json!({ "status": "ready" })).into_response();
    }
    let body = json!({ "error": {
        "code": "unavailable",
        "message": format!("the database is missing {} migration(s) of this binary; run `coordinator migrate`", missing.len()),
        "details": { "missing_migrations": missing },
    } });
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
}

/// The clients for calls to workers and to webhooks, each bound to its egress policy.
fn http_clients(
    egress: &crate::egress::Settings,
) -> anyhow::Result<(crate::egress::Client, crate::egress::Client)> {
    use crate::egress::{Client, Policy};
    let agents = Policy::agents(egress.agent_networks.clone(), egress.hosts.clone());
    let webhooks = Policy::webhooks(egress.webhook_networks.clone(), egress.hosts.clone());
    Ok((Client::new(agents)?, Client::new(webhooks)?))
}

/// How to run the service.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Address to bind (port 0 for any).
    pub listen: SocketAddr,
    /// Base URL workers call back; `None` derives it from the bound address.
    pub public_url: Option<String>,
    /// Engine settings (its `public_url` is filled in by [`Application::build`]).
    pub engine: EngineConfig,
    /// Planning settings.
    pub planning: PlanningConfig,
    /// Run the tick loop in this process (false: API only).
    pub run_engine: bool,
    /// Event retention (runs with the engine).
    pub retention: RetentionConfig,
    /// Webhook retry spacing (the pump runs with the engine).
    pub webhook_retry: RetryPolicy,
    /// Seconds between BDI maintenance cycles (runs with the engine; one
    /// replica at a time).
    pub bdi_interval_secs: u32,
    /// Per-credential API rate limit (off unless set; the CLI sets its defaults).
    pub rate_limit: rate_limit::RateLimit,
    /// A second listener serving only `/metrics`, without a token (on the
    /// API port `/metrics` needs an admin token).
    pub metrics_listen: Option<SocketAddr>,
    /// Include metric series labelled by workspace and agent.
    pub metrics_agent_labels: bool,
    /// Which addresses agent endpoints and webhooks may reach.
    pub egress: crate::egress::Settings,
    /// Client connection timeouts and caps (the overall cap is lowered to fit
    /// the open-file limit at start).
    pub connections: connections::ConnectionLimits,
}

impl Settings {
    /// Defaults for `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        Settings {
            listen,
            public_url: None,
            engine: EngineConfig::new(String::new()),
            planning: PlanningConfig::default(),
            run_engine: true,
            retention: RetentionConfig::default(),
            webhook_retry: RetryPolicy::default(),
            bdi_interval_secs: crate::bdi::runtime::DEFAULT_INTERVAL_SECS,
            rate_limit: rate_limit::RateLimit::DISABLED,
            metrics_listen: None,
            metrics_agent_labels: false,
            egress: crate::egress::Settings::default(),
            connections: connections::ConnectionLimits::default(),
        }
    }
}

/// A bound, ready-to-run service: API plus engine.
pub struct Application {
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    stop: watch::Sender<bool>,
    state: AppState,
    run_engine: bool,
    retention: RetentionConfig,
    webhook_retry: RetryPolicy,
    connections: connections::ConnectionLimits,
}

impl Application {
    /// Binds the listener and prepares the state.
    pub async fn build(pool: PgPool, settings: Settings) -> anyhow::Result<Application> {
        // Idle clients cost a descriptor each: take all the system allows,
        // and keep the connection cap below it.
        let connections = settings
            .connections
            .fitted_to(connections::raise_fd_limit());
        let listener = TcpListener::bind(settings.listen).await?;
        let addr = listener.local_addr()?;
        let metrics_listener = match settings.metrics_listen {
            Some(at) => Some(TcpListener::bind(at).await?),
            None => None,
        };
        let mut engine = settings.engine;
        let (http, webhook_http) = http_clients(&settings.egress)?;
        engine.worker_http = http.clone();
        // Replanning around a failed task needs a planner that can plan anew.
        engine.escalation_replan = settings.planning.llm.is_some();
        let mut planning = settings.planning;
        // Plans may include tasks nobody on the roster can do when contractors can be hired.
        planning.contractors = engine.contractor_url.is_some();
        engine.public_url = settings
            .public_url
            .unwrap_or_else(|| format!("http://{addr}"));
        // Reports applied here wake this replica's engine in-process; a
        // replica without an engine NOTIFYs the others instead.
        if settings.run_engine {
            engine.local_wake = Some(Arc::new(tokio::sync::Notify::new()));
        }
        // The engine's claims and reports announce their events after
        // committing, so they do not queue on NOTIFY's commit lock.
        engine.events_notifier = Some(crate::store::event_notify::Notifier::start(
            &pool,
            engine.local_wake.clone(),
        ));
        // Group commit of reports: its committers use a configuration
        // without the queue itself.
        if engine.report_batch > 1 {
            engine.reports = None;
            let max_batch = engine.report_batch;
            engine.reports = Some(crate::engine::report_batch::ReportQueue::start(
                pool.clone(),
                engine.clone(),
                max_batch,
            ));
        }
        let (stop, stop_rx) = watch::channel(false);
        Ok(Application {
            listener,
            metrics_listener,
            stop,
            state: AppState {
                wake: stream::spawn_wake_listener(pool.clone()),
                db_health: crate::db::watch(pool.clone()),
                stop: stop_rx,
                pool,
                engine: Arc::new(engine),
                planning: Arc::new(planning),
                http,
                bdi_interval_secs: settings.bdi_interval_secs,
                limiter: Arc::new(rate_limit::RateLimiter::new(settings.rate_limit)),
                metrics_agent_labels: settings.metrics_agent_labels,
                webhook_http,
                request_timeout: connections.request_timeout,
            },
            run_engine: settings.run_engine,
            retention: settings.retention,
            webhook_retry: settings.webhook_retry,
            connections,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// The base URL of the API.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr())
    }

    /// The base URL of the metrics listener, when there is one.
    pub fn metrics_url(&self) -> Option<String> {
        let addr = self.metrics_listener.as_ref()?.local_addr().ok()?;
        Some(format!("http://{addr}"))
    }

    /// Serves until `shutdown` completes, then stops the engine (which lets
    /// in-flight dispatches finish) and the server (which drains requests).
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = (self.stop, self.state.stop.clone());
        let engine = self.run_engine.then(|| {
            let engine = Engine::new(
                self.state.pool.clone(),
                (*self.state.engine).clone(),
                self.state.planning.clone(),
                self.state.http.clone(),
            );
            tokio::spawn(engine.run(stop_rx.clone()))
        });
        // Background jobs that go with the engine: the webhook pump and retention.
        let pump = self.run_engine.then(|| {
            let cfg = PumpConfig {
                retry: self.webhook_retry,
                http: self.state.http.clone(),
                webhook_http: self.state.webhook_http.clone(),
            };
            tokio::spawn(deliver::run(
                self.state.pool.clone(),
                cfg,
                self.state.wake.clone(),
                stop_rx.clone(),
            ))
        });
        let mut retention = if self.run_engine {
            retention::schedule(self.state.pool.clone(), self.retention).await?
        } else {
            None
        };
        // The BDI maintenance job: every replica schedules it, an advisory
        // lock lets one run a cycle at a time.
        let mut bdi = if self.run_engine {
            Some(
                crate::bdi::runtime::schedule(
                    self.state.pool.clone(),
                    self.state.bdi_interval_secs,
                    self.state.engine.replica_id.clone(),
                )
                .await?,
            )
        } else {
            None
        };
        let metrics_server = self.metrics_listener.map(|listener| {
            let mut stop = stop_rx.clone();
            let app = metrics::open_router(self.state.clone());
            tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stop.wait_for(|stop| *stop).await;
                    })
                    .await
            })
        });
        let server_stop = stop_rx.clone();
        let grace = self.state.engine.shutdown_grace;
        let app = router(self.state);
        let server = connections::serve(self.listener, app, self.connections, server_stop);
        let mut server = tokio::spawn(server);
        shutdown.await;
        tracing::info!("shutting down: no new claims; finishing in-flight work");
        let _ = stop_tx.send(true);
        if let Some(engine) = engine {
            let _ = engine.await;
        }
        if let Some(pump) = pump {
            let _ = pump.await;
        }
        if let Some(scheduler) = retention.as_mut() {
            let _ = scheduler.shutdown().await;
        }
        if let Some(scheduler) = bdi.as_mut() {
            let _ = scheduler.shutdown().await;
        }
        // A scrape is short; one still running at the grace's end is dropped.
        if let Some(metrics) = metrics_server
            && tokio::time::timeout(grace, metrics).await.is_err()
        {
            tracing::warn!("a metrics scrape outlived the grace period");
        }
        // Requests still open after the grace period (a stuck client) are cut off.
        match tokio::time::timeout(grace, &mut server).await {
            Ok(served) => served?,
            Err(_) => {
                tracing::warn!(
                    grace_secs = grace.as_secs_f64(),
                    "HTTP requests still open after the grace period; closing them"
                );
                server.abort();
            }
        }
        Ok(())
    }
}
