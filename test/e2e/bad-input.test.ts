// Issue 6, spec validation: every invalid spec is refused with a field path, by the CLI before it contacts
// Temporal and by the deploy workflow when the spec arrives from the UI, before any activity, child workflow or
// SSH connection. The specs are mutations of a valid spec for a real simulated cluster, so a spec that slipped
// through would reach live sshds and show up in their login counts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { WorkflowNotFoundError } from '@temporalio/client';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { invalidSpecPrefix, startAsUiExpectInvalidSpec } from '../helpers/ui-start.js';
import { buildProgram } from '../../src/commands/index.js';
import { deploySpecSchema, type DeploySpec } from '../../src/config/schema.js';
import { parseDuration } from '../../src/config/duration.js';
import { modelPathFor } from '../../src/config/derive.js';
import { deployWorkflowId, TASK_QUEUE } from '../../src/shared/constants.js';
import { countSshHandshakes } from '../../sim/cluster.js';
import { simDeploySpec } from '../../sim/spec.js';
import { liftoffArgv } from '../helpers/cli.js';

const stateDir = '/tmp/liftoff-test-bad-input';
const clusterName = 'bad-input';
const uiIdPrefix = 'bad-input-ui-';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type Path = (string | number)[];

interface Mutation {
  label: string;
  apply: (spec: JsonObject) => void;
}

interface InvalidCase {
  label: string;
  spec: Json;
  /** A field path the error must name (formatPath syntax), when the case fixes one. */
  expectedPath?: string;
}

function clone<T extends Json>(value: T): T {
  return structuredClone(value);
}

function at(root: Json, path: Path): Json | undefined {
  let node: Json | undefined = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = Array.isArray(node) ? node[key as number] : node[String(key)];
  }
  return node;
}

function parentOf(root: Json, path: Path): { parent: Json[] | JsonObject; key: string | number } {
  const parent = at(root, path.slice(0, -1));
  const key = path[path.length - 1];
  if (parent === null || typeof parent !== 'object' || key === undefined)
    throw new Error(`no container at ${JSON.stringify(path)}`);
  return { parent, key };
}

function setAt(root: Json, path: Path, value: Json): void {
  const { parent, key } = parentOf(root, path);
  if (Array.isArray(parent)) parent[key as number] = value;
  else parent[String(key)] = value;
}

function deleteAt(root: Json, path: Path): void {
  const { parent, key } = parentOf(root, path);
  if (Array.isArray(parent)) parent.splice(key as number, 1);
  else delete parent[String(key)];
}

function obj(spec: JsonObject, ...path: Path): JsonObject {
  const node = at(spec, path);
  if (node === null || typeof node !== 'object' || Array.isArray(node))
    throw new Error(`${path.join('.')} is not an object`);
  return node;
}

function list(spec: JsonObject, ...path: Path): Json[] {
  const node = at(spec, path);
  if (!Array.isArray(node)) throw new Error(`${path.join('.')} is not a list`);
  return node;
}

/** Every path in the spec, containers included (so a whole section can be deleted or replaced). */
function allPaths(node: Json, prefix: Path = []): Path[] {
  if (node === null || typeof node !== 'object') return [];
  const entries: [string | number, Json][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...allPaths(v, [...prefix, k])]);
}

/** `hosts[1].clusterIp` as the path setAt walks: ['hosts', 1, 'clusterIp']. */
function pathOf(field: string): Path {
  return (field.match(/[^.[\]]+/g) ?? []).map((k) => (/^\d+$/.test(k) ? Number(k) : k));
}

/** A case that sets one field to a bad value; the refusal must name that field. */
function setting(label: string, field: string, value: Json): Mutation & { path: string } {
  return { label, path: field, apply: (s) => setAt(s, pathOf(field), value) };
}

const canary = '/tmp/liftoff-canary-badinput';

