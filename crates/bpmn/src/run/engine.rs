//! The runner: the token queue, entering nodes, choosing flows, gateways,
//! ending tokens and scopes, cancelling.

use std::collections::VecDeque;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::graph::Graph;
use super::{
    Attached, Command, Effect, Instance, InstanceStatus, Resume, RunError, Scope, ScopeKind, Step,
    StepKind, Token, Wait,
};
use crate::expr;
use crate::model::{Definitions, GatewayKind, NodeKind, SequenceFlow, Trigger};

/// Work queued while a command runs.
pub(super) enum Item {
    /// The token enters its node (arriving by the flow, if any).
    Enter { token: u64, via: Option<String> },
    /// The listener's event happened, with this payload.
    Trigger { token: u64, payload: Value },
}

/// One command's run over a working copy of the instance.
pub(super) struct Run<'g, 'a> {
    /// The process's index.
    pub g: &'g Graph<'a>,
    /// The working copy of the instance.
    pub inst: Instance,
    /// The effects so far, in order.
    pub effects: Vec<Effect>,
    /// Work still to do.
    pub queue: VecDeque<Item>,
    /// The caller's clock reading.
    pub now: OffsetDateTime,
    /// Nodes entered during this command, against [`MAX_STEPS`].
    pub steps: usize,
}

/// The most nodes one command may enter: beyond, the model loops without
/// ever waiting, and each token still moving stops at an incident.
pub const MAX_STEPS: usize = 10_000;

/// How the flows out of a node are chosen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// Every flow that holds (no condition holds), else the default.
    Every,
    /// The first flow that holds, else the default.
    First,
    /// Every flow, conditions ignored.
    All,
}

fn pick_process<'d>(
    defs: &'d Definitions,
    id: Option<&str>,
) -> Result<&'d crate::model::Process, RunError> {
    if let Some(id) = id {
        return defs
            .process(id)
            .ok_or_else(|| RunError::UnknownProcess(id.to_owned()));
    }
    let runnable: Vec<_> = defs
        .processes
        .iter()
        .filter(|p| p.is_executable != Some(false))
        .collect();
    match runnable.as_slice() {
        [one] => Ok(one),
        [] => Err(RunError::UnknownProcess("(none executable)".into())),
        many => Err(RunError::AmbiguousProcess(
            many.iter()
                .map(|p| p.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )),
    }
}

/// Starts an instance (see [`super::start`]).
pub(super) fn start(
    defs: &Definitions,
    process_id: Option<&str>,
    start_event: Option<&str>,
    variables: Map<String, Value>,
    now: OffsetDateTime,
) -> Result<(Instance, Vec<Effect>), RunError> {
    let process = pick_process(defs, process_id)?;
    let g = Graph::new(defs, process);
    let starts: Vec<&str> = match start_event {
        Some(id) => match g.entry(id) {
            Some(e)
                if e.container.is_none() && matches!(e.node.kind, NodeKind::StartEvent { .. }) =>
            {
                vec![id]
            }
            _ => return Err(RunError::UnknownStartEvent(id.to_owned())),
        },
        None => g.start_nodes(None).iter().map(|n| n.id.as_str()).collect(),
    };
    if starts.is_empty() {
        return Err(RunError::NoStartEvent(process.id.clone()));
    }
    let inst = Instance {
        process_id: process.id.clone(),
        status: InstanceStatus::Running,
        variables,
        tokens: Vec::new(),
        scopes: Vec::new(),
        next_id: 1,
        seq: 0,
        history: Vec::new(),
    };
    let mut run = Run {
        g: &g,
        inst,
        effects: Vec::new(),
        queue: VecDeque::new(),
        now,
        steps: 0,
    };
    run.arm_event_subprocesses(0, None);
    for id in starts {
        let t = run.spawn(0, id, Map::new(), None);
        run.queue.push_back(Item::Enter {
            token: t,
            via: None,
        });
    }
    run.drain();
    Ok((run.inst, run.effects))
}

