// The chain, end to end: real Temporal dev server → liftoff worker → ssh2 with verified host keys → real sshd in
// two network namespaces (one reachable only through the other) → simulated nvidia-smi → parsers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { TASK_QUEUE } from '../../src/shared/constants.js';
import { simClusterSpec } from '../../sim/spec.js';
import { probeCluster } from '../../src/workflows/index.js';

const stateDir = '/tmp/liftoff-test-probe';

describe('probe workflow over the simulated cluster (namespace mode)', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 6,
    // The worker trusts this test's own known_hosts and keys too (its setting, never the spec's): the cases
    // below are about what the hosts say to a wrong key, not about the policy.
    workerPolicy: { knownHosts: [stateDir], privateKeys: [stateDir] },
  });

  it('reads every host GPU state, the second host through the head as jump host', async () => {
    assert.equal(e2e.sim.mode, 'netns');
    const spec = simClusterSpec(e2e.sim, { cluster: 'probe-e2e' });
    assert.equal(spec.hosts[1]?.jumpHost, 'spark1', 'spark2 is reachable only through spark1');

    const result = await e2e.client.workflow.execute(probeCluster, {
      taskQueue: TASK_QUEUE,
      workflowId: 'probe-e2e',
      args: [spec],
    });
    assert.deepEqual(
      result.hosts.map((h) => h.host),
      ['spark1', 'spark2'],
    );
    for (const host of result.hosts) {
      // The reference state after a reboot: old containers hold GPU memory (gb10 flavour: unified memory).
      assert.equal(host.gpus.length, 1);
      assert.equal(host.gpus[0]?.name, 'NVIDIA GB10');
      assert.equal(host.unifiedMemory, true);
      assert.ok(host.processes.length >= 1, `${host.host} lists the seeded GPU processes`);
      assert.ok(host.processes.every((p) => p.pid > 0 && p.processName.length > 0 && (p.usedMiB ?? 0) > 0));
      assert.ok(
        host.memAvailableMiB > 0 && host.memAvailableMiB < 121_690,
        `${host.host} MemAvailable reflects held memory`,
      );
    }
  });

  it('refuses a host whose key does not match known_hosts, without retrying', async () => {
    const spec = simClusterSpec(e2e.sim, { cluster: 'probe-bad-key' });
    // Swap the two hosts' keys in a copy of known_hosts: each host now presents a key we did not pin for it.
    const known = readFileSync(e2e.sim.knownHostsPath, 'utf8').split('\n').filter(Boolean);
    const keyOf = (addr: string) =>
      known
        .find((l) => l.split(' ')[0]?.split(',').includes(addr))
        ?.split(' ')
        .slice(1)
        .join(' ');
    const h1 = e2e.sim.hosts[0]!;
    const h2 = e2e.sim.hosts[1]!;
    const swapped = [
      `${h1.address} ${keyOf(h2.address)}`,
      `${h2.address} ${keyOf(h1.address)}`,
      `${h2.clusterIp} ${keyOf(h1.address)}`,
    ];
    const badKnownHosts = join(stateDir, 'known_hosts.swapped');
    writeFileSync(badKnownHosts, `${swapped.join('\n')}\n`);
    spec.ssh.knownHostsPath = badKnownHosts;

    const err = await e2e.client.workflow
      .execute(probeCluster, { taskQueue: TASK_QUEUE, workflowId: 'probe-bad-key', args: [spec] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof WorkflowFailedError, 'the workflow fails');
    assert.ok(err.cause instanceof ActivityFailure);
    assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE);
    const cause = err.cause.cause;
    assert.ok(cause instanceof ApplicationFailure);
    assert.equal(cause.type, 'HostKeyMismatchError');
    assert.match(cause.message, /SHA256:/);
  });

  it('rejects an invalid spec as non-retryable, naming the field', async () => {
    const spec = { ...simClusterSpec(e2e.sim), hosts: [{ name: 'x y', address: '' }] };
    const err = await e2e.client.workflow
      .execute(probeCluster, { taskQueue: TASK_QUEUE, workflowId: 'probe-invalid', args: [spec] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof WorkflowFailedError);
    assert.match(String(err.cause?.message), /hosts\[0\]\.name/);
  });

  it('fails a refused login at once: the SSH error says retrying cannot help, and no attempt is repeated', async () => {
    const spec = simClusterSpec(e2e.sim, { cluster: 'probe-refused-login' });
    // A key the hosts were never told about: sshd refuses it, which no retry can change.
    const strangerKey = join(stateDir, 'id_stranger');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', strangerKey], { input: 'y\n' });
    spec.ssh.privateKeyPath = strangerKey;
    const handle = await e2e.client.workflow.start(probeCluster, {
      taskQueue: TASK_QUEUE,
      workflowId: 'probe-refused-login',
      args: [spec],
    });
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    // Every attempt and failure the history holds, so a failing assertion below says what happened instead.
    const events = (await handle.fetchHistory()).events ?? [];
    const story = events
      .map((e) => {
        const started = e.activityTaskStartedEventAttributes;
        if (started) return `started attempt ${started.attempt ?? '?'}`;
        const failed = e.activityTaskFailedEventAttributes?.failure;
        return failed
          ? `failed (${failed.applicationFailureInfo?.type ?? '?'}): ${failed.message ?? ''}`
          : undefined;
      })
      .filter((line) => line !== undefined)
      .join('\n');
    const seen = `${String(err)}\ncause: ${String((err as Error | undefined)?.cause)}\nhistory:\n${story}`;
    assert.ok(err instanceof WorkflowFailedError, `the workflow fails\n${seen}`);
    assert.ok(err.cause instanceof ActivityFailure, `an activity failed\n${seen}`);
    assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE, seen);
    const cause = err.cause.cause;
    assert.ok(cause instanceof ApplicationFailure, seen);
    assert.equal(cause.type, 'SshConnectError', seen);
    assert.equal(cause.nonRetryable, true, seen);
    assert.match(cause.message, /failed \(auth\)/, seen);
    const attempts = events
      .map((e) => e.activityTaskStartedEventAttributes?.attempt)
      .filter((a): a is number => a !== undefined && a !== null);
    assert.ok(attempts.length > 0, seen);
    assert.deepEqual(
      attempts.filter((a) => a > 1),
      [],
      `no activity was tried twice\n${seen}`,
    );
  });
});
