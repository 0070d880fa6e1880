//! Unit tests of `validate`.

use super::*;
use crate::planning::spec::{Criterion, TaskSpec};
use proptest::prelude::*;
use serde_json::json;

fn task(id: &str, deps: &[&str]) -> TaskSpec {
    TaskSpec {
        id: id.to_owned(),
        title: format!("Task {id}"),
        task_type: "research".to_owned(),
        description: String::new(),
        required_skills: vec!["research".to_owned()],
        required_tools: vec![],
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        success_criteria: vec![Criterion {
            description: "done".to_owned(),
            must_pass: true,
            check: None,
        }],
        estimated_cost: 0.01,
        optional: false,
        inputs: json!({}),
    }
}

fn with_cost(mut t: TaskSpec, cost: f64) -> TaskSpec {
    t.estimated_cost = cost;
    t
}

fn agents() -> Vec<AgentCapability> {
    vec![AgentCapability {
        skills: vec!["Research".to_owned(), "writing".to_owned()],
        tools: vec!["web".to_owned()],
    }]
}

fn run(tasks: Vec<TaskSpec>) -> Result<ValidatedPlan, Vec<PlanProblem>> {
    run_with(tasks, None, &agents(), &ValidationRules::default())
}

fn run_with(
    tasks: Vec<TaskSpec>,
    budget: Option<f64>,
    agents: &[AgentCapability],
    rules: &ValidationRules,
) -> Result<ValidatedPlan, Vec<PlanProblem>> {
    let ctx = ValidationContext {
        rules,
        budget,
        agents,
    };
    validate_plan(PlanSpec { tasks }, &ctx)
}

fn codes_of(problems: &[PlanProblem]) -> Vec<&'static str> {
    problems.iter().map(|p| p.code).collect()
}

/// Asserts exactly one problem, with the given code and task.
fn only_problem(
    result: Result<ValidatedPlan, Vec<PlanProblem>>,
    code: &str,
    task_id: Option<&str>,
) -> PlanProblem {
    let problems = result.expect_err("plan should be rejected");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = problems.into_iter().next().unwrap();
    assert_eq!(p.code, code);
    assert_eq!(p.task_id.as_deref(), task_id);
    p
}

fn chain3() -> Vec<TaskSpec> {
    vec![task("a", &[]), task("b", &["a"]), task("c", &["b"])]
}

#[test]
fn valid_chain_passes() {
    let v = run(chain3()).unwrap();
    assert_eq!(v.topological_order, ["a", "b", "c"]);
    assert_eq!(v.critical_path, ["a", "b", "c"]);
    assert!((v.total_estimated_cost - 0.03).abs() < 1e-12);
}

#[test]
fn too_few_tasks() {
    let p = only_problem(run(vec![task("a", &[])]), codes::TOO_FEW_TASKS, None);
    assert!(p.message.contains("at least 3"), "{}", p.message);
}

#[test]
fn too_many_tasks() {
    let rules = ValidationRules {
        min_tasks: 1,
        max_tasks: 2,
    };
    only_problem(
        run_with(chain3(), None, &agents(), &rules),
        codes::TOO_MANY_TASKS,
        None,
    );
}

#[test]
fn empty_id() {
    let mut tasks = chain3();
    tasks[2] = task(" ", &[]);
    only_problem(run(tasks), codes::EMPTY_ID, Some(" "));
}

#[test]
fn empty_title() {
    let mut tasks = chain3();
    tasks[1].title = "  ".to_owned();
    only_problem(run(tasks), codes::EMPTY_TITLE, Some("b"));
}

#[test]
fn duplicate_id() {
    let mut tasks = chain3();
    tasks[2] = task("a", &[]);
    let p = only_problem(run(tasks), codes::DUPLICATE_ID, Some("a"));
    assert!(
        p.message.contains("#3") && p.message.contains("#1"),
        "{}",
        p.message
    );
}

#[test]
fn unknown_dependency_names_task_and_missing_id() {
    let mut tasks = chain3();
    tasks[2].depends_on.push("ghost".to_owned());
    let p = only_problem(run(tasks), codes::UNKNOWN_DEPENDENCY, Some("c"));
    assert!(
        p.message.contains("'c'") && p.message.contains("'ghost'"),
        "{}",
        p.message
    );
}

