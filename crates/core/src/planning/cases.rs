//! The plan library: finished missions as cases for case-based reasoning (CBR).
//!
//! A case is `problem` (goal + context), `solution` (the plan and its
//! structure signature) and `outcome` (success, facts, lessons). Missions that
//! end `completed` become success cases, `failed` ones negative cases.
//!
//! Similarity of a query (goal `g`, context `c`) to a case (goal `g'`, context `c'`):
//!
//! ```text
//! similarity = 0.8 · cos(g, g') + 0.2 · jaccard(c, c')
//! ```
//!
//! - `cos` is the cosine of sublinear term-frequency vectors (`1 + ln count`) over
//!   the tokens of [`super::matching::tokenize`] (lowercase, stopwords out, crude
//!   stemming). No IDF: it would make a pair's score depend on what else the
//!   library holds, so a fixed threshold would drift as cases accumulate. For
//!   goals without repeated words it is `shared / sqrt(|g| · |g'|)`.
//! - `jaccard` is `|A ∩ B| / |A ∪ B|` over the flattened `key=value` pairs of the
//!   two contexts ([`context_pairs`]: each top-level constraint as
//!   `constraints.<key>`, plus `budget` and `autonomy` when set); two empty
//!   contexts count as identical (1).
//!
//! Both parts are in `[0, 1]`, so the score is too. Searching without a context
//! scores by the goal alone ([`score`] with `None`).
//!
//! [`choose`] picks what the planner may reuse: the most similar success case
//! scoring at least the case threshold (default [`DEFAULT_CASE_THRESHOLD`]),
//! unless a similar negative case *newer* than it has the same structure (the
//! shape worked once, then failed: do not trust it). Similar negative cases are
//! returned too, so the planner can skip methods whose plans have their shape.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{PlanSpec, matching::tokenize};

/// Similarity a case needs to be reused (success) or avoided (negative).
///
/// Chosen high on purpose: reuse skips method matching altogether, so it should
/// only happen for what is recognisably the same job (the same goal with a word
/// or two changed, in the same context). With equal contexts, a goal sharing 6
/// of 7 words scores 0.94; one sharing 3 of 4 (a different topic, same kind of
/// work) scores 0.8 · 0.75 + 0.2 = 0.80; sharing half the words, 0.60.
pub const DEFAULT_CASE_THRESHOLD: f64 = 0.75;

/// Weight of the goal text in [`similarity`].
pub const GOAL_WEIGHT: f64 = 0.8;

/// Weight of the context overlap in [`similarity`].
pub const CONTEXT_WEIGHT: f64 = 0.2;

/// Most recent cases the planner considers (bounds the work per plan).
pub const CASE_SCAN_LIMIT: i64 = 500;

/// Prefix of a case in `PlanProvenance::template` and in the exclude list of a replan.
pub const CASE_PREFIX: &str = "case:";

/// A stored case, as far as choosing needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Case id.
    pub id: Uuid,
    /// The mission's goal.
    pub goal: String,
    /// The mission's context ([`context_of`]).
    pub context: Value,
    /// The plan (a `PlanSpec` as JSON).
    pub plan: Value,
    /// [`structure_signature`] of the plan.
    pub structure: String,
    /// Completed (true) or failed (false).
    pub success: bool,
    /// When the mission finished.
    pub created_at: OffsetDateTime,
}

/// `"case:<id>"`: how a case is named where methods are (provenance, exclude lists).
pub fn case_key(id: Uuid) -> String {
    format!("{CASE_PREFIX}{id}")
}

/// A mission's context as stored with its case and compared by [`similarity`].
pub fn context_of(constraints: &Value, budget: Option<f64>, autonomy: Option<&str>) -> Value {
    let mut ctx = serde_json::Map::new();
    let constraints = match constraints {
        Value::Object(_) => constraints.clone(),
        _ => Value::Object(serde_json::Map::new()),
    };
    ctx.insert("constraints".into(), constraints);
    if let Some(b) = budget {
        ctx.insert("budget".into(), Value::from(b));
    }
    if let Some(a) = autonomy {
        ctx.insert("autonomy".into(), Value::from(a));
    }
    Value::Object(ctx)
}

