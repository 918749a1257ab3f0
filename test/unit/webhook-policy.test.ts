// Where a spec's webhooks may go, judged without sending anything: the inside address ranges, the worker
// policy's `webhooks:` origins, a literal URL refused at validation (`liftoff validate` included) naming the
// field and the fix, at most 10 webhooks, token-bearing URLs only as secret references, and reports that show
// a webhook by its origin alone. What the activity does when it connects: webhook.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { insideAddress } from '../../src/config/webhook-policy.js';
import { workerPolicyFrom, workerPolicySettingsSchema } from '../../src/config/worker-policy.js';
import { policyRefusals } from '../../src/config/policy-check.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { formatIssues } from '../../src/config/errors.js';
import { redactSpec as reportSpec } from '../../src/report/redact-spec.js';
import { redactSpec as scheduleSpec } from '../../src/commands/schedule/common.js';
import { cutUrlsInText } from '../../src/shared/webhook-shown.js';
import { redactText } from '../../src/shared/secrets.js';
import { ApplicationFailure } from '@temporalio/common';
import { bindWorkerPolicy, checkWorkerPolicy } from '../../src/activities/worker-policy.js';
import { liftoffArgv } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;
const withHooks = (webhooks: unknown[]) => ({ ...example, notify: { webhooks } });
const ssh = { knownHostsPath: '~/.ssh/known_hosts' };

describe('inside addresses', () => {
  it('loopback, link-local, private, ULA, CGNAT, unspecified, multicast and metadata, IPv4-mapped too', () => {
    const cases: Array<[string, string | undefined]> = [
      ['127.0.0.1', '127.0.0.0/8'],
      ['::1', '::1/128'],
      ['169.254.169.254', '169.254.169.254/32'],
      ['::ffff:169.254.169.254', '169.254.169.254/32'],
      ['::ffff:a9fe:a9fe', '169.254.169.254/32'],
      ['fd00:ec2::254', 'fd00:ec2::254/128'],
      ['169.254.1.1', '169.254.0.0/16'],
      ['fe80::1', 'fe80::/10'],
      ['10.0.0.1', '10.0.0.0/8'],
      ['172.31.255.255', '172.16.0.0/12'],
      ['192.168.1.1', '192.168.0.0/16'],
      ['::ffff:10.0.0.1', '10.0.0.0/8'],
      ['fd12:3456::1', 'fc00::/7'],
      ['100.64.0.1', '100.64.0.0/10'],
      ['0.0.0.0', '0.0.0.0/8'],
      ['::', '::/128'],
      ['224.0.0.1', '224.0.0.0/4'],
      ['ff02::1', 'ff00::/8'],
      ['::ffff:127.0.0.1', '127.0.0.0/8'],
      ['64:ff9b::a9fe:a9fe', '64:ff9b::/96'],
      ['8.8.8.8', undefined],
      ['::ffff:8.8.8.8', undefined],
      ['2606:4700::1111', undefined],
      ['172.32.0.1', undefined],
    ];
    for (const [address, range] of cases) assert.equal(insideAddress(address)?.range, range, address);
  });
});

