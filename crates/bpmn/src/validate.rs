//! Validation: what is wrong with a definitions document before it runs,
//! each finding with a stable code, a message for a process author and the
//! id of the element it is about. Errors mean running would be wrong (the
//! service refuses to start an instance); warnings mean it runs, but maybe
//! not as drawn. Models drawn for interchange rather than execution (MIWG)
//! get warnings where the meaning is clear: see `docs/workflows.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::{
    expr,
    model::{
        Definitions, GatewayKind, Loop, Node, NodeKind, Process, Scope, TaskKind, TimerDef, Trigger,
    },
};

/// One thing validation found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable machine-readable code (`missing_start_event`, `unreachable_node`...).
    #[serde(rename = "type")]
    pub code: &'static str,
    /// What is wrong, for a person.
    pub message: String,
    /// The element it is about, when there is one.
    pub element: Option<String>,
}

/// What validation says of a document: `{valid, errors, warnings}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Report {
    /// No errors (warnings allowed).
    pub valid: bool,
    /// Running would be wrong.
    pub errors: Vec<Finding>,
    /// It runs, perhaps not as drawn.
    pub warnings: Vec<Finding>,
}

/// How big a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Flow nodes, nested ones included.
    pub nodes: usize,
    /// Sequence flows, nested ones included.
    pub flows: usize,
}

/// Flow nodes and sequence flows in every process, nested ones included.
pub fn counts(defs: &Definitions) -> Counts {
    let mut c = Counts { nodes: 0, flows: 0 };
    for p in &defs.processes {
        c.flows += p.flows.len();
        for at in p.all_nodes() {
            c.nodes += 1;
            if let Some(s) = at.node.scope() {
                c.flows += s.flows.len();
            }
        }
    }
    c
}

/// Validates a whole document.
pub fn validate(defs: &Definitions) -> Report {
    let mut v = Findings::default();
    if defs.processes.iter().all(|p| p.nodes.is_empty()) {
        v.error(
            "nothing_to_run",
            "no process has any node: add a start event, the work and an end event",
            None,
        );
    }
    for p in &defs.processes {
        process(defs, p, &mut v);
    }
    collaborations(defs, &mut v);
    v.report()
}

#[derive(Default)]
struct Findings {
    errors: Vec<Finding>,
    warnings: Vec<Finding>,
}

impl Findings {
    fn error(&mut self, code: &'static str, message: impl Into<String>, element: Option<&str>) {
        self.errors.push(finding(code, message, element));
    }

    fn warn(&mut self, code: &'static str, message: impl Into<String>, element: Option<&str>) {
        self.warnings.push(finding(code, message, element));
    }

    fn report(self) -> Report {
        Report {
            valid: self.errors.is_empty(),
            errors: self.errors,
            warnings: self.warnings,
        }
    }
}

fn finding(code: &'static str, message: impl Into<String>, element: Option<&str>) -> Finding {
    Finding {
        code,
        message: message.into(),
        element: element.map(str::to_owned),
    }
}

/// A node's label in messages: its name on one line, else its id.
fn label(n: &Node) -> String {
    match n.name.as_deref().map(crate::model::one_line) {
        Some(name) if !name.is_empty() => format!("'{name}' ({})", n.id),
        _ => format!("'{}'", n.id),
    }
}

fn process(defs: &Definitions, p: &Process, v: &mut Findings) {
    if p.nodes.is_empty() {
        // A pool drawn as a black box, or a process not started yet.
        v.warn(
            "empty_process",
            format!("process '{}' has no nodes: nothing of it runs", p.id),
            Some(&p.id),
        );
        // Flows left in it lead nowhere; nothing runs them, so a warning.
        for f in &p.flows {
            v.warn(
                "unknown_flow_node",
                format!(
                    "flow '{}' ({} -> {}) is in process '{}', which has no nodes",
                    f.id, f.source, f.target, p.id
                ),
                Some(&f.id),
            );
        }
        return;
    }
    if p.is_executable == Some(false) {
        v.warn(
            "not_executable",
            format!(
                "process '{}' is marked isExecutable=\"false\"; it runs anyway where its meaning is clear",
                p.id
            ),
            Some(&p.id),
        );
    }
    scope(defs, p, p.scope(), true, v);
    let ids: BTreeSet<&str> = p.all_nodes().iter().map(|at| at.node.id.as_str()).collect();
    for lane in p.lanes() {
        for r in &lane.flow_node_refs {
            if !ids.contains(r.as_str()) {
                v.warn(
                    "lane_unknown_node",
                    format!(
                        "lane '{}' lists '{r}', which is not a node of its process",
                        lane.id
                    ),
                    Some(&lane.id),
                );
            }
        }
    }
}

