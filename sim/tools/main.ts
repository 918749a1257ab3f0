// One bundle serves every simulated tool, each call its own process: the thin client in the host's bin/ (or a
// shell shim where no C compiler was found) passes the tool name first. Calls the host's tool server does not
// take (server.ts) end up here too.
import { isToolName, recordCommand, tools } from './registry.js';

async function run(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  if (name === undefined || !isToolName(name)) {
    process.stderr.write(`simtool: unknown tool ${name ?? '(none)'}\n`);
    process.exit(127);
  }
  recordCommand(process.env.LIFTOFF_SIM_HOST_DIR, name, args);
  const { main } = await tools[name]();
  const code = await main(args);
  process.exitCode = code;
}

void run().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
