// Every activity the worker registers. Workflows import only the types (proxyActivities<typeof activities>).
export { checkWorkerPolicy } from './worker-policy.js';
export { readGpuState, verifyGpusClear } from './gpu.js';
export { preflightHost } from './preflight.js';
export { checkHostsAgree } from './agreement.js';
export { stopServices } from './services.js';
export { removeContainers } from './containers.js';
export { startRayHead, startRayWorker } from './ray-start.js';
export { verifyRayCluster } from './ray-cluster.js';
export { launchServe } from './serve.js';
export { checkServeHealth, checkRayWorker } from './health.js';
export { smokeTest } from './smoke.js';
export { collectDiagnostics } from './diagnostics.js';
export { probeServingCluster } from './cluster-probe.js';
export { collectFailureBundle } from './failure-bundle.js';
export { postWebhook } from './webhook.js';
export { checkMasterPort, startRank, checkRank } from './multiproc.js';
export { planHostCommands } from './plan.js';
export { findHostOwners, handOverHosts, holdHosts, lookAtCluster, endClusterRuns, releaseHosts } from './cluster-hold.js';
