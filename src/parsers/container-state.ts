// A container's state, judged: it runs, or one sentence says what became of it. The deploy's load watch, a rank's
// end and the supervisor's probes of the head and the workers all say it this way.

/** What a read of one container found: docker's State.Status (absent: no such container) and its exit code. */
export interface ContainerLook {
  running: boolean;
  status?: string | undefined;
  exitCode?: number | undefined;
}

export type ContainerVerdict = { ok: true } | { ok: false; message: string };

/** `<what> is exited (exit code 137)`, `<what> is gone`: the one sentence for a container that does not run. */
export function judgeContainer(look: ContainerLook, what: string): ContainerVerdict {
  if (look.running) return { ok: true };
  if (look.status === undefined) return { ok: false, message: `${what} is gone` };
  const code = look.exitCode === undefined ? '' : ` (exit code ${look.exitCode})`;
  return { ok: false, message: `${what} is ${look.status}${code}` };
}
