// deploy/grafana/liftoff.json against Grafana's own schema (issue 32's "the dashboard JSON is valid"): Grafana
// itself is not installable here, so the check is the TypeScript types Grafana publishes from its CUE schemas
// (@grafana/schema, Apache-2.0): the dashboard as a whole against `Dashboard` (the JSON model Grafana's import
// takes), and each panel's options and custom field config against its panel plugin's `Options` and
// `FieldConfig`. The JSON is pasted into a TypeScript source as object literals, so the compiler's excess
// property checks catch a misspelt or unknown key, and its literal types a value Grafana does not know.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../src/temporal/cli-path.js';

interface PanelJson {
  type: string;
  title?: string;
  options?: unknown;
  fieldConfig?: { defaults?: { custom?: unknown } };
  panels?: PanelJson[];
}

/** The panel plugins the dashboard uses, by `type`, and where @grafana/schema keeps their option types. */
const panelTypes: Record<string, string> = {
  timeseries: 'timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen',
  stat: 'stat/panelcfg/x/StatPanelCfg_types.gen',
  bargauge: 'bargauge/panelcfg/x/BarGaugePanelCfg_types.gen',
  table: 'table/panelcfg/x/TablePanelCfg_types.gen',
  'state-timeline': 'statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen',
};

const dashboardFile = join(projectRoot, 'deploy', 'grafana', 'liftoff.json');
// Never written: the compiler host below answers for it. Beside the tests, so `@grafana/schema` resolves.
const checkFile = join(projectRoot, 'test', 'unit', '__grafana-dashboard-check__.ts');

function* allPanels(panels: readonly PanelJson[]): Generator<PanelJson> {
  for (const p of panels) {
    yield p;
    yield* allPanels(p.panels ?? []);
  }
}

/**
 * The TypeScript source that types the dashboard. The schema's enums are TypeScript enums, which a JSON string
 * is not assignable to, so `Plain` turns each into the union of its values (keeping every other type, and which
 * fields are required); panel options are `Loose` too (every field optional, as Grafana fills in defaults).
 */
function checkSource(dashboard: { panels?: PanelJson[] }): string {
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  const lines = [
    `import type { Dashboard } from '@grafana/schema';`,
    ...Object.entries(panelTypes).map(
      ([, path], i) => `import type * as P${i} from '@grafana/schema/dist/esm/raw/composable/${path}';`,
    ),
    `type Plain<T> = unknown extends T ? T : T extends string ? \`\${T}\` : T extends number | boolean | null | undefined ? T : T extends readonly (infer U)[] ? Plain<U>[] : { [K in keyof T]: Plain<T[K]> };`,
    `type Loose<T> = unknown extends T ? T : T extends string ? \`\${T}\` : T extends number | boolean | null | undefined ? T : T extends readonly (infer U)[] ? Loose<U>[] : { [K in keyof T]?: Loose<T[K]> };`,
    `export const dashboard: Plain<Dashboard> = ${json(dashboard)};`,
  ];
  const kinds = Object.keys(panelTypes);
  [...allPanels(dashboard.panels ?? [])].forEach((p, n) => {
    const kind = kinds.indexOf(p.type);
    if (kind < 0) return;
    const name = `panel${n}`;
    lines.push(`// ${p.type}: ${JSON.stringify(p.title ?? '')}`);
    if (p.options !== undefined)
      lines.push(`export const ${name}Options: Loose<P${kind}.Options> = ${json(p.options)};`);
    const custom = p.fieldConfig?.defaults?.custom;
    if (custom !== undefined)
      lines.push(`export const ${name}Custom: Loose<P${kind}.FieldConfig> = ${json(custom)};`);
  });
  return `${lines.join('\n')}\n`;
}

const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
};
const baseHost = ts.createCompilerHost(compilerOptions);
// TypeScript's lib and the schema's types, parsed once for all the checks of this file.
const parsed = new Map<string, ts.SourceFile | undefined>();
let previousProgram: ts.Program | undefined;

/** The compiler's complaints about `source`, each with the line it is on (the JSON's text, pasted). */
function typeErrors(source: string): string[] {
  const host: ts.CompilerHost = {
    ...baseHost,
    getSourceFile: (file, language, ...rest) => {
      if (file === checkFile) return ts.createSourceFile(file, source, language);
      if (!parsed.has(file)) parsed.set(file, baseHost.getSourceFile(file, language, ...rest));
      return parsed.get(file);
    },
    fileExists: (file) => file === checkFile || baseHost.fileExists(file),
    readFile: (file) => (file === checkFile ? source : baseHost.readFile(file)),
  };
  const program = ts.createProgram([checkFile], compilerOptions, host, previousProgram);
  previousProgram = program;
  const lines = source.split('\n');
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return text;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${d.file.fileName === checkFile ? '' : `${d.file.fileName}:`}${line + 1}: ${text} (at ${lines[line]?.trim() ?? ''})`;
  });
}

describe('the Grafana dashboard against @grafana/schema', () => {
  const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as { panels?: PanelJson[] };

  it('types as a Dashboard, and each panel’s options and field config as its plugin’s', () => {
    const used = new Set([...allPanels(dashboard.panels ?? [])].map((p) => p.type));
    const unchecked = [...used].filter((t) => t !== 'row' && !(t in panelTypes));
    assert.deepEqual(unchecked, [], 'every panel type the dashboard uses has its options checked');
    const errors = typeErrors(checkSource(dashboard));
    assert.deepEqual(errors, [], errors.join('\n'));
  });

  it('catches what it should: an unknown key, a value Grafana does not know, a missing field', () => {
    // One fault at a time: the compiler says one thing wrong per object literal.
    const broken = (fault: (d: Record<string, unknown> & { panels: PanelJson[] }) => void): string => {
      const copy = structuredClone(dashboard) as Record<string, unknown> & { panels: PanelJson[] };
      fault(copy);
      return typeErrors(checkSource(copy)).join('\n');
    };
    const firstTimeseries = (d: { panels: PanelJson[] }): PanelJson =>
      [...allPanels(d.panels)].find((p) => p.type === 'timeseries')!;
    assert.match(
      broken((d) => delete d.schemaVersion),
      /schemaVersion/,
    );
    assert.match(
      broken((d) => (d.grapTooltip = 1)),
      /grapTooltip/,
    );
    assert.match(
      broken((d) => {
        const p = firstTimeseries(d);
        p.options = { ...(p.options as object), legend: { displayMode: 'bullets' } };
      }),
      /"bullets"/,
    );
    assert.match(
      broken((d) => {
        const p = firstTimeseries(d);
        p.fieldConfig = { defaults: { custom: { lineWdth: 2 } } };
      }),
      /lineWdth/,
    );
  });
});
