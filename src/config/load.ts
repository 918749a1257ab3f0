// The one config loader: YAML (or JSON) file → validated spec, or a SpecError naming every bad field. The file
// and the YAML are bounded (spec-file.ts, spec-yaml.ts) before the schema sees a value.
import { YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { formatIssues } from './errors.js';
import { readSpecFile, SpecFileRefused } from './spec-file.js';
import { parseSpecYaml, YamlRefused } from './spec-yaml.js';

export class SpecError extends Error {
  override name = 'SpecError';
}

export function parseSpec<S extends z.ZodType>(schema: S, value: unknown, source = 'spec'): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new SpecError(`${source} is invalid:\n${formatIssues(result.error)}`);
  return result.data;
}

export function loadSpecFile<S extends z.ZodType>(schema: S, file: string): z.infer<S> {
  let text: string;
  try {
    text = readSpecFile(file);
  } catch (err) {
    const why =
      err instanceof SpecFileRefused ? err.message : ((err as NodeJS.ErrnoException).code ?? String(err));
    throw new SpecError(`cannot read spec file ${file}: ${why}`);
  }
  return parseSpecText(schema, text, file);
}

/** YAML (or JSON) text → validated spec: what a file holds, or what `liftoff init` is about to write. */
export function parseSpecText<S extends z.ZodType>(schema: S, text: string, source: string): z.infer<S> {
  let value: unknown;
  try {
    value = parseSpecYaml(text);
  } catch (err) {
    if (err instanceof YamlRefused) {
      throw new SpecError(
        err.field === undefined
          ? `${source} is refused: ${err.message}`
          : `${source} is invalid:\n  ${err.field}: ${err.message}`,
      );
    }
    const detail = err instanceof YAMLParseError ? err.message : String(err);
    throw new SpecError(`${source} is not valid YAML: ${detail}`);
  }
  return parseSpec(schema, value, source);
}
