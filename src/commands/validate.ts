// `liftoff validate -c FILE`: the spec check that every deploy runs first, without starting anything: the schema,
// then the worker policy a worker started in this environment would apply (LIFTOFF_WORKER_POLICY, or the
// defaults), so on the worker's machine it refuses exactly what the deploy's validate step would.
import { Command } from 'commander';
import { loadSpecFile } from '../config/load.js';
import { deploySpecSchema } from '../config/schema.js';
import { localPolicyAllowing } from '../config/policy-check.js';
import { emit } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';

export const validateCommand = new Command('validate')
  .description(
    "check a cluster spec: names every invalid field and what it expects, and what this machine's worker policy refuses",
  )
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option('--schema-only', 'skip the worker policy (when the worker runs on another machine)')
  .option('--json', 'print the validated spec (defaults applied) as JSON')
  .action((opts: { config: string; schemaOnly?: boolean; json?: boolean }) =>
    runCommand(opts, () => {
      const spec = loadSpecFile(deploySpecSchema, opts.config);
      const workerPolicy = opts.schemaOnly ? null : localPolicyAllowing(spec, opts.config).source;
      emit(opts, { valid: true, spec, workerPolicy }, (r) => {
        const head = r.spec.hosts.find((h) => h.role === 'head');
        const checked = r.workerPolicy === null ? 'not checked' : `allowed by ${r.workerPolicy}`;
        return `${opts.config} is valid: cluster ${r.spec.cluster}, ${r.spec.hosts.length} hosts (head ${head?.name ?? '?'}), model ${r.spec.serve.model}, tensor parallel ${r.spec.serve.tensorParallelSize}\nworker policy: ${checked}`;
      });
      return Promise.resolve();
    }),
  );
