// Remote commands per host for one full deploy on a simulated cluster, with and without the load polls:
//   flock /tmp/liftoff-e2e.lock npx tsx bench/commands-per-host.ts [hosts=2] [shards=6]
// The hosts' own command logs (sim recordCommands) are the evidence. The head's load polls are the commands it ran
// between the `vllm serve` launch and the smoke test; a worker's are its checkRayWorker runs in the history (each
// one command, before and after issue 18). Uses netIndex 52.
import { readFileSync, writeFileSync } from 'node:fs';
import { createLiftoffWorker } from '../src/worker.js';
import { downCluster, hostCommands, upCluster } from '../sim/cluster.js';
import { simDeploySpec } from '../sim/spec.js';
import { TASK_QUEUE } from '../src/shared/constants.js';
import { deploy } from '../src/workflows/index.js';
import { createDevServerEnv } from '../test/helpers/temporal.js';
import { simWorkerPolicy } from '../test/helpers/worker-policy.js';
import { activityRuns } from './measure.js';
import { paths } from '../sim/host-state.js';

const hosts = Number(process.argv[2] ?? '2');
const shards = Number(process.argv[3] ?? '6');
const stateDir = '/tmp/liftoff-bench-commands';

async function main(): Promise<void> {
  await downCluster(stateDir);
  const [sim, env] = await Promise.all([
    upCluster({
      hosts,
      mode: 'netns',
      stateDir,
      netIndex: 52,
      clusterOnly: hosts > 1 ? ['spark2'] : [],
      recordCommands: true,
      vllm: { shards, shardSeconds: 0.5, graphCaptureSeconds: 0.3, memoryMiB: 1024 },
    }),
    createDevServerEnv(),
  ]);
  const worker = await createLiftoffWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    policy: simWorkerPolicy(sim),
  });
  const running = worker.run();
  try {
    const spec = simDeploySpec(sim, { cluster: 'commands' });
    spec.serve.pollInterval = '1s';
    const handle = await env.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: 'liftoff-commands',
      args: [spec, { trigger: 'cli' }],
    });
    const result = await handle.result();
    const runs = activityRuns(await handle.fetchHistory());
    const rows = sim.hosts.map((h, i) => {
      const log = hostCommands(stateDir, h.name);
      // Every command, one a line (newlines shown as ⏎), for reading what is left to batch.
      writeFileSync(
        `/tmp/liftoff-commands-${h.name}.txt`,
        log.map((c) => c.replaceAll('\n', '⏎')).join('\n') + '\n',
      );
      let polls: number;
      if (i === 0) {
        const launch = log.findIndex((c) => c.includes('setsid nohup docker exec'));
        const smoke = log.findIndex((c) => c.includes('/v1/chat/completions'));
        polls = launch >= 0 && smoke > launch ? smoke - launch - 1 : 0;
      } else {
        polls = runs.filter((r) => r.host === h.name && r.type === 'checkRayWorker').length;
      }
      const headPolls = runs.filter((r) => r.type === 'checkServeHealth').length;
      // The simulated tools a host ran (each one a node process here; a docker or systemctl call on a real host).
      const tools = toolCounts(h.hostDir);
      return {
        host: h.name,
        total: log.length,
        loadPolls: polls,
        excludingPolls: log.length - polls,
        headPolls,
        tools,
      };
    });
    const avg = (f: (r: (typeof rows)[number]) => number) =>
      Math.round((rows.reduce((n, r) => n + f(r), 0) / rows.length) * 10) / 10;
    for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
    process.stdout.write(
      `remote commands per host (head / average): ${rows[0]?.total} / ${avg((r) => r.total)}; excluding load polls: ${rows[0]?.excludingPolls} / ${avg((r) => r.excludingPolls)}; load ${result.loadSeconds.toFixed(1)} s\n`,
    );
  } finally {
    worker.shutdown();
    await running;
    await env.teardown();
    await downCluster(stateDir);
  }
}

/** Simulated tool invocations on a host by tool and subcommand (`docker inspect`: 3), from its tool log. */
function toolCounts(hostDir: string): Record<string, number> {
  const counts: Record<string, number> = {};
  let text = '';
  try {
    text = readFileSync(paths.commands(hostDir), 'utf8');
  } catch {
    return counts;
  }
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [tool, sub] = (JSON.parse(line) as { argv: string[] }).argv;
    const key = sub && !sub.startsWith('-') ? `${tool} ${sub}` : String(tool);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

await main();
