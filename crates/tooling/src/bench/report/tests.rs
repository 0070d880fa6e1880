//! Unit tests of `report`.

use std::time::Duration;

use super::*;
use crate::bench::{idle::IdleLevel, long::Window};

fn tp(replicas: usize, tasks_per_s: f64) -> Throughput {
    Throughput {
        replicas,
        tasks_per_s,
        secs: 1.0,
        ..Throughput::default()
    }
}

#[test]
fn scaling_is_relative_to_one_replica() {
    let s = replica_scaling(&[tp(1, 400.0), tp(2, 300.0), tp(3, 600.0)]);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|p| p.reference == 1));
    assert_eq!((s[0].speedup, s[0].efficiency), (1.0, 1.0));
    // 300 / 400 = 0.75; per replica 0.75 / 2 = 0.375.
    assert_eq!((s[1].speedup, s[1].efficiency), (0.75, 0.375));
    // 600 / 400 = 1.5; per replica 1.5 / 3 = 0.5.
    assert_eq!((s[2].speedup, s[2].efficiency), (1.5, 0.5));
}

#[test]
fn scaling_without_one_replica_uses_the_smallest_count() {
    let s = replica_scaling(&[tp(4, 800.0), tp(2, 500.0)]);
    // Reference 2 replicas at 500: 4 replicas are 1.6×, efficiency 1.6 × 2 / 4 = 0.8.
    assert_eq!((s[0].speedup, s[0].efficiency), (1.6, 0.8));
    assert_eq!((s[1].speedup, s[1].efficiency), (1.0, 1.0));
    assert_eq!(s[0].reference, 2);
    assert!(replica_scaling(&[]).is_empty());
}

#[test]
fn key_values_come_from_the_last_marked_line() {
    let text = "a=1 b=2\nnoise\nx=old marker=1\nx=3 marker=2 junk\ntrailing";
    assert_eq!(
        last_key_values(text, "marker=").unwrap(),
        vec![("x".into(), "3".into()), ("marker".into(), "2".into())]
    );
    assert!(last_key_values(text, "absent").is_none());
    assert_eq!(
        parse_key_value_lines("# c\ncpu_model=AMD EPYC 7B13 = fast\n\nbad line\n"),
        vec![("cpu_model".into(), "AMD EPYC 7B13 = fast".into())]
    );
}

const PLANNING_OUT: &str = "planning benchmark (2 s per figure, best batch mean)\n\
    case  µs/op ops/s × baseline\n\
    baseline_parse_20_us=20.00 plan_20_us=50.00 match_us=5.00 validate_20_us=8.00 \
    validate_200_us=64.00 validate_2000_us=800.00 plan_20_x_baseline=2.50\n";

#[test]
fn planning_parses_cases_and_ratios() {
    let p = Planning::parse(PLANNING_OUT).unwrap();
    let keys: Vec<&str> = p.cases.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "baseline_parse_20",
            "plan_20",
            "match",
            "validate_20",
            "validate_200",
            "validate_2000"
        ]
    );
    assert_eq!(p.ratio("plan_20"), Some(2.5));
    assert_eq!(p.ratio("match"), Some(0.25));
    assert!(p.line.starts_with("baseline_parse_20_us=20.00"));
    assert!(Planning::parse("no figures here").is_none());
}

#[test]
fn numbers_are_grouped() {
    assert_eq!(num(1234567.8, 0), "1,234,568");
    assert_eq!(num(1234.5, 2), "1,234.50");
    assert_eq!(num(999.0, 0), "999");
    assert_eq!(num(-1500.0, 0), "-1,500");
    assert_eq!(num(f64::NAN, 1), "–");
}

