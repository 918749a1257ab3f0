// The worker's policy decides what a spec may make the worker reach: its known_hosts, keys, agent, the secrets
// folder and the variables `fromEnv` reads. A spec picks among them; anything else is refused, naming the field
// and the worker setting that would allow it, before anything connects or is read.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ApplicationFailure } from '@temporalio/common';
import {
  loadWorkerPolicy,
  readWorkerPolicyFile,
  WorkerPolicyError,
  workerPolicyFrom,
  type WorkerPolicy,
} from '../../src/config/worker-policy.js';
import {
  knownHostsWriteRefusal,
  policyRefusals,
  readSecretFile,
  type PolicySubject,
} from '../../src/config/policy-check.js';
import { bindWorkerPolicy, checkWorkerPolicy } from '../../src/activities/worker-policy.js';
import { resolveEnv } from '../../src/activities/secrets.js';
import { onHost } from '../../src/activities/ssh-context.js';
import { deploySpecSchema } from '../../src/config/schema.js';
import { liftoffArgv } from '../helpers/cli.js';

const root = mkdtempSync(join(tmpdir(), 'liftoff-policy-'));
const home = join(root, 'home');
const ssh = join(home, '.ssh');
const secrets = join(home, '.liftoff', 'secrets');
const elsewhere = join(root, 'planted');
mkdirSync(ssh, { recursive: true });
mkdirSync(secrets, { recursive: true });
mkdirSync(elsewhere, { recursive: true });
writeFileSync(join(ssh, 'known_hosts'), '');
writeFileSync(join(ssh, 'id_ed25519'), '');
writeFileSync(join(elsewhere, 'known_hosts'), '');
writeFileSync(join(secrets, 'hf_token'), 'hf-file-value\n');

const defaults = loadWorkerPolicy({}, home);

function subject(overrides: Partial<PolicySubject['ssh']> = {}, env: PolicySubject['serve'] = { env: {} }) {
  return {
    ssh: { knownHostsPath: '~/.ssh/known_hosts', privateKeyPath: '~/.ssh/id_ed25519', ...overrides },
    serve: env,
  };
}

function refusedFields(s: PolicySubject, policy: WorkerPolicy = defaults): string[] {
  return policyRefusals(s, policy, home).map((r) => r.field);
}

after(() => rmSync(root, { recursive: true, force: true }));

