// `liftoff supervise stop|start CLUSTER`: the cluster's supervisor by hand (a successful deploy starts it).
import { Command } from 'commander';
import { superviseStartCommand } from './start.js';
import { superviseStopCommand } from './stop.js';

export const superviseCommand = new Command('supervise')
  .description('stop or start the supervisor that probes a serving cluster and relaunches it when it is lost')
  .showHelpAfterError();
for (const sub of [superviseStartCommand, superviseStopCommand])
  superviseCommand.addCommand(sub.showHelpAfterError());
