// The command line of a service `liftoff init` found running: a unit's ExecStart as `systemctl show` prints it, or a
// container's as `docker inspect` does, read into words and, where it runs a container, into the container's image,
// command, mounts and GPU request. Host output is hostile: every text is cut before it is read, the word count is
// capped, and the readers are index scans and anchored regexes without nested repetition. Pure.
import { hostLines } from '../parsers/host-output.js';
import { maxItems } from '../config/limits.js';

/** A container a service runs: what a companion would run in its place. */
export interface ContainerRun {
  image: string;
  /** `--name` of a `docker run`; the container's own name for one inspected. */
  name?: string;
  /** What the container runs: its entrypoint, when known, then its arguments. */
  command: string[];
  /**
   * Whether `command` names its program: an --entrypoint, or arguments that start with a word, not a flag. When
   * false, the image's own entrypoint (which init does not read) would take the flags.
   */
  entrypointKnown: boolean;
  /** Bind mounts, HOST:CONTAINER[:ro|rw]. */
  volumes: string[];
  gpus: boolean;
  /** It was given environment variables (-e/--env/--env-file): not carried over, as they may hold a credential. */
  env: boolean;
}

export interface ReadCommandLine {
  /** What runs, as words: the unit's ExecStart (a shell's -c script split as the shell would) or the container's. */
  argv: string[];
  container?: ContainerRun;
}

/** Longest argv kept: a command line past it is not read (it is no service a spec could hold either). */
const maxWords = maxItems.args;
/** The longest text a command line is read from. */
const maxChars = 16_384;

const basename = (word: string): string => word.slice(word.lastIndexOf('/') + 1);

/**
 * Words of a POSIX shell text: blanks separate, '…' is literal, "…" and bare words take \ escapes; `$`, globs and
 * operators are kept as they are. undefined for an unterminated quote, or past the cap. One pass, linear.
 */
export function shellWords(text: string): string[] | undefined {
  if (text.length > maxChars) return undefined;
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1] ?? '')) {
        const next = text[++i] ?? '';
        if (next !== '\n') word += next;
      } else word += c;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < text.length) {
      const next = text[++i] ?? '';
      // A backslash-newline joins lines (a unit's continued ExecStart, a script's `\` at a line's end).
      if (next !== '\n') {
        word += next;
        inWord = true;
      }
    } else {
      word += c;
      inWord = true;
    }
    if (words.length > maxWords) return undefined;
  }
  if (quote !== undefined) return undefined;
  if (inWord) words.push(word);
  return words.length > maxWords ? undefined : words;
}

/**
 * The argv of a unit's first ExecStart, from `systemctl show -p ExecStart --value` (with or without the
 * `ExecStart=` of a run without --value): `{ path=/usr/bin/docker ; argv[]=/usr/bin/docker run … ; ignore_errors=no
 * ; … }`. systemd joins argv with spaces and no quoting, so the words are split at blanks; a shell's -c script is
 * split as that shell would. undefined when no line reads so.
 */
export function parseExecStart(text: string): string[] | undefined {
  for (const full of hostLines(text.slice(0, maxChars))) {
    const line = full.trim().replace(/^ExecStart=/, '');
    const argvAt = line.indexOf(' ; argv[]=');
    const argvEnd = line.indexOf(' ; ignore_errors=');
    if (!line.startsWith('{ path=') || argvAt < 0 || argvEnd <= argvAt) continue;
    const words = line
      .slice(argvAt + ' ; argv[]='.length, argvEnd)
      .split(/[ \t]+/)
      .filter(Boolean);
    if (words.length === 0 || words.length > maxWords) return undefined;
    return unwrapShell(words);
  }
  return undefined;
}

/** `sh -c 'SCRIPT'` (joined back by systemd) → the script's words; a leading `exec` and env assignments dropped. */
function unwrapShell(words: string[]): string[] | undefined {
  const [first, flag] = words;
  let argv: string[] | undefined = words;
  if (/^(?:ba|da)?sh$/.test(basename(first ?? '')) && flag === '-c') {
    argv = shellWords(words.slice(2).join(' '));
  }
  if (argv === undefined) return undefined;
  let start = 0;
  const skippable = (w: string) => w === 'exec' || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w);
  while (start < argv.length && skippable(argv[start] ?? '')) start++;
  if (basename(argv[start] ?? '') === 'env') {
    start++;
    while (start < argv.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[start] ?? '')) start++;
  }
  const rest = argv.slice(start);
  return rest.length > 0 ? rest : undefined;
}

