// The simulated docker: a container is a process group (plus tagged escapees), and the CLI answers like docker.
import { readFileSync, readdirSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { deadOrZombie, makeSimHost, pidsWithEnv, runSimTool, useSimHostRoot } from '../helpers/sim-host.js';
import { isProcessAlive } from '../helpers/processes.js';

const { root, binDir, hostDir } = useSimHostRoot('liftoff-docker-');

const run = (tool: string, args: string[], env: Record<string, string> = {}) =>
  runSimTool(binDir, hostDir, tool, args, { env, timeoutMs: 20_000 });

const docker = (...args: string[]) => run('docker', args);

/** `docker run -d ARGS`, which must start: the container's id as the run printed it (64 hex digits). */
async function runDetached(...args: string[]): Promise<string> {
  const r = await docker('run', '-d', ...args);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^[0-9a-f]{64}\n$/);
  return r.stdout.trim();
}

/** A detached busybox container `name` running the shell script `script` (`options` go to docker run): its id. */
const runScript = (name: string, script: string, ...options: string[]) =>
  runDetached(...options, '--name', name, 'busybox', 'sh', '-c', script);

function procField(pid: number, index: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[index];
  } catch {
    return undefined;
  }
}
const pgrpOf = (pid: number) => Number(procField(pid, 2));

