// A file a command writes where the user said (`liftoff init -o`): never through a symbolic link. The text goes
// to a temporary file in the same folder (created exclusively, so a link there is not followed either), which
// then takes the target's name: a rename replaces a link at the target and never writes where it points, and
// without replace a hard link puts it there only if nothing holds the name, in one step.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  linkSync,
  lstatSync,
  openSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import type { Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** What holds the name itself, not what a link there points to; undefined when nothing does. */
function entryAt(path: string): Stats | undefined {
  return lstatSync(path, { throwIfNoEntry: false });
}

/** True when anything holds the name: a file, a folder, or a link, dangling or not. */
export function outputTaken(path: string): boolean {
  return entryAt(path) !== undefined;
}

export class OutputExistsError extends Error {
  constructor(readonly path: string) {
    super(`${path} exists`);
    this.name = 'OutputExistsError';
  }
}

/**
 * Writes `text` to `path` by a rename over it (`replace`) or a hard link (not `replace`: OutputExistsError when
 * the name is taken). The file gets the mode a new file gets (0666 less the umask), or the mode of the regular
 * file it replaces; a link at `path` is replaced, and what it points to is left as it was.
 */
export function writeOutputFile(path: string, text: string, options: { replace: boolean }): void {
  const existing = entryAt(path);
  if (existing && !options.replace) throw new OutputExistsError(path);
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o666);
  // After a rename the temporary name is gone; after a link (or a failure) it is removed here.
  let tempGone = false;
  try {
    try {
      if (existing?.isFile()) fchmodSync(fd, existing.mode & 0o777);
      writeFileSync(fd, text);
    } finally {
      closeSync(fd);
    }
    if (options.replace) {
      renameSync(temp, path);
      tempGone = true;
    } else {
      try {
        linkSync(temp, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new OutputExistsError(path);
        throw err;
      }
    }
  } finally {
    if (!tempGone) unlinkSync(temp);
  }
}
