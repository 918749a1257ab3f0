// Replays the recorded deploy and supervisor histories (test/histories, made by scripts/record-histories.ts)
// against the current workflow code with the SDK's replayer: a change to src/workflows that would break the
// deploys and supervisors running when it ships fails here. How to re-record after an intended change: test/histories/README.md.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkflowBundlePath,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { historyFromJSON, type History } from '@temporalio/common/lib/proto-utils.js';
import { DeterminismViolationError } from '@temporalio/workflow';
import { workflowBundle, workflowsPath } from '../../src/temporal/workflow-bundle.js';
import { patches, patchIds } from '../../src/workflows/patches.js';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { decodedText } from '../../scripts/lib/history-export.js';

const historiesDir = join(projectRoot, 'test', 'histories');

interface ManifestEntry {
  file: string;
  workflowType: 'deploy' | 'supervise';
  workflowId: string;
  runId: string;
  outcome: 'succeeded' | 'failed';
  events: number;
  workerIdentities: string[];
  /** A fake credential the deploy referred to ({ fromEnv }); the value was only in the workers' environment. */
  plantedSecret?: { env: string; value: string };
}

interface Manifest {
  histories: ManifestEntry[];
}

const manifest = JSON.parse(readFileSync(join(historiesDir, 'manifest.json'), 'utf8')) as Manifest;

function readHistory(entry: ManifestEntry): History {
  return historyFromJSON(JSON.parse(readFileSync(join(historiesDir, entry.file), 'utf8')));
}

function entryFor(file: string): ManifestEntry {
  const entry = manifest.histories.find((h) => h.file === file);
  assert.ok(entry, `the manifest lists ${file}`);
  return entry;
}

/** The ids of the patch markers in a history, in the order they were recorded. */
function patchMarkers(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    const payload = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
    if (!payload) return [];
    return [(JSON.parse(Buffer.from(payload).toString('utf8')) as { id: string }).id];
  });
}

// The deploy reads its workflow id (a run under another id only starts the real deploy as a child), and a
// history does not carry it: replay under the id the history was recorded with.
function replay(
  bundle: WorkflowBundlePath | WorkflowBundleWithSourceMap,
  entry: ManifestEntry,
): Promise<void> {
  return Worker.runReplayHistory(
    { workflowBundle: bundle, replayName: `replay ${entry.file}` },
    readHistory(entry),
    entry.workflowId,
  );
}

/** The deploy as it is, except that it runs one extra activity before its first step. */
const changedWorkflowSource = `
import { proxyActivities } from '@temporalio/workflow';
import { deploy as currentDeploy } from ${JSON.stringify(workflowsPath.replace(/\.ts$/, '.js'))};

const extra = proxyActivities({ startToCloseTimeout: '1 minute' });

export async function deploy(input, options) {
  await extra.noteDeployStarting();
  return currentDeploy(input, options);
}
`;

