// `node --import tsx src/temporal/bundle-workflows.ts FILE [FAILURE_CONVERTER]`: writes the workflow bundle to
// FILE, with that failure converter module if given. Run by workflowBundle() (workflow-bundle.ts) in a child process.
import { bundleWorkflowsTo } from './workflow-bundle.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: bundle-workflows.ts FILE [FAILURE_CONVERTER]');
  process.exit(2);
}
await bundleWorkflowsTo(file, process.argv[3]);
