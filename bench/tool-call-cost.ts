// CPU per simulated tool call, with every call its own Node process (LIFTOFF_SIM_TOOL_SERVER=0: the shell shims)
// and with the host's tool server (the thin client, and the server's own CPU counted in):
//   npx tsx bench/tool-call-cost.ts [calls=200]
// One simulated host in a temp folder, called with its environment as an SSH session's command would be (no sshd:
// the SSH side costs the same either way), one call after another. The CPU of the calls' processes is this
// process's reaped children's (cutime + cstime of /proc/self/stat), the server's is read from its /proc entry.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSimTools } from '../sim/build-tools.js';
import { paths } from '../sim/host-state.js';
import { startToolServer } from '../sim/tool-server.js';
import { makeSimHost } from '../test/helpers/sim-host.js';

const calls = Number(process.argv[2] ?? 200);
const ticksPerSecond = 100;

/** utime, stime, cutime, cstime of a /proc/PID/stat, in seconds. */
function cpuOf(pid: number | 'self'): { own: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  // After the command name: state(0) ppid … utime(11) stime(12) cutime(13) cstime(14).
  const at = (i: number): number => (f[i] ?? 0) / ticksPerSecond;
  return { own: at(11) + at(12), children: at(13) + at(14) };
}

interface Cost {
  tool: string;
  cpuMsPerCall: number;
  serverCpuMsPerCall: number;
  wallMsPerCall: number;
}

function measure(binDir: string, hostDir: string, argv: string[], serverPid: number | undefined): Cost {
  const [tool = '', ...args] = argv;
  const env = { PATH: `${binDir}:/usr/bin:/bin`, LIFTOFF_SIM_HOST_DIR: hostDir, LANG: 'C.UTF-8' };
  const before = cpuOf('self').children;
  const serverBefore = serverPid === undefined ? 0 : cpuOf(serverPid).own;
  const started = performance.now();
  for (let i = 0; i < calls; i++) spawnSync(join(binDir, tool), args, { env, stdio: 'ignore' });
  const wall = performance.now() - started;
  const server = serverPid === undefined ? 0 : cpuOf(serverPid).own - serverBefore;
  const clients = cpuOf('self').children - before;
  return {
    tool: argv.join(' '),
    cpuMsPerCall: ((clients + server) * 1000) / calls,
    serverCpuMsPerCall: (server * 1000) / calls,
    wallMsPerCall: wall / calls,
  };
}

async function setUp(root: string, withServer: boolean): Promise<{ binDir: string; hostDir: string }> {
  const binDir = join(root, 'bin');
  const hostDir = makeSimHost(join(root, 'host'), { name: 'spark1', images: ['vllm/vllm-openai:latest'] });
  const saved = process.env.LIFTOFF_SIM_TOOL_SERVER;
  process.env.LIFTOFF_SIM_TOOL_SERVER = withServer ? '1' : '0';
  try {
    await buildSimTools(binDir);
    if (withServer) await startToolServer({ hostDir, binDir, path: `${binDir}:/usr/bin:/bin` });
  } finally {
    if (saved === undefined) delete process.env.LIFTOFF_SIM_TOOL_SERVER;
    else process.env.LIFTOFF_SIM_TOOL_SERVER = saved;
  }
  const env = { PATH: `${binDir}:/usr/bin:/bin`, LIFTOFF_SIM_HOST_DIR: hostDir };
  const run = spawnSync(
    join(binDir, 'docker'),
    [
      'run',
      '-d',
      '--name',
      'vllm_node',
      '--gpus',
      'all',
      'vllm/vllm-openai:latest',
      'gpu-hog',
      '--mib',
      '1000',
    ],
    { env, encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr}`);
  return { binDir, hostDir };
}

const workload = [
  ['nvidia-smi'],
  ['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader'],
  ['docker', 'inspect', 'vllm_node'],
  ['docker', 'ps', '-a'],
  ['systemctl', 'is-active', 'vllm-cluster.service'],
];

async function main(): Promise<void> {
  const results: Record<string, Cost[]> = {};
  for (const mode of ['node per call', 'tool server'] as const) {
    const root = mkdtempSync(join(tmpdir(), 'liftoff-bench-tools-'));
    try {
      const { binDir, hostDir } = await setUp(root, mode === 'tool server');
      const serverPid =
        mode === 'tool server' ? Number(readFileSync(paths.toolServerPid(hostDir), 'utf8')) : undefined;
      results[mode] = workload.map((argv) => measure(binDir, hostDir, argv, serverPid));
      spawnSync(join(binDir, 'docker'), ['rm', '-f', 'vllm_node'], {
        env: { PATH: `${binDir}:/usr/bin:/bin`, LIFTOFF_SIM_HOST_DIR: hostDir },
        stdio: 'ignore',
      });
      if (serverPid !== undefined) process.kill(serverPid, 'SIGTERM');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  const round = (n: number): number => Math.round(n * 100) / 100;
  for (const [mode, costs] of Object.entries(results)) {
    console.log(`${mode} (${calls} calls each):`);
    for (const c of costs)
      console.log(
        `  ${c.tool.padEnd(58)} CPU ${round(c.cpuMsPerCall)} ms/call (server ${round(c.serverCpuMsPerCall)}), wall ${round(c.wallMsPerCall)} ms`,
      );
  }
}

await main();
