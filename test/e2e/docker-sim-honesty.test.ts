// The simulated docker (sim/tools/docker) against the real engine it stands in for: Debian's docker.io 20.10, one
// daemon per simulated host (sim/real-docker.ts). The same commands go to a real daemon and to a simulated host,
// and what they print and their exit codes must be the same (container IDs aside): product code reads these words
// (a missing container, a missing image, a refused run), so a simulated word the real engine never says would let a
// test pass that fails on a real host. spark2's daemon has no NVIDIA runtime, as the simulated host with no GPU.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { downCluster, upCluster, type SimCluster, type SimHost } from '../../sim/cluster.js';
import { hostDocker } from '../../sim/real-docker.js';
import { referenceImages } from '../../sim/seed.js';
import { killSimHostProcesses, makeSimHost, runSimTool, useSimRoot } from '../helpers/sim-host.js';
import { sshRun } from '../helpers/ssh.js';

const stateDir = '/tmp/liftoff-test-docker-sim-honesty';
const [image] = referenceImages as [string, ...string[]];

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

/** Container IDs differ from one engine to the other; nothing else may. */
// The 20.10 CLI with --rm sometimes logs its own race after a refused start (its wait for the container's removal
// is cancelled as it exits): a line of the client's log, not of the engine's answer, present in some runs only.
const cliRaceLine =
  /^time="[^"\n]{1,64}" level=error msg="error waiting for container: context canceled"\n/gm;

const normalised = (a: Answer): Answer => {
  const ids = (s: string) => s.replace(/\b[0-9a-f]{64}\b/g, '<id>');
  return { code: a.code, stdout: ids(a.stdout), stderr: ids(a.stderr).replace(cliRaceLine, '') };
};

// Each step runs on both engines, in order: later steps find what earlier ones left.
const steps: string[][] = [
  ['rm', '-f', 'ghost'],
  ['rm', '-f', '--', 'ghost', 'other'],
  ['rm', 'ghost'],
  ['inspect', '--type', 'container', '--', 'ghost'],
  ['container', 'inspect', 'ghost'],
  ['inspect', 'ghost'],
  ['logs', '--tail', '5', 'ghost'],
  ['exec', 'ghost', 'true'],
  ['exec', '-d', 'ghost', 'true'],
  ['stop', 'ghost'],
  ['kill', 'ghost'],
  ['wait', 'ghost'],
  ['image', 'inspect', '--format', '{{.Id}}', '--', 'nope/img:1'],
  ['image', 'inspect', 'nope/img:1'],
  ['run', '--rm', '--pull', 'never', 'nope/img:1', 'true'],
  ['run', '--rm', '--pull', 'never', 'nope', 'true'],
  ['run', '-d', '--name', 'x', '--frobnicate', image, 'true'],
  ['run', '-d', '--name', 'bad name', image, 'true'],
  ['run', '--rm', '--restart', 'always', image, 'true'],
  ['run', '-d', '--name', 'v1', '-v', '/a:/b:/c:/d', image, 'true'],
  ['run', '-d', '--init', '--name', 'taken', '--entrypoint', 'sleep', image, '300'],
  ['run', '-d', '--name', 'taken', '--entrypoint', 'sleep', image, '300'],
  ['rm', 'taken'],
  ['exec', 'taken', 'no-such-command'],
  ['exec', '-d', 'taken', 'no-such-command'],
  ['stop', '-t', '1', 'taken'],
  ['exec', 'taken', 'true'],
  ['kill', 'taken'],
  ['rm', 'taken', 'ghost'],
  ['run', '-d', '--name', 'nocmd', '--entrypoint', 'no-such-binary', image],
  ['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', 'nocmd'],
  ['rm', '-f', 'nocmd'],
  ['run', '--rm', '--entrypoint', 'no-such-binary', image],
  ['version', '--format', '{{.Server.Version}} {{.Server.APIVersion}} {{.Client.Version}}'],
  ['--version'],
];

