// Every activity the worker registers. Workflows import only the types (proxyActivities<typeof activities>).
export { readGpuState } from './gpu.js';
