// The HTML postmortem in a real browser (Debian's Chromium, headless): opened from a file, every step is in the
// Gantt chart with its duration, and the page asks the network for nothing but itself.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { buildPostmortem, renderHtml, type Postmortem } from '../../src/report/index.js';
import { formatDuration } from '../../src/config/duration.js';

const histories = join(import.meta.dirname, '..', 'histories');

describe('HTML postmortem in headless Chromium', () => {
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-postmortem-html-'));
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-background-networking'],
    });
  });

  after(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const name of ['deploy-failed', 'deploy-resumed']) {
    it(`${name}: every step in the timeline with its duration; no request but the file`, async () => {
      const pm: Postmortem = buildPostmortem(
        JSON.parse(readFileSync(join(histories, `${name}.json`), 'utf8')),
      );
      const file = join(dir, `${name}.html`);
      writeFileSync(file, renderHtml(pm));
      const url = pathToFileURL(file).href;

      const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      try {
        await page.goto(url, { waitUntil: 'load' });
        const screenshot = `/tmp/liftoff-postmortem-${name}.png`;
        await page.screenshot({ path: screenshot, fullPage: true });
        console.log(`FIGURE: ${name}: ${pm.steps.length} steps drawn; screenshot ${screenshot}`);

        assert.equal(await page.locator('svg#gantt g.gantt-row').count(), pm.steps.length);
        for (const s of pm.steps) {
          const row = page.locator(`svg#gantt g.gantt-row[data-step="${s.name}"]`);
          assert.equal(await row.count(), 1, `one Gantt row for ${s.name}`);
          assert.match((await row.locator('.step-label').textContent()) ?? '', new RegExp(escapeRe(s.title)));
          if (s.durationMs !== undefined) {
            assert.equal(
              await row.locator('.step-duration').textContent(),
              formatDuration(s.durationMs),
              s.name,
            );
            const bar = await row.locator('rect.step-bar').boundingBox();
            assert.ok(bar && bar.width >= 1 && bar.height > 0, `${s.name}: its bar is drawn`);
          } else {
            assert.equal(await row.locator('.step-status').textContent(), s.outcome, s.name);
          }
          const tableRow = page.locator(`table#steps tr[data-step="${s.name}"] td.duration`);
          assert.equal(
            await tableRow.textContent(),
            s.durationMs !== undefined ? formatDuration(s.durationMs) : '',
          );
        }
        if (pm.failure) {
          assert.match((await page.locator('#failure').textContent()) ?? '', new RegExp(pm.failure.type));
          assert.equal((await page.locator('details').count()) > 0, true, 'diagnostics are on the page');
        }
        assert.equal(await page.locator('script').count(), 0);
        assert.deepEqual(requests, [url], 'the only request is the file itself');
      } finally {
        await page.close();
      }
    });
  }
});

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