describe('the worker policy: shape and defaults', () => {
  it("defaults: ~/.ssh/known_hosts, OpenSSH's default key files, the agent, ~/.liftoff/secrets, three variables", () => {
    // Files, not the ~/.ssh folder: a folder would let a spec name ~/.ssh/authorized_keys as its known_hosts.
    assert.deepEqual(defaults.knownHosts, [join(ssh, 'known_hosts')]);
    assert.deepEqual(
      defaults.privateKeys,
      ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk'].map((k) => join(ssh, k)),
    );
    assert.equal(defaults.agent, true);
    assert.equal(defaults.secretsDir, secrets);
    assert.equal(defaults.maxSecretFileBytes, 65536);
    assert.deepEqual(defaults.fromEnv, ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'VLLM_API_KEY']);
    assert.deepEqual(defaults.sshRsaHostKeys, [], 'no host may sign with SHA-1');
    assert.match(defaults.source, /the defaults \(LIFTOFF_WORKER_POLICY is not set\)/);
  });

  it('a policy file widens them; a missing setting keeps its default; ~ is the worker home', () => {
    const file = join(root, 'policy.yaml');
    writeFileSync(file, 'knownHosts: [/etc/liftoff/known_hosts, ~/.ssh]\nfromEnv: [HF_TOKEN, MY_TOKEN]\n');
    const policy = loadWorkerPolicy({ LIFTOFF_WORKER_POLICY: file }, home);
    assert.deepEqual(policy.knownHosts, ['/etc/liftoff/known_hosts', ssh]);
    assert.deepEqual(policy.privateKeys, defaults.privateKeys);
    assert.deepEqual(policy.fromEnv, ['HF_TOKEN', 'MY_TOKEN']);
    assert.equal(policy.source, `${file} (LIFTOFF_WORKER_POLICY)`);
  });

  it('sshRsaHostKeys: a list of host addresses, or true for every host', () => {
    const file = join(root, 'sha1.yaml');
    writeFileSync(file, 'sshRsaHostKeys: [10.0.0.5, old-box.lan]\n');
    assert.deepEqual(readWorkerPolicyFile(file, home).sshRsaHostKeys, ['10.0.0.5', 'old-box.lan']);
    writeFileSync(file, 'sshRsaHostKeys: true\n');
    assert.equal(readWorkerPolicyFile(file, home).sshRsaHostKeys, true);
    writeFileSync(file, 'sshRsaHostKeys: false\n');
    assert.deepEqual(readWorkerPolicyFile(file, home).sshRsaHostKeys, []);
    writeFileSync(file, "sshRsaHostKeys: ['a b']\n");
    assert.throws(() => readWorkerPolicyFile(file, home), /sshRsaHostKeys\[0\]: expected a host address/);
  });

  it('a policy file cannot list LIFTOFF_* or TEMPORAL_* variables, nor unknown settings', () => {
    const file = join(root, 'bad.yaml');
    writeFileSync(file, 'fromEnv: [HF_TOKEN, LIFTOFF_PAYLOAD_KEY, TEMPORAL_API_KEY]\nknownHost: [/x]\n');
    assert.throws(
      () => readWorkerPolicyFile(file, home),
      (err: unknown) => {
        assert.ok(err instanceof WorkerPolicyError);
        assert.match(err.message, /fromEnv\[1\]: LIFTOFF_PAYLOAD_KEY is a liftoff or Temporal setting/);
        assert.match(err.message, /fromEnv\[2\]: TEMPORAL_API_KEY is a liftoff or Temporal setting/);
        assert.match(err.message, /knownHost/);
        return true;
      },
    );
    assert.throws(
      () => loadWorkerPolicy({ LIFTOFF_WORKER_POLICY: join(root, 'absent.yaml') }, home),
      /ENOENT/,
    );
  });
});

