// The cluster spec. One schema serves the YAML file, the CLI and a spec pasted into the Temporal UI.
// No Node builtins here: workflows import it to validate their input.
import { z } from 'zod';
import { modelPathFor } from './derive.js';
import { credentialShapedValues, isSecretFlag } from '../shared/secrets.js';
import { dangerousMountProblem, logPathProblem, protectedUnitProblem } from './host-guards.js';
import { companionIssues, companionsSchema } from './companions.js';
import { rolloutSchema } from './rollout.js';
import { superviseSchema } from './supervise.js';
import { notifySchema } from './notify.js';
import { launchBackends, multiprocIssues, rayOnlyFields, writtenFieldIssues } from './backend.js';
import { boundedDuration, specTimeout } from './duration.js';
import { envMap } from './env-schema.js';
import { problemCheck, shown } from './errors.js';
import { hostIssues, jumpChainIssues } from './host-rules.js';
import { hour, maxChars, maxHosts, maxItems, maxRenderedBytes, second } from './limits.js';
import {
  argText,
  cappedList,
  cappedText,
  hostPath,
  imageRef,
  port,
  utf8Bytes,
  volume,
  workerPath,
} from './text-fields.js';

export { secretRefSchema, type SecretRef, type EnvValue, type EnvSpec } from './env-schema.js';

/** A host or cluster name: what becomes part of a workflow id and a search attribute. */
export const hostNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

const hostName = z
  .string()
  .regex(hostNamePattern, 'expected a host name of letters, digits, ".", "_" or "-"');

