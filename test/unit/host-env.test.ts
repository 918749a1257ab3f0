// Env names that steer the GPU host's shell or docker CLI are refused where a secret would put them in that
// shell's environment; `__proto__` is refused as any env name. Errors name the field.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema } from '../../src/config/schema.js';
import { formatIssues } from '../../src/config/errors.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

interface EnvSpec {
  ray: { env?: Record<string, unknown> };
  serve: { env?: Record<string, unknown> };
}

function check(mutate: (spec: EnvSpec) => void): string | undefined {
  const spec = structuredClone(example) as unknown as EnvSpec;
  mutate(spec);
  const r = deploySpecSchema.safeParse(spec);
  return r.success ? undefined : formatIssues(r.error);
}

const steering = [
  'PATH',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'DOCKER_HOST',
  'DOCKER_CONFIG',
  'HOME',
  'IFS',
  'ENV',
  'BASH_ENV',
  'SHELL',
];

describe('env names that steer the host shell or docker CLI', () => {
  for (const name of steering) {
    it(`${name} as a secret reference's variable is refused, naming the field`, () => {
      const said = check((s) => (s.serve.env = { ...s.serve.env, HF_TOKEN: { fromEnv: name } }));
      assert.ok(said, 'refused');
      assert.match(said, /serve\.env\.HF_TOKEN\.fromEnv/);
      assert.match(said, new RegExp(`${name} steers the GPU host's shell or docker CLI`));
    });

    it(`${name} as the env name of a secret reference is refused in ray.env and serve.env`, () => {
      for (const field of ['ray', 'serve'] as const) {
        const said = check(
          (s) => (s[field].env = { ...s[field].env, [name]: { fromFile: '/run/secrets/x' } }),
        );
        assert.ok(said, `${field}: refused`);
        assert.match(said, new RegExp(`${field}\\.env\\.${name}`));
      }
    });
  }

  it('a plain value under such a name goes to the container only (-e K=V) and stays allowed', () => {
    assert.equal(
      check((s) => (s.ray.env = { ...s.ray.env, LD_LIBRARY_PATH: '/usr/local/cuda/lib64' })),
      undefined,
    );
  });

  it('a secret-looking name under a steering prefix is refused even with an empty value', () => {
    assert.match(
      check((s) => (s.ray.env = { ...s.ray.env, DOCKER_AUTH_TOKEN: '' })) ?? '',
      /ray\.env\.DOCKER_AUTH_TOKEN/,
    );
  });

  it('other names are fine as references', () => {
    assert.equal(
      check((s) => (s.serve.env = { ...s.serve.env, HF_TOKEN: { fromEnv: 'HF_TOKEN' } })),
      undefined,
    );
  });
});

describe('__proto__ as an env name', () => {
  it('is refused, from JSON or YAML, with a plain value or a reference', () => {
    for (const value of ['"x"', '{"fromEnv":"HF_TOKEN"}']) {
      const said = check((s) => {
        s.ray.env = JSON.parse(`{"__proto__": ${value}}`) as Record<string, unknown>;
      });
      assert.ok(said, `refused (${value})`);
      assert.match(said, /__proto__/);
    }
    const fromYaml = parse('env:\n  __proto__: x\n') as { env: Record<string, unknown> };
    assert.ok(check((s) => (s.serve.env = fromYaml.env)));
  });
});

describe('an absent env', () => {
  it('is still allowed in ray and serve, and reads as {} (the key check in front must not make it required)', () => {
    assert.equal(
      check((s) => {
        delete s.ray.env;
        delete s.serve.env;
      }),
      undefined,
    );
    const spec = structuredClone(example) as unknown as EnvSpec;
    delete spec.ray.env;
    delete spec.serve.env;
    const parsed = deploySpecSchema.parse(spec);
    assert.deepEqual([parsed.ray.env, parsed.serve.env], [{}, {}]);
  });
});
