//! `GET /metrics`: the scrape parses as Prometheus text, its figures follow
//! what the service did (tasks, dispatches, failures, queue, decisions), and
//! the Grafana dashboard only queries metrics the scrape exposes.

use std::collections::{BTreeMap, BTreeSet};

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// One sample line of a scrape.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed scrape: `# TYPE` per family, and the samples.
#[derive(Debug, Default)]
struct Scrape {
    types: BTreeMap<String, String>,
    samples: Vec<Sample>,
}

impl Scrape {
    /// Values of the samples named `name` whose labels include `labels`.
    fn values(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .collect()
    }

    /// The single value of `name{labels}`; panics if absent or ambiguous.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let v = self.values(name, labels);
        assert_eq!(v.len(), 1, "{name}{labels:?}: {v:?}");
        v[0]
    }

    /// Every name a query may use: families and sample names.
    fn names(&self) -> BTreeSet<String> {
        self.types
            .keys()
            .cloned()
            .chain(self.samples.iter().map(|s| s.name.clone()))
            .collect()
    }
}

/// Parses the text exposition format strictly enough to catch mistakes:
/// every sample belongs to a family declared by `# TYPE` before it, names
/// and label names are valid, label values are properly escaped, values parse.
fn parse(text: &str) -> Result<Scrape, String> {
    let mut scrape = Scrape::default();
    let valid_name = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for (i, line) in text.lines().enumerate() {
        let err = |m: &str| format!("line {}: {m}: {line}", i + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("HELP"), Some(name), Some(_)) if valid_name(name) => {}
                (Some("TYPE"), Some(name), Some(kind)) if valid_name(name) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(err("unknown type"));
                    }
                    if scrape.types.insert(name.into(), kind.into()).is_some() {
                        return Err(err("family declared twice"));
                    }
                }
                _ => return Err(err("bad comment line")),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| err("no value"))?;
        let name = &line[..name_end];
        if !valid_name(name) {
            return Err(err("bad metric name"));
        }
        let rest = &line[name_end..];
        let (labels, rest) = match rest.strip_prefix('{') {
            Some(body) => parse_labels(body).map_err(|m| err(&m))?,
            None => (BTreeMap::new(), rest),
        };
        let value = rest
            .strip_prefix(' ')
            .ok_or_else(|| err("no space before value"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().map_err(|_| err("bad value"))?,
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| scrape.types.get(*f).map(String::as_str) == Some("histogram"))
            })
            .unwrap_or(name);
        if !scrape.types.contains_key(family) {
            return Err(err("sample before its # TYPE"));
        }
        scrape.samples.push(Sample {
            name: name.into(),
            labels,
            value,
        });
    }
    Ok(scrape)
}

/// Parses `k="v",…}` (the text after `{`); returns the labels and what follows `}`.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut pos = 0;
    loop {
        if let Some(after) = s[pos..].strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = s[pos..].find("=\"").ok_or("label without value")? + pos;
        let key = &s[pos..eq];
        if key.is_empty()
            || key.starts_with(|c: char| c.is_ascii_digit())
            || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!("bad label name {key:?}"));
        }
        let mut value = String::new();
        let mut it = s[eq + 2..].char_indices();
        let end = loop {
            match it.next() {
                Some((j, '"')) => break eq + 2 + j,
                Some((_, '\\')) => match it.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err("bad escape".into()),
                },
                Some((_, '\n')) | None => return Err("unterminated label value".into()),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(key.to_owned(), value).is_some() {
            return Err(format!("label {key} twice"));
        }
        pos = end + 1;
        if s[pos..].starts_with(',') {
            pos += 1;
        } else if !s[pos..].starts_with('}') {
            return Err("expected , or }".into());
        }
    }
}

#[test]
fn the_parser_rejects_malformed_text() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"x\\\"y\",j=\"2\"} 3\n";
    let s = parse(ok).expect("valid");
    assert_eq!(s.value("a_total", &[("k", "x\"y"), ("j", "2")]), 3.0);
    for bad in [
        "a_total 1\n",                                    // no # TYPE
        "# TYPE a_total counter\na_total{k=\"x} 1\n",     // unterminated
        "# TYPE a_total counter\na_total{k=\"\\q\"} 1\n", // bad escape
        "# TYPE a_total counter\na_total one\n",          // bad value
        "# TYPE a_total wat\n",                           // bad type
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}

/// Scrapes `/metrics` of the API port with the admin token; checks the
/// status and content type.
async fn scrape(app: &TestApp) -> Scrape {
    let resp = app
        .http
        .get(format!("{}/metrics", app.url))
        .bearer_auth(&app.token)
        .send()
        .await
        .expect("scrape");
    assert_eq!(resp.status(), StatusCode::OK);
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    let text = resp.text().await.expect("body");
    let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        parsed.value("coordinator_metrics_db_up", &[]),
        1.0,
        "{text}"
    );
    parsed
}

