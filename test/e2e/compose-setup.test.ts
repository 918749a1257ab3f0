// docker-compose.yml's temporal-setup service runs deploy/temporal/setup.sh in temporalio/admin-tools. No Docker
// engine runs here, so the script runs as that service would, with the service's environment from the compose file
// and the same `temporal` CLI release on PATH (.venv), against a real dev server standing in for the `temporal`
// service. A user's TEMPORAL_NAMESPACE picks a namespace the server does not have yet.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { projectRoot, temporalCliPath } from '../../src/temporal/cli-path.js';
import { allSearchAttributeKeys } from '../../src/shared/constants.js';
import { runProcess } from '../helpers/cli.js';

const stateDir = '/tmp/liftoff-test-compose-setup';
const serverPorts = { port: 27633, uiPort: 28633 };
const namespace = 'liftoff-compose';
const { IndexedValueType } = proto.temporal.api.enums.v1;

interface SetupRun {
  code: number;
  output: string;
  ms: number;
}

/** The temporal-setup service's environment as compose would pass it, given the variables a user set. */
function serviceEnvironment(userVariables: Record<string, string>): Record<string, string> {
  const compose = parse(readFileSync(join(projectRoot, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };
  const environment = compose.services['temporal-setup']?.environment ?? {};
  return Object.fromEntries(
    Object.entries(environment).map(([name, value]) => [
      name,
      String(value).replace(
        /\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}/g,
        (_, variable: string, fallback: string) => userVariables[variable] ?? fallback,
      ),
    ]),
  );
}

describe('docker-compose temporal-setup: deploy/temporal/setup.sh against a real Temporal', () => {
  let server: DevServer | undefined;
  let connection: Connection | undefined;

  before(async () => {
    rmSync(stateDir, { recursive: true, force: true });
    server = await startDevServer({ stateDir, ...serverPorts });
    connection = await Connection.connect({ address: server.address });
  });

  after(async () => {
    await connection?.close();
    await server?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  /** Runs the script with the service's environment; `replaced` stands for a compose file edited by hand. */
  async function runSetup(
    userVariables: Record<string, string>,
    replaced: Record<string, string> = {},
  ): Promise<SetupRun> {
    assert.ok(server);
    const env = {
      PATH: `${dirname(temporalCliPath())}:${process.env.PATH ?? ''}`,
      ...serviceEnvironment(userVariables),
      // Compose points it at the `temporal` service; here the dev server stands in for it.
      TEMPORAL_ADDRESS: server.address,
      ...replaced,
    };
    const r = await runProcess('sh', ['deploy/temporal/setup.sh'], { cwd: projectRoot, env });
    return { code: r.code, output: r.stdout + r.stderr, ms: r.ms };
  }

  async function retentionSeconds(): Promise<number> {
    assert.ok(connection);
    const described = await connection.workflowService.describeNamespace({ namespace });
    return Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? -1);
  }

  it('creates the namespace with the default retention and exactly liftoff search attributes', async () => {
    assert.ok(connection);
    const run = await runSetup({ TEMPORAL_NAMESPACE: namespace });
    assert.equal(run.code, 0, run.output);
    assert.equal(await retentionSeconds(), 30 * 24 * 3600, 'LIFTOFF_RETENTION defaults to 30d');

    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    const expected = Object.fromEntries(
      allSearchAttributeKeys.map((key) => [key.name, IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`]]),
    );
    assert.deepEqual({ ...customAttributes }, expected);
    console.log(
      `FIGURE: compose setup created namespace ${namespace} and its search attributes in ${run.ms} ms`,
    );
  });

  it('converges when run again: a new retention is applied, the search attributes stay', async () => {
    const run = await runSetup({ TEMPORAL_NAMESPACE: namespace, LIFTOFF_RETENTION: '45d' });
    assert.equal(run.code, 0, run.output);
    assert.equal(await retentionSeconds(), 45 * 24 * 3600);
    console.log(`FIGURE: compose setup re-run (namespace exists) took ${run.ms} ms`);
  });

  it('fails when a search attribute exists with another type, instead of carrying on', async () => {
    const listed = serviceEnvironment({}).LIFTOFF_SEARCH_ATTRIBUTES ?? '';
    const drifted = listed.replace('LiftoffCluster=Keyword', 'LiftoffCluster=Double');
    assert.notEqual(drifted, listed);
    const run = await runSetup({ TEMPORAL_NAMESPACE: namespace }, { LIFTOFF_SEARCH_ATTRIBUTES: drifted });
    assert.notEqual(run.code, 0, run.output);
    assert.match(run.output, /LiftoffCluster already exists and has different type/);
  });
});