/// Applies a command to a copy, kept only on success (see [`super::apply`]).
pub(super) fn apply(
    defs: &Definitions,
    inst: &mut Instance,
    cmd: Command,
    now: OffsetDateTime,
) -> Result<Vec<Effect>, RunError> {
    let process = defs
        .process(&inst.process_id)
        .ok_or_else(|| RunError::UnknownProcess(inst.process_id.clone()))?;
    let g = Graph::new(defs, process);
    // Work on a copy so that an error leaves the caller's state untouched.
    let mut run = Run {
        g: &g,
        inst: inst.clone(),
        effects: Vec::new(),
        queue: VecDeque::new(),
        now,
        steps: 0,
    };
    run.command(cmd)?;
    run.drain();
    *inst = run.inst;
    Ok(run.effects)
}

impl Run<'_, '_> {
    /// Runs queued work until every token waits, then settles the status.
    pub fn drain(&mut self) {
        loop {
            while let Some(item) = self.queue.pop_front() {
                if self.inst.status != InstanceStatus::Running {
                    self.queue.clear();
                    return;
                }
                match item {
                    Item::Enter { token, .. } if self.steps >= MAX_STEPS => {
                        let message = format!(
                            "more than {MAX_STEPS} steps without waiting: a loop that never waits?"
                        );
                        self.incident(token, message, Resume::Enter);
                    }
                    Item::Enter { token, via } => {
                        self.steps += 1;
                        self.enter(token, via);
                    }
                    Item::Trigger { token, payload } => self.trigger(token, payload),
                }
            }
            if self.inst.status != InstanceStatus::Running || !self.fire_inclusive_join() {
                break;
            }
        }
        if self.inst.status != InstanceStatus::Running {
            return;
        }
        let active = self.inst.tokens.iter().any(|t| t.wait.is_active());
        let has_incident = |run: &Self| {
            run.inst
                .tokens
                .iter()
                .any(|t| matches!(t.wait, Wait::Incident { .. }))
        };
        if !active && !has_incident(self) && !self.inst.tokens.is_empty() {
            self.break_deadlock();
        }
        if !active && has_incident(self) {
            self.inst.status = InstanceStatus::Failed;
        }
    }

    /// Nothing waits for outside input, yet tokens wait at joins: they can
    /// never fire. Each such join gets its tokens merged into one at an
    /// incident; retrying goes on without the missing branches.
    fn break_deadlock(&mut self) {
        let mut groups: Vec<(u64, String)> = Vec::new();
        for t in &self.inst.tokens {
            if matches!(t.wait, Wait::Join { .. })
                && !groups.iter().any(|(s, n)| *s == t.scope && *n == t.node)
            {
                groups.push((t.scope, t.node.clone()));
            }
        }
        for (scope, node_id) in groups {
            let ids: Vec<u64> = self
                .inst
                .tokens
                .iter()
                .filter(|t| {
                    t.scope == scope && t.node == node_id && matches!(t.wait, Wait::Join { .. })
                })
                .map(|t| t.id)
                .collect();
            let Some((&first, rest)) = ids.split_first() else {
                continue;
            };
            for &other in rest {
                self.take_token(other);
            }
            self.record(first, &node_id, StepKind::Entered);
            let message = format!(
                "deadlock: the join '{node_id}' waits for branches that can no longer arrive"
            );
            self.incident(first, message, Resume::Leave);
        }
    }

    // ---- small helpers -------------------------------------------------

    /// A fresh token or scope id.
    pub fn alloc(&mut self) -> u64 {
        let id = self.inst.next_id;
        self.inst.next_id += 1;
        id
    }

    /// The token `id`.
    pub fn tok(&self, id: u64) -> Option<&Token> {
        self.inst.tokens.iter().find(|t| t.id == id)
    }

    /// The token `id`, for changing.
    pub fn tok_mut(&mut self, id: u64) -> Option<&mut Token> {
        self.inst.tokens.iter_mut().find(|t| t.id == id)
    }

