// The built-in web board: the missions list, a mission's kanban columns,
// task graph and event timeline, the plan and result decisions, and
// everything that waits for a person.
//
// This entry module holds the token and starts the page; the rest is in
// modules named for what they do. Everything live comes from the service's
// Server-Sent Event streams (stream.js). No framework and no build step:
// the files are served as they are, as ES modules.

import { $, showError } from './dom.js';
import { ApiError, coalesce } from './api.js';
import { stopStream } from './stream.js';
import { REFRESH_DELAY_MS, hooks, state } from './state.js';
import { followWorkspace, loadMission, loadMissions, selectMission } from './missions.js';
import { loadApprovals } from './attention.js';
import { wireHeader } from './header.js';
import { wireDag } from './graph.js';

const TOKEN_KEY = 'coordinator.token';

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

/// The token form, the forget button and the error line (a click hides it).
function wireToken() {
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
  hooks.refreshApprovals();
  followWorkspace();
  const wanted = new URL(location.href).searchParams.get('mission');
  if (wanted) selectMission(wanted);
}

hooks.refreshMission = coalesce(loadMission, REFRESH_DELAY_MS);
hooks.refreshMissions = coalesce(loadMissions, REFRESH_DELAY_MS);
hooks.refreshApprovals = coalesce(loadApprovals, REFRESH_DELAY_MS);
hooks.needToken = needToken;

takeTokenFromUrl();
wireToken();
wireHeader();
wireDag();
start();

