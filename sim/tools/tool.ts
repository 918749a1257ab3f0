/** Every simulated tool exports `main(args)`, returning the exit code. Long-running tools may never resolve. */
export type ToolMain = (args: string[]) => Promise<number>;
