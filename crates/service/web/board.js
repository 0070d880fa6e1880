// The built-in web board: the missions list, a mission's kanban columns,
// task graph and event timeline, the plan and result decisions, and the
// approvals that wait for a person (tool calls, governance decisions).
//
// Everything live comes from the service's Server-Sent Event streams. They
// are read with fetch() and a small parser rather than EventSource, because
// EventSource cannot send the Authorization header the API requires.
// No framework and no build step: this file is served as it is.

const TOKEN_KEY = 'coordinator.token';
const COLUMNS = [
  ['backlog', 'Backlog'],
  ['ready', 'Ready'],
  ['in_progress', 'In progress'],
  ['needs_human', 'Needs a person'],
  ['review', 'Review'],
  ['done', 'Done'],
  ['failed', 'Failed'],
];
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/// Timeline entries kept in the page (the API holds the full log).
const TIMELINE_MAX = 300;
/// Events arrive in bursts; one board refresh per burst is enough.
const REFRESH_DELAY_MS = 100;
/// Event kinds after which what waits for a person may have changed.
const APPROVAL_KINDS =
  /^(tool\.approval_|decision\.|team_decision\.|task\.(awaiting_|resolved|budget_refused|handed_off)|mission\.)/;

const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  missionId: null,
  mission: null,
  /// Task id → key, for events that name a task by id only.
  taskKeys: new Map(),
  lastSeq: 0,
  missionStream: null,
  workspaceStream: null,
  streamStates: new Map(),
  /// The task graph's viewBox (zoom and pan) and the whole graph's.
  dagView: null,
  dagFull: null,
};

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${state.token}`, Accept: 'application/json' };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const err = data && data.error;
    const e = new ApiError(resp.status, err?.code ?? 'http_error',
      err?.message ?? `the service answered ${resp.status}`);
    if (resp.status === 401) needToken(e.message);
    throw e;
  }
  return data;
}

// ------------------------------------------------------ SSE over fetch

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

/// Follows the stream at `path` until `signal` aborts, calling `onEvent`
/// with each {id, event, data}. After a drop it reconnects with
/// Last-Event-ID, so the service resumes exactly after the last event seen.
async function follow(path, { signal, onEvent, onState }) {
  let lastId = null;
  let retryMs = 1000;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${state.token}`, Accept: 'text/event-stream' };
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      const resp = await fetch(path, { headers, signal, cache: 'no-store' });
      if (resp.status === 401) {
        needToken('the token was refused');
        return;
      }
      if (resp.status >= 400 && resp.status < 500 && resp.status !== 429) {
        // Asking again will not help (an unknown mission, a bad request).
        onState('stopped');
        showError(`the event stream answered ${resp.status}`);
        return;
      }
      if (!resp.ok || !resp.body) throw new Error(`the event stream answered ${resp.status}`);
      onState('live');
      failures = 0;
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      let ev = { data: [], event: null, id: null };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let start = 0;
        const eol = /\r\n|\r|\n/g;
        let m;
        while ((m = eol.exec(buf))) {
          // A lone \r at the end may be the first half of \r\n.
          if (m[0] === '\r' && m.index === buf.length - 1) break;
          const line = buf.slice(start, m.index);
          start = eol.lastIndex;
          if (line === '') {
            // Blank line: dispatch. The id counts even for an event without data.
            if (ev.id !== null) lastId = ev.id;
            if (ev.data.length) onEvent({ id: lastId, event: ev.event ?? 'message', data: ev.data.join('\n') });
            ev = { data: [], event: null, id: null };
            continue;
          }
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (field === 'data') ev.data.push(val);
          else if (field === 'event') ev.event = val;
          else if (field === 'id' && !val.includes('\0')) ev.id = val;
          else if (field === 'retry' && /^\d+$/.test(val)) retryMs = Number(val);
        }
        buf = buf.slice(start);
      }
      // The server ended the stream: a half-received event is dropped, and
      // Last-Event-ID brings it back on the next connection.
    } catch (e) {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    onState('reconnecting');
    failures += 1;
    await sleep(Math.min(retryMs * failures, 15000), signal);
  }
}

function setStreamState(name, s) {
  state.streamStates.set(name, s);
  showStreamState();
}

function showStreamState() {
  const all = [...state.streamStates.values()];
  const shown = all.length === 0 ? 'offline'
    : all.every((v) => v === 'live') ? 'live'
      : all.includes('reconnecting') ? 'reconnecting' : all.find((v) => v !== 'live');
  const el = $('stream-state');
  el.textContent = shown;
  el.dataset.state = shown;
}

