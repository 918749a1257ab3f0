// The simulated nvidia-smi against the captured outputs in fixtures/nvidia-smi, for both flavours, and the GPU
// memory a gpu-hog holds: shown while it lives, gone after a kill, kept a while under the held-memory fault.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GpuFlavour } from '../../sim/host-state.js';
import { killChildren, makeSimHost, runSimTool, simToolEnv, useSimRoot } from '../helpers/sim-host.js';

const fixtures = '/work/shared/fixtures/nvidia-smi';
const fixture = (name: string) => readFileSync(join(fixtures, name), 'utf8');

const hogs: ChildProcess[] = [];
const { root, binDir } = useSimRoot('liftoff-smi-', () => killChildren(hogs));

function makeHost(name: string, flavour: GpuFlavour, gpuCount = 1): string {
  return makeSimHost(join(root, name), { name, flavour, gpuCount });
}

function smi(hostDir: string, args: string[], extraEnv: Record<string, string> = {}) {
  return runSimTool(binDir, hostDir, 'nvidia-smi', args, { env: extraEnv, timeoutMs: 10_000 });
}

/** Starts a gpu-hog and waits until it has registered its memory. */
async function startHog(hostDir: string, args: string[]): Promise<ChildProcess> {
  const hog = spawn(join(binDir, 'gpu-hog'), args, {
    env: simToolEnv(binDir, hostDir),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  hogs.push(hog);
  await new Promise<void>((resolve, reject) => {
    hog.stdout?.once('data', () => resolve());
    hog.once('exit', (code) => reject(new Error(`gpu-hog exited with ${code}`)));
  });
  return hog;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));
}

const dateLine =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 1-3]\d \d\d:\d\d:\d\d \d{4} {7}$/;

