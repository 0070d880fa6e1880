// What every browser test shares: a headless Chromium launched with the
// flags that keep it quiet and local, and a page that collects its errors.
import { chromium } from 'playwright-core';

/// A headless Chromium at `executablePath`, with no background traffic.
export function launch(executablePath) {
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/// A new page of `size`, and the list its uncaught errors and console errors go to.
export async function pageWithErrors(browser, size) {
  const page = await browser.newPage({ viewport: size });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  return { page, pageErrors };
}