/// Checks one scope (a process body or an embedded subprocess) and, through
/// [`node`], the scopes nested in it.
fn scope(defs: &Definitions, p: &Process, s: Scope<'_>, top: bool, v: &mut Findings) {
    let ids: BTreeSet<&str> = s.nodes.iter().map(|n| n.id.as_str()).collect();
    for f in s.flows {
        for (end, id) in [("source", &f.source), ("target", &f.target)] {
            if !ids.contains(id.as_str()) {
                v.error(
                    "unknown_flow_node",
                    format!(
                        "flow '{}' has {end} '{id}', which is not a node of the same process or subprocess",
                        f.id
                    ),
                    Some(&f.id),
                );
            }
        }
        if let Some(c) = &f.condition
            && let Err(e) = expr::parse(c)
        {
            v.error(
                "invalid_condition",
                format!("the condition of flow '{}' does not read: {e}", f.id),
                Some(&f.id),
            );
        }
    }
    let starts: Vec<&Node> = s
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::StartEvent { .. }))
        .collect();
    let ends = s
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::EndEvent { .. }))
        .count();
    if top {
        if starts.is_empty() {
            v.error(
                "missing_start_event",
                format!("process '{}' has no start event", p.id),
                Some(&p.id),
            );
        }
        if ends == 0 {
            v.error(
                "missing_end_event",
                format!("process '{}' has no end event", p.id),
                Some(&p.id),
            );
        }
    }
    reachability(s, &starts, v);
    parallel_balance(s, v);
    for n in s.nodes {
        node(defs, p, s, n, v);
    }
}

/// Nodes no start event reaches (boundary events count as reached through
/// their activity) are warned about; so are dead ends and orphans.
fn reachability(s: Scope<'_>, starts: &[&Node], v: &mut Findings) {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in s.flows {
        next.entry(&f.source).or_default().push(&f.target);
    }
    for n in s.nodes {
        if let NodeKind::Boundary { attached_to, .. } = &n.kind {
            next.entry(attached_to).or_default().push(&n.id);
        }
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut stack: Vec<&str> = starts.iter().map(|n| n.id.as_str()).collect();
    // Event subprocesses start on their own trigger.
    stack.extend(
        s.nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.kind,
                    NodeKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                )
            })
            .map(|n| n.id.as_str()),
    );
    while let Some(id) = stack.pop() {
        if seen.insert(id) {
            stack.extend(next.get(id).into_iter().flatten());
        }
    }
    for n in s.nodes {
        let incoming = s.flows.iter().any(|f| f.target == n.id);
        let outgoing = s.flows.iter().any(|f| f.source == n.id);
        let is_start = matches!(n.kind, NodeKind::StartEvent { .. });
        let is_end = matches!(n.kind, NodeKind::EndEvent { .. });
        let event_sub = matches!(
            n.kind,
            NodeKind::SubProcess {
                triggered_by_event: true,
                ..
            }
        );
        if is_start && incoming {
            v.error(
                "start_has_incoming",
                format!("start event {} has an incoming flow", label(n)),
                Some(&n.id),
            );
        }
        if is_end && outgoing {
            v.error(
                "end_has_outgoing",
                format!("end event {} has an outgoing flow", label(n)),
                Some(&n.id),
            );
        }
        if matches!(n.kind, NodeKind::Boundary { .. }) && incoming {
            v.error(
                "boundary_has_incoming",
                format!("boundary event {} has an incoming flow", label(n)),
                Some(&n.id),
            );
        }
        if !starts.is_empty() && !seen.contains(n.id.as_str()) && !event_sub {
            v.warn(
                "unreachable_node",
                format!("{} cannot be reached from a start event", label(n)),
                Some(&n.id),
            );
        } else if !incoming && !outgoing && !is_start && !is_end && !event_sub {
            v.warn(
                "orphan_node",
                format!("{} has no incoming or outgoing flows", label(n)),
                Some(&n.id),
            );
        } else if !outgoing && !is_end && !event_sub && !matches!(n.kind, NodeKind::Boundary { .. })
        {
            v.warn(
                "dead_end",
                format!(
                    "{} has no outgoing flow: a token ends there as at an end event",
                    label(n)
                ),
                Some(&n.id),
            );
        }
    }
}

