// How big a spec may be. The spec is validated by the CLI and, for a run started from the Temporal UI, inside the
// worker's workflow sandbox, whose one thread a spec must never hold: every list and text of the spec has a cap,
// checked before the rules that walk it. Each cap is far above what a real cluster needs (the reference spec in
// examples/ uses a few percent of each). Pure: workflows import it through the schema.

/** Hosts of one spec: one deploy holds an SSH connection to each and polls them all from one workflow. */
export const maxHosts = 256;

/** Jump hosts on the way to a host: each hop is one more SSH connection in front of every command. */
export const maxJumpDepth = 4;

/** Characters of the texts the schema also checks by pattern (a pattern's own length cap, where it has one, holds). */
export const maxChars = {
  /** A DNS name is at most 253 characters; an IP address is shorter. */
  address: 253,
  /** A Hugging Face model id is at most 96 characters; a local path-like id a little longer. */
  model: 512,
  /** Docker's repository name is at most 255 characters, plus a tag (128) or a digest. */
  image: 512,
  /** Docker accepts longer container names, but no tool shows them whole. */
  containerName: 128,
  /** systemd's limit for a unit name. */
  unitName: 255,
  envName: 256,
  /** PATH_MAX on Linux. */
  path: 4096,
  /** HOST_PATH:CONTAINER_PATH:MODE. */
  volume: 2 * 4096 + 4,
  /** One serve arg: room for an inline chat template or JSON config (vLLM takes either). */
  arg: 32 * 1024,
  /** The smoke test's prompt, sent in one request body. */
  prompt: 16 * 1024,
  /** ray.shmSize: a number and a unit (accepted, unused: see the schema). */
  shmSize: 16,
} as const;

export const maxItems = {
  /** serve.args: vLLM has about 200 options. */
  args: 256,
  /** Entries of ray.env or of serve.env. */
  env: 256,
  volumes: 64,
  /** cleanup.services and cleanup.containers. */
  cleanup: 64,
  /** companions: services beside the main model, a few a host. */
  companions: 32,
} as const;

/**
 * Bytes of one rendered list: ray.env or serve.env as NAME=value lines, or serve.args joined by spaces. Each
 * reaches a host on one command line or one stdin; 64 KiB is half of Linux's limit for one argument.
 */
export const maxRenderedBytes = 64 * 1024;

/** Durations, in ms. */
export const second = 1000;
export const minute = 60 * second;
export const hour = 60 * minute;
export const day = 24 * hour;

/**
 * The longest timeout: a week is far beyond any load or wait, and stays under the 24.8 days past which Node's
 * timers fire at once (a duration the worker hands to setTimeout would otherwise end immediately).
 */
export const maxTimeoutMs = 7 * day;
