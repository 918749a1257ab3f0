// Command-line parsing shared by the simulated `ray` and `vllm`: `--flag value`, `--flag=value`, booleans,
// and options that take several values (vLLM's nargs='+'). Click (`ray`) stops at the first unknown option;
// argparse (`vllm`) collects every unknown option and surplus positional, in order, and refuses them all at once.

export interface FlagSpec {
  /** Options that take one value, by long name without dashes. */
  values: string[];
  /** Options that take no value. */
  booleans: string[];
  /** Options that take one or more values (up to the next option). */
  lists?: string[];
  /** Short aliases: `-tp` → `tensor-parallel-size`. */
  aliases?: Record<string, string>;
  /**
   * argparse's way: an option not listed, and a positional past `positionals`, goes to `unrecognized` (as
   * parse_known_args returns them) for the caller to refuse, instead of throwing at the first one.
   */
  collectUnrecognized?: { positionals: number };
}

export interface ParsedArgs {
  values: Map<string, string>;
  lists: Map<string, string[]>;
  booleans: Set<string>;
  positionals: string[];
  /** With collectUnrecognized: the unknown options and surplus positionals, as given and in order. */
  unrecognized: string[];
}

export class UsageError extends Error {}

export function parseFlags(args: string[], spec: FlagSpec): ParsedArgs {
  const parsed: ParsedArgs = {
    values: new Map(),
    lists: new Map(),
    booleans: new Set(),
    positionals: [],
    unrecognized: [],
  };
  const collect = spec.collectUnrecognized;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (!arg.startsWith('-') || arg === '-') {
      if (collect && parsed.positionals.length >= collect.positionals) parsed.unrecognized.push(arg);
      else parsed.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const rawName = eq >= 0 ? arg.slice(0, eq) : arg;
    const inline = eq >= 0 ? arg.slice(eq + 1) : undefined;
    const name = spec.aliases?.[rawName] ?? rawName.replace(/^--?/, '');
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = args[i + 1];
      if (next === undefined) throw new UsageError(`Option '${rawName}' requires an argument.`);
      i += 1;
      return next;
    };
    if (spec.booleans.includes(name)) {
      parsed.booleans.add(name);
    } else if (spec.values.includes(name)) {
      parsed.values.set(name, takeValue());
    } else if (spec.lists?.includes(name)) {
      const items = inline !== undefined ? [inline] : [];
      while (inline === undefined && args[i + 1] !== undefined && !(args[i + 1] ?? '').startsWith('-')) {
        items.push(args[i + 1] ?? '');
        i += 1;
      }
      if (!items.length) throw new UsageError(`Option '${rawName}' requires an argument.`);
      parsed.lists.set(name, items);
    } else if (collect) {
      // argparse does not know whether an unknown option takes a value: a word after it is read as a positional.
      parsed.unrecognized.push(arg);
    } else {
      throw new UsageError(`No such option: ${rawName}`);
    }
  }
  return parsed;
}

export function numberOption(parsed: ParsedArgs, name: string): number | undefined {
  const text = parsed.values.get(name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n))
    throw new UsageError(`Invalid value for '--${name}': '${text}' is not a valid number.`);
  return n;
}
