//! Plan validation: structural checks, budget and assignability checks, and DAG analysis.
//!
//! Every problem found is reported, not only the first, so a user fixing a submitted
//! plan sees the whole list at once. The order is deterministic (see [`validate_plan`]).
//! All work is linear in the size of the plan (plus a log factor for ordering), so
//! plans with thousands of tasks validate quickly.

use crate::numbers::count;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};

use petgraph::Direction;
use petgraph::algo::{kosaraju_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};

use super::spec::{PlanSpec, TaskSpec};

/// Stable problem codes carried in [`PlanProblem::code`]; clients may match on them.
pub mod codes {
    /// The plan has fewer tasks than `ValidationRules::min_tasks`.
    pub const TOO_FEW_TASKS: &str = "too_few_tasks";
    /// The plan has more tasks than `ValidationRules::max_tasks`.
    pub const TOO_MANY_TASKS: &str = "too_many_tasks";
    /// A task id is empty or only whitespace.
    pub const EMPTY_ID: &str = "empty_id";
    /// A task title is empty or only whitespace.
    pub const EMPTY_TITLE: &str = "empty_title";
    /// Two tasks share an id; reported on each later occurrence.
    pub const DUPLICATE_ID: &str = "duplicate_id";
    /// A task depends on an id that no task has.
    pub const UNKNOWN_DEPENDENCY: &str = "unknown_dependency";
    /// A task lists itself in `depends_on`.
    pub const SELF_DEPENDENCY: &str = "self_dependency";
    /// Tasks depend on each other in a circle; the message gives the path.
    pub const CYCLE: &str = "cycle";
    /// Every task depends on another task, so nothing could ever start.
    pub const NO_ROOT: &str = "no_root";
    /// A task has no criterion with `must_pass: true`.
    pub const MISSING_MUST_PASS: &str = "missing_must_pass";
    /// A task's `estimated_cost` is negative, NaN or infinite.
    pub const NEGATIVE_COST: &str = "negative_cost";
    /// The sum of `estimated_cost` exceeds the budget.
    pub const OVER_BUDGET: &str = "over_budget";
    /// No single agent has all the task's required skills and tools.
    pub const UNASSIGNABLE: &str = "unassignable";
    /// A task's `inputs` is not a JSON object.
    pub const INPUTS_NOT_OBJECT: &str = "inputs_not_object";
}

/// Size limits for a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationRules {
    /// Fewest tasks a plan may have.
    pub min_tasks: usize,
    /// Most tasks a plan may have.
    pub max_tasks: usize,
}

impl Default for ValidationRules {
    /// 3..=20 tasks: fewer is not worth coordinating, more is hard to supervise.
    fn default() -> Self {
        ValidationRules {
            min_tasks: 3,
            max_tasks: 20,
        }
    }
}

/// What the validator needs to know about the world: the budget and who could do the work.
#[derive(Debug, Clone, Copy)]
pub struct ValidationContext<'a> {
    /// Size limits to enforce.
    pub rules: &'a ValidationRules,
    /// Spending cap for the whole plan, if any.
    pub budget: Option<f64>,
    /// The agents that could take tasks; empty means nobody can.
    pub agents: &'a [AgentCapability],
}

/// What one agent can do.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentCapability {
    /// Skills the agent has (compared case-insensitively).
    pub skills: Vec<String>,
    /// Tools the agent can use (compared exactly).
    pub tools: Vec<String>,
}

/// A plan that passed every check, with derived facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidatedPlan {
    /// The plan as submitted.
    pub plan: PlanSpec,
    /// Task ids, each after all its dependencies; among ready tasks the one listed first goes first.
    pub topological_order: Vec<String>,
    /// Task ids of the most expensive dependency chain, first to last (see [`validate_plan`]).
    pub critical_path: Vec<String>,
    /// Sum of every task's `estimated_cost`.
    pub total_estimated_cost: f64,
}

/// One thing wrong with a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanProblem {
    /// Stable machine-readable code, one of [`codes`].
    pub code: &'static str,
    /// Human-readable explanation naming the tasks involved.
    pub message: String,
    /// The task the problem is about, when it is about one task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl PlanProblem {
    /// Builds a problem about the plan as a whole.
    fn plan(code: &'static str, message: String) -> Self {
        PlanProblem {
            code,
            message,
            task_id: None,
        }
    }

    /// Builds a problem about one task.
    fn task(code: &'static str, task_id: &str, message: String) -> Self {
        PlanProblem {
            code,
            message,
            task_id: Some(task_id.to_owned()),
        }
    }
}