describe('the worker policy: webhooks', () => {
  it('lists origins, kept as URL.origin writes them; anything more than an origin is refused', () => {
    const ok = workerPolicySettingsSchema.parse({
      webhooks: ['http://127.0.0.1:9000', 'https://Hooks.Internal.Example:443/', 'http://[::1]:8080'],
    });
    assert.deepEqual(ok.webhooks, [
      'http://127.0.0.1:9000',
      'https://hooks.internal.example',
      'http://[::1]:8080',
    ]);
    for (const bad of [
      'http://127.0.0.1:9000/hook',
      'ftp://x',
      'https://h.example?x=1',
      'https://u@h.example',
      '*',
    ]) {
      const r = workerPolicySettingsSchema.safeParse({ webhooks: [bad] });
      assert.equal(r.success, false, bad);
      assert.match(r.success ? '' : formatIssues(r.error), /webhooks\[0\]: .*is not a webhook origin/);
    }
    assert.deepEqual(workerPolicyFrom({}, 'defaults').webhooks, [], 'none by default');
  });

  it('a literal URL is refused at validation unless https to a public address or a listed origin', () => {
    const defaults = workerPolicyFrom({}, 'defaults');
    const refusals = (url: string, policy = defaults) =>
      policyRefusals(
        { ssh, notify: { webhooks: [{ url: 'https://hooks.example.com/ok' }, { url }] } },
        policy,
      );
    for (const [url, why] of [
      [
        'http://127.0.0.1:9000/hook',
        /plain http:\/\/ goes only to the origins the worker lists \(webhooks: none\)/,
      ],
      ['http://hooks.example.com/x', /plain http:\/\//],
      ['https://10.0.0.1/x', /resolves to a private address \(10\.0\.0\.0\/8 is not allowed\)/],
      ['https://169.254.169.254/latest', /resolves to the cloud metadata address/],
      ['https://[::ffff:169.254.169.254]/x', /resolves to the cloud metadata address/],
      ['https://[fd00:ec2::254]/x', /resolves to the cloud metadata address/],
      ['https://0x7f.1:8443/x', /resolves to a loopback address/],
      ['https://100.64.1.1/x', /shared \(CGNAT\)/],
    ] as const) {
      const [only, ...more] = refusals(url);
      assert.equal(more.length, 0, url);
      assert.equal(only?.field, 'notify.webhooks[1].url', url);
      assert.match(only?.message ?? '', why, url);
      assert.match(
        only?.message ?? '',
        /\blist \S+ under webhooks in a worker policy file named by LIFTOFF_WORKER_POLICY/,
      );
      assert.doesNotMatch(only?.message ?? '', /\/(hook|x|latest)\b/, 'the path is never shown');
    }
    const listing = workerPolicyFrom({ webhooks: ['http://127.0.0.1:9000', 'https://10.0.0.1'] }, 'the test');
    assert.deepEqual(refusals('http://127.0.0.1:9000/hook', listing), []);
    assert.deepEqual(refusals('https://10.0.0.1/x', listing), []);
    assert.equal(refusals('http://127.0.0.1:9001/hook', listing).length, 1, 'another port is another origin');
    // A name is judged when the worker resolves it (webhook.test.ts): validation cannot know its addresses.
    assert.deepEqual(refusals('https://hooks.example.com/x'), []);
  });

  it("the deploy's validate step refuses it on the worker, before anything starts", async () => {
    const spec = deploySpecSchema.parse(withHooks([{ url: 'http://169.254.169.254/latest/meta-data' }]));
    const err = await bindWorkerPolicy(
      workerPolicyFrom({}, 'the defaults'),
      checkWorkerPolicy,
    )({ spec }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, 'InvalidSpec');
    assert.equal(err.nonRetryable, true);
    assert.match(
      err.message,
      /\n {2}notify\.webhooks\[0\]\.url: the webhook at http:\/\/169\.254\.169\.254 is refused/,
    );
    assert.doesNotMatch(err.message, /meta-data/);
  });
});

describe('the spec: webhooks', () => {
  const errors = (spec: unknown) => {
    const r = deploySpecSchema.safeParse(spec);
    return r.success ? '' : formatIssues(r.error);
  };

  it('at most 10 webhooks a spec', () => {
    const hooks = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ url: `https://hooks.example.com/${i}` }));
    assert.equal(errors(withHooks(hooks(10))), '');
    assert.match(
      errors(withHooks(hooks(11))),
      /^ {2}notify\.webhooks: 11 webhooks; a spec may have at most 10/,
    );
  });

  it('a token-bearing URL written literally is refused, naming the field and the reference to write', () => {
    for (const url of [
      'https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX',
      'https://discord.com/api/webhooks/1234/abcdef',
      'https://discordapp.com/api/webhooks/1234/abcdef',
      'https://contoso.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d',
      'https://prod-1.westus.logic.azure.com:443/workflows/w/triggers/manual/paths/invoke?api-version=1&sig=abc',
    ]) {
      const text = errors(withHooks([{ url: 'https://hooks.example.com/ok' }, { url }]));
      assert.match(text, /^ {2}notify\.webhooks\[1\]\.url: looks like a .*URL/, url);
      assert.match(text, /Reference the URL instead: url: \{ fromEnv: NAME \}/, url);
      assert.ok(!text.includes(url), 'the error does not repeat the URL');
    }
    assert.equal(errors(withHooks([{ url: { fromEnv: 'SLACK_WEBHOOK_URL' } }])), '');
    assert.equal(errors(withHooks([{ url: 'https://prod-1.westus.logic.azure.com/workflows/w' }])), '');
  });
});

