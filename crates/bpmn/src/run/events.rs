//! Events: catching (timers, messages, signals), throwing, end events,
//! boundary events, event gateways, event subprocesses and BPMN errors.

use serde_json::{Map, Value};

use super::engine::{Item, Run, passes};
use super::graph::is_gateway_option;
use super::timer::{self, TimerSpec};
use super::{Attached, Effect, InstanceStatus, Resume, RunError, ScopeKind, StepKind, Wait};
use crate::model::{Element, Node, NodeKind, Preserved, TaskKind, TimerDef, Trigger};

/// Who catches a thrown error.
enum Catcher {
    /// A boundary error event of the activity token.
    Boundary { activity: u64, boundary: String },
    /// An error start event of an event subprocess of the scope.
    EventSub { scope: u64, start: String },
}

/// The first value of an attribute with this local name (any namespace),
/// on the element kept or on anything under its extension elements.
pub(super) fn vendor_attr<'p>(p: &'p Preserved, local: &str) -> Option<&'p str> {
    if let Some(a) = p.attributes.iter().find(|a| a.name == local) {
        return Some(&a.value);
    }
    let mut found: Option<&'p str> = None;
    for el in p.elements() {
        el.walk(&mut |e: &'p Element| {
            if found.is_none() {
                found = e
                    .attributes
                    .iter()
                    .find(|a| a.name == local)
                    .map(|a| a.value.as_str());
            }
        });
    }
    found
}

/// The effect that subscribes a listener to what it waits for.
fn arm_effect(token: u64, wait: &Wait) -> Option<Effect> {
    match wait {
        Wait::Timer { due, .. } => Some(Effect::ScheduleTimer { token, due: *due }),
        Wait::Message { name, correlation } => Some(Effect::Subscribe {
            token,
            message: name.clone(),
            correlation: correlation.clone(),
        }),
        Wait::Signal { name } => Some(Effect::SubscribeSignal {
            token,
            signal: name.clone(),
        }),
        _ => None,
    }
}

fn extras_of(trigger: &Trigger) -> Option<&Preserved> {
    match trigger {
        Trigger::Message { extras, .. } | Trigger::Error { extras, .. } => Some(extras),
        _ => None,
    }
}

impl Run<'_, '_> {
    // ---- listening -----------------------------------------------------

    /// The timer a definition describes. A text written as an expression
    /// (`${delay}`, `#{delay}`, FEEL `= delay`) is evaluated first and must
    /// give the ISO 8601 text.
    fn timer_spec(&self, view_of: u64, def: &TimerDef) -> Result<TimerSpec, String> {
        let (kind, text) =
            timer::definition_text(def).ok_or("the timer has no date, duration or cycle")?;
        let text = text.trim();
        let text = if text.starts_with("${") || text.starts_with("#{") || text.starts_with('=') {
            match self.value_of(view_of, text)? {
                Value::String(s) => s,
                other => return Err(format!("timer '{text}' gives {other}, not a text")),
            }
        } else {
            text.to_owned()
        };
        timer::parse(kind, &text).map_err(|e| e.to_string())
    }

    /// What a listener at `node` waits for; expressions are read with the
    /// variables `view_of` sees.
    pub fn node_wait(&self, view_of: u64, node: &Node) -> Result<Wait, String> {
        let trigger = match &node.kind {
            NodeKind::Task {
                task: TaskKind::Receive { message_ref },
                ..
            } => {
                let m = message_ref.clone().unwrap_or_else(|| implied_name(node));
                return self.message_wait(view_of, node, &m, None);
            }
            kind => kind.trigger().ok_or("nothing to wait for")?,
        };
        match trigger {
            Trigger::Timer { timer, .. } => {
                let spec = self.timer_spec(view_of, timer)?;
                let due = spec.first_due(self.now).ok_or("the timer never fires")?;
                Ok(Wait::Timer { due, fired: 0 })
            }
            Trigger::Message {
                message_ref,
                extras,
                ..
            } => {
                let m = message_ref.clone().unwrap_or_else(|| implied_name(node));
                self.message_wait(view_of, node, &m, Some(extras))
            }
            Trigger::Signal { signal_ref, .. } => {
                let s = signal_ref.clone().unwrap_or_else(|| implied_name(node));
                Ok(Wait::Signal {
                    name: self.g.signal_name(&s),
                })
            }
            other => Err(format!(
                "{} events are not supported here",
                other.element_name().unwrap_or("multiple")
            )),
        }
    }