fn engine() -> EngineFigures {
    let win = |tps: f64, stored: i64| Window {
        tasks_per_s: tps,
        claim_us: 100.0,
        claim_buffers: 40,
        queue_kib: 640,
        tasks_stored: stored,
        queue_dead: 10,
        queue_vacuums: 2,
        checkpoints: 1,
        vacuums: 5,
        vacuuming: vec!["orchestration_tasks".into()],
    };
    let level = |missions: usize, tick: f64, hot: f64, sweep: f64| IdleLevel {
        missions,
        tick_us: tick,
        claim_us: 400.0,
        lease_us: 300.0,
        sweep_us: sweep,
        hot_us: hot,
        samples: 100,
    };
    EngineFigures {
        settings: RunSettings {
            missions: 200,
            warmup_missions: 0,
            tasks: 5,
            chain: 20,
            agents: 8,
            agent_cap: 32,
            long_secs: 20,
            long_inflight: 32,
            idle_secs: 2,
        },
        postgres_version: "15.8".into(),
        temporary_postgres: true,
        loadavg: (Some("1.00 0.50 0.25".into()), None),
        elapsed_secs: 90.0,
        baseline: Baseline {
            commit_ms: 0.5,
            http_ms: 0.25,
            total_ms: 0.75,
        },
        throughput: vec![tp(1, 400.0), tp(2, 300.0), tp(3, 410.0)],
        dispatch: Dispatch {
            edges: 1600,
            p50_ms: 300.0,
            p95_ms: 375.0,
            p99_ms: 390.0,
        },
        chain: Chain {
            steps: 20,
            step_overhead_ms: 12.0,
            dispatch_p50_ms: 6.0,
        },
        streams: Some(StreamReport {
            events: 2000,
            json_eps: 40000.0,
            sse_one_eps: 20000.0,
            clients: 16,
            sse_many_eps: 80000.0,
            fanout_ms: (20.0, 21.0),
            request_ms: 19.5,
        }),
        idle: Some(IdleReport {
            levels: vec![
                level(10, 1500.0, 600.0, 900.0),
                level(10_000, 4500.0, 660.0, 3600.0),
            ],
            paused_queued_claim: (2000, 360.0),
        }),
        memory: Some(MemoryReport {
            rss_idle_kib: 15000,
            rss_half_kib: 19000,
            half: 500,
            rss_live_kib: 20000,
            live: 1000,
            child_connections: 12,
        }),
        long: Some(LongReport {
            windows: vec![win(300.0, 4000), win(240.0, 9000)],
            window: Duration::from_secs(10),
            claim_at_start: (90.0, 38),
        }),
        single: None,
        job_queue: None,
        workflows: None,
        last_line: "tasks_per_s=400 tasks_per_s_1r=400".into(),
    }
}

/// [`engine`] with the issue-19 figures: per-task counts, top statements,
/// our single-task latency and the job-queue baseline.
fn engine_with_counts() -> EngineFigures {
    let mut e = engine();
    e.throughput[0].stmts_per_task = Some(42.0);
    e.throughput[0].commits_per_task = Some(8.0);
    e.throughput[0].write_txns_per_task = Some(3.25);
    e.throughput[0].wal_bytes_per_task = Some(9531.0);
    e.throughput[0].lock_waiters_mean = Some(0.5);
    e.throughput[0].lock_wait_share = Some(0.25);
    e.throughput[0].bench_cpu_ms_per_task = Some(1.5);
    e.throughput[0].db_cpu_ms_per_task = Some(0.5);
    e.throughput[1].bench_cpu_ms_per_task = Some(2.25);
    e.throughput[1].db_cpu_ms_per_task = Some(0.75);
    e.throughput[2].bench_cpu_ms_per_task = Some(2.0);
    e.throughput[0].top_statements = vec![TopStatement {
        query: "UPDATE a | b SET x = $1".into(),
        calls_per_task: 1.0,
        mean_ms: 7.5,
        time_share: 0.51,
    }];
    e.single = Some(SingleLatency {
        runs: 50,
        p50_ms: 4.0,
        p95_ms: 8.0,
    });
    e.job_queue = Some(JobQueueReport {
        version: "0.18.0".into(),
        concurrency: 256,
        jobs: 1000,
        jobs_per_s: 1600.0,
        burst_add_to_start_p50_ms: 200.0,
        burst_add_to_start_p95_ms: 250.0,
        chain_steps: 20,
        chain_step_ms: 3.0,
        single_jobs: 200,
        single_add_to_start_p50_ms: 2.0,
        single_add_to_start_p95_ms: 4.0,
    });
    e
}

