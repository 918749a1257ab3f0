// `liftoff worker --metrics HOST:PORT` (and `liftoff dev`; env LIFTOFF_METRICS_ADDRESS): the Temporal SDK's
// Runtime serves Prometheus metrics at http://HOST:PORT/metrics, its own worker series (temporal_*: task slots,
// schedule-to-start latency, activity failures) beside liftoff's (liftoff_*, recorded from workflow code by
// src/workflows/metrics.ts). Off by default: it is an unauthenticated HTTP endpoint that names clusters and hosts.
import { deployMetrics } from '../shared/metric-names.js';

export const metricsAddressEnv = 'LIFTOFF_METRICS_ADDRESS';

export class MetricsAddressError extends Error {
  override name = 'MetricsAddressError';
}

/** What the Runtime's exporter binds: an IP literal and a port (it resolves no names). */
export interface MetricsAddress {
  /** host:port as the exporter takes it ([v6]:port for IPv6). */
  bindAddress: string;
  url: string;
}

const ipv4 = /^(?:\d{1,3})(?:\.\d{1,3}){3}$/;
const ipv6 = /^\[[0-9a-fA-F:.]{2,45}\]$/;

/**
 * HOST:PORT, with HOST an IP literal or `localhost` (127.0.0.1). A bare port is refused rather than bound on
 * every interface: where the endpoint listens is the operator's to name (127.0.0.1:9464 keeps it on the machine).
 */
export function parseMetricsAddress(text: string): MetricsAddress {
  const said = text.trim();
  const fix = `give HOST:PORT, e.g. 127.0.0.1:9464 (loopback only) or 0.0.0.0:9464 (every interface)`;
  const colon = said.lastIndexOf(':');
  if (said.length > 64 || colon <= 0)
    throw new MetricsAddressError(`--metrics ${JSON.stringify(said.slice(0, 64))}: ${fix}`);
  const hostText = said.slice(0, colon);
  const portText = said.slice(colon + 1);
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535))
    throw new MetricsAddressError(`--metrics ${said}: the port must be 1 to 65535; ${fix}`);
  const host = hostText === 'localhost' ? '127.0.0.1' : hostText;
  const v4ok = ipv4.test(host) && host.split('.').every((n) => Number(n) <= 255);
  if (!v4ok && !ipv6.test(host))
    throw new MetricsAddressError(`--metrics ${said}: the host must be an IP address or localhost; ${fix}`);
  const bindAddress = `${host}:${port}`;
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  return { bindAddress, url: `http://${shown}:${port}/metrics` };
}

/** The address from --metrics, else from the environment; undefined when neither names one (metrics off). */
export function metricsAddressFrom(
  option: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): MetricsAddress | undefined {
  const text = option ?? env[metricsAddressEnv];
  return text === undefined || text.trim() === '' ? undefined : parseMetricsAddress(text);
}

/** The step durations' buckets, in seconds: a step takes from a fraction of a second to a 25-minute load. */
const stepBuckets = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800];

/**
 * Installs the SDK's Runtime with the Prometheus exporter. Must come before any worker connection is made: the
 * first one installs a Runtime without metrics otherwise.
 */
export async function installMetricsRuntime(address: MetricsAddress): Promise<void> {
  // Loaded here, not at the top: only the commands that run a worker load the worker SDK.
  const { Runtime } = await import('@temporalio/worker');
  try {
    installWith(Runtime, address);
  } catch (err) {
    // A port already taken, an address not of this machine: the operator's to fix, named as such.
    const said = err instanceof Error ? err.message : String(err);
    throw new MetricsAddressError(`--metrics ${address.bindAddress}: ${said}`);
  }
}

function installWith(runtime: typeof import('@temporalio/worker').Runtime, address: MetricsAddress): void {
  runtime.install({
    telemetryOptions: {
      metrics: {
        prometheus: {
          bindAddress: address.bindAddress,
          // The SDK's own latencies stay in its default milliseconds, as the dashboard reads them; liftoff's
          // durations are seconds by name.
          histogramBucketOverrides: { [deployMetrics.stepDuration]: stepBuckets },
        },
      },
    },
  });
}
