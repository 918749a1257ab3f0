export { probeCluster } from './probe.js';
export type { ProbeClusterResult } from './probe.js';