function stopStream(name) {
  const ctl = name === 'mission' ? state.missionStream : state.workspaceStream;
  if (ctl) ctl.abort();
  state.streamStates.delete(name);
  showStreamState();
  if (name === 'mission') state.missionStream = null;
  else state.workspaceStream = null;
}

/// Runs `fn` at most once per `ms`, and once more if asked while it ran.
function coalesce(fn, ms) {
  let timer = null;
  let running = false;
  let again = false;
  const run = async () => {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await fn();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return;
      showError(e.message);
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (!timer) timer = setTimeout(run, ms);
  };
  return schedule;
}

// ---------------------------------------------------------- messages

function showError(message) {
  const el = $('error');
  el.textContent = message || '';
  el.hidden = !message;
}

/// Runs a user action: clears the last error, disables `button` meanwhile,
/// and shows the API's message if it fails.
async function act(button, fn) {
  showError('');
  if (button) button.disabled = true;
  try {
    await fn();
  } catch (e) {
    showError(e.message);
  } finally {
    if (button) button.disabled = false;
  }
}

// -------------------------------------------------------------- token

function takeTokenFromUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (!token) return;
  localStorage.setItem(TOKEN_KEY, token);
  params.delete('token');
  const rest = params.toString();
  // Out of the address bar (and the history) as soon as it is read.
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
}

function needToken(message) {
  stopStream('mission');
  stopStream('workspace');
  state.token = null;
  $('token-form').hidden = false;
  $('token-forget').hidden = true;
  $('token-input').focus();
  if (message) showError(message);
}

// ----------------------------------------------------------- missions

const refreshMissions = coalesce(loadMissions, REFRESH_DELAY_MS);

async function loadMissions() {
  const { missions } = await api('GET', '/v1/missions?limit=100');
  const list = $('missions');
  list.replaceChildren(...missions.map((m) => {
    const li = document.createElement('li');
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'mission-item';
    b.dataset.testid = 'mission-item';
    b.dataset.missionId = m.id;
    b.dataset.status = m.status;
    if (m.id === state.missionId) b.setAttribute('aria-current', 'true');
    const goal = document.createElement('span');
    goal.className = 'goal';
    goal.textContent = m.goal;
    const status = badge(m.status);
    const when = document.createElement('time');
    when.dateTime = m.created_at;
    when.textContent = new Date(m.created_at).toLocaleString();
    b.append(goal, status, when);
    b.addEventListener('click', () => selectMission(m.id));
    li.append(b);
    return li;
  }));
  $('missions-empty').hidden = missions.length > 0;
}

function badge(status) {
  const s = document.createElement('span');
  s.className = `badge st-${status}`;
  s.textContent = status.replaceAll('_', ' ');
  return s;
}

function followWorkspace() {
  stopStream('workspace');
  const ctl = new AbortController();
  state.workspaceStream = ctl;
  // Mission-level events change the list; approval events, of any
  // mission, the workspace's count of what waits for a person.
  follow('/v1/events?kind=mission.*,tool.approval_*,decision.*,task.awaiting_human,task.resolved', {
    signal: ctl.signal,
    onEvent: (e) => {
      if (e.event.startsWith('mission.')) refreshMissions();
      else refreshApprovals();
    },
    onState: (s) => setStreamState('workspace', s),
  });
}

// ------------------------------------------------------------ mission

const refreshMission = coalesce(loadMission, REFRESH_DELAY_MS);

async function selectMission(id) {
  if (state.missionId === id && state.missionStream) return;
  stopStream('mission');
  state.missionId = id;
  state.mission = null;
  state.taskKeys = new Map();
  state.lastSeq = 0;
  $('timeline').replaceChildren();
  $('board').replaceChildren();
  $('dag').replaceChildren();
  state.dagView = null;
  $('approvals-list').replaceChildren();
  $('approvals-count').textContent = '0';
  const url = new URL(location.href);
  url.searchParams.set('mission', id);
  history.replaceState(null, '', url);
  for (const b of document.querySelectorAll('.mission-item')) {
    if (b.dataset.missionId === id) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
  $('mission').hidden = false;
  $('no-mission').hidden = true;
  try {
    await loadMission();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) showError(e.message);
    return;
  }
  // After the mission, so its task keys are known.
  refreshApprovals();
  const ctl = new AbortController();
  state.missionStream = ctl;
  // From the first event: the stream replays the log (filling the
  // timeline), then stays open for what happens next.
  follow(`/v1/missions/${id}/events`, {
    signal: ctl.signal,
    onEvent: (e) => {
      if (state.missionId !== id) return;
      let ev;
      try {
        ev = JSON.parse(e.data);
      } catch {
        return;
      }
      appendTimeline(ev);
      refreshMission();
      if (APPROVAL_KINDS.test(ev.kind)) refreshApprovals();
    },
    onState: (s) => setStreamState('mission', s),
  });
}

