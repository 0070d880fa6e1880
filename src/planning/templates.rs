//! The template library: reusable plan shapes chosen by matching a goal's wording.
//!
//! Built-in templates are JSON data files under `templates/`, embedded at compile
//! time so the binary needs no files at run time. Saved routines can be added later
//! with [`TemplateLibrary::with_extra`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::matching::{LexicalIndex, MatchOutcome};
use super::spec::{PlanSpec, TaskSpec};

/// Name of the fallback template, which is never matched by score.
pub const GENERIC_TEMPLATE: &str = "generic";

/// Placeholder in template text that [`PlanTemplate::instantiate`] replaces with the goal.
pub const GOAL_PLACEHOLDER: &str = "{goal}";

/// Longest goal text, in characters, inserted into a template (titles must stay readable).
pub const MAX_INSERTED_GOAL_CHARS: usize = 200;

/// The shipped templates as `(expected name, JSON source)`.
const BUILTIN_SOURCES: &[(&str, &str)] = &[
    (
        "research-report",
        include_str!("../../templates/research-report.json"),
    ),
    (
        "build-and-review",
        include_str!("../../templates/build-and-review.json"),
    ),
    (
        "compare-options",
        include_str!("../../templates/compare-options.json"),
    ),
    (
        "data-analysis",
        include_str!("../../templates/data-analysis.json"),
    ),
    (
        GENERIC_TEMPLATE,
        include_str!("../../templates/generic.json"),
    ),
];

/// A reusable plan shape; `{goal}` in its text is filled in per mission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanTemplate {
    /// Unique name, e.g. `"research-report"`.
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
        let goal = goal_for_insertion(goal);
        let fill = |text: &str| text.replace(GOAL_PLACEHOLDER, &goal);
        let tasks = self
            .tasks
            .iter()
            .map(|t| {
                let mut task = t.clone();
                task.title = fill(&task.title);
                task.description = fill(&task.description);
                for c in &mut task.success_criteria {
                    c.description = fill(&c.description);
                }
                fill_strings(&mut task.inputs, &fill);
                task
            })
            .collect();
        PlanSpec { tasks }
    }

    /// The text the matcher sees: name words, description and keywords.
    fn matching_text(&self) -> String {
        format!(
            "{} {} {}",
            self.name,
            self.description,
            self.keywords.join(" ")
        )
    }
}

