// What `npm pack` gives: a tarball that installs into an empty folder and runs there as `liftoff`, on the compiled
// dist/ alone: no tsx, no TypeScript, nothing of this checkout. The install folder is kept between runs, keyed by
// the dependencies, so a second run only replaces liftoff itself; npm reads its cache first and the registry only
// for what the cache lacks.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { ensureBuilt, runProcess, type CliRun } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
};
const depsKey = createHash('sha256')
  .update(JSON.stringify(pkg.dependencies))
  .update(readFileSync(join(projectRoot, 'package-lock.json')))
  .digest('hex')
  .slice(0, 12);
const cacheDir = join('/tmp/liftoff-test-package', depsKey);
const installDir = join(cacheDir, 'install');
const installed = join(installDir, 'node_modules', pkg.name);
// Only node on PATH: the installed CLI cannot reach a tsx or tsc of this machine.
const env = { PATH: dirname(process.execPath), HOME: process.env.HOME ?? '/root', NO_COLOR: '1' };

/** The installed `liftoff`, run from its install folder with only node on PATH. */
function liftoff(args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> {
  return runProcess(join(installDir, 'node_modules', '.bin', 'liftoff'), args, {
    cwd: installDir,
    env: { ...env, ...extraEnv },
    timeoutMs: 60_000,
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length / 2;
  return Number.isInteger(mid) ? ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2 : (s[Math.floor(mid)] ?? NaN);
};

describe('npm pack: the installed package runs without tsx or TypeScript', () => {
  before(async () => {
    ensureBuilt();
    mkdirSync(installDir, { recursive: true });
    const started = performance.now();
    // prepack builds dist/ if src/ changed since (it is current here: ensureBuilt).
    const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', cacheDir], {
      cwd: projectRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = join(cacheDir, stdout.trim().split('\n').pop() ?? '');
    const packedMs = performance.now() - started;
    const cached = existsSync(join(installDir, 'node_modules'));
    if (!existsSync(join(installDir, 'package.json')))
      writeFileSync(
        join(installDir, 'package.json'),
        '{ "name": "liftoff-install-test", "private": true }\n',
      );
    await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
      {
        cwd: installDir,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    console.log(
      `FIGURE: npm pack ${(packedMs / 1000).toFixed(1)} s, npm install of the tarball ` +
        `${((performance.now() - started - packedMs) / 1000).toFixed(1)} s (${cached ? 'dependencies already installed' : 'empty folder'})`,
    );
  });

  it('installs the current build, and neither tsx nor TypeScript', () => {
    assert.equal(
      readFileSync(join(installed, 'dist', 'source.sha256'), 'utf8'),
      readFileSync(join(projectRoot, 'dist', 'source.sha256'), 'utf8'),
      'the installed dist/ is the one built from this src/',
    );
    const modules = readdirSync(join(installDir, 'node_modules'));
    assert.ok(modules.includes('@temporalio'), 'the runtime dependencies are installed');
    for (const dev of ['tsx', 'typescript', 'esbuild'])
      assert.ok(!modules.includes(dev), `${dev} is not installed`);
  });

  it('`liftoff --help` and `--version`', async () => {
    const help = await liftoff(['--help']);
    assert.equal(help.code, 0, help.stderr);
    for (const cmd of ['validate', 'deploy', 'status', 'worker', 'probe'])
      assert.match(help.stdout, new RegExp(`^  ${cmd}\\b`, 'm'));
    assert.equal(help.stderr, '', 'no note about running the sources');
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      const version = await liftoff(['--version']);
      assert.equal(version.code, 0, version.stderr);
      assert.equal(version.stdout.trim(), pkg.version);
      times.push(version.ms);
    }
    console.log(`FIGURE: installed liftoff --version, median of 10: ${(median(times) / 1000).toFixed(2)} s`);
  });

  it('`liftoff validate -c SPEC` passes a simulated cluster spec and names the field of a bad one', async () => {
    const dir = tempDir('liftoff-package-');
    const spec = {
      cluster: 'sim-package',
      ssh: { user: 'root', knownHostsPath: '~/.ssh/known_hosts' },
      hosts: [
        { name: 'spark1', address: '10.250.90.2', clusterIp: '10.250.90.2', role: 'head' },
        { name: 'spark2', address: '10.250.90.3', clusterIp: '10.250.90.3', jumpHost: 'spark1' },
      ],
      ray: { image: 'sim/vllm', container: 'vllm_sim' },
      serve: {
        model: 'test/tiny',
        modelPath: '/models/tiny',
        tensorParallelSize: 2,
        logPath: '/tmp/serve.log',
      },
    };
    const good = join(dir, 'good.yaml');
    writeFileSync(good, stringify(spec));
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      const ok = await liftoff(['validate', '-c', good]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /is valid: cluster sim-package, 2 hosts \(head spark1\)/);
      times.push(ok.ms);
    }
    console.log(
      `FIGURE: installed liftoff validate -c SPEC, median of 10: ${(median(times) / 1000).toFixed(2)} s`,
    );

    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, stringify({ ...spec, serve: { ...spec.serve, tensorParallelSize: 'two' } }));
    const refused = await liftoff(['validate', '-c', bad]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /serve\.tensorParallelSize/);
  });

  it("the installed worker bundles the package's workflow sources without tsx", async () => {
    const cache = tempDir('liftoff-package-bundle-');
    const bundler = join(installed, 'dist', 'temporal', 'workflow-bundle.js');
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { workflowBundle } = await import(${JSON.stringify(bundler)}); console.log((await workflowBundle()).codePath);`,
      ],
      { cwd: installDir, env: { ...env, XDG_CACHE_HOME: cache }, timeout: 120_000 },
    );
    const code = readFileSync(stdout.trim(), 'utf8');
    // Bundled from the TypeScript sources the package ships (what the replay tests check), every one of them.
    const sources = readdirSync(join(installed, 'src', 'workflows')).filter((f) => f.endsWith('.ts'));
    assert.ok(sources.includes('deploy.ts'));
    for (const file of sources) assert.ok(code.includes(`./src/workflows/${file}`), `the bundle has ${file}`);
  });
});