describe('nvidia-smi, h200 flavour', () => {
  it('prints the idle table exactly as captured, apart from the clock', async () => {
    const host = makeHost('h200-idle', 'h200');
    const r = await smi(host, []);
    assert.equal(r.code, 0);
    const got = r.stdout.split('\n');
    const want = fixture('h200/nvidia-smi-idle.txt').split('\n');
    assert.match(got[0] ?? '', dateLine);
    assert.deepEqual(got.slice(1), want.slice(1));
  });

  it('shows a gpu-hog in the table and the CSV queries, and drops it after SIGTERM', async () => {
    const host = makeHost('h200-busy', 'h200');
    const hog = await startHog(host, ['--mib', '29222', '--name', 'python3']);
    const pid = hog.pid ?? 0;
    const uuid = (await smi(host, ['--query-gpu=uuid', '--format=csv,noheader'])).stdout.trim();
    assert.match(uuid, /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

    // The captured busy table differs only by the clock, the process, and 9 MiB of CUDA context.
    const table = (await smi(host, [])).stdout.split('\n');
    const want = fixture('h200/nvidia-smi-busy.txt')
      .replace('29231MiB / 143771MiB', '29222MiB / 143771MiB')
      .replace(`${' '.repeat(13)}424      C`, `${String(pid).padStart(16)}      C`)
      .split('\n');
    assert.match(table[0] ?? '', dateLine);
    assert.deepEqual(table.slice(1), want.slice(1));

    const apps = await smi(host, [
      '--query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid',
      '--format=csv',
    ]);
    const [appsHeader] = fixture('h200/compute-apps-busy.csv').split('\n');
    assert.equal(apps.stdout, `${appsHeader}\n${pid}, python3, 29222 MiB, ${uuid}\n`);
    const bare = await smi(host, [
      '--query-compute-apps=pid,process_name,used_gpu_memory',
      '--format=csv,noheader,nounits',
    ]);
    assert.equal(bare.stdout, `${pid}, python3, 29222\n`);

    const gpu = await smi(host, [
      '--query-gpu=index,uuid,name,memory.total,memory.used,memory.free,utilization.gpu',
      '--format=csv',
    ]);
    const [gpuHeader] = fixture('h200/query-gpu-busy.csv').split('\n');
    assert.equal(
      gpu.stdout,
      `${gpuHeader}\n0, ${uuid}, NVIDIA H200, 143771 MiB, 29222 MiB, 113934 MiB, 0 %\n`,
    );
    const short = await smi(host, [
      '--query-gpu=index,memory.used,memory.total',
      '--format=csv,noheader,nounits',
    ]);
    assert.equal(short.stdout, '0, 29222, 143771\n');

    hog.kill('SIGTERM');
    await exited(hog);
    assert.equal(hog.signalCode, 'SIGTERM', 'gpu-hog dies of the signal after releasing');
    const idleApps = await smi(host, [
      '--query-compute-apps=pid,process_name,used_gpu_memory,gpu_uuid',
      '--format=csv',
    ]);
    assert.equal(idleApps.stdout, fixture('h200/compute-apps-idle.csv'));
    const idleGpu = await smi(host, [
      '--query-gpu=index,uuid,name,memory.total,memory.used,memory.free,utilization.gpu',
      '--format=csv',
    ]);
    const idleWant = fixture('h200/query-gpu-idle.csv')
      .split('\n')
      .slice(0, 2)
      .join('\n')
      .replace(/GPU-[0-9a-f-]+/, uuid);
    assert.equal(idleGpu.stdout, `${idleWant}\n`);
  });

  it('forgets a SIGKILLed process at once, or after gpuHeldAfterKillSeconds under that fault', async () => {
    const host = makeHost('h200-kill', 'h200');
    const listed = async () =>
      (await smi(host, ['--query-compute-apps=pid', '--format=csv,noheader'])).stdout
        .split('\n')
        .filter(Boolean);

    const quick = await startHog(host, ['--mib', '1000']);
    assert.deepEqual(await listed(), [String(quick.pid)]);
    quick.kill('SIGKILL');
    await exited(quick);
    assert.deepEqual(await listed(), []);

    writeFileSync(join(host, 'faults.json'), JSON.stringify({ gpuHeldAfterKillSeconds: 2 }));
    const held = await startHog(host, ['--mib', '2000']);
    held.kill('SIGKILL');
    await exited(held);
    assert.deepEqual(await listed(), [String(held.pid)], 'memory still held right after the kill');
    // The window counts from the first observation of the death, which happened by now.
    const seenDead = Date.now();
    assert.equal(
      (await smi(host, ['--query-gpu=memory.used', '--format=csv,noheader,nounits'])).stdout,
      '2000\n',
    );
    await new Promise((r) => setTimeout(r, Math.max(0, 2200 - (Date.now() - seenDead))));
    assert.deepEqual(await listed(), [], 'released once the fault window has passed');
  });

  it('prints --version, -L, per-GPU rows and hides processes inside a container', async () => {
    const host = makeHost('h200-multi', 'h200', 2);
    assert.equal((await smi(host, ['--version'])).stdout, fixture('h200/version.txt'));
    const list = (await smi(host, ['-L'])).stdout.split('\n').filter(Boolean);
    assert.equal(list.length, 2);
    assert.match(list[1] ?? '', /^GPU 1: NVIDIA H200 \(UUID: GPU-[0-9a-f-]{36}\)$/);

    const hog = await startHog(host, ['--mib', '500', '--gpu', '1']);
    const used = await smi(host, ['--query-gpu=index,memory.used', '--format=csv,noheader,nounits']);
    assert.equal(used.stdout, '0, 0\n1, 500\n');
    const inContainer = await smi(host, ['--query-compute-apps=pid', '--format=csv,noheader'], {
      LIFTOFF_SIM_CONTAINER: 'f'.repeat(64),
    });
    assert.equal(inContainer.stdout, '', 'a container PID namespace hides host processes');
    const table = (await smi(host, [])).stdout;
    assert.match(table, new RegExp(`\\|    1   N/A  N/A +${hog.pid}      C   python3 +500MiB \\|`));

    const bad = await smi(host, ['--query-gpu=memory.bogus', '--format=csv']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, 'Field "memory.bogus" is not a valid field to query.\n\n');
    hog.kill('SIGTERM');
    await exited(hog);
  });
});

describe('nvidia-smi, gb10 flavour', () => {
  it('reports [N/A] memory, Not Supported in the table, and still lists compute apps', async () => {
    const host = makeHost('gb10', 'gb10');
    const query = [
      '--query-gpu=memory.total,memory.used,memory.free,utilization.gpu,power.draw,temperature.gpu',
      '--format=csv',
    ];
    assert.equal((await smi(host, query)).stdout, fixture('gb10/query-gpu.csv'));
    const appsQuery = ['--query-compute-apps=pid,process_name,used_gpu_memory', '--format=csv'];
    assert.equal((await smi(host, appsQuery)).stdout, fixture('gb10/compute-apps-idle.csv'));

    const hog = await startHog(host, ['--mib', '96073', '--name', 'ray::RayWorkerWrapper']);
    const busy = await smi(host, [
      '--query-compute-apps=pid,process_name,used_gpu_memory',
      '--format=csv,noheader,nounits',
    ]);
    assert.equal(
      busy.stdout,
      fixture('gb10/compute-apps-busy-noheader.csv').replace('6330', String(hog.pid)),
    );
    const memory = await smi(host, ['--query-gpu=memory.used,memory.free', '--format=csv,noheader,nounits']);
    assert.equal(memory.stdout, '[N/A], [N/A]\n');
    const meminfo = readFileSync(join(host, 'meminfo'), 'utf8');
    const available = Number(/MemAvailable:\s+(\d+) kB/.exec(meminfo)?.[1]);
    assert.ok(available < (124546 - 96073) * 1024, 'unified memory: the hog shows in MemAvailable');

    const table = (await smi(host, [])).stdout.split('\n');
    const idle = fixture('h200/nvidia-smi-idle.txt').split('\n');
    assert.match(table[0] ?? '', dateLine);
    assert.equal(
      table[2],
      '| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |',
    );
    // The frame and headings are the same as on the H200.
    for (const i of [1, 3, 4, 5, 6, 7, 11, 12, 13, 14, 15, 16, 17])
      assert.equal(table[i], idle[i], `line ${i}`);
    assert.equal(
      table[8],
      '|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |',
    );
    assert.match(
      table[9] ?? '',
      /^\| N\/A {3}\d\dC {4}P\d +\d+W \/ {2}N\/A {2}\| Not Supported {10}\| {6}0% {6}Default \|$/,
    );
    assert.equal(
      table[10],
      '|                                         |                        |                  N/A |',
    );
    assert.equal(
      table[18],
      `|    0   N/A  N/A ${String(hog.pid).padStart(15)}      C   ray::RayWorkerWrapper                 96073MiB |`,
    );
    hog.kill('SIGTERM');
    await exited(hog);
    assert.equal((await smi(host, appsQuery)).stdout, fixture('gb10/compute-apps-idle.csv'));
  });
});
