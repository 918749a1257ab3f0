// `liftoff schedule unpause ID|CLUSTER [--note TEXT]`: scheduled runs start again from the next matching time;
// fires missed while paused are not made up.
import { setPausedCommand } from './pause.js';

export const scheduleUnpauseCommand = setPausedCommand(false);
