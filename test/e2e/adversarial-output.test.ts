// Adversarial host output on a real simulated cluster (issue 14, items 2 and 3): the executor keeps a bounded
// tail of what a host prints, the serve log is followed byte for byte through invalid UTF-8, and a deploy
// whose hosts print a 10 MB line, absurd numbers or a billion Ray nodes fails with a clear error while the
// worker keeps running: no activity of the deploy misses its heartbeat (the history shows no activity timeout, and
// the step that fails does so on its first attempt). The worst event-loop stall is printed as a FIGURE line.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { clusterPaths, type SimCluster } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { TASK_QUEUE, deployWorkflowId } from '../../src/shared/constants.js';
import { FailureType } from '../../src/shared/failures.js';
import { deploy } from '../../src/workflows/index.js';
import { readLogFrom } from '../helpers/read-log.js';
import { maxLogChunkBytes } from '../../src/host-commands/launch.js';
import { summarizeVllmLog } from '../../src/parsers/vllm-log.js';
import type { SshSession } from '../../src/ssh/executor.js';
import { withSshSession } from '../helpers/ssh.js';
import { defaultMaxOutputBytes, partialLineBytes } from '../../src/ssh/output-tail.js';
import { sh } from '../../src/ssh/quote.js';

const stateDir = '/tmp/liftoff-test-adversarial';
const MB10 = 10 * 1024 * 1024;

