// Headless Chromium for tests: Debian's own build, driven by playwright-core (which ships no browser).
import { chromium, type Browser, type Page } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';

export interface RecordedRequest {
  url: string;
  method: string;
  body: string | null;
  /** False when the request was aborted because it pointed off this machine. */
  allowed: boolean;
}

/** Launches headless Chromium. Background networking is off, and no host name resolves but localhost. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      // A page that names an outside host (the Temporal UI fetches a news feed) gets a resolver error, so not
      // even a DNS query leaves the machine.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.*',
    ],
  });
}

/**
 * A page in its own context, with a fixed viewport so screenshots compare run to run. Every request is recorded
 * (a test can assert which API calls a UI action made, or that a file page fetched nothing), and any request
 * that is not a local file or a loopback address is aborted before it leaves the browser.
 */
export async function newPage(
  browser: Browser,
  viewport = { width: 1400, height: 1000 },
): Promise<{ page: Page; requests: RecordedRequest[] }> {
  const context = await browser.newContext({ viewport });
  const requests: RecordedRequest[] = [];
  await context.route('**/*', async (route) => {
    const request = route.request();
    const allowed = isLocalUrl(request.url());
    requests.push({ url: request.url(), method: request.method(), body: request.postData(), allowed });
    await (allowed ? route.continue() : route.abort('blockedbyclient'));
  });
  const page = await context.newPage();
  return { page, requests };
}

/** True when a URL is a local file, inline data, or points at a loopback address. */
export function isLocalUrl(url: string): boolean {
  if (/^(file|data|blob|about):/.test(url)) return true;
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';
  } catch {
    return false;
  }
}
