// Issue 14, end to end: the worker, not the spec, decides what a deploy may reach. A spec that names a known_hosts
// file its author planted (a copy of the real one, so it would verify the real hosts) and asks for the worker's
// own LIFTOFF_PAYLOAD_KEY is refused in validate, by every path a deploy starts on, with 0 SSH connections at
// the hosts' sshds. And two leftovers that need a host: the smoke test leaves no file holding the API key when
// its command is killed, and a refused spec's cluster guess only reaches the search attributes when it is a name.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  copyFileSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { runLiftoff } from '../helpers/cli.js';
import { sshRun } from '../helpers/ssh.js';
import { deployWorkflowId, searchAttributes, TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy, probeCluster } from '../../src/workflows/index.js';
import { smokeTest } from '../../src/activities/smoke.js';
import { countSshConnections, countSshHandshakes } from '../../sim/cluster.js';
import { simClusterSpec, simDeploySpec } from '../../sim/spec.js';

const stateDir = '/tmp/liftoff-test-worker-policy';
const clusterName = 'policy';

describe('the worker decides what a spec may reach', () => {
  const e2e = useE2eCluster({ stateDir, netIndex: 31, seedReferenceState: false });
  let dir = '';
  let plantedKnownHosts = '';
  let cliEnv: NodeJS.ProcessEnv;

  const connections = () => e2e.sim.hosts.reduce((n, h) => n + countSshConnections(stateDir, h.name), 0);
  const logins = () => e2e.sim.hosts.reduce((n, h) => n + countSshHandshakes(stateDir, h.name), 0);

  /** The attack: the author's own known_hosts (which would verify the real hosts) and the worker's payload key. */
  function plantedSpec() {
    const base = simDeploySpec(e2e.sim, { cluster: clusterName });
    return {
      ...base,
      ssh: { ...base.ssh, knownHostsPath: plantedKnownHosts },
      serve: { ...base.serve, env: { ...base.serve.env, HF_TOKEN: { fromEnv: 'LIFTOFF_PAYLOAD_KEY' } } },
    };
  }

  function assertRefusal(message: string): void {
    assert.match(
      message,
      /validate failed: refused by the worker policy \(.*worker-policy\.yaml \(LIFTOFF_WORKER_POLICY\)/,
    );
    assert.match(
      message,
      /ssh\.knownHostsPath: ".*planted.*known_hosts" is not a known_hosts file this worker trusts .*list it under knownHosts in the worker policy/,
    );
    assert.match(
      message,
      /serve\.env\.HF_TOKEN\.fromEnv: LIFTOFF_PAYLOAD_KEY is a liftoff or Temporal setting of the worker/,
    );
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'liftoff-worker-policy-'));
    plantedKnownHosts = join(dir, 'planted_known_hosts');
    copyFileSync(e2e.sim.knownHostsPath, plantedKnownHosts);
    cliEnv = { ...process.env, ...e2e.temporalEnv };
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the count works: a probe with the worker-allowed known_hosts connects to every host', async () => {
    const before = connections();
    await e2e.client.workflow.execute(probeCluster, {
      taskQueue: TASK_QUEUE,
      workflowId: 'policy-probe-allowed',
      args: [simClusterSpec(e2e.sim, { cluster: clusterName })],
    });
    assert.ok(connections() - before >= e2e.sim.hosts.length, 'each sshd logged the connection');
  });

  it('a planted known_hosts and fromEnv LIFTOFF_PAYLOAD_KEY are refused in validate on every path, with 0 SSH connections', async () => {
    const connectionsBefore = connections();
    const loginsBefore = logins();

    // The CLI (`liftoff deploy`, a separate process), under the cluster's workflow id.
    const file = join(dir, 'planted.yaml');
    writeFileSync(file, stringify(plantedSpec()));
    const cli = await runLiftoff(['deploy', '-c', file, '--follow', '--json'], cliEnv);
    assert.equal(cli.code, 1, `${cli.stdout}${cli.stderr}`);
    const doc = JSON.parse(cli.stdout) as { failed: boolean; type: string; message: string };
    assert.equal(doc.type, 'InvalidSpec');
    assertRefusal(doc.message);

    // The Temporal UI's path: another workflow id, which would start the deploy as a child.
    const uiId = `policy-ui-${randomBytes(3).toString('hex')}`;
    const ui = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: uiId,
      args: [plantedSpec()],
    });
    const err = await ui.result().then(
      () => assert.fail('the UI run should be refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError);
    assert.ok(err.cause instanceof ApplicationFailure);
    assert.equal(err.cause.type, 'InvalidSpec');
    assert.equal(err.cause.nonRetryable, true);
    assertRefusal(err.cause.message);

    // Both histories: the one activity is the policy check, no child started.
    for (const workflowId of [deployWorkflowId(clusterName), uiId]) {
      const history = await e2e.client.workflow.getHandle(workflowId).fetchHistory();
      const scheduled = (history.events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes
          ? [e.activityTaskScheduledEventAttributes.activityType?.name]
          : [],
      );
      assert.deepEqual(scheduled, ['checkWorkerPolicy'], workflowId);
      assert.ok(!(history.events ?? []).some((e) => e.startChildWorkflowExecutionInitiatedEventAttributes));
    }

    // The probe checks the same at each SSH connection (not in a validate step): refused before connecting.
    const probeErr = await e2e.client.workflow
      .execute(probeCluster, {
        taskQueue: TASK_QUEUE,
        workflowId: 'policy-probe-planted',
        args: [{ ...simClusterSpec(e2e.sim, { cluster: clusterName }), ssh: plantedSpec().ssh }],
      })
      .then(
        () => assert.fail('the probe should be refused'),
        (e: unknown) => e,
      );
    assert.ok(probeErr instanceof WorkflowFailedError);
    let root: Error | undefined = probeErr.cause;
    while (root?.cause instanceof Error) root = root.cause;
    assert.match(
      String(root?.message),
      /ssh\.knownHostsPath: .* is not a known_hosts file this worker trusts/,
    );

    const newConnections = connections() - connectionsBefore;
    assert.equal(newConnections, 0, 'TCP connections at the simulated sshds');
    assert.equal(logins() - loginsBefore, 0, 'logins');
    console.log(
      `FIGURE: planted known_hosts + fromEnv LIFTOFF_PAYLOAD_KEY refused on 3 paths (CLI deploy, UI run, probe); ${newConnections} SSH connections`,
    );
  });

  it("a refused spec's cluster goes into the search attributes only when it is a cluster name", async () => {
    const run = async (cluster: string) => {
      const workflowId = `policy-guess-${randomBytes(3).toString('hex')}`;
      const handle = await e2e.client.workflow.start(deploy, {
        taskQueue: TASK_QUEUE,
        workflowId,
        args: [{ cluster, hosts: [] }],
      });
      await handle.result().catch(() => undefined);
      return (await handle.describe()).typedSearchAttributes.get(searchAttributes.cluster);
    };
    assert.equal(await run('guess-ok'), 'guess-ok');
    assert.equal(await run('not a name; *'), undefined);
    assert.equal(await run('x'.repeat(300)), undefined);
  });

  it('the smoke test leaves no file holding the API key when its command is killed on the host', async () => {
    const head = e2e.sim.hosts[0];
    assert.ok(head);
    const apiKey = `sk-smoke-kill-${randomBytes(12).toString('hex')}`;
    const port = 30_000 + Math.floor(Math.random() * 20_000);
    // A server that accepts the connection and never answers: curl waits, holding the header.
    const listener = (
      await sshRun(
        e2e.sim,
        head.name,
        `nohup python3 -c 'import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", ${port})); s.listen(8); time.sleep(120)' >/dev/null 2>&1 & echo $!`,
      )
    ).trim();
    assert.match(listener, /^\d+$/);
    const startedMs = Date.now() - 1000;
    process.env.VLLM_API_KEY = apiKey;
    // Outside a worker, activities take this process's policy: the sim's key and known_hosts.
    process.env.LIFTOFF_WORKER_POLICY = e2e.sim.workerPolicyPath;
    try {
      const url = `${head.clusterIp}:${port}`;
      const smoke = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') }).run(
        smokeTest,
        {
          head: {
            target: { name: head.name, host: head.address, port: head.sshPort, user: e2e.sim.sshUser },
            auth: { privateKeyPath: e2e.sim.privateKeyPath, knownHostsPath: e2e.sim.knownHostsPath },
          },
          clusterIp: head.clusterIp,
          port,
          model: 'm',
          prompt: 'p',
          maxTokens: 1,
          apiKey: { fromEnv: 'VLLM_API_KEY' },
        },
      );
      const settled = smoke.then(
        () => 'succeeded',
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );
      // The remote command: curl for this URL and its shells up to sshd, found by pid (the hosts share this
      // machine's process table) and killed with SIGKILL: no trap runs.
      let killed: number[] = [];
      for (let i = 0; i < 100 && killed.length === 0; i++) {
        killed = commandTree(url);
        if (killed.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(killed.length >= 2, `found curl and its shell (${killed.join(', ')})`);
      // Outermost first, so no shell of the command runs on after its child dies.
      for (const pid of [...killed].reverse()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
      }
      const outcome = await settled;
      assert.notEqual(outcome, 'succeeded');
      assert.ok(!outcome.includes(apiKey), 'the failure does not quote the key');

      const holding = filesHolding(['/tmp', join(head.hostDir, 'home')], apiKey, startedMs);
      assert.deepEqual(holding, [], 'no file on the host holds the API key');
      console.log(
        `FIGURE: smoke command killed (pids ${killed.join(', ')}); files holding the key: ${holding.length}`,
      );
    } finally {
      delete process.env.VLLM_API_KEY;
      delete process.env.LIFTOFF_WORKER_POLICY;
      await sshRun(e2e.sim, head.name, `kill ${listener} 2>/dev/null; true`);
    }
  });
});