/// A parallel fork with no parallel join after it in the same scope is
/// usually a mistake (the branches then end separately).
fn parallel_balance(s: Scope<'_>, v: &mut Findings) {
    let parallel = |n: &&Node| n.gateway() == Some(GatewayKind::Parallel);
    let forks: Vec<&Node> = s
        .nodes
        .iter()
        .filter(parallel)
        .filter(|n| s.outgoing(&n.id).len() > 1)
        .collect();
    let joins = s
        .nodes
        .iter()
        .filter(parallel)
        .filter(|n| s.incoming(&n.id).len() > 1)
        .count();
    if forks.len() > joins {
        for f in forks {
            v.warn(
                "gateway_imbalance",
                format!(
                    "parallel gateway {} forks, and its scope has fewer parallel joins than forks",
                    label(f)
                ),
                Some(&f.id),
            );
        }
    }
}

fn node(defs: &Definitions, p: &Process, s: Scope<'_>, n: &Node, v: &mut Findings) {
    let out = s.outgoing(&n.id);
    if let Some(d) = &n.default_flow
        && !out.iter().any(|f| &f.id == d)
    {
        v.error(
            "invalid_default_flow",
            format!("the default flow '{d}' of {} does not leave it", label(n)),
            Some(&n.id),
        );
    }
    match &n.kind {
        NodeKind::Gateway { gateway } => gateway_node(*gateway, n, &out, v),
        NodeKind::Task { task, loop_ } => {
            task_node(task, n, v);
            loop_node(loop_.as_ref(), n, v);
        }
        NodeKind::SubProcess {
            loop_,
            nodes,
            triggered_by_event,
            ..
        } => {
            loop_node(loop_.as_ref(), n, v);
            if nodes.is_empty() {
                v.warn(
                    "empty_subprocess",
                    format!("subprocess {} is empty: it completes at once", label(n)),
                    Some(&n.id),
                );
            } else if let Some(inner) = n.scope() {
                if *triggered_by_event {
                    v.error(
                        "unsupported_element",
                        format!("event subprocess {} is not supported yet", label(n)),
                        Some(&n.id),
                    );
                }
                scope(defs, p, inner, false, v);
            }
        }
        NodeKind::CallActivity {
            called_element,
            loop_,
        } => {
            loop_node(loop_.as_ref(), n, v);
            match called_element.as_deref().filter(|c| !c.trim().is_empty()) {
                None => v.error(
                    "missing_called_element",
                    format!("call activity {} names nothing to call", label(n)),
                    Some(&n.id),
                ),
                Some(c) if defs.process(c).is_none() => v.warn(
                    "called_element_not_in_document",
                    format!(
                        "call activity {} calls '{c}', which is not a process of this document: \
                         a stored workflow with that process is called, or the call fails",
                        label(n)
                    ),
                    Some(&n.id),
                ),
                Some(_) => {}
            }
        }
        NodeKind::Boundary {
            attached_to,
            trigger,
            ..
        } => {
            if !s
                .nodes
                .iter()
                .any(|a| &a.id == attached_to && a.is_activity())
            {
                v.error(
                    "boundary_attached_to_unknown",
                    format!(
                        "boundary event {} is attached to '{attached_to}', which is not an activity of its scope",
                        label(n)
                    ),
                    Some(&n.id),
                );
            }
            triggers(trigger, n, v);
        }
        NodeKind::StartEvent { trigger, .. }
        | NodeKind::IntermediateCatch { trigger }
        | NodeKind::IntermediateThrow { result: trigger }
        | NodeKind::EndEvent { result: trigger } => triggers(trigger, n, v),
        NodeKind::Unsupported { element } => v.error(
            "unsupported_element",
            format!(
                "{element} {} is not supported: running it would be wrong",
                label(n)
            ),
            Some(&n.id),
        ),
    }
}

fn gateway_node(
    gateway: GatewayKind,
    n: &Node,
    out: &[&crate::model::SequenceFlow],
    v: &mut Findings,
) {
    match gateway {
        GatewayKind::Complex => v.error(
            "unsupported_element",
            format!("complex gateway {} is not supported", label(n)),
            Some(&n.id),
        ),
        GatewayKind::Exclusive | GatewayKind::Inclusive if out.len() > 1 => {
            let default = n.default_flow.as_deref();
            let bare: Vec<&str> = out
                .iter()
                .filter(|f| f.condition.is_none() && Some(f.id.as_str()) != default)
                .map(|f| f.id.as_str())
                .collect();
            for f in &bare {
                v.warn(
                    "condition_missing",
                    format!(
                        "flow '{f}' out of gateway {} has no condition and is not the default: \
                         the instance variable `route.{}` chooses it by id or name",
                        label(n),
                        n.id
                    ),
                    Some(f),
                );
            }
            if default.is_none() && bare.is_empty() {
                v.warn(
                    "no_default_flow",
                    format!(
                        "gateway {} has no default flow: when no condition holds the instance stops for a person",
                        label(n)
                    ),
                    Some(&n.id),
                );
            }
        }
        _ => {}
    }
}

