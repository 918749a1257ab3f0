// Issue 26 item 3: `-c FILE` reads only a regular file of at most 1 MiB of UTF-8 (a FIFO or device is refused
// before it is opened for reading, so nothing blocks), and its YAML is bounded: nesting, items, nodes, tokens,
// aliases. Circular aliases are refused naming their field (a crash with exit 1 before).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { loadSpecFile, parseSpecText, SpecError } from '../../src/config/load.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { tempDir } from '../helpers/temp-dir.js';
import { referenceYaml } from '../helpers/hostile-specs.js';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof SpecError, String(err));
    return err.message;
  }
  return assert.fail('refused');
}

const fromText = (text: string) => refusal(() => parseSpecText(deploySpecSchema, text, 'spec.yaml'));

describe('the spec file and its YAML are bounded', () => {
  const dir = tempDir('liftoff-spec-file-');

  it('a FIFO, a device, a directory and a socket are refused without reading', async () => {
    const fifo = join(dir, 'fifo.yaml');
    execFileSync('mkfifo', [fifo]);
    // No writer ever opens the FIFO: a plain read would wait for one for ever.
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, fifo)),
      /it is a FIFO \(named pipe\), not a regular file/,
    );
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, '/dev/zero')),
      /it is a device, not a regular file/,
    );
    const folder = join(dir, 'folder.yaml');
    mkdirSync(folder);
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, folder)),
      /it is a directory/,
    );
    const socket = join(dir, 'socket.yaml');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      assert.match(
        refusal(() => loadSpecFile(deploySpecSchema, socket)),
        /it is a socket/,
      );
    } finally {
      server.close();
    }
  });

  it('more than 1 MiB, invalid UTF-8 and control characters are refused naming the file', () => {
    const big = join(dir, 'big.yaml');
    writeFileSync(big, `${referenceYaml}# ${'x'.repeat(1024 * 1024)}\n`);
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, big)),
      new RegExp(`^cannot read spec file ${big}: it is larger than 1048576 bytes \\(1 MiB\\)`),
    );
    const latin1 = join(dir, 'latin1.yaml');
    writeFileSync(latin1, Buffer.concat([Buffer.from(referenceYaml), Buffer.from([0x23, 0xe9, 0x0a])]));
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, latin1)),
      /it is not UTF-8 text/,
    );
    const nul = join(dir, 'nul.yaml');
    writeFileSync(nul, referenceYaml.replace('ready?', 'ready\0?'));
    assert.match(
      refusal(() => loadSpecFile(deploySpecSchema, nul)),
      /it holds the control character U\+0000 at line 41, column 38/,
    );
  });

  it('a circular alias is refused naming its field (it crashed with exit 1 in a multiproc Ray field)', () => {
    assert.equal(
      fromText(referenceYaml.replace(/^ {2}args: .*$/m, '  args: &x [*x]')),
      'spec.yaml is invalid:\n  serve.args[0]: the alias *x sits inside the node its anchor &x names, so the value would contain itself; write the value out instead',
    );
    const multiproc = referenceYaml
      .replace(/^ {2}port: 6379$/m, '  port: &p [*p]')
      .replace(/^ {2}port: 30000$/m, '  port: 30000\n  backend: multiproc\n  masterPort: 29501');
    assert.match(fromText(multiproc), /^ {2}ray\.port\[0\]: the alias \*p sits inside/m);
    // An alias to a finished node is an ordinary copy.
    const shared = referenceYaml
      .replace('  env:\n    RAY_memory', '  env: &renv\n    RAY_memory')
      .replace("  env:\n    VLLM_ENGINE_READY_TIMEOUT_S: '1800'", '  env: *renv');
    assert.ok(shared.includes('env: *renv'), 'the second env is an alias');
    assert.doesNotThrow(() => parseSpecText(deploySpecSchema, shared, 'shared.yaml'));
  });

  it('an alias bomb, deep nesting, long collections and too many nodes or tokens are refused at once', () => {
    const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (const [i, n] of [...'bcdefghi'].entries())
      laughs.push(`${n}: &${n} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`);
    assert.match(fromText(laughs.join('\n')), /is refused: its aliases expand to more than 100 copies/);
    assert.match(
      fromText('['.repeat(100_000)),
      /is refused: it nests collections more than 64 deep \(at line 1, column 65\)/,
    );
    assert.match(fromText(`${'- '.repeat(100_000)}x`), /nests collections more than 64 deep/);
    assert.match(
      fromText(`${referenceYaml}x-items: [${Array(2000).fill('1').join(',')}]\n`),
      /^spec\.yaml is invalid:\n {2}x-items: more than 1024 items \(at line \d+, column \d+\)/,
    );
    assert.match(
      fromText(
        `x: [${Array(20)
          .fill(`[${Array(1000).fill('1').join(',')}]`)
          .join(',')}]`,
      ),
      /is refused: it has more than 16384 keys, values and collections/,
    );
    assert.match(
      fromText(`${referenceYaml}${'#\n'.repeat(60_000)}`),
      /is refused: it has more than 100000 tokens/,
    );
  });
});
