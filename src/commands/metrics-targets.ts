// What `liftoff metrics targets` writes: Prometheus file_sd JSON (one target group per endpoint) for every cluster
// whose launch serves, so Prometheus scrapes vLLM's own /metrics and follows a relaunch or a new cluster without an
// edit. Pure: the command reads the records (and the specs, when a worker answers) and writes the file.
import { z } from 'zod';
import type { ClusterRecord, HeldHost } from '../shared/cluster-api.js';
import { isUp } from './fleet-status.js';

/** One file_sd target group: Prometheus scrapes each `host:port` at /metrics with these labels. */
export interface TargetGroup {
  targets: [string];
  labels: { cluster: string; host: string; companion?: string };
}

/** What the targets need of a cluster's spec: its hosts' roles and addresses, and its companions' ports. */
export const targetSpecSchema = z.object({
  hosts: z
    .array(z.object({ name: z.string(), role: z.string().optional(), clusterIp: z.string().optional() }))
    .max(256),
  companions: z
    .array(z.object({ name: z.string(), host: z.string(), port: z.number().int().min(1).max(65535) }))
    .max(256)
    .default([]),
});
export type TargetSpec = z.infer<typeof targetSpecSchema>;

export interface TargetSource {
  record: Pick<ClusterRecord, 'cluster' | 'state' | 'endpoint'> & {
    hosts: Pick<HeldHost, 'name' | 'address'>[];
  };
  /** The spec the cluster was deployed with, when its workflow answered; without it, no companions. */
  spec?: TargetSpec;
}

/** `host:port` of an endpoint URL (IPv6 in brackets), or undefined when it is not an http(s) URL. */
export function scrapeAddress(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '') return undefined;
  return `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
}

/** `host:port` with an IPv6 address in brackets. */
function joinHostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The target groups for these clusters, sorted by cluster then target: the main endpoint of each cluster whose
 * launch serves or should (serving, degraded, lost, relaunching: a lost one stays, so `up` says it is down), named
 * by its head host (the only host of a multi-node cluster that serves /metrics), then each companion of its spec.
 */
export function scrapeTargets(sources: readonly TargetSource[]): TargetGroup[] {
  const groups: TargetGroup[] = [];
  for (const { record, spec } of sources) {
    if (!isUp(record.state) || record.endpoint === undefined) continue;
    const address = scrapeAddress(record.endpoint);
    if (address === undefined) continue;
    const endpointHost = new URL(record.endpoint).hostname.replace(/^\[(.*)\]$/, '$1');
    const head =
      spec?.hosts.find((h) => h.role === 'head')?.name ??
      spec?.hosts.find((h) => h.clusterIp === endpointHost)?.name ??
      record.hosts.find((h) => h.address === endpointHost)?.name ??
      (record.hosts.length === 1 ? record.hosts[0]?.name : undefined) ??
      endpointHost;
    groups.push({ targets: [address], labels: { cluster: record.cluster, host: head } });
    for (const c of spec?.companions ?? []) {
      const ip = spec?.hosts.find((h) => h.name === c.host)?.clusterIp ?? c.host;
      groups.push({
        targets: [joinHostPort(ip, c.port)],
        labels: { cluster: record.cluster, host: c.host, companion: c.name },
      });
    }
  }
  const key = (g: TargetGroup): string =>
    `${g.labels.cluster}\u0000${g.labels.companion ?? ''}\u0000${g.targets[0]}`;
  return groups.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** The file's text: the JSON array Prometheus' file_sd reads, with a final newline. */
export function targetsFileText(groups: readonly TargetGroup[]): string {
  return `${JSON.stringify(groups, null, 2)}\n`;
}
