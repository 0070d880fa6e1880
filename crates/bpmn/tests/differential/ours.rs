//! Our runner, driven the way the test's module documentation says.

use std::collections::{HashMap, VecDeque};

use coordinator_bpmn::Definitions;
use coordinator_bpmn::run::{self, Command, Effect, InstanceStatus, StepKind};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::{Case, Trace};

/// Work the driver owes the instance: a task, or a called process to run.
#[derive(Debug)]
enum Owed {
    /// A task handed out (`StartWork`).
    Task { token: u64, node: String },
    /// A called process to run (`CallProcess`).
    Call {
        token: u64,
        called: String,
        variables: Value,
    },
}

impl Owed {
    /// The token the work answers for.
    fn token(&self) -> u64 {
        match self {
            Self::Task { token, .. } | Self::Call { token, .. } => *token,
        }
    }
}

/// What one instance waits for from the driver.
#[derive(Debug, Default)]
struct Pending {
    /// Work, first come first served.
    work: VecDeque<Owed>,
    /// Timers: due time and token, in scheduling order.
    timers: Vec<(OffsetDateTime, u64)>,
}

impl Pending {
    /// Notes what the effects ask for.
    fn take(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::StartWork { token, node, .. } => {
                    self.work.push_back(Owed::Task { token, node });
                }
                Effect::CallProcess {
                    token,
                    called_element,
                    variables,
                    ..
                } => self.work.push_back(Owed::Call {
                    token,
                    called: called_element,
                    variables,
                }),
                Effect::CancelWork { token } | Effect::CancelProcess { token } => {
                    self.work.retain(|w| w.token() != token);
                }
                Effect::ScheduleTimer { token, due } => self.timers.push((due, token)),
                Effect::CancelTimer { token } => self.timers.retain(|t| t.1 != token),
                _ => {}
            }
        }
    }

    /// Removes and returns the earliest timer (the first scheduled on a tie).
    fn next_timer(&mut self) -> Option<(OffsetDateTime, u64)> {
        let earliest = (0..self.timers.len()).min_by_key(|&i| (self.timers[i].0, i))?;
        Some(self.timers.remove(earliest))
    }
}

/// Drives our runner through a case (the module documentation's driver).
struct Driver<'a> {
    /// The model.
    defs: &'a Definitions,
    /// Per task, its outputs in turn.
    outputs: HashMap<String, VecDeque<Value>>,
    /// Messages still to deliver.
    messages: VecDeque<String>,
    /// Tasks never completed.
    hold: Vec<&'static str>,
    /// The clock.
    now: OffsetDateTime,
    /// Every node completed, called processes' included, in order.
    completed: Vec<String>,
}

impl<'a> Driver<'a> {
    /// A driver for `case` on `defs`.
    fn new(defs: &'a Definitions, case: &Case) -> Self {
        let outputs = case
            .outputs
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let list = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
                (k.clone(), list.into())
            })
            .collect();
        Self {
            defs,
            outputs,
            messages: case.messages.iter().map(|m| m.to_string()).collect(),
            hold: case.hold.clone(),
            now: OffsetDateTime::from_unix_timestamp(1_735_722_000).expect("a valid time"),
            completed: Vec::new(),
        }
    }

    /// The next output of the task `node` (the last one repeats; none is null).
    fn output(&mut self, node: &str) -> Value {
        match self.outputs.get_mut(node) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap_or_default(),
            Some(queue) => queue.front().cloned().unwrap_or_default(),
            None => Value::Null,
        }
    }

    /// Runs `process` to its end (or until it is stuck); returns its status
    /// and final variables, or what went wrong (an incident included).
    fn run(
        &mut self,
        process: &str,
        start: Option<&str>,
        variables: Map<String, Value>,
    ) -> Result<(InstanceStatus, Map<String, Value>), String> {
        let (mut inst, effects) = run::start(self.defs, Some(process), start, variables, self.now)
            .map_err(|e| format!("start {process}: {e}"))?;
        let mut seen = 0;
        let mut pending = Pending::default();
        pending.take(effects);
        for _ in 0..1_000 {
            self.record(&inst.history, &mut seen);
            if inst.status != InstanceStatus::Running {
                break;
            }
            pending.work.retain(
                |w| !matches!(w, Owed::Task { node, .. } if self.hold.contains(&node.as_str())),
            );
            let command = if let Some(work) = pending.work.pop_front() {
                match work {
                    Owed::Task { token, node } => Command::Complete {
                        token,
                        output: self.output(&node),
                    },
                    Owed::Call {
                        token,
                        called,
                        variables,
                    } => {
                        let vars = variables.as_object().cloned().unwrap_or_default();
                        let (status, output) = self.run(&called, None, vars)?;
                        if status != InstanceStatus::Completed {
                            // Stuck (a held task): the call activity waits on.
                            continue;
                        }
                        Command::Complete {
                            token,
                            output: Value::Object(output),
                        }
                    }
                }
            } else if let Some(name) = self.messages.pop_front() {
                Command::Message {
                    name,
                    correlation: None,
                    payload: Value::Null,
                }
            } else if let Some((due, token)) = pending.next_timer() {
                self.now = self.now.max(due);
                Command::TimerDue { token }
            } else {
                break;
            };
            match run::apply(self.defs, &mut inst, command.clone(), self.now) {
                Ok(effects) => pending.take(effects),
                // Nobody listens (yet): the message is lost, as in Spiff.
                Err(run::RunError::NoSubscriber(_)) => {}
                Err(e) => return Err(format!("{command:?}: {e}")),
            }
        }
        self.record(&inst.history, &mut seen);
        if let Some((_, node, message)) = inst.incidents().first() {
            return Err(format!(
                "{process} stopped at an incident at {node}: {message}"
            ));
        }
        Ok((inst.status, inst.variables))
    }

    /// Notes the completions the history gained since `seen`.
    fn record(&mut self, history: &[run::Step], seen: &mut usize) {
        for step in &history[*seen..] {
            if step.what == StepKind::Completed {
                self.completed.push(step.element.clone());
            }
        }
        *seen = history.len();
    }
}

/// Our run of a case: every node completed, and whether it finished.
pub fn run_ours(defs: &Definitions, case: &Case) -> Result<Trace, String> {
    let mut driver = Driver::new(defs, case);
    let variables = case.variables.as_object().cloned().unwrap_or_default();
    let (status, _) = driver.run(case.process, case.start, variables)?;
    Ok(Trace {
        completed: driver.completed,
        finished: status == InstanceStatus::Completed,
    })
}
