// The spec's `supervise` section: defaults, and errors that name the field and the fix.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema } from '../../src/config/schema.js';
import { refusalOf } from '../helpers/spec-refusal.js';
import { healthyRoundsPerReport, probeTimeoutMs } from '../../src/config/supervise.js';
import { notifyEvents } from '../../src/config/notify.js';

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as Record<string, unknown>;

function errorsFor(supervise: unknown): string {
  return refusalOf({ ...structuredClone(example), supervise });
}

describe('spec: supervise', () => {
  it('defaults: enabled, every 30s, lost after 3 rounds, 3 relaunches per hour, 1m backoff, stable after 10m, reported every 10m', () => {
    const spec = deploySpecSchema.parse(example);
    assert.deepEqual(spec.supervise, {
      enabled: true,
      interval: '30s',
      failureThreshold: 3,
      maxRelaunches: 3,
      stableAfter: '10m',
      window: '1h',
      backoff: '1m',
      reportEvery: '10m',
    });
    assert.equal(probeTimeoutMs(spec.supervise), 10_000);
    assert.equal(healthyRoundsPerReport(spec.supervise), 20);
  });

  it('reports every round when reportEvery is the interval or shorter, else the whole rounds that fit', () => {
    const at = (supervise: Record<string, string>) =>
      healthyRoundsPerReport(deploySpecSchema.parse({ ...example, supervise }).supervise);
    assert.equal(at({ interval: '30s', reportEvery: '30s' }), 1);
    assert.equal(at({ interval: '1m', reportEvery: '30s' }), 1);
    assert.equal(at({ interval: '2s', reportEvery: '5s' }), 2);
    assert.equal(at({ interval: '1s' }), 600);
    assert.match(errorsFor({ reportEvery: 'soon' }), /supervise\.reportEvery/);
  });

  it('fills the defaults of a partial section', () => {
    const spec = deploySpecSchema.parse({ ...example, supervise: { interval: '2s', failureThreshold: 2 } });
    assert.equal(spec.supervise.interval, '2s');
    assert.equal(spec.supervise.failureThreshold, 2);
    assert.equal(spec.supervise.maxRelaunches, 3);
    // No probeTimeout given: the completion probe gets the interval, not more.
    assert.equal(probeTimeoutMs(spec.supervise), 2_000);
  });

  const cases: [string, unknown, RegExp][] = [
    [
      'a bad interval',
      { interval: 'often' },
      /supervise\.interval: "often" is not a duration \(expected e\.g\. "30s"\)/,
    ],
    [
      'a tiny interval',
      { interval: '100ms' },
      /supervise\.interval: "100ms" is shorter than 1\.0s; use e\.g\. "30s"/,
    ],
    ['threshold 0', { failureThreshold: 0 }, /supervise\.failureThreshold: expected at least 1 round/],
    [
      'a fractional threshold',
      { failureThreshold: 1.5 },
      /supervise\.failureThreshold: expected a whole number/,
    ],
    ['negative relaunches', { maxRelaunches: -1 }, /supervise\.maxRelaunches: expected 0 or more/],
    ['a short window', { window: '10s' }, /supervise\.window: "10s" is shorter than 1m/],
    ['an unknown key', { intervall: '30s' }, /supervise.*intervall/],
    [
      'a probe timeout past the interval',
      { interval: '5s', probeTimeout: '10s' },
      /supervise\.probeTimeout: 10s is longer than supervise\.interval 5s: .*lower probeTimeout or raise interval/,
    ],
  ];
  for (const [name, supervise, expected] of cases) {
    it(`refuses ${name}, naming the field`, () => {
      assert.match(errorsFor(supervise), expected);
    });
  }
});

describe('spec: notify', () => {
  it('defaults to no webhooks; a webhook hears every event unless told, with a Slack text', () => {
    assert.deepEqual(deploySpecSchema.parse(example).notify, { webhooks: [] });
    const spec = deploySpecSchema.parse({
      ...example,
      notify: {
        webhooks: [
          { url: 'https://hooks.example.com/x' },
          { url: { fromEnv: 'SLACK_URL' }, events: ['degraded'] },
        ],
      },
    });
    assert.deepEqual(spec.notify.webhooks[0]?.events, notifyEvents);
    assert.equal(spec.notify.webhooks[0]?.slack, true);
    assert.deepEqual(spec.notify.webhooks[1]?.url, { fromEnv: 'SLACK_URL' });
  });

  it('refuses a URL that is not http(s) and an unknown event, naming the field', () => {
    const errors = (notify: unknown) => refusalOf({ ...example, notify });
    assert.match(
      errors({ webhooks: [{ url: 'ftp://x' }] }),
      /notify\.webhooks\[0\]\.url: .*is not an http\(s\) URL/,
    );
    assert.match(
      errors({ webhooks: [{ url: 'https://x', events: ['exploded'] }] }),
      /notify\.webhooks\[0\]\.events\[0\]: expected one of deploySucceeded/,
    );
  });
});
