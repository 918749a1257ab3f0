// `node --import tsx src/temporal/bundle-workflows.ts FILE`: writes the workflow bundle to FILE. Run by
// workflowBundle() (workflow-bundle.ts) in a child process.
import { bundleWorkflowsTo } from './workflow-bundle.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: bundle-workflows.ts FILE');
  process.exit(2);
}
await bundleWorkflowsTo(file);
