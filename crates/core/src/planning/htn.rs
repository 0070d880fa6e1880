//! Hierarchical task network (HTN) methods as data, and their pure decomposition.
//!
//! A *compound task* such as `mission` or `review_cycle` has one or more [`Method`]s.
//! A method lists *subtasks*: primitive tasks (plain [`TaskSpec`]s) and references to
//! other compound tasks ([`CompoundRef`]). [`decompose`] expands a chosen method
//! until every leaf is primitive, choosing for each compound subtask the first method
//! (in library order) whose [`Condition`]s hold on the mission's constraints.
//!
//! Nested leaf ids are prefixed with the compound subtask's id (`review.critique`), so
//! ids stay unique, and dependencies are rewired across the nesting:
//!
//! - depending on a compound sibling means depending on all of its *exit* leaves
//!   (leaves that nothing else inside it depends on);
//! - a compound subtask's *entry* leaves (leaves with no dependency inside it)
//!   inherit the compound subtask's own `depends_on`.
//!
//! Conditions only read the constraints, which do not change during a decomposition,
//! so a compound task that reaches itself again would expand forever; that is
//! reported as [`DecompositionError::Recursion`] rather than cut off at some depth.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::spec::{PlanSpec, TaskSpec};

/// The compound task every mission shape decomposes; root methods are methods of it.
pub const MISSION_TASK: &str = "mission";

/// Deepest nesting of compound expansions below the root method.
///
/// Real shapes need two or three levels; eight leaves room for custom methods while
/// keeping a runaway library from producing absurd plans.
pub const MAX_DECOMPOSITION_DEPTH: usize = 8;

/// Most primitive tasks one decomposition may produce.
///
/// Far above what validation accepts (20 by default); it only stops a library whose
/// methods fan out at every level from using unbounded memory before validation runs.
pub const MAX_EXPANDED_TASKS: usize = 500;

/// Longest text, in characters, inserted for `{goal}` or a `{param}` (titles must stay readable).
pub const MAX_INSERTED_CHARS: usize = 200;

/// A test on one key of the mission's constraints object.
///
/// `equals` holds when the value is equal (strings compare trimmed and
/// case-insensitively, because constraints are typed by people; numbers compare by
/// value). `exists` holds when presence (non-null) matches it. With neither, the
/// condition holds when the key is present. `"equals": null` counts as no `equals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// Top-level key in the constraints object.
    pub key: String,
    /// Value the key must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// Whether the key must be present (`true`) or absent (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

impl Condition {
    /// Whether this condition holds on `constraints` (a non-object counts as empty).
    pub fn holds(&self, constraints: &Value) -> bool {
        let value = constraints.get(&self.key).filter(|v| !v.is_null());
        if let Some(expected) = &self.equals
            && !value.is_some_and(|v| values_equal(v, expected))
        {
            return false;
        }
        match self.exists {
            Some(wanted) => value.is_some() == wanted,
            None => self.equals.is_some() || value.is_some(),
        }
    }
}

/// Loose equality for constraint values: case-insensitive strings, numeric numbers.
fn values_equal(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::String(a), Value::String(b)) => a.trim().to_lowercase() == b.trim().to_lowercase(),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => actual == expected,
    }
}

/// One way to decompose a compound task into ordered subtasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Method {
    /// Unique name across the library, e.g. `"research-report"` or `"review-cycle-gated"`.
    pub name: String,
    /// The compound task this method decomposes; mission shapes use [`MISSION_TASK`].
    pub task: String,
    /// What the method is for; root methods are matched on it.
    pub description: String,
    /// Extra words that signal a goal this method fits; used for matching root methods.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Tests on the mission's constraints; the method applies only when all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The subtasks, in order; `depends_on` refers to sibling ids.
    pub subtasks: Vec<Subtask>,
}

impl Method {
    /// Whether every condition holds on `constraints`.
    pub fn applies(&self, constraints: &Value) -> bool {
        self.conditions.iter().all(|c| c.holds(constraints))
    }

    /// Whether this is a top-level mission shape.
    pub fn is_root(&self) -> bool {
        self.task == MISSION_TASK
    }

    /// The text the matcher sees: name words, description and keywords.
    pub fn matching_text(&self) -> String {
        format!(
            "{} {} {}",
            self.name,
            self.description,
            self.keywords.join(" ")
        )
    }
}

