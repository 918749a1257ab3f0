// Every host step (steps/host-step.ts), in the deploy's order. The worker registers an activity for each, the plan
// shows each where the spec runs it, and workflows/patches.ts lists their patch ids.
import type { HostStep } from './host-step.js';
export type { HostStepInput } from './host-step.js';
import { servePortFree } from './serve-port-free.js';

export const hostSteps: readonly HostStep[] = [servePortFree];

export function hostStepNamed(name: string): HostStep {
  const step = hostSteps.find((s) => s.name === name);
  if (!step) throw new Error(`no host step named ${name}`);
  return step;
}
