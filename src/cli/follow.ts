// `deploy --follow`: watches the workflow's `progress` query. On a terminal, a listr2 task list with a live
// load bar; otherwise one plain line per step start/end and per load change.
import { Listr } from 'listr2';
import type { WorkflowHandle } from '@temporalio/client';
import { formatDuration } from '../config/duration.js';
import type { CompanionProgress, DeployProgress, LoadProgress, StepName } from '../workflows/steps.js';
import { companionLine, deploySteps } from '../workflows/steps.js';
import { progressQuery } from '../workflows/deploy.js';
import { terminalText } from './render.js';

const pollMs = 1000;

export function loadLine(l: LoadProgress): string {
  const parts = [l.phase];
  if (l.shardsTotal) parts.push(`shard ${l.shardsDone ?? 0}/${l.shardsTotal}`);
  if (l.etaS !== undefined && l.phase === 'loading_weights')
    parts.push(`ETA ${formatDuration(l.etaS * 1000)}`);
  parts.push(`elapsed ${formatDuration(l.elapsedS * 1000)}`);
  return parts.join(', ');
}

export function progressBar(l: LoadProgress, width = 24): string {
  const ratio = l.shardsTotal ? Math.min(1, (l.shardsDone ?? 0) / l.shardsTotal) : 0;
  const filled = Math.round(ratio * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${Math.round(ratio * 100)}%`;
}

/** Polls progress until `done` settles; the query failing once (e.g. a worker restart) is not fatal. */
async function* watch(handle: WorkflowHandle, done: Promise<unknown>): AsyncGenerator<DeployProgress> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  while (!finished) {
    try {
      yield await handle.query(progressQuery);
    } catch {
      // The query needs a worker; while none is up, keep waiting for the workflow.
    }
    await Promise.race([new Promise((r) => setTimeout(r, pollMs)), done.catch(() => undefined)]);
  }
  try {
    yield await handle.query(progressQuery);
  } catch {
    // A closed workflow may not answer without a worker; the result carries what matters.
  }
}

export async function followPlain(
  handle: WorkflowHandle,
  done: Promise<unknown>,
  writeLine: (line: string) => void,
): Promise<void> {
  // Step errors and details carry host text.
  const write = (line: string) => writeLine(terminalText(line));
  const seen = new Map<StepName, string>();
  let lastLoad = '';
  // Each companion's line as last written: a change of its status or detail writes it again.
  const companionsSaid = new Map<string, string>();
  const writeCompanions = (p: DeployProgress) => {
    for (const c of p.companions ?? []) {
      if (c.status === 'pending') continue;
      const line = `  ${companionLine(c)}`;
      const key = `${c.name}@${c.host}`;
      if (companionsSaid.get(key) === line) continue;
      companionsSaid.set(key, line);
      write(line);
    }
  };
  for await (const p of watch(handle, done)) {
    for (const s of p.steps) {
      const before = seen.get(s.name);
      if (before === s.status) continue;
      seen.set(s.name, s.status);
      // The companions' last changes come before their step's end.
      if (s.name === 'startCompanions' && s.status !== 'running') writeCompanions(p);
      if (s.status === 'running') write(`▶ ${s.title}`);
      else if (s.status === 'done')
        write(`✔ ${s.title} (${formatDuration(s.durationMs ?? 0)})${s.detail ? ` — ${s.detail}` : ''}`);
      else if (s.status === 'skipped') write(`– ${s.title}: skipped (${s.detail ?? ''})`);
      else if (s.status === 'failed')
        write(`✖ ${s.title} (${formatDuration(s.durationMs ?? 0)}): ${s.error ?? ''}`);
      else if (s.status === 'cancelled') write(`✖ ${s.title}: cancelled`);
    }
    if (p.currentStep === 'startCompanions') writeCompanions(p);
    if (p.load && p.currentStep === 'waitHealthy') {
      const line = `  load: ${loadLine(p.load)}`;
      if (line !== lastLoad) {
        write(line);
        lastLoad = line;
      }
    }
  }
}

/** The companions under their step in the task list: one line each, host text escaped, durations so far. */
function companionsOutput(companions: readonly CompanionProgress[]): string {
  return companions.map((c) => terminalText(companionLine(c, Date.now()))).join('\n');
}

export async function followTty(handle: WorkflowHandle, done: Promise<unknown>): Promise<void> {
  let latest: DeployProgress | undefined;
  const watcher = (async () => {
    for await (const p of watch(handle, done)) latest = p;
  })();
  const stepDone = (name: StepName) =>
    new Promise<'done' | 'skipped' | 'failed'>((resolve) => {
      const t = setInterval(() => {
        const s = latest?.steps.find((x) => x.name === name);
        if (!s || s.status === 'pending' || s.status === 'running') return;
        clearInterval(t);
        resolve(s.status === 'cancelled' ? 'failed' : s.status);
      }, 200);
      void done
        .catch(() => undefined)
        .finally(() =>
          setTimeout(() => {
            clearInterval(t);
            resolve('failed');
          }, 2 * pollMs),
        );
    });
  const list = new Listr(
    deploySteps.map((step) => ({
      title: step.title,
      // The companions' lines stay under their step once it ended.
      ...(step.name === 'startCompanions' ? { rendererOptions: { persistentOutput: true } } : {}),
      task: async (_ctx: unknown, task: { title: string; output: string; skip: (msg?: string) => void }) => {
        const ticker = setInterval(() => {
          const l = latest?.load;
          if (step.name === 'waitHealthy' && l) task.output = `${progressBar(l)} ${loadLine(l)}`;
          if (step.name === 'startCompanions' && latest?.companions)
            task.output = companionsOutput(latest.companions);
        }, 250);
        const status = await stepDone(step.name);
        clearInterval(ticker);
        const s = latest?.steps.find((x) => x.name === step.name);
        if (status === 'skipped')
          return task.skip(`${step.title}: skipped (${terminalText(s?.detail ?? '')})`);
        if (status === 'failed') throw new Error(terminalText(s?.error ?? 'failed'));
        // The step's detail too (what was stopped, preflight's warnings), as the plain output shows it.
        task.title = `${step.title} (${formatDuration(s?.durationMs ?? 0)})${s?.detail ? ` — ${terminalText(s.detail)}` : ''}`;
        if (step.name === 'startCompanions' && latest?.companions)
          task.output = companionsOutput(latest.companions);
      },
    })),
    { concurrent: false, exitOnError: true, rendererOptions: { collapseSubtasks: false } },
  );
  await list.run().catch(() => undefined);
  await watcher;
}