/// One entry of a method: a primitive task or a reference to a compound task.
///
/// On the wire an entry with a `compound` field is a [`CompoundRef`]; anything else
/// must be a [`TaskSpec`] (unknown fields are rejected either way).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Subtask {
    /// A task an agent does directly.
    Primitive(TaskSpec),
    /// A compound task, expanded by one of its methods.
    Compound(CompoundRef),
}

impl Subtask {
    /// The sibling-local id.
    pub fn id(&self) -> &str {
        match self {
            Subtask::Primitive(t) => &t.id,
            Subtask::Compound(c) => &c.id,
        }
    }

    /// Sibling ids this subtask waits for.
    pub fn depends_on(&self) -> &[String] {
        match self {
            Subtask::Primitive(t) => &t.depends_on,
            Subtask::Compound(c) => &c.depends_on,
        }
    }
}

impl<'de> Deserialize<'de> for Subtask {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Dispatch on the `compound` key instead of `#[serde(untagged)]`, whose
        // "did not match any variant" hides the real mistake (say, a typo'd field).
        let value = Value::deserialize(deserializer)?;
        let result = if value.get("compound").is_some() {
            serde_json::from_value(value).map(Subtask::Compound)
        } else {
            serde_json::from_value(value).map(Subtask::Primitive)
        };
        result.map_err(serde::de::Error::custom)
    }
}

/// A subtask that is itself a compound task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompoundRef {
    /// Sibling-local id; it also prefixes the ids of the leaves it expands into.
    pub id: String,
    /// Name of the compound task, e.g. `"review_cycle"`.
    pub compound: String,
    /// Sibling ids this subtask waits for; its entry leaves inherit them.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// Stable codes of [`DecompositionError`]s, for clients and event logs.
pub mod codes {
    /// No method has the requested name.
    pub const METHOD_NOT_FOUND: &str = "method_not_found";
    /// The requested method's conditions do not hold on the constraints.
    pub const METHOD_NOT_APPLICABLE: &str = "method_not_applicable";
    /// A compound subtask has no method whose conditions hold.
    pub const NO_APPLICABLE_METHOD: &str = "no_applicable_method";
    /// A compound task's expansion reaches the same compound task again.
    pub const RECURSIVE_DECOMPOSITION: &str = "recursive_decomposition";
    /// Compound expansions nest deeper than [`super::MAX_DECOMPOSITION_DEPTH`].
    pub const DEPTH_EXCEEDED: &str = "depth_exceeded";
    /// The expansion produced more than [`super::MAX_EXPANDED_TASKS`] tasks.
    pub const TOO_MANY_TASKS: &str = "too_many_tasks";
    /// A method has no subtasks.
    pub const EMPTY_METHOD: &str = "empty_method";
    /// Two subtasks of one method share an id.
    pub const DUPLICATE_SUBTASK: &str = "duplicate_subtask";
    /// A subtask depends on an id that is not a sibling.
    pub const UNKNOWN_SIBLING: &str = "unknown_sibling";
    /// Two leaves ended up with the same prefixed id.
    pub const DUPLICATE_TASK_ID: &str = "duplicate_task_id";
}

/// Why a method could not be decomposed into primitive tasks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompositionError {
    /// No method has the requested name.
    #[error("no method named '{name}'")]
    MethodNotFound {
        /// The requested name.
        name: String,
    },
    /// The requested method's conditions do not hold on the constraints.
    #[error("method '{method}' does not apply: its conditions do not hold on the constraints")]
    MethodNotApplicable {
        /// The method's name.
        method: String,
    },
    /// A compound subtask has no method whose conditions hold.
    #[error(
        "no applicable method for compound task '{task}' (subtask '{subtask}'): {}",
        no_method_reason(*.candidates)
    )]
    NoApplicableMethod {
        /// The compound task.
        task: String,
        /// Prefixed id of the subtask that needed it.
        subtask: String,
        /// How many methods exist for the task (all failed their conditions).
        candidates: usize,
    },
    /// A compound task's expansion reaches the same compound task again.
    #[error("compound task '{}' expands into itself: {}", .chain[0], .chain.join(" -> "))]
    Recursion {
        /// Compound tasks from the first occurrence to the repeat, e.g. `[a, b, a]`.
        chain: Vec<String>,
    },
    /// Compound expansions nest deeper than the limit.
    #[error("decomposition nests deeper than {limit} levels: {}", .chain.join(" -> "))]
    DepthExceeded {
        /// The depth limit.
        limit: usize,
        /// Compound tasks from the root to the one that went too deep.
        chain: Vec<String>,
    },
    /// The expansion produced too many tasks.
    #[error("decomposition produces more than {limit} tasks")]
    TooManyTasks {
        /// The task limit.
        limit: usize,
    },
    /// A method has no subtasks.
    #[error("method '{method}' has no subtasks")]
    EmptyMethod {
        /// The method's name.
        method: String,
    },
    /// Two subtasks of one method share an id.
    #[error("method '{method}' has two subtasks with id '{id}'")]
    DuplicateSubtask {
        /// The method's name.
        method: String,
        /// The repeated id.
        id: String,
    },
    /// A subtask depends on an id that is not a sibling.
    #[error(
        "in method '{method}', subtask '{subtask}' depends on '{dependency}', which is not a sibling"
    )]
    UnknownSibling {
        /// The method's name.
        method: String,
        /// The subtask with the bad dependency.
        subtask: String,
        /// The unknown id.
        dependency: String,
    },
    /// Two leaves ended up with the same prefixed id.
    #[error("two tasks of the decomposed plan have id '{id}'")]
    DuplicateTaskId {
        /// The repeated id.
        id: String,
    },
}

