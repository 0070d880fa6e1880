//! The method library: mission shapes and compound-task methods, chosen by matching
//! a goal's wording and expanded by [`super::htn`].
//!
//! Built-in methods are JSON data files under `templates/` (mission shapes at the top,
//! shared compound tasks such as `review_cycle` under `templates/compound/`), embedded
//! at compile time so the binary needs no files at run time. Saved routines (flat
//! [`PlanTemplate`]s) and custom methods can be added with
//! [`TemplateLibrary::with_extra`] and [`TemplateLibrary::with_methods`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::htn::{
    Decomposition, DecompositionError, MAX_INSERTED_CHARS, MISSION_TASK, Method, Placeholders,
    Subtask, decompose, text_for_insertion,
};
use super::matching::{Candidate, LexicalIndex, MatchOutcome, keywords};
use super::spec::{PlanSpec, TaskSpec};

/// Name of the fallback method, which is never matched by score.
pub const GENERIC_TEMPLATE: &str = "generic";

/// Placeholder in method text that is replaced with the goal.
pub const GOAL_PLACEHOLDER: &str = "{goal}";

/// Longest goal text, in characters, inserted into a plan (titles must stay readable).
pub const MAX_INSERTED_GOAL_CHARS: usize = MAX_INSERTED_CHARS;

/// How many keywords [`routine_from_plan`] derives from the goal.
pub const ROUTINE_KEYWORDS: usize = 8;

/// The shipped method files as `(file name, JSON source)`; each holds one method or an array.
///
/// Order matters: for a compound task the first applicable method wins, so
/// conditional methods come before the unconditional default in each file.
const BUILTIN_SOURCES: &[(&str, &str)] = &[
    (
        "research-report",
        include_str!("../../templates/research-report.json"),
    ),
    (
        "competitive-analysis",
        include_str!("../../templates/competitive-analysis.json"),
    ),
    (
        "code-change-with-review",
        include_str!("../../templates/code-change-with-review.json"),
    ),
    (
        "incident-postmortem",
        include_str!("../../templates/incident-postmortem.json"),
    ),
    (
        "product-launch",
        include_str!("../../templates/product-launch.json"),
    ),
    (
        "data-analysis",
        include_str!("../../templates/data-analysis.json"),
    ),
    (
        "content-campaign",
        include_str!("../../templates/content-campaign.json"),
    ),
    (
        "vendor-evaluation",
        include_str!("../../templates/vendor-evaluation.json"),
    ),
    (
        GENERIC_TEMPLATE,
        include_str!("../../templates/generic.json"),
    ),
    (
        "compound/research_phase",
        include_str!("../../templates/compound/research_phase.json"),
    ),
    (
        "compound/review_cycle",
        include_str!("../../templates/compound/review_cycle.json"),
    ),
    (
        "compound/quality_gate",
        include_str!("../../templates/compound/quality_gate.json"),
    ),
    (
        "compound/code_review_cycle",
        include_str!("../../templates/compound/code_review_cycle.json"),
    ),
    (
        "compound/root_cause_analysis",
        include_str!("../../templates/compound/root_cause_analysis.json"),
    ),
];

/// Parses a method file: one method object, or an array of methods in priority order.
pub fn parse_methods(json: &str) -> Result<Vec<Method>, serde_json::Error> {
    let value: Value = serde_json::from_str(json)?;
    if value.is_array() {
        serde_json::from_value(value)
    } else {
        serde_json::from_value(value).map(|m| vec![m])
    }
}

/// A flat, reusable plan shape such as a saved routine; `{goal}` in its text is filled per mission.
///
/// In a [`TemplateLibrary`] it becomes a root method of `mission` whose subtasks are all primitive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanTemplate {
    /// Unique name, e.g. `"weekly-digest"`.
    pub name: String,
    /// What kind of goal the template is for; also used for matching.
    pub description: String,
    /// Extra words that signal a goal of this kind; used for matching.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// The tasks, with `{goal}` placeholders.
    pub tasks: Vec<TaskSpec>,
}

impl PlanTemplate {
    /// Builds a plan for `goal`, replacing `{goal}` in titles, descriptions, criteria and string inputs.
    ///
    /// The goal is trimmed, runs of whitespace become one space (titles are one line),
    /// and it is cut to 200 characters ending in "…" so a pasted essay cannot swamp titles.
    pub fn instantiate(&self, goal: &str) -> PlanSpec {
        let placeholders = Placeholders::new(goal, &Value::Null);
        PlanSpec {
            tasks: self
                .tasks
                .iter()
                .map(|t| placeholders.fill_task(t.clone()))
                .collect(),
        }
    }
}

impl From<PlanTemplate> for Method {
    /// A root method of `mission` with no conditions and only primitive subtasks.
    fn from(template: PlanTemplate) -> Method {
        Method {
            name: template.name,
            task: MISSION_TASK.to_owned(),
            description: template.description,
            keywords: template.keywords,
            conditions: Vec::new(),
            subtasks: template.tasks.into_iter().map(Subtask::Primitive).collect(),
        }
    }
}

