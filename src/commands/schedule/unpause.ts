// `liftoff schedule unpause ID|CLUSTER [--note TEXT]`: scheduled runs start again from the next matching time;
// fires missed while paused are not made up.
import { Command } from 'commander';
import { emit } from '../../cli/render.js';
import { runCommand } from '../../cli/run-command.js';
import { withClient } from './common.js';
import { renderPause, setPaused } from './pause.js';

export const scheduleUnpauseCommand = new Command('unpause')
  .description('unpause a schedule: runs start again at the next matching time')
  .argument('<schedule>', 'schedule id, or cluster name')
  .option(
    '--note <text>',
    'why (shown by describe and in the Temporal UI)',
    'unpaused with liftoff schedule unpause',
  )
  .option('--json', 'print the new state as JSON')
  .action((ref: string, opts: { note: string; json?: boolean }) =>
    runCommand(opts, async () => {
      const report = await withClient((client) => setPaused(client, ref, false, opts.note));
      emit(opts, report, renderPause);
    }),
  );
