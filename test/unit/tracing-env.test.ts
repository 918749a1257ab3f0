// Issue 32: whether a process exports traces is the standard OpenTelemetry environment's to say, and without an
// OTLP endpoint nothing of OpenTelemetry loads (the worker and the CLI read this before importing it).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tracingRequested } from '../../src/config/tracing.js';

describe('tracingRequested', () => {
  it('is on when an OTLP endpoint is named, for all signals or for traces', () => {
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
    assert.equal(
      tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }),
      true,
    );
  });

  it('is off without an endpoint, with an empty one, or with the SDK disabled', () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }), false);
    assert.equal(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'TRUE' }),
      false,
    );
    assert.equal(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'false' }),
      true,
    );
  });
});
