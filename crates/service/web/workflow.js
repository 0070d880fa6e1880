// The diagram of one workflow instance (`/workflow?instance=<id>`): the
// workflow's own BPMN export drawn by bpmn-js's viewer (vendored, served by
// the service, so it works offline), with what the instance completed, where
// its tokens are, what waits for a person or an event and what stopped at an
// incident marked on the elements; beside it the status, people's tasks,
// waiting tokens and incidents.
//
// Live: the page follows the workspace's event stream for `workflow.*`
// events (read with fetch, as the board does, to send the token) and
// fetches the instance again when one names it, coalesced; only the markers
// are redrawn (the diagram is imported again only if the version changes).
// Each time the stream is (re)connected the instance is fetched too, so
// nothing between the first fetch and the connection is missed.

import { $, badge, showError, timeOf } from './dom.js';
import { ApiError, api, coalesce } from './api.js';
import { hooks, state } from './state.js';
import { follow } from './stream.js';

const TOKEN_KEY = 'coordinator.token';
/// Events of one burst (a command writes one; a tick may write several)
/// are taken in one fetch.
const REFRESH_MS = 100;
const MARKERS = ['wf-completed', 'wf-active', 'wf-waiting', 'wf-incident'];
/// Token waits that are someone else's move: a person, a timer, a message...
const WAITING = new Set(['timer', 'message', 'signal', 'event_gateway']);

const view = {
  instanceId: new URL(location.href).searchParams.get('instance'),
  viewer: null,
  /// `workflow_id@version` of the drawn diagram.
  drawn: null,
  /// element id → marker classes currently set.
  marked: new Map(),
  /// Aborts the event stream.
  stream: null,
};

function takeTokenFromUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (!token) return;
  localStorage.setItem(TOKEN_KEY, token);
  params.delete('token');
  const rest = params.toString();
  history.replaceState(null, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
}

function needToken(message) {
  stopFollowing();
  state.token = null;
  $('token-form').hidden = false;
  $('token-forget').hidden = true;
  $('token-input').focus();
  if (message) showError(message);
}

function setLiveState(s) {
  const el = $('poll-state');
  el.dataset.state = s;
  el.textContent = s;
}

function stopFollowing() {
  if (view.stream) view.stream.abort();
  view.stream = null;
}

/// The workflow's BPMN document, as the instance runs it.
async function fetchXml(inst) {
  const resp = await fetch(`/v1/workflows/${inst.workflow_id}/bpmn?version=${inst.version}`, {
    headers: { Authorization: `Bearer ${state.token}`, Accept: 'application/xml' },
    cache: 'no-store',
  });
  if (resp.status === 401) {
    hooks.needToken('the token was refused');
    throw new ApiError(401, 'unauthorized', 'the token was refused');
  }
  if (!resp.ok) throw new ApiError(resp.status, 'http_error', `the export answered ${resp.status}`);
  return resp.text();
}

async function draw(inst) {
  const key = `${inst.workflow_id}@${inst.version}`;
  if (view.drawn === key) return;
  const xml = await fetchXml(inst);
  if (!view.viewer) view.viewer = new window.BpmnJS({ container: $('diagram') });
  const { warnings } = await view.viewer.importXML(xml);
  if (warnings.length) console.warn('bpmn-js import warnings', warnings);
  view.viewer.get('canvas').zoom('fit-viewport', 'auto');
  view.drawn = key;
  view.marked = new Map();
}

/// Element id → the marker classes the instance calls for.
export function markersOf(inst) {
  const want = new Map();
  const add = (id, cls) => {
    if (!want.has(id)) want.set(id, new Set());
    want.get(id).add(cls);
  };
  const active = new Set(inst.active);
  for (const id of inst.completed) if (!active.has(id)) add(id, 'wf-completed');
  for (const id of inst.active) add(id, 'wf-active');
  for (const t of inst.human_tasks) add(t.node_id, 'wf-waiting');
  for (const t of inst.tokens) if (WAITING.has(t.wait)) add(t.node_id, 'wf-waiting');
  for (const i of inst.incidents) add(i.node, 'wf-incident');
  return want;
}

