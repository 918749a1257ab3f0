// The real-tools mode of the simulated hosts (test/real): the Ray and vLLM containers run Ray 2.60 from PyPI and
// vLLM's CPU build instead of the simulation, on each host's real Docker Engine (sim/real-docker.ts), so it needs
// docker: 'real'. The image stays the small one of scripts/setup-docker.sh: the venv of scripts/setup-real.sh is
// bind-mounted read-only at its own path (its scripts name their interpreter by absolute path) and runs on the
// image's python3.11, the interpreter the venv was made from. The image's `ray` and `vllm` pick the real programs
// when the container has /etc/liftoff-real mounted, which names the venv; only the deploy's containers get these
// mounts (realToolVolumes), and the old containers a host is seeded with stay simulated. Ray's session and sockets
// live in each container's own /tmp. The generated test models are copied into each host's Hugging Face cache,
// which the spec's volume mounts where vLLM looks by default (/root/.cache/huggingface). nvidia-smi and systemctl
// stay simulated, and real vLLM on the CPU registers no GPU memory with them.
import { cpSync, existsSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SimCluster } from './cluster-state.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The clone's links to what scripts/setup-real.sh installed: the venv, and the generated models. */
export const realToolsPaths = {
  venv: join(repoRoot, '.venv-real'),
  models: join(repoRoot, '.test-models'),
};

/** The host's Hugging Face cache (as the host sees it), which the real-tools specs mount into the containers. */
export const realHfHome = '/home/aurora/.cache/huggingface';

/** The generated models (scripts/make-test-models.py): a servable one, and one with head_dim 16. */
export const realModels = {
  tiny: 'liftoff-test/tiny-qwen2',
  headDim16: 'liftoff-test/tiny-qwen2-hd16',
} as const;

/**
 * The interpreter the image has (Debian bookworm's python3, scripts/setup-docker.sh): the venv must be made from
 * the same one, since its python is a link to it and its native modules are built for it.
 */
export const imagePython = '/usr/bin/python3.11';

/** A model's folder in a Hugging Face cache: hub/models--Org--Name. */
export function hfRepoDir(hfHome: string, model: string): string {
  return join(hfHome, 'hub', `models--${model.split('/').join('--')}`);
}

/** Why the real tools cannot run here, or undefined when they can. */
export function realToolsMissing(paths: typeof realToolsPaths = realToolsPaths): string | undefined {
  const setup =
    "run `bash scripts/setup.sh` (scripts/setup-real.sh installs Ray and vLLM's CPU build, and the models)";
  for (const need of [
    join(paths.venv, 'bin', 'ray'),
    join(paths.venv, 'bin', 'vllm'),
    join(paths.venv, 'bin', 'python'),
    join(paths.venv, 'pyvenv.cfg'),
    join(paths.venv, '.liftoff-setup'),
    join(paths.models, '.liftoff-setup'),
    ...Object.values(realModels).map((m) => hfRepoDir(paths.models, m)),
  ]) {
    if (!existsSync(need)) return `${need} is missing: ${setup}`;
  }
  const python = realpathSync(join(paths.venv, 'bin', 'python'));
  if (python !== imagePython)
    return `${paths.venv} runs ${python}, which the containers' image does not have (it has ${imagePython}, Debian bookworm's): make the venv from ${imagePython}`;
  const venv = realpathSync(paths.venv);
  if (venv === '/root' || venv.startsWith('/root/') || venv.startsWith('/home/'))
    return `${venv} is under /root or /home, which each simulated host mounts a folder of its own over: ${setup} with LIFTOFF_REAL_CACHE elsewhere`;
  return undefined;
}

/** Where the file the image's `ray` and `vllm` read in real-tools mode is kept (mounted at /etc/liftoff-real). */
const realEnvDir = (stateDir: string): string => join(stateDir, 'docker', 'real-env');

/**
 * The bind mounts that make a container's `ray` and `vllm` the real programs: the venv, read-only at its own path,
 * and the file that names it. The simulated cluster's deploy spec gives them to the Ray (or rank) container.
 */
export function realToolVolumes(cluster: SimCluster): string[] {
  const venv = cluster.realTools?.venv;
  if (venv === undefined) throw new Error('the cluster was not brought up with realTools');
  return [`${venv}:${venv}:ro`, `${realEnvDir(cluster.stateDir)}:/etc/liftoff-real:ro`];
}

/**
 * Writes the file the image's commands read in real-tools mode, naming the cluster's venv, and copies the generated
 * models into each host's Hugging Face cache (hostHomes: each host's /home on disk).
 */
export function installRealTools(cluster: SimCluster, hostHomes: string[]): void {
  const venv = cluster.realTools?.venv;
  if (venv === undefined) throw new Error('the cluster was not planned with realTools');
  mkdirSync(realEnvDir(cluster.stateDir), { recursive: true });
  writeFileSync(
    join(realEnvDir(cluster.stateDir), 'env'),
    `LIFTOFF_REAL_VENV='${venv.replace(/'/g, `'\\''`)}'\n`,
  );
  const source = join(realpathSync(realToolsPaths.models), 'hub');
  for (const home of hostHomes) {
    const hub = join(home, realHfHome.slice('/home/'.length), 'hub');
    mkdirSync(hub, { recursive: true });
    // Copies, not links: a test may damage one host's weights without touching the cache.
    for (const repo of readdirSync(source)) cpSync(join(source, repo), join(hub, repo), { recursive: true });
  }
}