    /// A message wait, with the correlation key (`correlationKey`, any
    /// namespace, on the node, its event definition or the message) read.
    fn message_wait(
        &self,
        view_of: u64,
        node: &Node,
        message_ref: &str,
        extras: Option<&Preserved>,
    ) -> Result<Wait, String> {
        let message = self.g.defs.messages.iter().find(|m| m.id == message_ref);
        let key = vendor_attr(&node.extras, "correlationKey")
            .or_else(|| extras.and_then(|p| vendor_attr(p, "correlationKey")))
            .or_else(|| message.and_then(|m| vendor_attr(&m.extras, "correlationKey")));
        let correlation = match key {
            None => None,
            Some(text) => Some(match self.value_of(view_of, text)? {
                Value::String(s) => s,
                v @ (Value::Number(_) | Value::Bool(_)) => v.to_string(),
                v => {
                    return Err(format!(
                        "correlation key '{text}' is {v}, not a string or number"
                    ));
                }
            }),
        };
        Ok(Wait::Message {
            name: self.g.message_name(message_ref),
            correlation,
        })
    }

    /// Makes the token listen as its node says (or stop at an incident).
    fn listen(&mut self, id: u64, view_of: u64, node: &Node, resume: Resume) -> bool {
        match self.node_wait(view_of, node) {
            Ok(wait) => {
                self.effects.extend(arm_effect(id, &wait));
                self.set_wait(id, wait);
                true
            }
            Err(message) => {
                self.incident(id, message, resume);
                false
            }
        }
    }

    /// A listener at an incident listens again.
    pub fn rearm(&mut self, id: u64) {
        let Some(t) = self.tok(id) else { return };
        let view_of = match t.attached {
            Some(Attached::Token(a)) => a,
            _ => id,
        };
        if let Some(node) = self.g.node(&t.node) {
            self.listen(id, view_of, node, Resume::Arm);
        }
    }

    /// Arms the timer, message and signal boundary events of an activity
    /// (error boundaries are matched when an error is thrown).
    pub fn arm_boundaries(&mut self, id: u64) {
        let Some(t) = self.tok(id) else { return };
        if t.instance.is_some() {
            return; // the multi-instance body carries the boundaries
        }
        let (scope, node_id) = (t.scope, t.node.clone());
        for b in self.g.boundaries(&node_id) {
            let NodeKind::Boundary { trigger, .. } = &b.kind else {
                continue;
            };
            if matches!(
                trigger,
                Trigger::Timer { .. } | Trigger::Message { .. } | Trigger::Signal { .. }
            ) {
                let l = self.spawn(scope, &b.id, Map::new(), Some(Attached::Token(id)));
                self.listen(l, id, b, Resume::Arm);
            }
        }
    }

    /// Arms the timer, message and signal starts of the event subprocesses
    /// of a scope's container.
    pub fn arm_event_subprocesses(&mut self, scope: u64, container: Option<&str>) {
        for esp in self.g.event_subprocesses(container) {
            for start in self.g.container_nodes(Some(&esp.id)) {
                let NodeKind::StartEvent { trigger, .. } = &start.kind else {
                    continue;
                };
                if matches!(
                    trigger,
                    Trigger::Timer { .. } | Trigger::Message { .. } | Trigger::Signal { .. }
                ) {
                    let l = self.spawn(scope, &start.id, Map::new(), Some(Attached::Scope(scope)));
                    self.listen(l, l, start, Resume::Arm);
                }
            }
        }
    }

    /// After a listener fired without interrupting: listen again (the next
    /// occurrence of a timer cycle, a new subscription) or go.
    fn keep_listening(&mut self, id: u64) {
        let Some(t) = self.tok(id) else { return };
        let view_of = match t.attached {
            Some(Attached::Token(a)) => a,
            _ => id,
        };
        match t.wait.clone() {
            Wait::Timer { due, fired } => {
                let trigger = self.g.node(&t.node).and_then(|n| n.kind.trigger());
                let next = match trigger {
                    Some(Trigger::Timer { timer, .. }) => self
                        .timer_spec(view_of, timer)
                        .ok()
                        .and_then(|s| s.next_due(due, fired.saturating_add(1))),
                    _ => None,
                };
                match next {
                    Some(due) => {
                        let wait = Wait::Timer {
                            due,
                            fired: fired.saturating_add(1),
                        };
                        self.effects.extend(arm_effect(id, &wait));
                        self.set_wait(id, wait);
                    }
                    None => {
                        self.take_token(id);
                    }
                }
            }
            wait => self.effects.extend(arm_effect(id, &wait)),
        }
    }

