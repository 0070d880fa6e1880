// Server-Sent Event streams read with fetch() and a small parser rather
// than EventSource, because EventSource cannot send the Authorization header
// the API requires; and the live/reconnecting indicator in the header.

import { $, showError } from './dom.js';
import { hooks, state } from './state.js';

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

/// Follows the stream at `path` until `signal` aborts, calling `onEvent`
/// with each {id, event, data}. After a drop it reconnects with
/// Last-Event-ID, so the service resumes exactly after the last event seen.
export async function follow(path, { signal, onEvent, onState }) {
  let lastId = null;
  let retryMs = 1000;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${state.token}`, Accept: 'text/event-stream' };
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      const resp = await fetch(path, { headers, signal, cache: 'no-store' });
      if (resp.status === 401) {
        hooks.needToken('the token was refused');
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

/// Records the state of stream `name` and shows the streams' state.
export function setStreamState(name, s) {
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

/// Stops stream `name` (`mission` or `workspace`).
export function stopStream(name) {
  const ctl = name === 'mission' ? state.missionStream : state.workspaceStream;
  if (ctl) ctl.abort();
  state.streamStates.delete(name);
  showStreamState();
  if (name === 'mission') state.missionStream = null;
  else state.workspaceStream = null;
}