// A host whose daemon cannot give containers GPUs: the run fails at start, and leaves the container Created.
const gpuSteps: string[][] = [
  ['run', '--rm', '--gpus', 'all', '--network', 'none', '--pull', 'never', '--entrypoint', 'true', image],
  ['run', '-d', '--name', 'gpu', '--gpus', 'all', '--entrypoint', 'true', image],
  ['ps', '-a', '--filter', 'name=gpu', '--format', '{{.Names}} {{.State}}'],
  ['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}} {{.State.Error}}', 'gpu'],
  ['rm', '-f', 'gpu'],
];

describe('the simulated docker answers as the real Docker Engine 20.10', () => {
  const { root, binDir } = useSimRoot('liftoff-docker-honesty-', () => {
    killSimHostProcesses(simGpu);
    killSimHostProcesses(simNoGpu);
  });
  const simGpu = join(root, 'gpu');
  const simNoGpu = join(root, 'nogpu');
  let sim: SimCluster;
  let real: SimHost;
  let realNoGpu: SimHost;

  before(async () => {
    makeSimHost(simGpu, { name: 'gpu', images: [...referenceImages] });
    makeSimHost(simNoGpu, { name: 'nogpu', images: [...referenceImages], gpuCount: 0 });
    sim = await upCluster({
      hosts: 2,
      mode: 'netns',
      stateDir,
      netIndex: 75,
      docker: 'real',
      noGpuRuntime: ['spark2'],
      seedReferenceState: false,
    });
    [real, realNoGpu] = sim.hosts as [SimHost, SimHost];
  });
  after(async () => {
    await downCluster(stateDir);
  });

  const simulated = (hostDir: string, args: string[]) =>
    runSimTool(binDir, hostDir, 'docker', args, { timeoutMs: 30_000 });

  async function compare(list: string[][], realHost: () => SimHost, simHost: string): Promise<void> {
    for (const args of list) {
      const want = normalised(await hostDocker(realHost(), args, 30_000));
      const got = normalised(await simulated(simHost, args));
      assert.deepEqual(got, want, `docker ${args.join(' ')}`);
    }
  }

  it('missing containers and images, refused runs, exec and its refusals, a container that cannot start', async () => {
    await compare(steps, () => real, simGpu);
  });

  it('a daemon without the NVIDIA runtime refuses --gpus at start and leaves the container Created', async () => {
    await compare(gpuSteps, () => realNoGpu, simNoGpu);
  });

  it('a missing -v source becomes an empty folder, and the container runs; --mount refuses it', async () => {
    const realSource = '/home/aurora/honesty/missing-source';
    const simSource = join(root, 'missing-source');
    const mount = (source: string) => [
      'run',
      '--rm',
      '--mount',
      `type=bind,source=${source}-m,target=/m`,
      image,
      'true',
    ];
    const bind = (source: string) => ['run', '--rm', '-v', `${source}:/m:ro`, '--entrypoint', 'true', image];
    const realBind = await hostDocker(real, bind(realSource));
    const simBind = await simulated(simGpu, bind(simSource));
    assert.deepEqual(
      [simBind.code, simBind.stdout, simBind.stderr],
      [realBind.code, realBind.stdout, realBind.stderr],
    );
    assert.equal(realBind.code, 0, realBind.stderr);
    // The daemon made it in the host's /home (the SSH session's view), as root's.
    assert.equal((await sshRun(sim, real.name, `stat -c '%F %U' ${realSource}`)).trim(), 'directory root');
    assert.ok(existsSync(simSource), 'the simulated docker made it too');
    const realMount = await hostDocker(real, mount(realSource));
    const simMount = await simulated(simGpu, mount(simSource));
    assert.equal(simMount.code, realMount.code);
    assert.equal(simMount.stderr.replace(simSource, 'SRC'), realMount.stderr.replace(realSource, 'SRC'));
  });
});