/// Checks a plan and derives its execution order, critical path and total cost.
///
/// Problem codes (stable strings, also in [`codes`]):
/// `too_few_tasks`, `too_many_tasks`, `empty_id`, `empty_title`, `duplicate_id`,
/// `unknown_dependency`, `self_dependency`, `cycle`, `no_root`, `missing_must_pass`,
/// `negative_cost`, `over_budget`, `unassignable`, `inputs_not_object`.
///
/// Problems come in this order: plan size; then, task by task in plan order,
/// `empty_id`, `empty_title`, `duplicate_id`, `self_dependency` / `unknown_dependency`
/// (in `depends_on` order), `negative_cost`, `missing_must_pass`, `inputs_not_object`, `unassignable`;
/// then `over_budget`; then the graph checks `cycle` (one per strongly connected
/// component, ordered by its first task) and `no_root`. Graph checks run only when
/// ids are non-empty and unique and every dependency is known, because otherwise
/// the graph is not well defined. Self-dependencies are reported on their own and
/// left out of the graph so that other cycles are still found.
///
/// A cycle message reads `a -> b -> a`, where each task depends on the next.
///
/// The critical path is the dependency chain with the largest summed
/// `estimated_cost`; sums within 1e-9 (relative) count as equal, then the chain
/// with more tasks wins, then the one whose tasks come earlier in the plan.
pub fn validate_plan(
    plan: PlanSpec,
    ctx: &ValidationContext,
) -> Result<ValidatedPlan, Vec<PlanProblem>> {
    let mut problems = Vec::new();
    let tasks = &plan.tasks;
    let n = tasks.len();
    size_problems(n, ctx.rules, &mut problems);

    let (index, first_holder) = index_ids(tasks);
    let agents: Vec<PreparedAgent> = ctx.agents.iter().map(PreparedAgent::new).collect();
    let mut graph_ok = true;
    let mut deps: Vec<Vec<usize>> = Vec::with_capacity(n);
    let mut total_cost = 0.0;
    // Per-task checks, grouped by task so the report reads top to bottom.
    for (i, task) in tasks.iter().enumerate() {
        let checked = check_task(i, task, &index, first_holder[i], &agents, &mut problems);
        graph_ok &= checked.graph_ok;
        total_cost += checked.cost;
        deps.push(checked.deps);
    }
    if let Some(budget) = ctx.budget
        && total_cost > budget
    {
        problems.push(PlanProblem::plan(
            codes::OVER_BUDGET,
            format!(
                "plan costs an estimated {} which exceeds the budget of {}",
                crate::numbers::human(total_cost),
                crate::numbers::human(budget)
            ),
        ));
    }
    if !graph_ok || n == 0 {
        return Err(problems);
    }

    let graph = dependency_graph(&deps);
    graph_problems(tasks, &graph, &deps, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }

    let order = stable_topological_order(&graph, &deps);
    let critical = critical_path(&plan, &deps, &order);
    let topological_order = order.iter().map(|&i| tasks[i].id.clone()).collect();
    let critical_path = critical.iter().map(|&i| tasks[i].id.clone()).collect();
    Ok(ValidatedPlan {
        plan,
        topological_order,
        critical_path,
        total_estimated_cost: total_cost,
    })
}

/// Too few or too many tasks.
fn size_problems(n: usize, rules: &ValidationRules, problems: &mut Vec<PlanProblem>) {
    if n < rules.min_tasks {
        problems.push(PlanProblem::plan(
            codes::TOO_FEW_TASKS,
            format!(
                "plan has {}; at least {} required",
                count(n, "task", "tasks"),
                count(rules.min_tasks, "is", "are")
            ),
        ));
    }
    if n > rules.max_tasks {
        problems.push(PlanProblem::plan(
            codes::TOO_MANY_TASKS,
            format!(
                "plan has {}; at most {} allowed",
                count(n, "task", "tasks"),
                count(rules.max_tasks, "is", "are")
            ),
        ));
    }
}

