//! Against a real OpenAI-compatible server: llama.cpp's server with a 135M
//! model (`scripts/llama-server.sh`; CI starts it and sets
//! COORDINATOR_TEST_LLM_URL). The model's answers are mostly nonsense: what
//! must hold is the protocol (the request is accepted, json_schema falls back
//! to llama.cpp's json_object form), that requests fit the server's 4,096
//! token context, and that nonsense ends in repair and then a plan or the
//! generic fallback, never a panic, a context error or a stuck mission.

use std::time::Duration;

use coordinator::planning::{
    AgentCapability, ValidationContext, ValidationRules,
    llm::{LlmConfig, LlmError, LlmPlanner, PlanRequest, ResponseFormat},
    validate_plan,
};
use serde_json::json;

use crate::helpers::*;

/// The real server under test: the one `scripts/llama-server.sh` started
/// (pid and log known) or any OpenAI-compatible server named by
/// `COORDINATOR_TEST_LLM_URL` and `COORDINATOR_TEST_LLM_MODEL`.
struct RealServer {
    url: String,
    model: String,
    pid: Option<u32>,
    log: Option<String>,
}

impl RealServer {
    /// Whether this is the llama.cpp server of `scripts/llama-server.sh`.
    fn is_script_llama_cpp(&self) -> bool {
        self.pid.is_some()
    }

    /// What became of the server, for a failing test's output.
    fn post_mortem(&self) -> String {
        let Some(pid) = self.pid else {
            return format!("(the LLM server at {} is not ours to inspect)", self.url);
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return format!(
                "(the LLM server at {} (pid {pid}) is still running)",
                self.url
            );
        }
        let tail = self
            .log
            .as_deref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| {
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(15)..].join("\n")
            })
            .unwrap_or_default();
        format!(
            "THE LLM SERVER DIED during this test: pid {pid} at {} is gone \
             (the kernel log, `dmesg | tail`, says why if it was a signal). \
             Last lines of {}:\n{tail}",
            self.url,
            self.log.as_deref().unwrap_or("its log")
        )
    }
}

/// Prints, when a test fails, whether the server died under it.
struct DeathWatch<'a>(&'a RealServer);

impl Drop for DeathWatch<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.0.post_mortem());
        }
    }
}

fn server() -> Option<RealServer> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let Some(url) = env("COORDINATOR_TEST_LLM_URL") else {
        // scripts/test.sh starts a server and sets COORDINATOR_REQUIRE_PEERS:
        // there a missing server is a failure, not a skip.
        assert!(
            std::env::var_os("COORDINATOR_REQUIRE_PEERS").is_none(),
            "COORDINATOR_TEST_LLM_URL is not set (scripts/test.sh starts llama.cpp and sets it)"
        );
        eprintln!("skipped: set COORDINATOR_TEST_LLM_URL (scripts/llama-server.sh starts one)");
        return None;
    };
    let server = RealServer {
        url,
        model: env("COORDINATOR_TEST_LLM_MODEL").unwrap_or_else(|| "smollm2".into()),
        pid: env("COORDINATOR_TEST_LLM_PID").and_then(|p| p.parse().ok()),
        log: env("COORDINATOR_TEST_LLM_LOG"),
    };
    eprintln!(
        "real LLM server: {} model {} ({})",
        server.url,
        server.model,
        match server.pid {
            Some(pid) => format!("llama.cpp from scripts/llama-server.sh, pid {pid}"),
            None => "named by COORDINATOR_TEST_LLM_URL".into(),
        }
    );
    Some(server)
}