    /// Removes the token `id` (no effects, no history).
    pub fn take_token(&mut self, id: u64) -> Option<Token> {
        let at = self.inst.tokens.iter().position(|t| t.id == id)?;
        Some(self.inst.tokens.remove(at))
    }

    /// The scope `id` (none for the process, 0).
    pub fn scope(&self, id: u64) -> Option<&Scope> {
        self.inst.scopes.iter().find(|s| s.id == id)
    }

    /// The scope `id`, for changing.
    pub fn scope_mut(&mut self, id: u64) -> Option<&mut Scope> {
        self.inst.scopes.iter_mut().find(|s| s.id == id)
    }

    /// Sets what the token waits for.
    pub fn set_wait(&mut self, id: u64, wait: Wait) {
        if let Some(t) = self.tok_mut(id) {
            t.wait = wait;
        }
    }

    /// A new token, ready to enter `node`.
    pub fn spawn(
        &mut self,
        scope: u64,
        node: &str,
        locals: Map<String, Value>,
        attached: Option<Attached>,
    ) -> u64 {
        let id = self.alloc();
        self.inst.tokens.push(Token {
            id,
            scope,
            node: node.to_owned(),
            wait: Wait::Ready,
            attached,
            locals,
            instance: None,
        });
        id
    }

    /// Appends a history step in the token's scope.
    pub fn record(&mut self, token: u64, element: &str, what: StepKind) {
        let scope = self.tok(token).map_or(0, |t| t.scope);
        self.record_in(token, scope, element, what);
    }

    /// Appends a history step.
    pub fn record_in(&mut self, token: u64, scope: u64, element: &str, what: StepKind) {
        self.inst.seq += 1;
        self.inst.history.push(Step {
            seq: self.inst.seq,
            token,
            scope,
            element: element.to_owned(),
            what,
        });
    }

    /// Stops the token at an incident.
    pub fn incident(&mut self, id: u64, message: impl Into<String>, resume: Resume) {
        let message = message.into();
        let Some(node) = self.tok(id).map(|t| t.node.clone()) else {
            return;
        };
        self.set_wait(
            id,
            Wait::Incident {
                message: message.clone(),
                resume,
            },
        );
        self.record(id, &node, StepKind::Incident);
        self.effects.push(Effect::Incident {
            token: id,
            node,
            message,
        });
    }

