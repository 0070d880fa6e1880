// The mission's event timeline, newest first, from its event stream.

import { $, money } from './dom.js';
import { state } from './state.js';

/// Timeline entries kept in the page (the API holds the full log).
const TIMELINE_MAX = 300;

/// Adds event `ev` at the top of the timeline (once per seq).
export function appendTimeline(ev) {
  // A resumed stream never repeats, but a reselected mission replays.
  if (ev.seq <= state.lastSeq) return;
  state.lastSeq = ev.seq;
  const li = document.createElement('li');
  li.dataset.testid = 'timeline-item';
  li.dataset.kind = ev.kind;
  li.dataset.seq = ev.seq;
  const when = document.createElement('time');
  when.dateTime = ev.created_at;
  when.textContent = new Date(ev.created_at).toLocaleTimeString();
  const kind = document.createElement('span');
  kind.className = `kind k-${ev.kind.split('.')[0]}`;
  kind.textContent = ev.kind;
  li.append(when, kind);
  const task = ev.payload?.key ?? (ev.task_id ? state.taskKeys.get(ev.task_id) : null);
  if (task) {
    const t = document.createElement('span');
    t.className = 'task';
    t.textContent = task;
    li.append(t);
  }
  const summary = summarize(ev.payload);
  if (summary) {
    const s = document.createElement('span');
    s.className = 'summary';
    s.textContent = summary;
    li.append(s);
  }
  const list = $('timeline');
  list.prepend(li);
  while (list.children.length > TIMELINE_MAX) list.lastElementChild.remove();
}

/// A short line from the payload: the transition, who, and why.
function summarize(p) {
  if (!p || typeof p !== 'object') return '';
  const parts = [];
  if (p.from && p.to) parts.push(`${p.from} → ${p.to}`);
  else if (p.to) parts.push(`→ ${p.to}`);
  else if (p.status) parts.push(`→ ${p.status}`);
  for (const k of ['agent_id', 'attempt', 'action', 'rung', 'failure_kind', 'reason', 'error', 'feedback', 'goal']) {
    const v = p[k];
    if (typeof v === 'string' || typeof v === 'number') parts.push(k === 'agent_id' ? `agent ${v}` : `${k.replace('_', ' ')} ${v}`);
  }
  if (typeof p.cost === 'number' && p.cost > 0) parts.push(`cost ${money(p.cost)}`);
  const text = parts.join(' · ');
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}
