// Replays the recorded deploy, supervisor and cluster histories (test/histories, made by
// scripts/record-histories.ts) against the current workflow code with the SDK's replayer: a change to
// src/workflows that would break the deploys, supervisors and clusters' own workflows running when it ships fails
// here. How to re-record after an intended change: test/histories/README.md.
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
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { workflowBundle, workflowsPath } from '../../src/temporal/workflow-bundle.js';
import { patches, patchIds } from '../../src/workflows/patches.js';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { decodedText } from '../../scripts/lib/history-export.js';

const historiesDir = join(projectRoot, 'test', 'histories');

interface ManifestEntry {
  file: string;
  workflowType: 'deploy' | 'supervise' | 'cluster';
  workflowId: string;
  runId: string;
  /** `running`: exported while it ran (a cluster's workflow runs for as long as it holds the hosts). */
  outcome: 'succeeded' | 'failed' | 'continued-as-new' | 'running';
  events: number;
  workerIdentities: string[];
  /** A fake credential the deploy referred to ({ fromEnv }); the value was only in the workers' environment. */
  plantedSecret?: { env: string; value: string };
  /** The rolled-back upgrade's revisions: the known-good it restored, the one that failed, the rollback's. */
  revisions?: { knownGood: number; bad: number; rollback: number };
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

type HistoryEvent = NonNullable<History['events']>[number];

/** The payloads' values, as JSON. */
function payloadValues(payloads: { payloads?: { data?: Uint8Array | null }[] | null } | null | undefined) {
  return (payloads?.payloads ?? []).map(
    (p) => JSON.parse(Buffer.from(p.data ?? new Uint8Array()).toString('utf8')) as unknown,
  );
}

/** The activities a run scheduled, in order. */
function activityNames(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

/** The child workflows a run started, by type. */
function childWorkflows(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const name = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name;
    return name ? [name] : [];
  });
}

/** The containers of the companions a run started (startCompanion's input), in order. */
function startedContainers(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'startCompanion') return [];
    const [input] = payloadValues(scheduled.input) as [{ container?: string }];
    return [input.container ?? '(no container)'];
  });
}

/** The names of the Updates a cluster's workflow accepted, in order. */
function updateNames(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const name = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
    return name ? [name] : [];
  });
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
  sinks: Parameters<typeof Worker.runReplayHistory>[0]['sinks'] = undefined,
): Promise<void> {
  return Worker.runReplayHistory(
    { workflowBundle: bundle, replayName: `replay ${entry.file}`, ...(sinks ? { sinks } : {}) },
    readHistory(entry),
    entry.workflowId,
  );
}

