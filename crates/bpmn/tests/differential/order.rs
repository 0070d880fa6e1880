//! The partial order the runs are compared by (the rule is in the test's
//! module documentation).

use std::collections::{HashMap, HashSet};

use coordinator_bpmn::{Definitions, GatewayKind, NodeKind, Trigger};

/// Whether the node is a timer cycle event (see the module documentation).
fn is_cycle_timer(kind: &NodeKind) -> bool {
    matches!(kind.trigger(), Some(Trigger::Timer { timer, .. }) if timer.cycle.is_some())
}

/// What the comparison needs from the model: which nodes it compares, each
/// node's enclosing activities and the flow graph.
#[derive(Debug, Default)]
pub struct Order {
    /// The compared nodes: activities and events.
    pub compared: HashSet<String>,
    /// Per node, the activities around it (subprocesses, call activities), outermost first.
    enclosing: HashMap<String, Vec<String>>,
    /// Per node, the targets of its outgoing flows (and its boundary events).
    next: HashMap<String, Vec<String>>,
    /// The forks: each fork and the targets of its outgoing flows.
    forks: Vec<(String, Vec<String>)>,
}

impl Order {
    /// The facts of `process` and of the processes it calls, in `defs`.
    pub fn of(defs: &Definitions, process: &str) -> Self {
        let mut order = Self::default();
        order.add_process(defs, process, &[]);
        order
    }

    /// Adds a process whose nodes sit inside the activities `around`.
    fn add_process(&mut self, defs: &Definitions, process: &str, around: &[String]) {
        let Some(p) = defs.process(process) else {
            return;
        };
        for at in p.all_nodes() {
            let node = at.node;
            let mut enclosing = around.to_vec();
            enclosing.extend(at.path.iter().map(|s| s.to_string()));
            if (node.is_activity() || node.is_event()) && !is_cycle_timer(&node.kind) {
                self.compared.insert(node.id.clone());
            }
            let targets: Vec<String> = at
                .scope
                .outgoing(&node.id)
                .iter()
                .map(|f| f.target.clone())
                .collect();
            let choice = matches!(
                node.gateway(),
                Some(GatewayKind::Exclusive | GatewayKind::EventBased)
            );
            if targets.len() > 1 && !choice {
                self.forks.push((node.id.clone(), targets.clone()));
            }
            self.next
                .entry(node.id.clone())
                .or_default()
                .extend(targets);
            if let NodeKind::Boundary { attached_to, .. } = &node.kind {
                self.next
                    .entry(attached_to.clone())
                    .or_default()
                    .push(node.id.clone());
            }
            if let NodeKind::CallActivity {
                called_element: Some(called),
                ..
            } = &node.kind
            {
                let mut inside = enclosing.clone();
                inside.push(node.id.clone());
                if called != process && !around.contains(called) {
                    self.add_process(defs, called, &inside);
                }
            }
            self.enclosing.insert(node.id.clone(), enclosing);
        }
    }

