// What `liftoff worker --metrics` costs while nothing happens (issue 32: < 1% of a core). Three idle workers of
// the built CLI side by side, on a task queue nothing is sent to, over the same window: one without metrics, one
// with --metrics scraped every second (as Prometheus does: GET /metrics), one with --metrics scraped and
// --metrics-targets keeping a file_sd file (its poll of the fleet every 5 s). Their CPU comes from /proc (ticks of
// 1/100 s). The scraper is this process, not a Prometheus: the endpoint's cost is the worker's CPU, whoever asks.
//
//   npx tsx bench/run.ts --only idle-metrics   (its figure merged into bench/results.json)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorkerProcess, type WorkerProcess } from '../scripts/lib/worker-process.js';
import { metricsAddressEnv } from '../src/temporal/metrics.js';
import { metricsTargetsFileEnv } from '../src/commands/metrics-targets-file.js';
import { log, sleep } from './context.js';
import { processUsage, round } from './measure.js';
import type { Target } from './summary.js';
import { freeLoopbackPort } from '../scripts/lib/free-port.js';

export const idleMetricsSettings = {
  windowS: 60,
  /** After the workers are ready, before the window: their start (bundling the workflows) settles. */
  settleS: 10,
  scrapeIntervalS: 1,
  taskQueue: 'liftoff-bench-idle',
};

export interface IdleMetricsResult {
  windowS: number;
  scrapeIntervalS: number;
  /** CPU of each worker over the window, in percent of one core. */
  cpuPercentOfACore: { withoutMetrics: number; metricsScraped: number; metricsScrapedAndTargetsFile: number };
  /** What --metrics adds: the scraped worker's CPU less the plain one's (within the ticks' noise). */
  endpointCostPercent: number;
  /** What --metrics-targets adds on top of a scraped endpoint. */
  targetsFileCostPercent: number;
  scrapes: number;
  /** Size of the last answer of the scraped endpoint. */
  scrapeBytes: number;
  failedScrapes: number;
  measuredAt: string;
}

/** A port free on loopback now (the kernel's pick, released for the worker that binds it next). */

/** Idle workers against the Temporal at `address`; the workers are stopped before it returns. */
export async function measureIdleMetrics(address: string, namespace: string): Promise<IdleMetricsResult> {
  const s = idleMetricsSettings;
  const dir = mkdtempSync(join(tmpdir(), 'liftoff-bench-idle-'));
  const [scrapedPort, targetsPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const workers: WorkerProcess[] = [];
  const start = async (extra: NodeJS.ProcessEnv): Promise<WorkerProcess> => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
    // Only what this worker is told: none of the caller's metrics settings leak into the plain one.
    for (const name of [metricsAddressEnv, metricsTargetsFileEnv]) if (!(name in extra)) delete env[name];
    const w = await startWorkerProcess({ address, namespace, env, taskQueue: s.taskQueue });
    workers.push(w);
    return w;
  };
  try {
    log(`idle metrics: 3 workers on ${s.taskQueue}, a ${s.windowS} s window after ${s.settleS} s`);
    const [plain, scraped, withTargets] = await Promise.all([
      start({}),
      start({ [metricsAddressEnv]: `127.0.0.1:${scrapedPort}` }),
      start({
        [metricsAddressEnv]: `127.0.0.1:${targetsPort}`,
        [metricsTargetsFileEnv]: join(dir, 'targets.json'),
      }),
    ]);
    let scrapes = 0;
    let failedScrapes = 0;
    let scrapeBytes = 0;
    let scraping = true;
    const scrapeLoop = (async () => {
      while (scraping) {
        const started = Date.now();
        await Promise.all(
          [scrapedPort, targetsPort].map(async (port) => {
            try {
              const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
                // What Prometheus 2 asks for; the SDK's exporter answers text either way.
                headers: {
                  accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5',
                },
                signal: AbortSignal.timeout(1000),
              });
              const body = await res.text();
              if (!res.ok) throw new Error(`HTTP ${res.status}`);
              if (port === scrapedPort) scrapeBytes = body.length;
              scrapes += 1;
            } catch {
              failedScrapes += 1;
            }
          }),
        );
        await sleep(Math.max(0, s.scrapeIntervalS * 1000 - (Date.now() - started)));
      }
    })();
    await sleep(s.settleS * 1000);
    const pids = [plain.pid, scraped.pid, withTargets.pid];
    const from = pids.map((pid) => processUsage(pid).cpuSeconds);
    const fromAt = Date.now();
    await sleep(s.windowS * 1000);
    const seconds = (Date.now() - fromAt) / 1000;
    const percent = pids.map((pid, i) => (100 * (processUsage(pid).cpuSeconds - from[i]!)) / seconds);
    scraping = false;
    await scrapeLoop;
    const [withoutMetrics, metricsScraped, metricsScrapedAndTargetsFile] = percent as [
      number,
      number,
      number,
    ];
    return {
      windowS: round(seconds, 1),
      scrapeIntervalS: s.scrapeIntervalS,
      cpuPercentOfACore: {
        withoutMetrics: round(withoutMetrics, 3),
        metricsScraped: round(metricsScraped, 3),
        metricsScrapedAndTargetsFile: round(metricsScrapedAndTargetsFile, 3),
      },
      endpointCostPercent: round(metricsScraped - withoutMetrics, 3),
      targetsFileCostPercent: round(metricsScrapedAndTargetsFile - metricsScraped, 3),
      scrapes,
      scrapeBytes,
      failedScrapes,
      measuredAt: new Date().toISOString(),
    };
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGTERM').catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The verdict on the scraped worker's whole CPU: it bounds the endpoint's cost from above, where the difference
 * with the plain worker is within the clock's ticks and the two processes' noise.
 */
export function idleMetricsTarget(r: IdleMetricsResult): Target {
  const c = r.cpuPercentOfACore;
  const pct = (x: number) => `${x.toFixed(2)}%`;
  return {
    measure: 'metrics endpoint, idle worker CPU',
    figure: `${pct(c.metricsScraped)} of a core with --metrics scraped every ${r.scrapeIntervalS} s, ${pct(c.withoutMetrics)} without (difference ${pct(r.endpointCostPercent)}); ${pct(c.metricsScrapedAndTargetsFile)} with --metrics-targets too (over ${r.windowS.toFixed(0)} s)`,
    target: '< 1% of a core',
    met: c.metricsScraped < 1 && r.failedScrapes === 0,
    binds: [
      `${r.scrapes} scrapes of ${r.scrapeBytes} bytes, ${r.failedScrapes} failed; the figure is the scraped worker's whole CPU, an upper bound on the endpoint's`,
    ],
  };
}
