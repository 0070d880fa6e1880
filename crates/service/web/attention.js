// "Needs you": everything that waits for a person (`GET /v1/attention`),
// counted for the workspace in the header and listed for the selected
// mission in the Approvals panel, each with the buttons that settle it.

import { act, age, button, $ } from './dom.js';
import { api } from './api.js';
import { hooks, state } from './state.js';
import {
  approvalItem, decideForm, renderDecision, renderTeamDecision, renderToolApproval, taskKey,
} from './approvals.js';

/// Attention kinds the panel shows in full from their own lists (with every fact).
const DETAILED = new Set(['tool_approval', 'decision']);

/// What waits for a person: counted for the workspace in the header, and
/// listed for the selected mission (with its open team decisions, which
/// only the agents settle). Tool approvals and decisions come from their
/// own lists, with every fact; the rest from the attention list.
export async function loadApprovals() {
  const id = state.missionId;
  const [tools, decisions, team, attention] = await Promise.all([
    api('GET', '/v1/tool-approvals?status=pending&limit=500'),
    api('GET', '/v1/decisions?status=pending&limit=500'),
    id ? api('GET', `/v1/missions/${id}/team-decisions`) : null,
    api('GET', '/v1/attention'),
  ]);
  const total = attention.items.length;
  const pending = $('approvals-pending');
  pending.textContent = `${total} thing${total === 1 ? '' : 's'} waiting for a person in the workspace`;
  pending.dataset.count = String(total);
  pending.hidden = total === 0;
  // A newer selection wins over this answer.
  if (!id || state.missionId !== id) return;
  const waiting = attention.items.filter((a) => a.mission_id === id);
  const items = [
    ...waiting.filter((a) => !DETAILED.has(a.kind)).map((a) => ['attention', a]),
    ...tools.tool_approvals.filter((a) => a.mission_id === id).map((a) => ['tool', a]),
    ...decisions.decisions.filter((d) => d.mission_id === id).map((d) => ['decision', d]),
    ...team.team_decisions.filter((t) => t.status === 'open').map((t) => ['team', t]),
  ];
  const list = $('approvals-list');
  const shown = new Map([...list.children].map((li) => [li.dataset.key, li]));
  const nodes = items.map(([kind, item]) => {
    const key = kind === 'attention'
      ? `${item.kind}:${item.id ?? item.task_id ?? item.mission_id}` : `${kind}:${item.id}`;
    const sig = JSON.stringify(item);
    const old = shown.get(key);
    // An unchanged item keeps its element, and with it a rationale being typed.
    if (old && old.dataset.sig === sig) return old;
    const li = kind === 'attention' ? renderAttention(item)
      : kind === 'tool' ? renderToolApproval(item)
        : kind === 'decision' ? renderDecision(item) : renderTeamDecision(item);
    li.dataset.key = key;
    li.dataset.sig = sig;
    const typed = old?.querySelector('textarea')?.value;
    const field = li.querySelector('textarea');
    if (typed && field) field.value = typed;
    return li;
  });
  // In place rather than replaceChildren(), which would blur a focused field.
  const keep = new Set(nodes);
  for (const child of [...list.children]) if (!keep.has(child)) child.remove();
  nodes.forEach((node, i) => {
    if (list.children[i] !== node) list.insertBefore(node, list.children[i] ?? null);
  });
  $('approvals-count').textContent = String(items.length);
  $('approvals-empty').hidden = items.length > 0;
}

const ATTENTION_TITLES = {
  plan_approval: () => 'Plan approval',
  results_review: () => 'Results review',
  human_task: (a) => `Needs a person: ${a.task_key ?? taskKey(a.task_id)}`,
  budget: () => 'Budget',
};

