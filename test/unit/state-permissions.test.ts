// .liftoff/ is 0700 and the embedded Temporal's database and log 0600, also when they existed with wider modes.
// test/e2e/dev-server.test.ts checks the modes a real server gives the database it creates.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stateDir } from '../../src/cli/state-dir.js';
import { prepareStateFiles } from '../../src/temporal/dev-server.js';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('local state permissions', () => {
  it('stateDir() creates .liftoff 0700 and tightens an existing one', () => {
    const root = mkdtempSync(join(tmpdir(), 'liftoff-state-'));
    const saved = process.env.LIFTOFF_STATE_DIR;
    try {
      process.env.LIFTOFF_STATE_DIR = join(root, '.liftoff');
      assert.equal(mode(stateDir()), 0o700);
      chmodSync(join(root, '.liftoff'), 0o755);
      assert.equal(mode(stateDir()), 0o700);
    } finally {
      if (saved === undefined) delete process.env.LIFTOFF_STATE_DIR;
      else process.env.LIFTOFF_STATE_DIR = saved;
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the Temporal folder is 0700 and its log 0600; a new database is left for the server to create', () => {
    const root = mkdtempSync(join(tmpdir(), 'liftoff-state-'));
    try {
      const fresh = prepareStateFiles(join(root, 'fresh'));
      assert.equal(mode(join(root, 'fresh')), 0o700);
      // An empty file would pass for a database start-dev made before: it would skip creating its tables.
      assert.equal(existsSync(fresh.dbFile), false);
      assert.equal(mode(fresh.logFile), 0o600);

      const old = join(root, 'old');
      mkdirSync(old, { mode: 0o755 });
      for (const f of ['temporal.db', 'temporal.db-wal', 'temporal-server.log']) {
        writeFileSync(join(old, f), 'x', { mode: 0o644 });
      }
      prepareStateFiles(old);
      assert.equal(mode(old), 0o700);
      for (const f of ['temporal.db', 'temporal.db-wal', 'temporal-server.log'])
        assert.equal(mode(join(old, f)), 0o600, f);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
