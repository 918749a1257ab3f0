// Issue 16: preflight refuses hosts that disagree (image, weights, addresses, versions, IPC), before anything is
// stopped. One simulated cluster for the file: each test makes spark2 disagree in one way (sim/disagree.ts), runs
// a real deploy, and puts the host back. spark2 has its own management link (not behind spark1, as in the
// reference layout), so that its cluster address can change under it without cutting it off. That nothing changed is read from the hosts themselves: their units and
// containers, and the command log of every simulated tool a session ran (sim/tools/main.ts).
import { afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { release } from 'node:os';
import { stringify } from 'yaml';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { suiteStateDir, useSuiteCluster } from '../helpers/suites.js';
import { runLiftoff } from '../helpers/cli.js';
import { deployFailureOf } from '../helpers/deploy-failure.js';
import { assertReferenceDeploymentRuns } from '../helpers/reference-deployment.js';
import { changingCommands, hostCommands } from '../helpers/host-logs.js';
import { clusterHosts, validate } from '../../src/workflows/cluster-run.js';
import { agreementInput } from '../../src/workflows/preflight.js';
import { modelPathFor } from '../../src/config/derive.js';
import { checkHostsAgree, type AgreementResult } from '../../src/activities/agreement.js';
import { clearDisagreements, setDisagreement, type Disagreement } from '../../sim/disagree.js';
import { simDeploySpec } from '../../sim/spec.js';

const stateDir = suiteStateDir('agreement');
type Spec = ReturnType<typeof simDeploySpec>;

describe('preflight: the hosts must agree', () => {
  const e2e = useSuiteCluster('agreement', {
    clusterOnly: [],
    vllm: { shards: 12, shardSeconds: 0.1 },
  });
  const base = (): Spec => simDeploySpec(e2e.sim, { cluster: 'agreement' });
  const hostDirs = (): string[] => e2e.sim.hosts.map((h) => h.hostDir);
  const headIp = (): string => e2e.sim.hosts[0]?.clusterIp ?? '';
  const workerIp = (): string => e2e.sim.hosts[1]?.clusterIp ?? '';

  afterEach(() => clearDisagreements(stateDir));
  // The activity called directly, outside the worker, takes this process's worker policy: the sim's.
  before(() => {
    process.env.LIFTOFF_WORKER_POLICY = e2e.sim.workerPolicyPath;
  });

  async function deployExpectingRefusal(spec: Spec): Promise<ApplicationFailure> {
    const failure = await deployFailureOf(e2e.client, 'agreement', spec);
    assert.equal(failure.type, 'PreflightFailed', failure.message);
    assert.match(failure.message, /nothing was stopped or removed/);
    return failure;
  }

  /** The old deployment still runs, and no command a session ran since `marks` could change a host. */
  async function assertNothingChanged(marks: number[]): Promise<void> {
    await assertReferenceDeploymentRuns(stateDir);
    hostDirs().forEach((dir, i) => {
      const ran = hostCommands(dir).slice(marks[i]);
      assert.ok(ran.length > 0, `${e2e.sim.hosts[i]?.name}: preflight ran its reads there`);
      assert.deepEqual(changingCommands(ran), [], `${e2e.sim.hosts[i]?.name}: no command changed anything`);
    });
  }

  /** spark2 disagrees as `d` says; the deploy is refused with `expected`; nothing changed anywhere. */
  async function refused(d: Disagreement, expected: RegExp, spec = base()): Promise<string> {
    await setDisagreement(stateDir, 'spark2', d);
    const marks = hostDirs().map((dir) => hostCommands(dir).length);
    const failure = await deployExpectingRefusal(spec);
    assert.match(failure.message, expected);
    // What a user reads: the refusal's lines, printed for the record (the assertions are above).
    console.log(
      failure.message
        .split('\n')
        .filter((l) => /^\s+spark/.test(l))
        .join('\n'),
    );
    await assertNothingChanged(marks);
    return failure.message;
  }

  async function agreementOf(spec: Spec): Promise<AgreementResult> {
    const parsed = validate(spec);
    const hosts = clusterHosts(parsed);
    const head = hosts.find((h) => h.role === 'head');
    assert.ok(head);
    const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
    const input = agreementInput(parsed, hosts, head, modelPathFor(parsed) ?? '');
    return env.run<[typeof input], AgreementResult, typeof checkHostsAgree>(checkHostsAgree, input);
  }

  it('the reference cluster agrees: no problem, no warning, every host read', async () => {
    const { machineIds, identities, ...result } = await agreementOf(base());
    assert.deepEqual(result, { ok: true, problems: [], warnings: [], unread: [] });
    // Each host's identity, read in the same trip (issue 30): the simulated GB10's driver, this machine's kernel
    // (the hosts are namespaces of it), the seeded HF snapshot and its index, the image's versions.
    assert.deepEqual(
      identities.map((i) => i.host),
      ['spark1', 'spark2'],
    );
    for (const identity of identities) {
      assert.match(identity.imageId ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.equal(identity.kernel, release());
      assert.equal(identity.driver, '580.95.05');
      assert.match(identity.weights?.snapshot ?? '', /^[0-9a-f]{40}$/);
      assert.match(identity.weights?.indexSha256 ?? '', /^[0-9a-f]{64}$/);
      assert.ok(identity.versions?.python, JSON.stringify(identity));
    }
    assert.deepEqual(identities[0]?.weights, identities[1]?.weights, 'the same weights on both hosts');
    // Each host's own machine id (the simulator gives each its own): what a cluster holds it by.
    assert.deepEqual(Object.keys(machineIds), ['spark1', 'spark2']);
    for (const id of Object.values(machineIds)) assert.match(id, /^[0-9a-f]{32}$/);
    assert.notEqual(machineIds.spark1, machineIds.spark2);
  });

  it('refuses a different image on the worker, short IDs side by side', async () => {
    const message = await refused(
      { imageIdSalt: 'rebuilt' },
      /spark2: image: hellohal2064\/vllm-qwen3\.5-gb10 is a different image from host to host \(spark1: ([0-9a-f]{12}) \| spark2: ([0-9a-f]{12})\)/,
    );
    const ids = /spark1: ([0-9a-f]{12}) \| spark2: ([0-9a-f]{12})/.exec(message);
    assert.notEqual(ids?.[1], ids?.[2]);
  });

  it('refuses one shard missing on the worker', async () => {
    await refused(
      { missingShard: 7 },
      /spark2: weights: \.\/snapshots\/[0-9a-f]+\/model\.safetensors\.index\.json lists shard\(s\) that are not there: model-00007-of-00012\.safetensors/,
    );
  });

  it('refuses an empty shard on the worker', async () => {
    await refused(
      { emptyShard: 4 },
      /spark2: weights: shard\(s\) listed in \.\/snapshots\/[0-9a-f]+\/model\.safetensors\.index\.json are empty: model-00004-of-00012\.safetensors/,
    );
  });

  it('refuses a truncated shard on the worker: its shards hold less than the index’s total_size', async () => {
    const message = await refused(
      { truncatedShard: 9 },
      /spark2: weights: the shards of \.\/snapshots\/[0-9a-f]+\/model\.safetensors\.index\.json hold (\d+) bytes, fewer than its total_size (\d+): a shard is truncated/,
    );
    const [, held, total] = /hold (\d+) bytes, fewer than its total_size (\d+)/.exec(message) ?? [];
    assert.ok(Number(held) < Number(total));
  });

  it('refuses a broken symbolic link in the worker’s snapshot', async () => {
    await refused(
      { brokenShardLink: 3 },
      /spark2: weights: broken symbolic link\(s\) in \/home\/aurora\/\.cache\/huggingface\/hub\/models--Qwen--Qwen3\.5-122B-A10B-FP8: \.\/snapshots\/[0-9a-f]+\/model-00003-of-00012\.safetensors/,
    );
  });

  it('refuses a clusterIp on another interface than NCCL/GLOO_SOCKET_IFNAME name', async () => {
    const message = await refused(
      { clusterIface: 'enp2s0f0np0' },
      new RegExp(
        `spark2: addresses: clusterIp ${workerIp().replaceAll('.', '\\.')} is on enp2s0f0np0, but NCCL_SOCKET_IFNAME=enp1s0f1np1 and GLOO_SOCKET_IFNAME=enp1s0f1np1 name another interface`,
      ),
    );
    assert.doesNotMatch(message, /spark1: addresses/, 'the head agrees with the spec');
  });

  it('refuses a clusterIp that is on no interface of the worker', async () => {
    const moved = workerIp().replace(/\.\d+$/, '.201');
    const message = await refused(
      { clusterAddress: moved },
      new RegExp(
        `spark2: addresses: clusterIp ${workerIp().replaceAll('.', '\\.')} is on no interface of spark2 \\(NCCL_SOCKET_IFNAME=enp1s0f1np1 and GLOO_SOCKET_IFNAME=enp1s0f1np1`,
      ),
    );
    assert.doesNotMatch(message, /spark1: addresses/, 'the head agrees with the spec');
  });

  it('refuses VLLM_HOST_IP that is not the node IP given to Ray', async () => {
    const spec = base();
    (spec.ray.env as Record<string, string>).VLLM_HOST_IP = headIp();
    await refused(
      {},
      new RegExp(
        `spark2: addresses: ray\\.env VLLM_HOST_IP=${headIp().replaceAll('.', '\\.')} is not the node IP given to Ray on spark2 \\(${workerIp().replaceAll('.', '\\.')}\\)`,
      ),
      spec,
    );
  });

  it('refuses a Ray port blocked from the worker to the head', async () => {
    await refused(
      { blockTcpTo: { ip: headIp(), port: 6379 } },
      new RegExp(
        `spark2: addresses: spark2 cannot reach the head's Ray port ${headIp().replaceAll('.', '\\.')}:6379 \\(`,
      ),
    );
  });

  it('refuses versions that differ inside the image', async () => {
    await refused(
      { imageIdSalt: 'older-pull', imageVersions: { vllm: '0.10.2' } },
      /spark2: versions: vllm inside hellohal2064\/vllm-qwen3\.5-gb10 differ \(spark1: vllm 0\.11\.0 \| spark2: vllm 0\.10\.2\)/,
    );
  });

  it('refuses a Python that differs only in its patch level inside the image', async () => {
    await refused(
      { imageIdSalt: 'patch-release', imageVersions: { python: '3.12.4' } },
      /spark2: versions: python inside hellohal2064\/vllm-qwen3\.5-gb10 differ \(spark1: python 3\.12\.3 \| spark2: python 3\.12\.4\)/,
    );
  });

  it('refuses RemoveIPC=yes for a non-root SSH user that does not linger, saying how to fix it', async () => {
    await refused(
      { logind: { removeIpc: true, uid: 1000, name: 'aurora', linger: false } },
      /spark2: ipc: logind has RemoveIPC=yes and aurora \(uid 1000\) does not linger: .*sudo loginctl enable-linger aurora, or RemoveIPC=no in \/etc\/systemd\/logind\.conf/,
    );
  });

  it('refuses MTUs that differ on the cluster interface', async () => {
    await refused(
      { mtu: 9000 },
      /spark2: addresses: the MTU of the cluster interface differs \(spark1: 1500 \| spark2: 9000\)/,
    );
  });

  it('warns about clock skew above preflight.maxClockSkew, without refusing', async () => {
    await setDisagreement(stateDir, 'spark2', { clockOffsetSeconds: 8 });
    const result = await agreementOf(base());
    assert.equal(result.ok, true);
    assert.match(
      result.warnings[0] ?? '',
      /clocks differ by [78]\.\d s between spark1 and spark2 \(preflight\.maxClockSkew is 5 s\)/,
    );
    const lenient = base() as Spec & { preflight?: { maxClockSkew: string } };
    lenient.preflight = { maxClockSkew: '30s' };
    assert.deepEqual((await agreementOf(lenient)).warnings, []);
    // What a user reads: `liftoff plan` (the deploy's own preflight) would start, and says so with the warning.
    mkdirSync(stateDir, { recursive: true });
    const file = join(stateDir, 'clock-skew.yaml');
    writeFileSync(file, stringify(base()));
    const marks = hostDirs().map((dir) => hostCommands(dir).length);
    const plan = await runLiftoff(['plan', '-c', file], {
      ...process.env,
      ...e2e.temporalEnv,
      LIFTOFF_WORKER_POLICY: e2e.sim.workerPolicyPath,
    });
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /preflight passed on every host \(spark1, spark2\)/);
    assert.match(
      plan.stdout,
      /^warning: clocks differ by [78]\.\d s between spark1 and spark2 \(preflight\.maxClockSkew is 5 s\)/m,
    );
    console.log(plan.stdout.split('\n').find((l) => l.startsWith('warning:')));
    await assertNothingChanged(marks);
  });
});
