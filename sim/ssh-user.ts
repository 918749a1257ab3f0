// A simulated cluster's SSH user when it is not the machine's current user (cluster option sshUser): an ordinary
// system user of this machine, in the `docker` group as at the reference site, that owns what a session writes on
// each host (the host folder with its home, state and command logs). Root still starts sshd and dockerd, and a
// container's main process still belongs to root, as on a real host: so a deploy meets the ownership a real
// non-root login meets.
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  lstatSync,
  readFileSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { paths } from './host-state.js';
import { run } from './processes.js';
import { sshdPaths } from './sshd.js';

/** The group whose members may use a host's Docker socket (dockerd --group). */
export const dockerGroup = 'docker';

export interface SshUserIds {
  uid: number;
  gid: number;
}

/** A user name useradd takes and a shell word needs no quoting for. */
export function sshUserProblem(name: string): string | undefined {
  return /^[a-z_][a-z0-9_-]{0,31}$/.test(name)
    ? undefined
    : `sshUser must be a user name (lower case letters, digits, _ and -; at most 32), got ${JSON.stringify(name)}`;
}

async function ids(name: string): Promise<SshUserIds | undefined> {
  const [u, g] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
  if (u.code !== 0 || g.code !== 0) return undefined;
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

async function mustRun(cmd: string, args: string[]): Promise<void> {
  const res = await run(cmd, args);
  if (res.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${res.stderr.trim()}`);
}

/**
 * Makes the user (and the docker group) on this machine if missing, and puts it in the docker group. Its home is
 * /home/NAME, which in netns mode is each host's own home folder (sshd binds the host's home over /home).
 */
export async function ensureSshUser(name: string): Promise<SshUserIds> {
  const problem = sshUserProblem(name);
  if (problem) throw new Error(problem);
  if (process.getuid?.() !== 0)
    throw new Error('sshUser needs root (useradd, and sshd logging in another user)');
  if (!existsSync('/usr/bin/sudo'))
    throw new Error('sshUser needs sudo (its units stop through `sudo -n`): run `bash scripts/setup.sh`');
  if ((await run('getent', ['group', dockerGroup])).code !== 0)
    await mustRun('groupadd', ['--system', dockerGroup]);
  if (!(await ids(name)))
    await mustRun('useradd', [
      '--system',
      '--no-create-home',
      '--home-dir',
      `/home/${name}`,
      '--shell',
      '/bin/sh',
      '--user-group',
      name,
    ]);
  // useradd leaves the account locked ('!' for a password), which sshd refuses without PAM; '*' is no password
  // but not locked: the key is the only way in.
  await mustRun('usermod', ['--append', '--groups', dockerGroup, '--password', '*', name]);
  const found = await ids(name);
  if (!found) throw new Error(`useradd made no user ${name}`);
  return found;
}

/** The sudoers drop-in of a cluster's SSH user (one per state dir: `.` is not allowed in its name). */
export const sudoersFile = (stateDir: string): string =>
  `/etc/sudoers.d/liftoff-sim-${createHash('sha256').update(stateDir).digest('hex').slice(0, 16)}`;

/**
 * Lets the user stop and disable units through `sudo -n`, as liftoff's suggested rule does at a site (its systemctl
 * is the cluster's simulated one, found on the session's PATH, and reads the host from LIFTOFF_SIM_HOST_DIR), and
 * nothing else. Checked with visudo before it is put in place: a broken drop-in breaks every sudo on the machine.
 */
export async function allowUnitStops(name: string, stateDir: string, binDir: string): Promise<void> {
  if (/[\s,:=\\*?[\]!"'#]/.test(binDir))
    throw new Error(`cannot name ${binDir} in a sudoers rule: keep the state dir's path plain`);
  const systemctl = join(binDir, 'systemctl');
  const text = [
    `# Written by the simulated cluster in ${stateDir} (sim/ssh-user.ts); \`npm run sim -- down\` leaves it.`,
    `Defaults:${name} !secure_path, env_keep += "LIFTOFF_SIM_HOST_DIR"`,
    `${name} ALL=(root) NOPASSWD: ${systemctl} stop -- *, ${systemctl} disable -- *`,
    '',
  ].join('\n');
  const file = sudoersFile(stateDir);
  const tmp = `${file}.new`.replace('/sudoers.d/', '/');
  writeFileSync(tmp, text, { mode: 0o440 });
  try {
    await mustRun('visudo', ['-cq', '-f', tmp]);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Gives the host an /etc/hosts that names it (sshdPaths.etcHosts): the machine's own, and the host's name. */
export function writeHostEtcHosts(hostDir: string, hostName: string): void {
  let machine = '';
  try {
    machine = readFileSync('/etc/hosts', 'utf8');
  } catch {
    machine = '127.0.0.1\tlocalhost\n';
  }
  mkdirSync(sshdPaths.dir(hostDir), { recursive: true });
  writeFileSync(
    sshdPaths.etcHosts(hostDir),
    `${machine.endsWith('\n') || machine === '' ? machine : `${machine}\n`}127.0.1.1\t${hostName}\n`,
  );
}

/** chown -R without following symbolic links; `skip` (absolute paths) and what is under them are left alone. */
function chownTree(path: string, owner: SshUserIds, skip: ReadonlySet<string>): void {
  if (skip.has(path)) return;
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  chownSync(path, owner.uid, owner.gid);
  if (st.isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e), owner, skip);
}

/**
 * Hands a host's folder to the SSH user: its home (made if missing), its state, its logs. The sshd folder (host
 * key, config, pid) stays root's, as /etc/ssh does, and so does the tool server's (its socket takes root's calls
 * only: the user's run as the user's own processes). Files root makes later (a container's tools write the host's
 * state as root) sit in folders the user owns, so the user can still replace or remove them.
 */
export function handHostToSshUser(hostDir: string, name: string, owner: SshUserIds): void {
  mkdirSync(join(hostDir, 'home', name), { recursive: true });
  chownTree(hostDir, owner, new Set([sshdPaths.dir(hostDir), paths.toolServer(hostDir)]));
}