/// The tail of the `NoApplicableMethod` message: no methods at all, or none applies.
fn no_method_reason(candidates: usize) -> String {
    if candidates == 0 {
        "the library has no method for it".to_owned()
    } else {
        format!("none of its {candidates} methods' conditions hold")
    }
}

impl DecompositionError {
    /// The stable code, one of [`codes`].
    pub fn code(&self) -> &'static str {
        match self {
            DecompositionError::MethodNotFound { .. } => codes::METHOD_NOT_FOUND,
            DecompositionError::MethodNotApplicable { .. } => codes::METHOD_NOT_APPLICABLE,
            DecompositionError::NoApplicableMethod { .. } => codes::NO_APPLICABLE_METHOD,
            DecompositionError::Recursion { .. } => codes::RECURSIVE_DECOMPOSITION,
            DecompositionError::DepthExceeded { .. } => codes::DEPTH_EXCEEDED,
            DecompositionError::TooManyTasks { .. } => codes::TOO_MANY_TASKS,
            DecompositionError::EmptyMethod { .. } => codes::EMPTY_METHOD,
            DecompositionError::DuplicateSubtask { .. } => codes::DUPLICATE_SUBTASK,
            DecompositionError::UnknownSibling { .. } => codes::UNKNOWN_SIBLING,
            DecompositionError::DuplicateTaskId { .. } => codes::DUPLICATE_TASK_ID,
        }
    }

    /// Code and message, as recorded in event logs and API errors.
    pub fn info(&self) -> DecompositionErrorInfo {
        DecompositionErrorInfo {
            code: self.code(),
            message: self.to_string(),
        }
    }
}

/// Serializes as `{"code": ..., "message": ...}`, the shape the service records.
impl Serialize for DecompositionError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.info().serialize(serializer)
    }
}

/// The recordable form of a [`DecompositionError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecompositionErrorInfo {
    /// Stable code, one of [`codes`].
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

/// One compound subtask expanded during a decomposition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expansion {
    /// Prefixed id of the compound subtask, e.g. `"review.gate"`.
    pub subtask: String,
    /// The compound task, e.g. `"quality_gate"`.
    pub task: String,
    /// The method chosen for it.
    pub method: String,
    /// Nesting level: 1 for subtasks of the root method.
    pub depth: usize,
}

/// How a plan was decomposed, for provenance records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecompositionTrace {
    /// The root method.
    pub method: String,
    /// Deepest nesting level reached; 0 when the root method is all primitive.
    pub depth: usize,
    /// Every compound expansion, in plan order.
    pub expansions: Vec<Expansion>,
    /// Number of primitive tasks in the plan.
    pub task_count: usize,
}

/// A decomposed plan and how it came about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decomposition {
    /// The primitive tasks, with `{goal}` and `{param}` placeholders filled.
    pub plan: PlanSpec,
    /// Which methods were chosen where.
    pub trace: DecompositionTrace,
}

