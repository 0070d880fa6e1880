// Drives the built-in web board in a real headless Chromium: opens it with a
// token in the URL fragment, picks the mission, approves its plan, watches
// every card reach done (live, in the same document), accepts the result,
// and saves a screenshot. Prints a JSON summary for the Rust test to check.
//
//   node board-page.mjs BASE_URL TOKEN MISSION_ID SCREENSHOT.png CHROMIUM
import { launch, pageWithErrors } from './browser.mjs';

const [base, token, missionId, shot, executablePath] = process.argv.slice(2);
const summary = { steps: [] };
const step = (name) => summary.steps.push(name);

const browser = await launch(executablePath);
const { page, pageErrors } = await pageWithErrors(browser, { width: 1600, height: 1100 });

const cards = (column) =>
  page.evaluate((c) => [...document.querySelectorAll(`[data-testid=column-${c}] [data-testid=card]`)]
    .map((el) => el.dataset.taskKey), column);
const waitFor = (fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout, polling: 50 });

try {
  // Without a token the page asks for one; a wrong one is refused with the
  // service's message, the right one opens the board. (A fresh context: its
  // own local storage.)
  const asking = await browser.newContext();
  const first = await asking.newPage();
  await first.goto(`${base}/`);
  await first.locator('[data-testid=token-form]').waitFor({ state: 'visible', timeout: 10000 });
  await first.getByLabel('API token').fill('not-a-real-token');
  await first.getByRole('button', { name: 'Use token' }).click();
  await first.locator('[data-testid=error]').waitFor({ state: 'visible', timeout: 10000 });
  summary.wrongToken = await first.textContent('[data-testid=error]');
  await first.getByLabel('API token').fill(token);
  await first.getByRole('button', { name: 'Use token' }).click();
  await first.locator(`[data-testid=mission-item][data-mission-id="${missionId}"]`).waitFor({ timeout: 10000 });
  summary.tokenFormHidden = await first.locator('[data-testid=token-form]').isHidden();
  await asking.close();
  step('token form');

  await page.goto(`${base}/#token=${encodeURIComponent(token)}`);
  // The token leaves the address bar once read.
  await waitFor(() => !location.hash.includes('token'), null, 10000);
  summary.urlAfterToken = page.url();
  step('token taken');

  const item = page.locator(`[data-testid=mission-item][data-mission-id="${missionId}"]`);
  await item.waitFor({ timeout: 15000 });
  summary.listedStatus = await item.getAttribute('data-status');
  await item.click();
  await waitFor(() => document.querySelectorAll('[data-testid=column-backlog] [data-testid=card]').length === 3,
    null, 15000);
  summary.backlogBefore = await cards('backlog');
  await page.locator('svg[data-testid=dag]').waitFor({ timeout: 10000 });
  summary.dagNodes = await page.locator('[data-testid=dag-node]').count();
  summary.dagEdges = await page.$$eval('[data-testid=dag-edge]',
    (es) => es.map((e) => `${e.dataset.from}->${e.dataset.to}`));
  summary.statusBefore = await page.getAttribute('[data-testid=mission-status]', 'data-status');
  await waitFor(() => document.getElementById('stream-state').dataset.state === 'live', null, 10000);
  step('mission shown');

  // From here on the page must update itself: a marker that a reload would
  // erase, and a record of every board state the page showed.
  await page.evaluate(() => {
    window.__sameDocument = true;
    window.__boards = [];
    const snap = () => {
      const m = {};
      for (const c of document.querySelectorAll('[data-testid=card]')) m[c.dataset.taskKey] = c.dataset.column;
      const s = JSON.stringify(m);
      if (window.__boards.at(-1) !== s) window.__boards.push(s);
    };
    snap();
    new MutationObserver(snap).observe(document.getElementById('board'), { childList: true, subtree: true });
  });

  await page.click('[data-testid=approve-plan]');
  step('approved');
  await waitFor(() => document.querySelectorAll('[data-testid=column-done] [data-testid=card]').length === 3,
    null, 60000);
  summary.doneAfter = await cards('done');
  step('all done');

  const accept = page.locator('[data-testid=accept-result]');
  await accept.waitFor({ state: 'visible', timeout: 30000 });
  summary.statusAtReview = await page.getAttribute('[data-testid=mission-status]', 'data-status');
  await accept.click();
  await waitFor(() => document.querySelector('[data-testid=mission-status]').dataset.status === 'completed',
    null, 15000);
  // The missions list follows the workspace stream.
  await waitFor((id) => document.querySelector(`[data-testid=mission-item][data-mission-id="${id}"]`)
    ?.dataset.status === 'completed', missionId, 15000);
  summary.statusAfter = 'completed';
  // The timeline gets the last transition from the stream.
  await waitFor(() => {
    const top = document.querySelector('[data-testid=timeline-item]');
    return top?.dataset.kind === 'mission.status_changed' && top.textContent.includes('→ completed');
  }, null, 15000);
  step('accepted');

  summary.sameDocument = await page.evaluate(() => window.__sameDocument === true);
  summary.boards = await page.evaluate(() => window.__boards.map((s) => JSON.parse(s)));
  summary.dagSucceeded = await page.locator('[data-testid=dag-node][data-status=succeeded]').count();
  summary.timeline = await page.$$eval('[data-testid=timeline-item]',
    (items) => items.map((li) => ({ seq: Number(li.dataset.seq), kind: li.dataset.kind })));

  // Up to here nothing may have gone wrong in the page; the refusal below is
  // logged by Chromium on purpose.
  summary.pageErrors = [...pageErrors];

  // A refused action shows the API's message: approving a finished mission.
  await page.evaluate(() => document.getElementById('approve-plan').click());
  const error = page.locator('[data-testid=error]');
  await error.waitFor({ state: 'visible', timeout: 10000 });
  summary.refusal = await error.textContent();
  await page.click('[data-testid=error]');
  await error.waitFor({ state: 'hidden', timeout: 5000 });

  await page.screenshot({ path: shot, fullPage: true });
  summary.screenshot = shot;
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  summary.pageErrors = pageErrors;
  summary.boards = await page.evaluate(() => (window.__boards ?? []).map((s) => JSON.parse(s))).catch(() => null);
  summary.shownError = await page.textContent('[data-testid=error]').catch(() => null);
  await page.screenshot({ path: shot.replace(/\.png$/, '-failure.png'), fullPage: true }).catch(() => {});
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
