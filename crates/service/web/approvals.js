// Items of the Approvals panel: the list item with its facts, the form
// with one button per outcome, and the tool calls, governance decisions and
// team decisions shown with every fact from their own lists.

import { act, button, money, timeOf } from './dom.js';
import { api } from './api.js';
import { hooks, state } from './state.js';

/// An approval list item: its kind, a title and a list of facts (empty ones left out).
export function approvalItem(kind, id, title, facts) {
  const li = document.createElement('li');
  li.className = `approval k-${kind}`;
  li.dataset.testid = 'approval-item';
  li.dataset.kind = kind;
  li.dataset.id = id;
  const h = document.createElement('strong');
  h.textContent = title;
  const dl = document.createElement('dl');
  for (const [term, value] of facts) {
    if (value === null || value === undefined || value === '') continue;
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.dataset.fact = term.toLowerCase();
    if (value instanceof Node) dd.append(value);
    else dd.textContent = String(value);
    dl.append(dt, dd);
  }
  li.append(h, dl);
  return li;
}

/// A rationale field and one button per outcome; `send(outcome, rationale)`
/// calls the API, whose refusal is shown like any other.
export function decideForm(id, choices, send, hint) {
  const form = document.createElement('form');
  form.className = 'decide';
  const fieldId = `rationale-${id}`;
  const label = document.createElement('label');
  label.htmlFor = fieldId;
  label.textContent = hint;
  const note = document.createElement('textarea');
  note.id = fieldId;
  note.rows = 2;
  note.dataset.testid = 'approval-rationale';
  form.append(label, note);
  for (const [text, outcome, testid, cls] of choices) {
    const b = button(text, testid);
    if (cls) b.className = cls;
    b.addEventListener('click', () => act(b, async () => {
      await send(outcome, note.value.trim());
      hooks.refreshApprovals();
      hooks.refreshMission();
    }));
    form.append(b);
  }
  form.addEventListener('submit', (e) => e.preventDefault());
  return form;
}

/// The key of the task `taskId`, as far as the page knows it.
export const taskKey = (taskId) => (taskId ? state.taskKeys.get(taskId) ?? taskId : null);

/// A tool call an agent waits on: its facts, Approve or Deny with a rationale.
export function renderToolApproval(a) {
  const li = approvalItem('tool', a.id, `Tool call: ${a.tool}`, [
    ['Agent', a.agent_id],
    ['Task', taskKey(a.task_id)],
    ['Verdict', a.verdict.replaceAll('_', ' ')],
    ['Reasons', a.reasons.join('; ')],
    ['Paths', a.paths.join(', ')],
    ['Diff', a.diff_lines ? `${a.diff_lines} lines` : ''],
    ['Files', a.files_changed || ''],
    ['Tokens', a.tokens || ''],
    ['Expires', timeOf(a.expires_at, ` (then ${a.timeout_outcome})`)],
  ]);
  li.append(decideForm(a.id, [
    ['Approve', 'approved', 'approval-approve', 'primary'],
    ['Deny', 'denied', 'approval-deny', 'danger'],
  ], (outcome, rationale) => api('POST', `/v1/tool-approvals/${a.id}/resolve`, { outcome, rationale }),
  'Rationale (required; logged with the decision)'));
  return li;
}

const optionLabels = (options) => (Array.isArray(options)
  ? options.map((o) => (typeof o === 'string' ? o : o?.label)).filter(Boolean).join(', ') : '');

/// A governance decision: its facts, Approve or Reject with a rationale.
export function renderDecision(d) {
  const g = d.governance ?? {};
  const li = approvalItem('decision', d.id, `Decision: ${d.category}`, [
    ['Asked by', d.agent_id ? `agent ${d.agent_id}` : d.requester],
    ['Task', taskKey(d.task_id)],
    ['What', d.description],
    ['Options', optionLabels(d.options)],
    ['Recommended', d.recommended_option],
    ['Cost', d.estimated_cost == null ? '' : money(d.estimated_cost)],
    ['Why asked', g.reason ?? ''],
    ['Asked at', timeOf(d.created_at)],
  ]);
  // The version makes a decision that changed meanwhile a refusal, not an overwrite.
  li.append(decideForm(d.id, [
    ['Approve', 'approved', 'approval-approve', 'primary'],
    ['Reject', 'rejected', 'approval-reject', 'danger'],
  ], (outcome, rationale) => api('POST', `/v1/decisions/${d.id}/resolve`,
    { outcome, rationale: rationale || undefined, version: d.version }),
  'Rationale (logged with the decision)'));
  return li;
}

/// Team decisions are the agents' to vote on: the page shows the tally only.
export function renderTeamDecision(t) {
  const votes = new Map(t.options.map((o) => [o.label, 0]));
  for (const v of t.votes) votes.set(v.option, (votes.get(v.option) ?? 0) + 1);
  const tally = [...votes].map(([label, n]) => `${label}: ${n}`).join(' · ');
  const li = approvalItem('team', t.id, `Team decision: ${t.topic}`, [
    ['Proposed by', t.proposer],
    ['Task', taskKey(t.task_id)],
    ['Votes', tally],
    ['Voted', `${t.votes.length} of ${t.eligible_agents.length} eligible agents`],
    ['Recommended', t.recommended_option],
    ['Closes', timeOf(t.closes_at)],
  ]);
  const note = document.createElement('p');
  note.className = 'muted';
  note.textContent = 'The eligible agents vote; it commits when all have voted or the window closes.';
  li.append(note);
  return li;
}