// docker run's options that take no value (long, and short letters that may be grouped: -dit).
const runSwitches = new Set([
  '--detach',
  '--rm',
  '--interactive',
  '--tty',
  '--privileged',
  '--init',
  '--read-only',
  '--publish-all',
  '--no-healthcheck',
  '--oom-kill-disable',
  '--sig-proxy',
  '--quiet',
]);
const shortSwitches = /^-[ditPq]+$/;

/** The `docker run …` (or `docker container run …`, podman's alike) in an argv: options, image, command. */
export function parseDockerRun(argv: readonly string[]): ContainerRun | undefined {
  const tool = basename(argv[0] ?? '');
  if (tool !== 'docker' && tool !== 'podman') return undefined;
  let i = argv[1] === 'container' ? 2 : 1;
  if (argv[i] !== 'run') return undefined;
  i++;
  const run: Omit<ContainerRun, 'image' | 'command' | 'entrypointKnown'> & { entrypoint?: string } = {
    volumes: [],
    gpus: false,
    env: false,
  };
  for (; i < argv.length; i++) {
    const word = argv[i] ?? '';
    if (word === '--') {
      i++;
      break;
    }
    if (!word.startsWith('-') || word === '-') break;
    if (runSwitches.has(word) || shortSwitches.test(word)) continue;
    const eq = word.indexOf('=');
    const name = eq > 0 ? word.slice(0, eq) : word;
    let value: string | undefined;
    if (eq > 0) value = word.slice(eq + 1);
    else if (/^-[a-zA-Z]./.test(word)) {
      // -v/host:/ctr, -eX=1: a short option with its value attached.
      value = word.slice(2);
    } else value = argv[++i];
    if (value === undefined) return undefined;
    const short = /^-[a-zA-Z]/.test(name) && !name.startsWith('--') ? name.slice(0, 2) : name;
    if (short === '--name') run.name = value;
    else if (short === '--entrypoint') run.entrypoint = value;
    else if (short === '--gpus' || short === '--runtime') run.gpus = true;
    else if (short === '-v' || short === '--volume') run.volumes.push(value);
    else if (short === '-e' || short === '--env' || short === '--env-file') run.env = true;
  }
  const image = argv[i];
  if (image === undefined) return undefined;
  const args = argv.slice(i + 1);
  const entrypoint = run.entrypoint?.split(/[ \t]+/).filter(Boolean) ?? [];
  return {
    image,
    ...(run.name !== undefined ? { name: run.name } : {}),
    command: [...entrypoint, ...args],
    entrypointKnown: entrypoint.length > 0 || (args.length > 0 && !(args[0] ?? '').startsWith('-')),
    volumes: run.volumes,
    gpus: run.gpus,
    env: run.env,
  };
}

/** A unit's command line from its ExecStart, with the container it runs when that is a `docker run`. */
export function readUnitCommandLine(execStart: string): ReadCommandLine | undefined {
  const argv = parseExecStart(execStart);
  if (argv === undefined) return undefined;
  const container = parseDockerRun(argv);
  return { argv, ...(container ? { container } : {}) };
}

const stringList = (v: unknown): string[] | undefined =>
  v === null ? [] : Array.isArray(v) && v.every((x): x is string => typeof x === 'string') ? v : undefined;

/** A running container's command line from `docker inspect` with containerCommandLineFormat (one JSON a line). */
export function readContainerCommandLine(name: string, text: string): ReadCommandLine | undefined {
  if (text.length > maxChars) return undefined;
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length !== 5) return undefined;
  const values: unknown[] = [];
  for (const line of lines) {
    try {
      values.push(JSON.parse(line));
    } catch {
      return undefined;
    }
  }
  const [image, entrypoint, cmd, binds, devices] = values;
  const ep = stringList(entrypoint);
  const args = stringList(cmd);
  const volumes = stringList(binds);
  if (typeof image !== 'string' || !ep || !args || !volumes) return undefined;
  const argv = [...ep, ...args];
  if (argv.length === 0 || argv.length > maxWords || volumes.length > maxItems.volumes) return undefined;
  return {
    argv,
    container: {
      image,
      name,
      command: argv,
      entrypointKnown: true,
      volumes,
      gpus: Array.isArray(devices) && devices.length > 0,
      env: false,
    },
  };
}
