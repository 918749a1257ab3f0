// deploy/prometheus/alerts.yml (issue 32): promtool checks it and runs its rules test (synthetic series: the lost
// and wedge alerts fire, healthy clusters stay quiet), and every expression names a series something exports.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { projectRoot } from '../../src/temporal/cli-path.js';
import { knownSeries, seriesNames } from '../helpers/promql-names.js';

const execFileAsync = promisify(execFile);
const rulesDir = join(projectRoot, 'deploy', 'prometheus');

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}

const rules = (parse(readFileSync(join(rulesDir, 'alerts.yml'), 'utf8')) as RuleFile).groups.flatMap(
  (g) => g.rules,
);

/** promtool, installed with Debian's prometheus by scripts/setup.sh (--for test). */
async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync('promtool', args, { cwd: rulesDir, timeout: 30_000 });
    return stdout + stderr;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT') assert.fail('promtool is installed (bash scripts/setup.sh)');
    assert.fail(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

describe('deploy/prometheus/alerts.yml', () => {
  it('passes promtool check rules', async () => {
    assert.match(await promtool('check', 'rules', 'alerts.yml'), /SUCCESS: \d+ rules found/);
  });

  it("passes promtool test rules (alerts.test.yml): lost, wedge, degraded, budget and failed deploy fire, healthy clusters don't", async () => {
    assert.match(await promtool('test', 'rules', 'alerts.test.yml'), /SUCCESS/);
    const tested = readFileSync(join(rulesDir, 'alerts.test.yml'), 'utf8');
    for (const alert of rules.flatMap((r) => (r.alert ? [r.alert] : [])))
      assert.match(tested, new RegExp(`alertname: ${alert}$`, 'm'), `${alert} has a test`);
  });

  it("prometheus.yml (the compose profile's) passes promtool check config, its paths where compose mounts them", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'liftoff-prometheus-'));
    try {
      const config = readFileSync(join(rulesDir, 'prometheus.yml'), 'utf8').replaceAll(
        '/etc/prometheus/',
        `${dir}/`,
      );
      writeFileSync(join(dir, 'prometheus.yml'), config);
      copyFileSync(join(rulesDir, 'alerts.yml'), join(dir, 'alerts.yml'));
      assert.match(await promtool('check', 'config', join(dir, 'prometheus.yml')), /SUCCESS/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has the alerts issue 32 asks for, each with a severity', () => {
    const alerts = rules.filter((r) => r.alert);
    assert.deepEqual(alerts.map((r) => r.alert).sort(), [
      'LiftoffClusterDegraded',
      'LiftoffClusterLost',
      'LiftoffDeployFailed',
      'LiftoffRelaunchBudgetLow',
      'LiftoffVllmWedged',
    ]);
    for (const r of alerts)
      assert.match(r.labels?.severity ?? '', /^(critical|warning)$/, `${r.alert} severity`);
  });

  it('names only series the worker, vLLM or the Temporal SDK export (or its own recording rules)', () => {
    const known = knownSeries();
    for (const r of rules) if (r.record) known.add(r.record);
    for (const r of rules) {
      const names = seriesNames(r.expr);
      assert.ok(names.length > 0, `${r.alert ?? r.record}: names a series`);
      for (const name of names) assert.ok(known.has(name), `${r.alert ?? r.record}: ${name} is exported`);
    }
  });
});
