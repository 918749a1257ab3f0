// The CLI's contract with scripts: exit codes and `--json` error documents.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { liftoffArgv } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

function liftoff(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, liftoffArgv(args), {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('liftoff CLI exit codes', () => {
  const dir = tempDir('liftoff-cli-');

  it('exits 2 on an unknown command', () => {
    const r = liftoff(['no-such-command']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown command/);
  });

  it('exits 2 on a spec that does not validate, naming the field, before contacting Temporal', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'cluster: demo\nssh: { user: root }\nhosts:\n  - name: spark1\n    address: ""\n    port: 70000\n',
    );
    // A closed port: if the CLI tried Temporal first, it would exit 3 instead.
    const r = liftoff(['probe', '-c', file, '--json'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(r.code, 2);
    const doc = JSON.parse(r.stdout) as { error: { message: string; exitCode: number } };
    assert.equal(doc.error.exitCode, 2);
    assert.match(doc.error.message, /hosts\[0\]\.port/);
  });

  it('exits 2 when the spec file is missing', () => {
    const r = liftoff(['probe', '-c', join(dir, 'missing.yaml')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot read spec file .*missing\.yaml: ENOENT/);
  });

  it('exits 3 when Temporal is unreachable, saying how to start it', () => {
    const file = join(dir, 'good.yaml');
    writeFileSync(
      file,
      'cluster: demo\nssh: { user: root, knownHostsPath: /dev/null }\nhosts:\n  - name: spark1\n    address: 127.0.0.1\n',
    );
    const r = liftoff(['probe', '-c', file], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(r.code, 3);
    assert.match(r.stderr, /cannot reach Temporal at 127\.0\.0\.1:1.*liftoff dev/s);
  });
});