#[test]
fn counts_and_the_job_queue_render_with_hand_computed_ratios() {
    let page = render_one(&engine_with_counts());
    assert!(
        page.contains("| 1 | 42.0 | 8.0 | 3.2 | 9,531 | 0.50 | 25 % |"),
        "{page}"
    );
    // Phases without counts show dashes.
    assert!(page.contains("| 2 | – | – | – | – | – | – |"), "{page}");
    assert!(
        page.contains("200 missions × 5 tasks (fan-out plans) per throughput phase, 8 agents"),
        "{page}"
    );
    let mut warm = engine_with_counts();
    warm.settings.warmup_missions = 50;
    assert!(
        render_one(&warm).contains(
            "200 missions × 5 tasks (fan-out plans) per throughput phase (each phase's fresh \
             replicas first run 50 more, unmeasured, so the measured ones meet warm connections \
             and prepared statements), 8 agents × cap 32"
        ),
        "{}",
        render_one(&warm)
    );
    // CPU: 1.5 + 0.5 = 2; 2.25 + 0.75 = 3, 1.5× the first; no database
    // figure, no total.
    assert!(
        page.contains("| 1 | 1.500 | 0.500 | 2.000 | 1.00× |"),
        "{page}"
    );
    assert!(
        page.contains("| 2 | 2.250 | 0.750 | 3.000 | 1.50× |"),
        "{page}"
    );
    assert!(page.contains("| 3 | 2.000 | – | – | – |"), "{page}");
    // The `|` in a statement must not break the table.
    assert!(
        page.contains("| `UPDATE a \\| b SET x = $1` | 1.00 | 7.500 | 51.0 % |"),
        "{page}"
    );
    assert!(
        page.contains("### Job-queue baseline (graphile-worker 0.18.0, same server, same run)")
    );
    // 400 / 1600 = 0.25; 12 / 3 = 4; 375 / 250 = 1.5; 8 / 4 = 2; 4 / 2 = 2.
    assert!(page.contains("| 400 | 1,600 | 0.25× | ≥ 1.00× |"), "{page}");
    assert!(page.contains("| 20-step chain, ms per step | 12.00 | 3.00 | 4.00× | ≤ 1.00× |"));
    assert!(page.contains("| 375.00 | 250.00 | 1.50× |"));
    assert!(page.contains("| 8.00 | 4.00 | 2.00× | ≤ 1.00× |"));
    assert!(page.contains("| the same, p50 ms | 4.00 | 2.00 | 2.00× | |"));
}

#[test]
fn figures_without_the_new_fields_still_parse_and_render() {
    let mut json = serde_json::to_value(engine_with_counts()).unwrap();
    for key in ["single", "job_queue", "workflows"] {
        json.as_object_mut().unwrap().remove(key);
    }
    for t in json["throughput"].as_array_mut().unwrap() {
        for key in [
            "stmts_per_task",
            "commits_per_task",
            "lock_waiters_mean",
            "lock_wait_share",
            "top_statements",
            "write_txns_per_task",
            "wal_bytes_per_task",
            "bench_cpu_ms_per_task",
            "db_cpu_ms_per_task",
        ] {
            t.as_object_mut().unwrap().remove(key);
        }
    }
    let old: EngineFigures = serde_json::from_value(json).unwrap();
    assert_eq!(old.throughput[0].stmts_per_task, None);
    let page = render_one(&old);
    assert!(!page.contains("statements/task"));
    assert!(!page.contains("ms/task"));
    assert!(!page.contains("Job-queue baseline"));
    assert!(!page.contains("### Workflows"));
    assert!(page.contains("### Throughput and latency"));
}

