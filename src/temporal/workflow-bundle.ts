// The workflow code as one file for the worker's sandbox, bundled once per version of the sources.
// Bundling (webpack) runs in a child process: in the worker it would leave ~150 MB of memory behind for the
// worker's whole life, more than the rest of the worker together.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, type WorkflowBundlePath } from '@temporalio/worker';
import { projectRoot } from './cli-path.js';

const srcDir = join(projectRoot, 'src');
// Always the TypeScript sources (the package ships src/), also when this module runs compiled from dist/: the
// sandbox runs the very code the replay tests check, and the bundle file is the same one either way.
export const workflowsPath = join(srcDir, 'workflows', 'index.ts');
// The bundling child runs this module itself: with tsx from src/, by plain node from dist/ (which has no tsx).
const compiled = import.meta.url.endsWith('.js');
const bundlerEntry = fileURLToPath(import.meta.url);
const execFileAsync = promisify(execFile);

/**
 * The OpenTelemetry workflow interceptors (issue 32), in the bundle of a worker that exports traces only: a span
 * per workflow run and per activity it schedules, sent out of the sandbox through the `exporter` sink, which the
 * SDK does not call on replay. A worker without tracing runs a bundle without them.
 */
export const workflowTracingModule = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

export interface WorkflowBundleOptions {
  /** A failure converter module for the sandbox (src/temporal/codec.ts, when payloads are encrypted). */
  failureConverterPath?: string;
  /** Bundle the OpenTelemetry workflow interceptors (workflowTracingModule). */
  tracing?: boolean;
}

/** Bundles in this process (the child's side). */
async function bundleWorkflowsTo(file: string, options: WorkflowBundleOptions): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    ...(options.failureConverterPath ? { failureConverterPath: options.failureConverterPath } : {}),
    ...(options.tracing ? { workflowInterceptorModules: [workflowTracingModule] } : {}),
    // Sources use NodeNext-style `.js` specifiers that point at `.ts` files.
    webpackConfigHook: (config) => {
      config.resolve = { ...config.resolve, extensionAlias: { '.js': ['.ts', '.js'] } };
      // The SDK compiles TypeScript outside node_modules only; an installed liftoff lives inside it.
      const rules = config.module?.rules?.map((rule) =>
        rule && typeof rule === 'object' && rule.test instanceof RegExp && rule.test.source === '\\.ts$'
          ? { ...rule, exclude: undefined, include: srcDir }
          : rule,
      );
      if (rules) config.module = { ...config.module, rules };
      return config;
    },
    logger: new DefaultLogger('WARN', ({ level, message }) =>
      level === 'WARN' ? console.warn(message) : console.error(message),
    ),
  });
  // Renamed into place, so a worker starting at the same time never reads half a file.
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, file);
}

/** Names the bundle by everything that can change it: the sources, the locked package versions, the options. */
function bundleHash(options: WorkflowBundleOptions): string {
  const hash = createHash('sha256');
  // An installed package has no lock file; its package.json pins the Temporal packages that bundle.
  const lock = join(projectRoot, 'package-lock.json');
  const sources = readdirSync(srcDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const files = [
    ...sources.map((f) => join(srcDir, f)).sort(),
    existsSync(lock) ? lock : join(projectRoot, 'package.json'),
  ];
  if (options.failureConverterPath) files.push(options.failureConverterPath);
  // The interceptors' version is in the lock file (or package.json) already; their path names the variant.
  if (options.tracing) hash.update('tracing:').update(workflowTracingModule).update('\0');
  for (const file of files) {
    hash.update(file).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

const bundlePromises = new Map<string, Promise<WorkflowBundlePath>>();

/**
 * The bundle file for the current sources and options, built on first use; every worker of the process with the
 * same options shares it.
 */
export function workflowBundle(options: WorkflowBundleOptions = {}): Promise<WorkflowBundlePath> {
  const variant = `${options.failureConverterPath ?? ''}\0${options.tracing ? 'tracing' : ''}`;
  let promise = bundlePromises.get(variant);
  if (!promise) {
    promise = buildBundleFile(options).catch((err: unknown) => {
      // A failed build is not kept: the next worker tries again.
      bundlePromises.delete(variant);
      throw err;
    });
    bundlePromises.set(variant, promise);
  }
  return promise;
}

/**
 * Where the worker writes its workflow bundles: the user's own cache, not a shared /tmp, since another local user
 * must not be able to plant the code a worker runs. The one place a worker writes (docker-compose.yml gives it a
 * tmpfs there, its root file system being read-only).
 */
export function workflowBundleDir(env: NodeJS.ProcessEnv, home: string): string {
  return join(env.XDG_CACHE_HOME ?? join(home, '.cache'), 'liftoff', 'workflow-bundles');
}

async function buildBundleFile(options: WorkflowBundleOptions): Promise<WorkflowBundlePath> {
  const dir = workflowBundleDir(process.env, homedir());
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const codePath = join(dir, `workflows-${bundleHash(options)}.js`);
  if (!existsSync(codePath)) {
    const args = [bundlerEntry, codePath, JSON.stringify(options)];
    await execFileAsync(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), ...args], {
      cwd: projectRoot,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: unknown) => {
      const e = err as { stderr?: string; message?: string };
      throw new Error(`bundling the workflow code failed: ${e.stderr?.trim() || e.message}`);
    });
  }
  return { codePath };
}

// The child's side: `node [--import tsx] workflow-bundle.(ts|js) FILE OPTIONS_JSON`, run by buildBundleFile.
const [, main, file, optionsJson] = process.argv;
if (main === bundlerEntry && file) {
  await bundleWorkflowsTo(file, JSON.parse(optionsJson ?? '{}') as WorkflowBundleOptions);
}
