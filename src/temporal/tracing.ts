// OpenTelemetry traces of the deploys (issue 32): the Temporal SDK's interceptors make a span of each workflow
// start (the CLI's, the trace's root), workflow run and activity, linked through Temporal's headers, and the
// worker and the CLI export them over OTLP/HTTP (JSON) to the collector the standard OTel environment names.
// Loaded only when that environment asks for traces (config/tracing.ts tracingRequested): otherwise no SDK starts, no interceptor
// runs, and the workflow bundle has no tracing code in it.
import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { ClientInterceptors, WorkflowClientInterceptor, WorkflowStartInput } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import { searchAttributes } from '../shared/constants.js';

export type TracingService = 'liftoff-worker' | 'liftoff-cli';

export interface Tracing {
  readonly service: TracingService;
  /** Every span of this process goes through it, the workflow sandbox's too (through the sink). */
  readonly spanProcessor: SpanProcessor;
  readonly resource: Resource;
  /** Sends the spans still batched; bounded, so an unreachable collector does not hold the process up. */
  flush(): Promise<void>;
}

// How long a flush may wait for the collector before the process goes on without it.
const FLUSH_BOUND_MS = 3000;

let started: Tracing | undefined;

/**
 * Starts this process's tracer provider (global: the SDK's interceptors use the global tracer, context manager and
 * W3C propagator). Once per process: a second call gets the first provider, whatever service it names.
 */
export function startTracing(service: TracingService): Tracing {
  if (started) return started;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override liftoff's defaults, as the OTel spec says.
  const resource = new Resource({ 'service.name': service }).merge(envDetectorSync.detect());
  // Reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS and _TIMEOUT itself; the body is OTLP JSON.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Async context, so an activity's span has the workflow's as parent and the client's start span is the one
  // whose context goes into the workflow's headers.
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
  const flush = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FLUSH_BOUND_MS);
      timer.unref();
    });
    try {
      await Promise.race([spanProcessor.forceFlush().catch(() => undefined), bound]);
    } finally {
      clearTimeout(timer);
    }
  };
  started = { service, spanProcessor, resource: provider.resource, flush };
  return started;
}

/** The worker's side: a span per activity run, and the sink that exports the workflow sandbox's spans. */
export function workerTracing(tracing: Tracing): {
  interceptors: WorkerInterceptors;
  sinks: InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }>;
} {
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      // The activities' own client (the cluster's Updates): its calls join the deploy's trace.
      client: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}

/**
 * Names the cluster and trigger of a start on its span (the start's own search attributes, when it has them): the
 * span a trace backend lists a deploy by.
 */
function withStartAttributes<T>(input: WorkflowStartInput, next: (input: WorkflowStartInput) => Promise<T>) {
  return (traced: WorkflowStartInput): Promise<T> => {
    const pairs = input.options.typedSearchAttributes;
    const list = Array.isArray(pairs) ? pairs : (pairs?.getAll() ?? []);
    const span = otel.trace.getActiveSpan();
    for (const [key, attribute] of [
      [searchAttributes.cluster.name, 'liftoff.cluster'],
      [searchAttributes.trigger.name, 'liftoff.trigger'],
    ] as const) {
      const value = list.find((p) => p.key.name === key)?.value;
      if (typeof value === 'string') span?.setAttribute(attribute, value);
    }
    return next(traced);
  };
}

/**
 * The CLI's client: a span for each workflow it starts, signals, updates or ends, whose context the workflow
 * continues. Not its queries: `--follow` polls the progress query, and a span per poll would drown the trace.
 */
export function cliClientInterceptors(): ClientInterceptors {
  const traced = new OpenTelemetryWorkflowClientInterceptor();
  const startsAndSignals: WorkflowClientInterceptor = {
    start: (input, next) => traced.start(input, withStartAttributes(input, next)),
    startWithDetails: (input, next) => traced.startWithDetails(input, withStartAttributes(input, next)),
    signal: (input, next) => traced.signal(input, next),
    signalWithStart: (input, next) => traced.signalWithStart(input, next),
    startUpdate: (input, next) => traced.startUpdate(input, next),
    startUpdateWithStart: (input, next) => traced.startUpdateWithStart(input, next),
    terminate: (input, next) => traced.terminate(input, next),
    cancel: (input, next) => traced.cancel(input, next),
  };
  return { workflow: [startsAndSignals] };
}
