// Simulated systemctl (systemd 255). A unit is units/<name>.service.json (units/<name>.json is accepted too);
// a started unit runs its execStart in a new process group whose processes carry the unit's invocation id,
// the way systemd's cgroup holds even processes that left the group.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostDir, paths, readJson, writeJson } from '../host-state.js';
import { FlagError, parseFlags, type ParsedFlags } from './docker/args.js';
import { groupAlive, killAll, membersOf, signalPids, unitTagVar, waitNoMembers } from './docker/procs.js';
import type { ToolMain } from './tool.js';
import { toolIo } from './io.js';

export interface UnitState {
  active: boolean;
  enabled: boolean;
  /** A shell command, run as `sh -c`. A unit without one is only a state (active/inactive). */
  execStart?: string;
  /**
   * The argv systemd shows as the unit's ExecStart (`systemctl show -p ExecStart`): the reference site's command
   * line. The sim runs execStart in its place, so the containers seeded beside the units stay the ones tests count.
   * Without it, ExecStart shows execStart run by /bin/sh -c.
   */
  commandLine?: string[];
  description?: string;
  pgid?: number;
  invocationId?: string;
  activeSince?: string;
  inactiveSince?: string;
}

const stopTimeoutMs = 2000;
const unitSuffixes = [
  'service',
  'socket',
  'target',
  'timer',
  'mount',
  'path',
  'slice',
  'scope',
  'device',
  'swap',
];

function unitName(arg: string): string {
  const dot = arg.lastIndexOf('.');
  return dot > 0 && unitSuffixes.includes(arg.slice(dot + 1)) ? arg : `${arg}.service`;
}

interface Unit {
  name: string;
  file: string;
  state: UnitState;
}

function loadUnit(dir: string, name: string): Unit | undefined {
  const candidates = [`${name}.json`];
  if (name.endsWith('.service')) candidates.push(`${name.slice(0, -'.service'.length)}.json`);
  for (const c of candidates) {
    const file = join(paths.units(dir), c);
    const state = existsSync(file) ? readJson<UnitState>(file) : undefined;
    if (state) return { name, file, state };
  }
  return undefined;
}

function save(unit: Unit): void {
  writeJson(unit.file, unit.state);
}

const logFile = (unit: Unit) => unit.file.replace(/\.json$/, '.log');
const exitFile = (unit: Unit) => unit.file.replace(/\.json$/, '.exit');

function scope(unit: Unit) {
  return { pgid: unit.state.pgid, tagVar: unitTagVar, tagValue: unit.state.invocationId ?? '-' };
}

function hasLiveProcesses(unit: Unit): boolean {
  if (unit.state.pgid === undefined && unit.state.invocationId === undefined) return false;
  return (unit.state.pgid !== undefined && groupAlive(unit.state.pgid)) || membersOf(scope(unit)).length > 0;
}

type ActiveState = 'active' | 'inactive' | 'failed';

/** What systemd would say now: a unit whose processes all died on their own is no longer active. */
function activeState(unit: Unit): ActiveState {
  if (!unit.state.active) return 'inactive';
  if (unit.state.execStart === undefined || hasLiveProcesses(unit)) return 'active';
  let code = '';
  try {
    code = readFileSync(exitFile(unit), 'utf8').trim();
  } catch {
    // Killed from outside: no exit status was written.
  }
  return code === '' || code === '0' ? 'inactive' : 'failed';
}

function subState(unit: Unit, state: ActiveState): string {
  if (state === 'failed') return 'failed';
  if (state === 'inactive') return 'dead';
  return unit.state.execStart === undefined ? 'exited' : 'running';
}

