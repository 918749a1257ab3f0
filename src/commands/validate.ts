// `liftoff validate -c FILE`: the spec check that every deploy runs first, without starting anything.
import { Command } from 'commander';
import { loadSpecFile } from '../config/load.js';
import { deploySpecSchema } from '../config/schema.js';
import { emit } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';

export const validateCommand = new Command('validate')
  .description('check a cluster spec; names every invalid field and what it expects')
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option('--json', 'print the validated spec (defaults applied) as JSON')
  .action((opts: { config: string; json?: boolean }) =>
    runCommand(opts, () => {
      const spec = loadSpecFile(deploySpecSchema, opts.config);
      emit(opts, { valid: true, spec }, (r) => {
        const head = r.spec.hosts.find((h) => h.role === 'head');
        return `${opts.config} is valid: cluster ${r.spec.cluster}, ${r.spec.hosts.length} hosts (head ${head?.name ?? '?'}), model ${r.spec.serve.model}, tensor parallel ${r.spec.serve.tensorParallelSize}`;
      });
      return Promise.resolve();
    }),
  );