async function loadMission() {
  const id = state.missionId;
  if (!id) return;
  const [mission, board] = await Promise.all([
    api('GET', `/v1/missions/${id}`),
    api('GET', `/v1/board?mission=${id}`),
  ]);
  // A newer selection wins over this answer.
  if (state.missionId !== id) return;
  const statusChanged = state.mission && state.mission.status !== mission.status;
  state.mission = mission;
  for (const t of mission.tasks) state.taskKeys.set(t.id, t.key);
  renderMission(mission);
  renderBoard(board);
  renderDag(mission);
  if (statusChanged) refreshMissions();
}

function renderMission(m) {
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

const money = (n) => `$${Number(n).toFixed(2)}`;

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

// -------------------------------------------------------------- board

function renderBoard(board) {
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

function button(text, testid) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.dataset.testid = testid;
  return b;
}

async function moveCard(card, to, note) {
  const body = { to, version: card.version };
  if (note.trim()) {
    if (to === 'done') body.output = note.trim();
    else body.feedback = note.trim();
  }
  await api('POST', `/v1/board/cards/${card.id}/move`, body);
  refreshMission();
}

// ---------------------------------------------------------- approvals

const refreshApprovals = coalesce(loadApprovals, REFRESH_DELAY_MS);

/// Attention kinds the panel shows in full from their own lists (with every fact).
const DETAILED = new Set(['tool_approval', 'decision']);

/// What waits for a person: counted for the workspace in the header, and
/// listed for the selected mission (with its open team decisions, which
/// only the agents settle). Tool approvals and decisions come from their
/// own lists, with every fact; the rest from the attention list.
async function loadApprovals() {
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

/// An approval list item: its kind, a title and a list of facts (empty ones left out).
function approvalItem(kind, id, title, facts) {
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

function timeOf(iso, suffix = '') {
  const t = document.createElement('time');
  t.dateTime = iso;
  t.textContent = `${new Date(iso).toLocaleString()}${suffix}`;
  return t;
}

/// A rationale field and one button per outcome; `send(outcome, rationale)`
/// calls the API, whose refusal is shown like any other.
function decideForm(id, choices, send, hint) {
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
      refreshApprovals();
      refreshMission();
    }));
    form.append(b);
  }
  form.addEventListener('submit', (e) => e.preventDefault());
  return form;
}

const taskKey = (taskId) => (taskId ? state.taskKeys.get(taskId) ?? taskId : null);

