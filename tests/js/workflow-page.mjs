// Drives the workflow instance page (`/workflow?instance=…`) in a real
// headless Chromium: opens it with a token in the URL fragment, waits for
// bpmn-js to draw the diagram, reads the markers on its elements and checks
// the bpmn.io watermark is visible, then completes the person's task through
// the API, waits for the open page to move its markers (it follows the
// workspace's event stream) and saves a screenshot. Prints a JSON summary for the Rust test.
//
//   node workflow-page.mjs BASE_URL TOKEN INSTANCE_ID TASK_TOKEN SCREENSHOT.png CHROMIUM
import { launch, pageWithErrors } from './browser.mjs';

const [base, token, instanceId, taskToken, shot, executablePath] = process.argv.slice(2);
const summary = { steps: [] };
const step = (name) => summary.steps.push(name);

const browser = await launch(executablePath);
const { page, pageErrors } = await pageWithErrors(browser, { width: 1600, height: 1000 });
const outside = [];
page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) outside.push(r.url()); });

const waitFor = (fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout, polling: 50 });
/// The ids of the diagram elements carrying each marker.
const markers = () => page.evaluate(() => {
  const ids = (cls) => [...document.querySelectorAll(`#diagram .djs-element.${cls}`)]
    .map((g) => g.dataset.elementId).sort();
  return { completed: ids('wf-completed'), active: ids('wf-active'), waiting: ids('wf-waiting'),
    incident: ids('wf-incident') };
});

try {
  await page.goto(`${base}/workflow?instance=${encodeURIComponent(instanceId)}#token=${encodeURIComponent(token)}`);
  await waitFor(() => !location.hash.includes('token'), null, 10000);
  summary.urlAfterToken = page.url();
  await page.locator('#diagram svg .djs-element.wf-active').first().waitFor({ timeout: 20000 });
  summary.shapes = await page.locator('#diagram svg .djs-shape').count();
  summary.before = await markers();
  summary.statusBefore = await page.getAttribute('[data-testid=wf-status]', 'data-status');
  summary.peopleBefore = await page.$$eval('[data-testid=wf-person-task]', (ls) => ls.map((l) => l.dataset.node));
  step('drawn');

  // The watermark: present, links to bpmn.io, visible, and on top at its centre.
  const mark = page.locator('#diagram .bjs-powered-by');
  summary.watermark = {
    count: await mark.count(),
    href: await mark.getAttribute('href'),
    visible: await mark.isVisible(),
    onTop: await mark.evaluate((a) => {
      const r = a.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return r.width > 0 && r.height > 0 && a.contains(hit);
    }),
  };
  step('watermark');

  // A marker that a reload would erase: the page must update itself.
  await page.evaluate(() => { window.__sameDocument = true; });
  // It follows the event stream before the person answers.
  await page.locator('[data-testid=poll-state][data-state=live]').waitFor({ timeout: 10000 });
  summary.liveBefore = true;

  // The person answers; the open page hears of it on the stream.
  const resp = await fetch(`${base}/v1/workflow-instances/${instanceId}/tokens/${taskToken}/complete`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ output: {} }),
  });
  summary.completeStatus = resp.status;
  const started = Date.now();
  await waitFor((before) => {
    const ids = (cls) => [...document.querySelectorAll(`#diagram .djs-element.${cls}`)]
      .map((g) => g.dataset.elementId).sort().join(' ');
    return ids('wf-active') !== '' && ids('wf-active') !== before.active.join(' ')
      && ids('wf-completed') !== before.completed.join(' ');
  }, summary.before, 10000);
  summary.updatedWithinMs = Date.now() - started;
  summary.after = await markers();
  summary.peopleAfter = await page.$$eval('[data-testid=wf-person-task]', (ls) => ls.map((l) => l.dataset.node));
  summary.sameDocument = await page.evaluate(() => window.__sameDocument === true);
  summary.pollState = await page.getAttribute('[data-testid=poll-state]', 'data-state');
  summary.lastEvent = await page.evaluate(() => document.body.dataset.lastEvent ?? null);
  summary.backLink = await page.getAttribute('[data-testid=back-to-board]', 'href');
  step('updated');
  await page.screenshot({ path: shot });
  summary.screenshot = shot;

  summary.outside = outside;
  summary.pageErrors = [...pageErrors];
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  summary.pageErrors = pageErrors;
  summary.outside = outside;
  summary.markers = await markers().catch(() => null);
  summary.shownError = await page.textContent('[data-testid=error]').catch(() => null);
  await page.screenshot({ path: shot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
