//! The per-task cost section of the page: what each throughput phase cost
//! the database per task (statements, commits, writing transactions, WAL
//! bytes, lock waiters), and the statements that took the most time in the
//! 1-replica phase, which say what to remove.

use std::fmt::Write as _;

use super::{Throughput, cell, num};

/// `Some(v)` with `decimals`, or `–`.
fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or("–".into(), |v| num(v, decimals))
}

/// Writes the per-task cost table and the top statements, if the run
/// measured any of them (older figures have none: nothing is written).
pub fn render(w: &mut String, points: &[Throughput]) {
    let measured = |t: &Throughput| {
        t.stmts_per_task.is_some()
            || t.commits_per_task.is_some()
            || t.write_txns_per_task.is_some()
            || t.lock_waiters_mean.is_some()
    };
    if !points.iter().any(measured) {
        return;
    }
    let _ = writeln!(
        w,
        "Cost per task in the database, over the same phases (the bench's own queries \
         left out): top-level statements (`pg_stat_statements`) and commits \
         (`pg_stat_database.xact_commit`, read-only transactions included) over the \
         measured replicas' whole life (their start-up, a few dozen warm-up reads and the \
         warm-up missions included, so nothing is missed), divided by every task they ran; \
         transactions that wrote (transaction ids \
         assigned) and WAL bytes from the first approval to the last completion; and lock \
         waiters over that same span — the number of the database's backends waiting on a \
         lock in `pg_stat_activity`, sampled every 5 ms, as a mean of the samples and the \
         share of samples with any waiter.\n"
    );
    let _ = writeln!(
        w,
        "| replicas | statements/task | commits/task | writing transactions/task | WAL bytes/task | lock waiters, mean of samples | samples with a lock waiter |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for t in points {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} |",
            t.replicas,
            opt(t.stmts_per_task, 1),
            opt(t.commits_per_task, 1),
            opt(t.write_txns_per_task, 1),
            opt(t.wal_bytes_per_task, 0),
            opt(t.lock_waiters_mean, 2),
            t.lock_wait_share
                .map_or("–".into(), |s| format!("{} %", num(s * 100.0, 0)))
        );
    }
    let _ = writeln!(w);
    render_cpu(w, points);
    let Some(first) = super::top_statements_phase(points) else {
        return;
    };
    let _ = writeln!(
        w,
        "The {} statements with the most total time in the {}-replica phase \
         (normalised text, shortened):\n",
        first.top_statements.len(),
        first.replicas
    );
    let _ = writeln!(
        w,
        "| statement | calls/task | mean ms | share of statement time |\n| --- | ---: | ---: | ---: |"
    );
    for s in &first.top_statements {
        let _ = writeln!(
            w,
            "| `{}` | {} | {} | {} % |",
            cell(&s.query).replace('`', "'"),
            num(s.calls_per_task, 2),
            num(s.mean_ms, 3),
            num(s.time_share * 100.0, 1)
        );
    }
    let _ = writeln!(w);
}

/// Writes the CPU-per-task table, if the run measured it.
fn render_cpu(w: &mut String, points: &[Throughput]) {
    if !points.iter().any(|t| t.bench_cpu_ms_per_task.is_some()) {
        return;
    }
    let total = |t: &Throughput| {
        t.bench_cpu_ms_per_task
            .map(|b| b + t.db_cpu_ms_per_task.unwrap_or(0.0))
    };
    let reference = points.first().and_then(total);
    let _ = writeln!(
        w,
        "CPU time per task from the first approval of the measured missions to their last \
         completion, from `/proc`: the bench's \
         own process, where the replicas, the simulated workers and the clients all run, \
         and the database server's processes (its postmaster, its live backends and those \
         it reaped). Every process here shares the same cores, so the two together are \
         what a task costs the machine, and how they grow with replicas is what each \
         added replica costs.\n"
    );
    let _ = writeln!(
        w,
        "| replicas | this process, ms/task | database, ms/task | together, ms/task | × the first row |\n\
         | ---: | ---: | ---: | ---: | ---: |"
    );
    for t in points {
        let ratio = match (total(t), reference) {
            (Some(a), Some(b)) if b > 0.0 && t.db_cpu_ms_per_task.is_some() => {
                format!("{}×", num(a / b, 2))
            }
            _ => "–".into(),
        };
        let together = if t.db_cpu_ms_per_task.is_some() {
            opt(total(t), 3)
        } else {
            "–".into()
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            t.replicas,
            opt(t.bench_cpu_ms_per_task, 3),
            opt(t.db_cpu_ms_per_task, 3),
            together,
            ratio
        );
    }
    let _ = writeln!(w);
}
