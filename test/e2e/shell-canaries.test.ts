// Issue 6, shell safety: a real deploy on the simulated cluster whose spec carries shell canaries in every
// free-text field the schema accepts. Each canary would create /tmp/liftoff-canary-<n> if any shell parsed it;
// the hosts share the control host's /tmp (the sim's mount namespaces replace only /home, /root and
// /proc/meminfo), so one look there covers every host. The fields the schema restricts refuse the canaries.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { sshRun } from '../helpers/ssh.js';
import { deploySpecSchema, type DeploySpecInput } from '../../src/config/schema.js';
import { dirnameOf } from '../../src/config/derive.js';
import { deployWorkflowId, TASK_QUEUE } from '../../src/shared/constants.js';
import { deploy } from '../../src/workflows/index.js';
import type { DeployResult } from '../../src/workflows/steps.js';
import type { SimCluster } from '../../sim/cluster.js';
import { referenceModelDir } from '../../sim/seed.js';
import { simDeploySpec } from '../../sim/spec.js';

const stateDir = '/tmp/liftoff-test-canaries';
const cluster = 'canaries';
const canaryPrefix = 'liftoff-canary-';

let nextCanary = 0;
const tried: { field: string; value: string; file: string }[] = [];

/** The shapes an injection takes; each names a fresh canary file. */
const shapes: ((file: string) => string)[] = [
  (f) => `;touch ${f}`,
  (f) => `$(touch ${f})`,
  (f) => `\`touch ${f}\``,
  (f) => `'; touch ${f}; '`,
  (f) => `"; touch ${f}; "`,
  (f) => `x\ntouch ${f}`,
  (f) => `&& touch ${f} #`,
  (f) => `| touch ${f}`,
  (f) => `\${IFS}touch\${IFS}${f}`,
  (f) => `$'\\x3b'touch ${f}`,
  (f) => `--x=$(touch ${f})`,
  (f) => `-e touch ${f}`,
  (f) => `-- ; touch ${f}`,
];

function canary(field: string, shape: (file: string) => string): string {
  const file = `/tmp/${canaryPrefix}${nextCanary++}`;
  const value = shape(file);
  tried.push({ field, value, file });
  return value;
}

function canaryFilesInTmp(): string[] {
  return readdirSync('/tmp').filter((n) => n.startsWith(canaryPrefix));
}

/** Host path (as the host sees it) → where it lives in the host's folder, in namespace mode. */
function onHostDisk(sim: SimCluster, host: number, path: string): string {
  const h = sim.hosts[host];
  assert.ok(h && path.startsWith('/home/'), path);
  return join(h.hostDir, 'home', path.slice('/home/'.length));
}

