export { probeCluster } from './probe.js';
export type { ProbeClusterResult } from './probe.js';
export { deploy, progressQuery } from './deploy.js';
export type { DeployOptions, DeployTrigger } from './deploy.js';
export { supervise } from './supervise.js';
export type { SuperviseResult } from './supervise.js';
export { supervisionQuery, stopSupervisionSignal } from './supervise-api.js';
export type { SuperviseInput } from './supervise-api.js';
