// The compiled CLI: bin/liftoff.js runs dist/ only while it was built from the src/ beside it, and otherwise the
// sources through tsx, saying so; and the table that loads one command's module names each command as it is named.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandLoaders } from '../../src/commands/index.js';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { ensureBuilt } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

describe('the command table', () => {
  it('loads, under each name, the command of that name', async () => {
    for (const [name, load] of Object.entries(commandLoaders)) assert.equal((await load()).name(), name);
  });
});

describe('bin/liftoff.js on a checkout', () => {
  ensureBuilt();
  // A copy of the checkout's CLI, with the build of the current sources, to edit without touching this one.
  const root = tempDir('liftoff-cli-build-');
  for (const part of ['bin', 'dist', 'src', 'package.json'])
    cpSync(join(projectRoot, part), join(root, part), { recursive: true });
  symlinkSync(join(projectRoot, 'node_modules'), join(root, 'node_modules'));
  const version = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
  const liftoff = (args: string[]) => {
    const r = spawnSync(process.execPath, [join(root, 'bin', 'liftoff.js'), ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it('runs dist/ while it was built from src/', () => {
    const r = liftoff(['--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), version);
    assert.equal(r.stderr, '');
  });

  it('runs the edited src/ through tsx, and says why, once src/ differs from what dist/ was built from', () => {
    const index = join(root, 'src', 'commands', 'index.ts');
    const original = readFileSync(index, 'utf8');
    assert.ok(original.includes('launch a multi-node vLLM server'));
    writeFileSync(index, original.replace('launch a multi-node vLLM server', 'launch an edited vLLM server'));
    const edited = liftoff(['--help']);
    assert.equal(edited.code, 0, edited.stderr);
    assert.match(edited.stdout, /launch an edited vLLM server/);
    assert.match(edited.stderr, /dist\/ was built from older sources; running src\/ through tsx/);

    rmSync(join(root, 'dist'), { recursive: true });
    const none = liftoff(['--version']);
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stderr, /there is no dist\/; running src\/ through tsx/);
  });
});
