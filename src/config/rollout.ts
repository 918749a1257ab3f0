// The `rollout` section of the spec: what a deploy does when the new revision fails after it stopped the one that
// served (issue 30). Pure: workflows validate with it.
import { z } from 'zod';
import { boundedDuration } from './duration.js';
import { day, second } from './limits.js';

export const rolloutSchema = z
  .strictObject({
    /**
     * rollback: a deploy that fails once it stopped the serving revision (a fatal line or exit during the load, the
     * load deadline, the smoke test, or a loss within bakeTime) deploys the last known-good revision again and
     * marks the new one bad. leave: it stays failed, as onFailure says.
     */
    onFailure: z.enum(['rollback', 'leave']).default('rollback'),
    /** How long after serving a loss the supervisor sees still counts as the new revision's failure. */
    bakeTime: boundedDuration({ minMs: second, maxMs: day, maxText: '24h', example: '10m' }).default('10m'),
  })
  .prefault({});
