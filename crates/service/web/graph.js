// The task graph: an SVG of the plan, scaled to fit its pane, with zoom
// (buttons, Ctrl + wheel) and pan (drag).

import { $ } from './dom.js';
import { state } from './state.js';

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
export function renderDag(m) {
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
export function wireDag() {
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
