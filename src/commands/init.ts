// `liftoff init --host NAME=ADDRESS …`: writes a commented spec from what the hosts show, read only: GPUs,
// interfaces (RDMA links where ibdev2netdev is installed), docker images, models in the Hugging Face cache,
// and the vLLM services and containers running now (suggested for cleanup; those beside the main model also
// offered as companions, with the command line read from each, which a terminal user keeps or declines one by one). It runs here, not as a workflow:
// there is no spec yet to hand a worker, and it only reads. Host keys are verified against --known-hosts as
// everywhere else; the written spec must pass the schema and this machine's worker policy before it is
// written, and an existing file is never replaced without --force; with it, a link at -o is replaced, not written through.
import { userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import { parseSpecText } from '../config/load.js';
import { deploySpecSchema, hostNamePattern, sshSchema } from '../config/schema.js';
import { resolveSshTarget } from '../config/targets.js';
import { localPolicyAllowing } from '../config/policy-check.js';
import { SshPool } from '../ssh/executor.js';
import { emit } from '../cli/render.js';
import { OutputExistsError, outputTaken, writeOutputFile } from '../cli/output-file.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { chooseSpec, placement, type InitChoices } from '../init/choose.js';
import { probeHost, type HostFacts } from '../init/probe.js';
import { writeSpecText } from '../init/write-spec.js';
import { confirmCompanions, type CompanionsMode } from '../init/confirm.js';
import { shownCommandLine } from '../init/companions.js';

interface InitOptions {
  host: string[];
  jump?: string;
  output: string;
  force?: boolean;
  cluster: string;
  user?: string;
  key?: string;
  agent?: boolean;
  knownHosts: string;
  json?: boolean;
  yes?: boolean;
  /** false with --no-companions. */
  companions: boolean;
}

/** What --json shows of a host: its facts, each command line read shown as the spec's comments show it. */
type ShownHostFacts = Omit<HostFacts, 'commandLines'> & {
  commandLines: { kind: 'unit' | 'container'; name: string; commandLine: string | undefined }[];
};

export interface InitResult {
  written: string;
  cluster: string;
  hosts: ShownHostFacts[];
  choices: InitChoices;
  spec: string;
}

function parseHosts(values: string[], jump: string | undefined): { name: string; address: string }[] {
  if (values.length === 0)
    throw new UsageError('--host NAME=ADDRESS is required (once per host; the first is the head)');
  const hosts = values.map((v) => {
    const eq = v.indexOf('=');
    const name = eq > 0 ? v.slice(0, eq) : '';
    const address = eq > 0 ? v.slice(eq + 1) : '';
    if (!hostNamePattern.test(name) || address === '' || /\s/.test(address)) {
      throw new UsageError(
        `--host ${JSON.stringify(v)}: expected NAME=ADDRESS, e.g. --host spark1=192.168.1.11 (NAME a host name)`,
      );
    }
    return { name, address };
  });
  const dup = hosts.find((h, i) => hosts.findIndex((o) => o.name === h.name) !== i);
  if (dup) throw new UsageError(`--host ${dup.name} is given twice`);
  if (jump !== undefined && !hosts.some((h) => h.name === jump)) {
    throw new UsageError(
      `--jump ${jump} is not one of the --host names (${hosts.map((h) => h.name).join(', ')})`,
    );
  }
  return hosts;
}

function outputExists(path: string, what: string): UsageError {
  return new UsageError(`${path} exists; ${what}. Pass --force to replace it, or -o another file`);
}

function renderInit(r: InitResult): string {
  const lines = [`probed ${r.hosts.length} hosts (read only) for cluster ${r.cluster}:`];
  for (const h of r.choices.hosts) {
    const f = r.hosts.find((x) => x.name === h.name);
    lines.push(
      `  ${h.name} (${h.role}${h.jumpHost ? `, via ${h.jumpHost}` : ''}): ${f?.gpus.length ?? 0} GPU ${[...new Set(f?.gpus.map((g) => g.name))].join(', ')}; clusterIp ${h.cluster ? `${h.cluster.value.ip} on ${h.cluster.value.iface}` : 'none found'}${h.cluster && h.cluster.alternatives.length > 0 ? ` (of ${h.cluster.alternatives.length + 1} candidates)` : ''}`,
    );
  }
  lines.push(`  image ${r.choices.image.reason}`);
  lines.push(
    `  model ${r.choices.model ? `${r.choices.model.value.id} in ${r.choices.model.value.cacheDir}` : 'none found'}`,
  );
  lines.push(
    `  cleanup: services ${r.choices.services.map((s) => s.name).join(', ') || 'none'}; containers ${r.choices.containers.map((c) => c.name).join(', ') || 'none'}`,
  );
  const kept = r.choices.companions.proposals;
  lines.push(
    `  companions: ${kept.map((p) => `${p.companion.name} on ${p.companion.host} (from ${p.source.name})`).join(', ') || 'none'}`,
  );
  for (const w of r.choices.warnings) lines.push(`  warning: ${w}`);
  lines.push(`wrote ${r.written}; it validates. Next: liftoff plan -c ${r.written}`);
  return lines.join('\n');
}

/**
 * How the found services are kept: asked one by one on a terminal; all kept with --yes, --json or without a
 * terminal (a script's init must not wait on a question); none with --no-companions. Questions go to stderr.
 */
async function withCompanionsMode<T>(
  opts: InitOptions,
  use: (mode: CompanionsMode) => Promise<T>,
): Promise<T> {
  if (!opts.companions) return use({ keep: 'none' });
  if (opts.yes || opts.json || !process.stdin.isTTY || !process.stderr.isTTY) return use({ keep: 'all' });
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await use({ keep: 'ask', ask: (question) => rl.question(question) });
  } finally {
    rl.close();
  }
}