/// The `key=value` pairs [`similarity`] compares: each constraint as
/// `constraints.<key>=<json>`, and every other top-level key as `<key>=<json>`.
pub fn context_pairs(ctx: &Value) -> BTreeSet<String> {
    let mut pairs = BTreeSet::new();
    let Value::Object(map) = ctx else {
        return pairs;
    };
    for (key, value) in map {
        match (key.as_str(), value) {
            ("constraints", Value::Object(c)) => {
                for (k, v) in c {
                    pairs.insert(format!("constraints.{k}={v}"));
                }
            }
            (_, Value::Null) => {}
            _ => {
                pairs.insert(format!("{key}={value}"));
            }
        }
    }
    pairs
}

/// Jaccard overlap of two contexts' pairs; two empty contexts are identical.
pub fn context_overlap(a: &Value, b: &Value) -> f64 {
    let (a, b) = (context_pairs(a), context_pairs(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// Cosine of the two goals' sublinear term-frequency vectors, in `[0, 1]`.
pub fn goal_similarity(a: &str, b: &str) -> f64 {
    let (va, vb) = (tf_vector(a), tf_vector(b));
    let dot: f64 = va
        .iter()
        .filter_map(|(t, x)| vb.get(t).map(|y| x * y))
        .sum();
    let norm = |v: &BTreeMap<String, f64>| v.values().map(|x| x * x).sum::<f64>().sqrt();
    let denominator = norm(&va) * norm(&vb);
    if denominator == 0.0 || dot <= 0.0 {
        return 0.0;
    }
    (dot / denominator).min(1.0)
}

/// `1 + ln count` per token, so a repeated word does not dominate.
fn tf_vector(text: &str) -> BTreeMap<String, f64> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in tokenize(text) {
        *counts.entry(t).or_insert(0) += 1;
    }
    counts
        .into_iter()
        .map(|(t, k)| (t, 1.0 + (k as f64).ln()))
        .collect()
}

/// `0.8 · cos(goal_a, goal_b) + 0.2 · jaccard(ctx_a, ctx_b)`, in `[0, 1]`.
pub fn similarity(goal_a: &str, ctx_a: &Value, goal_b: &str, ctx_b: &Value) -> f64 {
    let s = GOAL_WEIGHT * goal_similarity(goal_a, goal_b)
        + CONTEXT_WEIGHT * context_overlap(ctx_a, ctx_b);
    s.clamp(0.0, 1.0)
}

/// A query's score against a case: [`similarity`], or the goal cosine alone without a context.
pub fn score(goal: &str, ctx: Option<&Value>, case_goal: &str, case_ctx: &Value) -> f64 {
    match ctx {
        Some(ctx) => similarity(goal, ctx, case_goal, case_ctx),
        None => goal_similarity(goal, case_goal),
    }
}

/// The plan's shape: its task types and its dependency edges by task type,
/// each sorted, e.g. `research,review,writing|research>writing,writing>review`.
///
/// Ids, titles, costs and goal text do not count: two plans decomposed from
/// the same method for different goals have the same signature.
pub fn structure_signature(plan: &PlanSpec) -> String {
    let type_of: BTreeMap<&str, String> = plan
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.task_type.trim().to_lowercase()))
        .collect();
    let mut nodes: Vec<String> = type_of.values().cloned().collect();
    nodes.sort();
    let mut edges: Vec<String> = plan
        .tasks
        .iter()
        .flat_map(|t| {
            let to = t.task_type.trim().to_lowercase();
            let type_of = &type_of;
            t.depends_on.iter().map(move |d| {
                let from = type_of.get(d.as_str()).map_or("?", String::as_str);
                format!("{from}>{to}")
            })
        })
        .collect();
    edges.sort();
    format!("{}|{}", nodes.join(","), edges.join(","))
}

/// A case and its score, as the planner records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredCase {
    /// Case id.
    pub case_id: Uuid,
    /// Similarity to the goal being planned.
    pub score: f64,
    /// Structure signature of the case's plan.
    pub structure: String,
}

