// What a secret is (src/shared/secrets.ts): the env-name and flag rules, the value shapes, the redaction of text,
// and that the schema refuses exactly the serve args the report redacts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parse } from 'yaml';
import {
  credentialShape,
  credentialShapedValues,
  isSecretEnvName,
  isSecretFlag,
  redactDeep,
  redactedMarker,
  redactText,
  secretArgs,
  secretEnvValues,
  secretsOfSpec,
} from '../../src/shared/secrets.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { redactSpec } from '../../src/report/redact-spec.js';
import { sh } from '../../src/ssh/quote.js';

describe('secretEnvValues', () => {
  it('picks the values of variables whose names look like credentials, whatever their case', () => {
    const env = {
      HF_TOKEN: 'hf_abcdef123',
      OPENAI_API_KEY: 'sk-xyz',
      aws_secret_access_key: 'AKIA/secret',
      DB_PASSWORD: 'hunter2',
      NCCL_SOCKET_IFNAME: 'enp1s0f1np1',
      RAY_memory_monitor_refresh_ms: '0',
      VLLM_ENGINE_READY_TIMEOUT_S: '1800',
      EMPTY_TOKEN: '',
    };
    assert.deepEqual(secretEnvValues(env).sort(), ['AKIA/secret', 'hf_abcdef123', 'hunter2', 'sk-xyz']);
  });

  it('tolerates no env, and skips references', () => {
    assert.deepEqual(secretEnvValues(undefined), []);
    assert.deepEqual(secretEnvValues({}), []);
    assert.deepEqual(secretEnvValues({ HF_TOKEN: { fromEnv: 'HF_TOKEN' } }), []);
  });

  it('names', () => {
    assert.equal(isSecretEnvName('HUGGING_FACE_HUB_TOKEN'), true);
    assert.equal(isSecretEnvName('SSH_PASSWD'), true);
    assert.equal(isSecretEnvName('GOOGLE_APPLICATION_CREDENTIALS'), true);
    assert.equal(isSecretEnvName('GLOO_SOCKET_IFNAME'), false);
  });
});

// Real vllm serve flags (a sample, including every one that mentions a credential word) and those that take a
// credential. Used to check the prefix rule the way vllm's parser resolves a spelling.
const vllmFlags = [
  'allow-credentials',
  'allowed-headers',
  'allowed-methods',
  'allowed-origins',
  'api-key',
  'api-server-count',
  'chat-template',
  'data-parallel-size',
  'disable-fastapi-docs',
  'disable-log-stats',
  'disable-uvicorn-access-log',
  'distributed-executor-backend',
  'download-dir',
  'dtype',
  'enable-auto-tool-choice',
  'enable-prompt-tokens-details',
  'enforce-eager',
  'gpu-memory-utilization',
  'hf-config-path',
  'hf-overrides',
  'hf-token',
  'host',
  'kv-cache-dtype',
  'kv-transfer-config',
  'load-format',
  'long-prefill-token-threshold',
  'max-model-len',
  'max-num-batched-tokens',
  'max-num-seqs',
  'model',
  'pipeline-parallel-size',
  'port',
  'quantization',
  'return-tokens-as-token-ids',
  'revision',
  'root-path',
  'seed',
  'served-model-name',
  'skip-tokenizer-init',
  'ssl-ca-certs',
  'ssl-cert-reqs',
  'ssl-certfile',
  'ssl-keyfile',
  'tensor-parallel-size',
  'tokenizer',
  'tokenizer-mode',
  'tool-call-parser',
  'trust-remote-code',
];
const vllmSecretFlags = new Set(['api-key', 'hf-token', 'ssl-keyfile']);

/** The flag vllm's parser reads a spelling as: `_` as `-`, an exact name or an unambiguous prefix. */
function vllmResolves(spelling: string): string | undefined {
  const name = spelling.replace(/^--/, '').replace(/=.*$/s, '').replaceAll('_', '-');
  if (vllmFlags.includes(name)) return name;
  const candidates = vllmFlags.filter((f) => f.startsWith(name));
  return candidates.length === 1 ? candidates[0] : undefined;
}