describe('the worker policy: what a spec may name', () => {
  it("the common spec (the worker user's ~/.ssh, HF_TOKEN) passes the defaults", () => {
    assert.deepEqual(refusedFields(subject({}, { env: { HF_TOKEN: { fromEnv: 'HF_TOKEN' } } })), []);
    assert.deepEqual(refusedFields(subject({ knownHostsPath: join(ssh, 'known_hosts') })), []);
  });

  it('a planted known_hosts, a key elsewhere, a path that climbs out, a link that leads out: refused', () => {
    symlinkSync(join(elsewhere, 'known_hosts'), join(ssh, 'linked_known_hosts'));
    const cases: [Partial<PolicySubject['ssh']>, string][] = [
      [{ knownHostsPath: join(elsewhere, 'known_hosts') }, 'ssh.knownHostsPath'],
      [{ knownHostsPath: '~/.ssh/../../planted/known_hosts' }, 'ssh.knownHostsPath'],
      [{ knownHostsPath: '~/.ssh/linked_known_hosts' }, 'ssh.knownHostsPath'],
      [{ knownHostsPath: '~/.sshx/known_hosts' }, 'ssh.knownHostsPath'],
      [{ privateKeyPath: join(elsewhere, 'id_ed25519') }, 'ssh.privateKeyPath'],
    ];
    for (const [ssh, field] of cases)
      assert.deepEqual(refusedFields(subject(ssh)), [field], JSON.stringify(ssh));
    const [refusal] = policyRefusals(subject(cases[0]![0]), defaults, home);
    assert.match(refusal?.message ?? '', /is not a known_hosts file this worker trusts \(knownHosts: /);
    assert.match(
      refusal?.message ?? '',
      /list it under knownHosts in a worker policy file named by LIFTOFF_WORKER_POLICY/,
    );
  });

  it('the defaults refuse the other files of ~/.ssh: authorized_keys as known_hosts, config or a .pub as a key', () => {
    const cases: [Partial<PolicySubject['ssh']>, string][] = [
      [{ knownHostsPath: '~/.ssh/authorized_keys' }, 'ssh.knownHostsPath'],
      [{ knownHostsPath: '~/.ssh/known_hosts2' }, 'ssh.knownHostsPath'],
      [{ privateKeyPath: '~/.ssh/config' }, 'ssh.privateKeyPath'],
      [{ privateKeyPath: '~/.ssh/id_ed25519.pub' }, 'ssh.privateKeyPath'],
    ];
    for (const [ssh, field] of cases)
      assert.deepEqual(refusedFields(subject(ssh)), [field], JSON.stringify(ssh));
    for (const key of ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk'])
      assert.deepEqual(refusedFields(subject({ privateKeyPath: `~/.ssh/${key}` })), [], key);
  });

  it('liftoff trust writes only to a known_hosts file the policy lists itself, not one in a listed folder', () => {
    assert.equal(knownHostsWriteRefusal('~/.ssh/known_hosts', defaults, home), undefined);
    assert.equal(knownHostsWriteRefusal('~/.ssh/../.ssh/known_hosts', defaults, home), undefined);
    assert.equal(knownHostsWriteRefusal(join(ssh, 'known_hosts'), defaults, home), undefined);
    const notListed = knownHostsWriteRefusal('~/.ssh/authorized_keys', defaults, home);
    assert.equal(notListed?.field, 'ssh.knownHostsPath');
    assert.match(
      notListed?.message ?? '',
      /^liftoff trust will not write to "~\/\.ssh\/authorized_keys": it is not a file the worker policy lists \(knownHosts: .*\.ssh\/known_hosts\)\. To pin keys there, list .*authorized_keys itself under knownHosts in a worker policy file named by LIFTOFF_WORKER_POLICY/,
    );

    // An operator's policy may list a folder: a spec may read any file in it, but trust writes to none of them.
    const folder: WorkerPolicy = { ...defaults, knownHosts: [ssh, join(elsewhere, 'known_hosts')] };
    assert.deepEqual(refusedFields(subject({ knownHostsPath: '~/.ssh/authorized_keys' }), folder), []);
    for (const path of ['~/.ssh/authorized_keys', '~/.ssh/known_hosts', '~/.ssh']) {
      const refusal = knownHostsWriteRefusal(path, folder, home);
      assert.match(
        refusal?.message ?? '',
        new RegExp(
          `the worker policy lists the folder ${ssh}, and liftoff trust writes only to a file the policy lists by its own path`,
        ),
        path,
      );
    }
    assert.equal(knownHostsWriteRefusal(join(elsewhere, 'known_hosts'), folder, home), undefined);
  });

  it('the agent only where the policy lends it', () => {
    const noAgent: WorkerPolicy = { ...defaults, agent: false };
    assert.deepEqual(refusedFields(subject({ useAgent: true }), noAgent), ['ssh.useAgent']);
    assert.deepEqual(refusedFields(subject({ useAgent: true })), []);
  });

  it('fromEnv: only listed variables; LIFTOFF_* and TEMPORAL_* never, even when a policy lists them', () => {
    // Built by hand: a policy file could not list them (see above).
    const listsThem: WorkerPolicy = {
      ...defaults,
      fromEnv: ['LIFTOFF_PAYLOAD_KEY', 'TEMPORAL_API_KEY', 'X'],
    };
    const env = {
      env: {
        HF_TOKEN: { fromEnv: 'LIFTOFF_PAYLOAD_KEY' },
        VLLM_API_KEY: { fromEnv: 'TEMPORAL_API_KEY' },
        OTHER_TOKEN: { fromEnv: 'liftoff_payload_key' },
        X: { fromEnv: 'X' },
      },
    };
    assert.deepEqual(refusedFields(subject({}, env), listsThem), [
      'serve.env.HF_TOKEN.fromEnv',
      'serve.env.VLLM_API_KEY.fromEnv',
      'serve.env.OTHER_TOKEN.fromEnv',
    ]);
    const [named] = policyRefusals(subject({}, { env: { A: { fromEnv: 'AWS_SECRET' } } }), defaults, home);
    assert.match(named?.message ?? '', /does not let specs read AWS_SECRET \(fromEnv: HF_TOKEN, /);
    assert.match(named?.message ?? '', /list AWS_SECRET under fromEnv in a worker policy file/);
  });

  it('a webhook URL given as a reference is held to the same rules', () => {
    const webhooks = {
      webhooks: [
        { url: 'https://hooks.example.com/plain' },
        { url: { fromEnv: 'LIFTOFF_PAYLOAD_KEY' } },
        { url: { fromEnv: 'HF_TOKEN' } },
        { url: { fromFile: join(elsewhere, 'known_hosts') } },
      ],
    };
    assert.deepEqual(refusedFields({ ...subject(), notify: webhooks }), [
      'notify.webhooks[1].url.fromEnv',
      'notify.webhooks[3].url.fromFile',
    ]);
  });

  it('fromFile: a regular file in the secrets folder, within the size cap, links followed', () => {
    writeFileSync(join(secrets, 'big'), 'x'.repeat(70_000));
    mkdirSync(join(secrets, 'folder'));
    execFileSync('mkfifo', [join(secrets, 'fifo')]);
    symlinkSync(join(ssh, 'id_ed25519'), join(secrets, 'key-link'));
    symlinkSync(join(secrets, 'hf_token'), join(secrets, 'inner-link'));
    const ref = (path: string) => ({ env: { HF_TOKEN: { fromFile: path } } });
    const ok = ['~/.liftoff/secrets/hf_token', join(secrets, 'inner-link'), join(secrets, 'not-there-yet')];
    for (const p of ok) assert.deepEqual(refusedFields(subject({}, ref(p))), [], p);
    const refused = [
      join(ssh, 'id_ed25519'),
      '~/.liftoff/secrets/../../.ssh/id_ed25519',
      join(secrets, 'key-link'),
      join(secrets, 'folder'),
      join(secrets, 'fifo'),
      join(secrets, 'big'),
      '/etc/passwd',
    ];
    for (const p of refused) {
      assert.deepEqual(refusedFields(subject({}, ref(p))), ['serve.env.HF_TOKEN.fromFile'], p);
    }
  });

  it('reading a secret file: the value without its newline; a FIFO or an oversized file is refused at once', async () => {
    assert.equal(await readSecretFile('~/.liftoff/secrets/hf_token', defaults, home), 'hf-file-value');
    const started = Date.now();
    await assert.rejects(readSecretFile(join(secrets, 'fifo'), defaults, home), /not a regular file/);
    await assert.rejects(readSecretFile(join(secrets, 'big'), defaults, home), /holds 70000 bytes/);
    assert.ok(Date.now() - started < 5000, 'a FIFO does not block the read');
  });
});

describe('the worker enforces it in its activities', () => {
  const policy = workerPolicyFrom({ secretsDir: secrets }, 'the test policy', home);

  it('the validate activity refuses a planted known_hosts and fromEnv LIFTOFF_PAYLOAD_KEY, naming both', async () => {
    const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;
    const spec = deploySpecSchema.parse({
      ...example,
      ssh: { user: 'aurora', knownHostsPath: join(elsewhere, 'known_hosts') },
      serve: {
        ...(example.serve as object),
        env: { HF_TOKEN: { fromEnv: 'LIFTOFF_PAYLOAD_KEY' } },
      },
    });
    await assert.rejects(bindWorkerPolicy(policy, checkWorkerPolicy)({ spec }), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure);
      assert.equal(err.type, 'InvalidSpec');
      assert.equal(err.nonRetryable, true);
      assert.match(
        err.message,
        /^refused by the worker policy \(the test policy\):\n {2}ssh\.knownHostsPath: /,
      );
      assert.match(
        err.message,
        /\n {2}serve\.env\.HF_TOKEN\.fromEnv: LIFTOFF_PAYLOAD_KEY is a liftoff or Temporal/,
      );
      return true;
    });
  });

  it('resolving a reference applies it too, whatever the environment holds', async () => {
    process.env.LIFTOFF_UNIT_POLICY_KEY = 'the-worker-own-secret';
    try {
      await assert.rejects(
        bindWorkerPolicy(policy, resolveEnv)({ HF_TOKEN: { fromEnv: 'LIFTOFF_UNIT_POLICY_KEY' } }),
        (err: unknown) => {
          assert.ok(err instanceof ApplicationFailure);
          assert.match(err.message, /HF_TOKEN\.fromEnv: LIFTOFF_UNIT_POLICY_KEY is a liftoff or Temporal/);
          assert.ok(!err.message.includes('the-worker-own-secret'));
          return true;
        },
      );
    } finally {
      delete process.env.LIFTOFF_UNIT_POLICY_KEY;
    }
    const resolved = await bindWorkerPolicy(
      policy,
      resolveEnv,
    )({ HF_TOKEN: { fromFile: join(secrets, 'hf_token') } });
    assert.equal(resolved.values.HF_TOKEN, 'hf-file-value');
  });

  it('an SSH connection with a known_hosts the policy refuses fails before it connects', async () => {
    const connectTo = bindWorkerPolicy(policy, () =>
      onHost(
        {
          // Port 1 on loopback: were the check missing, the error would be a refused connection instead.
          target: { name: 'planted', host: '127.0.0.1', port: 1, user: 'aurora' },
          auth: { knownHostsPath: join(elsewhere, 'known_hosts') },
        },
        () => Promise.resolve('connected'),
      ),
    );
    await assert.rejects(connectTo(), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, 'InvalidSpec');
      assert.match(err.message, /ssh\.knownHostsPath: .*planted\/known_hosts" is not a known_hosts file/);
      return true;
    });
  });
});

