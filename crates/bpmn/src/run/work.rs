//! Activities: tasks handed to agents and people, script assignments,
//! embedded subprocesses and call activities.

use serde_json::{Map, Value};

use super::engine::{Item, Run};
use super::{Effect, FormField, Resume, Scope, ScopeKind, Wait, Work};
use crate::expr;
use crate::model::{Lane, Node, NodeKind, TaskKind};

/// Runs a script made of assignments `name = expression`, one a line (a
/// trailing `;` and blank or `#`/`//` comment lines allowed), each
/// expression in the condition language and seeing the assignments before
/// it. Anything else is refused, never run: the runner makes it an incident.
pub(super) fn run_script(
    script: &str,
    vars: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut vars = vars.clone();
    let mut out = Map::new();
    for (n, raw) in script.lines().enumerate() {
        let line = raw.trim();
        let line = line.strip_suffix(';').unwrap_or(line).trim_end();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let (name, rhs) = split_assignment(line).ok_or_else(|| {
            format!(
                "script line {}: only assignments 'name = expression' in the condition language are run",
                n + 1
            )
        })?;
        let e = expr::parse(rhs).map_err(|e| format!("script line {}: {e}", n + 1))?;
        let v = expr::evaluate(&e, &Value::Object(vars.clone()))
            .map_err(|e| format!("script line {}: {e}", n + 1))?;
        vars.insert(name.to_owned(), v.clone());
        out.insert(name.to_owned(), v);
    }
    Ok(out)
}

/// `name = rest` (not `==`): the name and the expression text.
fn split_assignment(line: &str) -> Option<(&str, &str)> {
    let end = line
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let name = &line[..end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rhs = line[end..].trim_start().strip_prefix('=')?;
    if rhs.starts_with('=') || rhs.trim().is_empty() {
        return None;
    }
    Some((name, rhs.trim()))
}

/// The fields of a user task's form: `formField` extension elements (any
/// namespace) with their `id`, `label` and `type`.
fn form_fields(node: &Node) -> Vec<FormField> {
    let mut out = Vec::new();
    for el in node.extras.elements() {
        el.walk(&mut |e| {
            if e.name == "formField"
                && let Some(id) = e.attr("id")
            {
                out.push(FormField {
                    id: id.to_owned(),
                    label: e.attr("label").map(str::to_owned),
                    kind: e.attr("type").map(str::to_owned),
                });
            }
        });
    }
    out
}

impl Run<'_, '_> {
    /// Who works a task: its lane (name, else id) and the lane's role
    /// (its `coordinator:role`, else its name).
    fn work_for(&self, node: &Node, task: &TaskKind) -> Work {
        let lane = self.g.lane_of(&node.id);
        let lane_name = lane.map(|l| l.name.clone().unwrap_or_else(|| l.id.clone()));
        let role = lane.and_then(Lane::role);
        let human = |kind: &str| Work::Human {
            lane: lane_name.clone(),
            role: role.clone(),
            task_kind: kind.to_owned(),
            form_fields: form_fields(node),
        };
        let agent = |kind: &str| Work::Agent {
            lane: lane_name.clone(),
            role: role.clone(),
            task_kind: kind.to_owned(),
        };
        match task {
            TaskKind::User => human("user"),
            TaskKind::Manual => human("manual"),
            TaskKind::Service => agent("service"),
            TaskKind::Send { .. } => agent("send"),
            TaskKind::BusinessRule => agent("business_rule"),
            TaskKind::Script { .. } => agent("script"),
            TaskKind::Task | TaskKind::Receive { .. } => agent("task"),
        }
    }

    /// A task: a script runs, a receive task listens, the others are handed out.
    pub fn start_task(&mut self, id: u64, node: &Node, task: &TaskKind) {
        match task {
            TaskKind::Script { script, .. } => {
                let text = script.as_deref().unwrap_or("");
                match run_script(text, &self.view(id)) {
                    Ok(assigned) => self.finish(id, Value::Object(assigned)),
                    Err(message) => self.incident(id, message, Resume::Enter),
                }
            }
            TaskKind::Receive { .. } => match self.node_wait(id, node) {
                Ok(wait) => {
                    if let Wait::Message { name, correlation } = &wait {
                        self.effects.push(Effect::Subscribe {
                            token: id,
                            message: name.clone(),
                            correlation: correlation.clone(),
                        });
                    }
                    self.set_wait(id, wait);
                    self.arm_boundaries(id);
                }
                Err(message) => self.incident(id, message, Resume::Enter),
            },
            _ => {
                self.effects.push(Effect::StartWork {
                    token: id,
                    node: node.id.clone(),
                    name: node.name.clone(),
                    documentation: node.documentation.clone(),
                    work: self.work_for(node, task),
                    inputs: Value::Object(self.view(id)),
                });
                self.set_wait(id, Wait::Work);
                self.arm_boundaries(id);
            }
        }
    }

    /// An embedded subprocess: a scope of its own, started at its start events.
    pub fn start_subprocess(&mut self, id: u64, node: &Node) {
        let starts = self.g.start_nodes(Some(&node.id));
        if starts.is_empty() {
            // Nothing but event subprocesses (or nothing at all): done at once.
            let idle = self.g.container_nodes(Some(&node.id)).iter().all(|n| {
                matches!(
                    n.kind,
                    NodeKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                )
            });
            if idle {
                // A multi-instance instance's result is an object like the others.
                let inner = self.tok(id).is_some_and(|t| t.instance.is_some());
                let output = if inner {
                    Value::Object(Map::new())
                } else {
                    Value::Null
                };
                self.finish(id, output);
            } else {
                self.incident(id, "the subprocess has no none start event", Resume::Enter);
            }
            return;
        }
        let Some(parent) = self.tok(id).map(|t| t.scope) else {
            return;
        };
        let sid = self.alloc();
        self.inst.scopes.push(Scope {
            id: sid,
            parent,
            token: id,
            node: node.id.clone(),
            locals: Map::new(),
            kind: ScopeKind::SubProcess,
        });
        self.set_wait(id, Wait::SubProcess { scope: sid });
        self.arm_boundaries(id);
        self.arm_event_subprocesses(sid, Some(&node.id));
        for s in starts {
            let t = self.spawn(sid, &s.id, Map::new(), None);
            self.queue.push_back(Item::Enter {
                token: t,
                via: None,
            });
        }
    }

    /// A call activity: the service starts the called process.
    pub fn call(&mut self, id: u64, node: &Node, called_element: Option<&str>) {
        let Some(called) = called_element.map(str::trim).filter(|c| !c.is_empty()) else {
            self.incident(id, "the call activity names no process", Resume::Enter);
            return;
        };
        self.effects.push(Effect::CallProcess {
            token: id,
            node: node.id.clone(),
            called_element: called.to_owned(),
            variables: Value::Object(self.view(id)),
        });
        self.set_wait(id, Wait::Called);
        self.arm_boundaries(id);
    }
}