#[test]
fn self_dependency() {
    let mut tasks = chain3();
    tasks[1].depends_on.push("b".to_owned());
    tasks[1].depends_on.push("b".to_owned());
    only_problem(run(tasks), codes::SELF_DEPENDENCY, Some("b"));
}

#[test]
fn cycle_reports_path() {
    // root -> a -> b -> c -> a, written as depends_on edges.
    let tasks = vec![
        task("root", &[]),
        task("a", &["root", "c"]),
        task("b", &["a"]),
        task("c", &["b"]),
    ];
    let p = only_problem(run(tasks), codes::CYCLE, Some("a"));
    assert!(p.message.contains("a -> c -> b -> a"), "{}", p.message);
}

#[test]
fn separate_cycles_are_each_reported() {
    let tasks = vec![
        task("r", &[]),
        task("x", &["y"]),
        task("y", &["x"]),
        task("p", &["q", "r"]),
        task("q", &["p"]),
    ];
    let problems = run(tasks).unwrap_err();
    assert_eq!(codes_of(&problems), [codes::CYCLE, codes::CYCLE]);
    assert!(problems[0].message.contains("x -> y -> x"));
    assert!(problems[1].message.contains("p -> q -> p"));
}

#[test]
fn no_root() {
    let tasks = vec![task("a", &["b"]), task("b", &["a"]), task("c", &["a"])];
    let problems = run(tasks).unwrap_err();
    assert_eq!(codes_of(&problems), [codes::CYCLE, codes::NO_ROOT]);
    assert!(problems[0].message.contains("a -> b -> a"));
    assert_eq!(problems[1].task_id, None);
}

#[test]
fn missing_must_pass() {
    let mut tasks = chain3();
    tasks[0].success_criteria[0].must_pass = false;
    only_problem(run(tasks.clone()), codes::MISSING_MUST_PASS, Some("a"));
    tasks[0].success_criteria.clear();
    only_problem(run(tasks), codes::MISSING_MUST_PASS, Some("a"));
}

#[test]
fn negative_cost() {
    for bad in [-0.5, f64::NAN, f64::INFINITY] {
        let mut tasks = chain3();
        tasks[1].estimated_cost = bad;
        only_problem(run(tasks), codes::NEGATIVE_COST, Some("b"));
    }
}

#[test]
fn over_budget() {
    let rules = ValidationRules::default();
    assert!(run_with(chain3(), Some(0.03), &agents(), &rules).is_ok());
    let p = only_problem(
        run_with(chain3(), Some(0.02), &agents(), &rules),
        codes::OVER_BUDGET,
        None,
    );
    assert!(p.message.contains("0.02"), "{}", p.message);
}

#[test]
fn unassignable_needs_one_agent_with_everything() {
    let fleet = vec![
        AgentCapability {
            skills: vec!["coding".to_owned()],
            tools: vec!["git".to_owned()],
        },
        AgentCapability {
            skills: vec!["RESEARCH".to_owned()],
            tools: vec![],
        },
    ];
    let rules = ValidationRules::default();
    let mut tasks = chain3();
    // Skills match case-insensitively.
    tasks[0].required_skills = vec!["Research".to_owned()];
    // coding + git is covered by the first agent alone.
    tasks[1].required_skills = vec!["coding".to_owned()];
    tasks[1].required_tools = vec!["git".to_owned()];
    assert!(run_with(tasks.clone(), None, &fleet, &rules).is_ok());
    // research + git is split across two agents, so nobody can take it.
    tasks[2].required_tools = vec!["git".to_owned()];
    only_problem(
        run_with(tasks, None, &fleet, &rules),
        codes::UNASSIGNABLE,
        Some("c"),
    );
}

#[test]
fn a_contractor_pool_can_take_any_task() {
    let mut tasks = chain3();
    tasks[0].required_skills = vec!["translation".to_owned()];
    tasks[0].required_tools = vec!["dictionary".to_owned()];
    let rules = ValidationRules::default();
    assert!(run_with(tasks.clone(), None, &[], &rules).is_err());
    assert!(run_with(tasks, None, &[AgentCapability::any()], &rules).is_ok());
}

