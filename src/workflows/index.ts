export { probeCluster } from './probe.js';
export type { ProbeClusterResult } from './probe.js';
export { deploy, progressQuery } from './deploy.js';
export type { DeployOptions, DeployTrigger } from './deploy.js';
export { supervise } from './supervise.js';
export { supervisionQuery, stopSupervisionSignal } from './supervise-api.js';
export { notify } from './notify.js';
export { plan } from './plan.js';
export type { PlanFindings, PlanResult } from './plan.js';