/// Where each id is first used (so dependencies may refer forward in the
/// list), and for each task that reuses an id, the task that used it first.
fn index_ids(tasks: &[TaskSpec]) -> (HashMap<&str, usize>, Vec<Option<usize>>) {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(tasks.len());
    let mut first_holder: Vec<Option<usize>> = vec![None; tasks.len()];
    for (i, task) in tasks.iter().enumerate() {
        if task.id.trim().is_empty() {
            continue;
        }
        match index.get(task.id.as_str()) {
            Some(&first) => first_holder[i] = Some(first),
            None => {
                index.insert(task.id.as_str(), i);
            }
        }
    }
    (index, first_holder)
}

/// What the checks of one task found out for the plan as a whole.
struct CheckedTask {
    /// Indices of the tasks it depends on, sorted and deduplicated.
    deps: Vec<usize>,
    /// False when its id or a dependency leaves the graph undefined.
    graph_ok: bool,
    /// Its estimated cost (0 when the cost is invalid).
    cost: f64,
}

/// The checks of task `i`, in the documented order.
fn check_task(
    i: usize,
    task: &TaskSpec,
    index: &HashMap<&str, usize>,
    first_holder: Option<usize>,
    agents: &[PreparedAgent],
    problems: &mut Vec<PlanProblem>,
) -> CheckedTask {
    let id = task.id.as_str();
    let mut graph_ok = true;
    if id.trim().is_empty() {
        graph_ok = false;
        problems.push(PlanProblem::task(
            codes::EMPTY_ID,
            id,
            format!("task #{} has an empty id", i + 1),
        ));
    }
    if task.title.trim().is_empty() {
        problems.push(PlanProblem::task(
            codes::EMPTY_TITLE,
            id,
            format!("task '{id}' has an empty title"),
        ));
    }
    if let Some(first) = first_holder {
        graph_ok = false;
        problems.push(PlanProblem::task(
            codes::DUPLICATE_ID,
            id,
            format!(
                "task #{} reuses id '{id}' already used by task #{}",
                i + 1,
                first + 1
            ),
        ));
    }
    let (deps, deps_known) = dependencies(task, index, problems);
    graph_ok &= deps_known;

    let mut cost = task.estimated_cost;
    if !(cost.is_finite() && cost >= 0.0) {
        problems.push(PlanProblem::task(
            codes::NEGATIVE_COST,
            id,
            format!("task '{id}' has estimated_cost {cost}; it must be a finite number >= 0"),
        ));
        cost = 0.0;
    }
    if !task.success_criteria.iter().any(|c| c.must_pass) {
        problems.push(PlanProblem::task(
            codes::MISSING_MUST_PASS,
            id,
            format!("task '{id}' has no success criterion with must_pass: true"),
        ));
    }
    if !task.inputs.is_object() {
        problems.push(PlanProblem::task(
            codes::INPUTS_NOT_OBJECT,
            id,
            format!("task '{id}' has inputs that are not a JSON object"),
        ));
    }
    if !agents.iter().any(|a| a.can_do(task)) {
        let message = if agents.is_empty() {
            format!("task '{id}' cannot be assigned: no agents are available")
        } else {
            format!(
                "task '{id}' cannot be assigned: no agent has all of skills [{}] and tools [{}]",
                task.required_skills.join(", "),
                task.required_tools.join(", ")
            )
        };
        problems.push(PlanProblem::task(codes::UNASSIGNABLE, id, message));
    }
    CheckedTask {
        deps,
        graph_ok,
        cost,
    }
}

/// A task's dependencies as indices (sorted and deduplicated, so graph walks
/// are deterministic and repeats harmless), and whether every one is known.
/// A self-dependency is reported once and left out of the graph.
fn dependencies(
    task: &TaskSpec,
    index: &HashMap<&str, usize>,
    problems: &mut Vec<PlanProblem>,
) -> (Vec<usize>, bool) {
    let id = task.id.as_str();
    let mut deps = Vec::with_capacity(task.depends_on.len());
    let mut all_known = true;
    let mut reported_self = false;
    for dep in &task.depends_on {
        if dep == id {
            if !reported_self {
                reported_self = true;
                problems.push(PlanProblem::task(
                    codes::SELF_DEPENDENCY,
                    id,
                    format!("task '{id}' depends on itself"),
                ));
            }
            continue;
        }
        match index.get(dep.as_str()) {
            Some(&d) => deps.push(d),
            None => {
                all_known = false;
                problems.push(PlanProblem::task(
                    codes::UNKNOWN_DEPENDENCY,
                    id,
                    format!("task '{id}' depends on unknown task '{dep}'"),
                ));
            }
        }
    }
    deps.sort_unstable();
    deps.dedup();
    (deps, all_known)
}

