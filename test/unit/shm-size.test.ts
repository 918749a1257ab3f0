// ray.shmSize under --ipc host: the containers share the host's /dev/shm, and a real Docker engine ignores
// --shm-size then (issue 27). The field stays valid, so specs stored by earlier versions (with the old default 10g)
// still run; liftoff no longer sends the flag, so no command claims a size the container does not get.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema, type DeploySpec } from '../../src/config/schema.js';
import { rayRunCommand } from '../../src/host-commands/launch.js';
import { rankRunCommand } from '../../src/host-commands/multiproc.js';
import { envTransport } from '../../src/host-commands/env-transport.js';
import { rankInput, rayContainerInput, type InputHost } from '../../src/host-commands/step-inputs.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

function specWith(ray: Record<string, unknown>, serve: Record<string, unknown> = {}): DeploySpec {
  const raw = structuredClone(example) as { ray: Record<string, unknown>; serve: Record<string, unknown> };
  Object.assign(raw.ray, ray);
  Object.assign(raw.serve, serve);
  return deploySpecSchema.parse(raw);
}

const host = (name: string, ip: string): InputHost => ({
  ref: { target: { name, host: ip, port: 22, user: 'aurora' } } as InputHost['ref'],
  clusterIp: ip,
});
const head = host('spark1', '192.168.200.12');

describe('ray.shmSize', () => {
  for (const shmSize of ['10g', '32g', undefined]) {
    it(`${shmSize ?? 'unset'}: the spec is valid, and the Ray container runs with --ipc host and no --shm-size`, () => {
      const spec = specWith(shmSize === undefined ? {} : { shmSize });
      const text = rayRunCommand(rayContainerInput(spec, 'l1', head), 'head', envTransport({})).text;
      assert.match(text, / --ipc host /);
      assert.doesNotMatch(text, /shm-size|32g/);
    });
  }

  it('a multiproc rank runs with --ipc host and no --shm-size either', () => {
    const spec = specWith({ shmSize: '32g' }, { backend: 'multiproc', masterPort: 29501 });
    const text = rankRunCommand(rankInput(spec, 'l1', head, 0, head), envTransport({}), 1).text;
    assert.match(text, / --ipc host /);
    assert.doesNotMatch(text, /shm-size|32g/);
  });

  it('a size that is not one is still refused, naming the field', () => {
    const r = deploySpecSchema.safeParse({
      ...example,
      ray: { ...(example.ray as object), shmSize: '10 GB' },
    });
    assert.equal(r.success, false);
    assert.deepEqual(r.success ? [] : r.error.issues.map((i) => i.path.join('.')), ['ray.shmSize']);
  });
});
