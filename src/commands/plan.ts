// `liftoff plan -c FILE`: what a deploy of this spec would do, without doing it. The spec and this machine's
// worker policy are checked here first (as `liftoff validate` does); then the `plan` workflow runs the deploy's
// own validate and preflight steps on a worker and lists, per host and in order, every command the deploy
// would run there, built by the deploy's own command builders. The text leads with what each step will do and
// what preflight found, then every change exactly (plan-render.ts); --verbose adds every read and each round
// trip's script, --json is the whole result. Exit 0: the deploy would start; 1: preflight would refuse; 2: bad
// input.
import { Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import { describeFailure } from '../cli/deploy-status.js';
import { loadSpecFile, SpecError } from '../config/load.js';
import { deploySpecSchema } from '../config/schema.js';
import { localPolicyAllowing } from '../config/policy-check.js';
import { withClient } from '../temporal/connection.js';
import { TASK_QUEUE, searchAttributes } from '../shared/constants.js';
import { FailureType } from '../shared/failures.js';
import { emit } from '../cli/render.js';
import { runCommand } from '../cli/run-command.js';
import { ExitCode } from '../cli/exit-codes.js';
import { plan, type PlanResult } from '../workflows/index.js';
import { renderPlan } from './plan-render.js';

export const planCommand = new Command('plan')
  .description(
    'run the read-only preflight, then say step by step what a deploy would stop, remove and start on each host, with the exact commands',
  )
  .requiredOption('-c, --config <file>', 'cluster spec (YAML)')
  .option('--verbose', 'also list every read and the script of each round trip')
  .option('--json', 'print the plan as JSON (every command and round-trip script)')
  .action((opts: { config: string; json?: boolean; verbose?: boolean }) =>
    runCommand(opts, async () => {
      const spec = loadSpecFile(deploySpecSchema, opts.config);
      localPolicyAllowing(spec, opts.config);
      const result = await withClient((client) =>
        client.workflow
          .execute(plan, {
            taskQueue: TASK_QUEUE,
            workflowId: `liftoff-plan-${spec.cluster}`,
            args: [spec],
            typedSearchAttributes: [{ key: searchAttributes.cluster, value: spec.cluster }],
          })
          .catch((err: unknown): PlanResult => {
            if (!(err instanceof WorkflowFailedError)) throw err;
            const f = describeFailure(err);
            // The worker's own validate step refused the spec (its policy may differ from this machine's).
            if (f.type === FailureType.invalidSpec) throw new SpecError(f.message);
            throw new Error(`${f.type}: ${f.message}`);
          }),
      );
      emit(opts, result, (r) => renderPlan(r, { verbose: opts.verbose === true }));
      return result.wouldStart ? ExitCode.ok : ExitCode.deployFailed;
    }),
  );
