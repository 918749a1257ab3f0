// The text form of `liftoff plan` (the JSON form is the PlanResult itself): per host, each step's commands in
// the order the deploy runs them, `$` for a read and `!` for a change, then what would be stopped, removed and
// started. Handed to the one output renderer (src/cli/render.ts), which escapes host text first.
import { deploySteps } from '../workflows/steps.js';
import { planPlaceholders, type HostPlan } from '../plan/host-plan.js';
import type { PlanResult } from '../workflows/index.js';

const titles = new Map<string, string>(deploySteps.map((s) => [s.name, s.title]));

/**
 * A command on one line: a line break inside it (part of a quoted argument, or of a host's or a spec's text)
 * shows as `\n`, so no command can fake lines of its own, such as a step or a `$` read that is not in the plan.
 */
function commandLine(prefix: string, text: string): string {
  return `${prefix}${text.replaceAll('\n', '\\n')}`;
}

function hostBlock(plan: HostPlan): string[] {
  const lines = [`${plan.host} (${plan.role})`];
  for (const step of plan.steps) {
    const title = `  ${titles.get(step.step) ?? step.step} [${step.step}]`;
    if (step.skipped) {
      lines.push(`${title}: skipped (${step.skipped})`);
      continue;
    }
    lines.push(step.note ? `${title}: ${step.note}` : title);
    for (const cmd of step.commands) {
      if (cmd.parts) {
        // A batch: its parts, one a line, under the round trip that carries them (`--json` has the script).
        lines.push(`    ${cmd.change ? '!' : '$'} one round trip:`);
        for (const part of cmd.parts) {
          lines.push(commandLine(`      ${part.change ? '!' : '$'} `, part.text));
          if (part.when) lines.push(`          (only when ${part.when})`);
          if (part.note) lines.push(`          (${part.note})`);
        }
      } else lines.push(commandLine(`    ${cmd.change ? '!' : '$'} `, cmd.text));
      if (cmd.repeats) lines.push(`      (repeated ${cmd.repeats})`);
      if (cmd.when) lines.push(`      (only when ${cmd.when})`);
    }
  }
  return lines;
}

function perHost(result: PlanResult, pick: (h: HostPlan) => string[]): string {
  const parts = result.hosts.map((h) => `${h.host}: ${pick(h).join(', ') || 'nothing'}`);
  return parts.join('; ');
}

export function renderPlan(result: PlanResult): string {
  if (!result.wouldStart) {
    return [
      `plan for ${result.cluster}: preflight would refuse the deploy; nothing would be stopped, removed or started:`,
      ...result.problems.map((p) => `  ${p}`),
    ].join('\n');
  }
  const changes = result.hosts.reduce(
    (n, h) =>
      n +
      h.steps
        .flatMap((s) => s.commands)
        .flatMap((c) => c.parts ?? [c])
        .filter((c) => c.change).length,
    0,
  );
  const lines = [
    `plan for ${result.cluster}: preflight passed on every host (${result.hosts.map((h) => h.host).join(', ')}); the deploy would start and run ${changes} commands that change a host`,
    '`$` reads, `!` changes the host. Placeholders for what exists only once the deploy runs: ' +
      `${planPlaceholders.runId} (its run id), ${planPlaceholders.startedAt} (the launch time in ms), ${planPlaceholders.pid} (the server's pid), ${planPlaceholders.nonce} (the agreement read's section marker)`,
  ];
  for (const w of result.warnings) lines.push(`warning: ${w}`);
  if (result.secrets.length > 0) {
    lines.push(
      `secrets (sent on stdin, never on a command line): ${result.secrets.map((s) => `${s.field} = (${s.source})`).join(', ')}`,
    );
  }
  for (const host of result.hosts) lines.push('', ...hostBlock(host));
  lines.push(
    '',
    `would stop:    ${perHost(result, (h) => h.stop)}`,
    `would disable: ${perHost(result, (h) => h.disable)}`,
    `would remove:  ${perHost(result, (h) => h.remove)}`,
    `would start:   ${perHost(result, (h) => h.start)}`,
  );
  return lines.join('\n');
}