fn workflow_figures() -> crate::bench::workflows::WorkflowReport {
    crate::bench::workflows::WorkflowReport {
        instances: 1000,
        nodes: 20,
        clients: 64,
        starts_per_s: 250.0,
        transitions: 18000,
        secs: 60.0,
        transitions_per_s: 300.0,
        complete_p50_ms: 200.0,
        complete_p95_ms: 400.0,
        complete_p99_ms: 500.0,
        solo_p50_ms: 3.0,
        tasks_per_s: 400.0,
        tasks_replicas: 1,
        write_txns_per_transition: Some(1.5),
        wal_bytes_per_transition: Some(12000.0),
        stmts_per_transition: Some(11.0),
        commits_per_transition: Some(5.0),
        lock_waiters_mean: Some(0.0),
        lock_wait_share: Some(0.0),
        top_statements: vec![TopStatement {
            query: "SELECT a | b".into(),
            calls_per_task: 1.0,
            mean_ms: 0.25,
            time_share: 0.3,
        }],
        service: Some(crate::bench::workflows::ServiceReport {
            instances: 100,
            transitions: 1900,
            secs: 30.0,
            transitions_per_s: 63.3,
            step_ms: 1500.0,
        }),
    }
}

#[test]
fn workflows_render_beside_the_engine_with_hand_computed_ratios() {
    let mut e = engine();
    e.workflows = Some(workflow_figures());
    let page = render_one(&e);
    assert!(page.contains("\n### Workflows\n"), "{page}");
    // 300 / 400 = 0.75; 3 ms / 0.75 ms baseline = 4.
    assert!(
        page.contains("| token transitions/s (18,000 in 60.00 s) | **300** |"),
        "{page}"
    );
    assert!(page.contains("| plain engine, tasks/s (same run) | 400 |"));
    assert!(page.contains("| transitions/s ÷ tasks/s | 0.75× |"));
    assert!(page.contains("| complete request under 64 clients, p50 / p95 ms | 200.00 / 400.00 |"));
    assert!(page.contains("| complete request alone, p50 ms (× baseline) | 3.00 (4.00×) |"));
    assert!(page.contains("| 11.0 / 5.0 / 1.50 / 12,000 |"));
    assert!(page.contains(
        "| the same: one agent step (mission, then its outcome applied on the report's wake-up), p50 ms | 1,500 |"
    ));
    assert!(page.contains("11.0 statements and 5.0 commits per transition in this run"));
    // 1500 / 3 = 500.
    assert!(
        page.contains("took 1,500 ms at p50, 500.00× a complete request alone"),
        "{page}"
    );
    assert!(
        page.contains("| `SELECT a \\| b` | 1.00 | 0.250 | 30.0 % |"),
        "{page}"
    );
    let back: EngineFigures = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
    assert_eq!(back.workflows, e.workflows);
}

fn suite() -> Suite {
    Suite {
        command: "scripts/perf-suite.sh --quick".into(),
        quick: true,
        note: Some("4 other builds running".into()),
        machine: vec![
            ("cpus".into(), "2".into()),
            ("cpu_model".into(), "Some | CPU".into()),
        ],
        planning: Planning::parse(PLANNING_OUT),
        engine: Some(engine()),
        agent_tools: None,
    }
}

#[test]
fn page_has_the_run_machine_and_verbatim_lines() {
    let page = render(&suite());
    assert!(page.starts_with("# Performance\n"));
    assert!(page.contains("**Quick run.**"));
    assert!(page.contains("```\nscripts/perf-suite.sh --quick\n```"));
    assert!(page.contains("| CPUs (`nproc`) | 2 |"));
    // A `|` in a value must not break the table.
    assert!(page.contains("| CPU model | Some \\| CPU |"));
    assert!(page.contains("Conditions: 4 other builds running"));
    assert!(page.contains("| PostgreSQL server measured | 15.8 (a temporary cluster"));
    assert!(
        page.contains("| load average at the engine bench's start / end | 1.00 0.50 0.25 / – |")
    );
    assert!(page.contains("```\ntasks_per_s=400 tasks_per_s_1r=400\n```"));
    assert!(page.contains("```\nbaseline_parse_20_us=20.00 plan_20_us=50.00"));
    assert!(page.contains("[performance-history.md](performance-history.md)"));
    // The sections docs/scaling.md points at.
    for h in [
        "## Planning",
        "## Engine",
        "### Throughput and latency",
        "### Tick cost with idle missions",
        "### Memory with live attempts",
        "### Throughput over a long run",
        "### Event streams",
    ] {
        assert!(page.contains(&format!("\n{h}\n")), "missing {h}");
    }
    let mut full = suite();
    full.quick = false;
    assert!(!render(&full).contains("Quick run"));
}

