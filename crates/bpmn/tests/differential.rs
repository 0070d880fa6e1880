//! A differential test of the token semantics ([`coordinator_bpmn::run`])
//! against SpiffWorkflow 3.2.0, the BPMN engine on PyPI that
//! `scripts/test-peers.sh` installs into `.venv-spiff`.
//!
//! # What runs
//!
//! Each case is a model (one small executable model per pattern under
//! `tests/differential/`, or an MIWG reference model) and a set of inputs:
//! the start variables, per-task outputs, the messages to deliver. Both
//! engines are driven the same way, deterministically:
//!
//! 1. everything that needs no outside input runs;
//! 2. the first task waiting for work is completed with its next output,
//!    unless the case holds it so that its boundary events may fire (ours:
//!    the `StartWork` effects, first come first served; Spiff's:
//!    `tests/bpmn/spiff_run.py`, the first ready task); a call activity is
//!    worked by running the called process with the same driver, and
//!    completed with its variables if it finished;
//! 3. else the next message is delivered;
//! 4. else the clock moves to the earliest timer, which fires;
//! 5. else the run stops (finished, or stuck).
//!
//! SpiffWorkflow gets a copy of the model in its own dialect: every
//! condition goes through our parser (`coordinator_bpmn::expr::parse`) and
//! is printed back as Python from the AST (`spiff::python`); timer texts become Python string
//! literals (Spiff evaluates them); `isExecutable="false"` becomes `true`
//! (Spiff refuses to run a process that is not executable).
//!
//! # What is compared
//!
//! The completed flow nodes that are activities (tasks of every kind,
//! subprocesses, call activities, every multi-instance instance and the
//! activity itself) or events (start, end, intermediate and boundary).
//! Gateways are left out: how often a join "completes" is an engine's
//! bookkeeping (Spiff records one merged task; a split records one).
//! So are timer cycle events: Spiff keeps one task that completes after
//! the last occurrence, we complete the event at every occurrence; what
//! each occurrence starts is compared.
//! Whether the run finished is compared too.
//!
//! # The comparison rule
//!
//! The two runs must complete the same multiset of nodes, in orders that
//! are equivalent as partial orders (Mazurkiewicz traces): number each
//! node's completions (`review#0`, `review#1`...); for every two
//! completions of different nodes `a` and `b` that are *dependent*, `a`
//! precedes `b` in our run exactly when it does in Spiff's. Two nodes are
//! *independent* when, in the innermost scope (process, subprocess or
//! called process) holding both (each taken as itself or the activity of
//! that scope around it), they lie on different outgoing flows of one
//! fork (a parallel or inclusive gateway, or any other node but an
//! exclusive or event-based gateway, with two flows or more) and neither
//! reaches the other by sequence flows that do not pass through that fork
//! again (so a parallel block in a loop counts as parallel in each round).
//! Everything else must keep its order: a sequence, an exclusive choice, a
//! subprocess and its content, a branch's own tasks, a fork's branches and
//! what follows their join. The rule works on node ids, so it assumes
//! parallel tokens meet only at joins: a node that tokens of two parallel
//! branches reach without a join (an uncontrolled merge) would be numbered
//! across both and could be reported out of order; no model has one.
//!
//! # Known differences, excluded from the models
//!
//! - Spiff picks among an exclusive gateway's true conditions in the order
//!   of the targets' y coordinates in the diagram, we in document order;
//!   the models have no diagram (Spiff then keeps document order) and the
//!   conditions of one gateway exclude each other.
//! - Spiff refuses a task with several outgoing flows and an exclusive or
//!   inclusive flow without condition that is not the default (MIWG A.2.0
//!   has three; `exclusive.bpmn` is its shape with conditions).
//! - Spiff merges a multi-instance instance's data into the activity's
//!   unless an output item is named, and then refuses the next sequential
//!   instance; `multi_instance.bpmn` names one (see its comment).
//! - SpiffWorkflow 3.2 has no link events (a link throw ends its branch),
//!   ignores `isInterrupting` on an event subprocess's start (it never
//!   interrupts), and keeps a process open while an event subprocess still
//!   listens (its end waits for it); `signal.bpmn` and
//!   `event_subprocess.bpmn` stay clear of these.
//! - An activity left by an error boundary event: Spiff records a
//!   subprocess that reached its error end event as completed, we as
//!   cancelled (BPMN: interrupted); that case leaves the subprocess out.
//! - Spiff keeps data per task (a branch sees what was set before it
//!   forked, a join merges), we keep process variables: no model reads on
//!   one parallel branch a variable another branch sets.
//! - Conditions are Python there: `1 == true` holds in Python and not
//!   here, a missing variable is an error in Python even beside `null`;
//!   `empty` and `%` have no faithful translation and are refused.
//!
//! When `.venv-spiff/bin/python` is missing the tests say so and pass,
//! unless `COORDINATOR_REQUIRE_PEERS` is set (as in `tests/it/peers.rs`).

