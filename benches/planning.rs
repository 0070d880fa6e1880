//! Planning benchmark: template match + HTN decomposition + validation of a
//! 20-task plan, and validation alone of 20-, 200- and 2,000-node graphs.
//!
//! Run: `cargo bench --bench planning` (add `-- --quick` for a fast pass).
//! Every figure is also printed as a ratio to a baseline measured in the same
//! run (parsing the 20-task plan from JSON), so runs on different machines
//! compare. The last line is space-separated `key=value` figures.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use coordinator::planning::{
    AgentCapability, Criterion, PlanSpec, PlanTemplate, TaskSpec, TemplateLibrary,
    ValidationContext, ValidationRules, plan_for_goal, validate_plan,
};
use serde_json::json;

const SKILLS: &[&str] = &[
    "research", "analysis", "writing", "review", "coding", "testing", "planning",
];

fn task(i: usize, deps: Vec<usize>) -> TaskSpec {
    TaskSpec {
        id: format!("t{i}"),
        title: format!("Step {i} of {{goal}}"),
        task_type: "research".into(),
        description: format!("Do step {i} of {{goal}}"),
        required_skills: vec![SKILLS[i % SKILLS.len()].into()],
        required_tools: vec![],
        depends_on: deps.into_iter().map(|d| format!("t{d}")).collect(),
        success_criteria: vec![Criterion {
            description: "done".into(),
            must_pass: true,
            check: None,
        }],
        estimated_cost: 0.01,
        optional: false,
        inputs: json!({}),
    }
}

/// A random DAG with `n` nodes: each node depends on up to 3 earlier ones
/// (fixed seed, so every run measures the same graph).
fn random_dag(n: usize) -> PlanSpec {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let tasks = (0..n)
        .map(|i| {
            let deps = if i == 0 {
                vec![]
            } else {
                let k = 1 + (next() % 3) as usize;
                let mut d: Vec<usize> = (0..k).map(|_| (next() as usize) % i).collect();
                d.sort();
                d.dedup();
                d
            };
            task(i, deps)
        })
        .collect();
    PlanSpec { tasks }
}

/// Mean time per call over batches filling `budget`, best batch mean (less noise).
fn measure<T>(budget: Duration, mut f: impl FnMut() -> T) -> Duration {
    // Warm up and size a batch to ~10 ms.
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < Duration::from_millis(10) {
        black_box(f());
        calls += 1;
    }
    let batch = calls.max(1);
    let mut best = Duration::MAX;
    let end = Instant::now() + budget;
    while Instant::now() < end {
        let t = Instant::now();
        for _ in 0..batch {
            black_box(f());
        }
        best = best.min(t.elapsed() / batch);
    }
    best
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 200 } else { 2000 });
    let agents = vec![AgentCapability {
        skills: SKILLS.iter().map(|s| s.to_string()).collect(),
        tools: vec![],
    }];
    let rules = ValidationRules {
        min_tasks: 1,
        max_tasks: 10_000,
    };
    let ctx = ValidationContext {
        rules: &rules,
        budget: None,
        agents: &agents,
    };

    // A 20-task routine (fan-out/fan-in over a chain) in the library, so the
    // full path is match → decompose → validate at the size the issue names.
    let twenty = random_dag(20);
    let routine = PlanTemplate {
        name: "quarterly-supplier-audit".into(),
        description:
            "Quarterly supplier audit: collect contracts, check compliance, report findings".into(),
        keywords: vec![
            "supplier".into(),
            "audit".into(),
            "quarterly".into(),
            "compliance".into(),
        ],
        tasks: twenty.tasks.clone(),
    };
    let library = TemplateLibrary::builtin().with_extra(vec![routine]);
    let goal = "Run the quarterly supplier audit for ACME and check compliance";
    let constraints = json!({});
    let (plan, provenance) = plan_for_goal(&library, goal, &constraints, 0.15).expect("plan");
    assert_eq!(
        plan.tasks.len(),
        20,
        "the benchmark goal must match the 20-task routine ({provenance:?})"
    );

    let twenty_json = serde_json::to_string(&twenty).expect("json");
    let baseline = measure(budget, || {
        serde_json::from_str::<PlanSpec>(&twenty_json).expect("parse")
    });
    let full = measure(budget, || {
        let (plan, _) = plan_for_goal(&library, goal, &constraints, 0.15).expect("plan");
        validate_plan(plan, &ctx).expect("valid")
    });
    let match_only = measure(budget, || library.match_goal(goal, 0.15));
    let mut results = vec![
        ("baseline_parse_20", baseline),
        ("plan_20", full),
        ("match", match_only),
    ];
    for n in [20usize, 200, 2000] {
        let dag = random_dag(n);
        let t = measure(budget, || validate_plan(dag.clone(), &ctx).expect("valid"));
        // Cloning is part of the call (validate takes the plan by value); measure it apart.
        let clone = measure(budget, || dag.clone());
        results.push((
            match n {
                20 => "validate_20",
                200 => "validate_200",
                _ => "validate_2000",
            },
            t.saturating_sub(clone),
        ));
    }

    println!(
        "planning benchmark ({} per figure, best batch mean)",
        if quick { "0.2 s" } else { "2 s" }
    );
    println!(
        "{:<22} {:>12} {:>14} {:>12}",
        "case", "µs/op", "ops/s", "× baseline"
    );
    for (name, t) in &results {
        let us = t.as_secs_f64() * 1e6;
        println!(
            "{name:<22} {us:>12.2} {:>14.0} {:>12.2}",
            1.0 / t.as_secs_f64().max(1e-12),
            t.as_secs_f64() / baseline.as_secs_f64().max(1e-12)
        );
    }
    let line: Vec<String> = results
        .iter()
        .map(|(name, t)| format!("{name}_us={:.2}", t.as_secs_f64() * 1e6))
        .chain(results.iter().skip(1).map(|(name, t)| {
            format!(
                "{name}_x_baseline={:.2}",
                t.as_secs_f64() / baseline.as_secs_f64().max(1e-12)
            )
        }))
        .collect();
    println!("{}", line.join(" "));
}
