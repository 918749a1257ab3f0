// `liftoff schedule …`: deploys on a timetable, built on Temporal Schedules.
import { Command } from 'commander';
import { scheduleCreateCommand } from './create.js';
import { scheduleListCommand } from './list.js';
import { scheduleDescribeCommand } from './describe.js';
import { schedulePauseCommand, scheduleUnpauseCommand } from './pause.js';
import { scheduleTriggerCommand } from './trigger.js';
import { scheduleDeleteCommand } from './delete.js';

export const scheduleCommand = new Command('schedule')
  .description('deploy a cluster on a timetable (Temporal Schedules; overlap SKIP, one deploy per cluster)')
  .showHelpAfterError();

// buildProgram (commands/index.ts) gives every command its exitOverride.
for (const sub of [
  scheduleCreateCommand,
  scheduleListCommand,
  scheduleDescribeCommand,
  schedulePauseCommand,
  scheduleUnpauseCommand,
  scheduleTriggerCommand,
  scheduleDeleteCommand,
])
  scheduleCommand.addCommand(sub.showHelpAfterError());