/// Decomposes `root` into primitive tasks using `methods` for compound subtasks.
///
/// `methods` is searched in order for each compound task, so earlier methods win
/// when several apply. Placeholders `{goal}` and `{key}` (for string or number
/// values of `constraints`) are filled in every title, description, criterion and
/// string input; unknown placeholders are left as they are.
pub fn decompose(
    methods: &[Method],
    root: &Method,
    goal: &str,
    constraints: &Value,
) -> Result<Decomposition, DecompositionError> {
    if !root.applies(constraints) {
        return Err(DecompositionError::MethodNotApplicable {
            method: root.name.clone(),
        });
    }
    let mut expander = Expander {
        methods,
        constraints,
        expansions: Vec::new(),
        depth: 0,
        leaves: 0,
    };
    let mut chain = vec![root.task.clone()];
    let expanded = expander.expand(root, "", &mut chain, 0)?;

    let mut seen = HashSet::new();
    for leaf in &expanded.leaves {
        if !seen.insert(leaf.id.as_str()) {
            return Err(DecompositionError::DuplicateTaskId {
                id: leaf.id.clone(),
            });
        }
    }

    let placeholders = Placeholders::new(goal, constraints);
    let tasks: Vec<TaskSpec> = expanded
        .leaves
        .into_iter()
        .map(|t| placeholders.fill_task(t))
        .collect();
    let trace = DecompositionTrace {
        method: root.name.clone(),
        depth: expander.depth,
        expansions: expander.expansions,
        task_count: tasks.len(),
    };
    Ok(Decomposition {
        plan: PlanSpec { tasks },
        trace,
    })
}

/// The leaves of one expanded method, with its entry and exit leaves (indices into `leaves`).
struct Expanded {
    leaves: Vec<TaskSpec>,
    entries: Vec<usize>,
    exits: Vec<usize>,
}

/// State shared across one recursive decomposition.
struct Expander<'a> {
    methods: &'a [Method],
    constraints: &'a Value,
    expansions: Vec<Expansion>,
    depth: usize,
    leaves: usize,
}

impl Expander<'_> {
    /// Expands `method`, prefixing leaf ids with `prefix`; `chain` holds the compound tasks above.
    fn expand(
        &mut self,
        method: &Method,
        prefix: &str,
        chain: &mut Vec<String>,
        depth: usize,
    ) -> Result<Expanded, DecompositionError> {
        if method.subtasks.is_empty() {
            return Err(DecompositionError::EmptyMethod {
                method: method.name.clone(),
            });
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, sub) in method.subtasks.iter().enumerate() {
            if index.insert(sub.id(), i).is_some() {
                return Err(DecompositionError::DuplicateSubtask {
                    method: method.name.clone(),
                    id: sub.id().to_owned(),
                });
            }
        }
        // Sibling positions each subtask depends on, checked before any expansion so
        // that a typo in a method is reported as such, not as a later symptom.
        let mut sibling_deps: Vec<Vec<usize>> = Vec::with_capacity(method.subtasks.len());
        for sub in &method.subtasks {
            let mut deps = Vec::new();
            for dep in sub.depends_on() {
                let Some(&j) = index.get(dep.as_str()) else {
                    return Err(DecompositionError::UnknownSibling {
                        method: method.name.clone(),
                        subtask: sub.id().to_owned(),
                        dependency: dep.clone(),
                    });
                };
                if !deps.contains(&j) {
                    deps.push(j);
                }
            }
            sibling_deps.push(deps);
        }

        // Pass 1: expand every subtask on its own; wiring needs all siblings' exits.
        let mut parts = Vec::with_capacity(method.subtasks.len());
        for sub in &method.subtasks {
            let part = match sub {
                Subtask::Primitive(task) => {
                    self.leaves += 1;
                    if self.leaves > MAX_EXPANDED_TASKS {
                        return Err(DecompositionError::TooManyTasks {
                            limit: MAX_EXPANDED_TASKS,
                        });
                    }
                    let mut leaf = task.clone();
                    leaf.id = format!("{prefix}{}", task.id);
                    leaf.depends_on = Vec::new();
                    Expanded {
                        leaves: vec![leaf],
                        entries: vec![0],
                        exits: vec![0],
                    }
                }
                Subtask::Compound(compound) => {
                    self.expand_compound(compound, prefix, chain, depth)?
                }
            };
            parts.push(part);
        }

        // Pass 2: each subtask's entry leaves wait for its siblings' exit leaves.
        let resolved: Vec<Vec<String>> = sibling_deps
            .iter()
            .map(|deps| {
                deps.iter()
                    .flat_map(|&j| parts[j].exits.iter().map(move |&k| (j, k)))
                    .map(|(j, k)| parts[j].leaves[k].id.clone())
                    .collect()
            })
            .collect();
        let mut depended_on = vec![false; parts.len()];
        for deps in &sibling_deps {
            for &j in deps {
                depended_on[j] = true;
            }
        }

        let mut out = Expanded {
            leaves: Vec::new(),
            entries: Vec::new(),
            exits: Vec::new(),
        };
        for (i, mut part) in parts.into_iter().enumerate() {
            for &e in &part.entries {
                push_unique(&mut part.leaves[e].depends_on, &resolved[i]);
            }
            let offset = out.leaves.len();
            if sibling_deps[i].is_empty() {
                out.entries.extend(part.entries.iter().map(|e| e + offset));
            }
            if !depended_on[i] {
                out.exits.extend(part.exits.iter().map(|e| e + offset));
            }
            out.leaves.extend(part.leaves);
        }
        Ok(out)
    }

    /// Chooses a method for a compound subtask and expands it one level deeper.
    fn expand_compound(
        &mut self,
        compound: &CompoundRef,
        prefix: &str,
        chain: &mut Vec<String>,
        depth: usize,
    ) -> Result<Expanded, DecompositionError> {
        let subtask = format!("{prefix}{}", compound.id);
        if let Some(first) = chain.iter().position(|t| *t == compound.compound) {
            let mut cycle = chain[first..].to_vec();
            cycle.push(compound.compound.clone());
            return Err(DecompositionError::Recursion { chain: cycle });
        }
        let depth = depth + 1;
        if depth > MAX_DECOMPOSITION_DEPTH {
            let mut too_deep = chain.clone();
            too_deep.push(compound.compound.clone());
            return Err(DecompositionError::DepthExceeded {
                limit: MAX_DECOMPOSITION_DEPTH,
                chain: too_deep,
            });
        }
        let mut candidates = self.methods.iter().filter(|m| m.task == compound.compound);
        let Some(method) = candidates.find(|m| m.applies(self.constraints)) else {
            return Err(DecompositionError::NoApplicableMethod {
                task: compound.compound.clone(),
                subtask,
                candidates: self
                    .methods
                    .iter()
                    .filter(|m| m.task == compound.compound)
                    .count(),
            });
        };
        self.expansions.push(Expansion {
            subtask: subtask.clone(),
            task: compound.compound.clone(),
            method: method.name.clone(),
            depth,
        });
        self.depth = self.depth.max(depth);
        chain.push(compound.compound.clone());
        let expanded = self.expand(method, &format!("{subtask}."), chain, depth);
        chain.pop();
        expanded
    }
}

