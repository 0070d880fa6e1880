//! Multi-instance activities: one instance per item of a collection or per
//! count of a cardinality, all at once or one after the other, collected
//! into `<node id>_results`; a completion condition may end them early.

use serde_json::{Map, Value};

use super::engine::{Item, Run};
use super::{MultiState, Resume, Scope, ScopeKind, StepKind, Wait};
use crate::expr;
use crate::model::{Loop, Node, Preserved};

/// The most instances one multi-instance activity may have.
pub const MAX_INSTANCES: u64 = 10_000;

/// The variable holding an instance's index, from 0 (Camunda's name).
const LOOP_COUNTER: &str = "loopCounter";

/// The standard element variable: the `inputDataItem`'s name, else its id
/// (SpiffWorkflow's way; Camunda uses `elementVariable`).
fn input_data_item(extras: &Preserved) -> Option<String> {
    let item = extras
        .elements()
        .find(|e| e.bpmn_name() == Some("inputDataItem"))?;
    item.attr("name").or_else(|| item.id()).map(str::to_owned)
}

impl Run<'_, '_> {
    /// Enters an activity with loop characteristics: its body token waits
    /// for the instances in a scope of their own.
    pub fn begin_loop(&mut self, id: u64, node: &Node, l: &Loop) {
        self.record(id, &node.id, StepKind::Entered);
        let Loop::MultiInstance {
            sequential,
            collection,
            loop_data_input_ref,
            cardinality,
            ..
        } = l
        else {
            self.incident(id, "standard loops are not supported", Resume::Enter);
            return;
        };
        let source = collection.as_deref().or(loop_data_input_ref.as_deref());
        let (items, total) = match self.instances(id, source, cardinality.as_deref()) {
            Ok(found) => found,
            Err(message) => {
                self.incident(id, message, Resume::Enter);
                return;
            }
        };
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
            kind: ScopeKind::MultiInstance(MultiState {
                sequential: *sequential,
                items,
                total,
                started: 0,
                completed: 0,
                results: vec![Value::Null; usize::try_from(total).unwrap_or(0)],
            }),
        });
        self.set_wait(id, Wait::MultiInstance { scope: sid });
        self.arm_boundaries(id);
        if total == 0 {
            self.close_loop(sid, None);
            return;
        }
        let first = if *sequential { 1 } else { total };
        for i in 0..first {
            self.start_instance(sid, i);
        }
    }

    /// The items (for a collection) and the number of instances.
    fn instances(
        &self,
        id: u64,
        collection: Option<&str>,
        cardinality: Option<&str>,
    ) -> Result<(Option<Vec<Value>>, u64), String> {
        let (items, total) = match (
            collection.filter(|c| !c.trim().is_empty()),
            cardinality.filter(|c| !c.trim().is_empty()),
        ) {
            (Some(text), _) => match self.value_of(id, text)? {
                Value::Array(items) => {
                    let n = items.len() as u64;
                    (Some(items), n)
                }
                other => return Err(format!("collection '{text}' is not a list: {other}")),
            },
            (None, Some(text)) => {
                let v = self.value_of(id, text)?;
                let n = v
                    .as_u64()
                    .or_else(|| {
                        v.as_f64()
                            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                            .map(|f| f as u64)
                    })
                    .ok_or_else(|| {
                        format!("cardinality '{text}' is not a whole number ≥ 0: {v}")
                    })?;
                (None, n)
            }
            (None, None) => {
                return Err("a multi-instance activity needs a collection or a cardinality".into());
            }
        };
        if total > MAX_INSTANCES {
            return Err(format!(
                "{total} instances exceed the limit of {MAX_INSTANCES}"
            ));
        }
        Ok((items, total))
    }

    fn multi_state(&mut self, sid: u64) -> Option<&mut MultiState> {
        match &mut self.scope_mut(sid)?.kind {
            ScopeKind::MultiInstance(m) => Some(m),
            ScopeKind::SubProcess => None,
        }
    }

    /// Starts instance `i`: a token at the activity with `loopCounter` and
    /// the element variable.
    fn start_instance(&mut self, sid: u64, i: u64) {
        let Some(s) = self.scope(sid) else { return };
        let node_id = s.node.clone();
        let item = match &s.kind {
            ScopeKind::MultiInstance(m) => m
                .items
                .as_ref()
                .and_then(|items| items.get(usize::try_from(i).ok()?).cloned()),
            ScopeKind::SubProcess => None,
        };
        let element = match self
            .g
            .node(&node_id)
            .and_then(|n| n.kind.loop_characteristics())
        {
            Some(Loop::MultiInstance {
                element_variable,
                extras,
                ..
            }) => element_variable.clone().or_else(|| input_data_item(extras)),
            _ => None,
        };
        let mut locals = Map::new();
        locals.insert(LOOP_COUNTER.into(), Value::from(i));
        if let (Some(name), Some(item)) = (element.filter(|e| !e.is_empty()), item) {
            locals.insert(name, item);
        }
        let t = self.spawn(sid, &node_id, locals, None);
        if let Some(tok) = self.tok_mut(t) {
            tok.instance = Some(i);
        }
        if let Some(m) = self.multi_state(sid) {
            m.started += 1;
        }
        self.queue.push_back(Item::Enter {
            token: t,
            via: None,
        });
    }

    /// Instance `counter` finished with `output`: collect it, then end the
    /// loop early, start the next sequential instance, or wait.
    pub fn instance_done(&mut self, sid: u64, counter: u64, output: Value) {
        let Some(m) = self.multi_state(sid) else {
            return;
        };
        if let Some(slot) = usize::try_from(counter)
            .ok()
            .and_then(|i| m.results.get_mut(i))
        {
            *slot = output.clone();
        }
        m.completed += 1;
        let (total, started, completed, sequential) =
            (m.total, m.started, m.completed, m.sequential);
        let Some(s) = self.scope(sid) else { return };
        let (owner, node_id) = (s.token, s.node.clone());
        let condition = match self
            .g
            .node(&node_id)
            .and_then(|n| n.kind.loop_characteristics())
        {
            Some(Loop::MultiInstance {
                completion_condition: Some(c),
                ..
            }) if !c.trim().is_empty() => Some(c.clone()),
            _ => None,
        };
        let early = match condition {
            None => false,
            Some(text) => {
                let mut vars = self.view(owner);
                if let Value::Object(out) = &output {
                    vars.extend(out.clone());
                }
                vars.insert("nrOfInstances".into(), Value::from(total));
                vars.insert("nrOfCompletedInstances".into(), Value::from(completed));
                vars.insert(
                    "nrOfActiveInstances".into(),
                    Value::from(started.saturating_sub(completed)),
                );
                vars.insert(LOOP_COUNTER.into(), Value::from(counter));
                let holds = expr::parse(&text)
                    .and_then(|e| expr::condition(&e, &Value::Object(vars)))
                    .map_err(|e| format!("completion condition '{text}': {e}"));
                match holds {
                    Ok(h) => h,
                    Err(message) => {
                        self.close_loop(sid, Some(message));
                        return;
                    }
                }
            }
        };
        if early || completed >= total {
            self.close_loop(sid, None);
        } else if sequential && started < total {
            self.start_instance(sid, started);
        }
    }

    /// Ends the loop: instances still running are cancelled, the results
    /// stored, and the body completes (or stops at `failure`).
    fn close_loop(&mut self, sid: u64, failure: Option<String>) {
        let Some(s) = self.scope(sid) else { return };
        let (owner, node_id) = (s.token, s.node.clone());
        let results = match &s.kind {
            ScopeKind::MultiInstance(m) => m.results.clone(),
            ScopeKind::SubProcess => Vec::new(),
        };
        self.cancel_scope(sid);
        let mut output = Map::new();
        output.insert(format!("{node_id}_results"), Value::Array(results));
        self.set_wait(owner, Wait::Ready);
        match failure {
            None => self.finish(owner, Value::Object(output)),
            Some(message) => {
                self.write_output(owner, &node_id, Value::Object(output));
                self.disarm(owner);
                self.record(owner, &node_id, StepKind::Completed);
                self.incident(owner, message, Resume::Leave);
            }
        }
    }
}