fn config(server: &RealServer) -> LlmConfig {
    let mut cfg = LlmConfig::new(&server.url, &server.model);
    cfg.api_key = std::env::var("COORDINATOR_TEST_LLM_API_KEY").ok();
    cfg.response_format = ResponseFormat::Auto;
    cfg.timeout = Duration::from_secs(120);
    cfg.max_repairs = 1;
    // Keep a 135M model's answers short so the test stays quick on 2 cores.
    cfg.max_tokens = Some(600);
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_planner_speaks_to_a_real_llama_cpp_server() {
    let Some(server) = server() else { return };
    let _watch = DeathWatch(&server);
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let skills: Vec<String> = ["research", "writing", "review"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let agents = vec![AgentCapability {
        skills: skills.clone(),
        tools: vec![],
    }];
    let rules = ValidationRules::default();
    let ctx = ValidationContext {
        rules: &rules,
        budget: None,
        agents: &agents,
    };
    let validate = |p: &coordinator::planning::PlanSpec| validate_plan(p.clone(), &ctx).map(|_| ());
    let mut request = PlanRequest::new("Write a short guide to composting at home");
    request.skills = &skills;
    match planner.plan(&request, &validate).await {
        Ok(plan) => {
            assert!(plan.plan.tasks.len() >= 3);
            assert!(plan.completion_tokens > 0);
        }
        // A 135M model rarely produces a valid plan; it must fail *as a plan*,
        // which proves the request, the response format and parsing worked.
        Err(LlmError::InvalidPlan { attempts, problems }) => {
            assert_eq!(attempts, 2);
            assert!(!problems.is_empty());
        }
        Err(other) => panic!("protocol-level failure against {}: {other}", server.url),
    }
    if server.is_script_llama_cpp() {
        // llama.cpp rejects OpenAI's json_schema form; Auto must have fallen back.
        assert_eq!(planner.current_response_format(), "json_object");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_planned_by_a_tiny_real_model_never_gets_stuck() {
    let Some(server) = server() else { return };
    let _watch = DeathWatch(&server);
    let mut settings = test_settings();
    settings.planning.llm = Some(std::sync::Arc::new(
        LlmPlanner::new(config(&server)).unwrap(),
    ));
    settings.planning.max_planning_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": "Zorble the frobnitz quux"}))
        .await;
    assert_eq!(m["status"], "planning");
    let id = m["id"].as_str().unwrap();
    let end = app
        .wait_for_status_within(
            id,
            &["awaiting_approval", "failed"],
            Duration::from_secs(400),
        )
        .await;
    // A model that gives no valid plan leaves the generic method's plan
    // (its event says why) rather than failing the mission.
    assert_eq!(end["status"], "awaiting_approval", "{end}");
    let planner = end["planner"].as_str().unwrap();
    assert!(planner == "llm" || planner == "generic", "{end}");
    app.stop().await;
}

// Slow by design (a tiny model generating its whole 4,096-token context,
// several times: about 10 minutes on two cores), and while it runs the one
// llama.cpp server serves nothing else, so the other real-model tests time
// out behind it. Run it on its own:
// `COORDINATOR_REQUIRE_PEERS=1 cargo test --test it -- --ignored real_llm::an_uncapped`.
// The scripted 4,096-token server in `planning_context.rs` covers the same
// fitting on every run.
#[ignore = "slow: ~10 min of a tiny model filling its context; run with --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncapped_planner_fits_a_4096_token_context_or_falls_back() {
    // The defaults a new user gets: max_tokens 4,096 (the whole context of
    // the script's server), no context size configured. Before, a repair
    // round echoing a rambling answer overflowed the context and the
    // mission failed with llama.cpp's "maximum context length" error.
    let Some(server) = server() else { return };
    let _watch = DeathWatch(&server);
    let mut cfg = config(&server);
    cfg.max_tokens = LlmConfig::new("http://x/v1", "m").max_tokens;
    assert_eq!(cfg.max_tokens, Some(4096));
    cfg.context_tokens = None;
    let mut settings = test_settings();
    settings.planning.llm = Some(std::sync::Arc::new(LlmPlanner::new(cfg).unwrap()));
    settings.planning.max_planning_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": "Zorble the frobnitz quux"}))
        .await;
    assert_eq!(m["status"], "planning");
    let id = m["id"].as_str().unwrap();
    let end = app
        .wait_for_status_within(
            id,
            &["awaiting_approval", "failed"],
            Duration::from_secs(900),
        )
        .await;
    assert_eq!(end["status"], "awaiting_approval", "{end}");
    let planner = end["planner"].as_str().unwrap();
    assert!(planner == "llm" || planner == "generic", "{end}");
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    let events = page["events"].as_array().unwrap();
    for e in events.iter().filter(|e| e["kind"] == "plan.llm_call") {
        let code = e["payload"]["code"].as_str().unwrap_or_default();
        assert_ne!(code, "llm_http", "a context error escaped: {e}");
    }
    if planner == "generic" {
        let created = events.iter().find(|e| e["kind"] == "plan.created").unwrap();
        assert_eq!(
            created["payload"]["details"]["fallback"]["from"], "llm",
            "{created}"
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_worker_runs_a_mission_on_a_real_llama_cpp_server() {
    use coordinator::worker::llm::{LlmWorker, LlmWorkerConfig};

    let Some(server) = server() else { return };
    let _watch = DeathWatch(&server);
    let mut cfg = LlmWorkerConfig::new(server.url.clone());
    cfg.model = server.model.clone();
    cfg.api_key = std::env::var("COORDINATOR_TEST_LLM_API_KEY").ok();
    cfg.max_tokens = 120;
    cfg.heartbeat_secs = 1;
    // The worker is a tool-using agent: whatever the tiny model does (call
    // tools, malformed calls, plain text), each attempt ends within 3 turns.
    cfg.max_turns = 3;
    let worker = LlmWorker::spawn(std::net::SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
        .await
        .unwrap();
    let app = spawn_app().await;
    app.register_fleet(&worker.url(), 1).await;
    let m = app
        .create_mission(
            json!({"goal": "Explain composting", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let done = app
        .wait_for_status_within(
            m["id"].as_str().unwrap(),
            &["completed", "failed"],
            Duration::from_secs(400),
        )
        .await;
    // Never wedged: the mission ended, no attempt is left live, and every
    // attempt reported within its bound of model turns.
    let id: uuid::Uuid = m["id"].as_str().unwrap().parse().unwrap();
    let live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM task_attempts WHERE run_id = $1 AND status IN ('dispatching', 'running')",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(live, 0, "{done}");
    let attempts: i64 = sqlx::query_scalar("SELECT count(*) FROM task_attempts WHERE run_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let stats = worker.stats();
    assert_eq!(
        (stats.reported + stats.cancelled) as i64,
        attempts,
        "{stats:?}"
    );
    // Three turns per attempt, plus one retry without tools if the server refuses them.
    assert!(
        stats.calls as i64 <= attempts * 3 + 1,
        "{stats:?} for {attempts} attempts"
    );
    assert!(stats.completion_tokens > 0, "{stats:?}");
    if done["status"] == "completed" {
        for t in done["tasks"].as_array().unwrap() {
            assert!(t["output"]["text"].is_string(), "{t}");
        }
    } else {
        assert_eq!(done["status"], "failed", "{done}");
    }
    app.stop().await;
}