/// "for 5 min": how long something has waited.
function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  const text = s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${Math.round(s / 60)} min`
    : s < 172800 ? `${Math.round(s / 3600)} h` : `${Math.round(s / 86400)} days`;
  return timeOf(iso, ` (for ${text})`);
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
    refreshMission();
    refreshMissions();
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

/// Raises the mission's budget limit (`PATCH`, with the mission's version).
function budgetForm(a) {
  const form = document.createElement('form');
  form.className = 'decide';
  const fieldId = `budget-${a.mission_id}`;
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
  if (m?.id === a.mission_id && m.budget.limit != null) input.value = String(m.budget.limit * 2);
  const b = button('Raise budget', 'attention-raise-budget');
  b.className = 'primary';
  b.addEventListener('click', () => act(b, async () => {
    const budget = Number(input.value);
    if (!input.value || !Number.isFinite(budget)) throw new Error('Enter the new budget limit.');
    const body = { budget };
    if (state.mission?.id === a.mission_id) body.version = state.mission.version;
    await api('PATCH', `/v1/missions/${a.mission_id}`, body);
    refreshApprovals();
    refreshMission();
  }));
  form.addEventListener('submit', (e) => e.preventDefault());
  form.append(label, input, b);
  return form;
}

function renderToolApproval(a) {
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

function renderDecision(d) {
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
function renderTeamDecision(t) {
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

// ---------------------------------------------------------------- DAG

const SVG = 'http://www.w3.org/2000/svg';
const NODE_W = 168;
const NODE_H = 44;
const GAP_X = 56;
const GAP_Y = 18;
const PAD = 12;

function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/// Draws the plan as layers by depth (longest path from a root), left to
/// right, nodes coloured by status, an arrow from each dependency.
function renderDag(m) {
  const tasks = m.tasks;
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depth = new Map();
  const depthOf = (t, seen = new Set()) => {
    if (depth.has(t.id)) return depth.get(t.id);
    if (seen.has(t.id)) return 0; // a cycle cannot be stored, but never loop
    seen.add(t.id);
    const deps = t.depends_on.map((d) => byId.get(d)).filter(Boolean);
    const d = deps.length ? 1 + Math.max(...deps.map((p) => depthOf(p, seen))) : 0;
    depth.set(t.id, d);
    return d;
  };
  const layers = [];
  for (const t of tasks) {
    const d = depthOf(t);
    (layers[d] ??= []).push(t);
  }
  const pos = new Map();
  layers.forEach((layer, d) => layer.forEach((t, i) => pos.set(t.id, {
    x: PAD + d * (NODE_W + GAP_X),
    y: PAD + i * (NODE_H + GAP_Y),
  })));
  const tallest = Math.max(1, ...layers.map((l) => l?.length ?? 0));
  const width = PAD * 2 + Math.max(1, layers.length) * (NODE_W + GAP_X) - GAP_X;
  const height = PAD * 2 + tallest * (NODE_H + GAP_Y) - GAP_Y;
  const critical = new Set(m.critical_path ?? []);

  // Scaled to fit the pane by default; zoom and pan move the viewBox. A
  // graph of the same size keeps the view the person chose.
  const full = { x: 0, y: 0, w: width, h: height };
  if (!state.dagView || state.dagFull?.w !== width || state.dagFull?.h !== height) state.dagView = { ...full };
  state.dagFull = full;
  const v = state.dagView;
  const root = svg('svg', {
    viewBox: `${v.x} ${v.y} ${v.w} ${v.h}`, preserveAspectRatio: 'xMidYMid meet', role: 'img',
    'aria-labelledby': 'dag-title', 'data-testid': 'dag',
  });
  // The pane's height follows the graph's shape (CSS caps it).
  root.style.aspectRatio = `${width} / ${height}`;
  const title = svg('title', { id: 'dag-title' });
  title.textContent = `Task graph: ${tasks.length} tasks in ${layers.length} layers`;
  const defs = svg('defs');
  const marker = svg('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse',
  });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }));
  defs.append(marker);
  root.append(title, defs);

  for (const t of tasks) {
    const to = pos.get(t.id);
    for (const dep of t.depends_on) {
      const from = pos.get(dep);
      if (!from) continue;
      const x1 = from.x + NODE_W;
      const y1 = from.y + NODE_H / 2;
      const x2 = to.x;
      const y2 = to.y + NODE_H / 2;
      const mid = (x1 + x2) / 2;
      root.append(svg('path', {
        d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
        class: 'edge', 'marker-end': 'url(#arrow)', 'data-testid': 'dag-edge',
        'data-from': byId.get(dep).key, 'data-to': t.key,
      }));
    }
  }
  for (const t of tasks) {
    const { x, y } = pos.get(t.id);
    const g = svg('g', {
      class: `node st-${t.status}${critical.has(t.key) ? ' critical' : ''}`,
      transform: `translate(${x},${y})`,
      'data-testid': 'dag-node', 'data-task-key': t.key, 'data-status': t.status,
    });
    const tip = svg('title');
    tip.textContent = `${t.key}: ${t.title} (${t.status})`;
    const rect = svg('rect', { width: NODE_W, height: NODE_H, rx: 6 });
    const key = svg('text', { x: 8, y: 17, class: 'key' });
    key.textContent = `${t.key} · ${t.status.replaceAll('_', ' ')}`;
    const name = svg('text', { x: 8, y: 34 });
    name.textContent = t.title;
    g.append(tip, rect, key, name);
    root.append(g);
  }
  $('dag').replaceChildren(root);
  // Measured once in the document: each label cut to its box, the whole in the tooltip.
  for (const text of root.querySelectorAll('.node text')) fitLabel(text, NODE_W - 16);
}

/// Shortens an SVG label with an ellipsis until it is at most `max` wide
/// (user units). Without a layout (a hidden pane) it guesses from the length.
function fitLabel(text, max) {
  const full = text.textContent;
  const width = () => text.getComputedTextLength();
  if (width() === 0) {
    const chars = Math.floor(max / 7);
    if (full.length > chars) text.textContent = `${full.slice(0, chars - 1)}…`;
    return;
  }
  if (width() <= max) return;
  let lo = 0;
  let hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    text.textContent = `${full.slice(0, mid)}…`;
    if (width() <= max) lo = mid;
    else hi = mid - 1;
  }
  text.textContent = `${full.slice(0, lo)}…`;
}

/// Zooms the graph by `factor` around the point (cx, cy) in graph units
/// (the view's centre by default), never out past the whole graph.
function zoomDag(factor, cx, cy) {
  const full = state.dagFull;
  const v = state.dagView;
  if (!full || !v) return;
  const w = Math.min(full.w, Math.max(full.w / 12, v.w / factor));
  const scale = w / v.w;
  const px = cx ?? v.x + v.w / 2;
  const py = cy ?? v.y + v.h / 2;
  const h = v.h * scale;
  setDagView({ x: px - (px - v.x) * scale, y: py - (py - v.y) * scale, w, h });
}

/// Sets the view, kept over the graph (no panning off into the void).
function setDagView(v) {
  const full = state.dagFull;
  const x = Math.min(Math.max(v.x, full.x), full.x + full.w - v.w);
  const y = Math.min(Math.max(v.y, full.y), full.y + full.h - v.h);
  state.dagView = { x, y, w: v.w, h: v.h };
  $('dag').querySelector('svg')?.setAttribute('viewBox', `${x} ${y} ${v.w} ${v.h}`);
}

/// A point of the page in the graph's units.
function dagPoint(svgEl, clientX, clientY) {
  const pt = svgEl.createSVGPoint();
  pt.x = clientX;
  pt.y = clientY;
  return pt.matrixTransform(svgEl.getScreenCTM().inverse());
}

/// Buttons, Ctrl + wheel and drag. On the pane, once: the graph inside is
/// redrawn on every change.
function wireDag() {
  const pane = $('dag');
  $('dag-zoom-in').addEventListener('click', () => zoomDag(1.5));
  $('dag-zoom-out').addEventListener('click', () => zoomDag(1 / 1.5));
  $('dag-fit').addEventListener('click', () => state.dagFull && setDagView({ ...state.dagFull }));
  pane.addEventListener('wheel', (e) => {
    const el = pane.querySelector('svg');
    // Plain wheel scrolls the page, as everywhere else.
    if (!el || !(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    const p = dagPoint(el, e.clientX, e.clientY);
    zoomDag(e.deltaY < 0 ? 1.25 : 1 / 1.25, p.x, p.y);
  }, { passive: false });
  let grab = null;
  pane.addEventListener('pointerdown', (e) => {
    const el = pane.querySelector('svg');
    if (!el || e.button !== 0) return;
    grab = { el, start: dagPoint(el, e.clientX, e.clientY) };
    pane.setPointerCapture(e.pointerId);
    pane.classList.add('dragging');
  });
  pane.addEventListener('pointermove', (e) => {
    if (!grab) return;
    const el = pane.querySelector('svg');
    if (el !== grab.el) {
      grab = null;
      return;
    }
    // Keep the grabbed point under the pointer.
    const now = dagPoint(el, e.clientX, e.clientY);
    const v = state.dagView;
    setDagView({ ...v, x: v.x + grab.start.x - now.x, y: v.y + grab.start.y - now.y });
  });
  const release = () => {
    grab = null;
    pane.classList.remove('dragging');
  };
  pane.addEventListener('pointerup', release);
  pane.addEventListener('pointercancel', release);
}

// ----------------------------------------------------------- timeline

function appendTimeline(ev) {
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

// ------------------------------------------------------------ actions

function missionAction(path, body) {
  return async () => {
    const id = state.missionId;
    if (!id) return;
    const mission = await api('POST', `/v1/missions/${id}/${path}`, body());
    if (state.missionId === id && mission?.status) {
      state.mission = mission;
      renderMission(mission);
    }
    refreshMission();
    refreshMissions();
  };
}

function wireActions() {
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
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token-input').value.trim();
    if (!token) return;
    localStorage.setItem(TOKEN_KEY, token);
    $('token-input').value = '';
    start();
  });
  $('token-forget').addEventListener('click', () => {
    localStorage.removeItem(TOKEN_KEY);
    needToken('');
  });
  $('error').addEventListener('click', () => showError(''));
  $('goal-toggle').addEventListener('click', () => showGoal(!$('mission-goal').classList.contains('expanded')));
  wireDag();
}

// -------------------------------------------------------------- start

async function start() {
  state.token = localStorage.getItem(TOKEN_KEY);
  if (!state.token) {
    needToken('');
    return;
  }
  showError('');
  $('token-form').hidden = true;
  $('token-forget').hidden = false;
  try {
    await loadMissions();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) showError(e.message);
    if (!state.token) return;
  }
  refreshApprovals();
  followWorkspace();
  const wanted = new URL(location.href).searchParams.get('mission');
  if (wanted) selectMission(wanted);
}

takeTokenFromUrl();
wireActions();
start();
