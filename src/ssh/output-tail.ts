// The captured output of one remote command, bounded: at most `maxBytes` of each stream are kept, the tail,
// since the end of an output is where a failure is told. A host that prints gigabytes costs the worker
// `maxBytes` of memory, not gigabytes.

/** The default cap per stream (1 MiB): far above what any command liftoff runs prints when it works. */
export const defaultMaxOutputBytes = 1024 * 1024;

export class OutputTail {
  private chunks: Buffer[] = [];
  private kept = 0;
  /** Bytes dropped from the front to stay within the cap. */
  cutBytes = 0;

  constructor(private readonly maxBytes: number) {
    if (!Number.isInteger(maxBytes) || maxBytes <= 0)
      throw new RangeError(`maxOutputBytes must be a positive integer, got ${maxBytes}`);
  }

  push(data: Buffer): void {
    this.chunks.push(data);
    this.kept += data.length;
    while (this.kept > this.maxBytes) {
      const first = this.chunks[0];
      if (!first) break;
      const excess = this.kept - this.maxBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.kept -= first.length;
        this.cutBytes += first.length;
      } else {
        // A copy, so the kept part does not pin the whole chunk it came from.
        this.chunks[0] = Buffer.from(first.subarray(excess));
        this.kept -= excess;
        this.cutBytes += excess;
      }
    }
  }

  /** The kept bytes, exactly as received. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.kept);
  }

  /**
   * The kept bytes as UTF-8 text. When the front was cut, the text starts with a line saying so, and the rest of
   * the line the cut fell in is dropped too: a fragment of a secret on it would no longer match the secret, and
   * so would escape the redaction every caller applies. When no line ends within the first 4 KiB (a line longer
   * than that), those 4 KiB are dropped instead: more than any credential, and nothing of a line that long is
   * read anyway. A character split there is dropped rather than shown as a replacement character.
   */
  text(): string {
    let bytes = this.bytes();
    if (this.cutBytes === 0) return bytes.toString('utf8');
    const newline = bytes.subarray(0, partialLineBytes).indexOf(0x0a);
    let skip = newline >= 0 ? newline + 1 : Math.min(partialLineBytes, bytes.length);
    const lineStart = skip;
    while (skip < bytes.length && skip - lineStart < 3 && ((bytes[skip] ?? 0) & 0xc0) === 0x80) skip++;
    bytes = bytes.subarray(skip);
    return `${cutNote(this.cutBytes + skip)}\n${bytes.toString('utf8')}`;
  }
}

/** How much of a cut line text() drops at most before it drops a fixed amount instead. */
export const partialLineBytes = 4096;

export function cutNote(bytes: number): string {
  return `[liftoff: output too long, its first ${bytes} bytes were cut]`;
}