/// Appends each of `extra` to `list` unless already present, keeping order.
fn push_unique(list: &mut Vec<String>, extra: &[String]) {
    for item in extra {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

/// Values for `{goal}` and `{param}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholders {
    values: HashMap<String, String>,
}

impl Placeholders {
    /// `{goal}` from the goal; `{key}` from each string or number value of `constraints`.
    ///
    /// A constraint named `goal` cannot override the goal.
    pub fn new(goal: &str, constraints: &Value) -> Placeholders {
        let mut values = HashMap::new();
        if let Value::Object(map) = constraints {
            for (key, value) in map {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => continue,
                };
                values.insert(key.clone(), text_for_insertion(&text));
            }
        }
        values.insert("goal".to_owned(), text_for_insertion(goal));
        Placeholders { values }
    }

    /// Replaces known `{name}` placeholders in one pass, so inserted text is never re-scanned.
    pub fn fill(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let replacement = after.find('}').and_then(|close| {
                let name = &after[..close];
                let valid =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                valid
                    .then(|| self.values.get(name))
                    .flatten()
                    .map(|v| (v, close))
            });
            match replacement {
                Some((value, close)) => {
                    out.push_str(value);
                    rest = &after[close + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Fills the title, description, criteria and string inputs of a task.
    pub fn fill_task(&self, mut task: TaskSpec) -> TaskSpec {
        task.title = self.fill(&task.title);
        task.description = self.fill(&task.description);
        for c in &mut task.success_criteria {
            c.description = self.fill(&c.description);
        }
        self.fill_json(&mut task.inputs);
        task
    }

    /// Fills every string inside a JSON value (keys are left alone).
    fn fill_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.fill(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.fill_json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.fill_json(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// Normalises and caps text inserted into a plan.
///
/// Runs of whitespace become one space (titles are one line), and the text is cut
/// to [`MAX_INSERTED_CHARS`] ending in "…" so a pasted essay cannot swamp titles.
pub fn text_for_insertion(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= MAX_INSERTED_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(MAX_INSERTED_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

impl fmt::Display for Expansion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} via {}", self.subtask, self.task, self.method)
    }
}

#[cfg(test)]
mod tests;
