// Host preparation activities (preflight, stop services, remove containers, verify GPUs clear) against a real
// simulated cluster: real sshd in two network namespaces, seeded with the reference state (enabled services
// and old containers holding the GPUs). Effects are checked on the hosts' own state, not only on results.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import {
  clusterPaths,
  clusterStatus,
  downCluster,
  setFaults,
  setHostDown,
  setHostUp,
  upCluster,
  type HostStatus,
  type SimCluster,
} from '../../sim/cluster.js';
import { referenceImages, referenceModelDir, referenceUnits } from '../../sim/seed.js';
import { preflightHost } from '../../src/activities/preflight.js';
import { stopServices } from '../../src/activities/services.js';
import { removeContainers } from '../../src/activities/containers.js';
import { verifyGpusClear } from '../../src/activities/gpu.js';
import type { PreflightInput, PreflightReport } from '../../src/activities/types.js';
import type { HostRef } from '../../src/config/targets.js';
import { withSshSession } from '../helpers/ssh.js';
import { sh } from '../../src/ssh/quote.js';
import { FailureType } from '../../src/shared/failures.js';

const stateDir = '/tmp/liftoff-test-host-activities';
const cluster = 'host-e2e';
const seededContainers = ['vllm_node', 'reranker', 'vllm_embeddings'];
const hfCache = '/home/aurora/.cache/huggingface';

