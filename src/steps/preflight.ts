// Step 1 on one host, read only: every declared check's reads (src/steps/preflight-checks.ts) and the host's
// agreement read (src/steps/agreement-read.ts) as one run, so the step costs the host one round trip; each check
// judged on its own answers; the host's facts handed back in the report for the workflow to pass on. The plan's
// entry is built from the same list, so plan and deploy cannot drift.
import type { DeploySpec } from '../config/schema.js';
import { modelPathFor } from '../config/derive.js';
import type { Answers, StepCommand } from '../host-commands/step-command.js';
import type { ExecResult } from '../ssh/executor.js';
import { hostReadOf } from '../preflight/agreement.js';
import { plannedRun, type PlanHost, type PlannedCommand, type PlannedStep } from '../plan/planned.js';
import { agreementCommands, factsOf, factsToPass, maxPassedFactsBytes } from './agreement-read.js';
import {
  hostChecks,
  type PreflightCheck,
  type PreflightInput,
  type PreflightReport,
  type Verdict,
} from './preflight-checks.js';
import { preflightInputOf } from './preflight-input.js';

/** Every command of a host's preflight trip: the clock first (the offset is measured from the trip's start). */
export function preflightCommands(input: PreflightInput): StepCommand[] {
  const agreement = input.agreement ? agreementCommands(input.agreement.read, input.agreement.versions) : [];
  const clock = agreement.filter((c) => c.name === 'clock');
  const checks = hostChecks.flatMap((c) => c.reads(input));
  return once([...clock, ...checks, ...agreement.filter((c) => c.name !== 'clock')]);
}

/** A read two parts of the step share (the image ID, the addresses) runs once; a name never means two commands. */
function once(commands: readonly StepCommand[]): StepCommand[] {
  const byName = new Map<string, StepCommand>();
  for (const c of commands) {
    const seen = byName.get(c.name);
    if (seen && seen.command.text !== c.command.text)
      throw new TypeError(`preflight read ${c.name} is declared twice with different commands`);
    if (!seen) byName.set(c.name, c);
  }
  return [...byName.values()];
}

/** The report of one host's trip: each check's verdict in order, and its agreement facts when it read them. */
export function judgePreflight(
  answers: Answers,
  input: PreflightInput,
  startedAtMs: number,
): PreflightReport {
  const answer = (name: string): ExecResult => {
    const a = answers.get(name);
    if (!a) throw new Error(`preflight: no answer for ${name}: the trip did not run it`);
    return a;
  };
  const verdicts = new Map<string, Verdict>();
  const checks: PreflightCheck[] = [];
  for (const check of hostChecks) {
    const verdict = check.judge(answer, input, (name) => verdicts.get(name));
    if (!verdict) continue;
    verdicts.set(check.name, verdict);
    checks.push({ name: check.name, ...verdict });
  }
  const facts = input.agreement
    ? factsToPass(factsOf(answers, input.agreement.read, startedAtMs))
    : undefined;
  return {
    host: input.host.target.name,
    ok: checks.every((c) => c.ok),
    checks,
    ...(facts ? { facts } : {}),
  };
}

/**
 * The host's preflight input as the deploy's workflow builds it with the agreement checks on (they cover
 * NCCL/GLOO_SOCKET_IFNAME, so no interface is named) and read in the host's own trip.
 */
export function plannedPreflightInput(spec: DeploySpec, host: PlanHost, head: PlanHost): PreflightInput {
  const expect = {
    image: spec.ray.image,
    modelPath: modelPathFor(spec) ?? '',
    hashWeights: spec.preflight.hashWeights,
    rayPort: spec.ray.port,
    hosts: [head, host].map((h) => ({ name: h.name, clusterIp: h.clusterIp, role: h.role })),
  };
  const read = hostReadOf(expect, { name: host.name, clusterIp: host.clusterIp, role: host.role });
  return preflightInputOf(spec, host, host.role === 'head', read);
}

/** The plan's preflight on one host: what it makes sure of, its one trip, then `more` (reads that follow it). */
export function preflightPlan(input: PreflightInput, more: PlannedCommand[] = []): PlannedStep {
  const intent = hostChecks.flatMap((c) => c.intent(input) ?? []);
  if (input.agreement) {
    const { read, versions } = input.agreement;
    intent.push(
      `agrees with the other hosts: image ID${versions ? ', Python/Ray/vLLM inside the image' : ''}, weights${read.hashWeights ? ' (sha256)' : ''}, addresses and MTU, logind's RemoveIPC, clock${read.rayHead ? `; reaches the head's Ray port ${read.rayHead.ip}:${read.rayHead.port}` : ''}`,
    );
  }
  // checkHostsAgree reads a host itself only when the facts of its trip did not reach it.
  const alone = input.agreement
    ? [
        plannedRun(agreementCommands(input.agreement.read, input.agreement.versions), {
          when: `its facts were too big to pass through the workflow's history (over ${maxPassedFactsBytes / 1024} KiB, or past 1 MiB for all hosts)`,
        }),
      ]
    : [];
  return { step: 'preflight', intent, commands: [plannedRun(preflightCommands(input)), ...alone, ...more] };
}
