// The main job on the embedded default: a simulated 2-host GPU cluster, the embedded Temporal and a worker,
// then the real `liftoff` CLI driving a workflow against it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { NativeConnection } from '@temporalio/worker';
import { upCluster, downCluster } from '../sim/cluster.js';
import { simClusterSpec } from '../sim/spec.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { createLiftoffWorker } from '../src/worker.js';
import { stateDir } from '../src/cli/state-dir.js';
import { colors } from '../src/cli/render.js';

const say = (line: string) => process.stdout.write(`${colors.cyan('demo')} ${line}\n`);

async function main(): Promise<number> {
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
    const cli = spawnSync(process.execPath, ['--import', 'tsx', 'src/client.ts', 'probe', '-c', specFile], {
      stdio: 'inherit',
      env: { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace },
    });
    say(`Temporal UI (while a server runs): ${server.uiUrl}/namespaces/${server.namespace}/workflows`);
    say('history is kept in .liftoff/temporal; browse it later with: npm run liftoff -- dev');
    return cli.status ?? 1;
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await server.stop();
    await downCluster(simDir);
  }
}

process.exitCode = await main();