export const initCommand = new Command('init')
  .description('probe hosts over SSH (read only) and write a commented spec that validates')
  .option(
    '--host <NAME=ADDRESS>',
    'a host to probe; repeat for each, the first is the head',
    (v: string, acc: string[]) => [...acc, v],
    [] as string[],
  )
  .option('--jump <NAME>', 'reach every other host through this one (its address as the jump host sees it)')
  .option('-o, --output <file>', 'where to write the spec', 'spec.yaml')
  .option('--force', 'replace the file if it exists')
  .option('--cluster <name>', 'the cluster name in the spec', 'liftoff')
  .option('--user <user>', 'SSH user (default: yours)')
  .option('--key <file>', 'SSH private key (ssh.privateKeyPath)')
  .option('--agent', 'use the SSH agent (ssh.useAgent)')
  .option(
    '--known-hosts <file>',
    'known_hosts that pins every host key (ssh.knownHostsPath)',
    '~/.ssh/known_hosts',
  )
  .option('--json', 'print what was probed and chosen as JSON')
  .option('-y, --yes', 'keep every vLLM service found as a companion without asking')
  .option('--no-companions', 'offer no companions: the services found are only stopped')
  .action((opts: InitOptions) =>
    runCommand(opts, async () => {
      const hosts = parseHosts(opts.host, opts.jump);
      if (!hostNamePattern.test(opts.cluster))
        throw new UsageError(`--cluster ${JSON.stringify(opts.cluster)} is not a valid name`);
      // Before anything connects: a spec already there is someone's work (a link there counts, even dangling).
      if (!opts.force && outputTaken(opts.output))
        throw outputExists(opts.output, 'nothing was probed or written');
      const ssh = {
        user: opts.user ?? userInfo().username,
        ...(opts.key !== undefined ? { privateKeyPath: opts.key } : {}),
        ...(opts.agent ? { useAgent: true } : {}),
        knownHostsPath: opts.knownHosts,
      };
      const sshSpec = sshSchema.safeParse(ssh);
      if (!sshSpec.success)
        throw new UsageError(
          `the SSH options are invalid: ${sshSpec.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        );
      const hostSpecs = hosts.map((h, i) => ({ ...h, ...placement(i, h.name, opts.jump) }));
      const pool = new SshPool(sshSpec.data);
      let facts: HostFacts[];
      try {
        facts = await Promise.all(
          hosts.map(async (h) =>
            probeHost(
              await pool.session(resolveSshTarget(hostSpecs, sshSpec.data, h.name)),
              h.name,
              h.address,
            ),
          ),
        );
      } finally {
        await pool.closeAll();
      }
      const chosen = chooseSpec(facts, opts.jump);
      const choices = {
        ...chosen,
        companions: await withCompanionsMode(opts, (mode) => confirmCompanions(chosen.companions, mode)),
      };
      const text = writeSpecText({
        cluster: opts.cluster,
        ssh,
        choices,
        facts,
        probedAt: new Date().toISOString(),
      });
      const spec = parseSpecText(deploySpecSchema, text, `the spec for ${opts.output}`);
      localPolicyAllowing(spec, `the spec for ${opts.output} (not written)`);
      try {
        writeOutputFile(opts.output, text, { replace: opts.force === true });
      } catch (err) {
        if (err instanceof OutputExistsError)
          throw outputExists(opts.output, 'it appeared while the hosts were probed');
        throw err;
      }
      emit(
        opts,
        {
          written: opts.output,
          cluster: opts.cluster,
          // A command line read from a host may carry a credential: shown redacted, as in the spec's comments.
          hosts: facts.map((f) => ({
            ...f,
            commandLines: f.commandLines.map((c) => ({
              kind: c.kind,
              name: c.name,
              commandLine: c.read ? shownCommandLine(c.read.argv) : undefined,
            })),
          })),
          choices,
          spec: text,
        },
        renderInit,
      );
    }),
  );