/// One thing that waits for a person (a plan, results, a task, the budget),
/// with the buttons that settle it here and the command that does the same.
function renderAttention(a) {
  const title = (ATTENTION_TITLES[a.kind] ?? (() => a.kind.replaceAll('_', ' ')))(a);
  const command = a.command ? document.createElement('code') : null;
  if (command) command.textContent = a.command;
  const li = approvalItem(a.kind, a.id ?? a.task_id ?? a.mission_id, title, [
    ['Task', a.task_key ?? taskKey(a.task_id)],
    ['What', a.summary],
    ['Waiting', age(a.since)],
    ['Command', command],
  ]);
  if (a.task_key || a.task_id) li.dataset.taskKey = a.task_key ?? taskKey(a.task_id);
  const mission = `/v1/missions/${a.mission_id}`;
  const after = async () => {
    hooks.refreshMission();
    hooks.refreshMissions();
  };
  if (a.kind === 'plan_approval') {
    li.append(decideForm(`plan-${a.mission_id}`, [
      ['Approve', 'approve', 'attention-approve', 'primary'],
      ['Reject', 'reject', 'attention-reject', 'danger'],
    ], async (verb, feedback) => {
      if (verb === 'approve') await api('POST', `${mission}/approve`, {});
      else await api('POST', `${mission}/reject-plan`, { feedback });
      await after();
    }, 'Feedback (required to reject: what should the new plan do differently?)'));
  } else if (a.kind === 'results_review') {
    li.append(decideForm(`review-${a.mission_id}`, [
      ['Accept', 'accept', 'attention-accept', 'primary'],
      ['Send back', 'reject', 'attention-reject', 'danger'],
    ], async (decision, feedback) => {
      await api('POST', `${mission}/review`, decision === 'accept' ? { decision } : { decision, feedback });
      await after();
    }, 'Feedback (required to send back: what is wrong?)'));
  } else if (a.kind === 'human_task') {
    const task = encodeURIComponent(a.task_key ?? a.task_id);
    li.append(decideForm(`human-${a.task_id ?? a.task_key}`, [
      ['Complete', 'complete', 'attention-complete', 'primary'],
      ['Retry', 'retry', 'attention-retry', ''],
      ['Skip', 'skip', 'attention-skip', ''],
      ['Fail', 'fail', 'attention-fail', 'danger'],
    ], async (action, note) => {
      const body = { action };
      if (note && action === 'complete') body.output = note;
      else if (note) body.feedback = note;
      await api('POST', `${mission}/tasks/${task}/resolve`, body);
      await after();
    }, 'The result (complete) or guidance and reason (retry, skip, fail)'));
  } else if (a.kind === 'budget') {
    li.append(budgetForm(a));
  }
  return li;
}

/// Raises the mission's budget limit (`PATCH`, with the mission's version),
/// which takes back the tasks the old limit refused; or skips or fails the
/// refused task instead. The field starts at the least that fits, as the
/// service's command says.
function budgetForm(a) {
  const form = document.createElement('form');
  form.className = 'decide';
  const fieldId = `budget-${a.task_id ?? a.mission_id}`;
  const label = document.createElement('label');
  label.htmlFor = fieldId;
  label.textContent = 'New budget limit';
  const input = document.createElement('input');
  input.id = fieldId;
  input.type = 'number';
  input.min = '0';
  input.step = 'any';
  input.required = true;
  input.dataset.testid = 'attention-budget';
  const m = state.mission;
  const fits = /--budget (\d+(?:\.\d+)?)$/.exec(a.command ?? '')?.[1];
  if (fits) input.value = fits;
  else if (m?.id === a.mission_id && m.budget.limit != null) input.value = String(m.budget.limit * 2);
  const raise = button('Raise budget', 'attention-raise-budget');
  raise.className = 'primary';
  raise.addEventListener('click', () => act(raise, async () => {
    const budget = Number(input.value);
    if (!input.value || !Number.isFinite(budget)) throw new Error('Enter the new budget limit.');
    const body = { budget };
    if (state.mission?.id === a.mission_id) body.version = state.mission.version;
    await api('PATCH', `/v1/missions/${a.mission_id}`, body);
    hooks.refreshApprovals();
    hooks.refreshMission();
  }));
  form.append(label, input, raise);
  const task = a.task_key ?? a.task_id;
  for (const [verb, text, cls] of [['skip', 'Skip task', ''], ['fail', 'Fail task', 'danger']]) {
    if (!task || !a.actions?.includes(verb)) continue;
    const b = button(text, `attention-${verb}`);
    if (cls) b.className = cls;
    b.addEventListener('click', () => act(b, async () => {
      await api('POST', `/v1/missions/${a.mission_id}/tasks/${encodeURIComponent(task)}/resolve`,
        { action: verb, feedback: 'not worth a bigger budget' });
      hooks.refreshApprovals();
      hooks.refreshMission();
    }));
    form.append(b);
  }
  form.addEventListener('submit', (e) => e.preventDefault());
  return form;
}
