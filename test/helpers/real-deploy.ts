// What the suites against the real programs (test/real/) share: the serve fields of a real vLLM CPU spec, the
// deploy's failure and progress as they read them, a port blocked in a host's namespace, and their figures.
import { before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { progressQuery, type deploy } from '../../src/workflows/deploy.js';
import type { DeployProgress, StepName } from '../../src/workflows/steps.js';
import type { SimCluster, SimHost } from '../../sim/cluster.js';
import { realDockerMissing } from '../../sim/real-docker.js';
import { realToolsMissing } from '../../sim/real-tools.js';
import { useE2eCluster, type E2eClusterHandle } from './e2e-cluster.js';

export type DeployHandle = WorkflowHandle<typeof deploy>;

/**
 * useE2eCluster with the real programs (real Ray and vLLM, a real Docker Engine per host). Without them the file
 * fails rather than pass by skipping: scripts/setup.sh installs them.
 */
export function useRealCluster(opts: { stateDir: string; netIndex: number }): E2eClusterHandle {
  before(() => {
    const missing = realToolsMissing() ?? realDockerMissing();
    if (missing) throw new Error(missing);
  });
  return useE2eCluster({ ...opts, realTools: true, docker: 'real' });
}

/**
 * The serve fields of every real spec: vLLM's CPU build with a small context and KV cache and no torch.compile
 * warm-up (on 2 cores it doubles the start), the weights read offline from the host's cache that ray.volumes
 * mounts at vLLM's default (/root/.cache/huggingface), as at a real site, and a busy 2-core machine's timeouts
 * (the engine's start prints nothing for a while).
 */
export function realCpuServe(logPath: string, env: Record<string, string> = {}) {
  return {
    args: ['--max-model-len', '256', '--enforce-eager'],
    env: { HF_HUB_OFFLINE: '1', VLLM_CPU_KVCACHE_SPACE: '1', ...env },
    logPath,
    loadTimeout: '10m',
    stallTimeout: '5m',
  };
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
export const loadAverage = (): string =>
  readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export function host(sim: SimCluster, name: string): SimHost {
  const h = sim.hosts.find((x) => x.name === name);
  assert.ok(h, `no host ${name}`);
  return h;
}

/** A path under /home on a host, as this machine sees it (each host's /home is its own folder). */
export function onDisk(h: SimHost, path: string): string {
  assert.ok(path.startsWith('/home/'));
  return join(h.hostDir, 'home', path.slice('/home/'.length));
}

export function step(progress: DeployProgress, name: StepName) {
  const s = progress.steps.find((x) => x.name === name);
  assert.ok(s, `no step ${name}`);
  return s;
}

/** The deploy's progress once its preflight step is done (polled every 100 ms); fails if the deploy ends first. */
export async function untilPreflightPassed(handle: DeployHandle): Promise<DeployProgress> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const progress = await handle.query(progressQuery);
    const preflight = progress.steps.find((s) => s.name === 'preflight');
    if (preflight?.status === 'done') return progress;
    assert.notEqual(preflight?.status, 'failed', `preflight failed: ${preflight?.detail ?? ''}`);
    if (Date.now() > deadline) throw new Error('timed out waiting for preflight to pass');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface DeployFailure {
  type: string;
  message: string;
  progress: DeployProgress;
}

/** Awaits a deploy that must fail with an ApplicationFailure: its type, its message and the progress it left. */
export async function deployFailure(handle: DeployHandle): Promise<DeployFailure> {
  const error = await handle.result().then(
    (r) => assert.fail(`the deploy succeeded: ${JSON.stringify(r.smoke)}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof WorkflowFailedError, String(error));
  const cause = error.cause;
  assert.ok(cause instanceof ApplicationFailure, String(cause));
  return { type: cause.type ?? '', message: cause.message, progress: await handle.query(progressQuery) };
}

/**
 * Makes TCP to `port` unreachable from inside the network namespace `netns` (SSH still passes) and returns what
 * lifts it: a path that breaks once the deploy has started.
 */
export function blockTcpPort(netns: string, port: number): () => void {
  const rule = (action: 'add' | 'del') =>
    execFileSync('ip', ['-n', netns, 'rule', action, 'ipproto', 'tcp', 'dport', String(port), 'unreachable']);
  rule('add');
  return () => rule('del');
}