/** The table: one or more cases for every rule of the issue, plus wrong types, empty strings, unknown keys and injection attempts. */
const table: (Mutation & { path: string })[] = [
  // IPv4 and the one-head rule, as the issue words them
  setting('a short cluster IP', 'hosts[1].clusterIp', '192.168.200'),
  setting('an octet above 255', 'hosts[0].clusterIp', '10.213.1.256'),
  setting('a host name as cluster IP', 'hosts[1].clusterIp', 'spark2'),
  {
    label: 'a missing cluster IP',
    path: 'hosts[1].clusterIp',
    apply: (s) => delete obj(s, 'hosts', 1).clusterIp,
  },
  { label: 'two heads', path: 'hosts', apply: (s) => (obj(s, 'hosts', 1).role = 'head') },
  { label: 'no head', path: 'hosts', apply: (s) => (obj(s, 'hosts', 0).role = 'worker') },
  setting('an unknown role', 'hosts[1].role', 'master'),
  // uniqueness
  {
    label: 'a duplicate host name',
    path: 'hosts[1].name',
    apply: (s) => (obj(s, 'hosts', 1).name = obj(s, 'hosts', 0).name ?? null),
  },
  {
    label: 'a duplicate address',
    path: 'hosts[1].address',
    apply: (s) => {
      const [a, b] = [obj(s, 'hosts', 0), obj(s, 'hosts', 1)];
      b.address = a.address ?? null;
      if (a.port === undefined) delete b.port;
      else b.port = a.port;
    },
  },
  {
    label: 'a duplicate cluster IP',
    path: 'hosts[1].clusterIp',
    apply: (s) => (obj(s, 'hosts', 1).clusterIp = obj(s, 'hosts', 0).clusterIp ?? null),
  },
  // jump hosts
  setting('an unknown jump host', 'hosts[1].jumpHost', 'spark9'),
  setting('a host jumping through itself', 'hosts[1].jumpHost', 'spark2'),
  setting('a jump loop', 'hosts[0].jumpHost', 'spark2'),
  // GPUs
  setting('tensor parallel beyond the GPUs', 'serve.tensorParallelSize', 3),
  setting('tensor parallel 0', 'serve.tensorParallelSize', 0),
  setting('a fractional tensor parallel size', 'serve.tensorParallelSize', 1.5),
  setting('no GPUs per host', 'gpu.perHost', 0),
  setting('17 GPUs per host', 'gpu.perHost', 17),
  // durations
  setting('a duration in words', 'serve.loadTimeout', '25 minutes'),
  setting('a zero duration', 'serve.pollInterval', '0s'),
  setting('a negative duration', 'gpu.clearTimeout', '-5m'),
  setting('an empty duration', 'ray.verifyTimeout', ''),
  setting('a duration as a number', 'serve.stallTimeout', 30),
  // ports
  setting('a serve port above 65535', 'serve.port', 70000),
  setting('port 0', 'serve.port', 0),
  setting('a port as text', 'ray.port', '6379'),
  setting('a negative ssh port', 'ssh.port', -22),
  setting('a host port of 65536', 'hosts[0].port', 65536),
  // container and unit names
  setting('a container name with a space', 'ray.container', 'vllm qwen'),
  setting('a container name starting with _', 'ray.container', '_vllm'),
  setting('a one-character container name', 'ray.container', 'v'),
  {
    label: 'an injected cleanup container',
    path: 'cleanup.containers[1]',
    apply: (s) => (list(s, 'cleanup', 'containers')[1] = `x;touch ${canary}`),
  },
  {
    label: 'an injected unit name',
    path: 'cleanup.services[0]',
    apply: (s) => (list(s, 'cleanup', 'services')[0] = 'vllm;reboot'),
  },
  {
    label: 'a unit name with $( )',
    path: 'cleanup.services[2]',
    apply: (s) => (list(s, 'cleanup', 'services')[2] = `$(touch ${canary}).service`),
  },
  // injection attempts in names and other restricted fields
  { label: 'an empty cluster name', path: 'cluster', apply: (s) => (s.cluster = '') },
  {
    label: 'a cluster name with a command',
    path: 'cluster',
    apply: (s) => (s.cluster = `a b; touch ${canary}`),
  },
  setting('a host name with $( )', 'hosts[0].name', '$(reboot)'),
  setting('a host name in backticks', 'hosts[1].name', '`id`'),
  setting('a user with a command', 'ssh.user', 'root; id'),
  setting('an address with a command', 'hosts[0].address', '10.0.0.1;touch'),
  setting('an address starting with -o', 'hosts[0].address', '-oProxyCommand=touch'),
  setting('a model id with ../', 'serve.model', '../../etc/passwd'),
  setting('a model id with a command', 'serve.model', 'Qwen/x $(id)'),
  setting('an image with a command', 'ray.image', 'img;rm -rf /'),
  setting('an image that is an option', 'ray.image', '--privileged'),
  setting('a shm size in words', 'ray.shmSize', '10 GB'),
  setting('a served model name that is an option', 'serve.servedModelName', '--trust-remote-code'),
  setting('an empty served model name', 'serve.servedModelName', ''),
  {
    label: 'a NUL byte in a serve arg',
    path: 'serve.args[1]',
    apply: (s) => (list(s, 'serve', 'args')[1] = '0.85\u0000'),
  },
  {
    label: 'an env name with a command',
    path: 'serve.env.X;id',
    apply: (s) => (obj(s, 'serve', 'env')['X;id'] = '1'),
  },
  // paths and volumes
  {
    label: 'a relative volume',
    path: 'ray.volumes[1]',
    apply: (s) => list(s, 'ray', 'volumes').push('data:/data'),
  },
  {
    label: 'a volume with a bad mode',
    path: 'ray.volumes[0]',
    apply: (s) => (list(s, 'ray', 'volumes')[0] = '/a:/b:rwx'),
  },
  { label: 'no way to the weights', path: 'serve.modelPath', apply: (s) => (obj(s, 'ray').volumes = []) },
  setting('a relative log path', 'serve.logPath', 'vllm.log'),
  setting('an empty log path', 'serve.logPath', ''),
  setting('a relative key path', 'ssh.privateKeyPath', 'id_ed25519'),
  setting('a relative known_hosts', 'ssh.knownHostsPath', 'known_hosts'),
  // secrets
  setting('a token written in the spec', 'ray.env.HF_TOKEN', 'hf_written_here'),
  setting('an unknown secret reference', 'serve.env.HF_TOKEN', { fromVault: 'x' }),
  {
    label: 'an --api-key arg',
    path: 'serve.args[4]',
    apply: (s) => list(s, 'serve', 'args').push('--api-key', 'sk-1'),
  },
  // values shaped like credentials, under names that say nothing (issue 14 item 4): refused like secrets
  setting(
    'a Hugging Face token under an ordinary env name',
    'serve.env.MODEL_SRC',
    'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345',
  ),
  {
    label: 'an sk- key as a plain serve arg',
    path: 'serve.args[4]',
    apply: (s) => list(s, 'serve', 'args').push('sk-proj-0123456789abcdefXYZ'),
  },
  setting(
    'a password in a URL under ray.env',
    'ray.env.PIP_INDEX_URL',
    'https://bob:hunter2@pypi.example.com/simple',
  ),
  // wrong types, missing and unknown keys
  setting('args as one string', 'serve.args', '--max-model-len 32768'),
  { label: 'a number in args', path: 'serve.args[0]', apply: (s) => (list(s, 'serve', 'args')[0] = 1) },
  { label: 'a host as a string', path: 'hosts[0]', apply: (s) => (list(s, 'hosts')[0] = 'spark1') },
  { label: 'no hosts', path: 'hosts', apply: (s) => (s.hosts = []) },
  { label: 'hosts missing', path: 'hosts', apply: (s) => delete s.hosts },
  { label: 'ray as null', path: 'ray', apply: (s) => (s.ray = null) },
  { label: 'model missing', path: 'serve.model', apply: (s) => delete obj(s, 'serve').model },
  { label: 'an unknown onFailure', path: 'onFailure', apply: (s) => (s.onFailure = 'explode') },
  setting('zero smoke tokens', 'smoke.maxTokens', 0),
  {
    label: 'negative free disk',
    path: 'preflight.minFreeDiskGiB',
    apply: (s) => (s.preflight = { minFreeDiskGiB: -1 }),
  },
  setting('a boolean as text', 'cleanup.disableServices', 'yes'),
  { label: 'an unknown top-level key', path: '(spec)', apply: (s) => (s.extra = 1) },
  { label: 'a misspelt serve key', path: 'serve', apply: (s) => (obj(s, 'serve').tensorParalelSize = 2) },
  {
    label: 'a password on a host',
    path: 'hosts[0]',
    apply: (s) => (obj(s, 'hosts', 0).password = 'hunter2'),
  },
];

