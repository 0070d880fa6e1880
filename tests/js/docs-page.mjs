// Loads the API reference at /docs in a real headless Chromium and records
// every request the page makes: none may leave the service's own host. Also
// lists the buttons of outside services (Ask AI, Generate MCP, Deploy) that
// are visible. Prints a JSON summary for the Rust test to check.
//
//   node docs-page.mjs BASE_URL SCREENSHOT.png CHROMIUM
import { launch } from './browser.mjs';

const [base, shot, executablePath] = process.argv.slice(2);
const summary = { outside: [], requests: 0 };
const own = new URL(base).host;

const browser = await launch(executablePath);
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
page.on('request', (r) => {
  summary.requests += 1;
  const url = new URL(r.url());
  if (url.protocol === 'data:' || url.protocol === 'blob:') return;
  if (url.host !== own) summary.outside.push(r.url());
});
// Whatever tries to go out is refused here, so the test never depends on the network.
await page.route((url) => url.host !== own && url.protocol.startsWith('http'), (route) => route.abort());

try {
  await page.goto(`${base}/docs`);
  // The reference has rendered the document's operations.
  await page.getByText('Mission coordinator API').first().waitFor({ timeout: 20000 });
  await page.waitForTimeout(1500);
  // Open an operation, as a reader would: its examples must not call out either.
  const op = page.getByText('Create a mission').first();
  if (await op.isVisible().catch(() => false)) {
    await op.click();
    await page.waitForTimeout(1000);
  }
  // The in-page API client sends requests only when asked; opening it must not call out.
  const client = page.getByText('Open API Client').first();
  if (await client.isVisible().catch(() => false)) {
    await client.click();
    await page.waitForTimeout(1000);
    summary.openedClient = true;
    await page.keyboard.press('Escape');
  }
  summary.buttons = await page.evaluate(() => [...document.querySelectorAll('button, a, [role=button]')]
    .filter((el) => el.getBoundingClientRect().width > 0)
    .map((el) => el.textContent.trim())
    .filter((t) => /ask ai|generate mcp|deploy|developer tools|ask agent/i.test(t)));
  await page.screenshot({ path: shot });
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
} catch (e) {
  summary.failure = String(e);
  await page.screenshot({ path: shot.replace(/\.png$/, '-failure.png') }).catch(() => {});
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  await browser.close();
  process.exit(1);
}
