// A promise that must reject with an error of a given class, read back so the test can check its fields.
import assert from 'node:assert/strict';

/** The error `promise` rejected with; fails the test if it resolved or threw anything but a `type`. */
export async function rejectionOf<T>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${type.name}, but it resolved`);
}
