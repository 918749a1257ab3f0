// vLLM's own multi-node mode (no Ray) for real: vLLM 0.32's CPU build serving the generated model with tensor
// parallel 2 across two simulated hosts (spark2 reachable only through spark1), one rank on each, launched over
// real SSH through the cluster's ssh config. liftoff does not launch this mode yet (issue 17); this file shows
// the launch that works (test/helpers/vllm-multiproc.ts) and what its logs say. Runs alone (scripts/test.ts).
// Timings are printed as FIGURE lines, never asserted.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sshRun } from '../helpers/ssh.js';
import { tearDown } from '../helpers/teardown.js';
import { waitFor } from '../helpers/wait.js';
import { multiprocRankCommand, type MultiprocRank } from '../helpers/vllm-multiproc.js';
import { downCluster, upCluster, type SimCluster, type SimHost } from '../../sim/cluster.js';
import { isRunning, processGroupOf } from '../../sim/processes.js';
import { realHfHome, realModels, realToolsMissing } from '../../sim/real-tools.js';
import { sh } from '../../src/ssh/quote.js';

const stateDir = '/tmp/liftoff-test-real-multinode';
const apiPort = 30000;
const masterPort = 29501;

// The CPU build's settings of the real-stack tests: a small context and KV cache, no torch.compile warm-up (on 2
// cores it doubles the start), and the host's Hugging Face cache, where the generated models were copied.
const cpuArgs = ['--max-model-len', '256', '--enforce-eager'];
const cpuEnv = { HF_HOME: realHfHome, HF_HUB_OFFLINE: '1', VLLM_CPU_KVCACHE_SPACE: '1' };

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** A rank started on a host: its process group (setsid makes the pid the group's id) and its log. */
interface LaunchedRank {
  host: SimHost;
  pgid: number;
  log: string;
  startedAt: number;
}

function hostNamed(sim: SimCluster, name: string): SimHost {
  const h = sim.hosts.find((x) => x.name === name);
  assert.ok(h, `no host ${name}`);
  return h;
}

/** A path under /home on a host, as this machine sees it (each host's /home is its own folder). */
function onDisk(h: SimHost, path: string): string {
  assert.ok(path.startsWith('/home/'));
  return join(h.hostDir, 'home', path.slice('/home/'.length));
}

function readLog(rank: LaunchedRank): string {
  const file = onDisk(rank.host, rank.log);
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

const tail = (text: string, lines = 30): string => text.trimEnd().split('\n').slice(-lines).join('\n');

describe("vLLM's own multi-node mode (CPU build, no Ray) across two simulated hosts", () => {
  before(() => {
    // scripts/setup.sh installs them; without them this file fails rather than pass by skipping.
    const missing = realToolsMissing();
    if (missing) throw new Error(missing);
  });
  let sim: SimCluster | undefined;
  const launched: LaunchedRank[] = [];
  before(async () => {
    sim = await upCluster({
      stateDir,
      hosts: 2,
      mode: 'netns',
      clusterOnly: ['spark2'],
      netIndex: 25,
      realTools: true,
      seedReferenceState: false,
    });
  });

  /** Ends every rank's process group: TERM, then KILL what is left after 10 s. */
  async function stopRanks(): Promise<void> {
    const groups = launched.splice(0).map((r) => r.pgid);
    const signal = (sig: NodeJS.Signals) => {
      for (const pgid of groups) {
        try {
          process.kill(-pgid, sig);
        } catch {
          // the group is gone already
        }
      }
    };
    signal('SIGTERM');
    const alive = () => groups.some((pgid) => isRunning(pgid));
    await waitFor('the ranks to stop', () => Promise.resolve(alive() ? undefined : true), 10_000).catch(
      () => {
        signal('SIGKILL');
      },
    );
  }
  afterEach(stopRanks);
  after(() => tearDown([stopRanks, () => downCluster(stateDir)]));

  function cluster(): SimCluster {
    assert.ok(sim, 'the cluster is up');
    return sim;
  }

  /** The rank on `hostName`, as its own session and process group, started over SSH; returns at once. */
  async function launch(
    hostName: string,
    rank: Omit<MultiprocRank, 'hostIp' | 'clusterIface' | 'model' | 'apiPort'>,
  ): Promise<LaunchedRank> {
    const host = hostNamed(cluster(), hostName);
    const { argv, env } = multiprocRankCommand({
      ...rank,
      model: realModels.tiny,
      apiPort,
      hostIp: host.clusterIp,
      clusterIface: host.clusterIface,
      args: cpuArgs,
    });
    const log = `/home/aurora/vllm-rank${rank.nodeRank}.log`;
    const assignments = Object.entries({ ...cpuEnv, ...env }).map(([k, v]) => `${k}=${v}`);
    // No job control in the session's shell, so the background job is no group leader and setsid makes it one
    // without forking: $! is the rank's session and group id. nohup and the redirections let the session end.
    const command = sh`env ${assignments} setsid nohup ${argv} > ${log} 2>&1 < /dev/null & echo $!`;
    const startedAt = Date.now();
    const pgid = Number((await sshRun(cluster(), hostName, command.text)).trim());
    assert.ok(Number.isInteger(pgid) && pgid > 0, `no pid from the launch on ${hostName}`);
    const rankLaunched = { host, pgid, log, startedAt };
    launched.push(rankLaunched);
    await waitFor(
      `${hostName}'s rank to lead its own process group`,
      () => Promise.resolve(processGroupOf(pgid) === pgid ? true : undefined),
      5_000,
    );
    return rankLaunched;
  }

  it('serves with tensor parallel 2 over both hosts: rank 0 healthy, rank 1 headless and in the group', async () => {
    const load = loadAverage();
    const head = hostNamed(cluster(), 'spark1');
    const common = { nnodes: 2, tensorParallelSize: 2, masterAddr: head.clusterIp, masterPort };
    // Both at once: each waits for the other at the torch.distributed rendezvous.
    const [rank0, rank1] = await Promise.all([
      launch('spark1', { ...common, nodeRank: 0 }),
      launch('spark2', { ...common, nodeRank: 1 }),
    ]);
    const logs = () => `rank 0:\n${tail(readLog(rank0))}\n\nrank 1:\n${tail(readLog(rank1))}`;

    await waitFor(
      'rank 0 to answer /health with 200',
      async () => {
        for (const r of [rank0, rank1]) {
          if (!isRunning(r.pgid)) assert.fail(`the rank on ${r.host.name} exited during the load\n${logs()}`);
        }
        const res = await fetch(`http://${head.address}:${apiPort}/health`, {
          signal: AbortSignal.timeout(2_000),
        }).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      },
      300_000,
      { everyMs: 500, detail: logs },
    );
    const healthyMs = Date.now() - rank0.startedAt;

    // Rank 1 is still there, headless, and its log shows that it ran the CLI's headless path and joined the
    // process group as tensor-parallel rank 1 (printed once the rendezvous with rank 0 completed).
    const rank1Cmd = await sshRun(
      cluster(),
      'spark2',
      `kill -0 ${rank1.pgid} && tr '\\0' ' ' < /proc/${rank1.pgid}/cmdline`,
    );
    assert.match(rank1Cmd, /\/bin\/vllm serve .* --node-rank 1 .*--headless/);
    const log1 = readLog(rank1);
    assert.match(
      log1,
      new RegExp(
        `Launching vLLM \\(v[\\d.]+\\) headless multiproc executor, with head node address ${head.clusterIp.replaceAll('.', '\\.')}:${masterPort}`,
      ),
    );
    assert.match(log1, /rank 1 in world size 2 is assigned as .*TP rank 1\b/);
    assert.doesNotMatch(log1, /APIServer|Starting vLLM server/, 'rank 1 runs no API server');
    const log0 = readLog(rank0);
    assert.match(log0, /rank 0 in world size 2 is assigned as .*TP rank 0\b/);
    assert.match(log0, /Starting vLLM (API )?server on/);

    const asked = Date.now();
    const res = await fetch(`http://${head.address}:${apiPort}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: realModels.tiny, prompt: 'Reply with one word: ready?', max_tokens: 16 }),
      signal: AbortSignal.timeout(60_000),
    });
    const answeredMs = Date.now() - asked;
    const body = (await res.json()) as {
      system_fingerprint?: string;
      choices?: { text?: string }[];
      usage?: { completion_tokens?: number };
    };
    assert.equal(res.status, 200, JSON.stringify(body));
    const text = body.choices?.[0]?.text ?? '';
    assert.ok(text.length > 0, `a non-empty answer: ${JSON.stringify(body)}`);
    assert.match(body.system_fingerprint ?? '', /-tp2-/, 'served with tensor parallel 2');
    const tokens = body.usage?.completion_tokens ?? 0;
    assert.ok(tokens > 0);
    assert.ok(isRunning(rank1.pgid), 'rank 1 still runs after serving');

    console.log(
      `FIGURE: real multi-node (vLLM --nnodes 2, tp 2, CPU): healthy ${seconds(healthyMs)} after the launch; ` +
        `completion ${tokens} tokens in ${seconds(answeredMs)} (${((tokens * 1000) / answeredMs).toFixed(1)} tok/s) ` +
        `${JSON.stringify(text)}, fingerprint ${body.system_fingerprint ?? '?'}; load average ${load}`,
    );
  });

  it("a rank pointed at a closed master port fails with torch's own connect timeout, in bounded time", async () => {
    const load = loadAverage();
    const head = hostNamed(cluster(), 'spark1');
    const closedPort = masterPort + 98;
    const timeoutSeconds = 5;
    const rank1 = await launch('spark2', {
      nnodes: 2,
      tensorParallelSize: 2,
      masterAddr: head.clusterIp,
      masterPort: closedPort,
      nodeRank: 1,
      distributedTimeoutSeconds: timeoutSeconds,
    });
    // torch's own line (c10d's TCPStore client), once --distributed-timeout-seconds is spent.
    const connectError = new RegExp(
      `The client socket has timed out after ${timeoutSeconds * 1000}ms while trying to connect to \\(${head.clusterIp.replaceAll('.', '\\.')}, ${closedPort}\\)`,
    );
    const line = await waitFor(
      "torch's connect error in rank 1's log",
      () =>
        Promise.resolve(
          readLog(rank1)
            .split('\n')
            .find((l) => connectError.test(l)),
        ),
      120_000,
      { everyMs: 250, detail: () => tail(readLog(rank1)) },
    );
    const seenMs = Date.now() - rank1.startedAt;
    const log = readLog(rank1);
    assert.match(
      log,
      new RegExp(`distributed_init_method=tcp://${head.clusterIp.replaceAll('.', '\\.')}:${closedPort}`),
    );
    console.log(
      `FIGURE: real multi-node, closed master port: torch's error ${seconds(seenMs)} after the launch ` +
        `(--distributed-timeout-seconds ${timeoutSeconds}): ${line.trim()}; load average ${load}`,
    );
  });
});
