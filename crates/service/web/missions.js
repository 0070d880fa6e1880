// The missions list, following the workspace's event stream, and the
// selected mission: loaded, then kept live from its own stream.

import { $, badge, showError } from './dom.js';
import { ApiError, api } from './api.js';
import { follow, setStreamState, stopStream } from './stream.js';
import { hooks, state } from './state.js';
import { renderMission } from './header.js';
import { renderBoard } from './cards.js';
import { renderDag } from './graph.js';
import { appendTimeline } from './timeline.js';

/// Event kinds after which what waits for a person may have changed.
const APPROVAL_KINDS =
  /^(tool\.approval_|decision\.|team_decision\.|task\.(awaiting_|resolved|budget_refused|handed_off)|mission\.)/;

/// Lists the workspace's latest missions.
export async function loadMissions() {
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

/// Follows the workspace's stream: the missions list and the count of
/// what waits for a person.
export function followWorkspace() {
  stopStream('workspace');
  const ctl = new AbortController();
  state.workspaceStream = ctl;
  // Mission-level events change the list; approval events, of any
  // mission, the workspace's count of what waits for a person.
  follow('/v1/events?kind=mission.*,tool.approval_*,decision.*,task.awaiting_human,task.resolved', {
    signal: ctl.signal,
    onEvent: (e) => {
      if (e.event.startsWith('mission.')) hooks.refreshMissions();
      else hooks.refreshApprovals();
    },
    onState: (s) => setStreamState('workspace', s),
  });
}

/// Shows mission `id`: loads it, then follows its stream (replayed from
/// the first event into the timeline).
export async function selectMission(id) {
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
  hooks.refreshApprovals();
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
      hooks.refreshMission();
      if (APPROVAL_KINDS.test(ev.kind)) hooks.refreshApprovals();
    },
    onState: (s) => setStreamState('mission', s),
  });
}

/// Loads the selected mission and its board, and draws them.
export async function loadMission() {
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
  if (statusChanged) hooks.refreshMissions();
}