describe('reports show a webhook by its origin', () => {
  const spec = withHooks([
    { url: 'https://hooks.example.com/T1/secret-path?token=q' },
    { url: 'https://hooks.example.com' },
    { url: { fromEnv: 'HOOK' } },
  ]);

  it('the postmortem and schedule describe cut each literal URL to its origin', () => {
    const { report, secrets } = reportSpec(spec);
    const shown = JSON.stringify(report.effective);
    assert.ok(!shown.includes('secret-path'), shown);
    assert.match(shown, /"url":"https:\/\/hooks\.example\.com\/\[redacted\]"/);
    assert.match(shown, /"url":"https:\/\/hooks\.example\.com"/);
    assert.match(shown, /"url":\{"fromEnv":"HOOK"\}/);
    assert.deepEqual(report.redactedFields, ['notify.webhooks[0].url']);
    assert.ok(secrets.includes('https://hooks.example.com/T1/secret-path?token=q'), 'redacted elsewhere too');
    const scheduled = JSON.stringify(scheduleSpec(deploySpecSchema.parse(spec)));
    assert.ok(!scheduled.includes('secret-path'), scheduled);
    assert.match(scheduled, /https:\/\/hooks\.example\.com\/\[redacted\]/);
    // A notification's own input (a postmortem of a notify workflow) holds the webhooks at its top level.
    const notifyInput = {
      cluster: 'c',
      event: 'lost',
      webhooks: [{ url: 'https://h.example.com/secret-path' }],
    };
    assert.deepEqual(reportSpec(notifyInput).report.effective, {
      ...notifyInput,
      webhooks: [{ url: 'https://h.example.com/[redacted]' }],
    });
  });

  it('notification errors and text show at most the origin', () => {
    assert.equal(
      cutUrlsInText('webhook 1: POST to https://u:p@Hooks.Example.com:8443/a/b?c=d failed'),
      'webhook 1: POST to https://hooks.example.com:8443/[redacted] failed',
    );
    assert.equal(
      redactText('posting to https://hooks.slack.com/services/T0/B0/XXXX failed', []),
      'posting to https://hooks.slack.com/[redacted] failed',
    );
  });
});

describe('liftoff validate: webhooks against the worker policy', () => {
  const root = tempDir('liftoff-webhook-policy-');
  const home = join(root, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'known_hosts'), '');
  writeFileSync(join(home, '.ssh', 'id_ed25519'), '');

  function validate(spec: unknown, env: Record<string, string> = {}) {
    const file = join(root, `spec-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify(spec));
    const r = spawnSync(process.execPath, liftoffArgv(['validate', '-c', file]), {
      encoding: 'utf8',
      env: { ...process.env, HOME: home, LIFTOFF_WORKER_POLICY: '', ...env },
      timeout: 60_000,
    });
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  }

  it('refuses an unlisted http://127.0.0.1 webhook with exit 2, naming the field and the fix; passes once listed', () => {
    const spec = withHooks([{ url: 'http://127.0.0.1:9000/hook' }]);
    const refused = validate(spec);
    assert.equal(refused.code, 2, refused.out);
    assert.match(
      refused.out,
      /notify\.webhooks\[0\]\.url: the webhook at http:\/\/127\.0\.0\.1:9000 is refused: .*list http:\/\/127\.0\.0\.1:9000 under webhooks in a worker policy file/,
    );
    const policyFile = join(root, 'worker-policy.yaml');
    writeFileSync(policyFile, 'webhooks: [http://127.0.0.1:9000]\n');
    const listed = validate(spec, { LIFTOFF_WORKER_POLICY: policyFile });
    assert.equal(listed.code, 0, listed.out);
    const tooMany = validate(
      withHooks(Array.from({ length: 11 }, (_, i) => ({ url: `https://hooks.example.com/${i}` }))),
    );
    assert.equal(tooMany.code, 2, tooMany.out);
    assert.match(tooMany.out, /notify\.webhooks: 11 webhooks; a spec may have at most 10/);
  });
});