/** A span processor that keeps what the workflow sandbox's exporter sink hands it. */
function keepingProcessor(kept: ReadableSpan[]): SpanProcessor {
  return {
    onStart: () => undefined,
    onEnd: (span) => void kept.push(span),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
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

describe('replay of recorded deploy, supervisor and cluster histories', () => {
  let current: WorkflowBundlePath;
  let traced: WorkflowBundlePath;
  let changed: WorkflowBundleWithSourceMap;
  let changedDir: string | undefined;

  before(async () => {
    // Replay workers log every state change at INFO; the nondeterminism the last test provokes is a WARN.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    changedDir = mkdtempSync(join(tmpdir(), 'liftoff-replay-'));
    const changedPath = join(changedDir, 'workflows.ts');
    writeFileSync(changedPath, changedWorkflowSource);
    [current, traced, changed] = await Promise.all([
      workflowBundle(),
      workflowBundle({ tracing: true }),
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

  it('has the ten recordings, each what its name says', () => {
    assert.deepEqual(manifest.histories.map((h) => h.file).sort(), [
      'cluster-held.json',
      'deploy-companions.json',
      'deploy-failed.json',
      'deploy-resumed.json',
      'deploy-rolled-back-failed.json',
      'deploy-rolled-back.json',
      'deploy-succeeded.json',
      'supervise-companion-restarted.json',
      'supervise-relaunched.json',
      'supervise-watched.json',
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
      } else if (entry.outcome === 'continued-as-new') {
        assert.ok(last?.workflowExecutionContinuedAsNewEventAttributes, `${entry.file} continued as new`);
      } else if (entry.outcome === 'running') {
        const closed =
          last?.workflowExecutionCompletedEventAttributes ??
          last?.workflowExecutionFailedEventAttributes ??
          last?.workflowExecutionContinuedAsNewEventAttributes;
        assert.ok(!closed, `${entry.file} was exported while it ran`);
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
    assert.ok(
      activityNames(supervised).includes('collectFailureBundle'),
      'the supervisor collected a failure bundle',
    );
    const children = childWorkflows(supervised);
    assert.ok(children.includes('deploy'), `the supervisor relaunched the cluster: ${children.join(', ')}`);
  });

  // The watch's code in the supervisor (nextRound, watchRounds) is covered by replay only if the recording ran it.
  it('the watched supervisor: healthy rounds in watches, the failed one back at once, a watch cancelled by the stop', () => {
    const events = readHistory(entryFor('supervise-watched.json')).events ?? [];
    const names = activityNames(events);
    const watches = names.filter((n) => n === 'watchServingCluster').length;
    assert.ok(watches >= 3, `watches before and after the relaunch: ${names.join(', ')}`);
    assert.ok(names.includes('collectFailureBundle'), 'lost: a failure bundle');
    assert.deepEqual(childWorkflows(events), ['deploy'], 'one relaunch');
    assert.ok(
      events.some((e) => e.activityTaskCancelRequestedEventAttributes),
      'the stop cancelled the running watch',
    );
    assert.ok(patchMarkers({ events }).includes('supervise-watch'), 'the watch is patched in');
  });

  // The companions' code in the workflows (startCompanions, bringUpCompanion, the supervisor's restart of one) is
  // covered by replay only if the recordings ran it.
  it('the companions: the deploy started and probed both, the supervisor restarted one alone', () => {
    const deployEvents = readHistory(entryFor('deploy-companions.json')).events ?? [];
    const deployed = activityNames(deployEvents);
    const smokeAt = deployed.indexOf('smokeTest');
    assert.ok(smokeAt >= 0, `the deploy ran its smoke test: ${deployed.join(', ')}`);
    assert.ok(
      !deployed.slice(0, smokeAt).some((n) => n === 'startCompanion' || n === 'probeCompanion'),
      'no companion starts before the main model answered its smoke test',
    );
    // One companion after the other: each started, then probed (every few seconds) until ready.
    const companionSteps = deployed
      .slice(smokeAt + 1)
      .filter((n) => n === 'startCompanion' || n === 'probeCompanion')
      .filter((n, i, all) => n !== all[i - 1]);
    assert.deepEqual(companionSteps, [
      'startCompanion',
      'probeCompanion',
      'startCompanion',
      'probeCompanion',
    ]);
    // The larger budget first: the embeddings server, then the reranker.
    assert.deepEqual(startedContainers(deployEvents), ['liftoff-embeddings', 'liftoff-reranker']);

    const supervised = readHistory(entryFor('supervise-companion-restarted.json')).events ?? [];
    const restarted = activityNames(supervised);
    assert.ok(restarted.includes('probeCompanion'), `the restart probed it: ${restarted.join(', ')}`);
    assert.deepEqual(startedContainers(supervised), ['liftoff-embeddings'], 'only the removed one restarted');
    assert.deepEqual(childWorkflows(supervised), [], 'no relaunch of the cluster');
  });

  it('the rolled-back upgrade: the failed run continues as the rollback, which the cluster records', () => {
    const failedEntry = entryFor('deploy-rolled-back-failed.json');
    const rollbackEntry = entryFor('deploy-rolled-back.json');
    const revisions = failedEntry.revisions;
    assert.ok(revisions, 'the manifest names the revisions');
    const failed = readHistory(failedEntry).events ?? [];
    const rollback = readHistory(rollbackEntry).events ?? [];
    // One chain under one workflow id: the failed run's last event starts the rollback's run.
    assert.equal(rollbackEntry.workflowId, failedEntry.workflowId);
    const continued = failed.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
    assert.equal(continued?.newExecutionRunId, rollbackEntry.runId);
    assert.equal(continued.workflowType?.name, 'deploy');
    const started = rollback[0]?.workflowExecutionStartedEventAttributes;
    assert.equal(started?.continuedExecutionRunId, failedEntry.runId);
    // The failed run recorded its revision bad before it continued; its load had crashed after the stop.
    const activities = failed.flatMap((e) => {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
      return name ? [name] : [];
    });
    for (const name of ['stopServices', 'launchServe', 'collectDiagnostics', 'recordRevision'])
      assert.ok(activities.includes(name), `the failed run ran ${name}: ${activities.join(', ')}`);
    // The rollback deploys the known-good's spec with its image pinned by ID, as trigger rollback.
    const [spec, options] = payloadValues(continued.input) as [
      { ray: { image: string } },
      { trigger: string; rollback: { to: number; from: number } },
    ];
    assert.match(spec.ray.image, /^sha256:[0-9a-f]{64}$/);
    assert.equal(options.trigger, 'rollback');
    assert.deepEqual([options.rollback.to, options.rollback.from], [revisions.knownGood, revisions.bad]);
    const [result] = payloadValues(rollback.at(-1)?.workflowExecutionCompletedEventAttributes?.result) as [
      { revision: number; rolledBack: { to: number; from: number } },
    ];
    assert.equal(result.revision, revisions.rollback);
    assert.deepEqual([result.rolledBack.to, result.rolledBack.from], [revisions.knownGood, revisions.bad]);
    // The cluster's workflow held the hosts for each of the three deploys and recorded a revision for each (a
    // full recording has the other deploys' before them).
    const held = readHistory(entryFor('cluster-held.json')).events ?? [];
    assert.deepEqual(updateNames(held).slice(-6), [
      'hold',
      'recordRevision',
      'hold',
      'recordRevision',
      'hold',
      'recordRevision',
    ]);
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
      // The cluster's workflow has no patch yet: it came with issue 29.
      cluster: [],
    };
    // Recorded after clusters held hosts: the rolled-back upgrade's deploys took the cluster-hold branch.
    const heldHosts = new Set([
      'deploy-rolled-back-failed.json',
      'deploy-rolled-back.json',
      'deploy-companions.json',
    ]);
    for (const entry of manifest.histories) {
      const markers = patchMarkers(readHistory(entry));
      for (const id of markers) assert.ok(patchIds.includes(id), `${entry.file}: ${id} is a listed patch`);
      const expected = [
        ...met[entry.workflowType],
        ...(heldHosts.has(entry.file) ? [patches.clusterHold] : []),
      ];
      for (const id of expected) {
        assert.ok(markers.includes(id), `${entry.file} carries the marker ${id}: ${markers.join(', ')}`);
      }
    }
  });

  for (const entry of manifest.histories) {
    it(`${entry.file} replays against the current workflow code`, async () => {
      await replay(current, entry);
    });
  }

  // A worker restarted with OTEL_EXPORTER_OTLP_ENDPOINT set (issue 32) takes over the deploys a worker without it
  // ran, and the other way round: the tracing interceptors add headers, never commands, and their export sink is
  // not called on replay (the spans of what already ran are not sent twice).
  it('the worker without tracing has none of its code; every recording replays with the tracing interceptors too, exporting no span', async () => {
    const interceptorName = 'OpenTelemetryInboundInterceptor';
    assert.ok(
      !readFileSync(current.codePath, 'utf8').includes(interceptorName),
      'no tracing in the plain bundle',
    );
    assert.ok(readFileSync(traced.codePath, 'utf8').includes(interceptorName), 'the traced bundle has them');
    const kept: ReadableSpan[] = [];
    const exporter = makeWorkflowExporter(keepingProcessor(kept), new Resource({ 'service.name': 'replay' }));
    for (const entry of manifest.histories) await replay(traced, entry, { exporter });
    assert.deepEqual(
      kept.map((s) => s.name),
      [],
      'replay exports no span',
    );
  });

  it('a workflow that runs one extra activity before its first step fails replay (DeterminismViolationError)', async () => {
    const entry = entryFor('deploy-succeeded.json');
    await assert.rejects(replay(changed, entry), (err: unknown) => {
      assert.ok(err instanceof DeterminismViolationError, `a DeterminismViolationError: ${String(err)}`);
      assert.match(err.message, /Nondeterminism error/);
      return true;
    });
  });
});