const ipv4 = cappedText(15).refine(
  (s) =>
    // No leading zeros: some tools read 010.1.2.3 as octal.
    /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.test(s) &&
    s.split('.').every((o) => Number(o) <= 255),
  {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not an IPv4 address (four numbers 0-255, no leading zeros)`,
  },
);

/** What docker accepts as a container name: its pattern needs at least two characters. */
const containerName = cappedText(maxChars.containerName).regex(
  /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/,
  'expected a docker container name ([a-zA-Z0-9][a-zA-Z0-9_.-]+)',
);

const unitName = cappedText(maxChars.unitName).regex(
  /^[A-Za-z0-9:_.\\@-]+(\.(service|socket|target|timer|mount|path|scope|slice))?$/,
  'expected a systemd unit name such as vllm.service',
);

/** How to write the value at `path` without the credential: the reference that field takes. */
function credentialFix(path: readonly PropertyKey[]): string {
  const [section, field, name] = path;
  if ((section === 'ray' || section === 'serve') && field === 'env' && typeof name === 'string')
    return `Reference it instead: ${name}: { fromEnv: ${name} } (read from the worker's environment) or ${name}: { fromFile: /path/on/the/worker/host }`;
  if (section === 'serve' && field === 'args')
    return `Pass it through serve.env with a reference instead: serve.env.NAME: { fromEnv: NAME } (read from the worker's environment) or { fromFile: /path/on/the/worker/host }`;
  if (section === 'notify')
    return `Reference the URL instead: url: { fromEnv: NAME } (read from the worker's environment) or url: { fromFile: /path/on/the/worker/host }`;
  return `Keep it out of the spec: put it in the worker's environment or a file on the worker, and pass it through ray.env or serve.env as { fromEnv: NAME } or { fromFile: /path/on/the/worker/host }`;
}

const unixUser = z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/i, 'expected a Unix user name');

export const sshSchema = z.strictObject({
  user: unixUser,
  port: port.default(22),
  /** A path, never key material: the key is read inside activities. */
  privateKeyPath: workerPath.optional(),
  useAgent: z.boolean().default(false),
  knownHostsPath: workerPath.default('~/.ssh/known_hosts'),
});

export const hostSchema = z.strictObject({
  name: hostName,
  address: cappedText(maxChars.address).regex(
    /^[A-Za-z0-9][A-Za-z0-9.:-]*$/,
    'expected an IP address or DNS name',
  ),
  port: port.optional(),
  user: unixUser.optional(),
  clusterIp: ipv4.optional(),
  role: z.enum(['head', 'worker']).default('worker'),
  jumpHost: hostName.optional(),
});

/** The part of the spec the connectivity probe needs; the deploy spec extends it. */
export const probeSpecSchema = z
  .object({
    cluster: hostName,
    ssh: sshSchema,
    hosts: cappedList(hostSchema, maxHosts, 'hosts').min(1, 'expected at least one host'),
  })
  .superRefine((spec, ctx) => {
    // The probe needs no head, but it follows the jump chains: they must lead somewhere, in a few hops.
    if (spec.hosts.length > maxHosts) return;
    for (const issue of jumpChainIssues(spec.hosts)) ctx.addIssue({ code: 'custom', ...issue });
  });

const deployHostSchema = hostSchema.extend({ clusterIp: ipv4 });

const deploySpecObject = z
  .strictObject({
    cluster: hostName,
    /** Hand the hosts over from the cluster that holds them, as `liftoff deploy --take-over` does. */
    takeOver: z.boolean().default(false),
    ssh: sshSchema,
    hosts: cappedList(deployHostSchema, maxHosts, 'hosts').min(1, 'expected at least one host'),
    // An absent section is parsed from {} (.prefault), so it takes its fields' own defaults.
    cleanup: z
      .strictObject({
        services: cappedList(
          unitName.superRefine(problemCheck(protectedUnitProblem)),
          maxItems.cleanup,
          'units',
        ).default([]),
        disableServices: z.boolean().default(false),
        containers: cappedList(containerName, maxItems.cleanup, 'containers').default([]),
      })
      .prefault({}),
    gpu: z
      .strictObject({
        perHost: z.number().int().min(1).max(16).default(1),
        /** Device memory still used that counts as "not clear" (where nvidia-smi reports it). */
        maxUsedMiB: z.number().int().min(0).default(1024),
        /** Unified-memory hosts (GB10): MemAvailable needed before the load. */
        minAvailableMiB: z.number().int().min(0).default(65536),
        /** How long to wait for memory to be freed after containers are removed. */
        clearTimeout: specTimeout('2m').default('2m'),
      })
      .prefault({}),
    ray: z.strictObject({
      image: imageRef,
      container: containerName,
      port: port.default(rayOnlyFields.port),
      env: envMap,
      volumes: cappedList(volume, maxItems.volumes, 'volumes').default([]),
      /** Lets ray.volumes mount `/` or the container runtime's socket, which give the container the host. */
      allowDangerousMounts: z.boolean().optional(),
      /**
       * Has no effect, so docker is not given it: the containers run with --ipc host, which gives them the host's
       * /dev/shm (its size is the host's), and Docker then applies no --shm-size (inspect still reports it). Still
       * accepted: the specs that earlier versions stored in schedules, supervisors and running deploys carry 10g.
       */
      shmSize: cappedText(maxChars.shmSize)
        .regex(/^\d+[bkmg]?$/i, 'expected a size such as 10g')
        .optional(),
      /** How long the Ray cluster may take to show every node and GPU. */
      verifyTimeout: specTimeout('90s').default(rayOnlyFields.verifyTimeout),
    }),
    serve: z.strictObject({
      /** ray: a Ray cluster in Docker, vLLM placed over it. multiproc: vLLM's own multi-node mode, one rank a host. */
      backend: z.enum(launchBackends).default('ray'),
      /** multiproc: where rank 0's torch.distributed store listens on the head (vLLM's --master-port). */
      masterPort: port.optional(),
      /** multiproc: how long a rank waits for the others at the rendezvous (vLLM's --distributed-timeout-seconds). */
      distributedTimeout: specTimeout('2m').optional(),
      model: cappedText(maxChars.model).regex(
        /^[A-Za-z0-9][A-Za-z0-9._/-]*$/,
        'expected a model id such as Org/Model-Name',
      ),
      // vllm reads a value starting with "-" as its next option, and the launch fails only after Ray started.
      servedModelName: argText(maxChars.model)
        .regex(/^[^-]/, 'expected a non-empty name not starting with "-" (vllm would read that as an option)')
        .optional(),
      port: port.default(8000),
      tensorParallelSize: z.number().int().min(1),
      args: cappedList(argText(maxChars.arg), maxItems.args, 'args')
        .default([])
        .superRefine((args, ctx) => {
          const bytes = args.reduce((n, arg) => n + utf8Bytes(arg) + 1, 0);
          if (bytes > maxRenderedBytes) {
            ctx.addIssue({
              code: 'custom',
              message: `${bytes} bytes on the command line, more than the ${maxRenderedBytes} (64 KiB) serve.args may take; put long values (a chat template, a JSON config) in a file on the hosts and pass its path`,
            });
          }
          args.forEach((arg, i) => {
            // The same rule the report's redaction uses (src/shared/secrets.ts): what is refused here is what a
            // report would hide. The flag is quoted so that redacting this message does not eat its next word.
            if (isSecretFlag(arg)) {
              ctx.addIssue({
                code: 'custom',
                path: [i],
                message: `${shown(arg.replace(/=.*$/s, ''))} takes a credential, which would be stored in Temporal's history. Pass it through serve.env with a reference instead: serve.env.VLLM_API_KEY: { fromEnv: VLLM_API_KEY } (read from the worker's environment) or { fromFile: /path/on/the/worker/host } (vLLM reads VLLM_API_KEY; HF_TOKEN for the Hugging Face token)`,
              });
            }
          });
        }),
      env: envMap,
      logPath: hostPath.superRefine(problemCheck(logPathProblem)),
      /** Where the weights live on each host; default: the Hugging Face cache of a mounted volume. */
      modelPath: hostPath.optional(),
      loadTimeout: specTimeout('25m').default('25m'),
      /** One remote command on the head per poll: more often than once a second is load on the head, not news. */
      pollInterval: boundedDuration({ minMs: second, maxMs: hour, example: '10s' }).default('10s'),
      /** A log that does not move for this long, with the process alive, is a hang. */
      stallTimeout: specTimeout('5m').default('5m'),
      /** A worker host that cannot be reached (or its Ray container is gone) for this long fails the load. */
      hostUnreachableTimeout: specTimeout('2m').default('2m'),
      /**
       * The head is polled every serve.pollInterval; the other hosts (their Ray containers, or ranks) every this
       * many polls, and at every poll while one does not answer.
       */
      workerPollEvery: z.number().int().min(1).max(1000).default(3),
    }),
    smoke: z
      .strictObject({
        prompt: cappedText(maxChars.prompt).min(1).default('Reply with one word: ready?'),
        maxTokens: z.number().int().min(1).max(4096).default(16),
      })
      .prefault({}),
    preflight: z
      .strictObject({
        minFreeDiskGiB: z.number().min(0).default(10),
        /** Compare the weights' sha256 across hosts too: reads every byte (over 100 GB for a 122B model). */
        hashWeights: z.boolean().default(false),
        /** Clock skew between hosts above this is a warning of preflight. */
        maxClockSkew: boundedDuration({ minMs: 1, maxMs: hour, example: '5s' }).default('5s'),
      })
      .prefault({}),
    onFailure: z.enum(['leave', 'teardown']).default('leave'),
    companions: companionsSchema,
    rollout: rolloutSchema,
    supervise: superviseSchema,
    notify: notifySchema,
  })
  .superRefine((spec, ctx) => {
    // Whatever its name: a value the rules call a credential never enters the workflow's input.
    for (const { path, kind } of credentialShapedValues(spec)) {
      ctx.addIssue({
        code: 'custom',
        path,
        message: `looks like ${kind}; a credential written in the spec is stored in Temporal's history and shows in ps and docker inspect on the hosts. ${credentialFix(path)}`,
      });
    }
    for (const issue of hostIssues(spec.hosts, spec.ssh.port)) ctx.addIssue({ code: 'custom', ...issue });
    if (spec.ray.allowDangerousMounts !== true) {
      spec.ray.volumes.forEach((volume, i) => {
        const problem = dangerousMountProblem(volume);
        if (problem) ctx.addIssue({ code: 'custom', path: ['ray', 'volumes', i], message: problem });
      });
    }
    if (modelPathFor(spec) === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['serve', 'modelPath'],
        message: `not set, and no ray.volumes entry mounts ${'/root/.cache/huggingface'}: set serve.modelPath to the weights folder on the hosts`,
      });
    }
    for (const issue of multiprocIssues(spec)) ctx.addIssue({ code: 'custom', ...issue });
    for (const issue of companionIssues(spec)) ctx.addIssue({ code: 'custom', ...issue });
    if (spec.serve.backend === 'ray' && spec.serve.port === spec.ray.port) {
      ctx.addIssue({
        code: 'custom',
        path: ['serve', 'port'],
        message: `${spec.serve.port} is also ray.port: the server and the Ray head would both listen on it on the head; pick another port`,
      });
    }
    const gpus = spec.hosts.length * spec.gpu.perHost;
    if (spec.serve.backend === 'ray' && spec.serve.tensorParallelSize > gpus) {
      ctx.addIssue({
        code: 'custom',
        path: ['serve', 'tensorParallelSize'],
        message: `${spec.serve.tensorParallelSize} needs more GPUs than the cluster has (${spec.hosts.length} hosts × gpu.perHost ${spec.gpu.perHost} = ${gpus})`,
      });
    }
  });

/**
 * The deploy spec. The fields as written are checked first, before defaults fill them in (a Ray-only field set
 * for a multiproc launch); the same raw-first pattern as envMap.
 */
export const deploySpecSchema = z
  .custom<z.input<typeof deploySpecObject>>()
  .superRefine((raw, ctx) => {
    for (const issue of writtenFieldIssues(raw)) ctx.addIssue({ code: 'custom', ...issue });
  })
  .pipe(deploySpecObject);

export type SshSpec = z.infer<typeof sshSchema>;
export type HostSpec = z.infer<typeof hostSchema>;
export type ProbeSpec = z.infer<typeof probeSpecSchema>;
export type DeploySpec = z.infer<typeof deploySpecSchema>;
/** What a user writes (defaults not yet applied). */
export type DeploySpecInput = z.input<typeof deploySpecSchema>;