    // ---- catching ------------------------------------------------------

    /// An intermediate catch event: links pass, the others listen.
    pub fn catch_event(&mut self, id: u64, node: &Node, trigger: &Trigger) {
        if passes(trigger) {
            self.pass(id);
        } else {
            self.listen(id, id, node, Resume::Enter);
        }
    }

    /// The token waiting for a message of this name and correlation.
    pub fn message_subscriber(
        &self,
        name: &str,
        correlation: Option<&str>,
    ) -> Result<u64, RunError> {
        self.inst
            .tokens
            .iter()
            .find(|t| match &t.wait {
                Wait::Message {
                    name: n,
                    correlation: c,
                } => n == name && (c.is_none() || c.as_deref() == correlation),
                _ => false,
            })
            .map(|t| t.id)
            .ok_or_else(|| RunError::NoSubscriber(name.to_owned()))
    }

    /// Queues the signal for every token listening for it.
    pub fn deliver_signal(&mut self, name: &str, payload: &Value) {
        let ids: Vec<u64> = self
            .inst
            .tokens
            .iter()
            .filter(|t| matches!(&t.wait, Wait::Signal { name: n } if n == name))
            .map(|t| t.id)
            .collect();
        for token in ids {
            self.queue.push_back(Item::Trigger {
                token,
                payload: payload.clone(),
            });
        }
    }

    /// A listener's event happened.
    pub fn trigger(&mut self, id: u64, payload: Value) {
        let Some(t) = self.tok(id) else { return };
        if !matches!(
            t.wait,
            Wait::Timer { .. } | Wait::Message { .. } | Wait::Signal { .. }
        ) {
            return; // cancelled or moved on since it was queued
        }
        let Some(node) = self.g.node(&t.node) else {
            return;
        };
        match (&node.kind, t.attached) {
            (
                NodeKind::Boundary {
                    cancel_activity, ..
                },
                Some(Attached::Token(activity)),
            ) => self.boundary_fired(id, activity, *cancel_activity, payload),
            (NodeKind::StartEvent { interrupting, .. }, Some(Attached::Scope(scope))) => {
                let start = node.id.clone();
                if *interrupting {
                    self.take_token(id);
                    self.clear_scope(scope);
                } else {
                    self.keep_listening(id);
                }
                self.start_event_subprocess(scope, &start, payload);
            }
            (_, Some(Attached::Token(gateway))) => self.option_won(id, gateway, payload),
            _ => {
                self.set_wait(id, Wait::Ready);
                self.finish(id, payload);
            }
        }
    }

    fn boundary_fired(&mut self, id: u64, activity: u64, interrupting: bool, payload: Value) {
        let Some((scope, node_id)) = self.tok(id).map(|t| (t.scope, t.node.clone())) else {
            return;
        };
        if interrupting {
            self.take_token(id); // its subscription is spent
            self.cancel_token(activity);
        } else {
            self.keep_listening(id);
        }
        let t = self.spawn(scope, &node_id, Map::new(), None);
        self.record(t, &node_id, StepKind::Entered);
        self.set_wait(t, Wait::Ready);
        self.finish(t, payload);
    }

    /// One option of an event gateway happened: the others go.
    fn option_won(&mut self, id: u64, gateway: u64, payload: Value) {
        let Some(gw_node) = self.tok(gateway).map(|t| t.node.clone()) else {
            return;
        };
        let others: Vec<u64> = self
            .inst
            .tokens
            .iter()
            .filter(|t| t.attached == Some(Attached::Token(gateway)) && t.id != id)
            .map(|t| t.id)
            .collect();
        for o in others {
            self.cancel_token(o);
        }
        self.record(gateway, &gw_node, StepKind::Completed);
        self.take_token(gateway);
        let Some(t) = self.tok_mut(id) else { return };
        t.attached = None;
        t.wait = Wait::Ready;
        let node_id = t.node.clone();
        if let Some(f) = self
            .g
            .outgoing(&gw_node)
            .iter()
            .find(|f| f.target == node_id)
        {
            let flow = f.id.clone();
            self.record(id, &flow, StepKind::Taken);
        }
        self.record(id, &node_id, StepKind::Entered);
        self.finish(id, payload);
    }

