// `liftoff rollback CLUSTER [--to N]`: deploys a recorded revision again (default: the last known-good before the
// one serving), its spec as recorded and its image pinned to the recorded ID, so a tag moved since cannot sneak in.
// It is a deploy of the cluster (one per cluster holds); its preflight refuses, naming the host, when the recorded
// image or weights are gone, before anything is stopped.
import { Command } from 'commander';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { deployAlreadyRunningMessage } from '../shared/failures.js';
import { deploySpecSchema } from '../config/schema.js';
import { formatIssues } from '../config/errors.js';
import { withClient } from '../temporal/connection.js';
import { startDeploy } from '../temporal/start-deploy.js';
import { runCommand, UsageError } from '../cli/run-command.js';
import { DeployRefusedError, followDeploy } from '../cli/deploy-run.js';
import { deployWorkflowId } from '../shared/constants.js';
import { readClusterRevisions } from '../activities/revisions.js';
import { revisionNumber } from './revisions.js';
import { pinnedSpec, rollbackRequest, rollbackTarget } from '../shared/rollback.js';

export const rollbackCommand = new Command('rollback')
  .description(
    'deploy a recorded revision again (default: the last known-good before the serving one), its image pinned by ID',
  )
  .argument('<cluster>', 'cluster name from the spec')
  .option('--to <revision>', 'the revision to deploy again (liftoff revisions lists them)')
  .option('--follow', 'show each step and the load progress until the rollback ends')
  .option('--no-supervise', 'do not start the supervisor once it serves')
  .option('--json', 'print one JSON document (the result, or the error)')
  .action((cluster: string, opts: { to?: string; follow?: boolean; json?: boolean; supervise: boolean }) =>
    runCommand(opts, () =>
      withClient(async (client) => {
        const to = opts.to === undefined ? undefined : revisionNumber(opts.to, '--to');
        const read = await readClusterRevisions(client, cluster);
        const target = rollbackTarget(read.revisions, read.current, to);
        if ('problem' in target) throw new UsageError(`cannot roll ${cluster} back: ${target.problem}`);
        const { revision } = target;
        // The recorded spec was valid when it ran; a liftoff that reads specs differently now says so here.
        const parsed = deploySpecSchema.safeParse(pinnedSpec(revision));
        if (!parsed.success)
          throw new UsageError(
            `revision ${revision.number}'s spec is not valid for this liftoff:\n${formatIssues(parsed.error)}`,
          );
        const cause = `asked for (liftoff rollback${opts.to !== undefined ? ` --to ${opts.to}` : ''})`;
        const handle = await startDeploy(client, parsed.data, 'rollback', {
          rollback: rollbackRequest(revision, cause),
          ...(opts.supervise ? {} : { supervise: false }),
        }).catch((err: unknown) => {
          if (err instanceof WorkflowExecutionAlreadyStartedError)
            throw new DeployRefusedError(
              deployAlreadyRunningMessage(cluster, deployWorkflowId(cluster), 'rollback'),
            );
          throw err;
        });
        return followDeploy(opts, handle, 'rollback', cluster);
      }),
    ),
  );
