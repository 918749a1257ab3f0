// The cluster spec. One schema serves the YAML file, the CLI and a spec pasted into the Temporal UI.
// No Node builtins here: workflows import it to validate their input.
import { z } from 'zod';

const hostName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'expected a host name of letters, digits, ".", "_" or "-"');

const port = z
  .number()
  .int()
  .min(1, 'expected a port from 1 to 65535')
  .max(65535, 'expected a port from 1 to 65535');

export const sshSchema = z.object({
  user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/i, 'expected a Unix user name'),
  port: port.default(22),
  /** A path, never key material: the key is read inside activities. */
  privateKeyPath: z.string().min(1).optional(),
  useAgent: z.boolean().default(false),
  knownHostsPath: z.string().min(1).default('~/.ssh/known_hosts'),
});

export const hostSchema = z.object({
  name: hostName,
  address: z.string().min(1),
  port: port.optional(),
  user: z.string().optional(),
  clusterIp: z.string().optional(),
  role: z.enum(['head', 'worker']).default('worker'),
  jumpHost: hostName.optional(),
});

/** The part of the spec the connectivity probe needs; the deploy spec extends it. */
export const probeSpecSchema = z.object({
  cluster: hostName,
  ssh: sshSchema,
  hosts: z.array(hostSchema).min(1, 'expected at least one host'),
});

export type SshSpec = z.infer<typeof sshSchema>;
export type HostSpec = z.infer<typeof hostSchema>;
export type ProbeSpec = z.infer<typeof probeSpecSchema>;
