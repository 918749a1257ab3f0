// The embedded Temporal: starts from the pinned CLI, registers liftoff's search attributes,
// keeps history in its database file across a restart, and stops cleanly.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { allSearchAttributeKeys, TASK_QUEUE } from '../../src/shared/constants.js';
import { isProcessAlive } from '../helpers/processes.js';

describe('embedded Temporal dev server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'liftoff-devserver-'));
  let server: DevServer | undefined;
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const ports = {
    port: 17233 + Math.floor(Math.random() * 500),
    uiPort: 18233 + Math.floor(Math.random() * 500),
  };

  it('registers the search attributes and keeps history across a restart', async () => {
    server = await startDevServer({ stateDir: dir, ...ports, namespace: 'liftoff-test' });
    // The server made its database in an empty folder, private from birth (umask 077).
    const dbFiles = readdirSync(dir).filter((f) => f.startsWith('temporal.db'));
    assert.ok(dbFiles.includes('temporal.db'), dbFiles.join(', '));
    for (const f of [...dbFiles, 'temporal-server.log'])
      assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
    let connection = await Connection.connect({ address: server.address });
    const attrs = await connection.operatorService.listSearchAttributes({ namespace: 'liftoff-test' });
    for (const key of allSearchAttributeKeys)
      assert.ok(attrs.customAttributes?.[key.name] !== undefined, key.name);

    // No worker polls this queue, so the workflow stays open: we only need it recorded.
    const client = new Client({ connection, namespace: 'liftoff-test' });
    const handle = await client.workflow.start('probeCluster', {
      taskQueue: `${TASK_QUEUE}-nobody`,
      workflowId: 'persisted-across-restart',
      args: [{}],
    });
    await connection.close();
    const firstPid = server.pid;
    await server.stop();
    assert.equal(isProcessAlive(firstPid), false, 'stop() leaves no server process');

    server = await startDevServer({ stateDir: dir, ...ports, namespace: 'liftoff-test' });
    connection = await Connection.connect({ address: server.address });
    const again = new Client({ connection, namespace: 'liftoff-test' });
    const described = await again.workflow
      .getHandle(handle.workflowId, handle.firstExecutionRunId)
      .describe();
    assert.equal(described.status.name, 'RUNNING');
    assert.equal(described.type, 'probeCluster');
    await connection.close();
  });

  it('refuses to start a second server on a port in use, naming the port', async () => {
    assert.ok(server, 'server from the previous test is running');
    await assert.rejects(
      startDevServer({
        stateDir: join(dir, 'second'),
        ...ports,
        namespace: 'liftoff-test',
        readyTimeoutMs: 20_000,
      }),
      new RegExp(`port 127\\.0\\.0\\.1:${ports.port} is already in use`),
    );
  });
});
