// `gpu-hog --mib N [--name python3] [--gpu 0|all]`: a process that holds GPU memory until it dies, like a
// forgotten inference server. SIGTERM/SIGINT release the memory; after SIGKILL the registry entry stays until
// liveGpuProcesses notices the pid is dead (and longer under the gpuHeldAfterKillSeconds fault).
import { constants } from 'node:os';
import { hostDir, readHostConfig, registerGpuProcess, releaseGpuProcess } from '../host-state.js';
import type { ToolMain } from './tool.js';

function usage(message: string): number {
  process.stderr.write(`gpu-hog: ${message}\nusage: gpu-hog --mib N [--name NAME] [--gpu INDEX|all]\n`);
  return 2;
}

export const main: ToolMain = async (args) => {
  let mib: number | undefined;
  let name = 'python3';
  let gpu = '0';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const eq = arg.indexOf('=');
    const key = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const value = arg.startsWith('--') && eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined) return usage(`${key} needs a value`);
    if (key === '--mib') mib = Number(value);
    else if (key === '--name') name = value;
    else if (key === '--gpu') gpu = value;
    else return usage(`unknown option ${arg}`);
  }
  if (mib === undefined || !Number.isFinite(mib) || mib <= 0) return usage('--mib must be a positive number');

  const dir = hostDir();
  const cfg = readHostConfig(dir);
  const indices = gpu === 'all' ? Array.from({ length: cfg.gpuCount }, (_, i) => i) : [Number(gpu)];
  if (indices.some((i) => !Number.isInteger(i) || i < 0 || i >= cfg.gpuCount))
    return usage(`no GPU ${gpu} on this host (${cfg.gpuCount} GPUs)`);

  for (const gpuIndex of indices)
    registerGpuProcess(dir, { pid: process.pid, processName: name, usedMiB: mib, gpuIndex });
  process.stdout.write(`gpu-hog: pid ${process.pid} holds ${mib} MiB on GPU ${indices.join(',')}\n`);

  return new Promise<number>(() => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    const release = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      releaseGpuProcess(dir, process.pid);
      // Die of the signal, as an unhandled SIGTERM would, so the exit status reads 143 (or 130).
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 15)), 1000).unref();
    };
    process.once('SIGTERM', release);
    process.once('SIGINT', release);
  });
};