describe('shell canaries in every free-text field never fire', () => {
  let result: DeployResult;
  const serveArgs: string[] = [];
  const rayEnv: Record<string, string> = {};
  const serveEnv: Record<string, string> = {};
  let servedModelName = '';
  let logPath = '';
  let volume = '';
  let modelPath = '';
  const refusedFields = new Set<string>();
  let refusedCanaries = 0;

  const removeCanaryFiles = () => {
    for (const n of canaryFilesInTmp()) rmSync(join('/tmp', n), { force: true });
  };
  before(removeCanaryFiles);
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 17,
    seedReferenceState: false,
    vllm: { shards: 4, shardSeconds: 0.05, graphCaptureSeconds: 0.2 },
  });
  after(removeCanaryFiles);

  it('a canary does fire when a shell parses it (the probe works)', async () => {
    const file = `/tmp/${canaryPrefix}control`;
    await sshRun(e2e.sim, 'spark2', `echo ${`;touch ${file}`}`);
    assert.ok(existsSync(file), 'an unquoted canary on spark2 creates its file in the shared /tmp');
    rmSync(file);
  });

  it('the schema refuses canaries in names, images, units, sizes and users', () => {
    const base: DeploySpecInput = simDeploySpec(e2e.sim, { cluster });
    const restricted: [string, (s: DeploySpecInput, v: string) => void][] = [
      ['cluster', (s, v) => (s.cluster = v)],
      ['hosts[].name', (s, v) => (s.hosts[1]!.name = v)],
      ['hosts[].address', (s, v) => (s.hosts[0]!.address = v)],
      ['hosts[].clusterIp', (s, v) => (s.hosts[0]!.clusterIp = v)],
      ['ssh.user', (s, v) => (s.ssh.user = v)],
      ['ray.container', (s, v) => (s.ray.container = v)],
      ['cleanup.containers[]', (s, v) => (s.cleanup = { ...s.cleanup, containers: [v] })],
      ['cleanup.services[]', (s, v) => (s.cleanup = { ...s.cleanup, services: [`${v}.service`] })],
      ['ray.image', (s, v) => (s.ray.image = `vllm/vllm${v}`)],
      ['ray.shmSize', (s, v) => (s.ray.shmSize = `10g${v}`)],
      ['serve.model', (s, v) => (s.serve.model = `Qwen/Qwen${v}`)],
      ['serve.env names', (s, v) => (s.serve.env = { [`X${v}`]: '1' })],
      ['ray.env names', (s, v) => (s.ray.env = { ...s.ray.env, [`X${v}`]: '1' })],
    ];
    for (const [field, put] of restricted) {
      for (const shape of shapes) {
        const spec = structuredClone(base);
        put(spec, canary(`${field} (refused)`, shape));
        const r = deploySpecSchema.safeParse(spec);
        assert.equal(r.success, false, `${field} refuses ${JSON.stringify(tried.at(-1)?.value)}`);
        refusedCanaries++;
      }
      refusedFields.add(field);
    }
    // Options where a positional value is expected, and NUL anywhere, are refused too.
    const optionName = structuredClone(base);
    optionName.serve.servedModelName = '--trust-remote-code';
    assert.equal(deploySpecSchema.safeParse(optionName).success, false, 'servedModelName "--…"');
    const nul = structuredClone(base);
    nul.serve.args = ['--max-model-len', '32768\u0000; touch /tmp/x'];
    assert.equal(deploySpecSchema.safeParse(nul).success, false, 'NUL in an arg');
  });

  it('a deploy whose free-text fields carry canaries succeeds', async () => {
    const spec: DeploySpecInput = simDeploySpec(e2e.sim, { cluster });
    // Each canary is the value of a flag vLLM knows (it refuses unknown ones, as the simulated vllm does); it
    // takes any text, so every shape reaches the server as one argument. vLLM keeps the last.
    shapes.forEach((shape) => serveArgs.push('--response-role', canary('serve.args', shape)));
    shapes.forEach((shape, k) => (rayEnv[`CANARY_RAY_${k}`] = canary('ray.env values', shape)));
    shapes.forEach((shape, k) => (serveEnv[`CANARY_SERVE_${k}`] = canary('serve.env values', shape)));
    servedModelName = `qwen${canary('serve.servedModelName', shapes[1]!)}${canary('serve.servedModelName', shapes[2]!)}`;
    const prompt = shapes.map((s) => canary('smoke.prompt', s)).join(' ');
    // Paths: the folders holding them must exist on the hosts, so the canaries are made into real folders.
    logPath = `/home/aurora/log${canary('serve.logPath', shapes[0]!)}/${canary('serve.logPath', shapes[1]!)}${canary('serve.logPath', shapes[2]!)}/serve.log`;
    const volumeHost = `/home/aurora/vol${canary('ray.volumes', shapes[1]!)}${canary('ray.volumes', shapes[3]!)}`;
    volume = `${volumeHost}:/mnt/canary${canary('ray.volumes', shapes[0]!)}`;
    modelPath = `/home/aurora/model${canary('serve.modelPath', shapes[1]!)}${canary('serve.modelPath', shapes[2]!)}`;
    mkdirSync(onHostDisk(e2e.sim, 0, dirnameOf(logPath)), { recursive: true });
    for (const i of e2e.sim.hosts.keys()) {
      mkdirSync(onHostDisk(e2e.sim, i, volumeHost), { recursive: true });
      mkdirSync(dirnameOf(onHostDisk(e2e.sim, i, modelPath)), { recursive: true });
      // The target as the host sees it: the link is followed inside the host's mount namespace.
      symlinkSync(referenceModelDir, onHostDisk(e2e.sim, i, modelPath));
    }

    spec.ray.env = { ...spec.ray.env, ...rayEnv };
    spec.ray.volumes = [...(spec.ray.volumes ?? []), volume];
    spec.serve.args = [...(spec.serve.args ?? []), ...serveArgs];
    spec.serve.env = { ...spec.serve.env, ...serveEnv };
    spec.serve.logPath = logPath;
    spec.serve.servedModelName = servedModelName;
    spec.serve.modelPath = modelPath;
    spec.smoke = { ...spec.smoke, prompt };
    const parsed = deploySpecSchema.safeParse(spec);
    assert.ok(parsed.success, parsed.success ? '' : parsed.error.message);

    const handle = await e2e.client.workflow.start(deploy, {
      taskQueue: TASK_QUEUE,
      workflowId: deployWorkflowId(cluster),
      args: [spec, { trigger: 'cli' }],
    });
    result = await handle.result();
    assert.equal(result.model, servedModelName);
  });

  it('the Ray containers carry ray.env values and the volume byte for byte', async () => {
    for (const h of e2e.sim.hosts) {
      const inspect = JSON.parse(await sshRun(e2e.sim, h.name, 'docker inspect vllm_qwen35')) as {
        Config: { Env: string[] };
        Mounts: { Source: string; Destination: string }[];
      }[];
      const container = inspect[0];
      assert.ok(container, h.name);
      for (const [name, value] of Object.entries(rayEnv)) {
        assert.ok(
          container.Config.Env.includes(`${name}=${value}`),
          `${h.name}: ${name}=${JSON.stringify(value)}`,
        );
      }
      const [source, destination] = volume.split(':');
      assert.ok(
        container.Mounts.some((m) => m.Source === source && m.Destination === destination),
        `${h.name}: mount ${JSON.stringify(volume)}`,
      );
    }
  });

  it('the server got the args and served model name literally, and the serve.env values in its environment', () => {
    const head = e2e.sim.hosts[0]!;
    const launches = readFileSync(join(head.hostDir, 'launches.log'), 'utf8').trim().split('\n');
    const launch = JSON.parse(launches.at(-1) ?? '{}') as { args: string[]; pid: number };
    const args = launch.args;
    const at = args.indexOf('--served-model-name');
    assert.equal(args[at + 1], servedModelName);
    const tail = args.slice(args.length - serveArgs.length);
    assert.deepEqual(tail, serveArgs);

    const environ = readFileSync(`/proc/${launch.pid}/environ`);
    const vars = environ.toString('utf8').split('\0');
    for (const [name, value] of Object.entries(serveEnv)) {
      assert.ok(vars.includes(`${name}=${value}`), `serve env ${name}=${JSON.stringify(value)}`);
    }
  });

  it('the server log is at the literal serve.logPath', async () => {
    assert.ok(existsSync(onHostDisk(e2e.sim, 0, logPath)), JSON.stringify(logPath));
    const models = (await (await fetch(`${result.endpoint}/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(
      models.data.map((m) => m.id),
      [servedModelName],
    );
  });

  it('no canary fired on any host or on the control host', () => {
    const fired = canaryFilesInTmp();
    assert.deepEqual(fired, [], 'canary files in /tmp (shared by the control host and every simulated host)');
    for (const h of e2e.sim.hosts) {
      // A canary fired with a relative path or a changed working directory would land in a home folder.
      for (const home of ['home', 'roothome']) {
        // Folders of that name exist on purpose (the path canaries were made into real folders): look for files.
        const base = join(h.hostDir, home);
        const found = (readdirSync(base, { recursive: true }) as string[]).filter(
          (p) => /(^|\/)liftoff-canary-\d+$/.test(p) && lstatSync(join(base, p)).isFile(),
        );
        assert.deepEqual(found, [], `${h.name} ${home}`);
      }
    }
    const fields = new Set(tried.map((t) => t.field));
    const passedFields = [...fields].filter((f) => !refusedFields.has(f.replace(' (refused)', '')));
    console.log(
      `FIGURE: ${tried.length} canaries tried in ${fields.size} fields, ${fired.length} fired ` +
        `(${tried.length - refusedCanaries} passed literally through ${passedFields.length} accepted fields, ${refusedCanaries} refused by the schema in ${refusedFields.size} fields)`,
    );
  });
});