#[test]
fn no_agents_makes_every_task_unassignable() {
    let mut tasks = chain3();
    for t in &mut tasks {
        t.required_skills.clear();
    }
    let problems = run_with(tasks, None, &[], &ValidationRules::default()).unwrap_err();
    assert_eq!(codes_of(&problems), [codes::UNASSIGNABLE; 3]);
    assert!(problems[0].message.contains("no agents"));
}

#[test]
fn inputs_not_object() {
    let mut tasks = chain3();
    tasks[0].inputs = json!(["x"]);
    only_problem(run(tasks), codes::INPUTS_NOT_OBJECT, Some("a"));
}

#[test]
fn all_problems_reported_together_in_order() {
    let mut bad = task("b", &["b", "ghost"]);
    bad.title = String::new();
    bad.estimated_cost = -1.0;
    bad.success_criteria.clear();
    bad.inputs = json!(null);
    bad.required_skills = vec!["juggling".to_owned()];
    let tasks = vec![task("a", &[]), bad, task("a", &[])];
    let problems = run_with(tasks, Some(0.0), &agents(), &ValidationRules::default()).unwrap_err();
    assert_eq!(
        codes_of(&problems),
        [
            codes::EMPTY_TITLE,
            codes::SELF_DEPENDENCY,
            codes::UNKNOWN_DEPENDENCY,
            codes::NEGATIVE_COST,
            codes::MISSING_MUST_PASS,
            codes::INPUTS_NOT_OBJECT,
            codes::UNASSIGNABLE,
            codes::DUPLICATE_ID,
            codes::OVER_BUDGET,
        ]
    );
}

#[test]
fn graph_checks_skipped_when_ids_are_broken() {
    // The cycle a <-> b would be reported, but the unknown dependency makes the graph unreliable.
    let tasks = vec![task("a", &["b"]), task("b", &["a"]), task("c", &["zzz"])];
    let problems = run(tasks).unwrap_err();
    assert_eq!(codes_of(&problems), [codes::UNKNOWN_DEPENDENCY]);
}

#[test]
fn problems_serialize_without_null_task_id() {
    let problems = run(vec![]).unwrap_err();
    let value = serde_json::to_value(&problems[0]).unwrap();
    assert_eq!(value["code"], "too_few_tasks");
    assert!(value.get("task_id").is_none());
}

#[test]
fn critical_path_on_diamond() {
    // a(1) -> b(5) -> d(1) and a(1) -> c(2) -> d(1): a,b,d costs 7 > a,c,d costs 4.
    let tasks = vec![
        with_cost(task("a", &[]), 1.0),
        with_cost(task("b", &["a"]), 5.0),
        with_cost(task("c", &["a"]), 2.0),
        with_cost(task("d", &["b", "c"]), 1.0),
    ];
    let v = run(tasks).unwrap();
    assert_eq!(v.critical_path, ["a", "b", "d"]);
    assert_eq!(v.topological_order, ["a", "b", "c", "d"]);
    assert_eq!(v.total_estimated_cost, 9.0);
}

#[test]
fn critical_path_ties_are_deterministic() {
    // 0.1 + 0.2 vs 0.3 differ in floating point but count as equal; the longer chain wins.
    let tasks = vec![
        with_cost(task("a", &[]), 0.1),
        with_cost(task("x", &["a"]), 0.2),
        with_cost(task("y", &[]), 0.3),
        with_cost(task("z", &["x", "y"]), 0.0),
    ];
    let v = run(tasks).unwrap();
    assert_eq!(v.critical_path, ["a", "x", "z"]);
    // All-zero costs: the longest chain (by task count) wins.
    let tasks = vec![
        with_cost(task("p", &[]), 0.0),
        with_cost(task("q", &[]), 0.0),
        with_cost(task("r", &["q"]), 0.0),
    ];
    assert_eq!(run(tasks).unwrap().critical_path, ["q", "r"]);
    // Equal cost and length: the chain through the earlier-listed task wins.
    let tasks = vec![
        with_cost(task("p", &[]), 1.0),
        with_cost(task("q", &[]), 1.0),
        with_cost(task("r", &["q", "p"]), 0.0),
    ];
    assert_eq!(run(tasks).unwrap().critical_path, ["p", "r"]);
}

