export { probeCluster } from './probe.js';
export type { ProbeClusterResult } from './probe.js';
export { deploy, progressQuery } from './deploy.js';
export type { DeployOptions, DeployTrigger } from './deploy.js';