describe('adversarial host output on a simulated cluster', () => {
  // Both hosts answer SSH directly here: the executor tests below reach each one without a jump.
  const cluster = useE2eCluster({
    hosts: 2,
    mode: 'netns',
    clusterOnly: [],
    stateDir,
    netIndex: 23,
    vllm: { shards: 4, shardSeconds: 0.2, graphCaptureSeconds: 0.2 },
  });
  let env: TestWorkflowEnvironment;
  let sim: SimCluster;
  before(() => {
    ({ sim, env } = cluster);
  });

  const onSpark = <T>(name: string, fn: (s: SshSession) => Promise<T>): Promise<T> => {
    const h = sim.hosts.find((x) => x.name === name);
    assert.ok(h, `host ${name}`);
    return withSshSession(
      { name: h.name, host: h.address, port: h.sshPort, user: sim.sshUser },
      { privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
      fn,
    );
  };

  it('the executor keeps a 1 MiB tail of a 10 MB output, says so, and returns exact bytes on request', async () => {
    await onSpark('spark1', async (s) => {
      const started = performance.now();
      const big = await s.exec(sh`head -c ${MB10} /dev/zero | tr '\\0' x; echo END`, { timeoutMs: 60_000 });
      console.log(`10 MB stdout read in ${(performance.now() - started).toFixed(0)} ms`);
      assert.equal(big.stdoutCutBytes, MB10 + 4 - defaultMaxOutputBytes);
      // One line longer than the cap: the text also drops the first partialLineBytes of what was kept.
      assert.ok(
        big.stdout.startsWith(
          `[liftoff: output too long, its first ${(big.stdoutCutBytes ?? 0) + partialLineBytes} bytes`,
        ),
      );
      assert.ok(big.stdout.endsWith('xEND\n'));
      assert.ok(big.stdout.length < defaultMaxOutputBytes + 200);

      const small = await s.exec(sh`printf 'ab\\377\\376\\n'`, { timeoutMs: 10_000, stdoutBytes: true });
      assert.deepEqual([...(small.stdoutBytes ?? [])], [0x61, 0x62, 0xff, 0xfe, 0x0a]);
      assert.equal(small.stdoutCutBytes, undefined);
    });
  });

  it('100 KB of 0xFF early in the serve log: a fatal line written later is seen on the next poll', async () => {
    const log = '/home/aurora/adversarial-serve.log';
    await onSpark('spark1', async (s) => {
      // 100 KB of invalid UTF-8, then 200 KB of ordinary progress lines: more than one poll reads.
      const filler = 'INFO 01-01 00:00:00 loader.py:1] Loading weights with BitsAndBytes...\n';
      await s.exec(
        sh`{ head -c 102400 /dev/zero | tr '\\0' '\\377'; printf '\\n'; i=0; while [ $i -lt ${Math.ceil(200_000 / filler.length)} ]; do printf '%s' ${filler}; i=$((i+1)); done; } > ${log}`,
        { timeoutMs: 60_000 },
      );
      const size = Number((await s.exec(sh`wc -c < ${log}`, { timeoutMs: 10_000 })).stdout.trim());
      assert.ok(size > maxLogChunkBytes, `the log (${size} bytes) needs more than one read`);

      const first = await readLogFrom(s, log, 0);
      assert.ok(first.nextOffset <= size, `offset ${first.nextOffset} stays within the file (${size} bytes)`);
      assert.equal(summarizeVllmLog(first.lines).fatal, undefined);

      await s.exec(
        sh`printf '%s\\n' ${'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'} >> ${log}`,
        { timeoutMs: 10_000 },
      );
      const second = await readLogFrom(s, log, first.nextOffset);
      assert.equal(second.restarted, false);
      assert.equal(summarizeVllmLog(second.lines).fatal?.kind, 'cuda_oom');
      const end = Number((await s.exec(sh`wc -c < ${log}`, { timeoutMs: 10_000 })).stdout.trim());
      assert.equal(second.nextOffset, end, 'every byte consumed, counted in bytes');
      await s.exec(sh`rm -f -- ${log}`, { timeoutMs: 10_000 });
    });
  });

  /**
   * Puts a wrapper in front of the simulated `tool` on every host: on `host`, a call whose arguments match the
   * shell pattern `args` prints `output` (a shell snippet) instead; everything else goes to the real simulation.
   */
  function hostileTool(tool: string, host: string, args: string, output: string): () => void {
    const bin = clusterPaths.bin(stateDir);
    const shim = join(bin, tool);
    const real = join(bin, `${tool}.real`);
    copyFileSync(shim, real);
    const wrapper = `${shim}.new`;
    writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `case "$LIFTOFF_SIM_HOST_DIR:$*" in`,
        `  */${host}:${args}) ${output}; exit 0 ;;`,
        'esac',
        `exec ${real} "$@"`,
        '',
      ].join('\n'),
    );
    chmodSync(wrapper, 0o755);
    renameSync(wrapper, shim);
    return () => {
      renameSync(real, shim);
    };
  }

  /** The `--query-<which>` call of nvidia-smi on `host` prints `output`. */
  const hostileNvidiaSmi = (host: string, which: 'gpu' | 'compute-apps', output: string) =>
    hostileTool('nvidia-smi', host, `*--query-${which}=*`, output);

  /**
   * Runs a deploy that must fail and checks that the worker stayed live throughout: a worker whose event loop
   * stalls past the heartbeat timeout (10 s) gets its running activities timed out by the server, which retries
   * them: the history then starts the activity at attempt 2 (a retried timeout is not an event of its own; a final
   * one is ActivityTaskTimedOut). Neither may appear. The worst stall the worker's event loop saw is printed, not
   * asserted.
   */
  async function deployFailing(cluster: string): Promise<ApplicationFailure> {
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    let error: unknown;
    try {
      error = await env.client.workflow
        .execute(deploy, {
          taskQueue: TASK_QUEUE,
          workflowId: deployWorkflowId(cluster),
          // Each case is its own cluster on the same hosts: it takes them over from the case before.
          args: [simDeploySpec(sim, { cluster }), { trigger: 'cli', takeOver: true }],
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
    } finally {
      loop.disable();
    }
    console.log(
      `FIGURE: ${cluster}: worst event-loop stall during the deploy ${(loop.max / 1e6).toFixed(0)} ms`,
    );
    assert.ok(error instanceof WorkflowFailedError, `the deploy failed: ${String(error)}`);
    assert.ok(error.cause instanceof ApplicationFailure, String(error.cause));
    const history = await env.client.workflow.getHandle(deployWorkflowId(cluster)).fetchHistory();
    const events = history.events ?? [];
    const timedOut = events.filter((e) => e.activityTaskTimedOutEventAttributes);
    assert.deepEqual(
      timedOut.map((e) => e.activityTaskTimedOutEventAttributes?.failure?.message),
      [],
      'no activity timed out: the worker kept heartbeating',
    );
    const attempts = events.flatMap((e) =>
      e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 0] : [],
    );
    assert.ok(attempts.length > 1, `activities ran (${attempts.length})`);
    assert.deepEqual(
      [...new Set(attempts)],
      [1],
      'every activity ran once: none was retried after a lost heartbeat',
    );
    return error.cause;
  }

  it('a 10 MB nvidia-smi line fails the deploy at the GPU check, clearly, with the worker responsive', async () => {
    const restore = hostileNvidiaSmi(
      'spark1',
      'compute-apps',
      `printf '4242, '; head -c ${MB10} /dev/zero | tr '\\0' p; printf ', 100\\n'`,
    );
    try {
      const started = Date.now();
      const failure = await deployFailing('adversarial-long');
      console.log(`FIGURE: the 10 MB nvidia-smi deploy failed after ${Date.now() - started} ms`);
      assert.equal(failure.type, FailureType.hostOutputInvalid, failure.message);
      assert.match(
        failure.message,
        /spark1.*nvidia-smi --query-compute-apps printed more than 1048576 bytes/,
      );
      assert.ok(failure.message.length < 4096, `a short message (${failure.message.length} characters)`);
    } finally {
      restore();
    }
  });

  it('memory.used -5000 and a 1e999 total fail the deploy with a clear error, never "clear"', async () => {
    const restore = hostileNvidiaSmi('spark2', 'gpu', `printf '0, NVIDIA GB10, -5000, 1e999\\n'`);
    try {
      const failure = await deployFailing('adversarial-numbers');
      assert.equal(failure.type, FailureType.hostOutputInvalid, failure.message);
      assert.match(failure.message, /spark2.*nvidia-smi memory\.used is "-5000": negative/);
      assert.equal(failure.nonRetryable, true);
    } finally {
      restore();
    }
  });

  it('a ray status of a billion nodes fails the deploy at the cluster check, final and clear', async () => {
    // What the head's `ray status` prints: one line claims 1,000,000,000 nodes (once enough to run the worker
    // out of memory).
    const restore = hostileTool(
      'docker',
      'spark1',
      'exec*ray\\ status*',
      `printf '%s\\n' 'Node status' 'Active:' ' 1000000000 node_a' 'Resources' 'Usage:' ' 0.0/2.0 GPU'`,
    );
    try {
      const failure = await deployFailing('adversarial-nodes');
      assert.equal(failure.type, FailureType.hostOutputInvalid, failure.message);
      assert.match(
        failure.message,
        /Ray cluster on spark1 cannot be judged: ray status node count of node_a is "1000000000": above 10000/,
      );
      assert.equal(failure.nonRetryable, true);
    } finally {
      restore();
    }
  });
});
