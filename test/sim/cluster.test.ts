// The simulated cluster end to end: real sshd per host, the real ssh client, network namespaces.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  clusterStatus,
  countSshHandshakes,
  downCluster,
  readCluster,
  restartSshd,
  setHostDown,
  setHostUp,
  upCluster,
  type SimCluster,
  type SimHost,
} from '../../sim/cluster.js';
import { allPids, readEnvVar, run, type RunResult } from '../../sim/processes.js';

// Layouts no other test file uses, so these clusters can run beside others on one machine.
const netnsIndex = 41;
const loopbackIndex = 42;

interface SshResult extends RunResult {
  ms: number;
}

async function ssh(
  cluster: SimCluster,
  host: SimHost,
  command: string,
  extra: string[] = [],
): Promise<SshResult> {
  const started = Date.now();
  const res = await run(
    'ssh',
    [
      // ssh keeps the first value it sees for an option, so the overrides go first.
      ...extra,
      '-i',
      cluster.privateKeyPath,
      '-o',
      `UserKnownHostsFile=${cluster.knownHostsPath}`,
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      'BatchMode=yes',
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      '-o',
      'ConnectTimeout=2',
      '-p',
      String(host.sshPort),
      `${cluster.sshUser}@${host.address}`,
      command,
    ],
    { timeoutMs: 15_000 },
  );
  return { ...res, ms: Date.now() - started };
}

async function sshOk(cluster: SimCluster, host: SimHost, command: string): Promise<string> {
  const res = await ssh(cluster, host, command);
  assert.equal(res.code, 0, `ssh ${host.name} ${command}: ${res.stderr}`);
  return res.stdout;
}

function processesOf(stateDir: string): number[] {
  return allPids().filter((pid) => readEnvVar(pid, 'LIFTOFF_SIM_HOST_DIR')?.startsWith(`${stateDir}/`));
}

async function assertNothingLeft(stateDir: string, nsPrefix: string, linkPrefixes: string[]): Promise<void> {
  const ns = await run('ip', ['netns', 'list']);
  assert.ok(!ns.stdout.split('\n').some((l) => l.startsWith(nsPrefix)), `namespaces left: ${ns.stdout}`);
  const links = await run('ip', ['-o', 'link', 'show']);
  for (const prefix of linkPrefixes) {
    assert.ok(
      !new RegExp(`^\\d+: ${prefix}`, 'm').test(links.stdout),
      `links ${prefix}* left:\n${links.stdout}`,
    );
  }
  const pgrep = await run('pgrep', ['-af', stateDir]);
  assert.equal(pgrep.stdout.trim(), '', 'processes naming the state dir are left');
  assert.deepEqual(processesOf(stateDir), [], 'processes of the cluster are left');
  assert.equal(existsSync(stateDir), false, 'state dir removed');
}

