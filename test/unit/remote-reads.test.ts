// Remote reads of logs are bounded in bytes on the host, not only in lines (issue 14, item 2): one line of a log
// can be any length, and `tail -n` alone would send all of it over SSH. The commands the health loop, the
// diagnostics and the failure bundle run are run here by a local POSIX shell, on a 10 MB line.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  containerLogTailCommand,
  maxContainerLogBytes,
  maxTailBytes,
  serveLogTailCommand,
} from '../../src/host-commands/launch.js';
import type { RemoteCommand } from '../../src/ssh/quote.js';

const MB10 = 10 * 1024 * 1024;

function run(cmd: RemoteCommand, env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync('/bin/sh', ['-c', cmd.text], { env, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr.toString());
  console.log(`FIGURE: ${cmd.text.slice(0, 40)}…: ${r.stdout.length} bytes read`);
  return r.stdout.toString();
}

describe('log tails are cut in bytes on the host', () => {
  const dir = mkdtempSync(join(tmpdir(), 'liftoff-remote-reads-'));

  it('the serve log: a 10 MB line yields at most maxTailBytes, ending with the last line', () => {
    const log = join(dir, 'vllm.log');
    writeFileSync(log, `start\n${'x'.repeat(MB10)}\nlast line\n`);
    for (const lines of [40, 200]) {
      const out = run(serveLogTailCommand(log, lines));
      assert.ok(out.length <= maxTailBytes, `${out.length} bytes`);
      assert.ok(out.endsWith('x\nlast line\n'), out.slice(-40));
    }
    assert.equal(run(serveLogTailCommand(join(dir, 'missing.log'))), '');
  });

  it('a container log: 10 MB on stderr yields at most maxContainerLogBytes, stdout and stderr together', () => {
    const bin = join(dir, 'bin');
    spawnSync('mkdir', ['-p', bin]);
    // Stands in for docker: `docker logs` prints the container's streams, here one 10 MB line on stderr.
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\nhead -c ${MB10} /dev/zero | tr '\\0' y >&2\necho >&2\necho 'ray ready'\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
    const out = run(containerLogTailCommand('ray-head', 50), {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ''}`,
    });
    assert.ok(out.length <= maxContainerLogBytes, `${out.length} bytes`);
    assert.ok(out.endsWith('ray ready\n'), out.slice(-40));
  });

  it('cleans up', () => rmSync(dir, { recursive: true, force: true }));
});
