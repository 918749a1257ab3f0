// Every patch id of the workflow code, in one place. The encryption test allows exactly these names to stay plain
// in a history (the SDK writes a patch marker's name itself, never through the payload codec).
//
// Most are deprecated (2026-12, issue 28): the code calls `deprecatePatch(id)` where it called `patched(id)`,
// and the branch for runs recorded before the patch is gone. Those still checked with `patched()` (the cluster
// hold and its host digests, the supervisor's reports, its backoff reset, its watch, the host steps) keep their old path for runs
// recorded before them. A deprecated call, and its id here, can be removed entirely once (1) no deploy or
// supervisor run that began before the deprecation is still running: a marker `patched()` wrote fails replay when
// no call meets it ("Non-deprecated patch marker encountered"), (2) test/histories has been re-recorded, so its
// markers are the deprecated ones, which replay skips, and (3) no worker older than the deprecation polls the
// task queue. test/histories/README.md has the schedule.
import { hostSteps } from '../steps/host-steps.js';

export const patches = {
  /** A deploy takes supervision over from the running supervisor and starts its own once it serves. */
  supervision: 'supervision',
  /** The validate step's check of the spec against the worker's policy, in an activity before any SSH. */
  workerPolicy: 'validate-worker-policy',
  /** serve.backend: multiproc, vLLM's own multi-node mode (src/workflows/deploy-multiproc.ts). */
  multiprocBackend: 'multiproc-backend',
  /** A notification records what it delivered and what failed in its memo, for `liftoff status`. */
  notifyRecord: 'notify-record',
  /** A supervise round is one local activity over one SSH pool instead of one activity per host. */
  localProbeRound: 'supervise-local-probe-round',
  /** Preflight's checks that the hosts agree with each other (image, versions, weights, addresses, IPC, clocks). */
  agreementChecks: 'agreement-checks',
  /** Each host's agreement read rides in its preflightHost's round trip; checkHostsAgree then compares. */
  preflightOneTrip: 'preflight-one-trip',
  /** stopServices reads the container lists after the stop, in its trip, for removeContainers to start from. */
  containerListsWithStop: 'container-lists-with-stop',
  /** verifyRayCluster reads the launch marker beside Ray's state, so launchServe can launch on that last look. */
  launchReadsWithVerify: 'launch-reads-with-verify',
  /** A multiproc deploy is supervised: the rounds probe every rank's container instead of `ray status`. */
  multiprocSupervision: 'multiproc-supervision',
  /** `liftoff plan` of a multiproc spec: its preflight checks serve.masterPort on the head, as the deploy's does. */
  multiprocPlan: 'multiproc-plan',
  /** The load polls the hosts other than the head every serve.workerPollEvery polls instead of every poll. */
  workerPollEvery: 'load-worker-poll-every',
  /** A head that fails the load first has the hosts not polled that round polled, and a lost one named instead. */
  lostHostBeforeHeadFailure: 'lost-host-before-head-failure',
  /** A supervisor told to stop while it probed or collected a bundle ends there: no `lost`, relaunch or degrade. */
  superviseStopBeforeActing: 'supervise-stop-before-acting',
  /** A relaunch refused (another deploy runs) is tried again with the loss's bundle, not a new one each interval. */
  refusedRelaunchKeepsBundle: 'supervise-refused-keeps-bundle',
  /** A deploy holds its hosts in the cluster's workflow (workflows/cluster.ts) and refuses hosts another holds. */
  clusterHold: 'cluster-hold',
  /** The supervisor tells the cluster's workflow when its state changes, with the next relaunch's backoff. */
  superviseReportsToCluster: 'supervise-reports-to-cluster',
  /** A relaunch that then served supervise.stableAfter ends a crash loop: the next loss's backoff starts over. */
  superviseBackoffReset: 'supervise-backoff-reset',
  /** A healthy cluster's rounds run in the worker between reports (supervise.reportEvery), in one activity. */
  superviseWatch: 'supervise-watch',
  /** A cluster's workflow lists its hosts in LiftoffHostIds by digest, so a cluster of any size fits the cap. */
  clusterHostDigests: 'cluster-host-digests',
} as const;

/** Every id, the host steps' (src/steps/host-steps.ts) among them. */
export const patchIds: readonly string[] = [...Object.values(patches), ...hostSteps.map((s) => s.patch)];