describe('host preparation activities on the simulated cluster', () => {
  let sim: SimCluster;
  // Failed activities are what most tests expect; the SDK's warning for each would drown the report.
  const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  // MockActivityEnvironment.run loses the activity's result type; this keeps it.
  const run = <A, R>(fn: (input: A) => Promise<R>, input: A): Promise<R> =>
    env.run<[A], R, typeof fn>(fn, input);

  const refOf = (name: string): HostRef => {
    const h = sim.hosts.find((x) => x.name === name);
    assert.ok(h, `host ${name}`);
    return {
      target: { name: h.name, host: h.address, port: h.sshPort, user: sim.sshUser },
      auth: { privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
    };
  };
  const goodInput = (name: string): PreflightInput => {
    const h = sim.hosts.find((x) => x.name === name);
    assert.ok(h);
    return {
      host: refOf(name),
      clusterIp: h.clusterIp,
      iface: h.clusterIface,
      image: referenceImages[0] ?? '',
      modelPath: referenceModelDir,
      volumes: [`${hfCache}:/root/.cache/huggingface`],
      logDir: '/home/aurora',
      minFreeDiskGiB: 1,
    };
  };
  const onHostShell = (name: string, command: ReturnType<typeof sh>) =>
    withSshSession(
      refOf(name).target,
      { privateKeyPath: sim.privateKeyPath, knownHostsPath: sim.knownHostsPath },
      (s) => s.exec(command, { timeoutMs: 30_000 }),
    );
  const statusOf = async (name: string): Promise<HostStatus> => {
    const s = (await clusterStatus(stateDir)).find((h) => h.name === name);
    assert.ok(s, `status of ${name}`);
    return s;
  };
  const failureOf = async (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );

  before(async () => {
    sim = await upCluster({ hosts: 2, mode: 'netns', stateDir, netIndex: 3 });
    // Activities run here outside a worker take this process's worker policy: the sim's key and known_hosts.
    process.env.LIFTOFF_WORKER_POLICY = sim.workerPolicyPath;
  });

  after(async () => {
    delete process.env.LIFTOFF_WORKER_POLICY;
    await downCluster(stateDir);
  });

  it('preflight passes on good hosts, with and without the interface named', async () => {
    const reports = await Promise.all(['spark1', 'spark2'].map((n) => run(preflightHost, goodInput(n))));
    for (const report of reports) {
      assert.equal(report.ok, true, JSON.stringify(report, null, 2));
      assert.deepEqual(
        report.checks.map((c) => c.name),
        ['ssh', 'docker', 'image', 'gpus', 'model', 'volumes', 'interface', 'disk', 'logDir', 'logWritable'],
      );
      assert.match(checkOf(report, 'model').detail, /\d+ \.safetensors file\(s\) and 1 config\.json/);
      assert.match(checkOf(report, 'interface').detail, /enp1s0f1np1 carries clusterIp 10\.213\./);
    }
    const { iface: _iface, logDir: _logDir, ...withoutIface } = goodInput('spark1');
    const report = await run(preflightHost, withoutIface);
    assert.equal(report.ok, true, JSON.stringify(report, null, 2));
    assert.equal(
      report.checks.some((c) => c.name === 'logDir'),
      false,
    );
    assert.match(checkOf(report, 'interface').detail, /is on enp1s0f1np1/);
  });

  it('preflight reports each failing check as a finding and touches nothing', async () => {
    // A serve log that is a link (to /etc/passwd, which the launch would truncate) and a log folder that leads
    // into /etc: the schema sees neither, only the host does.
    await onHostShell(
      'spark1',
      sh`ln -sfn /etc/passwd /home/aurora/linked-serve.log && ln -sfn /etc /home/aurora/etc-link`,
    );
    const before = await statusOf('spark1');
    const good = goodInput('spark1');
    const cases: { input: PreflightInput; failing: string; detail: RegExp }[] = [
      {
        input: { ...good, image: 'vllm/vllm-openai:v0.0.1-missing' },
        failing: 'image',
        detail: /vllm\/vllm-openai:v0\.0\.1-missing is not on the host.*docker pull/,
      },
      {
        input: { ...good, modelPath: '/home/aurora/models/not-downloaded' },
        failing: 'model',
        detail: /\/home\/aurora\/models\/not-downloaded does not exist/,
      },
      {
        input: { ...good, modelPath: `${referenceModelDir}/refs` },
        failing: 'model',
        detail: /no \*\.safetensors or config\.json below \/home\/aurora\/.*\/refs/,
      },
      {
        input: { ...good, iface: 'eth9' },
        failing: 'interface',
        detail: /eth9.*does not exist.*set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to enp1s0f1np1/,
      },
      {
        input: { ...good, iface: 'lo' },
        failing: 'interface',
        detail: /interface lo does not carry clusterIp.*is on enp1s0f1np1/,
      },
      {
        input: { ...good, iface: undefined, clusterIp: '10.213.99.9' },
        failing: 'interface',
        detail: /clusterIp 10\.213\.99\.9 is on no interface/,
      },
      {
        input: { ...good, volumes: [...good.volumes, '/home/aurora/missing-volume:/data:ro'] },
        failing: 'volumes',
        detail: /missing on the host: \/home\/aurora\/missing-volume\./,
      },
      {
        input: { ...good, logDir: '/home/aurora/logs-not-there' },
        failing: 'logDir',
        detail: /\/home\/aurora\/logs-not-there does not exist/,
      },
      {
        input: { ...good, logPath: '/home/aurora/linked-serve.log' },
        failing: 'logDir',
        detail: /serve\.logPath \/home\/aurora\/linked-serve\.log is a symbolic link on the host/,
      },
      {
        input: { ...good, logDir: '/home/aurora/etc-link', logPath: '/home/aurora/etc-link/serve.log' },
        failing: 'logDir',
        detail:
          /log folder \/home\/aurora\/etc-link is \/etc once its links are followed, under the system folder \/etc/,
      },
      { input: { ...good, minFreeDiskGiB: 10_000_000 }, failing: 'disk', detail: /only .* GiB free on \// },
    ];
    const reports = await Promise.all(cases.map((c) => run(preflightHost, c.input)));
    reports.forEach((report, i) => {
      const c = cases[i];
      assert.ok(c);
      assert.equal(report.ok, false, `${c.failing}: ${JSON.stringify(report)}`);
      assert.deepEqual(
        report.checks.filter((x) => !x.ok).map((x) => x.name),
        [c.failing],
        JSON.stringify(report.checks, null, 2),
      );
      assert.match(checkOf(report, c.failing).detail, c.detail);
    });

    const after = await statusOf('spark1');
    assert.deepEqual(after.units, before.units);
    assert.deepEqual(after.containers, before.containers);
    assert.deepEqual(
      after.gpuProcesses.map((p) => p.pid),
      before.gpuProcesses.map((p) => p.pid),
    );
    assert.ok(after.units.every((u) => u.active && u.enabled));
    assert.ok(after.containers.every((c) => c.running));
  });

  it('preflight on a downed host rejects with a retryable SshConnectError failure', async () => {
    await setHostDown(stateDir, 'spark2', 'sshd');
    try {
      const err = await failureOf(run(preflightHost, goodInput('spark2')));
      // onHost hands the SSH layer's error to Temporal as an ApplicationFailure of its class name.
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, 'SshConnectError');
      assert.equal(err.nonRetryable, false, 'a refused connection may be a passing state');
      assert.match(err.message, /failed \(refused\)/);
      assert.match(err.message, /spark2/);
    } finally {
      await setHostUp(stateDir, 'spark2');
    }
  });

  it('verifyGpusClear names every seeded GPU process while the old containers run', async () => {
    const held = (await statusOf('spark1')).gpuProcesses;
    assert.equal(held.length, 3, 'the reference state holds the GPU three times');
    const err = await failureOf(
      run(verifyGpusClear, { host: refOf('spark1'), maxUsedMiB: 1024, minAvailableMiB: 65536 }),
    );
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, FailureType.gpuNotClear);
    assert.equal(err.nonRetryable, false);
    assert.match(err.message, /^GPUs on spark1 are not clear: 3 compute process/);
    for (const p of held)
      assert.ok(err.message.includes(`pid ${p.pid} python3 (${p.usedMiB} MiB)`), err.message);
    assert.match(err.message, /MemAvailable \d+ MiB, below the 65536 MiB required/);
    const details = err.details?.[0] as { processes: { pid: number; usedMiB: number }[] };
    assert.deepEqual(
      details.processes.map((p) => [p.pid, p.usedMiB]).sort(),
      held.map((p) => [p.pid, p.usedMiB]).sort(),
    );
  });

  it('stopServices leaves the units inactive and disabled; missing units are reported, not errors', async () => {
    const units = [...referenceUnits, 'not-installed.service'];
    const result = await run(stopServices, { host: refOf('spark1'), units, disable: true });
    assert.deepEqual(result, {
      host: 'spark1',
      stopped: referenceUnits,
      disabled: referenceUnits,
      notLoaded: ['not-installed.service'],
    });
    const status = await statusOf('spark1');
    assert.deepEqual(
      status.units.map((u) => [u.name, u.active, u.enabled, u.running]).sort(),
      referenceUnits.map((u) => [u, false, false, false]).sort(),
    );
    // Again: already stopped and disabled is success, with the same answer.
    assert.deepEqual(await run(stopServices, { host: refOf('spark1'), units, disable: true }), result);
  });

  it('stopServices without sudo rights fails at once with a clear, non-retryable error', async () => {
    // A login that is not root: `id -u` answers 1000 and sudo -n wants a password, as a real sudo would.
    const bin = clusterPaths.bin(stateDir);
    writeFileSync(join(bin, 'id'), '#!/bin/sh\necho 1000\n');
    writeFileSync(join(bin, 'sudo'), '#!/bin/sh\necho "sudo: a password is required" >&2\nexit 1\n');
    chmodSync(join(bin, 'id'), 0o755);
    chmodSync(join(bin, 'sudo'), 0o755);
    try {
      const started = Date.now();
      const err = await failureOf(
        run(stopServices, { host: refOf('spark2'), units: referenceUnits, disable: true }),
      );
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, 'SudoNotPermitted');
      assert.equal(err.nonRetryable, true);
      assert.match(err.message, /On spark2, sudo refused .*a password is required.*NOPASSWD/);
      // The suggested rule allows exactly `systemctl stop|disable` of the named units, not all of systemctl.
      const list = referenceUnits.join(' ');
      assert.ok(
        err.message.includes(
          `NOPASSWD: /usr/bin/systemctl stop -- ${list}, /usr/bin/systemctl disable -- ${list}\``,
        ),
        err.message,
      );
      assert.doesNotMatch(err.message, /NOPASSWD: \/usr\/bin\/systemctl`/);
      assert.ok(Date.now() - started < 10_000);
    } finally {
      rmSync(join(bin, 'id'));
      rmSync(join(bin, 'sudo'));
    }
    const status = await statusOf('spark2');
    assert.ok(
      status.units.every((u) => u.active && u.enabled),
      'nothing was stopped',
    );
  });

  it('removeContainers removes the named and this cluster’s labelled containers, and only those', async () => {
    const hog = ['gpu-hog', '--mib', '2048', '--name', 'python3'];
    await onHostShell(
      'spark1',
      sh`docker run -d --name old_ray_head --label liftoff.cluster=${cluster} --label liftoff.role=head ${referenceImages[0] ?? ''} ${hog}`,
    );
    await onHostShell(
      'spark1',
      sh`docker run -d --name other_cluster_head --label liftoff.cluster=other ${referenceImages[0] ?? ''} sleep 600`,
    );
    const result = await run(removeContainers, {
      host: refOf('spark1'),
      names: [...seededContainers, 'never_existed'],
      cluster,
    });
    assert.deepEqual([...result.removed].sort(), [...seededContainers, 'old_ray_head'].sort());
    const status = await statusOf('spark1');
    assert.deepEqual(
      status.containers.map((c) => [c.name, c.running]),
      [['other_cluster_head', true]],
    );
    const listed = await onHostShell('spark1', sh`docker ps -a --format ${'{{.Names}}'}`);
    assert.equal(listed.stdout.trim(), 'other_cluster_head');
    // Nothing left to remove is success.
    assert.deepEqual(
      await run(removeContainers, { host: refOf('spark1'), names: seededContainers, cluster }),
      { host: 'spark1', removed: [] },
    );
  });

  it('verifyGpusClear passes once the services and containers are gone', async () => {
    const state = await run(verifyGpusClear, {
      host: refOf('spark1'),
      maxUsedMiB: 1024,
      minAvailableMiB: 65536,
    });
    assert.deepEqual(state.processes, []);
    assert.equal(state.unifiedMemory, true);
    assert.ok(state.memAvailableMiB >= 65536, `MemAvailable ${state.memAvailableMiB}`);
    assert.deepEqual((await statusOf('spark1')).gpuProcesses, []);
  });

  it('verifyGpusClear fails while a killed process still holds memory, and passes once it is freed', async () => {
    setFaults(stateDir, 'spark2', { gpuHeldAfterKillSeconds: 3 });
    await run(stopServices, { host: refOf('spark2'), units: referenceUnits, disable: false });
    await run(removeContainers, { host: refOf('spark2'), names: seededContainers, cluster });
    assert.deepEqual(
      (await statusOf('spark2')).containers.map((c) => c.name),
      [],
    );
    const input = { host: refOf('spark2'), maxUsedMiB: 1024, minAvailableMiB: 65536 };
    const first = await failureOf(run(verifyGpusClear, input));
    assert.ok(first instanceof ApplicationFailure && first.type === FailureType.gpuNotClear, String(first));
    assert.match(first.message, /pid \d+ python3 \(\d+ MiB\)/);

    // The workflow's retry policy does this waiting; here a plain loop stands in for it.
    const deadline = Date.now() + 15_000;
    let passed = false;
    let attempts = 1;
    while (!passed && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      attempts++;
      passed = await run(verifyGpusClear, input).then(
        () => true,
        (e: unknown) => {
          if (!(e instanceof ApplicationFailure) || e.type !== FailureType.gpuNotClear) throw e;
          return false;
        },
      );
    }
    assert.ok(passed, `GPUs on spark2 clear within 15 s (${attempts} attempts)`);
    assert.ok(attempts > 2, 'memory was held for a while after the kill');
  });
});

function checkOf(report: PreflightReport, name: string) {
  const check = report.checks.find((c) => c.name === name);
  assert.ok(check, `check ${name} in ${JSON.stringify(report.checks)}`);
  return check;
}