/// The dependency graph: edges point from a dependency to its dependent,
/// i.e. in execution order.
fn dependency_graph(deps: &[Vec<usize>]) -> DiGraph<(), ()> {
    let n = deps.len();
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n, deps.iter().map(Vec::len).sum());
    for _ in 0..n {
        graph.add_node(());
    }
    for (task, task_deps) in deps.iter().enumerate() {
        for &dep in task_deps {
            graph.add_edge(NodeIndex::new(dep), NodeIndex::new(task), ());
        }
    }
    graph
}

/// Cycles (one per strongly connected component) and a plan with no root.
fn graph_problems(
    tasks: &[TaskSpec],
    graph: &DiGraph<(), ()>,
    deps: &[Vec<usize>],
    problems: &mut Vec<PlanProblem>,
) {
    // petgraph's toposort is iterative, so deep chains cannot overflow the stack.
    if toposort(graph, None).is_err() {
        for path in find_cycles(graph, deps) {
            let text = path
                .iter()
                .map(|&i| tasks[i].id.as_str())
                .collect::<Vec<_>>()
                .join(" -> ");
            problems.push(PlanProblem::task(
                codes::CYCLE,
                &tasks[path[0]].id,
                format!("dependency cycle: {text} (each task depends on the next)"),
            ));
        }
    }
    if deps.iter().all(|d| !d.is_empty()) {
        problems.push(PlanProblem::plan(
            codes::NO_ROOT,
            "every task depends on another task, so no task can start".to_owned(),
        ));
    }
}

impl AgentCapability {
    /// Marks "any skill, any tool": the contractor pool, which can take any task.
    pub const ANY: &'static str = "*";

    /// A capability covering every task (contractors can be hired for anything).
    pub fn any() -> AgentCapability {
        AgentCapability {
            skills: vec![Self::ANY.to_owned()],
            tools: vec![Self::ANY.to_owned()],
        }
    }
}

/// An agent's capabilities normalised once, so each task check is cheap.
struct PreparedAgent<'a> {
    skills: BTreeSet<String>,
    tools: BTreeSet<&'a str>,
    any: bool,
}

impl<'a> PreparedAgent<'a> {
    /// Lowercases skills so `Research` and `research` match.
    fn new(agent: &'a AgentCapability) -> Self {
        PreparedAgent {
            skills: agent.skills.iter().map(|s| normalize_skill(s)).collect(),
            tools: agent.tools.iter().map(String::as_str).collect(),
            any: agent.skills.iter().any(|s| s == AgentCapability::ANY)
                && agent.tools.iter().any(|t| t == AgentCapability::ANY),
        }
    }

    /// Whether this one agent has every skill and tool the task needs.
    fn can_do(&self, task: &super::spec::TaskSpec) -> bool {
        self.any
            || task
                .required_skills
                .iter()
                .all(|s| self.skills.contains(&normalize_skill(s)))
                && task
                    .required_tools
                    .iter()
                    .all(|t| self.tools.contains(t.as_str()))
    }
}

/// Canonical form of a skill name for comparison.
fn normalize_skill(skill: &str) -> String {
    skill.trim().to_lowercase()
}

/// One concrete cycle per non-trivial strongly connected component, ordered by first task.
///
/// Each path starts and ends at the component's lowest-indexed task and follows
/// `depends_on` edges. Kosaraju is used rather than petgraph's Tarjan because the
/// latter recurses once per node and could overflow the stack on very deep plans.
fn find_cycles(graph: &DiGraph<(), ()>, deps: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut components: Vec<Vec<usize>> = kosaraju_scc(graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut members: Vec<usize> = c.into_iter().map(NodeIndex::index).collect();
            members.sort_unstable();
            members
        })
        .collect();
    components.sort_unstable_by_key(|c| c[0]);

    let mut component_of = vec![usize::MAX; deps.len()];
    for (k, members) in components.iter().enumerate() {
        for &m in members {
            component_of[m] = k;
        }
    }

    components
        .iter()
        .enumerate()
        .map(|(k, members)| {
            // A non-trivial component always contains a cycle through each member;
            // the fallback only guards against a bug producing an unreadable message.
            shortest_cycle_through(members[0], k, &component_of, deps).unwrap_or_else(|| {
                let mut path = members.clone();
                path.push(members[0]);
                path
            })
        })
        .collect()
}

