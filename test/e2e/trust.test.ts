// `liftoff trust HOST` against real sshd: spark2 is reachable only through spark1, and starts out missing from
// known_hosts. The CLI runs as a child process (as users run it); Temporal and the worker run in this process,
// which is why every child is spawned asynchronously.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { ActivityFailure, WorkflowFailedError } from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { useE2eCluster } from '../helpers/e2e-cluster.js';
import { countSshHandshakes, restartSshd, type SimHost } from '../../sim/cluster.js';
import { generateKeyPair, killSshdConnections, sshdPaths } from '../../sim/sshd.js';
import { simClusterSpec } from '../../sim/spec.js';
import type { TrustReport } from '../../src/commands/trust.js';
import { liftoffArgv } from '../helpers/cli.js';

const stateDir = '/tmp/liftoff-test-trust';
/** LIFTOFF_WORKER_POLICY for the CLI's trust runs (set once the suite wrote the policy file). */
let trustEnv: Record<string, string> = {};
const repo = new URL('../../', import.meta.url).pathname;
const runFile = promisify(execFile);

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

// NO_COLOR: picocolors colours output when CI is set, and the assertions read plain text.
function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: repo,
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const trust = (args: string[], env: Record<string, string> = trustEnv): Promise<CliRun> =>
  runCli(liftoffArgv(['trust', ...args]), env);

/** `ssh-keygen -lf` on the host's own key file: the out-of-band check a user does on the host. */
async function fingerprintOnHost(h: SimHost): Promise<string> {
  const { stdout } = await runFile('ssh-keygen', ['-lf', `${sshdPaths.hostKey(h.hostDir)}.pub`]);
  const fp = stdout.split(/\s+/)[1] ?? '';
  assert.match(fp, /^SHA256:[A-Za-z0-9+/]{43}$/);
  return fp;
}

/** Commands sshd started (LogLevel VERBOSE logs each session). */
function commandsRun(h: SimHost): number {
  return readFileSync(sshdPaths.log(h.hostDir), 'utf8').split('Starting session:').length - 1;
}

/** TCP connections sshd accepted (before any authentication). */
function connectionsAccepted(h: SimHost): number {
  return readFileSync(sshdPaths.log(h.hostDir), 'utf8').split('Connection from').length - 1;
}

/** OpenSSH's own lookup: whether known_hosts has a key for `name` (exit 0 = found). */
async function opensshKnows(file: string, name: string): Promise<boolean> {
  return runFile('ssh-keygen', ['-F', name, '-f', file]).then(
    () => true,
    () => false,
  );
}