    /// Waits on the events after an event gateway. An option that cannot
    /// be armed (a timer with no definition, as models drawn for
    /// interchange leave them) is left out while another can be armed:
    /// the gateway then waits on the others; when none can, it is an
    /// incident naming the first problem.
    pub fn event_gateway(&mut self, id: u64, node_id: &str) {
        let mut waits = Vec::new();
        let mut unarmed: Option<String> = None;
        for f in self.g.outgoing(node_id) {
            let Some(target) = self.g.node(&f.target).filter(|n| is_gateway_option(n)) else {
                let message = format!(
                    "'{}' after an event gateway is not a catch event or receive task",
                    f.target
                );
                self.incident(id, message, Resume::Enter);
                return;
            };
            match self.node_wait(id, target) {
                Ok(w) => waits.push((target.id.clone(), w)),
                Err(message) => {
                    unarmed.get_or_insert_with(|| format!("'{}': {message}", target.id));
                }
            }
        }
        if waits.is_empty() {
            let message =
                unarmed.unwrap_or_else(|| "an event gateway needs events after it".to_owned());
            self.incident(id, message, Resume::Enter);
            return;
        }
        let scope = self.tok(id).map_or(0, |t| t.scope);
        let options = waits.iter().map(|(n, _)| n.clone()).collect();
        for (target, wait) in waits {
            let l = self.spawn(scope, &target, Map::new(), Some(Attached::Token(id)));
            self.effects.extend(arm_effect(l, &wait));
            self.set_wait(l, wait);
        }
        self.set_wait(id, Wait::EventGateway { options });
    }

    // ---- throwing ------------------------------------------------------

    fn send_message(&mut self, id: u64, node: &Node, message_ref: Option<&str>) {
        self.effects.push(Effect::SendMessage {
            token: id,
            from_node: node.id.clone(),
            message_ref: message_ref.map(str::to_owned),
            message: message_ref.map(|m| self.g.message_name(m)),
            payload: Value::Object(self.view(id)),
        });
    }

    /// Broadcasts a signal: to this instance's listeners now, to the others
    /// through the service. Whether the signal was named.
    fn throw_signal(&mut self, id: u64, node: &Node, signal_ref: Option<&str>) -> bool {
        let Some(s) = signal_ref else {
            self.incident(id, "the signal event names no signal", Resume::Enter);
            return false;
        };
        let name = self.g.signal_name(s);
        self.effects.push(Effect::BroadcastSignal {
            from_node: node.id.clone(),
            name: name.clone(),
            payload: Value::Object(self.view(id)),
        });
        self.deliver_signal(&name, &Value::Null);
        true
    }

    /// An intermediate throw event.
    pub fn throw_event(&mut self, id: u64, node: &Node, result: &Trigger) {
        match result {
            Trigger::None => self.pass(id),
            Trigger::Message { message_ref, .. } => {
                self.send_message(id, node, message_ref.as_deref());
                self.pass(id);
            }
            Trigger::Signal { signal_ref, .. } => {
                if self.throw_signal(id, node, signal_ref.as_deref()) {
                    self.pass(id);
                }
            }
            Trigger::Link { name, .. } => {
                let target = name
                    .as_deref()
                    .and_then(|n| self.g.link_target(&node.id, n));
                match target {
                    Some(target) => {
                        self.record(id, &node.id, StepKind::Completed);
                        self.jump(id, &target.id);
                    }
                    None => self.incident(
                        id,
                        "no catch link event of this name in the scope",
                        Resume::Enter,
                    ),
                }
            }
            other => self.unsupported(id, other),
        }
    }

    fn unsupported(&mut self, id: u64, trigger: &Trigger) {
        let what = trigger
            .element_name()
            .unwrap_or("multiple event definitions");
        self.incident(id, format!("{what} is not supported"), Resume::Enter);
    }