describe('replay of recorded deploy and supervisor histories', () => {
  let current: WorkflowBundlePath;
  let changed: WorkflowBundleWithSourceMap;
  let changedDir: string | undefined;

  before(async () => {
    // Replay workers log every state change at INFO; the nondeterminism the last test provokes is a WARN.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    changedDir = mkdtempSync(join(tmpdir(), 'liftoff-replay-'));
    const changedPath = join(changedDir, 'workflows.ts');
    writeFileSync(changedPath, changedWorkflowSource);
    [current, changed] = await Promise.all([
      workflowBundle(),
      bundleWorkflowCode({
        workflowsPath: changedPath,
        // The file lives outside the project: let it find the project's packages.
        webpackConfigHook: (config) => {
          config.resolve = {
            ...config.resolve,
            modules: [...(config.resolve?.modules ?? ['node_modules']), join(projectRoot, 'node_modules')],
          };
          return config;
        },
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m) => console.error(m) },
      }),
    ]);
  });

  after(() => {
    if (changedDir) rmSync(changedDir, { recursive: true, force: true });
  });

  it('has the four recordings, each what its name says', () => {
    assert.deepEqual(manifest.histories.map((h) => h.file).sort(), [
      'deploy-failed.json',
      'deploy-resumed.json',
      'deploy-succeeded.json',
      'supervise-relaunched.json',
    ]);
    for (const entry of manifest.histories) {
      const events = readHistory(entry).events ?? [];
      assert.equal(events.length, entry.events, `${entry.file}: event count matches the manifest`);
      assert.equal(
        events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name,
        entry.workflowType,
      );
      const last = events[events.length - 1];
      if (entry.outcome === 'succeeded') {
        assert.ok(last?.workflowExecutionCompletedEventAttributes, `${entry.file} ends completed`);
      } else {
        const failure = last?.workflowExecutionFailedEventAttributes?.failure;
        assert.equal(failure?.applicationFailureInfo?.type, 'ServerFatal', `${entry.file} ends failed`);
        const details = failure.applicationFailureInfo.details?.payloads ?? [];
        const detailsText = details
          .map((p) => Buffer.from(p.data ?? new Uint8Array()).toString('utf8'))
          .join('\n');
        assert.ok(
          /"diagnostics":\[\{/.test(detailsText),
          'the failure details hold diagnostics from the hosts',
        );
      }
      if (entry.plantedSecret) {
        // The spec names the secret; the value was only in the workers' environment and must stay there.
        const text = decodedText(readFileSync(join(historiesDir, entry.file), 'utf8'));
        assert.ok(text.includes(`"fromEnv":"${entry.plantedSecret.env}"`), `${entry.file} names the secret`);
        assert.ok(!text.includes(entry.plantedSecret.value), `${entry.file} does not hold the secret value`);
      }
    }
    // Two workers really ran the resumed deploy: the first until it was killed, the second to the end.
    const resumed = readHistory(entryFor('deploy-resumed.json')).events ?? [];
    const identities = resumed.flatMap((e) => {
      const identity =
        e.workflowTaskCompletedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity;
      return identity ? [identity] : [];
    });
    const distinct = [...new Set(identities)];
    assert.equal(distinct.length, 2, `two worker identities: ${distinct.join(', ')}`);
    assert.equal(identities[identities.length - 1], distinct[1], 'the second worker finished the deploy');
    // The supervisor lost its cluster and relaunched it: a failure bundle, then the deploy as its child.
    const supervised = readHistory(entryFor('supervise-relaunched.json')).events ?? [];
    const activities = supervised.flatMap((e) => {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
      return name ? [name] : [];
    });
    assert.ok(activities.includes('collectFailureBundle'), 'the supervisor collected a failure bundle');
    const children = supervised.flatMap((e) => {
      const name = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name;
      return name ? [name] : [];
    });
    assert.ok(children.includes('deploy'), `the supervisor relaunched the cluster: ${children.join(', ')}`);
  });

  // Replay proves something only for the branches a recording took: the recordings must carry the markers of
  // the patches every deploy (and every supervisor) meets, so their new branches are what replay checks. A
  // marker stays in history after its patch is deprecated (deprecatePatch writes it too); test/histories/README.md
  // says when a call, and with it its marker, goes for good.
  it('the recordings took the patched branches: they carry the markers of every patch their runs meet', () => {
    const met = {
      deploy: [
        patches.workerPolicy,
        patches.agreementChecks,
        patches.preflightOneTrip,
        patches.supervision,
        patches.containerListsWithStop,
        patches.launchReadsWithVerify,
        patches.workerPollEvery,
      ],
      supervise: [patches.localProbeRound],
    };
    for (const entry of manifest.histories) {
      const markers = patchMarkers(readHistory(entry));
      for (const id of markers) assert.ok(patchIds.includes(id), `${entry.file}: ${id} is a listed patch`);
      for (const id of met[entry.workflowType]) {
        assert.ok(markers.includes(id), `${entry.file} carries the marker ${id}: ${markers.join(', ')}`);
      }
    }
  });

  for (const entry of manifest.histories) {
    it(`${entry.file} replays against the current workflow code`, async () => {
      await replay(current, entry);
    });
  }

  it('a workflow that runs one extra activity before its first step fails replay (DeterminismViolationError)', async () => {
    const entry = entryFor('deploy-succeeded.json');
    await assert.rejects(replay(changed, entry), (err: unknown) => {
      assert.ok(err instanceof DeterminismViolationError, `a DeterminismViolationError: ${String(err)}`);
      assert.match(err.message, /Nondeterminism error/);
      return true;
    });
  });
});