describe('liftoff trust: pinning host keys through a jump host (namespace mode)', () => {
  const dir = join(stateDir, 'trust');
  // The known_hosts file `liftoff trust` writes here is one the operator chose for this worker: its folder is
  // listed in the worker's policy beside the sim's own file (a spec alone cannot make the worker trust it).
  const e2e = useE2eCluster({
    stateDir,
    netIndex: 19,
    workerPolicy: { knownHosts: [join(stateDir, 'ssh', 'known_hosts'), dir] },
  });
  let spark1: SimHost;
  let spark2: SimHost;
  const knownHosts = join(dir, 'known_hosts');
  const specFile = join(dir, 'spec.yaml');
  const figures: string[] = [];

  /** Writes a spec that uses `knownHostsFile`, with the lines of the sim's known_hosts for `keep` only. */
  function specWith(name: string, knownHostsFile: string, keep: SimHost[]): string {
    const addressesOf = (h: SimHost) => [h.address, h.clusterIp];
    const kept = readFileSync(e2e.sim.knownHostsPath, 'utf8')
      .split('\n')
      .filter((line) => {
        const patterns = line.split(' ')[0]?.split(',') ?? [];
        return keep.some((h) => addressesOf(h).some((a) => patterns.includes(a)));
      });
    writeFileSync(knownHostsFile, `${kept.join('\n')}\n`);
    const spec = simClusterSpec(e2e.sim, { cluster: 'trust-e2e' });
    spec.ssh.knownHostsPath = knownHostsFile;
    const file = join(dir, name);
    writeFileSync(file, toYaml(spec));
    return file;
  }

  const probe = () => runCli(liftoffArgv(['probe', '-c', specFile]), e2e.temporalEnv);

  /** The probe's failure: the activity's error, and whether Temporal gave up on it as non-retryable. */
  async function probeFailure(): Promise<{ type: string; message: string; nonRetryable: boolean }> {
    const handle = e2e.client.workflow.getHandle('liftoff-probe-trust-e2e');
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowFailedError, 'the probe workflow failed');
    assert.ok(err.cause instanceof ActivityFailure, 'an activity failed');
    const activityFailure = err.cause.cause as { type?: string; message?: string };
    const history = await handle.fetchHistory();
    const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
    assert.ok(
      started.every((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 0) === 1),
      'no activity was retried',
    );
    return {
      type: activityFailure.type ?? '',
      message: activityFailure.message ?? '',
      nonRetryable: err.cause.retryState === RetryState.NON_RETRYABLE_FAILURE,
    };
  }

  before(() => {
    [spark1, spark2] = e2e.sim.hosts as [SimHost, SimHost];
    assert.equal(spark2.reachableFromControl, false, 'spark2 is reachable only through spark1');
    mkdirSync(dir, { recursive: true });
    specWith('spec.yaml', knownHosts, [spark1]);
    // The policy trust runs under: it writes only to known_hosts files the policy lists by their own paths.
    const policyFile = join(dir, 'trust-policy.yaml');
    writeFileSync(
      policyFile,
      toYaml({
        knownHosts: ['known_hosts', 'known_hosts.yes', 'known_hosts.empty'].map((f) => join(dir, f)),
        privateKeys: [e2e.sim.privateKeyPath],
      }),
    );
    trustEnv = { LIFTOFF_WORKER_POLICY: policyFile };
  });

  after(() => {
    for (const line of figures) console.log(line);
  });

  it('refuses an unknown host before anything runs on it, with its fingerprint and the trust hint', async () => {
    const fingerprint = await fingerprintOnHost(spark2);
    const logins = countSshHandshakes(stateDir, 'spark2');
    const commands = commandsRun(spark2);
    const r = await probe();
    assert.equal(r.code, 1, r.stderr);
    // The CLI shows the cause itself: the fingerprint and the command that fixes it.
    assert.ok(r.stderr.includes(fingerprint), r.stderr);
    assert.match(r.stderr, /liftoff trust spark2 -c/);
    const failure = await probeFailure();
    assert.equal(failure.type, 'HostKeyUnknownError');
    assert.equal(failure.nonRetryable, true);
    assert.ok(failure.message.includes(fingerprint), failure.message);
    assert.match(failure.message, /liftoff trust spark2/);
    assert.equal(countSshHandshakes(stateDir, 'spark2'), logins, 'no login on spark2');
    assert.equal(commandsRun(spark2), commands, 'no command on spark2');
    figures.push(
      `FIGURE: unknown spark2: probe refused (${failure.type}, non-retryable, 1 attempt, ${countSshHandshakes(stateDir, 'spark2') - logins} logins and ${commandsRun(spark2) - commands} commands on spark2)`,
    );
  });

  it('without --fingerprint or --yes shows the fingerprint and how to check it, and pins nothing', async () => {
    const fingerprint = await fingerprintOnHost(spark2);
    const before = readFileSync(knownHosts, 'utf8');
    const logins = countSshHandshakes(stateDir, 'spark2');
    const commands = commandsRun(spark2);
    const connections = connectionsAccepted(spark2);
    const r = await trust(['spark2', '-c', specFile]);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`offers ssh-ed25519 ${fingerprint}`), r.stderr);
    assert.match(r.stderr, /via spark1/);
    assert.match(r.stderr, /ssh-keygen -lf \/etc\/ssh\/ssh_host_ed25519_key\.pub/);
    assert.ok(r.stderr.includes(`--fingerprint ${fingerprint}`), r.stderr);
    assert.equal(readFileSync(knownHosts, 'utf8'), before, 'known_hosts unchanged');
    // The key was fetched from spark2's own sshd (through spark1), but nobody logged in there and nothing ran.
    assert.equal(connectionsAccepted(spark2), connections + 1);
    assert.match(
      readFileSync(sshdPaths.log(spark2.hostDir), 'utf8'),
      /Disconnected from \S+ port \d+ \[preauth\]/,
    );
    assert.equal(countSshHandshakes(stateDir, 'spark2'), logins);
    assert.equal(commandsRun(spark2), commands);
    figures.push(
      `FIGURE: trust spark2 without flags: exit ${r.code}, printed ${fingerprint}, pinned nothing`,
    );
  });

  it('refuses a --fingerprint that is not the offered key, naming both', async () => {
    const offered = await fingerprintOnHost(spark2);
    const wrong = await fingerprintOnHost(spark1);
    const before = readFileSync(knownHosts, 'utf8');
    const r = await trust(['spark2', '-c', specFile, '--fingerprint', wrong]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /REFUSED/);
    assert.ok(r.stderr.includes(offered) && r.stderr.includes(wrong), r.stderr);
    assert.equal(readFileSync(knownHosts, 'utf8'), before, 'known_hosts unchanged');
    const bad = await trust(['spark2', '-c', specFile, '--fingerprint', 'MD5:aa:bb']);
    assert.equal(bad.code, 2, 'a malformed fingerprint is a usage error');
    figures.push(`FIGURE: trust spark2 --fingerprint <spark1's>: refused (exit ${r.code}), pinned nothing`);
  });

  it('pins the key when --fingerprint matches; then it is already trusted and probe succeeds', async () => {
    const fingerprint = await fingerprintOnHost(spark2);
    assert.equal(await opensshKnows(knownHosts, spark2.address), false);
    const linesBefore = readFileSync(knownHosts, 'utf8').split('\n').filter(Boolean).length;
    const r = await trust(['spark2', '-c', specFile, '--fingerprint', fingerprint, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as TrustReport;
    assert.equal(report.outcome, 'pinned');
    assert.equal(report.fingerprint, fingerprint);
    assert.deepEqual(report.via, ['spark1']);
    // The host field is hashed (ssh-keygen -H's form): never an option or a marker, and no address in the file.
    const [hostField, keyType] = report.line?.split(' ') ?? [];
    assert.match(hostField ?? '', /^\|1\|[A-Za-z0-9+/]{27}=\|[A-Za-z0-9+/]{27}=$/);
    assert.equal(keyType, 'ssh-ed25519');
    assert.ok(!(report.line ?? '').includes(spark2.address), report.line);
    const after = readFileSync(knownHosts, 'utf8');
    assert.equal(after.split('\n').filter(Boolean).length, linesBefore + 1, 'exactly one line appended');
    assert.ok(after.includes(`${report.line ?? '?'}\n`));
    assert.equal(await opensshKnows(knownHosts, spark2.address), true, 'OpenSSH finds the pinned key');

    const again = await trust(['spark2', '-c', specFile, '--fingerprint', fingerprint]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already trusted/);
    assert.equal(readFileSync(knownHosts, 'utf8'), after, 'nothing appended twice');

    const logins = countSshHandshakes(stateDir, 'spark2');
    const commands = commandsRun(spark2);
    const probed = await probe();
    assert.equal(probed.code, 0, probed.stderr);
    assert.match(probed.stdout, /spark2\s+0 NVIDIA GB10/);
    // The counters the refusals are judged by do move when liftoff really works on spark2.
    assert.ok(countSshHandshakes(stateDir, 'spark2') > logins, 'probe logged into spark2');
    assert.ok(commandsRun(spark2) > commands, 'probe ran commands on spark2');
    figures.push(
      `FIGURE: trust spark2 --fingerprint <from ssh-keygen -lf on spark2>: pinned 1 line (hashed host field ${hostField ?? '?'}); second run: already trusted; probe then succeeded`,
    );
  });

  it('--yes pins without a check, warning loudly; an untrusted jump host stops trust before spark2', async () => {
    const yesKnownHosts = join(dir, 'known_hosts.yes');
    const yesSpec = specWith('spec.yes.yaml', yesKnownHosts, [spark1]);
    // A hand-edited file whose last line lacks its newline: the pinned line must still be a line of its own.
    writeFileSync(yesKnownHosts, readFileSync(yesKnownHosts, 'utf8').trimEnd());
    const r = await trust(['spark2', '-c', yesSpec, '--yes']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /WARNING: pinned spark2's key .* WITHOUT checking it out of band/);
    assert.equal(await opensshKnows(yesKnownHosts, spark2.address), true);
    assert.equal(await opensshKnows(yesKnownHosts, spark1.address), true, 'the line before it is intact');

    const noJumpKnownHosts = join(dir, 'known_hosts.empty');
    const noJumpSpec = specWith('spec.nojump.yaml', noJumpKnownHosts, []);
    const spark1Logins = countSshHandshakes(stateDir, 'spark1');
    const refused = await trust(['spark2', '-c', noJumpSpec, '--yes']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /Host key of spark1 .* is not in/);
    assert.equal(readFileSync(noJumpKnownHosts, 'utf8').trim(), '', 'nothing pinned');
    assert.equal(
      countSshHandshakes(stateDir, 'spark1'),
      spark1Logins,
      'no login on the unverified jump host',
    );
    figures.push(
      'FIGURE: trust --yes pinned spark2 with a WARNING; with spark1 (jump) unknown, trust --yes refused (exit 1) before reaching spark2',
    );
  });

  it('refuses a changed host key before any command runs, and trust will not overwrite it', async () => {
    const oldFingerprint = await fingerprintOnHost(spark2);
    // A reinstall (or an impostor): a new host key, same address. The reinstall also ends the connections open
    // to the old system, which the worker keeps between activities (a connection is verified when it opens).
    await generateKeyPair(sshdPaths.hostKey(spark2.hostDir), 'root@spark2-reinstalled');
    killSshdConnections(spark2.hostDir);
    await restartSshd(stateDir, 'spark2');
    const newFingerprint = await fingerprintOnHost(spark2);
    assert.notEqual(newFingerprint, oldFingerprint);

    const logins = countSshHandshakes(stateDir, 'spark2');
    const commands = commandsRun(spark2);
    const r = await probe();
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /HostKeyMismatchError/, 'the CLI shows the cause');
    const failure = await probeFailure();
    assert.equal(failure.type, 'HostKeyMismatchError');
    assert.equal(failure.nonRetryable, true);
    assert.ok(failure.message.includes(newFingerprint) && failure.message.includes(oldFingerprint));
    assert.match(failure.message, /Nothing was run/);
    assert.equal(countSshHandshakes(stateDir, 'spark2'), logins, 'no login on spark2');
    assert.equal(commandsRun(spark2), commands, 'no command on spark2');

    const before = readFileSync(knownHosts, 'utf8');
    const withFingerprint = await trust(['spark2', '-c', specFile, '--fingerprint', newFingerprint]);
    assert.equal(withFingerprint.code, 1, withFingerprint.stderr);
    assert.match(withFingerprint.stderr, /REFUSED: .* but .* pins ssh-ed25519/);
    assert.ok(
      withFingerprint.stderr.includes(oldFingerprint) && withFingerprint.stderr.includes(newFingerprint),
    );
    assert.ok(withFingerprint.stderr.includes(`ssh-keygen -R ${spark2.address} -f ${knownHosts}`));
    const withYes = await trust(['spark2', '-c', specFile, '--yes']);
    assert.equal(withYes.code, 1, withYes.stderr);
    assert.equal(readFileSync(knownHosts, 'utf8'), before, 'known_hosts unchanged');
    assert.equal(countSshHandshakes(stateDir, 'spark2'), logins);
    assert.equal(commandsRun(spark2), commands);
    figures.push(
      `FIGURE: changed spark2 key: probe refused (${failure.type}, non-retryable; ${countSshHandshakes(stateDir, 'spark2') - logins} logins, ${commandsRun(spark2) - commands} commands on spark2); trust --fingerprint <new> and --yes both refused to overwrite (exit 1)`,
    );
  });
  it('never writes into authorized_keys: not listed as a file by the policy, and not known_hosts lines', async () => {
    // The attack: a spec names ~/.ssh/authorized_keys as its known_hosts (and a host whose address is the word
    // cert-authority), so that pinning would add a `cert-authority <key>` line: a login for the key's owner.
    // spark1 is reached directly, so nothing but these checks stands between trust and a write.
    const home = join(dir, 'home');
    const authorizedKeys = join(home, '.ssh', 'authorized_keys');
    mkdirSync(join(home, '.ssh'), { recursive: true });
    const { stdout: caKey } = await runFile('ssh-keygen', ['-y', '-f', e2e.sim.privateKeyPath]);
    const before = Buffer.from(`cert-authority ${caKey.trim()} ops-ca\n`);
    writeFileSync(authorizedKeys, before);
    const spec = simClusterSpec(e2e.sim, { cluster: 'trust-e2e' });
    const attackSpec = join(dir, 'spec.authorized-keys.yaml');
    writeFileSync(
      attackSpec,
      toYaml({ ...spec, ssh: { user: spec.ssh.user, knownHostsPath: '~/.ssh/authorized_keys' } }),
    );
    const policyOf = (knownHosts: string[]) => {
      const file = join(dir, `policy-${knownHosts.length}-${Math.random().toString(36).slice(2)}.yaml`);
      writeFileSync(file, toYaml({ knownHosts }));
      return { LIFTOFF_WORKER_POLICY: file, HOME: home };
    };
    const cases: [policy: Record<string, string>, refusal: RegExp][] = [
      [
        { LIFTOFF_WORKER_POLICY: '', HOME: home },
        /ssh\.knownHostsPath: "~\/\.ssh\/authorized_keys" is not a known_hosts file this worker trusts \(knownHosts: .*\/home\/\.ssh\/known_hosts\)/,
      ],
      [
        policyOf([join(home, '.ssh')]),
        /liftoff trust will not write to "~\/\.ssh\/authorized_keys": the worker policy lists the folder .*\/home\/\.ssh, and liftoff trust writes only to a file the policy lists by its own path/,
      ],
      [
        policyOf([authorizedKeys]),
        /authorized_keys does not read as a known_hosts file; nothing was written to it\.\n {2}line 1: "cert-authority" is an authorized_keys option/,
      ],
    ];
    const connections = connectionsAccepted(spark1);
    for (const [env, refusal] of cases) {
      const r = await trust(['spark1', '-c', attackSpec, '--yes'], env);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, refusal);
      assert.ok(readFileSync(authorizedKeys).equals(before), 'authorized_keys is byte for byte unchanged');
    }
    assert.equal(connectionsAccepted(spark1), connections, 'refused before any connection');
    figures.push(
      `FIGURE: trust --yes into ~/.ssh/authorized_keys: refused (exit 2) under the default policy, a policy listing ~/.ssh, and one listing the file itself; 0 bytes written, ${connectionsAccepted(spark1) - connections} connections`,
    );
  });
});