/** curl's pid for `url` and those of its ancestors up to (not including) sshd. */
function commandTree(url: string): number[] {
  const procs = new Map<number, { ppid: number; comm: string; cmdline: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      procs.set(Number(name), { ppid, comm, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  const curl = [...procs].find(([, p]) => p.comm === 'curl' && p.cmdline.includes(url));
  if (!curl) return [];
  const tree: number[] = [];
  for (let pid: number | undefined = curl[0]; pid !== undefined;) {
    const p = procs.get(pid);
    if (!p || p.comm.startsWith('sshd')) break;
    tree.push(pid);
    pid = p.ppid;
  }
  return tree;
}

/** Regular files under `roots` changed since `sinceMs`, of at most 1 MiB, that contain `needle`. */
function filesHolding(roots: string[], needle: string, sinceMs: number): string[] {
  const found: string[] = [];
  const walk = (path: string, depth: number) => {
    let st;
    try {
      st = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      return;
    }
    if (!st) return;
    if (st.isDirectory()) {
      if (depth > 4) return;
      let names: string[] = [];
      try {
        names = readdirSync(path);
      } catch {
        return;
      }
      for (const n of names) walk(join(path, n), depth + 1);
    } else if (st.isFile() && st.mtimeMs >= sinceMs && st.size <= 1024 * 1024) {
      try {
        if (readFileSync(path, 'utf8').includes(needle)) found.push(path);
      } catch {
        // unreadable or gone
      }
    }
  };
  for (const r of roots) walk(r, 0);
  return found;
}