use std::path::{Path, PathBuf};

use coordinator_bpmn::import;
use serde_json::{Value, json};

#[path = "differential/order.rs"]
mod order;
#[path = "differential/ours.rs"]
mod ours;
#[path = "differential/spiff.rs"]
mod spiff;

use order::Order;

/// One model run with one set of inputs.
#[derive(Debug, Clone)]
struct Case {
    /// The model, relative to `crates/bpmn/tests`.
    file: &'static str,
    /// The process to start.
    process: &'static str,
    /// The start event to start at (`None`: the none start event).
    start: Option<&'static str>,
    /// The start variables (an object).
    variables: Value,
    /// Per task id, its outputs in turn (the last one repeats).
    outputs: Value,
    /// Messages, delivered one at a time when nothing else is pending.
    messages: Vec<&'static str>,
    /// Tasks never completed (so that their boundary events may fire).
    hold: Vec<&'static str>,
    /// Nodes left out of this case's comparison (each use says why).
    unchecked: Vec<&'static str>,
}

impl Case {
    /// A case of `file`'s process `process` with these start variables.
    fn new(file: &'static str, process: &'static str, variables: Value) -> Self {
        Self {
            file,
            process,
            start: None,
            variables,
            outputs: json!({}),
            messages: Vec::new(),
            hold: Vec::new(),
            unchecked: Vec::new(),
        }
    }

    /// The same case with per-task outputs.
    fn outputs(mut self, outputs: Value) -> Self {
        self.outputs = outputs;
        self
    }

