// What changed between two revisions, field by field: the spec's fields (as dotted paths), and what the hosts said
// about themselves outside the spec (image ID under the same tag, kernel, driver, weights, versions in the image),
// the rendered argv and the env names. Pure: `liftoff revisions --diff` and the postmortem both print it.
import type { HostIdentity, Revision } from './revisions.js';

export interface FieldChange {
  field: string;
  from: string;
  to: string;
  /** True for what the spec does not say: a rebuilt image under the same tag, a kernel update. */
  outsideSpec: boolean;
}

const absent = '(none)';

export function diffRevisions(a: Revision, b: Revision): FieldChange[] {
  const changes: FieldChange[] = [];
  const add = (
    field: string,
    from: string | undefined,
    to: string | undefined,
    outsideSpec: boolean,
  ): void => {
    if ((from ?? absent) !== (to ?? absent))
      changes.push({ field, from: from ?? absent, to: to ?? absent, outsideSpec });
  };
  changes.push(...diffSpecs(a.spec, b.spec));
  add('argv', a.argv.join(' '), b.argv.join(' '), false);
  add('envNames', a.envNames.join(' '), b.envNames.join(' '), false);
  const hosts = [...new Set([...a.hosts, ...b.hosts].map((h) => h.host))];
  for (const host of hosts) {
    const ha = a.hosts.find((h) => h.host === host);
    const hb = b.hosts.find((h) => h.host === host);
    for (const [name, of] of identityFields) add(`${host}.${name}`, ha && of(ha), hb && of(hb), true);
  }
  return changes;
}

/**
 * Two specs field by field (`spec.` and the dotted path): what a history alone can compare, without the host
 * identities, argv and env names only the cluster's recorded revisions hold.
 */
export function diffSpecs(a: unknown, b: unknown): FieldChange[] {
  const specA = flatten(a);
  const specB = flatten(b);
  const changes: FieldChange[] = [];
  for (const key of [...new Set([...specA.keys(), ...specB.keys()])].sort()) {
    const from = specA.get(key) ?? absent;
    const to = specB.get(key) ?? absent;
    if (from !== to) changes.push({ field: `spec.${key}`, from, to, outsideSpec: false });
  }
  return changes;
}

const identityFields: [string, (h: HostIdentity) => string | undefined][] = [
  ['imageId', (h) => h.imageId],
  ['kernel', (h) => h.kernel],
  ['driver', (h) => h.driver],
  ['weights.snapshot', (h) => h.weights?.snapshot],
  ['weights.indexSha256', (h) => h.weights?.indexSha256],
  ['python', (h) => h.versions?.python],
  ['ray', (h) => h.versions?.ray],
  ['vllm', (h) => h.versions?.vllm],
];

/** Plain JSON data as dotted paths to its leaves (arrays by index), each leaf as JSON text. */
function flatten(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (typeof value === 'object' && value !== null) {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 && prefix) out.set(prefix, Array.isArray(value) ? '[]' : '{}');
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) out.set(prefix, typeof value === 'string' ? value : JSON.stringify(value));
  return out;
}