#[test]
fn planning_section_has_hand_computed_ratios() {
    let page = render(&suite());
    // 50 / 20 = 2.50; 1e6 / 50 = 20,000 ops/s.
    assert!(
        page.contains(
            "| match + HTN decomposition + validation, 20-task plan | 50.00 | 20,000 | 2.50 |"
        ),
        "{page}"
    );
    assert!(page.contains("| validation, 2,000 nodes | 800.00 | 1,250 | 40.00 |"));
    assert!(page.contains("costs 2.50× parsing its plan"));
    // 64 / 8 = 8; 800 / 64 = 12.5.
    assert!(
        page.contains("Validation grows 8.00× from 20 to 200 nodes and 12.50× from 200 to 2,000")
    );
}

#[test]
fn engine_section_has_hand_computed_ratios() {
    let page = render(&suite());
    assert!(page.contains("= **0.750 ms**"));
    // Scaling: 300 / 400 = 0.75 (0.375 → 0.38 per replica); 410 / 400 = 1.025 (0.34).
    assert!(
        page.contains("| 1 | 400 | 1.00 | 1.00× | 1.00× |"),
        "{page}"
    );
    assert!(page.contains("| 2 | 300 | 1.00 | 0.75× | 0.38× |"));
    assert!(page.contains("| 3 | 410 | 1.00 | 1.02× | 0.34× |"));
    assert!(page.contains("More replicas lowered throughput in this run."));
    // 300 ms / 0.75 ms = 400×; 12 / 0.75 = 16×.
    assert!(page.contains("| 300.00 | 400.00× |"));
    assert!(page.contains("| step overhead, 20-step sequential mission | 12.00 | 16.00× |"));
    // 1,000 tasks; half at 400 tasks/s = 1,250 ms.
    assert!(page.contains("1,000 tasks are released at once, and half of them leaving at the measured 400 tasks/s takes 1,250 ms"));
    // Idle: 4500 / 1500 = 3; hot 660 / 600 = 1.1; sweep 3600 / 900 = 4; 1.5 ms / 0.75 = 2.
    assert!(page.contains("| 10 | 1,500 | 400 | 300 | 900 | 600 | 2.00× |"));
    assert!(page.contains("| 10,000 / 10 | 3.00× | 1.00× | 1.00× | 4.00× | 1.10× | |"));
    // Paused: 360 / 400 = 0.9.
    assert!(page.contains("the claim takes 360 µs, 0.90× the idle claim"));
    // Memory: (20000 − 15000) / 1000 = 5; (20000 − 19000) / 500 = 2; 20000 / 15000 = 1.33.
    assert!(page.contains("5.00 KiB per live attempt"));
    assert!(page.contains("added 2.00 KiB each"));
    assert!(page.contains("| 20,000 KiB | 1.33× |"));
    // Long: 240 / 300 = 0.8.
    assert!(page.contains("| 2 | 240 | 0.80× | 100 | 40 | 640 | 10 | 2 | 9,000 |"));
    assert!(page.contains("**0.80×** in throughput"));
    assert!(
        page.contains("Windows ranged 240–300 tasks/s while the history grew from 4,000 to 9,000")
    );
    // Streams: 20000 / 40000 = 0.5; 80000 / 40000 = 2.
    assert!(page.contains("| one SSE stream | 20,000 | 0.50× |"));
    assert!(page.contains("| 16 SSE streams, all together | 80,000 | 2.00× |"));
}

#[test]
fn figures_round_trip_through_json() {
    let e = engine();
    let back: EngineFigures = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
    assert_eq!(render_one(&back), render_one(&e));
}

fn render_one(e: &EngineFigures) -> String {
    render(&Suite {
        command: "c".into(),
        quick: false,
        note: None,
        machine: vec![],
        planning: None,
        engine: Some(e.clone()),
        agent_tools: None,
    })
}
