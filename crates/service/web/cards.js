// The kanban board: one column per stage, a card per task with its
// outcome, attempts and last error; a person moves the cards that wait for
// them.

import { act, badge, button, $, money } from './dom.js';
import { api } from './api.js';
import { hooks, state } from './state.js';

const COLUMNS = [
  ['backlog', 'Backlog'],
  ['ready', 'Ready'],
  ['in_progress', 'In progress'],
  ['needs_human', 'Needs a person'],
  ['review', 'Review'],
  ['done', 'Done'],
  ['failed', 'Failed'],
];

/// Draws the board's columns and cards (`GET /v1/board`).
export function renderBoard(board) {
  const root = $('board');
  const byName = new Map(board.columns.map((c) => [c.name, c]));
  root.replaceChildren(...COLUMNS.map(([name, label]) => {
    const col = byName.get(name) ?? { name, count: 0, cards: [] };
    const section = document.createElement('section');
    section.className = col.cards.length ? 'column' : 'column empty';
    section.dataset.testid = `column-${name}`;
    section.dataset.column = name;
    const h = document.createElement('h4');
    h.id = `column-${name}-heading`;
    h.textContent = `${label} `;
    const count = document.createElement('span');
    count.className = 'count';
    count.dataset.testid = 'column-count';
    count.textContent = String(col.count);
    h.append(count);
    section.setAttribute('aria-labelledby', h.id);
    const ul = document.createElement('ul');
    ul.append(...col.cards.map(renderCard));
    section.append(h, ul);
    // A card that needs a person can be dropped on done or ready.
    if (name === 'done' || name === 'ready') {
      section.addEventListener('dragover', (e) => {
        if (e.dataTransfer.types.includes('application/x-card')) {
          e.preventDefault();
          section.classList.add('drop');
        }
      });
      section.addEventListener('dragleave', () => section.classList.remove('drop'));
      section.addEventListener('drop', (e) => {
        e.preventDefault();
        section.classList.remove('drop');
        act(null, () => moveCard(JSON.parse(e.dataTransfer.getData('application/x-card')), name, ''));
      });
    }
    return section;
  }));
}

/// Statuses a column does not tell by itself: shown as a badge on the card.
const CARD_BADGES = new Set(['failed', 'cancelled', 'skipped', 'retry_wait', 'awaiting_approval']);

function renderCard(c) {
  // The card carries the board's facts; the task, its outcome.
  const task = state.mission?.tasks.find((t) => t.id === c.task_id) ?? null;
  const li = document.createElement('li');
  li.className = `card col-${c.column}${task ? ` st-${task.status}` : ''}`;
  li.dataset.testid = 'card';
  li.dataset.cardId = c.id;
  li.dataset.taskKey = c.task_key ?? '';
  li.dataset.column = c.column;
  if (task) li.dataset.status = task.status;
  const title = document.createElement('strong');
  title.textContent = c.title;
  li.append(title);
  if (task && CARD_BADGES.has(task.status)) {
    const b = badge(task.status);
    b.dataset.testid = 'card-status';
    li.append(b);
  }
  if (c.task_key) {
    const key = document.createElement('span');
    key.className = 'key';
    key.textContent = c.task_key;
    li.append(key);
  }
  const meta = document.createElement('p');
  meta.className = 'meta';
  const attempts = task ? task.attempts : c.attempt;
  const count = document.createElement('span');
  count.dataset.testid = 'card-attempts';
  count.textContent = attempts ? `${attempts} attempt${attempts === 1 ? '' : 's'}` : 'not started';
  meta.append(count);
  for (const bit of [c.assignee, c.cost ? money(c.cost) : null]) {
    if (!bit) continue;
    const span = document.createElement('span');
    span.textContent = bit;
    meta.append(span);
  }
  li.append(meta);
  if (task?.last_error && task.status !== 'succeeded') {
    // Clamped to three lines; a click shows all of it, as does the tooltip.
    const err = document.createElement('p');
    err.className = 'err';
    err.dataset.testid = 'card-error';
    err.textContent = task.last_error;
    err.title = task.last_error;
    err.tabIndex = 0;
    err.addEventListener('click', () => err.classList.toggle('open'));
    li.append(err);
  }
  if (c.column === 'needs_human') {
    li.draggable = true;
    li.addEventListener('dragstart', (e) => {
      e.dataTransfer.setData('application/x-card', JSON.stringify({ id: c.id, version: c.version }));
      e.dataTransfer.effectAllowed = 'move';
    });
    const form = document.createElement('form');
    form.className = 'human';
    const fieldId = `note-${c.id}`;
    const label = document.createElement('label');
    label.htmlFor = fieldId;
    label.textContent = 'Result or guidance';
    const note = document.createElement('textarea');
    note.id = fieldId;
    note.rows = 2;
    const done = button('Mark done', 'card-done');
    const retry = button('Retry', 'card-retry');
    done.addEventListener('click', () => act(done, () => moveCard(c, 'done', note.value)));
    retry.addEventListener('click', () => act(retry, () => moveCard(c, 'ready', note.value)));
    form.addEventListener('submit', (e) => e.preventDefault());
    form.append(label, note, done, retry);
    li.append(form);
  }
  return li;
}

async function moveCard(card, to, note) {
  const body = { to, version: card.version };
  if (note.trim()) {
    if (to === 'done') body.output = note.trim();
    else body.feedback = note.trim();
  }
  await api('POST', `/v1/board/cards/${card.id}/move`, body);
  hooks.refreshMission();
}
