// Teardown of what a suite started by hand (servers, workers, browsers, clusters): every step runs, whatever
// failed before it, so that one failure does not leave the rest running.
export async function tearDown(steps: readonly (() => unknown)[]): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, 'teardown failed');
}
