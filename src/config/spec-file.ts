// Reads a spec file (`-c FILE`) with bounds: a regular file only, so a FIFO, a device, a directory or a socket
// is refused at once instead of blocking or streaming for ever; at most maxSpecFileBytes; UTF-8 without control
// characters (YAML allows none; a NUL would be cut or kept by whatever reads the value next).
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { where } from './spec-yaml.js';

/**
 * The largest spec file: the reference spec is 1.2 KiB, one with 256 hosts about 40 KiB. (What the YAML in it
 * may cost is bounded apart, in spec-yaml.ts.)
 */
const maxSpecFileBytes = 1024 * 1024;

export class SpecFileRefused extends Error {
  override name = 'SpecFileRefused';
}

function kindOf(stats: Stats): string | undefined {
  if (stats.isFile()) return undefined;
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

function refuseUnlessRegular(stats: Stats): void {
  const kind = kindOf(stats);
  if (kind !== undefined)
    throw new SpecFileRefused(
      `it is ${kind}, not a regular file; liftoff reads a spec only from a regular file (a pipe or device could block or never end): write the spec to a file and pass that`,
    );
}

function refuseTooBig(bytes: number): void {
  if (bytes > maxSpecFileBytes)
    throw new SpecFileRefused(
      `it is larger than ${maxSpecFileBytes} bytes (1 MiB), the most a spec may be; a spec of 256 hosts is about 40 KiB`,
    );
}

/** The file's text; SpecFileRefused for what is not a spec, or the system's error when it cannot be read. */
export function readSpecFile(file: string): string {
  // Checked before the open too: opening a FIFO for reading waits for a writer unless O_NONBLOCK is given.
  refuseUnlessRegular(statSync(file));
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    // Again on what was opened: the path may have been replaced in between.
    const stats = fstatSync(fd);
    refuseUnlessRegular(stats);
    refuseTooBig(stats.size);
    // One byte more than the cap, so a file that grew since the fstat is still caught.
    const buffer = Buffer.alloc(Math.min(stats.size, maxSpecFileBytes) + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n)
      n = readSync(fd, buffer, length, buffer.length - length, null);
    refuseTooBig(length);
    return decodeSpecText(buffer.subarray(0, length));
  } finally {
    closeSync(fd);
  }
}

/** Strict UTF-8 with no control character but tab, line feed and carriage return. */
function decodeSpecText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new SpecFileRefused('it is not UTF-8 text; save the spec as UTF-8');
  }
  // eslint-disable-next-line no-control-regex -- the control characters are what this looks for
  const control = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.exec(text);
  if (control) {
    const code = control[0].charCodeAt(0).toString(16).padStart(4, '0');
    throw new SpecFileRefused(
      `it holds the control character U+${code} at ${where(text, control.index)}, which YAML does not allow in a file; remove it (a double-quoted string can write one as an escape, e.g. "\\t")`,
    );
  }
  return text;
}