/// What [`choose`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CaseChoice {
    /// The success case to reuse, if one qualifies.
    pub reuse: Option<ScoredCase>,
    /// Negative cases at or above the threshold, most similar first.
    pub negatives: Vec<ScoredCase>,
    /// Similar success cases not reused because a newer similar failure has their structure.
    pub distrusted: Vec<ScoredCase>,
    /// The most similar success case, even below the threshold (for the log).
    pub best_success: Option<ScoredCase>,
}

/// Scores `cases` against the goal and context and picks the case to reuse
/// and the negative cases to avoid (see the module doc).
pub fn choose(cases: &[Case], goal: &str, ctx: &Value, threshold: f64) -> CaseChoice {
    let mut scored: Vec<(&Case, f64)> = cases
        .iter()
        .map(|c| (c, similarity(goal, ctx, &c.goal, &c.context)))
        .collect();
    // Most similar first; ties: the newer case, then by id, so the order is total.
    scored.sort_by(|(a, sa), (b, sb)| {
        sb.total_cmp(sa)
            .then_with(|| b.created_at.cmp(&a.created_at))
            .then_with(|| a.id.cmp(&b.id))
    });
    let entry = |c: &Case, s: f64| ScoredCase {
        case_id: c.id,
        score: s,
        structure: c.structure.clone(),
    };
    let similar_failures: Vec<(&Case, f64)> = scored
        .iter()
        .filter(|(c, s)| !c.success && *s >= threshold)
        .copied()
        .collect();
    let mut choice = CaseChoice {
        negatives: similar_failures.iter().map(|(c, s)| entry(c, *s)).collect(),
        best_success: scored
            .iter()
            .find(|(c, _)| c.success)
            .map(|(c, s)| entry(c, *s)),
        ..CaseChoice::default()
    };
    for (case, s) in scored.iter().filter(|(c, s)| c.success && *s >= threshold) {
        let failed_since = similar_failures
            .iter()
            .any(|(f, _)| f.structure == case.structure && f.created_at > case.created_at);
        if failed_since {
            choice.distrusted.push(entry(case, *s));
        } else {
            choice.reuse = Some(entry(case, *s));
            break;
        }
    }
    choice
}

/// Adapts a case's plan to a new goal: the old goal's text in titles,
/// descriptions and string inputs becomes the new goal. Returns the plan and
/// one line per kind of change made (empty when nothing changed).
pub fn adapt(mut plan: PlanSpec, from_goal: &str, to_goal: &str) -> (PlanSpec, Vec<String>) {
    let from = from_goal.trim();
    let to = to_goal.trim();
    if from.is_empty() || from == to {
        return (plan, Vec::new());
    }
    let (mut titles, mut descriptions, mut inputs) = (0, 0, 0);
    for task in &mut plan.tasks {
        if task.title.contains(from) {
            task.title = task.title.replace(from, to);
            titles += 1;
        }
        if task.description.contains(from) {
            task.description = task.description.replace(from, to);
            descriptions += 1;
        }
        if replace_in_strings(&mut task.inputs, from, to) {
            inputs += 1;
        }
    }
    let mut adaptations = Vec::new();
    for (n, what) in [
        (titles, "titles"),
        (descriptions, "descriptions"),
        (inputs, "inputs"),
    ] {
        if n > 0 {
            adaptations.push(format!(
                "replaced the case's goal with the new goal in {n} task {what}"
            ));
        }
    }
    (plan, adaptations)
}

/// Replaces `from` by `to` in every string inside `value`; true if any changed.
fn replace_in_strings(value: &mut Value, from: &str, to: &str) -> bool {
    match value {
        Value::String(s) if s.contains(from) => {
            *s = s.replace(from, to);
            true
        }
        // Every element is visited (no short-circuit): all of them change.
        Value::Array(items) => {
            let mut changed = false;
            for v in items {
                changed |= replace_in_strings(v, from, to);
            }
            changed
        }
        Value::Object(map) => {
            let mut changed = false;
            for v in map.values_mut() {
                changed |= replace_in_strings(v, from, to);
            }
            changed
        }
        _ => false,
    }
}

/// How one task of a finished mission went, for [`lessons_from`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Task key.
    pub key: String,
    /// Final status.
    pub status: String,
    /// Work attempts made.
    pub attempts: i64,
    /// Of which failed or expired.
    pub failures: i64,
    /// The last error, if any.
    pub last_error: Option<String>,
    /// Estimated cost.
    pub estimated_cost: f64,
    /// Actual cost.
    pub actual_cost: f64,
}