/// Breadth-first search inside one component for the shortest cycle through `start`.
fn shortest_cycle_through(
    start: usize,
    component: usize,
    component_of: &[usize],
    deps: &[Vec<usize>],
) -> Option<Vec<usize>> {
    // Map-based bookkeeping keeps the cost proportional to the component, not the plan.
    let mut came_from: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    came_from.insert(start, start);
    while let Some(u) = queue.pop_front() {
        if deps[u].binary_search(&start).is_ok() {
            let mut path = vec![u];
            let mut cur = u;
            while cur != start {
                cur = *came_from.get(&cur)?;
                path.push(cur);
            }
            path.reverse();
            path.push(start);
            return Some(path);
        }
        for &w in &deps[u] {
            if component_of[w] == component && !came_from.contains_key(&w) {
                came_from.insert(w, u);
                queue.push_back(w);
            }
        }
    }
    None
}

/// Kahn's algorithm preferring the earliest-listed ready task, so the order follows the author's.
///
/// petgraph's DFS-based toposort is only used to detect cycles: its order jumps
/// around the plan, which makes dispatch order and reports harder to read.
fn stable_topological_order(graph: &DiGraph<(), ()>, deps: &[Vec<usize>]) -> Vec<usize> {
    let mut remaining: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> = remaining
        .iter()
        .enumerate()
        .filter(|&(_, &d)| d == 0)
        .map(|(i, _)| Reverse(i))
        .collect();
    let mut order = Vec::with_capacity(deps.len());
    while let Some(Reverse(u)) = ready.pop() {
        order.push(u);
        for next in graph.neighbors_directed(NodeIndex::new(u), Direction::Outgoing) {
            let v = next.index();
            remaining[v] -= 1;
            if remaining[v] == 0 {
                ready.push(Reverse(v));
            }
        }
    }
    order
}

/// Length of a chain ending at some task: summed cost, then number of tasks.
#[derive(Clone, Copy)]
struct ChainWeight {
    cost: f64,
    tasks: usize,
}

impl ChainWeight {
    /// Compares chains, treating nearly equal float sums as equal (0.1 + 0.2 vs 0.3).
    fn compare(self, other: ChainWeight) -> Ordering {
        let tolerance = 1e-9 * self.cost.abs().max(other.cost.abs()).max(1.0);
        if (self.cost - other.cost).abs() > tolerance {
            self.cost.total_cmp(&other.cost)
        } else {
            self.tasks.cmp(&other.tasks)
        }
    }
}

/// The heaviest dependency chain, as task indices from first to last.
fn critical_path(plan: &PlanSpec, deps: &[Vec<usize>], order: &[usize]) -> Vec<usize> {
    let n = deps.len();
    let mut best = vec![
        ChainWeight {
            cost: 0.0,
            tasks: 0
        };
        n
    ];
    let mut came_from: Vec<Option<usize>> = vec![None; n];
    for &v in order {
        let mut chosen: Option<usize> = None;
        // deps are sorted, so on ties the earliest-listed predecessor is kept.
        for &u in &deps[v] {
            if chosen.is_none_or(|c| best[u].compare(best[c]) == Ordering::Greater) {
                chosen = Some(u);
            }
        }
        let base = chosen.map_or(
            ChainWeight {
                cost: 0.0,
                tasks: 0,
            },
            |c| best[c],
        );
        best[v] = ChainWeight {
            cost: base.cost + plan.tasks[v].estimated_cost,
            tasks: base.tasks + 1,
        };
        came_from[v] = chosen;
    }

    let mut end: Option<usize> = None;
    for v in 0..n {
        if end.is_none_or(|e| best[v].compare(best[e]) == Ordering::Greater) {
            end = Some(v);
        }
    }
    let mut path = Vec::new();
    let mut cur = end;
    while let Some(v) = cur {
        path.push(v);
        cur = came_from[v];
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests;
