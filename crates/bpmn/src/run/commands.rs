//! Commands from outside: checked against the state first, so that a
//! command that does not fit is an error and changes nothing.

use serde_json::Value;

use super::engine::{Item, Run};
use super::{Command, Effect, InstanceStatus, Resume, RunError, Token, Wait};
use crate::model::{NodeKind, TaskKind};

impl Run<'_, '_> {
    /// Checks the command against the state, then carries it out.
    pub(super) fn command(&mut self, cmd: Command) -> Result<(), RunError> {
        let status = self.inst.status;
        let fixing = matches!(
            cmd,
            Command::SetVariables { .. } | Command::Retry { .. } | Command::Cancel
        );
        if status != InstanceStatus::Running && !(fixing && status == InstanceStatus::Failed) {
            return Err(RunError::NotRunning(status));
        }
        match cmd {
            Command::Complete { token, output } => {
                let wait =
                    self.waiting(token, "work", |w| matches!(w, Wait::Work | Wait::Called))?;
                self.complete(token, wait, output);
            }
            Command::Fail {
                token,
                error_code,
                message,
            } => {
                self.waiting(token, "work", |w| matches!(w, Wait::Work | Wait::Called))?;
                self.set_wait(token, Wait::Ready);
                if !self.throw_from(token, error_code.as_deref(), &message) {
                    let text = match error_code {
                        Some(code) => format!("unhandled error '{code}': {message}"),
                        None => format!("unhandled failure: {message}"),
                    };
                    self.incident(token, text, Resume::Enter);
                }
            }
            Command::TimerDue { token } => {
                let wait = self.waiting(token, "a timer", |w| matches!(w, Wait::Timer { .. }))?;
                if let Wait::Timer { due, .. } = wait
                    && due > self.now
                {
                    return Err(RunError::NotDue {
                        token,
                        due: due.to_string(),
                    });
                }
                self.queue.push_back(Item::Trigger {
                    token,
                    payload: Value::Null,
                });
            }
            Command::Message {
                name,
                correlation,
                payload,
            } => {
                let token = self.message_subscriber(&name, correlation.as_deref())?;
                self.queue.push_back(Item::Trigger { token, payload });
            }
            Command::Signal { name, payload } => self.deliver_signal(&name, &payload),
            Command::SetVariables { variables } => {
                self.inst.variables.extend(variables);
                self.inst.status = InstanceStatus::Running;
            }
            Command::Retry { token } => {
                let wait =
                    self.waiting(token, "a person", |w| matches!(w, Wait::Incident { .. }))?;
                self.inst.status = InstanceStatus::Running;
                if let Wait::Incident { resume, .. } = wait {
                    self.retry(token, resume);
                }
            }
            Command::Cancel => self.end_instance(InstanceStatus::Terminated),
        }
        Ok(())
    }

    /// The token's wait, if `ok` accepts it.
    fn waiting(
        &self,
        token: u64,
        wanted: &'static str,
        ok: impl Fn(&Wait) -> bool,
    ) -> Result<Wait, RunError> {
        let t = self.tok(token).ok_or(RunError::UnknownToken(token))?;
        if ok(&t.wait) {
            Ok(t.wait.clone())
        } else {
            Err(RunError::NotWaiting {
                token,
                waits: t.wait.describe().to_owned(),
                wanted,
            })
        }
    }

    fn complete(&mut self, id: u64, wait: Wait, output: Value) {
        let Some(node) = self.tok(id).and_then(|t| self.g.node(&t.node)) else {
            return;
        };
        self.set_wait(id, Wait::Ready);
        if wait == Wait::Work
            && let NodeKind::Task {
                task: TaskKind::Send { message_ref },
                ..
            } = &node.kind
        {
            self.effects.push(Effect::SendMessage {
                token: id,
                from_node: node.id.clone(),
                message_ref: message_ref.clone(),
                message: message_ref.as_deref().map(|m| self.g.message_name(m)),
                payload: output.clone(),
            });
        }
        self.finish(id, output);
    }

    fn retry(&mut self, id: u64, resume: Resume) {
        match resume {
            Resume::Enter => {
                // A fresh token, so that answers meant for the failed attempt
                // cannot reach the new one; entering arms its listeners anew.
                self.disarm(id);
                let Some(old) = self.take_token(id) else {
                    return;
                };
                let new = self.alloc();
                self.inst.tokens.push(Token {
                    id: new,
                    wait: Wait::Ready,
                    ..old
                });
                self.queue.push_back(Item::Enter {
                    token: new,
                    via: None,
                });
            }
            Resume::Leave => {
                self.set_wait(id, Wait::Ready);
                self.leave(id);
            }
            Resume::Arm => self.rearm(id),
        }
    }
}