/// A cost overrun below this fraction is noise, not a lesson.
const COST_LESSON_FRACTION: f64 = 0.10;

/// Lessons a finished mission teaches, derived from its task records:
/// failed tasks (with attempts and last error), tasks that needed retries,
/// skipped tasks, a cost overrun of 10 % or more, and a mission failure
/// with no failed task to blame.
pub fn lessons_from(tasks: &[TaskRecord], failure_reason: Option<&str>) -> Vec<String> {
    let mut lessons = Vec::new();
    for t in tasks {
        let error = t
            .last_error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        match t.status.as_str() {
            "failed" => lessons.push(format!(
                "task '{}' failed after {} attempt{}{error}",
                t.key,
                t.attempts,
                plural(t.attempts)
            )),
            "succeeded" if t.failures > 0 => lessons.push(format!(
                "task '{}' needed {} ({} failed{error})",
                t.key,
                crate::numbers::count(t.attempts.max(0) as usize, "attempt", "attempts"),
                t.failures
            )),
            "skipped" => lessons.push(format!("task '{}' was skipped{error}", t.key)),
            _ => {}
        }
    }
    let estimated: f64 = tasks.iter().map(|t| t.estimated_cost).sum();
    let actual: f64 = tasks.iter().map(|t| t.actual_cost).sum();
    if estimated > 0.0 && actual > estimated * (1.0 + COST_LESSON_FRACTION) {
        lessons.push(format!(
            "cost exceeded the estimate by {:.0}% ({actual:.4} against {estimated:.4})",
            (actual / estimated - 1.0) * 100.0
        ));
    }
    if let Some(reason) = failure_reason
        && !tasks.iter().any(|t| t.status == "failed")
    {
        lessons.push(format!("mission failed: {reason}"));
    }
    lessons
}