    /// Whether a path of one flow or more leads from `from` to `to`
    /// without passing through `avoid`.
    fn reaches_avoiding(&self, from: &str, to: &str, avoid: &str) -> bool {
        let mut seen = HashSet::new();
        let mut todo: Vec<&str> = vec![from];
        while let Some(at) = todo.pop() {
            for next in self.next.get(at).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if next != avoid && seen.insert(next.as_str()) {
                    todo.push(next);
                }
            }
        }
        false
    }

    /// Whether `a` and `b` may complete in either order (the module's rule).
    fn independent(&self, a: &str, b: &str) -> bool {
        let chain = |id: &str| {
            let mut c = self.enclosing.get(id).cloned().unwrap_or_default();
            c.push(id.to_owned());
            c
        };
        let (ca, cb) = (chain(a), chain(b));
        let common = ca.iter().zip(&cb).take_while(|(x, y)| x == y).count();
        if common == ca.len() || common == cb.len() {
            return false;
        }
        let (x, y) = (ca[common].as_str(), cb[common].as_str());
        self.forks.iter().any(|(fork, targets)| {
            let leads =
                |start: &str, to: &str| start == to || self.reaches_avoiding(start, to, fork);
            let apart = !self.reaches_avoiding(x, y, fork) && !self.reaches_avoiding(y, x, fork);
            apart
                && targets.iter().enumerate().any(|(i, t1)| {
                    leads(t1, x)
                        && targets
                            .iter()
                            .enumerate()
                            .any(|(j, t2)| i != j && leads(t2, y))
                })
        })
    }

    /// The trace's compared nodes only.
    pub fn filter(&self, ids: impl IntoIterator<Item = String>) -> Vec<String> {
        ids.into_iter()
            .filter(|id| self.compared.contains(id))
            .collect()
    }

    /// Checks that two runs completed the same nodes in equivalent orders.
    pub fn compare(&self, ours: &[String], theirs: &[String]) -> Result<(), String> {
        let sorted = |t: &[String]| {
            let mut s = t.to_vec();
            s.sort();
            s
        };
        if sorted(ours) != sorted(theirs) {
            let mut only_theirs = sorted(theirs);
            let only_ours: Vec<String> = sorted(ours)
                .into_iter()
                .filter(|id| match only_theirs.iter().position(|t| t == id) {
                    Some(j) => {
                        only_theirs.remove(j);
                        false
                    }
                    None => true,
                })
                .collect();
            return Err(format!(
                "different completions: only ours {only_ours:?}, only Spiff's {only_theirs:?}"
            ));
        }
        let numbered = |t: &[String]| {
            let mut count: HashMap<String, usize> = HashMap::new();
            t.iter()
                .map(|id| {
                    let n = count.entry(id.clone()).or_default();
                    *n += 1;
                    (id.clone(), *n - 1)
                })
                .collect::<Vec<_>>()
        };
        let ours = numbered(ours);
        let position: HashMap<(String, usize), usize> = numbered(theirs)
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        for (i, a) in ours.iter().enumerate() {
            for b in &ours[i + 1..] {
                if a.0 != b.0 && !self.independent(&a.0, &b.0) && position[a] > position[b] {
                    return Err(format!(
                        "{}#{} completes before {}#{} in our run, after it in SpiffWorkflow's, and they are ordered",
                        a.0, a.1, b.0, b.1
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Order;
    use crate::read_model;
    use coordinator_bpmn::import;

    /// The order facts of a model under `tests/differential`.
    fn order_of(file: &str, process: &str) -> Order {
        let defs = import(&read_model(&format!("differential/{file}"))).expect("the model imports");
        Order::of(&defs, process)
    }

    /// Ids as owned strings.
    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Parallel branches may interleave in any order, nested scopes too.
    #[test]
    fn comparator_accepts_interleaved_branches() {
        let order = order_of("parallel.bpmn", "parallel");
        let ours = ids(&[
            "start", "prepare", "pack", "bill", "notify", "ship", "close", "end",
        ]);
        let theirs = ids(&[
            "start", "prepare", "notify", "pack", "ship", "bill", "close", "end",
        ]);
        assert_eq!(order.compare(&ours, &theirs), Ok(()));
        let order = order_of("subprocess.bpmn", "subprocess");
        let ours = ids(&[
            "assess",
            "handle_start",
            "log",
            "inspect",
            "handle_end",
            "handle",
            "report",
        ]);
        let theirs = ids(&[
            "assess",
            "handle_start",
            "inspect",
            "handle_end",
            "handle",
            "log",
            "report",
        ]);
        assert_eq!(order.compare(&ours, &theirs), Ok(()));
        let order = order_of("loop.bpmn", "loop");
        let ours = ids(&["draft", "test", "decide", "test", "draft", "decide"]);
        let theirs = ids(&["test", "draft", "decide", "draft", "test", "decide"]);
        assert_eq!(order.compare(&ours, &theirs), Ok(()));
    }

    /// The comparator fails on a reordered sequence, a branch's own order, a
    /// join overtaken, a subprocess overtaken by its content, and on missing
    /// or extra completions.
    #[test]
    fn comparator_rejects_differences() {
        let order = order_of("sequence.bpmn", "sequence");
        let ours = ids(&[
            "start", "draft", "review", "count", "sign", "archive", "end",
        ]);
        let swapped = ids(&[
            "start", "review", "draft", "count", "sign", "archive", "end",
        ]);
        assert!(order.compare(&ours, &swapped).is_err());
        assert!(order.compare(&ours, &ours[..6]).is_err());
        let order = order_of("parallel.bpmn", "parallel");
        let ours = ids(&["prepare", "pack", "bill", "notify", "ship", "close"]);
        for theirs in [
            ids(&["prepare", "ship", "bill", "notify", "pack", "close"]),
            ids(&["prepare", "pack", "bill", "close", "ship", "notify"]),
            ids(&[
                "prepare", "pack", "bill", "notify", "ship", "close", "close",
            ]),
            ids(&["pack", "prepare", "bill", "notify", "ship", "close"]),
        ] {
            let verdict = order.compare(&ours, &theirs);
            assert!(verdict.is_err(), "{theirs:?} passed");
        }
        let order = order_of("subprocess.bpmn", "subprocess");
        let ours = ids(&["handle_start", "inspect", "handle_end", "handle", "log"]);
        let theirs = ids(&["handle_start", "inspect", "handle", "handle_end", "log"]);
        assert!(order.compare(&ours, &theirs).is_err());
        let order = order_of("loop.bpmn", "loop");
        let ours = ids(&["draft", "test", "decide", "draft", "test", "decide"]);
        let theirs = ids(&["draft", "test", "draft", "decide", "test", "decide"]);
        assert!(order.compare(&ours, &theirs).is_err());
    }
}
