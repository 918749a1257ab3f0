// The main job on the embedded default: a simulated 2-host GPU cluster, the embedded Temporal and a worker,
// then the real `liftoff` CLI driving a workflow against it.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { upCluster, downCluster } from '../sim/cluster.js';
import { simDeploySpec } from '../sim/spec.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { createLiftoffWorker } from '../src/worker.js';
import { readWorkerPolicyFile } from '../src/config/worker-policy.js';
import { stateDir } from '../src/cli/state-dir.js';
import { colors } from '../src/cli/render.js';

const say = (line: string) => process.stdout.write(`${colors.cyan('demo')} ${line}\n`);

// Each phase's time, so a slow first run shows where it went (the README quotes them).
let phaseStart = Date.now();
const took = (): string => {
  const s = ((Date.now() - phaseStart) / 1000).toFixed(1);
  phaseStart = Date.now();
  return `${s} s`;
};

// bin/liftoff.js, as a user runs it: the compiled dist/ that `npm run demo` (scripts/setup.sh) builds.
function runCli(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/liftoff.js', ...args], {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function main(): Promise<number> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const simDir = process.env.LIFTOFF_SIM_DIR ?? '/tmp/liftoff-sim';
  await downCluster(simDir);
  say('bringing up 2 simulated DGX Spark hosts (spark2 reachable only through spark1)…');
  const sim = await upCluster({
    hosts: 2,
    stateDir: simDir,
    clusterOnly: ['spark2'],
    // The reference load (39 shards, 10–15 min) compressed to about 20 s: long enough to watch its progress.
    vllm: { shards: 39, shardSeconds: 0.4, graphCaptureSeconds: 2 },
  });
  for (const h of sim.hosts)
    say(`  ${h.name}: ssh ${h.address}:${h.sshPort}, cluster IP ${h.clusterIp} (${sim.mode})`);
  say(`cluster up in ${took()}`);

  say('starting the embedded Temporal dev server and a worker…');
  const server = await startDevServer({ stateDir: join(stateDir(), 'temporal') });
  const connection = await NativeConnection.connect({ address: server.address });
  // The worker may use the simulated cluster's key and known_hosts: its own setting, not the spec's.
  const worker = await createLiftoffWorker({
    connection,
    namespace: server.namespace,
    policy: readWorkerPolicyFile(sim.workerPolicyPath),
  });
  const running = worker.run();
  say(`Temporal and the worker up in ${took()}`);
  try {
    const specFile = join(stateDir(), 'demo', 'spec.yaml');
    mkdirSync(join(stateDir(), 'demo'), { recursive: true });
    const spec = simDeploySpec(sim, { cluster: 'sim-demo' });
    writeFileSync(specFile, stringify(spec));
    say(`spec written to ${relative('.', specFile)}`);
    say(`$ liftoff deploy -c ${relative('.', specFile)} --follow`);
    // Asynchronous on purpose: this process also hosts the worker that must run the workflow.
    const status = await runCli(['deploy', '-c', specFile, '--follow'], {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
    });
    say(`the deploy took ${took()} (from the CLI's start to its exit)`);
    if (status === 0) {
      const head = sim.hosts[0];
      const url = `http://${head?.address}:${spec.serve.port}/v1/chat/completions`;
      const reply = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: spec.serve.model,
          messages: [{ role: 'user', content: 'Say hello.' }],
          max_tokens: 16,
        }),
      });
      const body = (await reply.json()) as { choices?: { message?: { content?: string } }[] };
      say(`POST ${url} → ${JSON.stringify(body.choices?.[0]?.message?.content ?? body)}`);
    }
    say(
      `Temporal UI (while a server runs): ${server.uiUrl}/namespaces/${server.namespace}/workflows/liftoff-sim-demo`,
    );
    say('the history is kept in .liftoff/temporal; to see it later: npm run liftoff -- dev (UI above), or');
    say('  .venv/bin/temporal workflow show --workflow-id liftoff-sim-demo   (while `liftoff dev` runs)');
    return status;
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
    await downCluster(simDir);
    say(`stopped everything in ${took()}`);
  }
}

process.exitCode = await main();