describe('simulated cluster in network namespaces', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'liftoff-sim-test-'));
  let cluster: SimCluster;
  let spark1: SimHost;
  let spark2: SimHost;
  let spark3: SimHost;

  before(async () => {
    cluster = await upCluster({
      hosts: 3,
      mode: 'netns',
      stateDir,
      netIndex: netnsIndex,
      clusterOnly: ['spark3'],
    });
    [spark1, spark2, spark3] = cluster.hosts as [SimHost, SimHost, SimHost];
  });

  after(async () => {
    await downCluster(stateDir);
  });

  it('describes the hosts as laid out, and records itself in cluster.json', () => {
    assert.equal(cluster.mode, 'netns');
    assert.deepEqual(
      cluster.hosts.map((h) => [h.name, h.address, h.clusterIp, h.clusterIface, h.reachableFromControl]),
      [
        ['spark1', '10.213.83.11', '10.213.84.11', 'enp1s0f1np1', true],
        ['spark2', '10.213.83.12', '10.213.84.12', 'enp1s0f1np1', true],
        ['spark3', '10.213.84.13', '10.213.84.13', 'enp1s0f1np1', false],
      ],
    );
    assert.deepEqual(readCluster(stateDir), cluster);
  });

  it('lets the ssh client in with strict host key checking, each host under its own name and key', async () => {
    for (const h of [spark1, spark2]) {
      assert.equal((await sshOk(cluster, h, 'hostname')).trim(), h.name);
    }
    const keys = readFileSync(cluster.knownHostsPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ').slice(1).join(' '));
    assert.equal(keys.length, 3);
    assert.equal(new Set(keys).size, 3, 'every host has its own host key');
  });

  it('refuses a host whose key does not match known_hosts, before logging in', async () => {
    const lines = readFileSync(cluster.knownHostsPath, 'utf8').trim().split('\n');
    const [line1, line2] = lines as [string, string];
    // spark1's addresses with spark2's key: what a swapped or reinstalled host looks like.
    const wrong = join(stateDir, 'wrong_known_hosts');
    writeFileSync(wrong, `${line1.split(' ')[0]} ${line2.split(' ').slice(1).join(' ')}\n`);
    const before = countSshHandshakes(stateDir, 'spark1');
    const res = await ssh(cluster, spark1, 'hostname', ['-o', `UserKnownHostsFile=${wrong}`]);
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    assert.equal(res.stdout, '');
    assert.equal(countSshHandshakes(stateDir, 'spark1'), before, 'no login happened');
  });

  it('gives each session the simulated tools, its host folder, and a per-host /home', async () => {
    const out = await sshOk(
      cluster,
      spark1,
      'command -v docker nvidia-smi systemctl ray vllm; echo "$LIFTOFF_SIM_HOST_DIR"',
    );
    const bin = join(stateDir, 'bin');
    assert.deepEqual(out.trim().split('\n'), [
      ...['docker', 'nvidia-smi', 'systemctl', 'ray', 'vllm'].map((t) => join(bin, t)),
      spark1.hostDir,
    ]);
    assert.equal((await sshOk(cluster, spark2, 'echo "$LIFTOFF_SIM_HOST_DIR"')).trim(), spark2.hostDir);

    await sshOk(cluster, spark1, 'echo from-spark1 > /home/marker');
    assert.equal((await ssh(cluster, spark2, 'test -e /home/marker')).code, 1, '/home of spark2 is its own');
    assert.equal(readFileSync(join(spark1.hostDir, 'home', 'marker'), 'utf8'), 'from-spark1\n');
    assert.ok(!existsSync('/home/marker'), 'the machine /home is untouched');

    const model = '/home/aurora/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8';
    const files = await sshOk(cluster, spark2, `ls ${model}/snapshots/*/ | sort`);
    assert.match(files, /^config\.json$/m);
    assert.match(files, /\.safetensors$/m);
    const meminfo = await sshOk(cluster, spark2, 'head -1 /proc/meminfo');
    assert.equal(meminfo, readFileSync(join(spark2.hostDir, 'meminfo'), 'utf8').split('\n')[0] + '\n');
  });

  it('keeps a cluster-only host off the control network, reachable through a jump host', async () => {
    const direct = await ssh(cluster, spark3, 'hostname');
    assert.equal(direct.code, 255);
    assert.match(direct.stderr, /No route to host|timed out/);

    // -F carries the key and known_hosts to the jump connection; -i and -o would not reach it.
    const jumped = await run(
      'ssh',
      [
        '-F',
        cluster.sshConfigPath,
        '-o',
        'BatchMode=yes',
        '-o',
        `ProxyJump=root@${spark1.address}`,
        `root@${spark3.address}`,
        'hostname',
      ],
      { timeoutMs: 15_000 },
    );
    assert.equal(jumped.code, 0, jumped.stderr);
    assert.equal(jumped.stdout.trim(), 'spark3');
  });

  it('connects hosts to each other over the cluster fabric', async () => {
    for (const target of [spark2, spark3]) {
      const out = await sshOk(
        cluster,
        spark1,
        `bash -c 'echo > /dev/tcp/${target.clusterIp}/22' && echo open`,
      );
      assert.equal(out.trim(), 'open');
    }
    const closed = await ssh(cluster, spark1, `bash -c 'echo > /dev/tcp/${spark2.clusterIp}/1' 2>&1`);
    assert.equal(closed.code, 1);
    assert.match(closed.stdout, /Connection refused/);
  });

  it('seeds the reference state: enabled units, running containers holding GPU memory', async () => {
    for (const h of [spark1, spark2]) {
      const active = await ssh(
        cluster,
        h,
        'systemctl is-active vllm-cluster.service vllm-proxy.service vllm-embeddings vllm-reranker',
      );
      assert.equal(active.stdout, 'active\nactive\nactive\nactive\n');
      assert.equal((await sshOk(cluster, h, 'systemctl is-enabled vllm-cluster.service')).trim(), 'enabled');
      const names = (await sshOk(cluster, h, "docker ps --format '{{.Names}}'")).trim().split('\n').sort();
      assert.deepEqual(names, ['reranker', 'vllm_embeddings', 'vllm_node']);
      const apps = await sshOk(
        cluster,
        h,
        'nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader,nounits',
      );
      const rows = apps
        .trim()
        .split('\n')
        .map((l) => l.split(',').map((f) => f.trim()));
      assert.equal(rows.length, 3, apps);
      const used = rows.map((r) => Number(r[2]));
      assert.ok(
        used.every((m) => m > 0),
        apps,
      );
      const status = (await clusterStatus(stateDir)).find((s) => s.name === h.name);
      assert.ok(status);
      assert.deepEqual(status.containers.map((c) => [c.name, c.running]).sort(), [
        ['reranker', true],
        ['vllm_embeddings', true],
        ['vllm_node', true],
      ]);
      assert.deepEqual(
        status.units.map((u) => u.active && u.enabled && u.running),
        [true, true, true, true],
      );
      // vllm_node holds the most: its hog is the row with the largest memory.
      const pidsByMemory = [...status.gpuProcesses].sort((a, b) => b.usedMiB - a.usedMiB);
      assert.equal(pidsByMemory[0]?.usedMiB, Math.max(...used));
    }
  });

  it('takes sshd down (refused, fast) and back up with the same host key', async () => {
    await setHostDown(stateDir, 'spark2', 'sshd');
    const refused = await ssh(cluster, spark2, 'hostname');
    assert.equal(refused.code, 255);
    assert.match(refused.stderr, /Connection refused/);
    assert.ok(refused.ms < 1500, `refused after ${refused.ms} ms`);
    assert.equal((await clusterStatus(stateDir)).find((s) => s.name === 'spark2')?.sshd, 'down');
    await setHostUp(stateDir, 'spark2');
    assert.equal((await sshOk(cluster, spark2, 'hostname')).trim(), 'spark2');
  });

  it('takes the link down (connections time out) and back up', async () => {
    await setHostDown(stateDir, 'spark2', 'link');
    const lost = await ssh(cluster, spark2, 'hostname');
    assert.equal(lost.code, 255);
    assert.match(lost.stderr, /timed out/);
    assert.ok(lost.ms >= 1900, `gave up after ${lost.ms} ms`);
    const fromPeer = await ssh(
      cluster,
      spark1,
      `timeout 2 bash -c 'echo > /dev/tcp/${spark2.clusterIp}/22' || echo unreachable`,
    );
    assert.equal(fromPeer.stdout.trim(), 'unreachable');
    assert.equal((await clusterStatus(stateDir)).find((s) => s.name === 'spark2')?.link, 'down');
    await setHostUp(stateDir, 'spark2');
    assert.equal((await sshOk(cluster, spark2, 'hostname')).trim(), 'spark2');
  });

  it('restarts sshd with the same host key, and counts logins from its log', async () => {
    const before = countSshHandshakes(stateDir, 'spark1');
    assert.ok(before > 0);
    await restartSshd(stateDir, 'spark1');
    await sshOk(cluster, spark1, 'true');
    await sshOk(cluster, spark1, 'true');
    assert.equal(countSshHandshakes(stateDir, 'spark1'), before + 2);
  });

  it('tears down every namespace, link, process and file', async () => {
    await downCluster(stateDir);
    await assertNothingLeft(stateDir, `lf${netnsIndex}-`, [`lfmgmt${netnsIndex}`, `lfm${netnsIndex}h`]);
    await downCluster(stateDir);
  });
});

