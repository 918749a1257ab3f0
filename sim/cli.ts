// `npm run sim -- up|down|status|fault …`: the simulated cluster from the command line.
import { Command, InvalidArgumentError, Option } from 'commander';
import pc from 'picocolors';
import {
  clusterStatus,
  defaultStateDir,
  downCluster,
  readCluster,
  setFaults,
  setHostDown,
  setHostUp,
  upCluster,
  type HostStatus,
  type SimCluster,
  type SimHost,
} from './cluster.js';
import { readFaults, type HostFaults } from './host-state.js';
import { maxSimHosts } from './network.js';
import { clearDisagreements, setDisagreement, type Disagreement } from './disagree.js';

function intArg(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected an integer ${min}..${max}`);
    return n;
  };
}

function numberArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a non-negative number');
  return n;
}

function sshCommand(cluster: SimCluster, host: SimHost): string {
  const port = host.sshPort === 22 ? '' : ` -p ${host.sshPort}`;
  const base = `ssh -i ${cluster.privateKeyPath} -o UserKnownHostsFile=${cluster.knownHostsPath} -o StrictHostKeyChecking=yes${port}`;
  if (host.reachableFromControl) return `${base} ${cluster.sshUser}@${host.address}`;
  // ssh passes -F on to the jump connection but not -i or -o, so the jump needs the config file.
  return `ssh -F ${cluster.sshConfigPath} ${host.name}`;
}

function printCluster(cluster: SimCluster): void {
  console.log(`${pc.bold('simulated cluster')} (${cluster.mode}) state in ${cluster.stateDir}`);
  for (const h of cluster.hosts) {
    const reach = h.reachableFromControl ? '' : pc.yellow(' (cluster network only: via a jump host)');
    console.log(
      `\n${pc.bold(h.name)}  ${h.address}:${h.sshPort}  cluster ${h.clusterIp} on ${h.clusterIface}${reach}`,
    );
    console.log(`  ${sshCommand(cluster, h)}`);
  }
  console.log(`\nor: ssh -F ${cluster.sshConfigPath} <host>`);
  console.log(`a liftoff worker for it: LIFTOFF_WORKER_POLICY=${cluster.workerPolicyPath} liftoff worker`);
}

function printStatus(hosts: HostStatus[]): void {
  for (const h of hosts) {
    const sshd = h.sshd === 'up' ? pc.green('sshd up') : pc.red('sshd down');
    const link = h.link === 'none' ? '' : h.link === 'up' ? ', link up' : pc.red(', link down');
    const dockerd =
      h.dockerd === undefined ? '' : h.dockerd === 'up' ? ', dockerd up' : pc.red(', dockerd down');
    console.log(`${pc.bold(h.name)}  ${h.address}:${h.sshPort}  ${sshd}${link}${dockerd}`);
    if (h.dockerdError) console.log(`  ${pc.red('docker')}: ${h.dockerdError}`);
    for (const u of h.units) {
      const state = u.active ? pc.green('active') : 'inactive';
      console.log(`  unit ${u.name}: ${state}, ${u.enabled ? 'enabled' : 'disabled'}`);
    }
    for (const c of h.containers) {
      console.log(
        `  container ${c.name} (${c.image}): ${c.running ? pc.green('running') : c.status || 'exited'}`,
      );
    }
    for (const g of h.gpuProcesses) {
      console.log(`  gpu${g.gpuIndex} pid ${g.pid} ${g.processName} ${g.usedMiB} MiB`);
    }
    const faults = Object.keys(h.faults);
    if (faults.length > 0) console.log(`  ${pc.yellow('faults')}: ${JSON.stringify(h.faults)}`);
  }
}

/** The `disagree` options that are a Disagreement's fields as they stand. */
type PassedThrough =
  | 'imageIdSalt'
  | 'missingShard'
  | 'brokenShardLink'
  | 'emptyShard'
  | 'truncatedShard'
  | 'clusterIface'
  | 'clusterAddress'
  | 'mtu';

const program = new Command('sim')
  .description('Simulated GPU cluster for liftoff: hosts with real sshd, simulated docker/ray/vllm')
  .option('--state-dir <dir>', 'state folder (env LIFTOFF_SIM_DIR)', defaultStateDir());

program
  .command('up')
  .description('bring up a fresh cluster (tears down the one in the state folder first)')
  .requiredOption('--hosts <n>', 'number of hosts', intArg(1, maxSimHosts))
  .addOption(
    new Option('--mode <mode>', 'network namespaces or loopback addresses').choices(['netns', 'loopback']),
  )
  .addOption(new Option('--flavour <flavour>', 'GPU type').choices(['gb10', 'h200']).default('gb10'))
  .option('--gpus-per-host <n>', 'GPUs per host', intArg(1, 8), 1)
  .option('--cluster-only <names...>', 'hosts reachable only through another host (netns mode)')
  .option('--shard-seconds <s>', 'seconds per safetensors shard while vllm loads', numberArg)
  .option('--net-index <k>', 'network layout, to run several clusters side by side', intArg(0, 99), 0)
  .option('--no-seed', 'skip the reference state (running units and containers)')
  .option('--real', 'real Ray and vLLM (CPU build) from .venv-real in the containers (implies --docker)')
  .option('--docker', 'a real Docker engine per host (Debian docker.io) instead of the simulated docker')
  .option('--without-gpu-runtime <names...>', 'real-Docker hosts whose daemon cannot give containers GPUs')
  .option(
    '--ssh-user <name>',
    'log in as this ordinary user in the docker group, made if missing (netns mode)',
  )
  .option('--json', 'print the cluster as JSON')
  .action(
    async (o: {
      hosts: number;
      mode?: 'netns' | 'loopback';
      flavour: 'gb10' | 'h200';
      gpusPerHost: number;
      clusterOnly?: string[];
      shardSeconds?: number;
      netIndex: number;
      seed: boolean;
      real?: boolean;
      docker?: boolean;
      withoutGpuRuntime?: string[];
      sshUser?: string;
      json?: boolean;
    }) => {
      const started = Date.now();
      const cluster = await upCluster({
        hosts: o.hosts,
        mode: o.mode,
        stateDir: program.opts<{ stateDir: string }>().stateDir,
        flavour: o.flavour,
        gpusPerHost: o.gpusPerHost,
        clusterOnly: o.clusterOnly,
        vllm: o.shardSeconds === undefined ? undefined : { shardSeconds: o.shardSeconds },
        seedReferenceState: o.seed,
        netIndex: o.netIndex,
        realTools: o.real === true,
        // The real Ray and vLLM run only in real containers.
        docker: o.docker === true || o.real === true ? 'real' : 'simulated',
        noGpuRuntime: o.withoutGpuRuntime,
        ...(o.sshUser === undefined ? {} : { sshUser: o.sshUser }),
      });
      if (o.json) {
        console.log(JSON.stringify(cluster, null, 2));
        return;
      }
      printCluster(cluster);
      console.log(pc.dim(`\nup in ${((Date.now() - started) / 1000).toFixed(1)} s`));
    },
  );

program
  .command('down')
  .description('stop every process of the cluster, delete its namespaces and its state folder')
  .action(async () => {
    await downCluster(program.opts<{ stateDir: string }>().stateDir);
  });

program
  .command('status')
  .description('per host: sshd, links, units, containers, GPU processes, faults')
  .option('--json', 'print as JSON')
  .action(async (o: { json?: boolean }) => {
    const stateDir = program.opts<{ stateDir: string }>().stateDir;
    if (!readCluster(stateDir)) {
      console.log(`no simulated cluster in ${stateDir}`);
      process.exitCode = 1;
      return;
    }
    const status = await clusterStatus(stateDir);
    if (o.json) console.log(JSON.stringify(status, null, 2));
    else printStatus(status);
  });

program
  .command('fault')
  .description('switch faults on a host (they add up; --clear removes them)')
  .argument('<host>', 'host name, e.g. spark2')
  .option('--crash-at-shard <k>', 'vllm crashes after loading shard k', intArg(0, 100000))
  .option('--hang-at-shard <k>', 'vllm stops making progress after shard k', intArg(0, 100000))
  .option('--oom-at-graph-capture', 'vllm runs out of memory while capturing CUDA graphs')
  .option(
    '--gpu-held-after-kill <s>',
    'GPU memory of a killed process stays reported for s seconds',
    numberArg,
  )
  .option('--ray-cannot-reach-head', 'a Ray worker on this host cannot reach its head')
  .addOption(new Option('--down <what>', 'take sshd or the network link down').choices(['sshd', 'link']))
  .option('--up', 'undo --down: links up and sshd running')
  .option('--clear', 'remove every tool fault')
  .action(
    async (
      host: string,
      o: {
        crashAtShard?: number;
        hangAtShard?: number;
        oomAtGraphCapture?: boolean;
        gpuHeldAfterKill?: number;
        rayCannotReachHead?: boolean;
        down?: 'sshd' | 'link';
        up?: boolean;
        clear?: boolean;
      },
    ) => {
      const stateDir = program.opts<{ stateDir: string }>().stateDir;
      const cluster = readCluster(stateDir);
      const hostDir = cluster?.hosts.find((h) => h.name === host)?.hostDir;
      if (!cluster || !hostDir) throw new Error(`no host ${host} in the cluster in ${stateDir}`);
      const faults: HostFaults = o.clear ? {} : readFaults(hostDir);
      if (o.crashAtShard !== undefined) faults.crashAtShard = o.crashAtShard;
      if (o.hangAtShard !== undefined) faults.hangAtShard = o.hangAtShard;
      if (o.oomAtGraphCapture) faults.oomAtGraphCapture = true;
      if (o.gpuHeldAfterKill !== undefined) faults.gpuHeldAfterKillSeconds = o.gpuHeldAfterKill;
      if (o.rayCannotReachHead) faults.rayCannotReachHead = true;
      setFaults(stateDir, host, faults);
      if (o.down) await setHostDown(stateDir, host, o.down);
      if (o.up) await setHostUp(stateDir, host);
      console.log(
        `${host}: faults ${JSON.stringify(faults)}${o.down ? `, ${o.down} down` : ''}${o.up ? ', up' : ''}`,
      );
    },
  );

program
  .command('disagree')
  .description(
    "make a host disagree with the others, for preflight's agreement checks (--clear: every host back)",
  )
  .argument('[host]', 'host name, e.g. spark2')
  .option('--image-id-salt <s>', 'docker reports another image ID for every image (another build)')
  .option('--python-version <v>', 'the Python version inside every image')
  .option('--ray-version <v>', 'the Ray version inside every image')
  .option('--vllm-version <v>', 'the vLLM version inside every image')
  .option('--missing-shard <k>', 'shard k of the model is gone from the snapshot', intArg(1, 100000))
  .option('--broken-shard-link <k>', "shard k's link points at a missing blob", intArg(1, 100000))
  .option('--empty-shard <k>', "shard k's blob is empty", intArg(1, 100000))
  .option('--truncated-shard <k>', "shard k's blob is cut to half its size", intArg(1, 100000))
  .option('--cluster-iface <name>', 'rename the cluster interface')
  .option(
    '--cluster-address <ip>',
    'the cluster interface carries this address (same /24) instead of clusterIp (a host with a management link)',
  )
  .option('--mtu <n>', 'MTU of the cluster interface', intArg(576, 65535))
  .option('--block-ray-port', "TCP to the head's clusterIp on 6379 is unreachable from this host")
  .option(
    '--non-root-user <name>',
    'logind tracks the session as this user (uid 1000, no linger), RemoveIPC=yes',
  )
  .option('--clock-offset <s>', "seconds added to the host's clock", numberArg)
  .option('--clear', 'put every host back to the reference')
  .action(
    async (
      host: string | undefined,
      o: Pick<Disagreement, PassedThrough> & {
        pythonVersion?: string;
        rayVersion?: string;
        vllmVersion?: string;
        blockRayPort?: boolean;
        nonRootUser?: string;
        clockOffset?: number;
        clear?: boolean;
      },
    ) => {
      const stateDir = program.opts<{ stateDir: string }>().stateDir;
      const {
        pythonVersion,
        rayVersion,
        vllmVersion,
        blockRayPort,
        nonRootUser,
        clockOffset,
        clear,
        ...same
      } = o;
      if (clear) {
        await clearDisagreements(stateDir);
        console.log('every host agrees again');
        return;
      }
      const cluster = readCluster(stateDir);
      if (!host || !cluster) throw new Error(`name a host of the cluster in ${stateDir}, or --clear`);
      const headIp = cluster.hosts[0]?.clusterIp ?? '';
      const versions = {
        ...(pythonVersion ? { python: pythonVersion } : {}),
        ...(rayVersion ? { ray: rayVersion } : {}),
        ...(vllmVersion ? { vllm: vllmVersion } : {}),
      };
      const d: Disagreement = {
        ...same,
        imageVersions: Object.keys(versions).length ? versions : undefined,
        blockTcpTo: blockRayPort ? { ip: headIp, port: 6379 } : undefined,
        logind: nonRootUser ? { removeIpc: true, uid: 1000, name: nonRootUser, linger: false } : undefined,
        clockOffsetSeconds: clockOffset,
      };
      await setDisagreement(stateDir, host, d);
      console.log(`${host}: disagrees on ${JSON.stringify(d)}`);
    },
  );

await program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(pc.red(err instanceof Error ? err.message : String(err)));
  process.exitCode = 1;
});