#[test]
fn topological_order_follows_plan_order_when_free() {
    let tasks = vec![
        task("late", &["early"]),
        task("free", &[]),
        task("early", &[]),
    ];
    let v = run(tasks).unwrap();
    assert_eq!(v.topological_order, ["free", "early", "late"]);
}

/// A chain of `n` tasks plus pseudo-random extra forward edges.
fn big_dag(n: usize) -> Vec<TaskSpec> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift: a deterministic stream without another dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let id = format!("t{i}");
            let mut deps: Vec<String> = Vec::new();
            if i > 0 {
                deps.push(format!("t{}", i - 1));
                for _ in 0..3 {
                    let j = (next() % i as u64) as usize;
                    deps.push(format!("t{j}"));
                }
            }
            let refs: Vec<&str> = deps.iter().map(String::as_str).collect();
            task(&id, &refs)
        })
        .collect()
}

#[test]
fn two_thousand_nodes_validate() {
    let rules = ValidationRules {
        min_tasks: 1,
        max_tasks: 5000,
    };
    let tasks = big_dag(2000);
    let v = run_with(tasks, None, &agents(), &rules).unwrap();
    assert_eq!(v.topological_order.len(), 2000);
    // The backbone chain is the only way to include every task.
    assert_eq!(v.critical_path.len(), 2000);

    // A back edge from near the start to the end closes a cycle through the backbone.
    let mut tasks = big_dag(2000);
    tasks[1].depends_on = vec!["t1999".to_owned()];
    let problems = run_with(tasks, None, &agents(), &rules).unwrap_err();
    assert_eq!(codes_of(&problems), [codes::CYCLE]);
    assert!(
        problems[0]
            .message
            .starts_with("dependency cycle: t1 -> t1999 -> "),
        "{}",
        problems[0].message
    );
}

/// Parses the `a -> b -> a` path out of a cycle message.
fn cycle_ids(message: &str) -> Vec<String> {
    let start = message.find(": ").map_or(0, |i| i + 2);
    let end = message.find(" (").unwrap_or(message.len());
    message[start..end]
        .split(" -> ")
        .map(str::to_owned)
        .collect()
}

/// A random DAG: for each node, a set of lower-indexed dependencies.
fn dag_strategy() -> impl Strategy<Value = Vec<Vec<usize>>> {
    (2usize..40).prop_flat_map(|n| {
        (0..n)
            .map(|i| {
                if i == 0 {
                    Just(Vec::new()).boxed()
                } else {
                    prop::collection::vec(0..i, 0..4).boxed()
                }
            })
            .collect::<Vec<_>>()
    })
}

fn dag_tasks(edges: &[Vec<usize>]) -> Vec<TaskSpec> {
    edges
        .iter()
        .enumerate()
        .map(|(i, ds)| {
            let deps: Vec<String> = ds.iter().map(|d| format!("t{d}")).collect();
            let refs: Vec<&str> = deps.iter().map(String::as_str).collect();
            with_cost(task(&format!("t{i}"), &refs), (i % 7) as f64 * 0.01)
        })
        .collect()
}

fn loose_rules() -> ValidationRules {
    ValidationRules {
        min_tasks: 1,
        max_tasks: 1000,
    }
}

