// Issue 26 item 3: no spec can stall a worker. Every case of the hostile corpus (test/helpers/hostile-specs.ts)
// is run through the real CLI (`liftoff validate -c FILE --json`, one process each, one at a time) and must be
// refused with exit 2 naming its field, or accepted as harmless, within 2 s of wall time and 300 MiB of RSS
// (measured on each process: a case over either counts as hung). The spec cases are then started as the Temporal
// UI starts a deploy (the workflow validates in the worker's sandbox) and must fail InvalidSpec naming the same
// field, the worker's task taking under 2 s. Prints the counts: refused / accepted harmless / accepted wrongly /
// crashed / hung.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createLiftoffWorker } from '../../src/worker.js';
import type { WorkerPolicy } from '../../src/config/worker-policy.js';
import { createDevServerEnv } from '../helpers/temporal.js';
import { liftoffArgv } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { startAsUiExpectInvalidSpec } from '../helpers/ui-start.js';
import {
  hostileCases,
  referenceSpec,
  referenceYaml,
  type HostileCase,
  type JsonObject,
} from '../helpers/hostile-specs.js';

/** The issue's bounds for one validation. */
const maxWallMs = 2000;
const maxRssBytes = 300 * 1024 * 1024;
/** A process still running after this is stopped and counted as hung. */
const killAfterMs = 15_000;

type Outcome = 'refused' | 'accepted harmless' | 'accepted wrongly' | 'crashed' | 'hung';

interface Measured {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  /** From the process itself at exit (undefined when it was killed). */
  rssBytes?: number;
  cpuMs?: number;
}

// Loaded before the CLI: at exit it writes the process's own resource usage to fd 3 (maxRSS is in KiB).
const rusageHook = `data:text/javascript,${encodeURIComponent(
  `import { writeSync } from 'node:fs';
   process.on('exit', () => {
     const u = process.resourceUsage();
     try { writeSync(3, JSON.stringify({ maxRssKiB: u.maxRSS, cpuUs: u.userCPUTime + u.systemCPUTime })); } catch {}
   });`,
)}`;

function runMeasured(args: string[], env: NodeJS.ProcessEnv): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', rusageHook, ...liftoffArgv(args)], {
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const chunks: Record<'stdout' | 'stderr' | 'usage', string> = { stdout: '', stderr: '', usage: '' };
    child.stdout?.on('data', (d: Buffer) => (chunks.stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (chunks.stderr += d.toString()));
    child.stdio[3]?.on('data', (d: Buffer) => (chunks.usage += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('close', (exitCode, signal) => {
      clearTimeout(killer);
      const wallMs = performance.now() - started;
      let usage: { maxRssKiB: number; cpuUs: number } | undefined;
      try {
        usage = JSON.parse(chunks.usage) as { maxRssKiB: number; cpuUs: number };
      } catch {
        usage = undefined;
      }
      resolve({
        exitCode,
        signal,
        stdout: chunks.stdout,
        stderr: chunks.stderr,
        wallMs,
        ...(usage ? { rssBytes: usage.maxRssKiB * 1024, cpuMs: usage.cpuUs / 1000 } : {}),
      });
    });
  });
}

function specOf(c: HostileCase): JsonObject | undefined {
  if (!('spec' in c.file)) return undefined;
  const spec = structuredClone(referenceSpec);
  c.file.spec(spec);
  return spec;
}

interface Verdict {
  outcome: Outcome;
  /** Why the verdict is not what the table expects, when it is not. */
  wrong?: string;
  run: Measured;
  message: string;
}

function verdictOf(c: HostileCase, file: string, run: Measured): Verdict {
  let message = '';
  try {
    const doc = JSON.parse(run.stdout) as { error?: { message?: string } };
    message = doc.error?.message ?? '';
  } catch {
    message = run.stderr;
  }
  const base = { run, message };
  const overBounds =
    run.wallMs > maxWallMs || run.rssBytes === undefined || run.rssBytes > maxRssBytes || run.signal !== null;
  if (overBounds) return { ...base, outcome: 'hung', wrong: 'over the bounds' };
  if (run.exitCode === 0) {
    return 'harmless' in c.expect
      ? { ...base, outcome: 'accepted harmless' }
      : { ...base, outcome: 'accepted wrongly', wrong: 'accepted' };
  }
  if (run.exitCode !== 2) return { ...base, outcome: 'crashed', wrong: `exit ${run.exitCode}` };
  if ('harmless' in c.expect) return { ...base, outcome: 'refused', wrong: 'refused a harmless spec' };
  const names =
    c.expect.field === undefined
      ? message.startsWith(`cannot read spec file ${file}: `) || message.startsWith(`${file} is refused: `)
      : (message.startsWith(`${file} is invalid:\n`) ||
          message.startsWith(`${file} is refused by the worker policy`)) &&
        message.includes(`\n  ${c.expect.field}: `);
  return names
    ? { ...base, outcome: 'refused' }
    : { ...base, outcome: 'refused', wrong: `does not name ${c.expect.field ?? 'the file'}` };
}

