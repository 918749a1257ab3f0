// A cluster's revisions (issue 30): what each successful deploy ran, recorded in the cluster's own workflow, so a
// failed upgrade can bring back the last one that served and `liftoff revisions --diff` can say what changed,
// including what changed outside the spec (an image rebuilt under the same tag, a kernel). No workflow code here:
// the deploy, the cluster's workflow, activities and the CLI all import it.
import type { DeployTriggerName } from './failures.js';

/** What a host said about itself during preflight, beyond the spec: what a rollback must find again. */
export interface HostIdentity {
  host: string;
  /** `docker image inspect` of the spec's image on this host: `sha256:…`. */
  imageId?: string;
  /** `uname -r`. */
  kernel?: string;
  /** The GPU driver, as nvidia-smi reports it. */
  driver?: string;
  /** The weights' identity: the Hugging Face snapshot commit and the safetensors index file's sha256. */
  weights?: { snapshot?: string; indexSha256?: string };
  /** Inside the image. */
  versions?: { python?: string; ray?: string; vllm?: string };
}

export type RevisionStatus = 'serving' | 'replaced' | 'bad';

export interface Revision {
  /** 1, 2, …: numbered per cluster, never reused. */
  number: number;
  atMs: number;
  /** The deploy run that recorded it: `workflowId:runId`. */
  launchId: string;
  trigger: DeployTriggerName;
  /** The deploy spec (secrets only as references). */
  spec: unknown;
  model: string;
  /** The spec's image, as written (a tag, or `name@sha256:…`). */
  image: string;
  hosts: HostIdentity[];
  /** The rendered `vllm serve` argv and the env names the server got. */
  argv: string[];
  envNames: string[];
  /** From the deploy: absent for a revision that never served (bad before its smoke test passed). */
  evidence?: { loadSeconds: number; tokensPerSecond: number };
  status: RevisionStatus;
  /** Set on a rollback's revision: the revision whose spec and images it deployed again. */
  restores?: number;
  /** Why it is bad: the failure of its deploy or of its bake window. */
  badReason?: string;
}

/** `sha256:3f2a…` → `3f2a9c1b2d4e`, as `docker images` shows it: preflight's image check and the revisions alike. */
export function shortImageId(id: string): string {
  return id.replace(/^sha256:/, '').slice(0, 12);
}

/** The last this many revisions are kept; older ones drop off (numbers are never reused). */
export const revisionsKept = 20;
