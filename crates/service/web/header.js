// The mission's header: goal, status, honest progress, budget, the
// service's sentence on where it stands, and the buttons its status offers.

import { act, $, money } from './dom.js';
import { api } from './api.js';
import { hooks, state } from './state.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/// Shows mission `m` in the header.
export function renderMission(m) {
  const goal = $('mission-goal');
  if (goal.textContent !== m.goal) {
    goal.textContent = m.goal;
    goal.title = m.goal.length > 300 ? '' : m.goal;
    showGoal(false);
  }
  const status = $('mission-status');
  status.textContent = m.status.replaceAll('_', ' ');
  status.className = `badge st-${m.status}`;
  status.dataset.status = m.status;
  const words = renderProgress(m.progress);
  // While the mission runs, the service's sentence is the progress line again.
  const detail = $('status-detail');
  detail.textContent = m.status_detail ?? '';
  detail.hidden = !m.status_detail || m.status_detail === words;
  const limit = m.budget.limit == null ? 'no limit' : `limit ${money(m.budget.limit)}`;
  $('mission-budget').textContent = `spent ${money(m.budget.spent)}, ${limit}`;
  // A failed mission's sentence already names the failed task and its error.
  const failure = $('mission-failure');
  failure.textContent = m.failure_reason ?? '';
  failure.hidden = !m.failure_reason || Boolean(m.status_detail?.includes(m.failure_reason));
  $('plan-actions').hidden = m.status !== 'awaiting_approval';
  $('review-actions').hidden = m.status !== 'awaiting_review';
  $('run-actions').hidden = TERMINAL.has(m.status);
  renderContinue(m);
  // A failed mission waits for no one, but it need not end there.
  $('approvals-empty').textContent = m.status === 'failed'
    ? 'Nothing in this mission waits for a person. It failed: continue it above, or leave it.'
    : 'Nothing in this mission waits for a person.';
  // The reviewer may name the tasks to redo.
  const boxes = $('reject-result-tasks');
  const checked = new Set([...boxes.querySelectorAll('input:checked')].map((i) => i.value));
  boxes.replaceChildren(...m.tasks.map((t) => {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.value = t.key;
    input.checked = checked.has(t.key);
    label.append(input, ` ${t.key}: ${t.title}`);
    return label;
  }));
}

/// A failed mission may go on: Retry or Skip for each failed task, then
/// `POST /v1/missions/{id}/continue` (see wireHeader). Redrawn only when the
/// failed tasks change, so the choices made stay.
function renderContinue(m) {
  const failed = m.status === 'failed' ? m.tasks.filter((t) => t.status === 'failed') : [];
  $('continue-actions').hidden = failed.length === 0;
  const list = $('continue-tasks');
  const sig = JSON.stringify(failed.map((t) => [t.id, t.attempts, t.last_error]));
  if (list.dataset.sig === sig) return;
  list.dataset.sig = sig;
  list.replaceChildren(...failed.map((t) => {
    const li = document.createElement('li');
    li.dataset.testid = 'continue-task';
    li.dataset.taskKey = t.key;
    const name = document.createElement('strong');
    name.textContent = `${t.key}: ${t.title}`;
    li.append(name);
    for (const [value, text] of [['retry', 'Retry'], ['skip', 'Skip']]) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = `continue-${t.id}`;
      input.value = value;
      input.checked = value === 'retry';
      input.dataset.testid = `continue-${value}`;
      label.append(input, ` ${text}`);
      li.append(label);
    }
    if (t.last_error) {
      const err = document.createElement('p');
      err.className = 'err';
      err.textContent = `${t.attempts} attempt${t.attempts === 1 ? '' : 's'}, last error: ${t.last_error}`;
      err.title = t.last_error;
      li.append(err);
    }
    return li;
  }));
}

