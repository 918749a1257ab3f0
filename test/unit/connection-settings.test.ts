// loadTemporalSettings (src/temporal/connection.ts) turns Temporal's environment configuration into connection
// options: what a temporal.toml profile or the TEMPORAL_* variables say about TLS and API keys must reach them.
// Each case names its whole environment, with HOME in an empty folder so no real ~/.config/temporalio is read.
// test/e2e/connection-settings.test.ts checks the same settings against a real server and that none is printed.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_NAMESPACE, EMBEDDED_ADDRESS, loadTemporalSettings } from '../../src/temporal/connection.js';
import { TemporalUnreachableError } from '../../src/temporal/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'liftoff-connection-settings-'));
const certFile = join(dir, 'client.pem');
const keyFile = join(dir, 'client.key');
const caFile = join(dir, 'ca.pem');
writeFileSync(certFile, 'client certificate bytes');
writeFileSync(keyFile, 'client key bytes');
writeFileSync(caFile, 'server CA bytes');
const configFile = join(dir, 'temporal.toml');
writeFileSync(
  configFile,
  `[profile.default]
address = "temporal.internal:7233"
namespace = "liftoff"

[profile.mtls]
address = "temporal.internal:7233"
namespace = "liftoff"
[profile.mtls.tls]
client_cert_path = "${certFile}"
client_key_path = "${keyFile}"
server_ca_cert_path = "${caFile}"
server_name = "temporal.internal"

[profile.cloud]
address = "us-east-1.aws.api.temporal.io:7233"
namespace = "liftoff-prod.a1b2c"
api_key = "profile-api-key"
`,
);
const home = { HOME: dir };

after(() => rmSync(dir, { recursive: true, force: true }));

const bytes = (file: string) => new Uint8Array(readFileSync(file));
/** The settings from a profile of the config file above, with `variables` set besides. */
const fromProfile = (profile: string, variables: Record<string, string> = {}) =>
  loadTemporalSettings({
    ...home,
    TEMPORAL_CONFIG_FILE: configFile,
    TEMPORAL_PROFILE: profile,
    ...variables,
  });

describe('loadTemporalSettings', () => {
  it('defaults to the embedded server and the default namespace, without TLS', () => {
    const settings = loadTemporalSettings({ ...home });
    assert.equal(settings.address, EMBEDDED_ADDRESS);
    assert.equal(settings.namespace, DEFAULT_NAMESPACE);
    assert.equal(settings.connectionOptions.address, EMBEDDED_ADDRESS);
    assert.equal(settings.connectionOptions.tls, undefined);
    assert.equal(settings.connectionOptions.apiKey, undefined);
  });

  it('reads the `default` profile of TEMPORAL_CONFIG_FILE when TEMPORAL_PROFILE is unset', () => {
    const settings = loadTemporalSettings({ ...home, TEMPORAL_CONFIG_FILE: configFile });
    assert.equal(settings.address, 'temporal.internal:7233');
    assert.equal(settings.namespace, 'liftoff');
  });

  it("passes an mTLS profile's client certificate, key, server CA and server name to the connection", () => {
    const settings = fromProfile('mtls');
    const tls = settings.connectionOptions.tls;
    assert.ok(tls && typeof tls === 'object', 'TLS is configured');
    assert.deepEqual(tls.clientCertPair?.crt, bytes(certFile));
    assert.deepEqual(tls.clientCertPair?.key, bytes(keyFile));
    assert.deepEqual(tls.serverRootCACertificate, bytes(caFile));
    assert.equal(tls.serverNameOverride, 'temporal.internal');
    assert.equal(settings.connectionOptions.apiKey, undefined);
  });

  it("passes a Temporal Cloud profile's API key, with TLS on, and its account-qualified namespace", () => {
    const settings = fromProfile('cloud');
    assert.equal(settings.address, 'us-east-1.aws.api.temporal.io:7233');
    assert.equal(settings.namespace, 'liftoff-prod.a1b2c');
    assert.equal(settings.connectionOptions.apiKey, 'profile-api-key');
    assert.equal(settings.connectionOptions.tls, true);
  });

  it('lets the TEMPORAL_* variables override a profile, and configure TLS and an API key alone', () => {
    const overridden = fromProfile('cloud', {
      TEMPORAL_NAMESPACE: 'other.a1b2c',
      TEMPORAL_API_KEY: 'env-api-key',
    });
    assert.equal(overridden.address, 'us-east-1.aws.api.temporal.io:7233');
    assert.equal(overridden.namespace, 'other.a1b2c');
    assert.equal(overridden.connectionOptions.apiKey, 'env-api-key');

    const variablesOnly = loadTemporalSettings({
      ...home,
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'liftoff',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certFile,
      TEMPORAL_TLS_CLIENT_KEY_PATH: keyFile,
    });
    const tls = variablesOnly.connectionOptions.tls;
    assert.ok(tls && typeof tls === 'object');
    assert.deepEqual(tls.clientCertPair?.key, bytes(keyFile));
  });

  it('names the address, and neither the API key nor the key file, when Temporal cannot be reached', () => {
    const settings = fromProfile('cloud');
    const err = new TemporalUnreachableError(settings.address, new Error('connect ECONNREFUSED'));
    assert.match(err.message, /cannot reach Temporal at us-east-1\.aws\.api\.temporal\.io:7233/);
    assert.ok(!err.message.includes('profile-api-key'));
    assert.ok(!err.message.includes('client key bytes'));
  });
});
