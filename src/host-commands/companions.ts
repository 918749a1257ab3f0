// The remote commands of a companion (config/companions.ts): its container's `docker run`, and the request its
// probe sends from its host (the deploy's readiness wait and the supervisor's rounds send the same one).
import { sh, type RemoteCommand } from '../ssh/quote.js';
import type { CompanionProbeKind, CompanionSpec } from '../config/companions.js';
import type { HostRef } from '../config/targets.js';
import type { EnvTransport } from './env-transport.js';
import { baseUrl, headerLineFromStdin, launchLabels, smokeTimingMarker } from './launch.js';

/** One companion to start or probe on its host, from the spec (step-inputs.ts builds it). */
export interface CompanionInput {
  host: HostRef;
  clusterIp: string;
  cluster: string;
  launchId: string;
  companion: CompanionSpec;
  /** The companion's image, else the cluster's. */
  image: string;
  container: string;
}

/** How long one probe request may take. */
export const companionProbeTimeoutS = 30;

/** Start the companion's container: its command's first word is the entrypoint, the rest its arguments. */
export function companionRunCommand(input: CompanionInput, transport: EnvTransport): RemoteCommand {
  const { companion } = input;
  const [entrypoint = '', ...args] = companion.command;
  const gpus = companion.gpus ? ['--gpus', 'all'] : [];
  const labels = launchLabels(input, 'liftoff.role=companion', `liftoff.companion=${companion.name}`);
  const volumes = companion.volumes.flatMap((v) => ['-v', v]);
  // One list, so an empty part (no GPUs, no env, no volumes) leaves no gap in the command.
  const options = [...gpus, '--network', 'host', '--ipc', 'host', ...labels, ...transport.flags, ...volumes];
  return sh`${transport.prelude} docker run -d --name ${input.container} ${options} --entrypoint ${entrypoint} ${input.image} ${args}`;
}

/** Where a probe of `kind` goes, on the companion's host. */
export function companionProbeUrl(clusterIp: string, port: number, kind: CompanionProbeKind): string {
  const base = baseUrl(clusterIp, port);
  switch (kind) {
    case 'embeddings':
      return `${base}/v1/embeddings`;
    case 'rerank':
      return `${base}/v1/rerank`;
    case 'chat':
      return `${base}/v1/chat/completions`;
    case 'health':
      return `${base}/health`;
  }
}

/** The body a probe of `kind` posts: small, and real work for the server (a vector, a score, one token). */
export function companionProbeBody(kind: CompanionProbeKind, model: string | undefined): string {
  const named = model !== undefined ? { model } : {};
  switch (kind) {
    case 'embeddings':
      return JSON.stringify({ ...named, input: ['liftoff readiness probe'] });
    case 'rerank':
      return JSON.stringify({
        ...named,
        query: 'which document mentions the probe?',
        documents: ['a readiness probe from liftoff', 'an unrelated sentence'],
      });
    case 'chat':
      return JSON.stringify({
        ...named,
        messages: [{ role: 'user', content: 'Reply with one word: ready?' }],
        max_tokens: 1,
        stream: false,
      });
    case 'health':
      return '';
  }
}

/** GET with the header line on stdin: `/health`'s status, then `/v1/models`' body, for the health probe. */
export function companionGetCommand(url: string): RemoteCommand {
  return headerLineFromStdin(
    sh`curl -sS --max-time ${companionProbeTimeoutS} -H @/dev/fd/3 -w ${`${smokeTimingMarker}%{time_total}\\n%{http_code}`} ${url}`,
  );
}