describe('liftoff validate applies the policy of the worker settings it runs with', () => {
  function validate(spec: unknown, env: Record<string, string>) {
    const file = join(root, `spec-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify(spec));
    const r = spawnSync(process.execPath, liftoffArgv(['validate', '-c', file]), {
      encoding: 'utf8',
      env: { ...process.env, HOME: home, ...env },
      timeout: 60_000,
    });
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  }
  const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

  it('refuses a planted known_hosts with exit 2, naming the field and the setting; passes it once the worker lists it', () => {
    const planted = { ...example, ssh: { user: 'aurora', knownHostsPath: join(elsewhere, 'known_hosts') } };
    const refused = validate(planted, {});
    assert.equal(refused.code, 2, refused.out);
    assert.match(refused.out, /refused by the worker policy \(the defaults/);
    assert.match(refused.out, /ssh\.knownHostsPath: .* list it under knownHosts/);

    const file = join(root, 'widened.yaml');
    writeFileSync(file, `knownHosts: [~/.ssh, ${JSON.stringify(join(elsewhere, 'known_hosts'))}]\n`);
    const allowed = validate(planted, { LIFTOFF_WORKER_POLICY: file });
    assert.equal(allowed.code, 0, allowed.out);
    assert.match(allowed.out, new RegExp(`worker policy: allowed by ${file}`));
    assert.equal(validate(example, {}).code, 0, 'the reference example passes the defaults');
  });
});
