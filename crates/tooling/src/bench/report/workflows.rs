//! The workflow section of the page (issue 20): token transitions per
//! second of BPMN instances beside the plain engine's tasks per second of
//! the same run.

use std::fmt::Write as _;

use super::{WorkflowReport, cell, num, x};

/// Writes the "Workflows" section; `baseline_ms` is the run's baseline.
pub fn render(w: &mut String, wf: &WorkflowReport, baseline_ms: f64) {
    let _ = writeln!(w, "### Workflows\n");
    let _ = writeln!(
        w,
        "{} instances of a {}-node BPMN process (a start event, {} user tasks in a line, an \
         end event) are started through the API; then {} clients complete the task each \
         instance waits on (`POST /v1/workflow-instances/{{id}}/tokens/{{t}}/complete`), \
         round robin over all instances, until every instance has ended, on one fresh \
         replica. A **token transition** is a token taking a sequence flow (a `taken` entry \
         of the instance's history, counted from the histories); here there is one per \
         completion. The plain engine's figure is the {}-replica throughput phase above.\n",
        num(wf.instances as f64, 0),
        wf.nodes,
        wf.nodes.saturating_sub(2),
        wf.clients,
        wf.tasks_replicas
    );
    let _ = writeln!(w, "| figure | value |\n| --- | ---: |");
    let _ = writeln!(
        w,
        "| token transitions/s ({} in {} s) | **{}** |\n\
         | plain engine, tasks/s (same run) | {} |\n\
         | transitions/s ÷ tasks/s | {} |\n\
         | complete request under {} clients, p50 / p95 ms | {} / {} |\n\
         | complete request alone, p50 ms (× baseline) | {} ({}) |\n\
         | instances started/s | {} |",
        num(wf.transitions as f64, 0),
        num(wf.secs, 2),
        num(wf.transitions_per_s, 0),
        num(wf.tasks_per_s, 0),
        x(wf.x_tasks()),
        wf.clients,
        num(wf.complete_p50_ms, 2),
        num(wf.complete_p95_ms, 2),
        num(wf.solo_p50_ms, 2),
        x(wf.solo_p50_ms / baseline_ms),
        num(wf.starts_per_s, 0)
    );
    let per = |v: Option<f64>, d: usize| v.map_or("–".to_owned(), |v| num(v, d));
    let _ = writeln!(
        w,
        "| per transition: statements / commits / writing transactions / WAL bytes | {} / {} / {} / {} |",
        per(wf.stmts_per_transition, 1),
        per(wf.commits_per_transition, 1),
        per(wf.write_txns_per_transition, 2),
        per(wf.wal_bytes_per_transition, 0)
    );
    if let Some(s) = &wf.service {
        let _ = writeln!(
            w,
            "| service tasks instead (each a one-task mission), {} instances: transitions/s | {} |\n\
             | the same: one agent step (mission, then its outcome applied on the report's wake-up), p50 ms | {} |",
            num(s.instances as f64, 0),
            num(s.transitions_per_s, 0),
            num(s.step_ms, 0)
        );
    }
    let _ = writeln!(
        w,
        "\nWhat a transition costs: one request (its token looked up), then one instance \
         transaction (lock the instance row, apply the runner's command to its state, write \
         the state and the projection of where its tokens wait, commit), then the instance \
         read back for the answer{}.\n",
        match (wf.stmts_per_transition, wf.commits_per_transition) {
            (Some(s), Some(c)) => format!(
                ": {} statements and {} commits per transition in this run",
                num(s, 1),
                num(c, 1)
            ),
            (None, Some(c)) => format!(": {} commits per transition in this run", num(c, 1)),
            _ => String::new(),
        }
    );
    if let Some(s) = &wf.service {
        let _ = writeln!(
            w,
            "With service tasks, an agent step (the mission's dispatch and report, then the \
             engine, woken by the report, applying its outcome to the instance) took {} ms at \
             p50, {} a complete request alone.\n",
            num(s.step_ms, 0),
            x(s.step_ms / wf.solo_p50_ms)
        );
    }
    if !wf.top_statements.is_empty() {
        let _ = writeln!(
            w,
            "| statement (completion phase) | calls per transition | mean ms | share of time |\n\
             | --- | ---: | ---: | ---: |"
        );
        for s in &wf.top_statements {
            let _ = writeln!(
                w,
                "| `{}` | {} | {} | {} % |",
                cell(&s.query),
                num(s.calls_per_task, 2),
                num(s.mean_ms, 3),
                num(s.time_share * 100.0, 1)
            );
        }
        let _ = writeln!(w);
    }
}