/** A unit name glob (`vllm*`) as an anchored regex: `*` any run of characters, everything else literal. */
function globPattern(glob: string): RegExp {
  const literal = (part: string) => part.replace(/[.+?^${}()|[\]\\]/g, (c) => `\\${c}`);
  return new RegExp(`^${glob.split('*').map(literal).join('.*')}$`);
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function startUnit(unit: Unit): void {
  if (activeState(unit) === 'active') return;
  const { execStart } = unit.state;
  unit.state.active = true;
  unit.state.activeSince = new Date().toISOString();
  delete unit.state.pgid;
  delete unit.state.invocationId;
  if (execStart !== undefined) {
    rmSync(exitFile(unit), { force: true });
    const invocationId = randomBytes(16).toString('hex');
    const fd = openSync(logFile(unit), 'a');
    // The wrapper records the exit status so is-active can tell "failed" from "inactive"; the subshell
    // keeps an `exit` in execStart from skipping the record.
    const child = spawn('sh', ['-c', `(\n${execStart}\n)\necho $? > ${shellQuote(exitFile(unit))}`], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { ...toolIo().env, [unitTagVar]: invocationId },
      cwd: '/',
    });
    closeSync(fd);
    child.unref();
    unit.state.pgid = child.pid;
    unit.state.invocationId = invocationId;
  }
  save(unit);
}

async function stopUnit(unit: Unit): Promise<void> {
  if (unit.state.pgid !== undefined || unit.state.invocationId !== undefined) {
    const s = scope(unit);
    if (s.pgid !== undefined) {
      try {
        process.kill(-s.pgid, 'SIGTERM');
      } catch {
        // Group already gone.
      }
    }
    signalPids(membersOf(s), 'SIGTERM');
    if (!(await waitNoMembers(s, stopTimeoutMs))) await killAll(s);
  }
  unit.state.active = false;
  unit.state.inactiveSince = new Date().toISOString();
  delete unit.state.pgid;
  save(unit);
}

const unitFilePath = (name: string) => `/etc/systemd/system/${name}`;
const wantsPath = (name: string) => `/etc/systemd/system/multi-user.target.wants/${name}`;

// ---------------------------------------------------------------------------------------------- status