    /// The variables a token sees: the process's, then each enclosing
    /// scope's own (outermost first), then the token's.
    pub fn view(&self, id: u64) -> Map<String, Value> {
        let mut vars = self.inst.variables.clone();
        let Some(t) = self.tok(id) else {
            return vars;
        };
        let mut chain = Vec::new();
        let mut s = t.scope;
        while let Some(scope) = self.scope(s) {
            chain.push(scope);
            s = scope.parent;
        }
        // The owner of a multi-instance subprocess's scope holds the
        // instance's element and counter; the scope holds what it set.
        for scope in chain.into_iter().rev() {
            if let Some(owner) = self.tok(scope.token) {
                vars.extend(owner.locals.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            vars.extend(scope.locals.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        vars.extend(t.locals.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars
    }

    /// Evaluates a condition for a token.
    pub fn holds(&self, id: u64, text: &str) -> Result<bool, String> {
        let e = expr::parse(text).map_err(|e| format!("condition '{text}': {e}"))?;
        expr::condition(&e, &Value::Object(self.view(id)))
            .map_err(|e| format!("condition '{text}': {e}"))
    }

    /// Evaluates an expression for a token.
    pub fn value_of(&self, id: u64, text: &str) -> Result<Value, String> {
        let e = expr::parse(text).map_err(|e| format!("expression '{text}': {e}"))?;
        expr::evaluate(&e, &Value::Object(self.view(id)))
            .map_err(|e| format!("expression '{text}': {e}"))
    }

    /// Stores an output of `node` reached by token `id`: object keys merge,
    /// another value goes under the node's id, `null` sets nothing. It goes
    /// to the process (as Camunda propagates variables) and, inside
    /// instances of multi-instance subprocesses, to each instance's own
    /// variables too, which its nodes read first and which make its result.
    pub fn write_output(&mut self, id: u64, node: &str, output: Value) {
        let entries: Vec<(String, Value)> = match output {
            Value::Null => return,
            Value::Object(map) => map.into_iter().collect(),
            other => vec![(node.to_owned(), other)],
        };
        let mut instances = Vec::new();
        let mut s = self.tok(id).map_or(0, |t| t.scope);
        while let Some(scope) = self.scope(s) {
            let owner_is_instance = self.tok(scope.token).is_some_and(|t| t.instance.is_some());
            if matches!(scope.kind, ScopeKind::SubProcess) && owner_is_instance {
                instances.push(s);
            }
            s = scope.parent;
        }
        for s in instances {
            if let Some(scope) = self.scope_mut(s) {
                scope.locals.extend(entries.iter().cloned());
            }
        }
        self.inst.variables.extend(entries);
    }

    // ---- entering ------------------------------------------------------

    fn enter(&mut self, id: u64, via: Option<String>) {
        let Some(t) = self.tok(id) else { return };
        if t.wait != Wait::Ready {
            return;
        }
        let node_id = t.node.clone();
        let inner = t.instance.is_some();
        let Some(node) = self.g.node(&node_id) else {
            self.incident(
                id,
                format!("'{node_id}' is not in the process"),
                Resume::Enter,
            );
            return;
        };
        match &node.kind {
            NodeKind::Gateway { gateway } => self.gateway(id, &node_id, *gateway, via),
            kind => {
                if let Some(l) = kind.loop_characteristics().filter(|_| !inner) {
                    self.begin_loop(id, node, l);
                    return;
                }
                self.record(id, &node_id, StepKind::Entered);
                match kind {
                    NodeKind::StartEvent { .. } | NodeKind::Boundary { .. } => self.pass(id),
                    NodeKind::EndEvent { result } => self.end_event(id, node, result),
                    NodeKind::IntermediateCatch { trigger } => self.catch_event(id, node, trigger),
                    NodeKind::IntermediateThrow { result } => self.throw_event(id, node, result),
                    NodeKind::Task { task, .. } => self.start_task(id, node, task),
                    NodeKind::SubProcess {
                        triggered_by_event: false,
                        ..
                    } => self.start_subprocess(id, node),
                    NodeKind::CallActivity { called_element, .. } => {
                        self.call(id, node, called_element.as_deref())
                    }
                    NodeKind::SubProcess { .. } => self.incident(
                        id,
                        "an event subprocess is not entered by a flow",
                        Resume::Enter,
                    ),
                    other => self.incident(
                        id,
                        format!("'{}' elements are not supported", other.element_name()),
                        Resume::Enter,
                    ),
                }
            }
        }
    }

    /// A node that does nothing completes and the token moves on.
    pub fn pass(&mut self, id: u64) {
        if let Some(node) = self.tok(id).map(|t| t.node.clone()) {
            self.record(id, &node, StepKind::Completed);
            self.leave(id);
        }
    }

    /// The activity or event at the token is done: an instance of a
    /// multi-instance activity reports to it; otherwise the output is
    /// stored, listeners are dropped and the token leaves.
    pub fn finish(&mut self, id: u64, output: Value) {
        let Some(t) = self.tok(id) else { return };
        let node = t.node.clone();
        let instance = t.instance.is_some();
        self.write_output(id, &node, output.clone());
        if instance {
            self.finish_instance(id, output);
            return;
        }
        self.disarm(id);
        self.record(id, &node, StepKind::Completed);
        self.leave(id);
    }

    /// An instance of a multi-instance activity is done with `result`.
    fn finish_instance(&mut self, id: u64, result: Value) {
        let Some(t) = self.take_token(id) else { return };
        self.record_in(id, t.scope, &t.node, StepKind::Completed);
        if let Some(counter) = t.instance {
            self.instance_done(t.scope, counter, result);
        }
    }

    // ---- leaving -------------------------------------------------------

    /// The token leaves its node by the flows its kind chooses.
    pub fn leave(&mut self, id: u64) {
        let Some(node_id) = self.tok(id).map(|t| t.node.clone()) else {
            return;
        };
        let choice = match self.g.node(&node_id).and_then(|n| n.gateway()) {
            Some(GatewayKind::Exclusive) => Choice::First,
            Some(GatewayKind::Parallel) => Choice::All,
            _ => Choice::Every,
        };
        let flows = self.g.outgoing(&node_id);
        if flows.is_empty() {
            self.end_token(id);
            return;
        }
        match self.choose(id, &node_id, flows, choice) {
            Ok(chosen) => self.take(id, &chosen),
            Err(message) => self.incident(id, message, Resume::Leave),
        }
    }

    fn choose<'f>(
        &self,
        id: u64,
        node_id: &str,
        flows: &[&'f SequenceFlow],
        choice: Choice,
    ) -> Result<Vec<&'f SequenceFlow>, String> {
        if choice == Choice::All {
            return Ok(flows.to_vec());
        }
        let default = self.g.node(node_id).and_then(|n| n.default_flow.as_deref());
        let route = self.routed(id, node_id);
        let mut chosen = Vec::new();
        for f in flows.iter().filter(|f| Some(f.id.as_str()) != default) {
            let ok = match f.condition.as_deref().map(str::trim) {
                None | Some("") => route.as_ref().is_none_or(|r| r.names(f)),
                Some(text) => self.holds(id, text)?,
            };
            if ok {
                chosen.push(*f);
                if choice == Choice::First {
                    break;
                }
            }
        }
        if chosen.is_empty() {
            match flows.iter().find(|f| Some(f.id.as_str()) == default) {
                Some(f) => chosen.push(*f),
                None => {
                    return Err(format!(
                        "no flow out of '{node_id}' holds and there is no default"
                    ));
                }
            }
        }
        Ok(chosen)
    }

    /// The flows the variable `route.<gateway id>` names for a split whose
    /// flows carry no condition (models drawn for interchange, such as the
    /// MIWG ones): a flow id or name, or a list of them for an inclusive
    /// split. `None` when the variable is not set (every unconditioned flow
    /// then holds) or the node is not a gateway.
    fn routed(&self, id: u64, node_id: &str) -> Option<Route> {
        self.g.node(node_id)?.gateway()?;
        let key = serde_json::to_string(node_id).ok()?;
        let value = self.value_of(id, &format!("route[{key}]")).ok()?;
        let names = match value {
            Value::String(s) => vec![s],
            Value::Array(items) => items
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => return None,
        };
        Some(Route(names))
    }

    /// Moves the token along the flows: a fresh token per flow (so that a
    /// token id names one activity instance), the old one gone.
    fn take(&mut self, id: u64, flows: &[&SequenceFlow]) {
        let Some(old) = self.take_token(id) else {
            return;
        };
        for f in flows {
            let t = self.spawn(old.scope, &f.target, old.locals.clone(), None);
            self.record(t, &f.id, StepKind::Taken);
            self.queue.push_back(Item::Enter {
                token: t,
                via: Some(f.id.clone()),
            });
        }
    }

    /// Moves the token straight to another node (a link).
    pub fn jump(&mut self, id: u64, target: &str) {
        if let Some(old) = self.take_token(id) {
            let t = self.spawn(old.scope, target, old.locals, None);
            self.queue.push_back(Item::Enter {
                token: t,
                via: None,
            });
        }
    }

    /// The token ends; its scope may complete.
    pub fn end_token(&mut self, id: u64) {
        if let Some(t) = self.take_token(id) {
            self.check_scope(t.scope);
        }
    }

    /// A scope whose tokens are all gone completes (multi-instance scopes
    /// complete by their counts instead).
    pub fn check_scope(&mut self, scope: u64) {
        let busy = self
            .inst
            .tokens
            .iter()
            .any(|t| t.scope == scope && t.attached.is_none());
        if busy {
            return;
        }
        if scope == 0 {
            self.drop_scope_listeners(0);
            self.inst.status = InstanceStatus::Completed;
            self.effects.push(Effect::Completed);
            return;
        }
        let Some(s) = self.scope(scope) else { return };
        if !matches!(s.kind, ScopeKind::SubProcess) {
            return;
        }
        let owner = s.token;
        self.drop_scope_listeners(scope);
        let Some(s) = self
            .inst
            .scopes
            .iter()
            .position(|s| s.id == scope)
            .map(|at| self.inst.scopes.remove(at))
        else {
            return;
        };
        self.set_wait(owner, Wait::Ready);
        if self.tok(owner).is_some_and(|t| t.instance.is_some()) {
            // Its outputs are in the process already; its result is what it set.
            self.finish_instance(owner, Value::Object(s.locals));
        } else {
            self.finish(owner, Value::Null);
        }
    }

    fn drop_scope_listeners(&mut self, scope: u64) {
        let ids: Vec<u64> = self
            .inst
            .tokens
            .iter()
            .filter(|t| t.attached == Some(Attached::Scope(scope)))
            .map(|t| t.id)
            .collect();
        for id in ids {
            self.cancel_token(id);
        }
    }

    // ---- cancelling ----------------------------------------------------

    /// Cancels a token and everything it holds: its work, timers and
    /// subscriptions, its scopes' tokens and its listeners.
    pub fn cancel_token(&mut self, id: u64) {
        let Some(t) = self.take_token(id) else { return };
        match &t.wait {
            Wait::Work => self.effects.push(Effect::CancelWork { token: id }),
            Wait::Timer { .. } => self.effects.push(Effect::CancelTimer { token: id }),
            Wait::Message { .. } | Wait::Signal { .. } => {
                self.effects.push(Effect::Unsubscribe { token: id })
            }
            Wait::Called => self.effects.push(Effect::CancelProcess { token: id }),
            Wait::SubProcess { scope } | Wait::MultiInstance { scope } => self.cancel_scope(*scope),
            Wait::Ready | Wait::EventGateway { .. } | Wait::Join { .. } | Wait::Incident { .. } => {
            }
        }
        self.disarm(id);
        if t.attached.is_none() {
            self.record_in(id, t.scope, &t.node, StepKind::Cancelled);
        }
    }

    /// Cancels every token of a scope and forgets the scope.
    pub fn cancel_scope(&mut self, scope: u64) {
        let ids: Vec<u64> = self
            .inst
            .tokens
            .iter()
            .filter(|t| t.scope == scope)
            .map(|t| t.id)
            .collect();
        for id in ids {
            self.cancel_token(id);
        }
        self.inst.scopes.retain(|s| s.id != scope);
    }

    /// Drops the listeners attached to a token.
    pub fn disarm(&mut self, id: u64) {
        let ids: Vec<u64> = self
            .inst
            .tokens
            .iter()
            .filter(|t| t.attached == Some(Attached::Token(id)))
            .map(|t| t.id)
            .collect();
        for l in ids {
            self.cancel_token(l);
        }
    }

    /// Ends the instance: everything is cancelled.
    pub fn end_instance(&mut self, status: InstanceStatus) {
        self.cancel_scope(0);
        self.inst.scopes.clear();
        self.inst.status = status;
        self.effects.push(match status {
            InstanceStatus::Terminated => Effect::Terminated,
            _ => Effect::Completed,
        });
    }

    // ---- gateways ------------------------------------------------------

    fn gateway(&mut self, id: u64, node_id: &str, kind: GatewayKind, via: Option<String>) {
        let joins = self.g.incoming_count(node_id) > 1;
        match kind {
            GatewayKind::Parallel | GatewayKind::Inclusive if joins => {
                self.set_wait(
                    id,
                    Wait::Join {
                        flow: via.unwrap_or_default(),
                    },
                );
                if kind == GatewayKind::Parallel {
                    self.fire_parallel(id);
                }
                // Inclusive joins are looked at once the queue is empty.
            }
            GatewayKind::Complex => {
                self.record(id, node_id, StepKind::Entered);
                self.incident(id, "complex gateways are not supported", Resume::Enter);
            }
            GatewayKind::EventBased => {
                self.record(id, node_id, StepKind::Entered);
                self.event_gateway(id, node_id);
            }
            _ => {
                self.record(id, node_id, StepKind::Entered);
                self.pass(id);
            }
        }
    }

    /// For each incoming flow, the first token waiting at the join.
    fn join_tokens(&self, scope: u64, node_id: &str) -> Vec<Option<u64>> {
        let incoming = self
            .g
            .entry(node_id)
            .map(|e| e.incoming.clone())
            .unwrap_or_default();
        incoming
            .iter()
            .map(|f| {
                self.inst
                    .tokens
                    .iter()
                    .find(|t| {
                        t.scope == scope
                            && t.node == node_id
                            && t.wait == Wait::Join { flow: f.id.clone() }
                    })
                    .map(|t| t.id)
            })
            .collect()
    }

    fn fire_parallel(&mut self, id: u64) {
        let Some((scope, node_id)) = self.tok(id).map(|t| (t.scope, t.node.clone())) else {
            return;
        };
        let waiting = self.join_tokens(scope, &node_id);
        if waiting.iter().all(Option::is_some) {
            self.merge(&waiting.into_iter().flatten().collect::<Vec<_>>(), &node_id);
        }
    }

    /// The joined tokens become one, which passes the gateway.
    fn merge(&mut self, ids: &[u64], node_id: &str) {
        let Some((&first, rest)) = ids.split_first() else {
            return;
        };
        for &other in rest {
            self.take_token(other);
        }
        self.set_wait(first, Wait::Ready);
        self.record(first, node_id, StepKind::Entered);
        self.pass(first);
    }

    /// Fires one inclusive join no token can reach any more; whether it did.
    fn fire_inclusive_join(&mut self) -> bool {
        let mut candidates: Vec<(u64, String)> = Vec::new();
        for t in &self.inst.tokens {
            if matches!(t.wait, Wait::Join { .. })
                && self.g.is_inclusive(&t.node)
                && !candidates
                    .iter()
                    .any(|(s, n)| *s == t.scope && *n == t.node)
            {
                candidates.push((t.scope, t.node.clone()));
            }
        }
        for (scope, node_id) in candidates {
            let blocked = self.inst.tokens.iter().any(|t| {
                t.scope == scope
                    && !(t.node == node_id && matches!(t.wait, Wait::Join { .. }))
                    && self.g.can_reach(&t.node, &node_id)
            });
            if !blocked {
                let ids: Vec<u64> = self
                    .join_tokens(scope, &node_id)
                    .into_iter()
                    .flatten()
                    .collect();
                if ids.is_empty() {
                    // Tokens that arrived without a flow (a retry) join alone.
                    let lone = self.inst.tokens.iter().find(|t| {
                        t.scope == scope && t.node == node_id && matches!(t.wait, Wait::Join { .. })
                    });
                    let Some(lone) = lone.map(|t| t.id) else {
                        continue;
                    };
                    self.merge(&[lone], &node_id);
                } else {
                    self.merge(&ids, &node_id);
                }
                return true;
            }
        }
        false
    }
}

/// Whether the trigger needs no event to pass (none, link).
pub(super) fn passes(trigger: &Trigger) -> bool {
    matches!(trigger, Trigger::None | Trigger::Link { .. })
}

/// Flow ids or names a `route.<gateway>` variable chose.
struct Route(Vec<String>);

impl Route {
    /// Whether the route names the flow, by id or by name (its words joined
    /// by single spaces, as names in diagrams break lines).
    fn names(&self, f: &SequenceFlow) -> bool {
        let name = f.name.as_deref().map(crate::model::one_line);
        self.0
            .iter()
            .any(|r| *r == f.id || name.as_deref() == Some(r.as_str()))
    }
}
