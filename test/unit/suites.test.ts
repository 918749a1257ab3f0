// The e2e suites' table (test/helpers/suites.ts): no two suites may share a network index or a state directory,
// or one suite's bring-up tears down the other's cluster when both run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { e2eSuites, suiteStateDir, type E2eSuite } from '../helpers/suites.js';

describe('the e2e suites table', () => {
  const suites = Object.keys(e2eSuites) as E2eSuite[];

  it('gives every suite its own network index', () => {
    const byIndex = new Map<number, E2eSuite[]>();
    for (const s of suites)
      byIndex.set(e2eSuites[s].netIndex, [...(byIndex.get(e2eSuites[s].netIndex) ?? []), s]);
    const shared = [...byIndex].filter(([, names]) => names.length > 1);
    assert.deepEqual(shared, [], `suites sharing a netIndex: ${JSON.stringify(shared)}`);
  });

  it('gives every suite its own state directory, under /tmp', () => {
    const dirs = suites.map(suiteStateDir);
    assert.equal(new Set(dirs).size, dirs.length);
    for (const d of dirs) assert.match(d, /^\/tmp\/liftoff-test-[a-z0-9-]+$/);
  });
});