    /// An end event: what it throws, then the token ends.
    pub fn end_event(&mut self, id: u64, node: &Node, result: &Trigger) {
        match result {
            Trigger::None => {}
            Trigger::Message { message_ref, .. } => {
                self.send_message(id, node, message_ref.as_deref())
            }
            Trigger::Signal { signal_ref, .. } => {
                if !self.throw_signal(id, node, signal_ref.as_deref()) {
                    return;
                }
            }
            Trigger::Terminate { .. } => {
                self.record(id, &node.id, StepKind::Completed);
                self.terminate(id);
                return;
            }
            Trigger::Error { error_ref, .. } => {
                let code = error_ref.as_deref().map(|e| self.g.error_code(e));
                let message = format!("error end event '{}'", node.id);
                let Some(scope) = self.tok(id).map(|t| t.scope) else {
                    return;
                };
                match self.find_catcher(scope, None, code.as_deref()) {
                    Some(c) => {
                        self.record(id, &node.id, StepKind::Completed);
                        self.take_token(id);
                        self.catch_error(c, code.as_deref(), &message);
                    }
                    None => {
                        let code = code.unwrap_or_else(|| "(no code)".into());
                        self.incident(
                            id,
                            format!("unhandled error '{code}' thrown by '{}'", node.id),
                            Resume::Enter,
                        );
                    }
                }
                return;
            }
            other => {
                self.unsupported(id, other);
                return;
            }
        }
        self.record(id, &node.id, StepKind::Completed);
        self.end_token(id);
    }

    /// A terminate end event ends its scope: the instance at the top, else
    /// the subprocess, which then completes.
    fn terminate(&mut self, id: u64) {
        let Some(t) = self.take_token(id) else { return };
        if t.scope == 0 {
            self.end_instance(InstanceStatus::Completed);
        } else {
            self.clear_scope(t.scope);
            self.check_scope(t.scope);
        }
    }

    /// Cancels every token of a scope, keeping the scope.
    fn clear_scope(&mut self, scope: u64) {
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
    }

    // ---- errors --------------------------------------------------------

    /// Throws a BPMN error from an activity token (its own boundaries are
    /// looked at first); whether something caught it.
    pub fn throw_from(&mut self, token: u64, code: Option<&str>, message: &str) -> bool {
        let Some(t) = self.tok(token) else {
            return false;
        };
        let at = t.instance.is_none().then_some(token);
        match self.find_catcher(t.scope, at, code) {
            Some(c) => {
                self.catch_error(c, code, message);
                true
            }
            None => false,
        }
    }

    /// Looks outward for a catcher: the activity's boundaries, then scope
    /// by scope the event subprocesses, then the owning activity's boundaries.
    fn find_catcher(
        &self,
        mut scope: u64,
        mut at: Option<u64>,
        code: Option<&str>,
    ) -> Option<Catcher> {
        // An error thrown inside an event subprocess goes past the event
        // subprocesses of its parent scope, so a handler never catches itself.
        let mut skip_event_subprocesses = false;
        loop {
            if let Some(a) = at
                && let Some(boundary) = self.error_boundary(a, code)
            {
                return Some(Catcher::Boundary {
                    activity: a,
                    boundary,
                });
            }
            let container = match self.scope(scope) {
                _ if skip_event_subprocesses => None,
                None => Some(None),
                Some(s) if matches!(s.kind, ScopeKind::SubProcess) => Some(Some(s.node.as_str())),
                Some(_) => None,
            };
            if let Some(container) = container
                && let Some(start) = self.error_start(container, code)
            {
                return Some(Catcher::EventSub { scope, start });
            }
            let s = self.scope(scope)?;
            skip_event_subprocesses = matches!(
                self.g.node(&s.node).map(|n| &n.kind),
                Some(NodeKind::SubProcess {
                    triggered_by_event: true,
                    ..
                })
            );
            at = self
                .tok(s.token)
                .filter(|t| t.instance.is_none())
                .map(|t| t.id);
            scope = s.parent;
        }
    }

