// `liftoff worker --metrics-targets FILE` (and `liftoff dev`; env LIFTOFF_METRICS_TARGETS_FILE): the worker keeps
// the file_sd file of `liftoff metrics targets -o FILE` current itself, so Prometheus follows a relaunch, a new
// cluster or one taken down with nobody running a command or editing the file. A small poll in the worker process
// (the fleet's records come from Temporal's visibility; no workflow code is involved): the file is replaced in one
// rename when the targets change, so Prometheus never reads half of it.
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { outputTaken, writeOutputFile } from '../cli/output-file.js';
import { UsageError } from '../cli/run-command.js';
import { fleetTargets, type SpecCache } from './metrics.js';
import { targetsFileText } from './metrics-targets.js';

export const metricsTargetsFileEnv = 'LIFTOFF_METRICS_TARGETS_FILE';

/** How often the worker reads the fleet: a relaunch shows in the file within this (plus Prometheus's refresh). */
export const targetsPollMs = 5000;

/**
 * The file from --metrics-targets, else from the environment, as an absolute path (the worker may change its
 * folder later); undefined when neither names one. Its folder must exist now, so a typo stops the worker at once.
 */
export function metricsTargetsFileFrom(
  option: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const text = option ?? env[metricsTargetsFileEnv];
  if (text === undefined || text.trim() === '') return undefined;
  const path = resolve(text);
  const shown = JSON.stringify(text.slice(0, 200));
  if (!statSync(dirname(path), { throwIfNoEntry: false })?.isDirectory())
    throw new UsageError(`--metrics-targets ${shown}: ${dirname(path)} is not a folder`);
  if (statSync(path, { throwIfNoEntry: false })?.isDirectory())
    throw new UsageError(`--metrics-targets ${shown}: a folder; name the file Prometheus' file_sd reads`);
  return path;
}

export interface TargetsFileKeeper {
  /** Ends the poll, after the round in progress (if any) has written or given up. */
  stop(): Promise<void>;
}

export interface KeepOptions {
  intervalMs?: number;
  /** Where a failed round (Temporal unreachable, the file unwritable) is said, once until it changes. */
  warn?: (line: string) => void;
}

/**
 * Writes the targets file now and again every `intervalMs` when its text would change (or the file is gone). A
 * failed round leaves the file as it was: Prometheus keeps scraping the last targets, and `up` says which are down.
 */
export function keepTargetsFile(client: Client, path: string, opts: KeepOptions = {}): TargetsFileKeeper {
  const intervalMs = opts.intervalMs ?? targetsPollMs;
  const warn = opts.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  const specs: SpecCache = new Map();
  let written: string | undefined;
  let problem: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const round = async (): Promise<void> => {
    try {
      const text = targetsFileText((await fleetTargets(client, specs)).groups);
      if (text !== written || !outputTaken(path)) {
        writeOutputFile(path, text, { replace: true });
        written = text;
      }
      if (problem !== undefined) warn(`metrics targets: ${path} is current again`);
      problem = undefined;
    } catch (err) {
      const said = (err instanceof Error ? err.message : String(err)).slice(0, 500);
      if (said !== problem) warn(`metrics targets: ${path} not updated (kept as it was): ${said}`);
      problem = said;
    }
  };
  let current = round();
  const next = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = round().then(next);
    }, intervalMs);
    // The worker's own run keeps the process alive; this poll never does.
    timer.unref();
  };
  void current.then(next);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}

/**
 * Runs `work` (a worker, until it is signalled) with the targets file at `path` kept beside it, when a path is set;
 * the keeper stops once the work ends, however it ends. `client` is made only when the file is kept.
 */
export async function whileKeepingTargets(
  path: string | undefined,
  client: () => Client,
  work: () => Promise<void>,
): Promise<void> {
  const keeper = path === undefined ? undefined : keepTargetsFile(client(), path);
  try {
    await work();
  } finally {
    await keeper?.stop();
  }
}