fn task_node(task: &TaskKind, n: &Node, v: &mut Findings) {
    if let TaskKind::Script { script, .. } = task {
        let safe = script
            .as_deref()
            .is_some_and(|s| script_assignment(s).is_some());
        if !safe {
            v.error(
                "script_refused",
                format!(
                    "script task {} runs code, which the engine never does; only `name = expression` \
                     in the condition language is accepted",
                    label(n)
                ),
                Some(&n.id),
            );
        }
    }
}

/// `name = expression`: the one script form the engine runs (it sets a
/// process variable); the variable name and the parsed expression.
pub fn script_assignment(script: &str) -> Option<(&str, expr::Expr)> {
    let (name, value) = script.trim().split_once('=')?;
    let name = name.trim();
    let valid_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name || value.starts_with('=') {
        return None;
    }
    expr::parse(value.trim()).ok().map(|e| (name, e))
}

fn loop_node(l: Option<&Loop>, n: &Node, v: &mut Findings) {
    match l {
        Some(Loop::Standard { .. }) => v.error(
            "unsupported_element",
            format!(
                "the standard loop of {} is not supported; use multi-instance",
                label(n)
            ),
            Some(&n.id),
        ),
        Some(Loop::MultiInstance {
            collection,
            loop_data_input_ref,
            cardinality,
            completion_condition,
            ..
        }) => {
            if collection.is_none() && loop_data_input_ref.is_none() && cardinality.is_none() {
                v.error(
                    "multi_instance_without_input",
                    format!(
                        "multi-instance {} names neither a collection nor a cardinality",
                        label(n)
                    ),
                    Some(&n.id),
                );
            }
            for (what, text) in [
                ("cardinality", cardinality),
                ("completion condition", completion_condition),
            ] {
                if let Some(t) = text
                    && let Err(e) = expr::parse(t)
                {
                    v.error(
                        "invalid_condition",
                        format!("the {what} of {} does not read: {e}", label(n)),
                        Some(&n.id),
                    );
                }
            }
        }
        None => {}
    }
}

fn triggers(trigger: &Trigger, n: &Node, v: &mut Findings) {
    for t in trigger.definitions() {
        match t {
            Trigger::Timer { timer, .. } if timer_is_empty(timer) => v.warn(
                "empty_timer",
                format!(
                    "timer {} has no date, duration or cycle: a token reaching it stops for a person",
                    label(n)
                ),
                Some(&n.id),
            ),
            Trigger::Escalation { .. } | Trigger::Compensation { .. } | Trigger::Cancel { .. } => {
                v.warn(
                    "unsupported_event",
                    format!(
                        "{} of {} is not supported: it never fires",
                        t.element_name().unwrap_or("this event definition"),
                        label(n)
                    ),
                    Some(&n.id),
                )
            }
            Trigger::Conditional { .. } => v.warn(
                "unsupported_event",
                format!("the conditional event {} is not supported: it never fires", label(n)),
                Some(&n.id),
            ),
            _ => {}
        }
    }
}

fn timer_is_empty(t: &TimerDef) -> bool {
    [&t.date, &t.duration, &t.cycle]
        .iter()
        .all(|x| x.as_deref().is_none_or(|s| s.trim().is_empty()))
}

/// Message flows must join elements that exist somewhere in the document.
fn collaborations(defs: &Definitions, v: &mut Findings) {
    let mut known: BTreeSet<&str> = BTreeSet::new();
    for p in &defs.processes {
        known.insert(&p.id);
        for at in p.all_nodes() {
            known.insert(&at.node.id);
        }
    }
    for c in &defs.collaborations {
        for part in &c.participants {
            known.insert(&part.id);
        }
        for mf in &c.message_flows {
            for (end, id) in [("source", &mf.source), ("target", &mf.target)] {
                if !known.contains(id.as_str()) {
                    v.warn(
                        "message_flow_unknown_end",
                        format!(
                            "message flow '{}' has {end} '{id}', which is not in this document",
                            mf.id
                        ),
                        Some(&mf.id),
                    );
                }
            }
        }
        for part in &c.participants {
            if let Some(r) = &part.process_ref
                && defs.process(r).is_none()
            {
                v.warn(
                    "participant_unknown_process",
                    format!(
                        "pool '{}' refers to process '{r}', which is not in this document",
                        part.id
                    ),
                    Some(&part.id),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
