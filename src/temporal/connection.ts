// Where the CLI and the worker find Temporal: Temporal's own environment configuration (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, TLS and API key settings, or a temporal.toml profile),
// defaulting to the embedded dev server.
import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { DataConverter } from '@temporalio/common';
import { liftoffDataConverter } from './codec.js';
import { TemporalUnreachableError } from './errors.js';
import { tracingRequested } from '../config/tracing.js';

export const EMBEDDED_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';

export interface TemporalSettings {
  address: string;
  namespace: string;
  connectionOptions: ReturnType<typeof loadClientConnectConfig>['connectionOptions'];
  /** Payload encryption (src/temporal/codec.ts); read from the same environment. */
  dataConverter: DataConverter;
}

export function loadTemporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const overrideEnvVars = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  const config = loadClientConnectConfig({ overrideEnvVars });
  const address = config.connectionOptions.address ?? EMBEDDED_ADDRESS;
  return {
    address,
    namespace: config.namespace ?? DEFAULT_NAMESPACE,
    connectionOptions: { ...config.connectionOptions, address },
    // Here, so a malformed LIFTOFF_PAYLOAD_KEY stops a command before it contacts Temporal.
    dataConverter: liftoffDataConverter(env),
  };
}

export async function connectClient(
  settings = loadTemporalSettings(),
  interceptors?: ClientInterceptors,
): Promise<Client> {
  try {
    const connection = await Connection.connect({ ...settings.connectionOptions, connectTimeout: 5000 });
    await connection.workflowService.getSystemInfo({});
    return new Client({
      connection,
      namespace: settings.namespace,
      dataConverter: settings.dataConverter,
      ...(interceptors ? { interceptors } : {}),
    });
  } catch (err) {
    throw new TemporalUnreachableError(settings.address, err);
  }
}

/**
 * Runs `body` with a client of the configured Temporal, closing its connection however `body` ends. With an OTLP
 * endpoint in the environment, the workflows the command starts are traced (src/temporal/tracing.ts): its start is
 * the trace's root, and its spans are sent before the command returns.
 */
export async function withClient<T>(body: (client: Client) => Promise<T>): Promise<T> {
  const settings = loadTemporalSettings();
  // Loaded only when traces are exported: the OpenTelemetry SDK would add to every command's start.
  const tracingModule = tracingRequested(process.env) ? await import('./tracing.js') : undefined;
  const tracing = tracingModule?.startTracing('liftoff-cli');
  const client = await connectClient(settings, tracingModule?.cliClientInterceptors());
  try {
    return await body(client);
  } finally {
    await client.connection.close();
    await tracing?.flush();
  }
}

export async function connectWorkerConnection(
  settings: Pick<TemporalSettings, 'address' | 'connectionOptions'>,
): Promise<NativeConnection> {
  // Loaded here, not at the top: the worker SDK (native core, bundler) adds a third to every CLI command's start.
  const { NativeConnection } = await import('@temporalio/worker');
  try {
    return await NativeConnection.connect(settings.connectionOptions);
  } catch (err) {
    throw new TemporalUnreachableError(settings.address, err);
  }
}