describe('simulated cluster on loopback addresses', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'liftoff-sim-test-lo-'));
  let cluster: SimCluster;

  before(async () => {
    cluster = await upCluster({
      hosts: 2,
      mode: 'loopback',
      stateDir,
      netIndex: loopbackIndex,
      seedReferenceState: false,
    });
  });

  after(async () => {
    await downCluster(stateDir);
  });

  it('runs one sshd per loopback address, each with its own host folder', async () => {
    assert.deepEqual(
      cluster.hosts.map((h) => [h.address, h.clusterIp]),
      [
        ['127.0.43.1', '127.0.43.1'],
        ['127.0.43.2', '127.0.43.2'],
      ],
    );
    for (const h of cluster.hosts) {
      const out = await sshOk(cluster, h, 'echo "$LIFTOFF_SIM_HOST_DIR"; command -v docker');
      assert.deepEqual(out.trim().split('\n'), [h.hostDir, join(stateDir, 'bin', 'docker')]);
    }
    assert.equal(countSshHandshakes(stateDir, 'spark1'), 1);
  });

  it('refuses cluster-only hosts, which loopback cannot isolate', async () => {
    await assert.rejects(
      upCluster({ hosts: 2, mode: 'loopback', stateDir: join(stateDir, 'x'), clusterOnly: ['spark2'] }),
      /clusterOnly needs netns mode/,
    );
  });

  it('refuses the real Ray and vLLM without real Docker, where they would run outside any container', async () => {
    await assert.rejects(
      upCluster({ hosts: 2, mode: 'loopback', stateDir: join(stateDir, 'x'), realTools: true }),
      /realTools needs docker: 'real'/,
    );
  });

  it('tears down its processes and files', async () => {
    await downCluster(stateDir);
    const pgrep = await run('pgrep', ['-af', stateDir]);
    assert.equal(pgrep.stdout.trim(), '');
    assert.deepEqual(processesOf(stateDir), []);
    assert.equal(existsSync(stateDir), false);
  });
});