proptest! {
    #[test]
    fn random_dags_validate_in_dependency_order(edges in dag_strategy()) {
        let rules = loose_rules();
        let tasks = dag_tasks(&edges);
        let v = run_with(tasks, None, &agents(), &rules).unwrap();
        prop_assert_eq!(v.topological_order.len(), edges.len());
        let position: HashMap<&str, usize> = v
            .topological_order
            .iter()
            .enumerate()
            .map(|(p, id)| (id.as_str(), p))
            .collect();
        for task in &v.plan.tasks {
            for dep in &task.depends_on {
                prop_assert!(position[dep.as_str()] < position[task.id.as_str()]);
            }
        }
        // The critical path is itself a dependency chain.
        for pair in v.critical_path.windows(2) {
            let later = v.plan.tasks.iter().find(|t| t.id == pair[1]).unwrap();
            prop_assert!(later.depends_on.contains(&pair[0]));
        }
    }

    /// Any directed graph (self-loops, repeats, edges either way): the
    /// validator accepts it exactly when an independent oracle (Kahn's
    /// algorithm) finds it acyclic, and a rejection names exactly the
    /// graph's defects: one `self_dependency` per self-looping task,
    /// `cycle` iff a longer cycle exists, `no_root` iff no task is free.
    #[test]
    fn validator_accepts_exactly_the_dags(
        edges in (1usize..24).prop_flat_map(|n| {
            prop::collection::vec(prop::collection::vec(0..n, 0..4), n)
        }),
    ) {
        let n = edges.len();
        let self_loops = edges.iter().enumerate().filter(|(i, ds)| ds.contains(i)).count();
        let proper: Vec<Vec<usize>> = edges
            .iter()
            .enumerate()
            .map(|(i, ds)| ds.iter().copied().filter(|d| *d != i).collect())
            .collect();
        // Kahn: repeatedly take tasks whose dependencies are all taken.
        let mut taken = vec![false; n];
        let mut progress = true;
        while progress {
            progress = false;
            for (i, ds) in proper.iter().enumerate() {
                if !taken[i] && ds.iter().all(|d| taken[*d]) {
                    taken[i] = true;
                    progress = true;
                }
            }
        }
        let has_cycle = taken.iter().any(|t| !t);
        let no_root = proper.iter().all(|ds| !ds.is_empty());

        match run_with(dag_tasks(&edges), None, &agents(), &loose_rules()) {
            Ok(v) => {
                prop_assert!(self_loops == 0 && !has_cycle, "accepted a graph with a cycle: {:?}", edges);
                prop_assert_eq!(v.topological_order.len(), n);
            }
            Err(problems) => {
                let codes = codes_of(&problems);
                prop_assert!(self_loops > 0 || has_cycle, "rejected a DAG: {:?} {:?}", edges, codes);
                prop_assert_eq!(codes.iter().filter(|c| **c == codes::SELF_DEPENDENCY).count(), self_loops);
                prop_assert_eq!(codes.contains(&codes::CYCLE), has_cycle);
                prop_assert_eq!(codes.contains(&codes::NO_ROOT), no_root);
                prop_assert!(
                    codes.iter().all(|c| [codes::SELF_DEPENDENCY, codes::CYCLE, codes::NO_ROOT].contains(c)),
                    "{:?}", codes
                );
            }
        }
    }

    #[test]
    fn back_edge_is_reported_as_cycle(
        edges in dag_strategy(),
        pick in any::<prop::sample::Index>(),
        span in any::<prop::sample::Index>(),
    ) {
        let n = edges.len();
        let mut edges = edges;
        // Force a forward chain lo -> .. -> hi, then make lo depend on hi.
        let lo = pick.index(n - 1);
        let hi = lo + 1 + span.index(n - lo - 1);
        for (k, deps) in edges.iter_mut().enumerate().take(hi + 1).skip(lo + 1) {
            deps.push(k - 1);
        }
        edges[lo].push(hi);
        let tasks = dag_tasks(&edges);
        let problems = run_with(tasks, None, &agents(), &loose_rules()).unwrap_err();
        // The back edge may take away the only task without dependencies.
        let mut expected = vec![codes::CYCLE];
        if edges.iter().all(|d| !d.is_empty()) {
            expected.push(codes::NO_ROOT);
        }
        prop_assert_eq!(codes_of(&problems), expected);
        let path = cycle_ids(&problems[0].message);
        // Every cycle must use the injected edge, so both of its ends appear.
        let lo_id = format!("t{lo}");
        let hi_id = format!("t{hi}");
        prop_assert!(path.contains(&lo_id), "{}", problems[0].message);
        prop_assert!(path.contains(&hi_id), "{}", problems[0].message);
        prop_assert_eq!(path.first(), path.last());
        // Each step of the reported path is a real dependency.
        for pair in path.windows(2) {
            let a: usize = pair[0][1..].parse().unwrap();
            let b: usize = pair[1][1..].parse().unwrap();
            prop_assert!(edges[a].contains(&b), "{} does not depend on {}", pair[0], pair[1]);
        }
    }
}
