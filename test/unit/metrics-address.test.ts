// `--metrics HOST:PORT` (env LIFTOFF_METRICS_ADDRESS): what the Runtime's exporter is given to bind, and what is
// refused before anything connects.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MetricsAddressError, metricsAddressFrom, parseMetricsAddress } from '../../src/temporal/metrics.js';

describe('the metrics address', () => {
  it('takes an IP literal and a port, localhost as 127.0.0.1', () => {
    assert.deepEqual(parseMetricsAddress('127.0.0.1:9464'), {
      bindAddress: '127.0.0.1:9464',
      url: 'http://127.0.0.1:9464/metrics',
    });
    assert.equal(parseMetricsAddress('localhost:9464').bindAddress, '127.0.0.1:9464');
    assert.equal(parseMetricsAddress('[::1]:9464').bindAddress, '[::1]:9464');
    // Every interface only when the operator names it; the URL shown is the loopback one.
    assert.deepEqual(parseMetricsAddress('0.0.0.0:9464'), {
      bindAddress: '0.0.0.0:9464',
      url: 'http://127.0.0.1:9464/metrics',
    });
  });

  it('refuses a bare port, a name, a bad port', () => {
    for (const bad of [
      '9464',
      ':9464',
      'metrics.example:9464',
      '127.0.0.1:0',
      '127.0.0.1:70000',
      '300.1.1.1:1',
      '127.0.0.1:9464x',
      `${'1'.repeat(80)}:1`,
    ])
      assert.throws(() => parseMetricsAddress(bad), MetricsAddressError, bad);
  });

  it('is off unless --metrics or LIFTOFF_METRICS_ADDRESS names one; the option wins', () => {
    assert.equal(metricsAddressFrom(undefined, {}), undefined);
    assert.equal(metricsAddressFrom(undefined, { LIFTOFF_METRICS_ADDRESS: '' }), undefined);
    assert.equal(
      metricsAddressFrom(undefined, { LIFTOFF_METRICS_ADDRESS: '127.0.0.1:1' })?.bindAddress,
      '127.0.0.1:1',
    );
    assert.equal(
      metricsAddressFrom('127.0.0.1:2', { LIFTOFF_METRICS_ADDRESS: '127.0.0.1:1' })?.bindAddress,
      '127.0.0.1:2',
    );
  });
});
