// Whether this process exports traces: the standard OpenTelemetry environment decides (an OTLP endpoint named,
// the SDK not disabled). Read before any OpenTelemetry code loads, so a process without it pays nothing.
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
