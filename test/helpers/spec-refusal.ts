// How the unit tests of the spec's rules read a refusal: the schema's formatted issues, as the CLI shows them.
import assert from 'node:assert/strict';
import { deploySpecSchema } from '../../src/config/schema.js';
import { formatIssues } from '../../src/config/errors.js';

/** The issues of a spec the schema must refuse; fails the test when the schema accepts it. */
export function refusalOf(spec: unknown): string {
  const r = deploySpecSchema.safeParse(spec);
  assert.equal(r.success, false, 'the spec should be refused');
  return r.success ? '' : formatIssues(r.error);
}