/// `"s"` unless `n` is one.
fn plural(n: i64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::TaskSpec;
    use serde_json::json;

    fn task(id: &str, task_type: &str, deps: &[&str]) -> TaskSpec {
        TaskSpec {
            id: id.into(),
            title: format!("{id}: Research batteries"),
            task_type: task_type.into(),
            description: String::new(),
            required_skills: vec![],
            required_tools: vec![],
            depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
            success_criteria: vec![],
            estimated_cost: 0.0,
            optional: false,
            inputs: json!({}),
        }
    }

    fn case(n: u128, goal: &str, success: bool, structure: &str, minute: i64) -> Case {
        Case {
            id: Uuid::from_u128(n),
            goal: goal.into(),
            context: context_of(&json!({}), None, Some("autonomous")),
            plan: json!({ "tasks": [] }),
            structure: structure.into(),
            success,
            created_at: OffsetDateTime::UNIX_EPOCH + time::Duration::minutes(minute),
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn goal_similarity_is_shared_tokens_over_the_geometric_mean() {
        // {research, solid, state, battery, writ, report} vs the same plus "short":
        // 6 / sqrt(6 · 7).
        let a = "Research solid-state batteries and write a report";
        let b = "Research solid-state batteries and write a short report";
        close(goal_similarity(a, b), 6.0 / 42f64.sqrt());
        close(goal_similarity(a, a), 1.0);
        close(goal_similarity(a, "Plan my sister's wedding"), 0.0);
        close(goal_similarity("", a), 0.0);
        // A repeated word weighs 1 + ln 2: {fix: 1+ln2, bug: 1} · {fix: 1} = (1+ln2)/|v|.
        let w = 1.0 + 2f64.ln();
        close(
            goal_similarity("fix fix bug", "fix"),
            w / (w * w + 1.0).sqrt(),
        );
    }

    #[test]
    fn context_overlap_is_jaccard_of_pairs() {
        let a = context_of(
            &json!({ "depth": "deep", "domain": "software" }),
            Some(5.0),
            Some("approve"),
        );
        let b = context_of(&json!({ "depth": "deep" }), Some(5.0), Some("autonomous"));
        // a: depth, domain, budget, autonomy=approve; b: depth, budget, autonomy=autonomous.
        // Shared: depth, budget (2); union: 5.
        close(context_overlap(&a, &b), 2.0 / 5.0);
        close(context_overlap(&json!({}), &json!({})), 1.0);
        close(context_overlap(&a, &json!({})), 0.0);
        assert_eq!(
            context_pairs(&a).into_iter().collect::<Vec<_>>(),
            [
                "autonomy=\"approve\"",
                "budget=5.0",
                "constraints.depth=\"deep\"",
                "constraints.domain=\"software\""
            ]
        );
    }

    #[test]
    fn similarity_weights_goal_and_context() {
        let ctx = context_of(&json!({}), None, Some("approve"));
        let a = "Research solid-state batteries and write a report";
        let b = "Research solid-state batteries and write a short report";
        close(similarity(a, &ctx, b, &ctx), 0.8 * 6.0 / 42f64.sqrt() + 0.2);
        let other = context_of(&json!({}), None, Some("autonomous"));
        close(similarity(a, &ctx, b, &other), 0.8 * 6.0 / 42f64.sqrt());
        close(similarity(a, &ctx, a, &ctx), 1.0);
        // Without a context, search scores by the goal alone.
        close(score(a, None, b, &other), 6.0 / 42f64.sqrt());
    }

    #[test]
    fn structure_ignores_ids_and_text_but_not_shape() {
        let a = PlanSpec {
            tasks: vec![
                task("r", "research", &[]),
                task("w", "writing", &["r"]),
                task("v", "review", &["w"]),
            ],
        };
        assert_eq!(
            structure_signature(&a),
            "research,review,writing|research>writing,writing>review"
        );
        let mut renamed = a.clone();
        for (t, id) in renamed.tasks.iter_mut().zip(["x", "y", "z"]) {
            t.title = "something else".into();
            t.id = id.into();
        }
        renamed.tasks[1].depends_on = vec!["x".into()];
        renamed.tasks[2].depends_on = vec!["y".into()];
        assert_eq!(structure_signature(&renamed), structure_signature(&a));
        let parallel = PlanSpec {
            tasks: vec![
                task("r", "research", &[]),
                task("w", "writing", &["r"]),
                task("v", "review", &["r"]),
            ],
        };
        assert_ne!(structure_signature(&parallel), structure_signature(&a));
    }

    #[test]
    fn choose_reuses_the_most_similar_success_above_the_threshold() {
        let goal = "Research solid-state batteries and write a short report";
        let ctx = context_of(&json!({}), None, Some("autonomous"));
        let cases = [
            case(
                1,
                "Research solid-state batteries and write a report",
                true,
                "s1",
                1,
            ),
            case(2, "Plan my sister's wedding", true, "s2", 2),
            case(3, "Research solid-state batteries", true, "s3", 3),
        ];
        let choice = choose(&cases, goal, &ctx, DEFAULT_CASE_THRESHOLD);
        let reuse = choice.reuse.unwrap();
        assert_eq!(reuse.case_id, Uuid::from_u128(1));
        close(reuse.score, 0.8 * 6.0 / 42f64.sqrt() + 0.2);
        assert!(choice.negatives.is_empty());
        // Case 3 shares 4 of 7 words: 0.8 · 4/sqrt(28) + 0.2 = 0.8047 — above
        // the threshold too, but less similar.
        close(
            similarity(goal, &ctx, &cases[2].goal, &cases[2].context),
            0.8 * 4.0 / 28f64.sqrt() + 0.2,
        );
        // Above 1.0 nothing qualifies, but the best success is still reported.
        let none = choose(&cases, goal, &ctx, 1.01);
        assert_eq!(none.reuse, None);
        assert_eq!(none.best_success.unwrap().case_id, Uuid::from_u128(1));
    }

    #[test]
    fn a_newer_similar_failure_with_the_same_structure_blocks_reuse() {
        let goal = "Research solid-state batteries and write a report";
        let ctx = context_of(&json!({}), None, Some("autonomous"));
        let success = case(1, goal, true, "shape", 1);
        let failed_later = case(2, goal, false, "shape", 2);
        let choice = choose(&[success.clone(), failed_later], goal, &ctx, 0.75);
        assert_eq!(choice.reuse, None);
        assert_eq!(choice.distrusted[0].case_id, Uuid::from_u128(1));
        assert_eq!(choice.negatives.len(), 1);
        assert_eq!(choice.negatives[0].case_id, Uuid::from_u128(2));
        close(choice.negatives[0].score, 1.0);
        assert_eq!(choice.negatives[0].structure, "shape");

        // An older failure of that shape was fixed by the later success.
        let failed_before = case(3, goal, false, "shape", 0);
        let choice = choose(&[success.clone(), failed_before], goal, &ctx, 0.75);
        assert_eq!(choice.reuse.unwrap().case_id, Uuid::from_u128(1));
        // A newer failure of another shape does not block it.
        let other_shape = case(4, goal, false, "other", 5);
        let choice = choose(&[success, other_shape], goal, &ctx, 0.75);
        assert_eq!(choice.reuse.unwrap().case_id, Uuid::from_u128(1));
        assert_eq!(choice.negatives[0].case_id, Uuid::from_u128(4));
    }

    #[test]
    fn dissimilar_failures_are_not_negatives() {
        let ctx = context_of(&json!({}), None, Some("autonomous"));
        let failed = case(1, "Plan my sister's wedding", false, "s", 1);
        let choice = choose(&[failed], "Research batteries", &ctx, 0.75);
        assert!(choice.negatives.is_empty());
        assert_eq!(choice.best_success, None);
    }

    #[test]
    fn adapt_swaps_the_goal_text() {
        let plan = PlanSpec {
            tasks: vec![
                {
                    let mut t = task("r", "research", &[]);
                    t.description = "Find sources on Research batteries".into();
                    t.inputs = json!({ "topic": "Research batteries", "n": 3 });
                    t
                },
                task("w", "writing", &["r"]),
            ],
        };
        let (adapted, notes) = adapt(plan.clone(), "Research batteries", "Research solar");
        assert_eq!(adapted.tasks[0].title, "r: Research solar");
        assert_eq!(adapted.tasks[1].title, "w: Research solar");
        assert_eq!(
            adapted.tasks[0].description,
            "Find sources on Research solar"
        );
        assert_eq!(
            adapted.tasks[0].inputs,
            json!({ "topic": "Research solar", "n": 3 })
        );
        assert_eq!(
            notes,
            [
                "replaced the case's goal with the new goal in 2 task titles",
                "replaced the case's goal with the new goal in 1 task descriptions",
                "replaced the case's goal with the new goal in 1 task inputs",
            ]
        );
        let (same, none) = adapt(plan.clone(), "Research batteries", "Research batteries");
        assert_eq!(same, plan);
        assert!(none.is_empty());
    }

    fn record(
        key: &str,
        status: &str,
        attempts: i64,
        failures: i64,
        error: Option<&str>,
    ) -> TaskRecord {
        TaskRecord {
            key: key.into(),
            status: status.into(),
            attempts,
            failures,
            last_error: error.map(Into::into),
            estimated_cost: 0.1,
            actual_cost: 0.1,
        }
    }

    #[test]
    fn lessons_name_failures_retries_skips_and_overruns() {
        let mut tasks = vec![
            record("research", "succeeded", 3, 2, Some("timeout")),
            record("draft", "failed", 3, 3, Some("source unavailable")),
            record("polish", "skipped", 0, 0, None),
            record("review", "succeeded", 1, 0, None),
        ];
        // Estimated 0.4, actual 0.5: 25 % over.
        tasks[3].actual_cost = 0.2;
        assert_eq!(
            lessons_from(&tasks, Some("task draft failed")),
            [
                "task 'research' needed 3 attempts (2 failed: timeout)",
                "task 'draft' failed after 3 attempts: source unavailable",
                "task 'polish' was skipped",
                "cost exceeded the estimate by 25% (0.5000 against 0.4000)",
            ]
        );
        // 5 % over is noise; a failure with no failed task is named.
        let mut calm = vec![record("a", "succeeded", 1, 0, None)];
        calm[0].actual_cost = 0.105;
        assert!(lessons_from(&calm, None).is_empty());
        assert_eq!(
            lessons_from(&calm, Some("budget exhausted")),
            ["mission failed: budget exhausted"]
        );
    }
}
