// Small helpers for the page's elements: lookups, the error line, user
// actions, buttons, badges, money and times.

/// The element with `id`.
export const $ = (id) => document.getElementById(id);

/// Shows `message` in the error line, or hides the line when empty.
export function showError(message) {
  const el = $('error');
  el.textContent = message || '';
  el.hidden = !message;
}

/// Runs a user action: clears the last error, disables `button` meanwhile,
/// and shows the API's message if it fails.
export async function act(button, fn) {
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

/// A plain button with its test id.
export function button(text, testid) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.dataset.testid = testid;
  return b;
}

/// A status badge, coloured by the st-<status> classes.
export function badge(status) {
  const s = document.createElement('span');
  s.className = `badge st-${status}`;
  s.textContent = status.replaceAll('_', ' ');
  return s;
}

/// Dollars, to the cent.
export const money = (n) => `$${Number(n).toFixed(2)}`;

/// A <time> with the local date and time of `iso`, then `suffix`.
export function timeOf(iso, suffix = '') {
  const t = document.createElement('time');
  t.dateTime = iso;
  t.textContent = `${new Date(iso).toLocaleString()}${suffix}`;
  return t;
}

/// "for 5 min": how long something has waited.
export function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  const text = s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${Math.round(s / 60)} min`
    : s < 172800 ? `${Math.round(s / 3600)} h` : `${Math.round(s / 86400)} days`;
  return timeOf(iso, ` (for ${text})`);
}