const hostName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const dockerName = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

/**
 * An oracle written apart from the schema: what an accepted spec must satisfy. A mutation the schema lets
 * through must pass it, so a rule the schema lost would show up here.
 */
function assertReallyValid(spec: DeploySpec, label: string): void {
  const fail = (why: string) => assert.fail(`${label}: accepted, but ${why}`);
  const heads = spec.hosts.filter((h) => h.role === 'head');
  if (heads.length !== 1) fail(`${heads.length} heads`);
  for (const key of ['name', 'clusterIp'] as const) {
    const values = spec.hosts.map((h) => h[key]);
    if (new Set(values).size !== values.length) fail(`duplicate ${key}`);
  }
  const addresses = spec.hosts.map((h) => `${h.address}:${h.port ?? spec.ssh.port}`);
  if (new Set(addresses).size !== addresses.length) fail('duplicate address');
  for (const h of spec.hosts) {
    if (!hostName.test(h.name)) fail(`host name ${h.name}`);
    if (!isIPv4(h.clusterIp)) fail(`cluster IP ${h.clusterIp}`);
    const seen = new Set([h.name]);
    for (let hop = h.jumpHost; hop !== undefined; hop = spec.hosts.find((o) => o.name === hop)?.jumpHost) {
      if (seen.has(hop) || !spec.hosts.some((o) => o.name === hop)) fail(`jump chain of ${h.name}`);
      seen.add(hop);
    }
  }
  if (!hostName.test(spec.cluster)) fail(`cluster name ${spec.cluster}`);
  const gpus = spec.hosts.length * spec.gpu.perHost;
  if (spec.serve.tensorParallelSize > gpus || spec.serve.tensorParallelSize < 1) fail('tp does not fit');
  for (const p of [spec.ssh.port, spec.ray.port, spec.serve.port, ...spec.hosts.map((h) => h.port ?? 22)]) {
    if (!Number.isInteger(p) || p < 1 || p > 65535) fail(`port ${p}`);
  }
  const durations = [
    spec.gpu.clearTimeout,
    spec.ray.verifyTimeout,
    spec.serve.loadTimeout,
    spec.serve.pollInterval,
    spec.serve.stallTimeout,
    spec.serve.hostUnreachableTimeout,
  ];
  for (const d of durations) if (!(Number(parseDuration(d)) > 0)) fail(`duration ${d}`);
  for (const c of [spec.ray.container, ...spec.cleanup.containers])
    if (!dockerName.test(c)) fail(`container ${c}`);
  for (const u of spec.cleanup.services) if (!/^[A-Za-z0-9:_.\\@-]+$/.test(u)) fail(`unit ${u}`);
  if (modelPathFor(spec) === undefined) fail('no model path');
  const texts = [
    ...spec.serve.args,
    spec.serve.logPath,
    ...spec.ray.volumes,
    spec.serve.servedModelName ?? 'x',
  ];
  for (const t of texts) if (t.includes('\0')) fail('NUL in an argument');
}

