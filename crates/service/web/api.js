// Calls to the service's `/v1` API with the page's token, and the
// coalescing of the refreshes that events trigger.

import { showError } from './dom.js';
import { hooks, state } from './state.js';

/// A refusal of the API: its HTTP status, error code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/// Calls the API; answers its JSON, or throws its refusal as an ApiError
/// (a 401 also asks for a token).
export async function api(method, path, body) {
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
    if (resp.status === 401) hooks.needToken(e.message);
    throw e;
  }
  return data;
}

/// Runs `fn` at most once per `ms`, and once more if asked while it ran.
export function coalesce(fn, ms) {
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
