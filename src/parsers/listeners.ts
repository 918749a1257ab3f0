// What `ss -Hltn 'sport = :PORT'` printed (host-commands/multiproc.ts listenerCommand): the first listening socket,
// cut, for a message that names what holds the port.

/** The first listener's line (at most 200 characters), or undefined when nothing listens. */
export function listenerOf(ssOutput: string): string | undefined {
  const line = ssOutput
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return line === undefined ? undefined : line.slice(0, 200);
}