// Values a careless or hostile edit puts in a field: wrong types, out of range, empty, injections.
const hostileValues: Json[] = [
  null,
  true,
  0,
  -1,
  1.5,
  70000,
  1e12,
  '',
  ' ',
  'x',
  '-',
  '--help',
  '0s',
  '999.999.1.1',
  `; touch ${canary}`,
  `$(touch ${canary})`,
  `\`touch ${canary}\``,
  `a\ntouch ${canary}`,
  '\'"',
  'a\u0000b',
  'a'.repeat(300),
  [],
  {},
  ['x'],
  { fromEnv: 'X' },
];

describe('invalid specs are refused before anything starts (CLI and UI paths)', () => {
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 16,
    seedReferenceState: false,
  });
  let valid: JsonObject;
  let dir = '';
  const cases: InvalidCase[] = [];
  let tableCount = 0;
  let propertyCount = 0;
  const handshakesBefore = new Map<string, number>();
  const cliIssues = new Map<number, string>();
  const uiRunIds: string[] = [];
  const savedEnv = { address: process.env.TEMPORAL_ADDRESS, namespace: process.env.TEMPORAL_NAMESPACE };

  before(() => {
    valid = simDeploySpec(e2e.sim, { cluster: clusterName });
    dir = mkdtempSync(join(tmpdir(), 'liftoff-bad-input-'));
    for (const h of e2e.sim.hosts) handshakesBefore.set(h.name, countSshHandshakes(stateDir, h.name));
    // The in-process CLI reads Temporal's address from the environment, like the real one.
    Object.assign(process.env, e2e.temporalEnv);
  });

  after(() => {
    if (savedEnv.address === undefined) delete process.env.TEMPORAL_ADDRESS;
    else process.env.TEMPORAL_ADDRESS = savedEnv.address;
    if (savedEnv.namespace === undefined) delete process.env.TEMPORAL_NAMESPACE;
    else process.env.TEMPORAL_NAMESPACE = savedEnv.namespace;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the unmutated spec is valid (so every refusal below is the mutation)', () => {
    const parsed = deploySpecSchema.safeParse(valid);
    assert.ok(parsed.success, parsed.success ? '' : parsed.error.message);
    assertReallyValid(parsed.data, 'the base spec');
  });

  it(`the schema refuses every table case, naming its field`, () => {
    assert.ok(table.length >= 30, `${table.length} table cases`);
    for (const m of table) {
      const spec = clone(valid);
      m.apply(spec);
      const r = deploySpecSchema.safeParse(spec);
      assert.equal(r.success, false, `${m.label}: refused`);
      cases.push({ label: m.label, spec, expectedPath: m.path });
    }
    tableCount = cases.length;
  });

  it('random mutations never crash the validator; accepted ones are really valid, refused ones are kept', () => {
    const paths = allPaths(valid);
    const mutation = fc.oneof(
      fc.record({ op: fc.constant('delete' as const), path: fc.constantFrom(...paths) }),
      fc.record({
        op: fc.constant('set' as const),
        path: fc.constantFrom(...paths),
        value: fc.constantFrom(...hostileValues),
      }),
      fc.record({
        op: fc.constant('addKey' as const),
        path: fc.constantFrom(
          ...[[], ...paths].filter((p) => {
            const node = at(valid, p);
            return node !== null && typeof node === 'object' && !Array.isArray(node);
          }),
        ),
        value: fc.constantFrom(...hostileValues),
      }),
    );
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (ops) => {
        const spec = clone(valid);
        const label = ops
          .map((o) => `${o.op} ${o.path.join('.')}${'value' in o ? ` = ${JSON.stringify(o.value)}` : ''}`)
          .join('; ');
        for (const o of ops) {
          // An earlier op may have removed or replaced (e.g. with null) the parent of a later one's path; that op
          // then does nothing.
          const parent = o.path.length > 0 ? at(spec, o.path.slice(0, -1)) : spec;
          if (parent === null || typeof parent !== 'object') continue;
          if (o.op === 'delete') deleteAt(spec, o.path);
          else if (o.op === 'set') setAt(spec, o.path, clone(o.value));
          else {
            const target = at(spec, o.path);
            if (target !== null && typeof target === 'object' && !Array.isArray(target))
              target['unexpectedKey'] = clone(o.value);
          }
        }
        const r = deploySpecSchema.safeParse(spec);
        if (r.success) {
          accepted++;
          assertReallyValid(r.data, label);
        } else {
          cases.push({ label: `random: ${label}`, spec });
        }
      }),
      { numRuns: 160 },
    );
    propertyCount = cases.length - tableCount;
    assert.ok(propertyCount >= 100, `${propertyCount} refused random mutations (${accepted} accepted)`);
  });

  it('the CLI (`deploy -c FILE --json`, in process) exits 2 with the field path, starting nothing', async () => {
    for (const [i, c] of cases.entries()) {
      const file = join(dir, `case-${i}.yaml`);
      // JSON is YAML 1.2: the file holds exactly the mutated value.
      writeFileSync(file, JSON.stringify(c.spec, null, 2));
      const run = await runCliInProcess(['deploy', '-c', file, '--json']);
      assert.equal(run.exitCode, 2, `${c.label}: exit code (stdout ${run.stdout})`);
      const doc = JSON.parse(run.stdout) as { error: { name: string; message: string; exitCode: number } };
      assert.equal(doc.error.name, 'SpecError', c.label);
      assert.equal(doc.error.exitCode, 2);
      const prefix = `${file} is invalid:\n`;
      assert.ok(doc.error.message.startsWith(prefix), `${c.label}: ${doc.error.message}`);
      const issues = doc.error.message.slice(prefix.length);
      assert.match(issues, /^ {2}\S+: \S/m, `${c.label}: a path and a message`);
      if (c.expectedPath !== undefined) {
        assert.ok(
          issues.includes(`  ${c.expectedPath}: `),
          `${c.label}: names ${c.expectedPath} in\n${issues}`,
        );
      }
      cliIssues.set(i, issues);
    }
  });

  it('the real CLI process behaves like the in-process one (3 cases spawned)', async () => {
    const picks = [0, tableCount - 1, cases.length - 1];
    await Promise.all(
      picks.map(async (i) => {
        const file = join(dir, `case-${i}.yaml`);
        const run = await spawnCli(['deploy', '-c', file, '--json']);
        assert.equal(run.exitCode, 2, `case ${i}: ${run.stderr}`);
        const doc = JSON.parse(run.stdout) as { error: { message: string } };
        assert.equal(doc.error.message, `${file} is invalid:\n${cliIssues.get(i) ?? ''}`);
      }),
    );
  });

  it('the UI path (deploy workflow under a non-cluster id) fails non-retryably with InvalidSpec and the same message', async () => {
    const batch = 16;
    for (let start = 0; start < cases.length; start += batch) {
      await Promise.all(
        cases.slice(start, start + batch).map(async (c, k) => {
          const i = start + k;
          const workflowId = `${uiIdPrefix}${i}`;
          uiRunIds.push(workflowId);
          const { failure: cause } = await startAsUiExpectInvalidSpec(e2e.client, {
            taskQueue: TASK_QUEUE,
            workflowId,
            spec: c.spec,
            label: c.label,
          });
          const prefix = invalidSpecPrefix;
          assert.equal(
            cause.message.slice(prefix.length),
            cliIssues.get(i),
            `${c.label}: same text as the CLI`,
          );
        }),
      );
    }
  });

  it('no activity or child workflow ran in any UI run, the CLI started no workflow, and no SSH login happened', async () => {
    let activities = 0;
    let children = 0;
    for (const workflowId of uiRunIds) {
      const history = await e2e.client.workflow.getHandle(workflowId).fetchHistory();
      for (const e of history.events ?? []) {
        if (e.activityTaskScheduledEventAttributes) activities++;
        if (e.startChildWorkflowExecutionInitiatedEventAttributes) children++;
      }
    }
    assert.equal(activities, 0, 'ActivityTaskScheduled events');
    assert.equal(children, 0, 'StartChildWorkflowExecutionInitiated events');

    // Visibility lags the runs a little: wait until every UI run is listed, then nothing else may be.
    const listed = async (): Promise<string[]> => {
      const ids: string[] = [];
      for await (const wf of e2e.client.workflow.list()) ids.push(wf.workflowId);
      return ids;
    };
    let ids = await listed();
    for (let i = 0; i < 50 && ids.length < uiRunIds.length; i++) {
      await new Promise((r) => setTimeout(r, 200));
      ids = await listed();
    }
    const strangers = ids.filter((id) => !id.startsWith(uiIdPrefix));
    assert.deepEqual(strangers, [], 'workflows not started by the UI path');
    assert.equal(ids.length, uiRunIds.length);
    await assert.rejects(
      e2e.client.workflow.getHandle(deployWorkflowId(clusterName)).describe(),
      WorkflowNotFoundError,
    );

    for (const h of e2e.sim.hosts) {
      assert.equal(
        countSshHandshakes(stateDir, h.name),
        handshakesBefore.get(h.name),
        `${h.name}: SSH logins`,
      );
    }
    const workflowsStartedByCli = strangers.length;
    const logins = e2e.sim.hosts.reduce(
      (n, h) => n + countSshHandshakes(stateDir, h.name) - (handshakesBefore.get(h.name) ?? 0),
      0,
    );
    console.log(
      `FIGURE: ${cases.length} invalid specs (table ${tableCount} + property ${propertyCount}) refused with a path on the CLI and the UI path; ${workflowsStartedByCli} workflows started, ${logins} SSH connections`,
    );
  });
});

/**
 * Runs the CLI's own command tree in this process, capturing what it writes as text and its exit code. The
 * test runner's own (binary) reports are passed through untouched.
 */
async function runCliInProcess(args: string[]): Promise<{ exitCode: number; stdout: string }> {
  const write = process.stdout.write.bind(process.stdout);
  let captured = '';
  process.stdout.write = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    if (typeof chunk === 'string') {
      captured += chunk;
      return true;
    }
    return (write as (c: Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  };
  const previous = process.exitCode;
  process.exitCode = undefined;
  try {
    await (await buildProgram()).parseAsync(['node', 'liftoff', ...args]);
    return { exitCode: Number(process.exitCode ?? 0), stdout: captured };
  } finally {
    process.stdout.write = write;
    process.exitCode = previous;
  }
}

function spawnCli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      liftoffArgv(args),
      { cwd: process.cwd(), env: { ...process.env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err && typeof err.code === 'number' ? err.code : err ? -1 : 0;
        resolve({ exitCode: code, stdout, stderr });
      },
    );
  });
}
