//! Method-choice benchmark (issue 28, item 9): how often the template
//! planner picks the method a person would pick, over the goal set in
//! `benches/data/method_goals.json` (54 goals, 6 per mission shape and 6
//! where no shape fits and the generic plan is right).
//!
//! Run: `cargo bench --bench method_choice`. Prints each goal the matcher
//! gets wrong, then accuracy overall and per expected method. The last line
//! is space-separated `key=value` figures.

use std::collections::BTreeMap;

use coordinator::planning::{DEFAULT_MATCH_THRESHOLD, GENERIC_TEMPLATE, TemplateLibrary};
use serde::Deserialize;

#[derive(Deserialize)]
struct GoalSet {
    goals: Vec<Labelled>,
}

#[derive(Deserialize)]
struct Labelled {
    goal: String,
    method: String,
}

fn main() {
    let set: GoalSet = serde_json::from_str(include_str!("data/method_goals.json"))
        .expect("benches/data/method_goals.json parses");
    let library = TemplateLibrary::builtin();
    let mut right = 0usize;
    let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for g in &set.goals {
        let outcome = library.match_goal(&g.goal, DEFAULT_MATCH_THRESHOLD);
        let picked = outcome
            .best
            .as_ref()
            .map_or(GENERIC_TEMPLATE, |b| b.template.as_str());
        let e = per.entry(g.method.as_str()).or_default();
        e.1 += 1;
        if picked == g.method {
            right += 1;
            e.0 += 1;
        } else {
            let top: Vec<String> = outcome
                .closest(3)
                .iter()
                .map(|s| format!("{} {:.3}", s.template, s.score))
                .collect();
            println!(
                "miss  {:<24} wanted {:<24} {}  [{}]",
                picked,
                g.method,
                g.goal,
                top.join(", ")
            );
        }
    }
    let n = set.goals.len();
    println!();
    for (method, (ok, all)) in &per {
        println!("{method:<24} {ok}/{all}");
    }
    let accuracy = right as f64 / n as f64;
    println!("\naccuracy {right}/{n} = {:.1} %", accuracy * 100.0);
    println!("goals={n} right={right} accuracy={accuracy:.3}");
}
