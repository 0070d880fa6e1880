// Loads the built-in board for one crowded mission (a 10,000-character goal,
// long task keys and titles, a task waiting for a person, a failed task,
// cancelled ones, done ones) at four widths in a real headless Chromium, and
// measures: every card, label, button and form must lie inside its column or
// pane, the graph inside its pane and its labels inside their boxes, the
// heading inside the viewport and clamped. Saves one screenshot per width.
// Prints a JSON summary (problems per width, what the page said) for the
// Rust test to check; exits 1 only when the page could not be driven.
//
//   node board-layout.mjs BASE_URL TOKEN MISSION_ID ARTIFACT_DIR CHROMIUM
import { launch } from './browser.mjs';

const [base, token, missionId, dir, executablePath] = process.argv.slice(2);
const WIDTHS = [[1280, 900], [1400, 1000], [1920, 1080], [390, 844]];
const summary = { problems: {}, pages: {} };

const browser = await launch(executablePath);

/// Runs in the page: every way something sticks out, as sentences.
function measure() {
  const problems = [];
  // Half a pixel of rounding is not an overflow.
  const SLACK = 1;
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none';
  };
  const name = (el) => {
    const id = el.id ? `#${el.id}` : '';
    const test = el.dataset?.testid ? `[${el.dataset.testid}]` : '';
    const key = el.dataset?.taskKey ? `{${el.dataset.taskKey}}` : '';
    const text = (el.textContent ?? '').trim().slice(0, 30);
    return `${el.tagName.toLowerCase()}${id}${test}${key} "${text}"`;
  };
  // `sideways`: only left and right count (a list that scrolls up and down).
  const inside = (inner, outer, what, sideways = false) => {
    const a = inner.getBoundingClientRect();
    const b = outer.getBoundingClientRect();
    const out = [];
    if (a.left < b.left - SLACK) out.push(`left by ${Math.round(b.left - a.left)}px`);
    if (a.right > b.right + SLACK) out.push(`right by ${Math.round(a.right - b.right)}px`);
    if (!sideways && a.top < b.top - SLACK) out.push(`top by ${Math.round(b.top - a.top)}px`);
    if (!sideways && a.bottom > b.bottom + SLACK) out.push(`bottom by ${Math.round(a.bottom - b.bottom)}px`);
    if (out.length) problems.push(`${what}: ${name(inner)} sticks out of ${name(outer)} (${out.join(', ')})`);
  };
  const vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw + SLACK) {
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth}px in a ${vw}px viewport`);
  }

  // The kanban: every column inside the board, every card and everything
  // in a card inside its column.
  const board = document.querySelector('[data-testid=board]');
  for (const col of board.querySelectorAll('.column')) {
    inside(col, board, 'column');
    for (const el of col.querySelectorAll('*')) {
      if (visible(el)) inside(el, col, 'in a column');
    }
  }
  for (const card of board.querySelectorAll('[data-testid=card]')) {
    for (const el of card.querySelectorAll('*')) {
      if (visible(el)) inside(el, card, 'in a card');
    }
  }
  const boardBox = board.getBoundingClientRect();
  if (boardBox.right > vw + SLACK) problems.push(`the board ends ${Math.round(boardBox.right - vw)}px past the viewport`);

  // The graph fits its pane; each label fits its node's box.
  const pane = document.getElementById('dag');
  const svg = pane.querySelector('svg[data-testid=dag]');
  if (svg) {
    inside(svg, pane, 'graph');
    for (const node of svg.querySelectorAll('[data-testid=dag-node]')) {
      const rect = node.querySelector('rect');
      for (const text of node.querySelectorAll('text')) inside(text, rect, 'graph label');
    }
  } else {
    problems.push('no task graph');
  }

  // The heading: inside the viewport, and a few lines, not a screenful.
  const goal = document.getElementById('mission-goal');
  const g = goal.getBoundingClientRect();
  if (g.right > vw + SLACK) problems.push(`the goal heading ends ${Math.round(g.right - vw)}px past the viewport`);
  const lines = g.height / parseFloat(getComputedStyle(goal).lineHeight || '24');
  if (g.height > 160) problems.push(`the goal heading is ${Math.round(g.height)}px tall (${lines.toFixed(1)} lines)`);

  // The missions list: each entry inside the list and short.
  const nav = document.querySelector('nav.missions');
  for (const item of nav.querySelectorAll('.mission-item')) {
    inside(item, nav, 'mission list');
    if (item.getBoundingClientRect().height > 140) {
      problems.push(`a mission list entry is ${Math.round(item.getBoundingClientRect().height)}px tall`);
    }
    for (const el of item.querySelectorAll('*')) if (visible(el)) inside(el, item, 'in a mission entry');
  }

  // The mission head, the approvals and the timeline (which scrolls up and
  // down): nothing past their sides.
  for (const box of document.querySelectorAll('.mission-head, [data-testid=approvals], .timeline')) {
    if (!visible(box)) continue;
    for (const el of box.querySelectorAll('button, textarea, input, form, li, p, dd, strong, span, label')) {
      if (visible(el)) inside(el, box, 'in a panel', true);
    }
  }
  // Any control at all: inside the viewport.
  for (const el of document.querySelectorAll('button, textarea, input, summary')) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right > vw + SLACK || r.left < -SLACK) problems.push(`control ${name(el)} is outside the viewport`);
  }
  // Keep the list readable: the same trouble on many cards once per kind.
  return [...new Set(problems)];
}

/// Runs in the page: what it says about the mission.
function read() {
  const text = (sel) => document.querySelector(sel)?.textContent?.trim() ?? null;
  const cards = [...document.querySelectorAll('[data-testid=card]')].map((c) => ({
    key: c.dataset.taskKey,
    column: c.dataset.column,
    status: c.dataset.status ?? null,
    badge: c.querySelector('[data-testid=card-status]')?.textContent?.trim() ?? null,
    attempts: c.querySelector('[data-testid=card-attempts]')?.textContent?.trim() ?? null,
    error: c.querySelector('[data-testid=card-error]')?.textContent?.trim() ?? null,
    colour: getComputedStyle(c).borderLeftColor,
  }));
  return {
    progress: text('[data-testid=mission-progress]'),
    progressBar: [...document.querySelectorAll('[data-testid=progress-bar] [data-part]')]
      .map((s) => s.dataset.part),
    statusDetail: text('[data-testid=status-detail]'),
    approvalsEmptyShown: !document.getElementById('approvals-empty').hidden,
    approvals: [...document.querySelectorAll('[data-testid=approval-item]')].map((li) => ({
      kind: li.dataset.kind,
      task: li.dataset.taskKey ?? null,
      buttons: [...li.querySelectorAll('button')].map((b) => b.textContent.trim()),
    })),
    cards,
    headingClamped: document.getElementById('mission-goal').scrollHeight
      > document.getElementById('mission-goal').clientHeight,
  };
}

try {
  for (const [width, height] of WIDTHS) {
    const page = await browser.newPage({ viewport: { width, height } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(`${base}/?mission=${missionId}#token=${encodeURIComponent(token)}`);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=card]').length >= 9
      && document.querySelector('svg[data-testid=dag]')
      && document.getElementById('stream-state').dataset.state === 'live', null, { timeout: 20000 });
    // Let the approvals and a last refresh land.
    await page.waitForTimeout(700);
    summary.problems[width] = await page.evaluate(measure);
    summary.pages[width] = await page.evaluate(read);
    summary.pages[width].errors = errors;
    await page.screenshot({ path: `${dir}/board-${width}.png`, fullPage: true });

    if (width === 1400) {
      // The heading opens on request, and the graph zooms and pans inside its pane.
      const more = page.locator('[data-testid=goal-toggle]');
      if (await more.isVisible().catch(() => false)) {
        await more.click();
        summary.expanded = await page.evaluate(() => document.getElementById('mission-goal')
          .getBoundingClientRect().height);
        await more.click();
      }
      const zoom = page.locator('[data-testid=dag-zoom-in]');
      if (await zoom.isVisible().catch(() => false)) {
        const before = await page.getAttribute('svg[data-testid=dag]', 'viewBox');
        await zoom.click();
        await zoom.click();
        const box = await page.locator('svg[data-testid=dag]').boundingBox();
        await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
        await page.mouse.down();
        await page.mouse.move(box.x + box.width / 2 - 60, box.y + box.height / 2 - 20, { steps: 4 });
        await page.mouse.up();
        const after = await page.getAttribute('svg[data-testid=dag]', 'viewBox');
        summary.zoom = { before, after, problems: await page.evaluate(measure) };
        await page.screenshot({ path: `${dir}/board-${width}-zoomed.png`, fullPage: true });
      }
    }
    await page.close();
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
