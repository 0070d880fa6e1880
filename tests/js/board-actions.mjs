// Clicks through the board's "needs you" actions in a real headless
// Chromium. First a mission whose budget refused a task: the Approvals panel
// lists it with the budget that fits, the person raises the budget there,
// and the page shows the task run, the item go and the mission complete.
// Then a failed mission: the page says why under the heading, offers Retry
// or Skip for its failed task, and after Continue shows it executing again
// until it completes. The Rust test plays the worker meanwhile. Prints a
// JSON summary for the Rust test to check.
//
//   node board-actions.mjs BASE_URL TOKEN BUDGET_MISSION FAILED_MISSION NEW_BUDGET FEEDBACK SHOT_DIR CHROMIUM
import { launch, pageWithErrors } from './browser.mjs';

const [base, token, budgetMission, failedMission, newBudget, feedback, shots, executablePath] =
  process.argv.slice(2);
const summary = { steps: [] };
const step = (name) => summary.steps.push(name);

const browser = await launch(executablePath);
const { page, pageErrors } = await pageWithErrors(browser, { width: 1400, height: 1000 });

const waitFor = (fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout, polling: 50 });
const status = () => page.getAttribute('[data-testid=mission-status]', 'data-status');
const waitStatus = (s, timeout) => waitFor((want) =>
  document.querySelector('[data-testid=mission-status]').dataset.status === want, s, timeout);
const live = () => waitFor(() => document.getElementById('stream-state').dataset.state === 'live', null, 10000);

/// From now on, records every column each card is shown in and every
/// status the mission is shown with (the same document, no reload).
const watch = () => page.evaluate(() => {
  window.__seen = { columns: {}, statuses: [] };
  const snap = () => {
    for (const c of document.querySelectorAll('[data-testid=card]')) {
      const l = (window.__seen.columns[c.dataset.taskKey] ??= []);
      if (l.at(-1) !== c.dataset.column) l.push(c.dataset.column);
    }
    const s = document.querySelector('[data-testid=mission-status]').dataset.status;
    if (s && window.__seen.statuses.at(-1) !== s) window.__seen.statuses.push(s);
  };
  snap();
  window.__observer?.disconnect();
  window.__observer = new MutationObserver(snap);
  window.__observer.observe(document.getElementById('mission'),
    { childList: true, subtree: true, attributes: true, attributeFilter: ['data-status', 'data-column'] });
});
const seen = () => page.evaluate(() => window.__seen);

try {
  // ---------------------------------------------------------------- budget
  await page.goto(`${base}/?mission=${budgetMission}#token=${encodeURIComponent(token)}`);
  await page.locator('[data-testid=mission-goal]').waitFor({ timeout: 15000 });
  await live();
  const item = '[data-testid=approval-item][data-kind=budget]';
  await page.locator(item).waitFor({ timeout: 15000 });
  await watch();
  summary.budget = {
    status: await status(),
    task: await page.getAttribute(item, 'data-task-key'),
    facts: await page.$eval(item, (li) => Object.fromEntries(
      [...li.querySelectorAll('dd')].map((dd) => [dd.dataset.fact, dd.textContent]))),
    buttons: await page.$$eval(`${item} button`, (bs) => bs.map((b) => b.textContent)),
    prefilled: await page.inputValue(`${item} [data-testid=attention-budget]`),
    count: await page.textContent('[data-testid=approvals-count]'),
  };
  await page.screenshot({ path: `${shots}/budget-before.png`, fullPage: true });
  step('budget item shown');

  await page.fill(`${item} [data-testid=attention-budget]`, newBudget);
  await page.click(`${item} [data-testid=attention-raise-budget]`);
  await page.locator(item).waitFor({ state: 'detached', timeout: 15000 });
  step('budget raised');
  await waitStatus('completed', 60000);
  await waitFor(() => !document.getElementById('approvals-empty').hidden, null, 10000);
  Object.assign(summary.budget, {
    seen: await seen(),
    countAfter: await page.textContent('[data-testid=approvals-count]'),
    budgetLine: await page.textContent('#mission-budget'),
    detailAfter: await page.textContent('[data-testid=status-detail]'),
    error: await page.isVisible('[data-testid=error]'),
  });
  await page.screenshot({ path: `${shots}/budget-after.png`, fullPage: true });
  step('budget mission completed');

  // ------------------------------------------------------- failed mission
  await page.click(`[data-testid=mission-item][data-mission-id="${failedMission}"]`);
  await waitStatus('failed', 15000);
  await page.locator('[data-testid=continue-actions]').waitFor({ state: 'visible', timeout: 10000 });
  await live();
  await watch();
  summary.failed = {
    detail: await page.textContent('[data-testid=status-detail]'),
    detailShown: await page.isVisible('[data-testid=status-detail]'),
    failureShown: await page.isVisible('#mission-failure'),
    progress: await page.textContent('[data-testid=mission-progress]'),
    choices: await page.$$eval('[data-testid=continue-task]', (lis) => lis.map((li) => ({
      task: li.dataset.taskKey,
      options: [...li.querySelectorAll('input[type=radio]')].map((i) => `${i.value}${i.checked ? '*' : ''}`),
      error: li.querySelector('.err')?.textContent ?? null,
    }))),
    runActionsShown: await page.isVisible('#run-actions'),
    approvalsEmpty: await page.textContent('#approvals-empty'),
  };
  await page.screenshot({ path: `${shots}/failed-before.png`, fullPage: true });
  step('failed mission shown');

  // Skip first, then change to Retry: the choice sent is the last one made.
  await page.check('[data-testid=continue-task][data-task-key=a] [data-testid=continue-skip]');
  await page.check('[data-testid=continue-task][data-task-key=a] [data-testid=continue-retry]');
  await page.fill('#continue-feedback', feedback);
  await page.click('[data-testid=continue-mission]');
  await page.locator('[data-testid=continue-actions]').waitFor({ state: 'hidden', timeout: 10000 });
  step('continued');
  await waitStatus('completed', 60000);
  Object.assign(summary.failed, {
    seen: await seen(),
    detailAfter: await page.textContent('[data-testid=status-detail]'),
    progressAfter: await page.textContent('[data-testid=mission-progress]'),
    feedbackCleared: (await page.inputValue('#continue-feedback')) === '',
    error: await page.isVisible('[data-testid=error]'),
  });
  await page.screenshot({ path: `${shots}/failed-after.png`, fullPage: true });
  step('failed mission completed');

  summary.pageErrors = pageErrors;
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  summary.pageErrors = pageErrors;
  summary.seen = await seen().catch(() => null);
  summary.shownError = await page.textContent('[data-testid=error]').catch(() => null);
  await page.screenshot({ path: `${shots}/failure.png`, fullPage: true }).catch(() => {});
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