/// Normalises and caps the goal text inserted into templates.
fn goal_for_insertion(goal: &str) -> String {
    let collapsed = goal.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= MAX_INSERTED_GOAL_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed
        .chars()
        .take(MAX_INSERTED_GOAL_CHARS - 1)
        .collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// Applies `fill` to every string inside a JSON value.
fn fill_strings(value: &mut Value, fill: &impl Fn(&str) -> String) {
    match value {
        Value::String(s) => *s = fill(s),
        Value::Array(items) => items.iter_mut().for_each(|v| fill_strings(v, fill)),
        Value::Object(map) => map.values_mut().for_each(|v| fill_strings(v, fill)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// All templates available to the planner, with a matching index over them.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateLibrary {
    templates: Vec<PlanTemplate>,
    /// Position of the generic fallback; it is always present (see `builtin`/`with_extra`).
    generic: usize,
    index: LexicalIndex,
}

impl TemplateLibrary {
    /// All shipped templates, including `generic`; parses embedded JSON, so build once and reuse.
    pub fn builtin() -> TemplateLibrary {
        let templates: Vec<PlanTemplate> = BUILTIN_SOURCES
            .iter()
            .map(|(name, source)| {
                let template: PlanTemplate = serde_json::from_str(source).unwrap_or_else(|e| {
                    panic!("built-in template {name} is not a valid PlanTemplate: {e}")
                });
                template
            })
            .collect();
        let generic = templates
            .iter()
            .position(|t| t.name == GENERIC_TEMPLATE)
            .expect("built-in templates include the generic fallback");
        Self::from_parts(templates, generic)
    }

    /// Adds templates (e.g. saved routines); one with an existing name replaces it in place.
    pub fn with_extra(self, extra: Vec<PlanTemplate>) -> TemplateLibrary {
        let mut templates = self.templates;
        for template in extra {
            match templates.iter_mut().find(|t| t.name == template.name) {
                Some(existing) => *existing = template,
                None => templates.push(template),
            }
        }
        // Replacement keeps positions, so the generic fallback stays where it was.
        Self::from_parts(templates, self.generic)
    }

    /// Builds the matching index over every template except the generic fallback.
    fn from_parts(templates: Vec<PlanTemplate>, generic: usize) -> TemplateLibrary {
        let index = LexicalIndex::new(
            templates
                .iter()
                .filter(|t| t.name != GENERIC_TEMPLATE)
                .map(|t| (t.name.clone(), t.matching_text())),
        );
        TemplateLibrary {
            templates,
            generic,
            index,
        }
    }

    /// The template with this name, if any.
    pub fn get(&self, name: &str) -> Option<&PlanTemplate> {
        self.templates.iter().find(|t| t.name == name)
    }

    /// Every template, built-ins first in shipping order, then added ones.
    pub fn templates(&self) -> &[PlanTemplate] {
        &self.templates
    }

    /// The fallback used when no template matches.
    pub fn generic(&self) -> &PlanTemplate {
        &self.templates[self.generic]
    }

    /// Best match above `threshold` among all templates except `generic`; deterministic.
    ///
    /// A score of zero never matches, even with a threshold below zero.
    pub fn match_goal(&self, goal: &str, threshold: f64) -> MatchOutcome {
        let scores = self.index.scores(goal);
        let best = scores
            .first()
            .filter(|s| s.score > threshold && s.score > 0.0)
            .cloned();
        MatchOutcome { best, scores }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::matching::DEFAULT_MATCH_THRESHOLD;
    use crate::planning::validate::{
        AgentCapability, ValidationContext, ValidationRules, validate_plan,
    };
    use serde_json::json;

    /// One agent per skill of the shared vocabulary: the modest fleet templates must fit.
    fn fleet() -> Vec<AgentCapability> {
        [
            "research", "analysis", "writing", "review", "coding", "testing", "planning",
        ]
        .iter()
        .map(|s| AgentCapability {
            skills: vec![(*s).to_owned()],
            tools: vec![],
        })
        .collect()
    }

    #[test]
    fn every_builtin_parses_instantiates_and_validates() {
        let library = TemplateLibrary::builtin();
        assert_eq!(library.templates().len(), BUILTIN_SOURCES.len());
        let fleet = fleet();
        let rules = ValidationRules::default();
        let ctx = ValidationContext {
            rules: &rules,
            budget: None,
            agents: &fleet,
        };
        for (name, _) in BUILTIN_SOURCES {
            let template = library.get(name).expect("template present");
            assert_eq!(template.name, *name, "file name and template name agree");
            assert!(!template.description.is_empty());
            assert!(
                (3..=8).contains(&template.tasks.len()),
                "{name}: 3 to 8 tasks"
            );
            for task in &template.tasks {
                assert!(task.required_tools.is_empty(), "{name}/{}", task.id);
                assert!(
                    (0.01..=0.20).contains(&task.estimated_cost),
                    "{name}/{}: cost {}",
                    task.id,
                    task.estimated_cost
                );
                assert!(task.title.contains(GOAL_PLACEHOLDER), "{name}/{}", task.id);
            }
            let plan = template.instantiate("Example goal");
            let text = serde_json::to_string(&plan).unwrap();
            assert!(!text.contains(GOAL_PLACEHOLDER), "{name}: placeholder left");
            let validated = validate_plan(plan, &ctx)
                .unwrap_or_else(|p| panic!("{name} does not validate: {p:#?}"));
            assert_eq!(validated.topological_order.len(), template.tasks.len());
        }
    }

    #[test]
    fn builtins_have_parallel_work_except_generic() {
        let library = TemplateLibrary::builtin();
        for template in library.templates() {
            // Parallel work exists when two tasks share a dependency set with no order between them.
            let mut dep_sets: Vec<Vec<String>> = template
                .tasks
                .iter()
                .map(|t| {
                    let mut d = t.depends_on.clone();
                    d.sort();
                    d
                })
                .collect();
            let before = dep_sets.len();
            dep_sets.sort();
            dep_sets.dedup();
            let parallel = dep_sets.len() < before;
            assert_eq!(
                parallel,
                template.name != GENERIC_TEMPLATE,
                "{}",
                template.name
            );
        }
    }

    #[test]
    fn generic_is_research_draft_review() {
        let library = TemplateLibrary::builtin();
        let ids: Vec<&str> = library
            .generic()
            .tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(ids, ["research", "draft", "review"]);
    }

    #[test]
    fn instantiate_fills_goal_everywhere() {
        let mut template = TemplateLibrary::builtin().generic().clone();
        template.tasks[0].inputs = json!({ "topic": "{goal}", "list": ["{goal}!", 3] });
        let plan = template.instantiate("  Find   a\nnew office  ");
        let task = &plan.tasks[0];
        assert_eq!(task.title, "Research: Find a new office");
        assert!(task.description.ends_with("Goal: Find a new office"));
        assert_eq!(
            task.inputs,
            json!({ "topic": "Find a new office", "list": ["Find a new office!", 3] })
        );
        let criteria = TemplateLibrary::builtin()
            .get("research-report")
            .unwrap()
            .instantiate("X");
        assert!(
            criteria
                .tasks
                .iter()
                .all(|t| !t.description.contains("{goal}"))
        );
    }

    #[test]
    fn instantiate_caps_long_goals() {
        let template = TemplateLibrary::builtin().generic().clone();
        let long = "é".repeat(500);
        let plan = template.instantiate(&long);
        let inserted = plan.tasks[0].title.trim_start_matches("Research: ");
        assert_eq!(inserted.chars().count(), MAX_INSERTED_GOAL_CHARS);
        assert!(inserted.ends_with('…'));
        let exact = "x".repeat(MAX_INSERTED_GOAL_CHARS);
        let plan = template.instantiate(&exact);
        assert_eq!(plan.tasks[0].title, format!("Research: {exact}"));
    }

    #[test]
    fn with_extra_adds_and_replaces() {
        let base = TemplateLibrary::builtin();
        let mut routine = base.get("research-report").unwrap().clone();
        routine.name = "weekly-digest".to_owned();
        routine.description = "Weekly digest newsletter of team updates".to_owned();
        routine.keywords = vec!["digest".to_owned(), "newsletter".to_owned()];
        let mut replaced = base.generic().clone();
        replaced.description = "Custom fallback".to_owned();

        let library = base.clone().with_extra(vec![routine, replaced]);
        assert_eq!(library.templates().len(), base.templates().len() + 1);
        assert_eq!(library.generic().description, "Custom fallback");
        let outcome =
            library.match_goal("Send the weekly newsletter digest", DEFAULT_MATCH_THRESHOLD);
        assert_eq!(outcome.best.unwrap().template, "weekly-digest");
        // The generic fallback never competes on score.
        assert!(
            outcome
                .scores
                .iter()
                .all(|s| s.template != GENERIC_TEMPLATE)
        );
    }

    #[test]
    fn templates_round_trip_through_json() {
        for template in TemplateLibrary::builtin().templates() {
            let text = serde_json::to_string(template).unwrap();
            let back: PlanTemplate = serde_json::from_str(&text).unwrap();
            assert_eq!(&back, template);
        }
    }

    fn best(goal: &str) -> Option<String> {
        TemplateLibrary::builtin()
            .match_goal(goal, DEFAULT_MATCH_THRESHOLD)
            .best
            .map(|b| b.template)
    }

    #[test]
    fn obvious_goals_pick_the_obvious_template() {
        assert_eq!(
            best("Research the state of solid-state batteries and write a report").as_deref(),
            Some("research-report")
        );
        assert_eq!(
            best("Implement rate limiting in the API and get it reviewed").as_deref(),
            Some("build-and-review")
        );
        assert_eq!(
            best("Compare Postgres, MySQL and SQLite for our embedded use case").as_deref(),
            Some("compare-options")
        );
        assert_eq!(
            best("Analyse last quarter's churn metrics from the CSV export").as_deref(),
            Some("data-analysis")
        );
    }

    #[test]
    fn unrelated_goal_matches_nothing() {
        let outcome = TemplateLibrary::builtin().match_goal("asdf qwerty", DEFAULT_MATCH_THRESHOLD);
        assert_eq!(outcome.best, None);
        assert!(outcome.scores.iter().all(|s| s.score == 0.0));
        assert_eq!(outcome.scores.len(), BUILTIN_SOURCES.len() - 1);
        // Even a negative threshold cannot turn a zero score into a match.
        assert_eq!(
            TemplateLibrary::builtin().match_goal("asdf", -1.0).best,
            None
        );
    }

    #[test]
    fn matching_is_deterministic() {
        let library = TemplateLibrary::builtin();
        let goal = "Research the state of solid-state batteries and write a report";
        let first = library.match_goal(goal, DEFAULT_MATCH_THRESHOLD);
        let second = TemplateLibrary::builtin().match_goal(goal, DEFAULT_MATCH_THRESHOLD);
        assert_eq!(first, second);
        assert_eq!(
            serde_json::to_string(&first).unwrap(),
            serde_json::to_string(&second).unwrap()
        );
        let s = &first.scores;
        assert!(s.windows(2).all(|w| w[0].score > w[1].score
            || (w[0].score == w[1].score && w[0].template < w[1].template)));
    }

    /// Goals a user would plausibly type, with the template a person would pick.
    const CALIBRATION_POSITIVE: &[(&str, &str)] = &[
        (
            "Research the state of solid-state batteries and write a report",
            "research-report",
        ),
        (
            "Investigate the history of the printing press and summarize the findings",
            "research-report",
        ),
        (
            "Write a briefing on recent trends in quantum computing",
            "research-report",
        ),
        (
            "Study how other cities fund public transport and report back",
            "research-report",
        ),
        (
            "Give me an overview of the literature on sleep and memory",
            "research-report",
        ),
        (
            "Implement rate limiting in the API and get it reviewed",
            "build-and-review",
        ),
        (
            "Fix the login bug in the frontend and add tests",
            "build-and-review",
        ),
        (
            "Build a CLI tool that converts Markdown to HTML",
            "build-and-review",
        ),
        (
            "Refactor the billing module and open a pull request",
            "build-and-review",
        ),
        (
            "Add a new endpoint to the backend service for exporting invoices",
            "build-and-review",
        ),
        (
            "Compare Postgres, MySQL and SQLite for our embedded use case",
            "compare-options",
        ),
        (
            "Evaluate three CRM vendors and recommend one",
            "compare-options",
        ),
        (
            "Which logging framework should we choose: log4j vs logback?",
            "compare-options",
        ),
        (
            "Pick the best cloud provider for our startup, weighing pros and cons",
            "compare-options",
        ),
        (
            "Assess the alternatives to Slack for internal chat",
            "compare-options",
        ),
        (
            "Analyse last quarter's churn metrics from the CSV export",
            "data-analysis",
        ),
        (
            "Look at our web server logs and quantify error rates per endpoint",
            "data-analysis",
        ),
        (
            "Run a statistical analysis of the survey results",
            "data-analysis",
        ),
        (
            "Find correlations in the sales dataset between price and volume",
            "data-analysis",
        ),
    ];

    /// Goals no template fits, or that share only an incidental word with one.
    const CALIBRATION_NEGATIVE: &[&str] = &[
        "asdf qwerty",
        "Plan my sister's wedding",
        "Book flights to Lisbon for the team offsite",
        "Cook dinner for six people on Friday",
        "Organise the office holiday party",
        "Translate the employee handbook into German",
        "Water the plants every morning",
        "Draft a polite reply to the landlord about the broken heater",
        "Hire a new office manager",
        "",
        "Fix the leaking kitchen tap",
        "Review my sister's wedding speech",
        "Write a birthday poem for my mother",
        "Pick up the dry cleaning",
        "Learn to play the guitar",
        "Measure the living room for a new sofa",
        "Book a table at the best restaurant in town",
        "Schedule a meeting with the design team",
    ];

    #[test]
    fn calibration_supports_default_threshold() {
        let library = TemplateLibrary::builtin();
        let mut lowest_positive = f64::INFINITY;
        for (goal, expected) in CALIBRATION_POSITIVE {
            let outcome = library.match_goal(goal, DEFAULT_MATCH_THRESHOLD);
            let top = &outcome.scores[0];
            eprintln!("{:.3} {:<18} {goal}", top.score, top.template);
            assert_eq!(top.template, *expected, "{goal}: {:?}", outcome.scores);
            lowest_positive = lowest_positive.min(top.score);
        }
        let mut highest_negative: f64 = 0.0;
        for goal in CALIBRATION_NEGATIVE {
            let outcome = library.match_goal(goal, DEFAULT_MATCH_THRESHOLD);
            let top = &outcome.scores[0];
            eprintln!("{:.3} {:<18} {goal}", top.score, top.template);
            highest_negative = highest_negative.max(top.score);
        }
        eprintln!("lowest positive {lowest_positive:.3}, highest negative {highest_negative:.3}");
        assert!(highest_negative < DEFAULT_MATCH_THRESHOLD);
        assert!(DEFAULT_MATCH_THRESHOLD < lowest_positive);
    }
}