function systemdTime(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  return `${days[d.getUTCDay()]} ${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function ago(iso: string | undefined): string {
  if (!iso) return '';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}min ${s % 60}s ago`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}min ago`;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .join(' ')
      .replace(/\s+/g, ' ');
  } catch {
    return '';
  }
}

function renderStatus(unit: Unit): string {
  const state = activeState(unit);
  const dot = state === 'active' ? '●' : state === 'failed' ? '×' : '○';
  const enabled = unit.state.enabled ? 'enabled' : 'disabled';
  const lines = [
    `${dot} ${unit.name} - ${unit.state.description ?? unit.name}`,
    `     Loaded: loaded (${unitFilePath(unit.name)}; ${enabled}; preset: enabled)`,
  ];
  if (state === 'active') {
    const since = unit.state.activeSince;
    lines.push(`     Active: active (${subState(unit, state)}) since ${systemdTime(since)}; ${ago(since)}`);
    const members = membersOf(scope(unit)).sort((a, b) => a - b);
    if (unit.state.pgid !== undefined) lines.push(`   Main PID: ${unit.state.pgid} (sh)`);
    if (members.length) {
      lines.push(`      Tasks: ${members.length} (limit: 154216)`, `     CGroup: /system.slice/${unit.name}`);
      members.forEach((pid, i) =>
        lines.push(`             ${i === members.length - 1 ? '└─' : '├─'}${pid} ${cmdline(pid)}`),
      );
    }
  } else {
    const since = unit.state.inactiveSince;
    const label = state === 'failed' ? 'failed (Result: exit-code)' : 'inactive (dead)';
    lines.push(`     Active: ${label}${since ? ` since ${systemdTime(since)}; ${ago(since)}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

const showOrder = [
  'Id',
  'Names',
  'Description',
  'LoadState',
  'ActiveState',
  'SubState',
  'FragmentPath',
  'UnitFileState',
  'UnitFilePreset',
  'MainPID',
  'ExecMainPID',
  'InvocationID',
  'ExecStart',
];

/** ExecStart as systemd 255 prints it: `{ path=… ; argv[]=… ; … }`, argv joined by spaces without quoting. */
function execStartProperty(unit: Unit, state: ActiveState): string {
  const argv =
    unit.state.commandLine ??
    (unit.state.execStart !== undefined ? ['/bin/sh', '-c', unit.state.execStart] : undefined);
  if (argv === undefined) return '';
  const pid = state === 'active' ? (unit.state.pgid ?? 0) : 0;
  const started = state === 'active' ? systemdTime(unit.state.activeSince) : 'n/a';
  return `{ path=${argv[0] ?? ''} ; argv[]=${argv.join(' ')} ; ignore_errors=no ; start_time=[${started}] ; stop_time=[n/a] ; pid=${pid} ; code=(null) ; status=0/0 }`;
}

function showProperties(name: string, unit: Unit | undefined): Record<string, string> {
  if (!unit)
    return {
      Id: name,
      Names: name,
      Description: name,
      LoadState: 'not-found',
      ActiveState: 'inactive',
      SubState: 'dead',
      FragmentPath: '',
      UnitFileState: '',
      UnitFilePreset: '',
      MainPID: '0',
      ExecMainPID: '0',
      InvocationID: '',
      ExecStart: '',
    };
  const state = activeState(unit);
  const pid = state === 'active' && unit.state.pgid !== undefined ? String(unit.state.pgid) : '0';
  return {
    Id: name,
    Names: name,
    Description: unit.state.description ?? name,
    LoadState: 'loaded',
    ActiveState: state,
    SubState: subState(unit, state),
    FragmentPath: unitFilePath(name),
    UnitFileState: unit.state.enabled ? 'enabled' : 'disabled',
    UnitFilePreset: 'enabled',
    MainPID: pid,
    ExecMainPID: pid,
    InvocationID: state === 'active' ? (unit.state.invocationId ?? '') : '',
    ExecStart: execStartProperty(unit, state),
  };
}

// ---------------------------------------------------------------------------------------------- main

const flagSpecs = {
  property: { short: 'p', value: true },
  value: {},
  now: {},
  'no-pager': {},
  quiet: { short: 'q' },
  'no-block': {},
  'no-legend': {},
  plain: {},
  system: {},
  all: { short: 'a' },
  full: { short: 'l' },
  lines: { short: 'n', value: true },
  type: { short: 't', value: true },
  state: { value: true },
  force: { short: 'f' },
};

/** The verb of a command line (`is-active`, `start`…), or undefined when it names none or does not parse. */
export function systemctlVerb(args: string[]): string | undefined {
  try {
    return parseFlags(args, flagSpecs, true).positionals[0];
  } catch (e) {
    if (e instanceof FlagError) return undefined;
    throw e;
  }
}

async function run(verb: string, names: string[], f: ParsedFlags): Promise<number> {
  const dir = hostDir();
  const quiet = f.has('quiet');
  const say = (line: string) => {
    if (!quiet) toolIo().stdout(`${line}\n`);
  };
  const complain = (line: string) => toolIo().stderr(`${line}\n`);
  const needUnits = ['start', 'stop', 'restart', 'enable', 'disable', 'is-active', 'is-enabled'];
  if (needUnits.includes(verb) && names.length === 0) {
    complain('Too few arguments.');
    return 1;
  }
  let code = 0;
  switch (verb) {
    case 'start':
    case 'restart':
    case 'stop': {
      for (const name of names) {
        const unit = loadUnit(dir, name);
        if (!unit) {
          complain(
            `Failed to ${verb} ${name}: Unit ${name} ${verb === 'stop' ? 'not loaded' : 'not found'}.`,
          );
          code = 5;
          continue;
        }
        if (verb !== 'start') await stopUnit(unit);
        if (verb !== 'stop') startUnit(unit);
      }
      return code;
    }
    case 'enable':
    case 'disable': {
      for (const name of names) {
        const unit = loadUnit(dir, name);
        if (!unit) {
          complain(`Failed to ${verb} unit: Unit file ${name} does not exist.`);
          code = 1;
          continue;
        }
        const want = verb === 'enable';
        if (unit.state.enabled !== want) {
          unit.state.enabled = want;
          save(unit);
          complain(
            want
              ? `Created symlink ${wantsPath(name)} → ${unitFilePath(name)}.`
              : `Removed "${wantsPath(name)}".`,
          );
        }
        if (f.has('now')) {
          if (want) startUnit(unit);
          else await stopUnit(unit);
        }
      }
      return code;
    }
    case 'is-active': {
      let anyActive = false;
      let allUnknown = true;
      for (const name of names) {
        const unit = loadUnit(dir, name);
        const state = unit ? activeState(unit) : 'inactive';
        if (unit) allUnknown = false;
        if (state === 'active') anyActive = true;
        say(state);
      }
      return anyActive ? 0 : allUnknown ? 4 : 3;
    }
    case 'is-enabled': {
      let anyEnabled = false;
      let found = 0;
      for (const name of names) {
        const unit = loadUnit(dir, name);
        if (!unit) {
          complain(`Failed to get unit file state for ${name}: No such file or directory`);
          continue;
        }
        found++;
        if (unit.state.enabled) anyEnabled = true;
        say(unit.state.enabled ? 'enabled' : 'disabled');
      }
      return anyEnabled ? 0 : found === 0 ? 4 : 1;
    }
    case 'status': {
      let worst = 0;
      const blocks: string[] = [];
      for (const name of names) {
        const unit = loadUnit(dir, name);
        if (!unit) {
          complain(`Unit ${name} could not be found.`);
          worst = Math.max(worst, 4);
          continue;
        }
        if (activeState(unit) !== 'active') worst = Math.max(worst, 3);
        blocks.push(renderStatus(unit));
      }
      if (!quiet) toolIo().stdout(blocks.join('\n'));
      return worst;
    }
    case 'show': {
      const wanted = f
        .all('property')
        .flatMap((p) => p.split(','))
        .filter(Boolean);
      const blocks = names.map((name) => {
        const props = showProperties(name, loadUnit(dir, name));
        return showOrder
          .filter((k) => wanted.length === 0 || wanted.includes(k))
          .map((k) => (f.has('value') ? `${props[k] ?? ''}\n` : `${k}=${props[k] ?? ''}\n`))
          .join('');
      });
      toolIo().stdout(blocks.join('\n'));
      return 0;
    }
    case 'list-units': {
      // `--no-legend --plain` rows: UNIT LOAD ACTIVE SUB DESCRIPTION; names are glob patterns, as systemd's.
      const patterns = names.map(globPattern);
      const wantedState = f.get('state');
      const files = existsSync(paths.units(dir)) ? readdirSync(paths.units(dir)) : [];
      for (const file of files.filter((x) => x.endsWith('.json')).sort()) {
        const unit = loadUnit(dir, unitName(file.slice(0, -'.json'.length)));
        if (!unit) continue;
        const state = activeState(unit);
        const sub = subState(unit, state);
        if (patterns.length > 0 && !patterns.some((re) => re.test(unit.name))) continue;
        if (wantedState !== undefined && wantedState !== state && wantedState !== sub) continue;
        if (state === 'inactive' && !f.has('all') && wantedState === undefined) continue;
        say(`${unit.name} loaded ${state} ${sub} ${unit.state.description ?? unit.name}`);
      }
      return 0;
    }
    case 'daemon-reload':
    case 'reset-failed':
      return 0;
    default:
      complain(`Unknown command verb '${verb}'.`);
      return 1;
  }
}

export const main: ToolMain = async (args) => {
  let f: ParsedFlags;
  try {
    f = parseFlags(args, flagSpecs, true);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    const message =
      e.kind === 'unknown'
        ? e.cluster
          ? `invalid option -- '${e.flag}'`
          : `unrecognized option '${e.flag}'`
        : e.cluster
          ? `option requires an argument -- '${e.flag}'`
          : `option '${e.flag}' requires an argument`;
    toolIo().stderr(`systemctl: ${message}\n`);
    return 1;
  }
  const [verb, ...rest] = f.positionals;
  if (!verb) {
    toolIo().stderr('systemctl: listing units is not simulated; name a verb.\n');
    return 1;
  }
  return run(verb, rest.map(unitName), f);
};
