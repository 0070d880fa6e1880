// Drives the board's Approvals panel in a real headless Chromium: opens a
// running mission, then (as its worker, with the attempt's token) asks for a
// tool approval the policy leaves to a person, and waits for the open page
// to show it from the event stream (tool, agent, task, reasons, counts). It
// tries to approve without a rationale (the service's refusal is shown),
// then approves with one and waits for the request to leave the panel.
// Prints a JSON summary for the Rust test to check.
//
//   node board-approvals.mjs BASE_URL TOKEN MISSION_ID ATTEMPT_ID ATTEMPT_TOKEN RATIONALE SCREENSHOT.png CHROMIUM
import { launch, pageWithErrors } from './browser.mjs';

const [base, token, missionId, attemptId, attemptToken, rationale, shot, executablePath] =
  process.argv.slice(2);
const summary = { steps: [] };
const step = (name) => summary.steps.push(name);

const browser = await launch(executablePath);
const { page, pageErrors } = await pageWithErrors(browser, { width: 1600, height: 1100 });

const waitFor = (fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout, polling: 50 });

try {
  await page.goto(`${base}/?mission=${missionId}#token=${encodeURIComponent(token)}`);
  await page.locator('[data-testid=mission-goal]').waitFor({ timeout: 15000 });
  await waitFor(() => document.getElementById('stream-state').dataset.state === 'live', null, 10000);
  await waitFor(() => !document.getElementById('approvals-empty').hidden, null, 10000);
  summary.countBefore = await page.textContent('[data-testid=approvals-count]');
  await page.evaluate(() => { window.__sameDocument = true; });
  step('empty');

  // The worker asks; the open page must show it without a reload.
  const resp = await fetch(`${base}/v1/attempts/${attemptId}/tool-approvals`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${attemptToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ tool: 'write_file', paths: ['src/lib.rs'], diff_lines: 12 }),
  });
  const asked = await resp.json();
  summary.askedStatus = resp.status;
  summary.approvalId = asked.id;
  summary.approvalStatus = asked.status;
  const item = `[data-testid=approval-item][data-id="${asked.id}"]`;
  await page.locator(item).waitFor({ timeout: 15000 });
  summary.sameDocument = await page.evaluate(() => window.__sameDocument === true);
  summary.facts = await page.$eval(item, (li) => Object.fromEntries(
    [...li.querySelectorAll('dd')].map((dd) => [dd.dataset.fact, dd.textContent])));
  summary.title = await page.textContent(`${item} strong`);
  summary.kind = await page.getAttribute(item, 'data-kind');
  summary.missionCount = await page.textContent('[data-testid=approvals-count]');
  await waitFor(() => !document.getElementById('approvals-pending').hidden, null, 10000);
  summary.workspaceCount = await page.getAttribute('[data-testid=approvals-pending]', 'data-count');
  // The task key comes from the mission, loaded before the panel.
  await waitFor((sel) => document.querySelector(`${sel} dd[data-fact=task]`)?.textContent === 'a',
    item, 10000);
  summary.task = await page.textContent(`${item} dd[data-fact=task]`);
  await waitFor(() => document.getElementById('stream-state').dataset.state === 'live', null, 10000);
  await page.screenshot({ path: shot.replace(/\.png$/, '-pending.png'), fullPage: true });
  step('shown');

  // No rationale: the service refuses, and the page says why.
  await page.click(`${item} [data-testid=approval-approve]`);
  const error = page.locator('[data-testid=error]');
  await error.waitFor({ state: 'visible', timeout: 10000 });
  summary.refusal = await error.textContent();
  summary.stillShownAfterRefusal = await page.locator(item).count();
  step('refused');

  await page.fill(`${item} [data-testid=approval-rationale]`, rationale);
  await page.click(`${item} [data-testid=approval-approve]`);
  await page.locator(item).waitFor({ state: 'detached', timeout: 15000 });
  await waitFor(() => document.getElementById('error').hidden, null, 5000);
  summary.missionCountAfter = await page.textContent('[data-testid=approvals-count]');
  await waitFor(() => document.getElementById('approvals-pending').hidden, null, 10000);
  summary.workspacePendingHidden = true;
  // The timeline tells the story from the stream.
  await waitFor(() => document.querySelector('[data-testid=timeline-item][data-kind="tool.approval_resolved"]'),
    null, 10000);
  step('approved');

  summary.pageErrors = pageErrors.filter((e) => !e.includes('400'));
  await page.screenshot({ path: shot, fullPage: true });
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  summary.pageErrors = pageErrors;
  summary.shownError = await page.textContent('[data-testid=error]').catch(() => null);
  await page.screenshot({ path: shot.replace(/\.png$/, '-failure.png'), fullPage: true }).catch(() => {});
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