/// Turns a finished mission's plan into a saved routine for similar goals.
///
/// Every occurrence of the goal (as it was inserted into the plan) in titles,
/// descriptions, criteria and string inputs becomes `{goal}`; keywords are the goal's
/// most distinctive words; the description names the source goal, so that the
/// routine matches goals worded like it.
pub fn routine_from_plan(name: &str, goal: &str, plan: &PlanSpec) -> PlanTemplate {
    let inserted = text_for_insertion(goal);
    let generalise = |text: &mut String| {
        if !inserted.is_empty() {
            *text = text.replace(&inserted, GOAL_PLACEHOLDER);
        }
    };
    let tasks = plan
        .tasks
        .iter()
        .map(|t| {
            let mut task = t.clone();
            generalise(&mut task.title);
            generalise(&mut task.description);
            for c in &mut task.success_criteria {
                generalise(&mut c.description);
            }
            map_strings(&mut task.inputs, &generalise);
            task
        })
        .collect();
    PlanTemplate {
        name: name.to_owned(),
        description: format!("Routine saved from the mission \"{inserted}\"."),
        keywords: keywords(goal, ROUTINE_KEYWORDS),
        tasks,
    }
}

/// Applies `f` to every string inside a JSON value.
fn map_strings(value: &mut Value, f: &impl Fn(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| map_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| map_strings(v, f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Every method available to the planner, with a matching index over the root methods.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateLibrary {
    /// All methods in priority order: built-ins in shipping order, then added ones.
    methods: Vec<Method>,
    /// Position of the generic fallback; it is always present (see `builtin`/`with_methods`).
    generic: usize,
    /// Over root methods except the generic fallback.
    index: LexicalIndex,
}

impl TemplateLibrary {
    /// All shipped methods, including `generic`; parses embedded JSON, so build once and reuse.
    pub fn builtin() -> TemplateLibrary {
        let methods: Vec<Method> = BUILTIN_SOURCES
            .iter()
            .flat_map(|(file, source)| {
                parse_methods(source).unwrap_or_else(|e| {
                    panic!("built-in method file {file}.json is not valid: {e}")
                })
            })
            .collect();
        let generic = methods
            .iter()
            .position(|m| m.name == GENERIC_TEMPLATE)
            .expect("built-in methods include the generic fallback");
        Self::from_parts(methods, generic)
    }

    /// Adds saved routines as root methods of `mission`; one with an existing name replaces it in place.
    pub fn with_extra(self, extra: Vec<PlanTemplate>) -> TemplateLibrary {
        self.with_methods(extra.into_iter().map(Method::from).collect())
    }

    /// Adds methods of any task; one with an existing name replaces it in place.
    ///
    /// New methods go after existing ones, so for a compound task they are tried after
    /// the built-in methods; to change how a built-in compound task decomposes, add a
    /// method with the built-in method's name.
    pub fn with_methods(self, extra: Vec<Method>) -> TemplateLibrary {
        let mut methods = self.methods;
        for method in extra {
            match methods.iter_mut().find(|m| m.name == method.name) {
                Some(existing) => *existing = method,
                None => methods.push(method),
            }
        }
        // Replacement keeps positions, so the generic fallback stays where it was.
        Self::from_parts(methods, self.generic)
    }

    /// Builds the matching index over every root method except the generic fallback.
    fn from_parts(methods: Vec<Method>, generic: usize) -> TemplateLibrary {
        let index = LexicalIndex::new(
            methods
                .iter()
                .filter(|m| m.is_root() && m.name != GENERIC_TEMPLATE)
                .map(|m| (m.name.clone(), m.matching_text())),
        );
        TemplateLibrary {
            methods,
            generic,
            index,
        }
    }

    /// The method with this name, if any.
    pub fn get(&self, name: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.name == name)
    }

    /// The root methods (mission shapes, routines and `generic`), in priority order.
    pub fn templates(&self) -> Vec<&Method> {
        self.methods.iter().filter(|m| m.is_root()).collect()
    }

    /// Every method of every task, in priority order.
    pub fn methods(&self) -> &[Method] {
        &self.methods
    }

    /// The fallback used when no method matches.
    pub fn generic(&self) -> &Method {
        &self.methods[self.generic]
    }

    /// [`Self::match_goal_with`] with no constraints.
    pub fn match_goal(&self, goal: &str, threshold: f64) -> MatchOutcome {
        self.match_goal_with(goal, &Value::Null, threshold)
    }

    /// Best root method above `threshold` among those whose conditions hold; deterministic.
    ///
    /// The generic fallback never competes, and a score of zero never matches, even
    /// with a threshold below zero.
    pub fn match_goal_with(&self, goal: &str, constraints: &Value, threshold: f64) -> MatchOutcome {
        let mut skipped = Vec::new();
        let scores = self
            .index
            .scores(goal)
            .into_iter()
            .filter(|s| {
                let applies = self
                    .get(&s.template)
                    .is_some_and(|m| m.applies(constraints));
                if !applies {
                    skipped.push(s.template.clone());
                }
                applies
            })
            .collect();
        let mut outcome = MatchOutcome::from_scores(scores, skipped, threshold);
        outcome.candidates = outcome
            .closest(3)
            .into_iter()
            .map(|s| Candidate {
                method: s.template.clone(),
                score: s.score,
                matched_words: self.index.shared_words(goal, &s.template),
            })
            .collect();
        outcome
    }

    /// Decomposes the named method for `goal` using this library's methods.
    pub fn decompose(
        &self,
        method: &str,
        goal: &str,
        constraints: &Value,
    ) -> Result<Decomposition, DecompositionError> {
        let root = self
            .get(method)
            .ok_or_else(|| DecompositionError::MethodNotFound {
                name: method.to_owned(),
            })?;
        decompose(&self.methods, root, goal, constraints)
    }
}

#[cfg(test)]
mod tests;