describe('hostile specs are refused (or harmless) within 2 s and 300 MiB, on the CLI and in the workflow', () => {
  const dir = tempDir('liftoff-hostile-specs-');
  const files = new Map<HostileCase, string>();
  const verdicts = new Map<HostileCase, Verdict>();
  let socketServer: Server | undefined;
  let env: TestWorkflowEnvironment | undefined;
  let worker: { worker: Worker; running: Promise<void> } | undefined;
  const cliEnv: NodeJS.ProcessEnv = { ...process.env };
  // The worker policy's defaults (the reference spec's ~/.ssh paths are within them).
  delete cliEnv.LIFTOFF_WORKER_POLICY;

  before(async () => {
    for (const [i, c] of hostileCases.entries()) {
      const path = join(dir, `case-${i}.yaml`);
      const spec = specOf(c);
      const how = c.file;
      if (spec) writeFileSync(path, JSON.stringify(spec));
      else if ('text' in how) writeFileSync(path, how.text(referenceYaml));
      else if ('special' in how && how.special === 'fifo') execFileSync('mkfifo', [path]);
      else if ('special' in how && how.special === 'directory') mkdirSync(path);
      else if ('special' in how && how.special === 'socket') {
        const server = createServer();
        await new Promise<void>((resolve) => server.listen(path, resolve));
        socketServer = server;
      }
      files.set(c, 'special' in how && how.special === 'device' ? '/dev/zero' : path);
    }
  });

  after(async () => {
    socketServer?.close();
    worker?.worker.shutdown();
    await worker?.running;
    await env?.teardown();
  });

  it('the CLI refuses each hostile spec naming its field, or accepts it as harmless, within the bounds', async () => {
    // One at a time: each process's time is its own, not a neighbour's. A case over the time bound runs once
    // more, and its faster run counts: a hang stays a hang, a busy machine's pause does not.
    for (const c of hostileCases) {
      const file = files.get(c) ?? '';
      const args = ['validate', '-c', file, '--json'];
      let verdict = verdictOf(c, file, await runMeasured(args, cliEnv));
      if (verdict.outcome === 'hung' && verdict.run.wallMs > maxWallMs && verdict.run.signal === null)
        verdict = verdictOf(c, file, await runMeasured(args, cliEnv));
      verdicts.set(c, verdict);
    }
    const count = (o: Outcome) => [...verdicts.values()].filter((v) => v.outcome === o).length;
    const runs = [...verdicts.values()].map((v) => v.run);
    const slowest = Math.max(...runs.map((r) => r.wallMs));
    const largest = Math.max(...runs.map((r) => r.rssBytes ?? 0));
    const busiest = Math.max(...runs.map((r) => r.cpuMs ?? 0));
    console.log(
      `FIGURE: hostile specs: ${hostileCases.length} cases: ${count('refused')} refused / ${count('accepted harmless')} accepted harmless / ${count('accepted wrongly')} accepted wrongly / ${count('crashed')} crashed / ${count('hung')} hung; slowest ${Math.round(slowest)} ms wall, most CPU ${Math.round(busiest)} ms, largest ${(largest / 1024 / 1024).toFixed(0)} MiB RSS`,
    );
    const wrong = hostileCases.flatMap((c) => {
      const v = verdicts.get(c);
      return v?.wrong === undefined
        ? []
        : [
            `${c.label}: ${v.outcome} (${v.wrong}; exit ${v.run.exitCode}, ${Math.round(v.run.wallMs)} ms, ${Math.round((v.run.rssBytes ?? 0) / 1024 / 1024)} MiB): ${v.message.slice(0, 300)}`,
          ];
    });
    assert.deepEqual(wrong, [], 'every case as the table expects');
    assert.equal(count('accepted wrongly') + count('crashed') + count('hung'), 0);
  });

  it('the deploy workflow started as the UI starts it refuses each refused spec case in its validate step, in under 2 s', async () => {
    env = await createDevServerEnv();
    // A policy that allows nothing: a spec the schema let through by mistake stops at the policy check, before
    // any SSH connection.
    const allowNothing: WorkerPolicy = {
      source: 'the hostile-specs test (allows nothing)',
      knownHosts: [],
      privateKeys: [],
      agent: false,
      secretsDir: '/nonexistent',
      maxSecretFileBytes: 0,
      fromEnv: [],
      sshRsaHostKeys: [],
      webhooks: [],
    };
    const w = await createLiftoffWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: 'hostile-specs',
      policy: allowNothing,
    });
    worker = { worker: w, running: w.run() };
    const uiCases = hostileCases.filter((c) => {
      const v = verdicts.get(c);
      return (
        'spec' in c.file && 'refused' in c.expect && v !== undefined && v.message.includes(' is invalid:\n')
      );
    });
    assert.ok(
      uiCases.some((c) => c.label.includes('10 000-host')),
      'the 10 000-host chain is among them',
    );
    const taskTimes: number[] = [];
    const client = env.client;
    for (const [i, c] of uiCases.entries()) {
      const { failure: cause, handle } = await startAsUiExpectInvalidSpec(client, {
        taskQueue: 'hostile-specs',
        workflowId: `hostile-ui-${i}`,
        spec: specOf(c),
        label: c.label,
      });
      const field = 'refused' in c.expect ? c.expect.field : undefined;
      if (field !== undefined)
        assert.ok(cause.message.includes(`\n  ${field}: `), `${c.label}: names ${field} in ${cause.message}`);
      // The worker's own time on the run: from each workflow task's start to its completion, in the history.
      const history = await handle.fetchHistory();
      let startedAt: number | undefined;
      let taskMs = 0;
      for (const e of history.events ?? []) {
        const at = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6);
        if (e.workflowTaskStartedEventAttributes) startedAt = at;
        if ((e.workflowTaskCompletedEventAttributes || e.workflowTaskFailedEventAttributes) && startedAt) {
          taskMs += at - startedAt;
          startedAt = undefined;
        }
        assert.ok(!e.activityTaskScheduledEventAttributes, `${c.label}: no activity ran`);
      }
      assert.ok(taskMs <= maxWallMs, `${c.label}: the worker spent ${taskMs} ms on it`);
      taskTimes.push(taskMs);
    }
    console.log(
      `FIGURE: hostile specs: ${uiCases.length} spec cases refused by the deploy workflow as the UI starts it; the longest took the worker ${Math.max(...taskTimes)} ms`,
    );
  });
});