describe('cleanup after a crash', () => {
  it('removes namespaces of its layout that a lost state dir left behind', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'liftoff-sim-test-crash-'));
    rmSync(stateDir, { recursive: true });
    const stale = `lf${netnsIndex}-spark7`;
    await run('ip', ['netns', 'add', stale]);
    try {
      await upCluster({ hosts: 1, mode: 'netns', stateDir, netIndex: netnsIndex, seedReferenceState: false });
      const ns = await run('ip', ['netns', 'list']);
      assert.ok(!ns.stdout.includes(stale), ns.stdout);
      assert.match(ns.stdout, new RegExp(`lf${netnsIndex}-spark1`));
    } finally {
      await downCluster(stateDir);
      await run('ip', ['netns', 'delete', stale]);
    }
    await assertNothingLeft(stateDir, `lf${netnsIndex}-`, [`lfmgmt${netnsIndex}`]);
  });
});

describe('npm run sim (the CLI)', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'liftoff-sim-test-cli-'));
  const cli = (...args: string[]): Promise<RunResult> =>
    run(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--state-dir', stateDir, ...args], {
      timeoutMs: 30_000,
      env: { ...process.env, NO_COLOR: '1' },
    });

  after(async () => {
    await downCluster(stateDir);
  });

  it('prints a working ssh command per host, switches faults, and tears down', async () => {
    const up = await cli('up', '--hosts', '1', '--mode', 'loopback', '--net-index', '44', '--no-seed');
    assert.equal(up.code, 0, up.stderr);
    const line = up.stdout.split('\n').find((l) => l.trim().startsWith('ssh -i '));
    assert.ok(line, up.stdout);
    const [cmd, ...args] = line.trim().split(' ');
    const res = await run(cmd as string, ['-o', 'BatchMode=yes', ...args, 'echo "$LIFTOFF_SIM_HOST_DIR"']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), join(stateDir, 'hosts', 'spark1'));

    const fault = await cli(
      'fault',
      'spark1',
      '--crash-at-shard',
      '3',
      '--gpu-held-after-kill',
      '5',
      '--down',
      'sshd',
    );
    assert.equal(fault.code, 0, fault.stderr);
    assert.deepEqual(JSON.parse(readFileSync(join(stateDir, 'hosts', 'spark1', 'faults.json'), 'utf8')), {
      crashAtShard: 3,
      gpuHeldAfterKillSeconds: 5,
    });
    const status = await cli('status', '--json');
    const hosts = JSON.parse(status.stdout) as { name: string; sshd: string; faults: object }[];
    assert.deepEqual(
      hosts.map((h) => [h.name, h.sshd]),
      [['spark1', 'down']],
    );
    assert.equal((await cli('fault', 'spark1', '--clear', '--up')).code, 0);
    assert.equal((await cli('status', '--json')).stdout.includes('"sshd": "up"'), true);

    assert.equal((await cli('down')).code, 0);
    assert.equal(existsSync(stateDir), false);
    assert.deepEqual(processesOf(stateDir), []);
  });
});
