// `liftoff init -o` (issue 26, item 5): the spec never goes through a symbolic link, with --force or without.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { OutputExistsError, outputTaken, writeOutputFile } from '../../src/cli/output-file.js';
import { tempDir } from '../helpers/temp-dir.js';

describe('writing -o', () => {
  it('with --force, a link at the target is replaced by the file and what it points to is untouched', () => {
    const dir = tempDir('liftoff-output-');
    const victim = join(dir, 'authorized_keys');
    writeFileSync(victim, 'ssh-ed25519 AAAA ops\n', { mode: 0o600 });
    const target = join(dir, 'spec.yaml');
    symlinkSync(victim, target);
    writeOutputFile(target, 'cluster: "lab"\n', { replace: true });
    assert.equal(readFileSync(victim, 'utf8'), 'ssh-ed25519 AAAA ops\n');
    assert.equal(statSync(victim).mode & 0o777, 0o600);
    assert.ok(lstatSync(target).isFile(), 'the link is now a file');
    assert.equal(readFileSync(target, 'utf8'), 'cluster: "lab"\n');
    assert.deepEqual(readdirSync(dir).sort(), ['authorized_keys', 'spec.yaml'], 'no temporary file is left');
  });

  it('without --force, a link at the target is taken, dangling or not, and nothing is written', () => {
    const dir = tempDir('liftoff-output-');
    const dangling = join(dir, 'spec.yaml');
    symlinkSync(join(dir, 'nowhere'), dangling);
    assert.equal(outputTaken(dangling), true);
    assert.throws(() => writeOutputFile(dangling, 'x\n', { replace: false }), OutputExistsError);
    assert.equal(readlinkSync(dangling), join(dir, 'nowhere'));
    assert.deepEqual(readdirSync(dir), ['spec.yaml']);
    assert.equal(outputTaken(join(dir, 'free.yaml')), false);
  });

  it('a new file gets the mode a new file gets; a replaced one keeps its mode', () => {
    const dir = tempDir('liftoff-output-');
    const fresh = join(dir, 'new.yaml');
    writeOutputFile(fresh, 'a\n', { replace: false });
    const reference = join(dir, 'reference');
    writeFileSync(reference, '');
    assert.equal(statSync(fresh).mode & 0o777, statSync(reference).mode & 0o777);
    const kept = join(dir, 'kept.yaml');
    writeFileSync(kept, 'old\n', { mode: 0o640 });
    writeOutputFile(kept, 'new\n', { replace: true });
    assert.equal(readFileSync(kept, 'utf8'), 'new\n');
    assert.equal(statSync(kept).mode & 0o777, 0o640);
  });
});