/// Checks a histogram series: cumulative buckets never decrease and `+Inf`
/// equals `_count`. Returns the count.
fn histogram_count(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut buckets: Vec<(f64, f64)> = s
        .samples
        .iter()
        .filter(|x| x.name == format!("{name}_bucket"))
        .filter(|x| {
            labels
                .iter()
                .all(|(k, v)| x.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|x| {
            let le = match x.labels["le"].as_str() {
                "+Inf" => f64::INFINITY,
                le => le.parse().expect("le"),
            };
            (le, x.value)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.len() >= 2, "{name}: {buckets:?}");
    assert!(
        buckets.windows(2).all(|w| w[0].1 <= w[1].1),
        "{name} buckets decrease: {buckets:?}"
    );
    let count = s.value(&format!("{name}_count"), labels);
    assert_eq!(
        buckets.last().map(|b| (b.0, b.1)),
        Some((f64::INFINITY, count))
    );
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_mission_shows_in_the_scrape() {
    let app = spawn_app().await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    app.wait_for_status(id, &["completed"]).await;

    let s = scrape(&app).await;
    assert_eq!(
        s.value("coordinator_tasks", &[("status", "succeeded")]),
        3.0
    );
    assert_eq!(
        s.value("coordinator_missions", &[("status", "completed")]),
        1.0
    );
    assert!(s.value("coordinator_dispatches_total", &[]) >= 3.0);
    assert!(histogram_count(&s, "coordinator_dispatch_latency_seconds", &[]) >= 1.0);
    assert!(histogram_count(&s, "coordinator_worker_http_seconds", &[]) >= 1.0);
    assert!(
        histogram_count(
            &s,
            "coordinator_tick_phase_seconds",
            &[("phase", "dispatch")]
        ) >= 1.0
    );
    assert!(s.value("coordinator_reports_total", &[]) >= 3.0);
    assert_eq!(
        s.value("coordinator_failures_total", &[("kind", "quality")]),
        0.0
    );
    assert_eq!(s.value("coordinator_queue_ready", &[]), 0.0);
    // Five agents at the default trust 0.5: all in the 0.5 bucket.
    assert_eq!(histogram_count(&s, "coordinator_agent_trust", &[]), 5.0);
    assert_eq!(
        s.value("coordinator_agent_trust_bucket", &[("le", "0.4")]),
        0.0
    );
    assert_eq!(
        s.value("coordinator_agent_trust_bucket", &[("le", "0.5")]),
        5.0
    );
    // The mission's events, at least one per task.
    assert!(s.value("coordinator_events_written_total", &[]) >= 3.0);
    assert!(s.value("coordinator_db_pool_connections", &[]) >= 1.0);
    app.stop().await;
}

/// Two independent research tasks guarded by a tool policy, and a third
/// after both (plans need three tasks).
fn guarded_pair() -> Value {
    let mut plan = chain_plan();
    let tasks = plan["tasks"].as_array_mut().unwrap();
    tasks[1]["depends_on"] = json!([]);
    tasks[2]["depends_on"] = json!(["a", "b"]);
    for t in tasks.iter_mut() {
        t["inputs"] = json!({ "tool_policy": {
            "allowed_tools": ["write_file"], "sensitive": {"paths": ["migrations/**"]}
        }});
    }
    plan
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_decisions_and_failures_are_counted() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // One agent with one slot: the second task waits in the queue.
    let (st, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "r1", "role": "worker", "skills": ["research"],
                   "endpoint_url": worker.url, "max_concurrency": 1}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{b}");
    app.create_mission(json!({"goal": "pair", "autonomy": "autonomous", "plan": guarded_pair()}))
        .await;
    let d = worker.dispatch(1).await;
    let s = scrape(&app).await;
    assert_eq!(s.value("coordinator_queue_ready", &[]), 1.0);
    assert_eq!(s.value("coordinator_tasks", &[("status", "running")]), 1.0);
    assert_eq!(
        s.value("coordinator_decision_queue", &[("kind", "tool_approval")]),
        0.0
    );

    // A guarded call waits for a person: the decision queue grows.
    let url = d
        .callback
        .tool_approvals_url
        .clone()
        .expect("tool_approvals_url");
    let path = url.strip_prefix(&app.url).expect("same server").to_owned();
    let (st, pending) = app
        .request(
            Method::POST,
            &path,
            Some(json!({"tool": "write_file", "paths": ["migrations/001.sql"]})),
            Some(&d.callback.token),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{pending}");
    assert_eq!(pending["status"], "pending");
    let s = scrape(&app).await;
    assert_eq!(
        s.value("coordinator_decision_queue", &[("kind", "tool_approval")]),
        1.0
    );

    // A failed report without a kind is a quality failure, and it is retried.
    fail(&app.http, &d, "not good enough").await;
    let s = scrape(&app).await;
    assert_eq!(
        s.value("coordinator_failures_total", &[("kind", "quality")]),
        1.0
    );
    assert_eq!(
        s.value("coordinator_failures_total", &[("kind", "infrastructure")]),
        0.0
    );
    assert_eq!(s.value("coordinator_retries_total", &[]), 1.0);
    assert_eq!(s.value("coordinator_reports_total", &[]), 1.0);
    assert_eq!(
        s.value(
            "coordinator_worker_http_errors_total",
            &[("reason", "transport")]
        ),
        0.0
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_counts_as_a_stall_and_an_infrastructure_failure() {
    let mut settings = test_settings();
    settings.engine.lease = std::time::Duration::from_millis(400);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    // The manual worker accepts and never reports: the lease runs out.
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    app.create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    worker.dispatch(1).await;
    let s = wait_until("a lease expiry in the scrape", || async {
        let s = scrape(&app).await;
        (s.value("coordinator_lease_expiries_total", &[]) >= 1.0).then_some(s)
    })
    .await;
    assert!(s.value("coordinator_failures_total", &[("kind", "infrastructure")]) >= 1.0);
    assert_eq!(
        s.value("coordinator_failures_total", &[("kind", "quality")]),
        0.0
    );
    assert!(
        histogram_count(
            &s,
            "coordinator_tick_phase_seconds",
            &[("phase", "reconcile")]
        ) >= 1.0
    );
    app.stop().await;
}

/// Metric names (the `coordinator_` identifiers) a PromQL expression uses.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("coordinator_") {
        // Only at the start of an identifier.
        let preceded = rest[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if !preceded {
            out.push(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    out
}

fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "query", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_only_queries_exposed_metrics() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/coordinator-dashboard.json"
    );
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard")).expect("json");
    assert!(
        dashboard["panels"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
    );
    assert_eq!(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    // Template variable queries are exprs too; panels need at least one each.
    assert!(all.len() >= 10, "{all:?}");
    // With every optional series on: the dashboard may show per-agent inboxes.
    let mut settings = test_settings();
    settings.metrics_agent_labels = true;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let exposed = scrape(&app).await.names();
    app.stop().await;
    let mut used = BTreeSet::new();
    for e in &all {
        let names = metric_names(e);
        assert!(
            !names.is_empty() || e.starts_with("label_values"),
            "no metric in {e:?}"
        );
        used.extend(names);
    }
    let missing: Vec<_> = used.iter().filter(|n| !exposed.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "dashboard queries unknown metrics: {missing:?}"
    );
    // And the dashboard covers every family the service exposes.
    let families: BTreeSet<_> = exposed
        .iter()
        .filter(|n| !n.ends_with("_bucket") && !n.ends_with("_sum") && !n.ends_with("_count"))
        .collect();
    let unused: Vec<_> = families
        .iter()
        .filter(|f| !used.iter().any(|u| u.starts_with(f.as_str())))
        .collect();
    assert!(unused.is_empty(), "families with no panel: {unused:?}");
}

#[test]
fn metric_names_are_found_in_promql() {
    assert_eq!(
        metric_names(
            "sum(rate(coordinator_failures_total{kind=\"quality\"}[5m])) / ignoring(x) my_coordinator_x"
        ),
        vec!["coordinator_failures_total"]
    );
    assert_eq!(
        metric_names(
            "histogram_quantile(0.9, sum by (le) (rate(coordinator_dispatch_latency_seconds_bucket[5m])))"
        ),
        vec!["coordinator_dispatch_latency_seconds_bucket"]
    );
}

/// `/metrics` shows database-wide figures: on the API port only an admin
/// token reads it; `--metrics-listen` serves it without a token for a
/// scraper, and nothing else there; series that name workspaces and agents
/// appear only when asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_an_admin_token_on_the_api_port_or_their_own_listener() {
    let mut settings = test_settings();
    settings.metrics_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let (status, body) = app
        .request(reqwest::Method::GET, "/metrics", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (_, created) = app
        .post("/v1/tokens", json!({"role": "operator", "name": "ops"}))
        .await;
    let operator = created["token"].as_str().expect("token").to_owned();
    let (status, body) = app
        .request(reqwest::Method::GET, "/metrics", None, Some(&operator))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(!scrape(&app).await.names().is_empty());

    let metrics_url = app.metrics_url.clone().expect("metrics listener");
    let open = app
        .http
        .get(format!("{metrics_url}/metrics"))
        .send()
        .await
        .expect("scrape");
    assert_eq!(open.status(), StatusCode::OK);
    let text = open.text().await.expect("text");
    let names = parse(&text).expect("prometheus text").names();
    assert!(names.contains("coordinator_inbox_unread"), "{names:?}");
    assert!(
        !names.contains("coordinator_inbox_unread_by_agent"),
        "per-agent series are off by default: {names:?}"
    );
    // The metrics listener serves nothing else.
    let other = app
        .http
        .get(format!("{metrics_url}/v1/missions"))
        .bearer_auth(&app.token)
        .send()
        .await
        .expect("request");
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    app.stop().await;

    let mut settings = test_settings();
    settings.metrics_agent_labels = true;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    assert!(
        scrape(&app)
            .await
            .names()
            .contains("coordinator_inbox_unread_by_agent")
    );
    app.stop().await;
}