/** kill -0 keeps succeeding for a zombie until PID 1 reaps it, which may take a couple of seconds. */
async function waitKill0Fails(pids: number[], timeoutMs = 6000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some(isProcessAlive)) {
    assert.ok(Date.now() < deadline, `still alive: ${pids.filter(isProcessAlive).join(' ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function record(name: string): { id: string; pgid: number; pid: number } {
  return JSON.parse(readFileSync(join(hostDir, 'containers', `${name}.json`), 'utf8')) as {
    id: string;
    pgid: number;
    pid: number;
  };
}

function groupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pgrpOf(pid) === pgid && !deadOrZombie(pid));
}

void before(() => {
  mkdirSync(join(hostDir, 'models'), { recursive: true });
  makeSimHost(hostDir, {
    name: 'sim-docker-test',
    flavour: 'h200',
    images: ['vllm/vllm-openai:v0.11.0', 'busybox'],
    modelDirs: [join(hostDir, 'models')],
  });
});

describe('docker run / rm -f', () => {
  it('runs the container as its own process group, and rm -f ends every process in it', async () => {
    const id = await runScript('grp', 'sleep 300 & sleep 300', '--gpus', 'all');
    const rec = record('grp');
    assert.equal(rec.id, id);
    assert.notEqual(rec.pgid, pgrpOf(process.pid));
    assert.equal(pgrpOf(rec.pid), rec.pgid, 'the main process belongs to the container group');
    const members = await until(() => {
      const m = groupMembers(rec.pgid);
      return m.length >= 4 ? m : undefined; // shim, sh, two sleeps
    }, 'container processes');

    const rm = await docker('rm', '-f', 'grp');
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(rm.stdout, 'grp\n');
    for (const pid of members) assert.ok(deadOrZombie(pid), `pid ${pid} survived rm -f`);
    await waitKill0Fails(members);
    assert.equal(existsSync(join(hostDir, 'containers', 'grp.json')), false);
    assert.equal((await docker('ps', '-a', '-q')).stdout, '');
  });

  it('kills exec -d processes, including one that left the group with setsid, on rm -f', async () => {
    assert.equal((await docker('run', '-d', '--name', 'srv', 'busybox', 'sleep', '300')).code, 0);
    const { id, pgid } = record('srv');
    const plain = await docker('exec', '-d', 'srv', 'sleep', '301');
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout, '');
    const logFile = join(root, 'serve.log');
    const escaped = await docker(
      'exec',
      '-d',
      'srv',
      'sh',
      '-c',
      `setsid nohup sleep 302 > ${logFile} 2>&1 &`,
    );
    assert.equal(escaped.code, 0, escaped.stderr);

    const tagged = await until(() => {
      const pids = pidsWithEnv(`LIFTOFF_SIM_CONTAINER=${id}`);
      // The sleeps themselves: the `sh -c` that starts the second one names 302 in its own command line.
      const sleeping = (p: number, n: string) =>
        readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').slice(0, 2).join(' ') === `sleep ${n}`;
      const inGroup = pids.find((p) => sleeping(p, '301'));
      const outside = pids.find((p) => sleeping(p, '302'));
      return inGroup && outside ? { inGroup, outside } : undefined;
    }, 'exec -d processes');
    assert.equal(pgrpOf(tagged.inGroup), pgid, 'exec -d joins the container process group');
    assert.notEqual(pgrpOf(tagged.outside), pgid, 'setsid left the group');

    assert.equal((await docker('rm', '-f', 'srv')).code, 0);
    assert.ok(deadOrZombie(tagged.inGroup));
    assert.ok(deadOrZombie(tagged.outside), 'the setsid process dies with the container');
  });

  it('records the exit of the main process and kills what is left of the container', async () => {
    const id = await runScript('short', 'setsid sleep 303 & sleep 0.3; exit 3');
    await until(
      () => readFileSync(join(hostDir, 'containers', 'short.json'), 'utf8').includes('"exited"') || undefined,
      'exit',
    );
    const state = await docker(
      'inspect',
      '--format',
      '{{.State.Running}} {{.State.ExitCode}} {{.State.Pid}}',
      'short',
    );
    assert.equal(state.stdout, 'false 3 0\n');
    assert.deepEqual(pidsWithEnv(`LIFTOFF_SIM_CONTAINER=${id}`), []);
    const ps = await docker('ps', '-a', '--filter', 'name=short', '--format', '{{.Names}}\\t{{.Status}}');
    assert.match(ps.stdout, /^short\tExited \(3\) (Less than a second|\d+ seconds?) ago\n$/);
    assert.equal(
      (await docker('ps', '--filter', 'name=short', '-q')).stdout,
      '',
      'ps without -a hides exited',
    );
    assert.equal((await docker('rm', 'short')).code, 0);
  });

  it('removes a --rm container once its command exits', async () => {
    await runScript('tmp', 'sleep 0.2', '--rm');
    await until(() => !existsSync(join(hostDir, 'containers', 'tmp.json')) || undefined, '--rm removal');
    assert.equal(existsSync(join(hostDir, 'containers', 'tmp.log')), false);
    const inspect = await docker('inspect', 'tmp');
    assert.equal(inspect.code, 1);
    assert.equal(inspect.stderr, 'Error: No such object: tmp\n');
  });

  it('runs attached without -d, streaming output and passing the exit code through', async () => {
    const r = await docker(
      'run',
      '--rm',
      '--name',
      'fg',
      '-e',
      'GREETING=hi',
      'busybox',
      'sh',
      '-c',
      'echo $GREETING; exit 4',
    );
    assert.equal(r.code, 4);
    assert.equal(r.stdout, 'hi\n');
  });

  it('refuses a name in use, a missing image, a missing --mount source (a missing -v source becomes a folder) and unknown flags like docker', async () => {
    const first = await docker('run', '-d', '--name', 'taken', 'busybox', 'sleep', '300');
    assert.equal(first.code, 0);
    const id = first.stdout.trim();
    const again = await docker('run', '-d', '--name', 'taken', 'busybox', 'sleep', '300');
    assert.equal(again.code, 125);
    assert.equal(
      again.stderr,
      `docker: Error response from daemon: Conflict. The container name "/taken" is already in use by container "${id}". You have to remove (or rename) that container to be able to reuse that name.\nSee 'docker run --help'.\n`,
    );
    assert.equal(record('taken').id, id, 'the existing container is untouched');

    const noImage = await docker('run', '-d', '--name', 'x1', 'vllm/nonexistent', 'true');
    assert.equal(noImage.code, 125);
    const lines = noImage.stderr.split('\n');
    assert.equal(lines[0], "Unable to find image 'vllm/nonexistent:latest' locally");
    assert.match(
      lines[1] ?? '',
      /^docker: Error response from daemon: pull access denied for vllm\/nonexistent/,
    );
    assert.equal(existsSync(join(hostDir, 'containers', 'x1.json')), false);

    const noPull = await docker('run', '--rm', '--pull', 'never', 'vllm/nonexistent', 'true');
    assert.equal(noPull.code, 125);
    assert.equal(
      noPull.stderr,
      "docker: Error response from daemon: No such image: vllm/nonexistent:latest.\nSee 'docker run --help'.\n",
    );

    // -v makes a missing source an empty folder, as the engine does; --mount refuses it.
    const missingSource = join(root, 'no', 'such', 'dir');
    const created = await docker('run', '--rm', '-v', `${missingSource}:/models:ro`, 'busybox', 'true');
    assert.equal(created.code, 0, created.stderr);
    assert.ok(existsSync(missingSource), 'the missing -v source was made a folder');
    const noSource = await docker(
      'run',
      '--rm',
      '--mount',
      `type=bind,source=${join(root, 'no', 'other')},target=/models`,
      'busybox',
      'true',
    );
    assert.equal(noSource.code, 125);
    assert.equal(
      noSource.stderr,
      `docker: Error response from daemon: invalid mount config for type "bind": bind source path does not exist: ${join(root, 'no', 'other')}.\nSee 'docker run --help'.\n`,
    );

    const badFlag = await docker('run', '-d', '--frobnicate', 'busybox', 'true');
    assert.equal(badFlag.code, 125);
    assert.equal(badFlag.stderr, "unknown flag: --frobnicate\nSee 'docker run --help'.\n");

    const noCmd = await docker('run', '-d', '--name', 'x3', 'busybox', 'no-such-binary');
    assert.equal(noCmd.code, 127);
    assert.match(noCmd.stdout, /^[0-9a-f]{64}\n$/, 'created: its ID comes first');
    assert.equal(
      noCmd.stderr,
      'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "no-such-binary": executable file not found in $PATH: unknown.\n',
    );
    assert.equal(
      (await docker('inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', 'x3')).stdout,
      'created 127\n',
      'left behind, Created',
    );
    assert.equal((await docker('rm', '-f', 'taken', 'x3')).code, 0);
  });

  it('draws another generated name when the one it drew is taken: only a chosen name conflicts', async () => {
    // 40 containers from a few dozen generated names: without a second draw some run would fail almost surely
    // (preflight's throwaway runs on one host at once did).
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      ids.push(await runDetached('busybox', 'sleep', '60'));
    }
    const names = (await docker('ps', '--format', '{{.Names}}')).stdout.split('\n').filter((n) => n !== '');
    assert.equal(new Set(names).size, names.length);
    assert.equal((await docker('rm', '-f', ...ids)).code, 0);
  });
});

describe('docker ps / logs / inspect / exec', () => {
  it('filters by label and prints the real default table', async () => {
    for (const [name, run] of [
      ['lab-a', 'one'],
      ['lab-b', 'two'],
    ] as const) {
      await runDetached(
        '--name',
        name,
        '--label',
        `liftoff.run=${run}`,
        '--label',
        'liftoff.role=ray',
        'busybox',
        'sleep',
        '300',
      );
    }
    const one = await docker('ps', '--filter', 'label=liftoff.run=one', '--format', '{{.Names}}');
    assert.equal(one.stdout, 'lab-a\n');
    const both = await docker('ps', '-a', '--filter', 'label=liftoff.role', '--format', '{{.Names}}');
    assert.deepEqual(both.stdout.split('\n').filter(Boolean).sort(), ['lab-a', 'lab-b']);
    const none = await docker('ps', '--filter', 'label=liftoff.run=three', '-q');
    assert.equal(none.stdout, '');
    const label = await docker('ps', '--filter', 'name=lab-b', '--format', '{{.Label "liftoff.run"}}');
    assert.equal(label.stdout, 'two\n');

    const table = await docker('ps', '--filter', 'name=lab-a');
    const [header, row] = table.stdout.split('\n');
    assert.match(header ?? '', /^CONTAINER ID {3}IMAGE {5}COMMAND {7}CREATED +STATUS +PORTS {5}NAMES$/);
    assert.match(row ?? '', /^[0-9a-f]{12} {3}busybox {3}"sleep 300" {3}.+ ago +Up .+ +lab-a$/);
    // Columns line up under their headers, as tabwriter does.
    const at = (h: string) => (header ?? '').indexOf(h);
    assert.equal(row?.slice(at('CREATED')).search(/\S/), 0);
    assert.ok(row?.slice(at('STATUS')).startsWith('Up '));
    assert.equal(row?.slice(at('NAMES')), 'lab-a');

    const json = await docker('ps', '--filter', 'name=lab-a', '--format', '{{json .}}');
    const parsed = JSON.parse(json.stdout) as Record<string, string>;
    assert.equal(parsed.Names, 'lab-a');
    assert.equal(parsed.State, 'running');
    assert.equal(parsed.Labels, 'liftoff.role=ray,liftoff.run=one');
    assert.equal((await docker('rm', '-f', 'lab-a', 'lab-b')).code, 0);
  });

  it('tells a dead container from a running one by liveness, not by the file', async () => {
    assert.equal((await docker('run', '-d', '--name', 'victim', 'busybox', 'sleep', '300')).code, 0);
    const { pgid, pid } = record('victim');
    process.kill(-pgid, 'SIGKILL');
    await until(() => deadOrZombie(pgid) || undefined, 'shim death');
    const ps = await docker('ps', '-a', '--filter', 'name=victim', '--format', '{{.State}} {{.Status}}');
    assert.match(ps.stdout, /^exited Exited \(137\) /);
    assert.equal((await docker('ps', '-q', '--filter', 'name=victim')).stdout, '');
    assert.ok(deadOrZombie(pid));
    const exec = await docker('exec', 'victim', 'true');
    assert.equal(exec.code, 1);
    assert.match(exec.stderr, /^Error response from daemon: Container [0-9a-f]{64} is not running\n$/);
    assert.equal((await docker('rm', 'victim')).code, 0);
  });

  it('prints the last N lines with logs --tail', async () => {
    await runScript('chatty', 'for i in $(seq 1 20); do echo line $i; done; sleep 300');
    await until(
      () => readFileSync(join(hostDir, 'containers', 'chatty.log'), 'utf8').includes('line 20') || undefined,
      'output',
    );
    assert.equal((await docker('logs', '--tail', '3', 'chatty')).stdout, 'line 18\nline 19\nline 20\n');
    assert.equal((await docker('logs', '-n', '1', 'chatty')).stdout, 'line 20\n');
    assert.equal((await docker('logs', 'chatty')).stdout.split('\n').length, 21);
    const missing = await docker('logs', 'nope');
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'Error: No such container: nope\n');
    assert.equal((await docker('rm', '-f', 'chatty')).code, 0);
  });

  it('runs exec in the foreground with the container env, and refuses rm of a running container', async () => {
    const id = await runDetached(
      '--name',
      'envy',
      '-e',
      'VLLM_HOST_IP=10.213.0.5',
      '--entrypoint',
      'sleep',
      'busybox',
      '300',
    );
    const exec = await docker(
      'exec',
      '-e',
      'EXTRA=1',
      'envy',
      'sh',
      '-c',
      'echo "$VLLM_HOST_IP $EXTRA $LIFTOFF_SIM_CONTAINER"; exit 9',
    );
    assert.equal(exec.code, 9);
    assert.equal(exec.stdout, `10.213.0.5 1 ${id}\n`);

    const rm = await docker('rm', 'envy');
    assert.equal(rm.code, 1);
    assert.equal(
      rm.stderr,
      `Error response from daemon: You cannot remove a running container ${id}. Stop the container before attempting removal or force remove\n`,
    );
    const inspect = await docker('inspect', 'envy');
    const [info] = JSON.parse(inspect.stdout) as [
      { Path: string; Args: string[]; Config: { Env: string[] } },
    ];
    assert.equal(info.Path, 'sleep');
    assert.deepEqual(info.Args, ['300']);
    assert.deepEqual(info.Config.Env, ['VLLM_HOST_IP=10.213.0.5']);

    const stop = await docker('stop', 'envy');
    assert.equal(stop.code, 0);
    assert.equal(
      (await docker('inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', 'envy')).stdout,
      'exited 143\n',
    );
    // As on a real engine (Docker 20.10 and 28.x): rm -f says a container is missing, and exits 0 all the same.
    const missing = await docker('rm', '-f', 'envy', 'ghost');
    assert.equal(missing.code, 0, 'a missing container does not fail rm -f');
    assert.equal(missing.stdout, 'envy\n');
    assert.equal(missing.stderr, 'Error: No such container: ghost\n');
    const unforced = await docker('rm', 'ghost');
    assert.equal(unforced.code, 1, 'without -f it does');
    assert.equal(unforced.stderr, 'Error: No such container: ghost\n');
    const noExec = await docker('exec', '-d', 'ghost', 'true');
    assert.equal(noExec.code, 1);
    assert.equal(noExec.stderr, 'Error: No such container: ghost\n');
    // The daemon's words pass through stop and kill.
    assert.equal(
      (await docker('stop', 'ghost')).stderr,
      'Error response from daemon: No such container: ghost\n',
    );
    assert.equal(
      (await docker('kill', 'ghost')).stderr,
      'Error response from daemon: Cannot kill container: ghost: No such container: ghost\n',
    );
  });

  it('inspects images and lists them', async () => {
    const ok = await docker(
      'image',
      'inspect',
      'vllm/vllm-openai:v0.11.0',
      '--format',
      '{{index .RepoTags 0}} {{.Os}}',
    );
    assert.equal(ok.stdout, 'vllm/vllm-openai:v0.11.0 linux\n');
    const missing = await docker('image', 'inspect', 'vllm/vllm-openai:v9');
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, '[]\n');
    assert.equal(missing.stderr, 'Error: No such image: vllm/vllm-openai:v9\n');
    const images = await docker('images', '--format', '{{.Repository}}:{{.Tag}}');
    assert.equal(images.stdout, 'vllm/vllm-openai:v0.11.0\nbusybox:latest\n');
    assert.equal((await docker('version', '--format', '{{.Server.Version}}')).code, 0);
  });

  it("takes an image's ID wherever it takes a reference, as a rollback pins ray.image", async () => {
    const inspected = await docker('image', 'inspect', '--format', '{{.Id}}', '--', 'busybox');
    const id = inspected.stdout.trim();
    assert.match(id, /^sha256:[0-9a-f]{64}$/);
    const byId = await docker('image', 'inspect', '--format', '{{.Id}} {{index .RepoTags 0}}', '--', id);
    assert.equal(byId.stdout, `${id} busybox:latest\n`, byId.stderr);
    await runDetached('--name', 'pinned', id, 'sh', '-c', 'sleep 30');
    const container = await docker('inspect', '--format', '{{.Image}} {{.Config.Image}}', 'pinned');
    assert.equal(container.stdout, `${id} ${id}\n`, container.stderr);
    assert.equal((await docker('rm', '-f', 'pinned')).code, 0);
    const unknown = `sha256:${'0'.repeat(64)}`;
    assert.equal((await docker('image', 'inspect', unknown)).stderr, `Error: No such image: ${unknown}\n`);
  });

  it('takes an image by its ID, whole or as a 12-digit prefix, as a rollback pins it', async () => {
    const id = (await docker('image', 'inspect', 'busybox', '--format', '{{.Id}}')).stdout.trim();
    assert.match(id, /^sha256:[0-9a-f]{64}$/);
    const byId = await docker('image', 'inspect', id, '--format', '{{index .RepoTags 0}}');
    assert.equal(byId.stdout, 'busybox:latest\n', byId.stderr);
    const short = id.slice('sha256:'.length, 'sha256:'.length + 12);
    assert.equal((await docker('image', 'inspect', short, '--format', '{{.Id}}')).stdout, `${id}\n`);
    assert.equal((await docker('image', 'inspect', `sha256:${short}`)).code, 1, 'sha256: takes the whole ID');
    const pinned = await runDetached('--name', 'pinned', id, 'sh', '-c', 'sleep 30');
    const image = await docker('inspect', pinned, '--format', '{{.Image}}');
    assert.equal(image.stdout, `${id}\n`, 'the container runs the image of that ID');
    await docker('rm', '-f', 'pinned');
  });
});