    /// The error boundary of the activity that catches `code` (a matching
    /// code before a catch-all).
    fn error_boundary(&self, activity: u64, code: Option<&str>) -> Option<String> {
        let node = &self.tok(activity)?.node;
        let candidates = self
            .g
            .boundaries(node)
            .iter()
            .filter_map(|b| match &b.kind {
                NodeKind::Boundary {
                    trigger: Trigger::Error { error_ref, .. },
                    ..
                } => Some((b.id.clone(), error_ref.as_deref())),
                _ => None,
            });
        self.best_match(candidates, code)
    }

    /// The error start event of an event subprocess of the container that
    /// catches `code`.
    fn error_start(&self, container: Option<&str>, code: Option<&str>) -> Option<String> {
        let candidates = self
            .g
            .event_subprocesses(container)
            .into_iter()
            .flat_map(|esp| {
                self.g
                    .container_nodes(Some(&esp.id))
                    .iter()
                    .filter_map(|n| match &n.kind {
                        NodeKind::StartEvent {
                            trigger: Trigger::Error { error_ref, .. },
                            ..
                        } => Some((n.id.clone(), error_ref.as_deref())),
                        _ => None,
                    })
            });
        self.best_match(candidates, code)
    }

    fn best_match<'r>(
        &self,
        candidates: impl Iterator<Item = (String, Option<&'r str>)>,
        code: Option<&str>,
    ) -> Option<String> {
        let mut catch_all = None;
        for (id, error_ref) in candidates {
            match error_ref {
                None => {
                    catch_all.get_or_insert(id);
                }
                Some(r) if code == Some(self.g.error_code(r).as_str()) => return Some(id),
                Some(_) => {}
            }
        }
        catch_all
    }

    fn catch_error(&mut self, catcher: Catcher, code: Option<&str>, message: &str) {
        match catcher {
            Catcher::Boundary { activity, boundary } => {
                let Some(scope) = self.tok(activity).map(|t| t.scope) else {
                    return;
                };
                self.cancel_token(activity);
                let t = self.spawn(scope, &boundary, Map::new(), None);
                self.record(t, &boundary, StepKind::Entered);
                let output = self.error_output(&boundary, code, message);
                self.finish(t, output);
            }
            Catcher::EventSub { scope, start } => {
                self.clear_scope(scope);
                let output = self.error_output(&start, code, message);
                self.start_event_subprocess(scope, &start, output);
            }
        }
    }

    /// The variables a catching event sets (`errorCodeVariable`,
    /// `errorMessageVariable`, any namespace, as Camunda names them).
    fn error_output(&self, node: &str, code: Option<&str>, message: &str) -> Value {
        let mut out = Map::new();
        let node = self.g.node(node);
        let extras = node.and_then(|n| n.kind.trigger()).and_then(extras_of);
        for (attr, value) in [
            ("errorCodeVariable", code),
            ("errorMessageVariable", Some(message)),
        ] {
            let name = node
                .and_then(|n| vendor_attr(&n.extras, attr))
                .or_else(|| extras.and_then(|e| vendor_attr(e, attr)));
            if let (Some(name), Some(value)) = (name, value) {
                out.insert(name.to_owned(), Value::String(value.to_owned()));
            }
        }
        Value::Object(out)
    }

    /// Starts an event subprocess in `scope` at its start event `start`.
    fn start_event_subprocess(&mut self, scope: u64, start: &str, payload: Value) {
        let Some(esp) = self.g.entry(start).and_then(|e| e.container) else {
            return;
        };
        let owner = self.spawn(scope, esp, Map::new(), None);
        self.record(owner, esp, StepKind::Entered);
        let sid = self.alloc();
        self.inst.scopes.push(super::Scope {
            id: sid,
            parent: scope,
            token: owner,
            node: esp.to_owned(),
            locals: Map::new(),
            kind: ScopeKind::SubProcess,
        });
        self.set_wait(owner, Wait::SubProcess { scope: sid });
        self.arm_event_subprocesses(sid, Some(esp));
        let t = self.spawn(sid, start, Map::new(), None);
        self.write_output(t, start, payload);
        self.record(t, start, StepKind::Entered);
        self.pass(t);
    }
}

/// The message or signal a catch that names none waits for: its node's
/// name (words joined by single spaces), else its id. Models drawn for
/// interchange (MIWG C.1.0) leave the definition out where the label says it.
fn implied_name(node: &Node) -> String {
    node.name
        .as_deref()
        .map(crate::model::one_line)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| node.id.clone())
}
