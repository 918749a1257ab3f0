// Step 1 on one host, read only: every declared check's reads (src/steps/preflight-checks.ts) and the host's
// agreement read (src/steps/agreement-read.ts) as one run, so the step costs the host one round trip; each check
// judged on its own answers; the host's facts handed back in the report for the workflow to pass on. The plan's
// entry is built from the same list, so plan and deploy cannot drift.
import { answerOf, type Answers, type StepCommand } from '../host-commands/step-command.js';
import { plannedRun, type PlannedCommand, type PlannedStep } from './plan-entry.js';
import { agreementCommands, factsOf, factsToPass } from './agreement-read.js';
import { hostChecks, type PreflightCheck, type PreflightReport, type Verdict } from './preflight-checks.js';
import type { PreflightInput } from './preflight-input.js';

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
  const verdicts = new Map<string, Verdict>();
  const checks: PreflightCheck[] = [];
  for (const check of hostChecks) {
    const verdict = check.judge(
      (name) => answerOf(answers, name),
      input,
      (name) => verdicts.get(name),
    );
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
 * The plan's preflight on one host: which checks it makes (their findings lead the plan), its one trip, then
 * `more` (reads that follow it). checkHostsAgree's own read of a host whose facts were too big to pass (over
 * 32 KiB) is not listed: it is the same reads as the trip's agreement part.
 */
export function preflightPlan(input: PreflightInput, more: PlannedCommand[] = []): PlannedStep {
  const checks = hostChecks.filter((c) => c.name === 'ssh' || c.reads(input).length > 0).map((c) => c.name);
  const agreement = input.agreement
    ? `; agreement across hosts: image ID${input.agreement.versions ? ', versions in the image' : ''}, weights, addresses and MTU, IPC, clock${input.agreement.read.rayHead ? ", the head's Ray port" : ''}`
    : '';
  return {
    step: 'preflight',
    intent: [`checks ${checks.join(', ')}${agreement}`],
    commands: [plannedRun(preflightCommands(input)), ...more],
  };
}
