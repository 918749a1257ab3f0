// The main job on the embedded default: a simulated 2-host GPU cluster, the embedded Temporal and a worker,
// then the real `liftoff` CLI driving a workflow against it.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { upCluster, downCluster } from '../sim/cluster.js';
import { simClusterSpec } from '../sim/spec.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { createLiftoffWorker } from '../src/worker.js';
import { stateDir } from '../src/cli/state-dir.js';
import { colors } from '../src/cli/render.js';

const say = (line: string) => process.stdout.write(`${colors.cyan('demo')} ${line}\n`);

function runCli(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/client.ts', ...args], {
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
  const sim = await upCluster({ hosts: 2, stateDir: simDir, clusterOnly: ['spark2'] });
  for (const h of sim.hosts)
    say(`  ${h.name}: ssh ${h.address}:${h.sshPort}, cluster IP ${h.clusterIp} (${sim.mode})`);

  say('starting the embedded Temporal dev server and a worker…');
  const server = await startDevServer({ stateDir: join(stateDir(), 'temporal') });
  const connection = await NativeConnection.connect({ address: server.address });
  const worker = await createLiftoffWorker({ connection, namespace: server.namespace });
  const running = worker.run();
  try {
    const specFile = join(stateDir(), 'demo', 'spec.yaml');
    mkdirSync(join(stateDir(), 'demo'), { recursive: true });
    writeFileSync(specFile, stringify(simClusterSpec(sim, { cluster: 'sim-demo' })));
    say(`spec written to ${relative('.', specFile)}`);
    say(`$ liftoff probe -c ${relative('.', specFile)}`);
    // Asynchronous on purpose: this process also hosts the worker that must run the workflow.
    const status = await runCli(['probe', '-c', specFile], {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
    });
    say(`Temporal UI (while a server runs): ${server.uiUrl}/namespaces/${server.namespace}/workflows`);
    say('history is kept in .liftoff/temporal; browse it later with: npm run liftoff -- dev');
    return status;
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
    await downCluster(simDir);
  }
}

process.exitCode = await main();
