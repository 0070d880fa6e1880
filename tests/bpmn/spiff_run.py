"""Runs one BPMN process with SpiffWorkflow and prints, as JSON, every flow
node it completed, in completion order: the reference the differential test
(crates/bpmn/tests/differential.rs) compares the coordinator's token
semantics with.

usage: spiff_run.py FILE PROCESS_ID VARIABLES_JSON [DRIVER_JSON]

FILE must already be in Spiff's dialect (conditions and timer expressions in
Python, isExecutable="true"); the test writes such a copy. DRIVER_JSON says
how to drive the run, all keys optional:

    {"outputs": {"task id": [output, ...]},   # per task, in turn; the last repeats
     "messages": ["name", ...],               # delivered one at a time
     "hold": ["task id", ...],                # never completed
     "start_message": "name"}                 # for a message start event

The driver, the same as the Rust side's:
1. run everything that needs no input (engine steps);
2. complete the first task waiting for outside work (user, manual, none
   tasks READY; service tasks STARTED) that is not held, with its next
   output: an object's keys merge into the task's data, another value is
   stored under the task id, null sets nothing; then go to 1;
3. else deliver the next message, if any; then go to 1;
4. else move the clock to the earliest pending timer and fire it; then 1;
5. else stop.

Prints {"completed": [{"id", "type"}...], "finished": bool}: every task
that has a BPMN id (events and gateways included; the test picks what to
compare), in the order its state became COMPLETED; and "error" when the
engine raised (what ran until then is still listed).
"""
import json
import sys
from datetime import datetime, timedelta, timezone

from SpiffWorkflow.bpmn.parser import BpmnParser
from SpiffWorkflow.bpmn.specs.event_definitions.message import MessageEventDefinition
from SpiffWorkflow.bpmn.specs.event_definitions import timer as timer_module
from SpiffWorkflow.bpmn.util import BpmnEvent
from SpiffWorkflow.bpmn.workflow import BpmnWorkflow
from SpiffWorkflow.task import Task
from SpiffWorkflow.util.task import TaskState

# A clock of our own, so timers fire when the driver says, never by waiting.
CLOCK = [datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)]


class FakeDatetime(datetime):
    """datetime whose now() is CLOCK (the timer module's only clock)."""

    @classmethod
    def now(cls, tz=None):
        """The driver's clock, in `tz` if given."""
        now = CLOCK[0]
        return now if tz is None else now.astimezone(tz)


timer_module.datetime = FakeDatetime

# Every task that becomes COMPLETED, in order (the states' timestamps may tie).
COMPLETED = []
_set_state = Task._set_state


def _record_state(task, value):
    """Task._set_state, noting each task the moment it completes."""
    if value == TaskState.COMPLETED and task.state != TaskState.COMPLETED:
        COMPLETED.append(task)
    _set_state(task, value)


Task._set_state = _record_state


def work_waiting(wf, hold):
    """Tasks waiting for outside work, held ones left out: manual ones
    READY, service ones STARTED."""
    ready = wf.get_tasks(state=TaskState.READY, manual=True)
    started = [
        t for t in wf.get_tasks(state=TaskState.STARTED)
        if type(t.task_spec).__name__ == "ServiceTask"
    ]
    return [t for t in ready + started if t.task_spec.bpmn_id not in hold]


def complete(task, outputs):
    """Completes a task with its next output."""
    queue = outputs.get(task.task_spec.bpmn_id)
    output = None
    if queue:
        output = queue[0] if len(queue) == 1 else queue.pop(0)
    if isinstance(output, dict):
        task.data.update(output)
    elif output is not None:
        task.data[task.task_spec.bpmn_id] = output
    if task.state == TaskState.STARTED:
        task.complete()
    else:
        task.run()


def fire_next_timer(wf):
    """Moves the clock just past the earliest pending timer; False if none.

    A waiting timer keeps its due time in the task's internal data (an
    event-based gateway keeps its timer's there too), as an ISO date, or
    under "next" for a cycle.
    """
    dues = []
    for task in wf.get_tasks(state=TaskState.WAITING):
        value = task.internal_data.get("event_value")
        if isinstance(value, dict):
            value = value.get("next")
        if isinstance(value, str):
            try:
                dues.append(datetime.fromisoformat(value))
            except ValueError:
                pass
    if not dues:
        return False
    CLOCK[0] = max(CLOCK[0], min(dues) + timedelta(microseconds=1))
    wf.refresh_waiting_tasks()
    return True


def deliver(wf, name):
    """Delivers the message `name` (no payload)."""
    wf.catch(BpmnEvent(MessageEventDefinition(name), {}))


def main() -> None:
    """Runs the process as the module documentation says and prints the result."""
    path, process_id, variables = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    driver = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    outputs = {
        k: list(v) if isinstance(v, list) else [v]
        for k, v in driver.get("outputs", {}).items()
    }
    messages = list(driver.get("messages", []))
    hold = set(driver.get("hold", []))
    parser = BpmnParser()
    parser.add_bpmn_file(path)
    spec = parser.get_spec(process_id)
    subs = parser.get_subprocess_specs(process_id)
    wf = BpmnWorkflow(spec, subs)
    # Expressions read task data, which children inherit: seed the tasks
    # that exist before the first step (the start).
    for t in wf.get_tasks():
        t.data.update(variables)
    error = None
    try:
        if driver.get("start_message"):
            wf.do_engine_steps()
            deliver(wf, driver["start_message"])
        for _ in range(10_000):
            wf.do_engine_steps()
            if wf.is_completed():
                break
            waiting = work_waiting(wf, hold)
            if waiting:
                complete(waiting[0], outputs)
            elif messages:
                deliver(wf, messages.pop(0))
            elif not fire_next_timer(wf):
                break
    except Exception as e:  # the engine refused: report it, with what ran
        error = f"{type(e).__name__}: {e}"
    completed = [
        {"id": t.task_spec.bpmn_id, "type": t.task_spec.description}
        for t in COMPLETED
        if getattr(t.task_spec, "bpmn_id", None)
    ]
    result = {"completed": completed, "finished": wf.is_completed()}
    if error:
        result["error"] = error
    print(json.dumps(result))


if __name__ == "__main__":
    main()
