// The simulated systemctl: a started unit is a process group (plus processes that left it, found by the
// unit's invocation id); stop ends them all; verbs print and exit like systemd 255.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  deadOrZombie,
  makeSimHost,
  pidsWithEnvPrefix,
  runSimTool,
  useSimHostRoot,
} from '../helpers/sim-host.js';
import { gpuProcessFile } from '../../sim/host-state.js';
import { readUnitCommandLine } from '../../src/init/command-line.js';

const { binDir, hostDir } = useSimHostRoot('liftoff-systemctl-');

const run = (tool: string, args: string[]) => runSimTool(binDir, hostDir, tool, args, { timeoutMs: 15_000 });
const systemctl = (...args: string[]) => run('systemctl', args);

function writeUnit(file: string, state: Record<string, unknown>): void {
  writeFileSync(join(hostDir, 'units', file), JSON.stringify(state));
}
function readUnit(file: string): { active: boolean; enabled: boolean; pgid?: number } {
  return JSON.parse(readFileSync(join(hostDir, 'units', file), 'utf8')) as {
    active: boolean;
    enabled: boolean;
    pgid?: number;
  };
}

/** Living processes started for this host whose command line mentions `marker`. */
function processesWith(marker: string): number[] {
  return pidsWithEnvPrefix(`LIFTOFF_SIM_HOST_DIR=${hostDir}`).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

async function until<T>(probe: () => T | undefined, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

void before(() => {
  mkdirSync(join(hostDir, 'units'), { recursive: true });
  makeSimHost(hostDir, { name: 'sim-systemctl-test' });
});

describe('systemctl', () => {
  it('starts a unit as a process group and stop kills every process, even one that left with setsid', async () => {
    writeUnit('vllm.service.json', {
      active: false,
      enabled: true,
      description: 'vLLM inference server',
      execStart: 'gpu-hog --mib 60000 --name python3 & setsid sleep 401 & wait',
    });
    const start = await systemctl('start', 'vllm');
    assert.equal(start.code, 0, start.stderr);
    const { pgid } = readUnit('vllm.service.json');
    assert.ok(pgid && pgid > 0);
    const [hog, escaped] = await until(() => {
      const h = processesWith('gpu-hog\u0000--mib');
      const s = processesWith('sleep\u0000401');
      return h.length && s.length ? [h[0] ?? 0, s[0] ?? 0] : undefined;
    }, 'unit processes');
    await until(() => (existsSync(gpuProcessFile(hostDir, hog, 0)) ? true : undefined), 'GPU registration');
    const smi = await run('nvidia-smi', [
      '--query-compute-apps=pid,used_gpu_memory',
      '--format=csv,noheader,nounits',
    ]);
    assert.equal(smi.stdout, `${hog}, 60000\n`);

    const active = await systemctl('is-active', 'vllm.service');
    assert.deepEqual([active.code, active.stdout], [0, 'active\n']);
    const show = await systemctl('show', '-p', 'ActiveState,SubState,UnitFileState', '--value', 'vllm');
    assert.equal(show.stdout, 'active\nrunning\nenabled\n');
    const status = await systemctl('status', '--no-pager', 'vllm');
    assert.equal(status.code, 0);
    assert.match(status.stdout, /^● vllm\.service - vLLM inference server\n/);

    const stop = await systemctl('stop', 'vllm');
    assert.equal(stop.code, 0, stop.stderr);
    assert.ok(deadOrZombie(hog), 'the unit main process is gone');
    assert.ok(deadOrZombie(escaped), 'the setsid process is gone too');
    assert.ok(deadOrZombie(pgid));
    const inactive = await systemctl('is-active', 'vllm');
    assert.deepEqual([inactive.code, inactive.stdout], [3, 'inactive\n']);
    assert.equal((await systemctl('is-active', '--quiet', 'vllm')).stdout, '');
    const after = await systemctl('show', '-p', 'ActiveState,SubState', 'vllm');
    assert.equal(after.stdout, 'ActiveState=inactive\nSubState=dead\n');
    assert.equal((await run('nvidia-smi', ['--query-compute-apps=pid', '--format=csv,noheader'])).stdout, '');
  });

  it('disables and enables like systemd, with --now stopping and starting', async () => {
    writeUnit('ray-head.service.json', { active: false, enabled: true, execStart: 'sleep 402' });
    const enableNow = await systemctl('enable', '--now', 'ray-head');
    assert.equal(enableNow.code, 0);
    assert.equal(enableNow.stderr, '', 'already enabled: nothing to say');
    await until(() => processesWith('sleep\u0000402')[0], 'started by --now');

    const disable = await systemctl('disable', '--now', 'ray-head');
    assert.equal(disable.code, 0);
    assert.equal(disable.stderr, 'Removed "/etc/systemd/system/multi-user.target.wants/ray-head.service".\n');
    assert.deepEqual(processesWith('sleep\u0000402'), []);
    const isEnabled = await systemctl('is-enabled', 'ray-head');
    assert.deepEqual([isEnabled.code, isEnabled.stdout], [1, 'disabled\n']);
    assert.equal(readUnit('ray-head.service.json').enabled, false);
    assert.equal((await systemctl('is-active', 'ray-head')).code, 3);

    const enable = await systemctl('enable', 'ray-head');
    assert.equal(
      enable.stderr,
      'Created symlink /etc/systemd/system/multi-user.target.wants/ray-head.service → /etc/systemd/system/ray-head.service.\n',
    );
    assert.deepEqual([(await systemctl('is-enabled', 'ray-head')).stdout], ['enabled\n']);
    assert.equal((await systemctl('is-active', 'ray-head')).code, 3, 'enable without --now does not start');
  });

  it('reports unknown units with systemd exit codes and messages', async () => {
    const stop = await systemctl('stop', 'ghost');
    assert.deepEqual(
      [stop.code, stop.stderr],
      [5, 'Failed to stop ghost.service: Unit ghost.service not loaded.\n'],
    );
    const start = await systemctl('start', 'ghost.service');
    assert.deepEqual(
      [start.code, start.stderr],
      [5, 'Failed to start ghost.service: Unit ghost.service not found.\n'],
    );
    const active = await systemctl('is-active', 'ghost');
    assert.deepEqual([active.code, active.stdout], [4, 'inactive\n']);
    const status = await systemctl('status', 'ghost');
    assert.deepEqual([status.code, status.stderr], [4, 'Unit ghost.service could not be found.\n']);
    const show = await systemctl('show', '-p', 'LoadState,ActiveState', 'ghost');
    assert.deepEqual([show.code, show.stdout], [0, 'LoadState=not-found\nActiveState=inactive\n']);
    const bad = await systemctl('--bogus', 'stop', 'x');
    assert.deepEqual([bad.code, bad.stderr], [1, "systemctl: unrecognized option '--bogus'\n"]);
  });

  it('notices a unit whose process died on its own: inactive on success, failed otherwise', async () => {
    writeUnit('oneshot.json', { active: false, enabled: false, execStart: 'exit 0' });
    writeUnit('crasher.service.json', { active: false, enabled: false, execStart: 'sleep 0.1; exit 3' });
    assert.equal((await systemctl('start', 'oneshot', 'crasher')).code, 0);
    await new Promise((r) => setTimeout(r, 400));
    const states = await systemctl('is-active', 'oneshot', 'crasher');
    assert.deepEqual([states.code, states.stdout], [3, 'inactive\nfailed\n']);
    writeUnit('plain.service.json', { active: true, enabled: true });
    const mixed = await systemctl('is-active', 'plain', 'crasher');
    assert.deepEqual([mixed.code, mixed.stdout], [0, 'active\nfailed\n'], 'one active unit is enough');
  });

  it("shows ExecStart as systemd 255 does: the unit's command line, else its execStart under /bin/sh -c", async () => {
    const commandLine = [
      '/usr/bin/docker',
      'run',
      '--rm',
      '--name',
      'emb',
      'img',
      'vllm',
      'serve',
      'BAAI/bge-m3',
    ];
    writeUnit('shown.service.json', {
      active: false,
      enabled: true,
      execStart: 'exec sleep 30',
      commandLine,
    });
    writeUnit('plainrun.service.json', { active: false, enabled: true, execStart: 'exec sleep 30' });
    assert.equal((await systemctl('start', 'shown', 'plainrun')).code, 0);
    const shown = await systemctl('show', '-p', 'ExecStart', '--value', 'shown');
    assert.match(
      shown.stdout,
      /^\{ path=\/usr\/bin\/docker ; argv\[\]=\/usr\/bin\/docker run --rm --name emb img vllm serve BAAI\/bge-m3 ; ignore_errors=no ; start_time=\[\w{3} [\d-]+ [\d:]+ UTC\] ; stop_time=\[n\/a\] ; pid=\d+ ; code=\(null\) ; status=0\/0 \}\n$/,
    );
    assert.deepEqual(readUnitCommandLine(shown.stdout)?.argv, commandLine, "init's reader reads it back");
    const plain = await systemctl('show', '-p', 'ExecStart', 'plainrun');
    assert.match(plain.stdout, /^ExecStart=\{ path=\/bin\/sh ; argv\[\]=\/bin\/sh -c exec sleep 30 ; /);
    assert.equal((await systemctl('stop', 'shown', 'plainrun')).code, 0);
  });
});