function mark(inst) {
  const canvas = view.viewer.get('canvas');
  const registry = view.viewer.get('elementRegistry');
  const want = markersOf(inst);
  for (const [id, classes] of view.marked) {
    for (const cls of classes) if (!want.get(id)?.has(cls)) canvas.removeMarker(id, cls);
  }
  for (const [id, classes] of want) {
    // An element without a shape (a process, an undrawn node) has nothing to mark.
    if (!registry.get(id)) continue;
    for (const cls of classes) if (!view.marked.get(id)?.has(cls)) canvas.addMarker(id, cls);
  }
  view.marked = want;
  const svg = $('diagram');
  svg.dataset.active = inst.active.join(' ');
  svg.dataset.completed = inst.completed.join(' ');
}

function item(...parts) {
  const li = document.createElement('li');
  li.append(...parts);
  return li;
}

function strong(text) {
  const s = document.createElement('strong');
  s.textContent = text;
  return s;
}

function list(id, entries) {
  $(id).replaceChildren(...entries);
  $(`${id}-empty`).hidden = entries.length > 0;
}

function renderSide(inst) {
  $('wf-title').textContent = `Workflow instance ${inst.business_key ?? inst.id}`;
  const status = $('wf-status');
  status.replaceWith(Object.assign(badge(inst.status), { id: 'wf-status' }));
  $('wf-status').dataset.testid = 'wf-status';
  $('wf-status').dataset.status = inst.status;
  $('wf-version').textContent = `version ${inst.version}`;
  $('wf-process').textContent = `process ${inst.process_id}`;
  $('wf-updated').replaceChildren('updated ', timeOf(inst.updated_at));
  list('wf-people', inst.human_tasks.map((t) => {
    const li = item(strong(t.work?.name || t.node_id), ` (${t.node_id}, token ${t.token})`);
    li.dataset.node = t.node_id;
    li.dataset.testid = 'wf-person-task';
    return li;
  }));
  const people = new Set(inst.human_tasks.map((t) => t.token));
  list('wf-tokens', inst.tokens.filter((t) => !people.has(t.token)).map((t) => {
    const li = item(strong(t.node_id), ` waits for ${t.wait}`,
      t.message_name ? ` "${t.message_name}"` : '', t.signal_name ? ` "${t.signal_name}"` : '');
    if (t.mission_id) {
      const a = document.createElement('a');
      a.href = `/?mission=${encodeURIComponent(t.mission_id)}`;
      a.textContent = 'mission on the board';
      li.append(' (', a, ')');
    }
    li.dataset.node = t.node_id;
    return li;
  }));
  list('wf-incidents', inst.incidents.map((i) => {
    const li = item(strong(i.node), `: ${i.message}`);
    li.dataset.node = i.node;
    li.dataset.testid = 'wf-incident';
    return li;
  }));
}

/// Fetches the instance and redraws; `true` while it still runs.
async function refresh() {
  try {
    const inst = await api('GET', `/v1/workflow-instances/${encodeURIComponent(view.instanceId)}`);
    await draw(inst);
    mark(inst);
    renderSide(inst);
    showError('');
    document.body.dataset.loaded = 'true';
    if (inst.status !== 'running') {
      // It will not move again: the stream is no longer needed.
      stopFollowing();
      setLiveState(inst.status);
      return false;
    }
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return false;
    showError(e.message);
    return true;
  }
}

const refreshSoon = coalesce(refresh, REFRESH_MS);

/// Follows `workflow.*` events; those naming this instance (or an instance
/// it called) bring a fresh copy of it.
function followInstance() {
  stopFollowing();
  const ctl = new AbortController();
  view.stream = ctl;
  follow('/v1/events?kind=workflow.*', {
    signal: ctl.signal,
    onEvent: (e) => {
      let data;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      const p = data.payload ?? {};
      if (p.instance_id !== view.instanceId && p.parent_id !== view.instanceId) return;
      document.body.dataset.lastEvent = `${e.event} ${p.command ?? ''}`.trim();
      refreshSoon();
    },
    onState: (s) => {
      if (ctl.signal.aborted) return;
      setLiveState(s);
      // (Re)connected: whatever happened before the stream began is fetched.
      if (s === 'live') refreshSoon();
    },
  });
}

function start() {
  state.token = localStorage.getItem(TOKEN_KEY);
  if (!state.token) {
    needToken('');
    return;
  }
  if (!view.instanceId) {
    showError('No instance: open this page as /workflow?instance=<id>.');
    return;
  }
  $('token-form').hidden = true;
  $('token-forget').hidden = false;
  refresh().then((running) => {
    if (running && state.token) followInstance();
  });
}

function wire() {
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
}

hooks.needToken = needToken;
takeTokenFromUrl();
wire();
start();