/// Clamps the goal to three lines, or shows all of it; the toggle appears
/// only when there is more to show.
function showGoal(expanded) {
  const goal = $('mission-goal');
  const toggle = $('goal-toggle');
  goal.classList.toggle('expanded', expanded);
  goal.classList.toggle('clamp', !expanded);
  toggle.textContent = expanded ? 'Show less' : 'Show more';
  toggle.setAttribute('aria-expanded', String(expanded));
  toggle.hidden = !expanded && goal.scrollHeight <= goal.clientHeight + 1;
}

/// What the tasks came to, in words and as a bar: only what succeeded counts as done.
const OUTCOMES = [
  ['done', null],
  ['failed', (n) => `${n} failed`],
  ['cancelled', (n) => `${n} cancelled`],
  ['skipped', (n) => `${n} skipped`],
  ['waiting', (n) => `${n} waiting for a person`],
  ['remaining', (n) => `${n} to do`],
];

/// Shows the progress; returns its line (the service's own wording, `Progress::line`).
function renderProgress(p) {
  const words = [`${p.done} of ${p.total} done`];
  const bar = $('progress-bar');
  const parts = [];
  for (const [part, say] of OUTCOMES) {
    const n = p[part] ?? 0;
    if (say && n > 0) words.push(say(n));
    if (n > 0) {
      const seg = document.createElement('span');
      seg.dataset.part = part;
      // CSSOM, not a style attribute: the page's CSP allows only its own stylesheet.
      seg.style.flexGrow = String(n);
      seg.title = part === 'done' ? `${n} done` : OUTCOMES.find(([k]) => k === part)[1](n);
      parts.push(seg);
    }
  }
  $('mission-progress').textContent = words.join(' · ');
  bar.replaceChildren(...parts);
  bar.setAttribute('aria-label', `${words.join(', ')}; ${p.percent} % succeeded`);
  bar.title = `${p.percent} % succeeded`;
  return words.join(' · ');
}

/// A header button's action: posts to the mission's `path`, shows the
/// answer at once, and refreshes the rest.
function missionAction(path, body) {
  return async () => {
    const id = state.missionId;
    if (!id) return;
    const mission = await api('POST', `/v1/missions/${id}/${path}`, body());
    if (state.missionId === id && mission?.status) {
      state.mission = mission;
      renderMission(mission);
    }
    hooks.refreshMission();
    hooks.refreshMissions();
  };
}

/// The buttons and forms of the header. Once: the header is re-rendered
/// in place.
export function wireHeader() {
  const approve = $('approve-plan');
  approve.addEventListener('click', () => act(approve, missionAction('approve', () => ({}))));
  const accept = $('accept-result');
  accept.addEventListener('click', () => act(accept, missionAction('review', () => ({ decision: 'accept' }))));
  const cancel = $('cancel-mission');
  cancel.addEventListener('click', () => {
    if (!window.confirm('Cancel this mission? Running work is stopped.')) return;
    act(cancel, missionAction('cancel', () => ({})));
  });
  $('reject-plan-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const feedback = $('reject-plan-feedback').value.trim();
    act(e.submitter, missionAction('reject-plan', () => ({ feedback })));
  });
  $('reject-result-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const feedback = $('reject-result-feedback').value.trim();
    const tasks = [...$('reject-result-tasks').querySelectorAll('input:checked')].map((i) => i.value);
    act(e.submitter, missionAction('review', () => ({ decision: 'reject', feedback, tasks })));
  });
  $('continue-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const retry = [];
    const skip = [];
    for (const li of $('continue-tasks').children) {
      const choice = li.querySelector('input:checked')?.value;
      (choice === 'skip' ? skip : retry).push(li.dataset.taskKey);
    }
    const feedback = $('continue-feedback').value.trim() || undefined;
    // The version as shown: a mission that changed meanwhile is refused, not overwritten.
    const version = state.mission?.version;
    act(e.submitter, async () => {
      await missionAction('continue', () => ({ retry, skip, feedback, version }))();
      $('continue-feedback').value = '';
    });
  });
  $('goal-toggle').addEventListener('click', () => showGoal(!$('mission-goal').classList.contains('expanded')));
}