    /// The same case with messages to deliver.
    fn messages(mut self, messages: &[&'static str]) -> Self {
        self.messages = messages.to_vec();
        self
    }

    /// The same case with tasks that are never completed.
    fn hold(mut self, hold: &[&'static str]) -> Self {
        self.hold = hold.to_vec();
        self
    }

    /// The same case, not comparing the nodes `unchecked`.
    fn unchecked(mut self, unchecked: &[&'static str]) -> Self {
        self.unchecked = unchecked.to_vec();
        self
    }

    /// The same case started at `start`.
    fn start_at(mut self, start: &'static str) -> Self {
        self.start = Some(start);
        self
    }
}

/// What one engine did: the compared nodes completed, in order.
#[derive(Debug)]
struct Trace {
    /// Node ids, in completion order.
    completed: Vec<String>,
    /// Whether the process reached its end.
    finished: bool,
}

// ---------------------------------------------------------------------------
// Finding things

/// The repository root (`crates/bpmn` → `../..`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// SpiffWorkflow's Python, or `None` (after saying so) when it is missing.
fn spiff_python() -> Option<PathBuf> {
    let python = repo_root().join(".venv-spiff/bin/python");
    if python.exists() {
        return Some(python);
    }
    if std::env::var_os("COORDINATOR_REQUIRE_PEERS").is_some() {
        panic!(
            "SpiffWorkflow is missing at {}: run scripts/test-peers.sh",
            python.display()
        );
    }
    eprintln!("skipping: SpiffWorkflow is missing (run scripts/test-peers.sh)");
    None
}

/// The bytes of a model under `crates/bpmn/tests`.
fn read_model(file: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A model's text: UTF-8, or ISO-8859-1 (MIWG files) relabelled as UTF-8.
fn model_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
    .replacen("encoding=\"ISO-8859-1\"", "encoding=\"UTF-8\"", 1)
}

/// Runs every case on both engines and fails on the first difference.
fn differential(name: &str, cases: &[Case]) {
    let Some(python) = spiff_python() else {
        return;
    };
    for (i, case) in cases.iter().enumerate() {
        let label = format!("{name}-{i}");
        let defs = import(&read_model(case.file)).unwrap_or_else(|e| panic!("{}: {e}", case.file));
        let mut order = Order::of(&defs, case.process);
        for id in &case.unchecked {
            order.compared.remove(*id);
        }
        let ours = ours::run_ours(&defs, case).unwrap_or_else(|e| panic!("{label}: our run: {e}"));
        let theirs = spiff::run_spiff(&python, &defs, case, &label)
            .unwrap_or_else(|e| panic!("{label}: Spiff's run: {e}"));
        let (ours_c, theirs_c) = (order.filter(ours.completed), order.filter(theirs.completed));
        let context = format!(
            "{label} ({case:?}):\n  ours:  {ours_c:?} finished={}\n  Spiff: {theirs_c:?} finished={}",
            ours.finished, theirs.finished
        );
        if let Err(e) = order.compare(&ours_c, &theirs_c) {
            panic!("{context}\n  {e}");
        }
        assert_eq!(
            ours.finished, theirs.finished,
            "{context}\n  finished differs"
        );
        eprintln!("{context}");
    }
}

// ---------------------------------------------------------------------------
// The cases

/// A sequence of every task kind (plain, user, script, manual, service).
#[test]
fn sequence_of_task_kinds() {
    let case = |vars| Case::new("differential/sequence.bpmn", "sequence", vars);
    differential("sequence", &[case(json!({})), case(json!({"total": 0}))]);
}

/// MIWG A.1.0 as published: start, three tasks, end (not executable there).
#[test]
fn miwg_a_1_0_sequence() {
    differential("a10", &[Case::new("miwg/A.1.0.bpmn", "WFP-6-", json!({}))]);
}

/// An exclusive split and merge (A.2.0's shape): each branch, the default,
/// the boundary of a comparison, a decimal beside a whole number.
#[test]
fn exclusive_gateway_each_branch() {
    let case = |vars| Case::new("differential/exclusive.bpmn", "exclusive", vars);
    differential(
        "exclusive",
        &[
            case(json!({"amount": 500, "kind": "std"})),
            case(json!({"amount": 5, "kind": "rush"})),
            case(json!({"amount": 5, "kind": "std"})),
            case(json!({"amount": 100, "kind": "std"})),
            case(json!({"amount": 100.5, "kind": "rush"})),
        ],
    );
}

/// A parallel fork into three branches and its join.
#[test]
fn parallel_fork_and_join() {
    let case = |vars| Case::new("differential/parallel.bpmn", "parallel", vars);
    differential("parallel", &[case(json!({})), case(json!({"x": 1}))]);
}

/// An inclusive fork and join with one, two and all branches, and none (the default).
#[test]
fn inclusive_fork_and_join() {
    let case = |a: bool, b: bool, c: bool, size: &str| {
        let vars = json!({"a": a, "b": b, "c": c, "order": {"size": size}});
        Case::new("differential/inclusive.bpmn", "inclusive", vars)
    };
    differential(
        "inclusive",
        &[
            case(true, false, false, "small"),
            case(false, true, false, "small"),
            case(true, true, false, "small"),
            case(true, true, true, "small"),
            case(true, true, false, "large"),
            case(false, false, false, "small"),
            case(false, false, false, "large"),
        ],
    );
}

/// An embedded subprocess beside a parallel branch, its split reading a
/// task's output.
#[test]
fn embedded_subprocess() {
    let case = |level: i64| {
        Case::new("differential/subprocess.bpmn", "subprocess", json!({}))
            .outputs(json!({"assess": [{"level": level}]}))
    };
    differential("subprocess", &[case(2), case(1), case(3)]);
}

/// Multi-instance tasks: over collections (parallel, sequential, empty),
/// ended early by their completion conditions, and by a cardinality.
#[test]
fn multi_instance_activities() {
    let case = |reviewers: Value, signers: Value, copies: i64| {
        Case::new(
            "differential/multi_instance.bpmn",
            "multi_instance",
            json!({"reviewers": reviewers, "signers": signers, "copies": copies}),
        )
        .outputs(json!({"review": [{"verdict": "ok"}], "sign": [{"signature": "ok"}]}))
    };
    let early = json!({
        "review": [{"verdict": "ok"}, {"verdict": "reject"}, {"verdict": "ok"}],
        "sign": [{"signature": "ok"}, {"signature": "enough"}, {"signature": "ok"}],
    });
    differential(
        "multi",
        &[
            case(json!(["ann", "bob", "cy"]), json!(["dee", "eve"]), 2),
            case(json!(["ann"]), json!(["dee", "eve", "fay"]), 1),
            case(json!([]), json!(["dee"]), 0),
            case(json!(["ann", "bob", "cy"]), json!(["dee", "eve", "fay"]), 3).outputs(early),
        ],
    );
}

/// An event-based gateway: the message comes, or the earlier timer fires.
#[test]
fn event_based_gateway() {
    let case = || {
        Case::new(
            "differential/event_gateway.bpmn",
            "event_gateway",
            json!({}),
        )
    };
    differential("evgw", &[case().messages(&["answer"]), case()]);
}

/// A duration timer on one parallel branch, then a date timer.
#[test]
fn timer_on_a_parallel_branch() {
    differential(
        "timer",
        &[Case::new("differential/timer.bpmn", "timer", json!({}))],
    );
}

/// A call activity running another process of the document; its timer
/// boundary event when the called process is stuck (a held task).
#[test]
fn call_activity() {
    let case = |express| {
        Case::new(
            "differential/call_activity.bpmn",
            "call_activity",
            json!({"express": express}),
        )
    };
    differential(
        "call",
        &[case(true), case(false), case(false).hold(&["truck"])],
    );
}

/// MIWG C.1.0's executable process (invoice receipt), started by its
/// message: approved at once; rejected, clarified and approved; rejected
/// and given up.
#[test]
fn miwg_c_1_0_invoice() {
    let case = |outputs| {
        Case::new("miwg/C.1.0.bpmn", "bpmn-miwg-test-case-c.1.0", json!({}))
            .start_at("StartEvent_1")
            .outputs(outputs)
    };
    differential(
        "c10",
        &[
            case(json!({"approveInvoice": [{"approved": true}]})),
            case(json!({
                "approveInvoice": [{"approved": false}, {"approved": true}],
                "reviewInvoice": [{"clarified": "yes"}],
            })),
            case(json!({
                "approveInvoice": [{"approved": false}],
                "reviewInvoice": [{"clarified": "no"}],
            })),
        ],
    );
}

/// An inclusive join that a taken branch may bypass.
#[test]
fn inclusive_join_bypassed() {
    let case = |checked: bool, abandon: bool| {
        Case::new(
            "differential/inclusive_bypass.bpmn",
            "inclusive_bypass",
            json!({"checked": checked, "abandon": abandon}),
        )
    };
    differential(
        "bypass",
        &[case(true, false), case(true, true), case(false, true)],
    );
}

/// A terminate end event on a parallel branch.
#[test]
fn terminate_end_on_a_branch() {
    let case = |stop: bool| {
        Case::new(
            "differential/terminate.bpmn",
            "terminate",
            json!({"stop": stop}),
        )
    };
    differential("terminate", &[case(true), case(false)]);
}

/// MIWG A.4.0's first pool, a sequence in a collaboration. (Its second
/// pool, with the expanded subprocesses, has a task with two outgoing
/// flows, which SpiffWorkflow refuses to parse; A.3.0's collapsed
/// subprocess is empty, which it refuses too.)
#[test]
fn miwg_a_4_0_first_pool() {
    differential("a40", &[Case::new("miwg/A.4.0.bpmn", "WFP-6-1", json!({}))]);
}

/// Boundary events on a held task: a non-interrupting timer cycle (the
/// reminders it starts are compared, not the event itself), an
/// interrupting timer, an interrupting message; and none when it is done.
#[test]
fn boundary_events() {
    let case = || Case::new("differential/boundary.bpmn", "boundary", json!({}));
    differential(
        "boundary",
        &[
            case(),
            case().hold(&["approve"]),
            case().hold(&["approve"]).messages(&["withdraw"]),
        ],
    );
}

/// An error end event in a subprocess, caught by a boundary event.
#[test]
fn error_boundary_on_a_subprocess() {
    let case = |defects: i64| {
        Case::new(
            "differential/error.bpmn",
            "error",
            json!({"defects": defects}),
        )
    };
    // With defects the subprocess ends at its error end event: SpiffWorkflow
    // records it completed (its body ended) before the boundary event takes
    // over; we record it cancelled (interrupted, no outgoing flow taken),
    // as BPMN has it. Its content and the boundary path are compared.
    differential("error", &[case(0), case(2).unchecked(&["vet"])]);
}

/// A signal thrown on one branch releases a catch on the other.
#[test]
fn signal_between_branches() {
    differential(
        "signal",
        &[Case::new("differential/signal.bpmn", "signal", json!({}))],
    );
}

/// A non-interrupting timer event subprocess, firing while a task is held.
#[test]
fn event_subprocess() {
    let case = Case::new(
        "differential/event_subprocess.bpmn",
        "event_subprocess",
        json!({}),
    );
    // Not compared: a run whose main flow ends while the event subprocess
    // still listens. SpiffWorkflow keeps such a process open until the
    // event subprocess has run (its end waits for it); BPMN, and we,
    // complete the process when its last token is consumed and drop the
    // listener. Holding the work keeps the process running, so both stop
    // (unfinished) after the nudge.
    differential("evsub", &[case.hold(&["work"])]);
}

/// A parallel block in a loop, run once and three times.
#[test]
fn parallel_block_in_a_loop() {
    let case = |decisions: Value| {
        Case::new("differential/loop.bpmn", "loop", json!({})).outputs(json!({"decide": decisions}))
    };
    differential(
        "loop",
        &[
            case(json!([{"again": false}])),
            case(json!([{"again": true}, {"again": true}, {"again": false}])),
        ],
    );
}

/// A sequential multi-instance subprocess, then boundary events on a
/// subprocess: a ping that does not interrupt, a timeout that does.
#[test]
fn subprocess_scopes() {
    let case = |topics: Value| {
        Case::new(
            "differential/scopes.bpmn",
            "scopes",
            json!({"topics": topics}),
        )
        .outputs(json!({"note_down": [{"note": "noted"}]}))
    };
    differential(
        "scopes",
        &[
            case(json!(["scope", "cost"])),
            case(json!([])),
            case(json!(["scope"]))
                .hold(&["compile"])
                .messages(&["ping"]),
        ],
    );
}
