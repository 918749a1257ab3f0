// The cluster spec. One schema serves the YAML file, the CLI and a spec pasted into the Temporal UI.
// No Node builtins here: workflows import it to validate their input.
import { z } from 'zod';
import { parseDuration } from './duration.js';
import { modelPathFor } from './derive.js';
import { credentialShapedValues, isSecretEnvName, isSecretFlag } from '../shared/secrets.js';
import { hostSteeringEnvProblem, reservedEnvNameProblem } from './host-env.js';
import {
  dangerousMountProblem,
  homeRelativeProblem,
  logPathProblem,
  protectedUnitProblem,
} from './host-guards.js';
import { superviseSchema } from './supervise.js';
import { notifySchema } from './notify.js';
import { launchBackends, multiprocIssues, rayOnlyFields, writtenFieldIssues } from './backend.js';

/** A host or cluster name: what becomes part of a workflow id and a search attribute. */
export const hostNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

const hostName = z
  .string()
  .regex(hostNamePattern, 'expected a host name of letters, digits, ".", "_" or "-"');

const port = z
  .number()
  .int('expected a whole port number')
  .min(1, 'expected a port from 1 to 65535')
  .max(65535, 'expected a port from 1 to 65535');

const ipv4 = z.string().refine(
  (s) =>
    // No leading zeros: some tools read 010.1.2.3 as octal.
    /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.test(s) &&
    s.split('.').every((o) => Number(o) <= 255),
  {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not an IPv4 address (four numbers 0-255, no leading zeros)`,
  },
);

/** A duration such as "25m", "10s" or "1h30m"; kept as text in the spec, parsed where used. */
const duration = z.string().refine((s) => parseDuration(s) !== undefined, {
  error: (issue) => `${JSON.stringify(issue.input)} is not a duration (expected e.g. "30s", "10m", "1h30m")`,
});

/** What docker accepts as a container name: its pattern needs at least two characters. */
const containerName = z
  .string()
  .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/, 'expected a docker container name ([a-zA-Z0-9][a-zA-Z0-9_.-]+)');

// No argv string can carry NUL: the quoting function refuses it at run time, on a host, after Ray started.
const argText = z.string().refine((s) => !s.includes('\0'), {
  error: 'contains a NUL byte, which no command-line argument can carry',
});

/** What systemd accepts as a unit name. */
const unitName = z
  .string()
  .regex(
    /^[A-Za-z0-9:_.\\@-]+(\.(service|socket|target|timer|mount|path|scope|slice))?$/,
    'expected a systemd unit name such as vllm.service',
  );

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** A path on the worker's host: `~/` is the worker user's home. The worker policy decides which ones it reads. */
const workerPath = argText.regex(/^(\/|~\/)/, 'expected an absolute path (starting with / or ~/)');

/** A path on the GPU hosts: absolute, since `~` is never expanded there (liftoff quotes every path). */
const hostPath = argText.superRefine((path, ctx) => {
  const problem =
    homeRelativeProblem(path) ??
    (path.startsWith('/') ? undefined : 'expected an absolute path on the hosts (starting with /)');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A `ray.volumes` entry: its host side is a host path, so a `~` there is refused for the same reason. */
const volume = argText.superRefine((text, ctx) => {
  const problem =
    homeRelativeProblem(text) ??
    (/^\/[^:]*:\/[^:]*(:(ro|rw))?$/.test(text) ? undefined : 'expected HOST_PATH:CONTAINER_PATH[:ro|rw]');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * A secret is named, never written: the spec travels through Temporal's history, so the worker resolves the
 * reference (its own environment variable, or a file on its host) inside the activity that needs the value.
 */
export const secretRefSchema = z.union([
  z.strictObject({
    fromEnv: envName.superRefine((name, ctx) => {
      const problem = hostSteeringEnvProblem(name);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  }),
  z.strictObject({ fromFile: workerPath }),
]);
export type SecretRef = z.infer<typeof secretRefSchema>;
/** An env value in the spec: plain text, or a reference to a secret. */
export type EnvValue = string | SecretRef;

const envRecord = z
  .record(z.string(), z.union([argText, secretRefSchema]))
  .default({})
  .superRefine((env, ctx) => {
    for (const [name, value] of Object.entries(env)) {
      // Checked here rather than as the record's key schema, whose failure zod reports without the name.
      if (!envName.safeParse(name).success) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `${JSON.stringify(name)} is not an environment variable name (letters, digits and "_", not starting with a digit)`,
        });
      }
      // Secret references and secret-looking names travel to docker through the host shell's environment.
      const viaHostShell = typeof value !== 'string' || isSecretEnvName(name);
      const steering = viaHostShell ? hostSteeringEnvProblem(name) : undefined;
      if (steering) ctx.addIssue({ code: 'custom', path: [name], message: steering });
      if (typeof value === 'string' && value !== '' && isSecretEnvName(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `looks like a secret; a value written in the spec would be stored in Temporal's history. Reference it instead: ${name}: { fromEnv: ${name} } (read from the worker's environment) or ${name}: { fromFile: /path/on/the/worker/host }`,
        });
      }
    }
  });
// zod's record drops a `__proto__` key without a word, so the raw object's own keys are checked first. An absent
// env stays allowed (optional here, then envRecord's default of {}).
const envMap = z
  .custom<z.input<typeof envRecord>>()
  .optional()
  .superRefine((raw, ctx) => {
    if (typeof raw !== 'object' || raw === null) return;
    for (const name of Object.keys(raw)) {
      const problem = reservedEnvNameProblem(name);
      if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
    }
  })
  .pipe(envRecord);
export type EnvSpec = z.infer<typeof envMap>;

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

const imageRef = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._/:@-]*$/i, 'expected a docker image reference such as vllm/vllm-openai:latest');

export const sshSchema = z.strictObject({
  user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/i, 'expected a Unix user name'),
  port: port.default(22),
  /** A path, never key material: the key is read inside activities. */
  privateKeyPath: workerPath.optional(),
  useAgent: z.boolean().default(false),
  knownHostsPath: workerPath.default('~/.ssh/known_hosts'),
});

export const hostSchema = z.strictObject({
  name: hostName,
  address: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.:-]*$/, 'expected an IP address or DNS name'),
  port: port.optional(),
  user: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/i, 'expected a Unix user name')
    .optional(),
  clusterIp: ipv4.optional(),
  role: z.enum(['head', 'worker']).default('worker'),
  jumpHost: hostName.optional(),
});

/** The part of the spec the connectivity probe needs; the deploy spec extends it. */
export const probeSpecSchema = z.object({
  cluster: hostName,
  ssh: sshSchema,
  hosts: z.array(hostSchema).min(1, 'expected at least one host'),
});

const deployHostSchema = hostSchema.extend({ clusterIp: ipv4 });

const deploySpecObject = z
  .strictObject({
    cluster: hostName,
    ssh: sshSchema,
    hosts: z.array(deployHostSchema).min(1, 'expected at least one host'),
    cleanup: z
      .strictObject({
        services: z
          .array(
            unitName.superRefine((unit, ctx) => {
              const problem = protectedUnitProblem(unit);
              if (problem) ctx.addIssue({ code: 'custom', message: problem });
            }),
          )
          .default([]),
        disableServices: z.boolean().default(false),
        containers: z.array(containerName).default([]),
      })
      .default({ services: [], disableServices: false, containers: [] }),
    gpu: z
      .strictObject({
        perHost: z.number().int().min(1).max(16).default(1),
        /** Device memory still used that counts as "not clear" (where nvidia-smi reports it). */
        maxUsedMiB: z.number().int().min(0).default(1024),
        /** Unified-memory hosts (GB10): MemAvailable needed before the load. */
        minAvailableMiB: z.number().int().min(0).default(65536),
        /** How long to wait for memory to be freed after containers are removed. */
        clearTimeout: duration.default('2m'),
      })
      .default({ perHost: 1, maxUsedMiB: 1024, minAvailableMiB: 65536, clearTimeout: '2m' }),
    ray: z.strictObject({
      image: imageRef,
      container: containerName,
      port: port.default(rayOnlyFields.port),
      env: envMap,
      volumes: z.array(volume).default([]),
      /** Lets ray.volumes mount `/` or the container runtime's socket, which give the container the host. */
      allowDangerousMounts: z.boolean().optional(),
      shmSize: z
        .string()
        .regex(/^\d+[bkmg]?$/i, 'expected a size such as 10g')
        .default('10g'),
      /** How long the Ray cluster may take to show every node and GPU. */
      verifyTimeout: duration.default(rayOnlyFields.verifyTimeout),
    }),
    serve: z.strictObject({
      /** ray: a Ray cluster in Docker, vLLM placed over it. multiproc: vLLM's own multi-node mode, one rank a host. */
      backend: z.enum(launchBackends).default('ray'),
      /** multiproc: where rank 0's torch.distributed store listens on the head (vLLM's --master-port). */
      masterPort: port.optional(),
      /** multiproc: how long a rank waits for the others at the rendezvous (vLLM's --distributed-timeout-seconds). */
      distributedTimeout: duration.optional(),
      model: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, 'expected a model id such as Org/Model-Name'),
      // vllm reads a value starting with "-" as its next option, and the launch fails only after Ray started.
      servedModelName: argText
        .regex(/^[^-]/, 'expected a non-empty name not starting with "-" (vllm would read that as an option)')
        .optional(),
      port: port.default(8000),
      tensorParallelSize: z.number().int().min(1),
      args: z
        .array(argText)
        .default([])
        .superRefine((args, ctx) => {
          args.forEach((arg, i) => {
            // The same rule the report's redaction uses (src/shared/secrets.ts): what is refused here is what a
            // report would hide. The flag is quoted so that redacting this message does not eat its next word.
            if (isSecretFlag(arg)) {
              ctx.addIssue({
                code: 'custom',
                path: [i],
                message: `${JSON.stringify(arg.replace(/=.*$/s, ''))} takes a credential, which would be stored in Temporal's history. Pass it through serve.env with a reference instead: serve.env.VLLM_API_KEY: { fromEnv: VLLM_API_KEY } (read from the worker's environment) or { fromFile: /path/on/the/worker/host } (vLLM reads VLLM_API_KEY; HF_TOKEN for the Hugging Face token)`,
              });
            }
          });
        }),
      env: envMap,
      logPath: hostPath.superRefine((path, ctx) => {
        const problem = logPathProblem(path);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
      /** Where the weights live on each host; default: the Hugging Face cache of a mounted volume. */
      modelPath: hostPath.optional(),
      loadTimeout: duration.default('25m'),
      pollInterval: duration.default('10s'),
      /** A log that does not move for this long, with the process alive, is a hang. */
      stallTimeout: duration.default('5m'),
      /** A worker host that cannot be reached (or its Ray container is gone) for this long fails the load. */
      hostUnreachableTimeout: duration.default('2m'),
      /**
       * The head is polled every serve.pollInterval; the other hosts (their Ray containers, or ranks) every this
       * many polls, and at every poll while one does not answer.
       */
      workerPollEvery: z.number().int().min(1).max(1000).default(3),
    }),
    smoke: z
      .strictObject({
        prompt: z.string().min(1).default('Reply with one word: ready?'),
        maxTokens: z.number().int().min(1).max(4096).default(16),
      })
      .default({ prompt: 'Reply with one word: ready?', maxTokens: 16 }),
    preflight: z
      .strictObject({
        minFreeDiskGiB: z.number().min(0).default(10),
        /** Compare the weights' sha256 across hosts too: reads every byte (over 100 GB for a 122B model). */
        hashWeights: z.boolean().default(false),
        /** Clock skew between hosts above this is a warning of preflight. */
        maxClockSkew: duration.default('5s'),
      })
      .default({ minFreeDiskGiB: 10, hashWeights: false, maxClockSkew: '5s' }),
    onFailure: z.enum(['leave', 'teardown']).default('leave'),
    supervise: superviseSchema,
    notify: notifySchema(secretRefSchema),
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
    const heads = spec.hosts.filter((h) => h.role === 'head');
    if (heads.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['hosts'],
        message: `expected exactly one host with role: head, found ${heads.length}`,
      });
    }
    const seen = new Map<string, number>();
    spec.hosts.forEach((h, i) => {
      for (const [field, value] of [
        ['name', h.name],
        ['address', `${h.address}:${h.port ?? spec.ssh.port}`],
        ['clusterIp', h.clusterIp],
      ] as const) {
        const key = `${field}=${value}`;
        const first = seen.get(key);
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['hosts', i, field],
            message: `${JSON.stringify(value)} is already used by hosts[${first}]; each host needs its own`,
          });
        } else seen.set(key, i);
      }
      if (h.jumpHost !== undefined) {
        if (h.jumpHost === h.name || !spec.hosts.some((o) => o.name === h.jumpHost)) {
          ctx.addIssue({
            code: 'custom',
            path: ['hosts', i, 'jumpHost'],
            message: `${JSON.stringify(h.jumpHost)} is not another host of this spec`,
          });
        } else {
          const chain = [h.name];
          let next: string | undefined = h.jumpHost;
          while (next !== undefined) {
            if (chain.includes(next)) {
              ctx.addIssue({
                code: 'custom',
                path: ['hosts', i, 'jumpHost'],
                message: `jump hosts form a loop: ${[...chain, next].join(' -> ')}`,
              });
              break;
            }
            chain.push(next);
            next = spec.hosts.find((o) => o.name === next)?.jumpHost;
          }
        }
      }
    });
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