describe('isSecretFlag', () => {
  const secret = [
    '--api-key',
    '--api_key=S',
    '--API-KEY',
    '--api-k=S',
    '--api-ke',
    '--hf_token',
    '--hf-token',
    '--hf-t',
    '--credentials=x',
    '--key-file',
    '--ssl-keyfile',
    '--ssl-k',
    '--ssl_KEYFILE=/etc/key.pem',
    '-api-key',
    '--key',
    '--token',
    '--password',
    '--aws-secret',
    '--apikey',
    '--openai_api_key=sk',
    '--token-file',
    '--db-password-path',
    '--credential',
  ];
  const notSecret = [
    '--api',
    '--api-',
    '--api-server-count',
    '--api-server-count=2',
    '--hf',
    '--hf-',
    '--hf-overrides',
    '--ssl',
    '--ssl-certfile',
    '--max-model-len',
    '--max_model_len=32768',
    '--tensor-parallel-size',
    '--served-model-name',
    '--kv-cache-dtype',
    '--max-num-batched-tokens',
    '--tokenizer',
    '--tokenizer-mode',
    '--skip-tokenizer-init',
    '--return-tokens-as-token-ids',
    '--long-prefill-token-threshold',
    '--enable-prompt-tokens-details',
    '--allow-credentials',
    '--key-cache',
    '--port',
    '--cred',
    'api-key',
    'sk-not-a-flag',
    '',
  ];
  for (const arg of secret) it(`${arg} is a secret flag`, () => assert.equal(isSecretFlag(arg), true));
  for (const arg of notSecret)
    it(`${JSON.stringify(arg)} is not`, () => assert.equal(isSecretFlag(arg), false));

  it('every spelling vllm reads as a credential flag is secret; every real flag name that is not, is not', () => {
    const spelling = fc
      .tuple(
        fc.constantFrom(...vllmFlags),
        fc.nat(),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        fc.constantFrom('', '=S', '=', '=a=b'),
      )
      .map(([flag, cut, upper, underscore, suffix]) => {
        const prefix = flag.slice(0, 1 + (cut % flag.length));
        const written = [...prefix]
          .map((ch, i) => (ch === '-' && underscore[i] ? '_' : upper[i] ? ch.toUpperCase() : ch))
          .join('');
        return { flag, prefix, arg: `--${written}${suffix}` };
      });
    fc.assert(
      fc.property(spelling, ({ flag, prefix, arg }) => {
        const resolved = vllmResolves(arg.toLowerCase());
        if (resolved !== undefined && vllmSecretFlags.has(resolved))
          assert.equal(isSecretFlag(arg), true, arg);
        if (prefix === flag && !vllmSecretFlags.has(flag)) assert.equal(isSecretFlag(arg), false, arg);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('secretArgs', () => {
  it('finds the value after = or in the next argument, never a following flag', () => {
    assert.deepEqual(secretArgs(['--api-ke', 'S', '--port', '8000']), [
      { index: 1, value: 'S', inline: false },
    ]);
    assert.deepEqual(secretArgs(['--api_key=S=T']), [{ index: 0, value: 'S=T', inline: true }]);
    assert.deepEqual(secretArgs(['--hf-token', '--port', '8000']), []);
    assert.deepEqual(secretArgs(['--hf-token', '--a b']), [{ index: 1, value: '--a b', inline: false }]);
    assert.deepEqual(secretArgs(['--api-key=', '--api-key']), []);
    assert.deepEqual(secretArgs(['--max-model-len', '32768', 3, '--key-file', 7]), []);
  });
});

describe('secretsOfSpec', () => {
  it('collects literal secret env values and secret flag values, not references', () => {
    const spec = {
      ray: { env: { HF_TOKEN: 'hf_literal', NCCL_DEBUG: 'INFO' } },
      serve: {
        env: { VLLM_API_KEY: { fromEnv: 'VLLM_API_KEY' }, DB_PASSWORD: 'pw' },
        args: ['--max-model-len', '8192', '--api_key=k1', '--hf-t', 't2', '--credentials=c3'],
      },
    };
    assert.deepEqual(secretsOfSpec(spec).sort(), ['c3', 'hf_literal', 'k1', 'pw', 't2']);
    assert.deepEqual(secretsOfSpec(null), []);
    assert.deepEqual(secretsOfSpec({ serve: { args: 'not a list' } }), []);
  });
});

describe('redactText', () => {
  it('replaces every occurrence of each secret', () => {
    const text = 'HF_TOKEN=hf_abc123 failed; retry with hf_abc123 and sk-1';
    assert.equal(
      redactText(text, ['hf_abc123', 'sk-1']),
      `HF_TOKEN=${redactedMarker} failed; retry with ${redactedMarker} and ${redactedMarker}`,
    );
  });

  it('leaves text alone without secrets, and ignores empty ones', () => {
    assert.equal(redactText('nothing to hide', []), 'nothing to hide');
    assert.equal(redactText('nothing to hide', ['']), 'nothing to hide');
  });

  it('replaces a secret that contains another whole, and never rewrites the marker', () => {
    assert.equal(redactText('key=abcdef', ['abc', 'abcdef']), `key=${redactedMarker}`);
    assert.equal(redactText('x=redact', ['red', 'redact']), `x=${redactedMarker}`);
    assert.equal(redactText('a red fox', ['red', 'act']), `a ${redactedMarker} fox`);
  });

  it('treats regex metacharacters in secrets literally', () => {
    assert.equal(redactText('p=a.b*c(d)$1 and axbbc', ['a.b*c(d)$1']), `p=${redactedMarker} and axbbc`);
  });

  it('finds a secret inside a shell-quoted command and inside JSON', () => {
    const secret = `it's "quoted" \\ here`;
    const command = sh`docker run -e ${`HF_TOKEN=${secret}`} image`.text;
    assert.ok(!command.includes(secret), 'the shell form differs from the raw value');
    assert.ok(!redactText(command, [secret]).includes("it'\\''s"));
    assert.match(redactText(command, [secret]), /\[redacted\]/);
    const json = JSON.stringify({ env: { HF_TOKEN: secret } });
    assert.equal(redactText(json, [secret]), `{"env":{"HF_TOKEN":"${redactedMarker}"}}`);
  });

  it('redacts values shaped like credentials whatever names them', () => {
    const cases: [string, string][] = [
      ['token hf_abcdefghijklmnop1234 in a log', `token ${redactedMarker} in a log`],
      ['OPENAI says sk-proj-abcdefghijklmnop_12 is wrong', `OPENAI says ${redactedMarker} is wrong`],
      ['pull https://bob:hunter2@example.com/m.git', `pull https://bob:${redactedMarker}@example.com/m.git`],
      ['{"u":"s3://id:key@bucket/x","v":"a@b"}', `{"u":"s3://id:${redactedMarker}@bucket/x","v":"a@b"}`],
    ];
    for (const [text, want] of cases) {
      assert.equal(redactText(text, []), want, text);
      // What redaction hides by its shape, the schema refuses: the same rule.
      assert.notEqual(credentialShape(text), undefined, text);
    }
    for (const text of [
      'HF_TOKEN is not set',
      'hf_short',
      'sk-1 and task-0123456789abcdefghij',
      'http://host:8000/v1/models',
      'mail bob@example.com',
    ]) {
      assert.equal(redactText(text, []), text, text);
      assert.equal(credentialShape(text), undefined, text);
    }
  });

  it('finds every credential-shaped string of a structure, with its path', () => {
    assert.deepEqual(
      credentialShapedValues({
        serve: { env: { A: 'x', B: 'hf_abcdefghijklmnop1234' }, args: ['--x', 'sk-abcdefghijklmnop_12'] },
        notify: { webhooks: [{ url: 'https://u:p@h/x' }] },
        n: 3,
      }),
      [
        { path: ['serve', 'env', 'B'], kind: 'a Hugging Face token (hf_…)' },
        { path: ['serve', 'args', 1], kind: 'an API key (sk-…)' },
        { path: ['notify', 'webhooks', 0, 'url'], kind: 'a password in a URL (scheme://user:password@host)' },
      ],
    );
  });

  it('redacts the values of secret flags in command lines and in vllm’s non-default args line', () => {
    assert.equal(
      redactText("vllm serve m --api_key=S1 --hf-t 'T2' --max-model-len 4096 --hf-token --port 8000", []),
      `vllm serve m --api_key=${redactedMarker} --hf-t ${redactedMarker} --max-model-len 4096 --hf-token --port 8000`,
    );
    assert.equal(
      redactText(
        "non-default args: {'model': 'Q/m', 'api_key': ['S1'], 'hf_token': 'T2', 'tokenizer': 'Q/t'}",
        [],
      ),
      `non-default args: {'model': 'Q/m', 'api_key': ['${redactedMarker}'], 'hf_token': '${redactedMarker}', 'tokenizer': 'Q/t'}`,
    );
    // A message that names a flag in quotes keeps its next word.
    assert.equal(redactText('"--api-key" takes a credential', []), '"--api-key" takes a credential');
  });

  it('never leaves a secret in the output (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.string({ maxLength: 20 }),
        fc.string({ maxLength: 20 }),
        (secret, before, after) => {
          // A secret made of the marker's characters could be recreated by markers side by side.
          fc.pre(![...secret].some((ch) => redactedMarker.includes(ch)));
          const out = redactText(`${before}${secret}${after}${secret}`, [secret]);
          return !out.includes(secret);
        },
      ),
    );
  });

  it('redactDeep redacts every string and keeps the structure', () => {
    const value = { a: ['x S y', 3, null], b: { c: 'S' }, d: true };
    assert.deepEqual(redactDeep(value, ['S']), {
      a: [`x ${redactedMarker} y`, 3, null],
      b: { c: redactedMarker },
      d: true,
    });
  });
});

describe('the schema refuses exactly the serve args the report redacts', () => {
  const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as {
    serve: { args: string[] };
  };
  const value = 'v4lue-Of-The-Flag';

  function check(flag: string, inline: boolean): void {
    const spec = structuredClone(example);
    const at = spec.serve.args.length;
    spec.serve.args.push(...(inline ? [`${flag}=${value}`] : [flag, value]));
    const parsed = deploySpecSchema.safeParse(spec);
    const refusedAt = parsed.success
      ? []
      : parsed.error.issues.filter((i) => i.path.join('.') === `serve.args.${at}`).map((i) => i.message);
    const { report, secrets } = redactSpec(spec);
    const redacted = report.redactedFields.some((f) => f.startsWith('serve.args['));
    assert.equal(refusedAt.length > 0, redacted, `${flag} (${inline ? '=value' : 'value next'})`);
    if (redacted) {
      assert.ok(!JSON.stringify(report.effective).includes(value), flag);
      assert.ok(secrets.includes(value), flag);
      assert.match(refusedAt[0] ?? '', /serve\.env\.VLLM_API_KEY: \{ fromEnv: VLLM_API_KEY \}.*fromFile/);
      assert.ok(!(refusedAt[0] ?? '').includes(value), 'the message never quotes the value');
    }
  }

  it('the two known disagreements: --credentials=x and --key-file', () => {
    for (const flag of ['--credentials', '--key-file']) {
      check(flag, true);
      check(flag, false);
      assert.equal(isSecretFlag(flag), true);
    }
  });

  it('for generated flag spellings (property)', () => {
    const words = [
      'api',
      'key',
      'hf',
      'token',
      'ssl',
      'keyfile',
      'file',
      'credentials',
      'max',
      'model',
      'len',
    ];
    const spelling = fc
      .array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 })
      .chain((ws) =>
        fc.tuple(
          fc.constant(ws.join('-')),
          fc.nat({ max: ws.join('-').length - 1 }),
          fc.constantFrom('-', '_'),
          fc.boolean(),
        ),
      )
      .map(([name, cut, sep, upper]) => {
        const cutName = name.slice(0, name.length - cut).replaceAll('-', sep);
        return `--${upper ? cutName.toUpperCase() : cutName}`;
      });
    fc.assert(
      fc.property(spelling, fc.boolean(), (flag, inline) => check(flag, inline)),
      { numRuns: 300 },
    );
  });
});
