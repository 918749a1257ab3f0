// Cutting host output to size for messages: the end of a stream is where the error is. Pure (TextEncoder, not
// Buffer): the secrets module, which workflows import through the schema, builds on it.

const tailBytes = 4096;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The last ~4 KB of a stream, cut on a character boundary, marked when cut. */
export function tail(text: string, maxBytes = tailBytes): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let cut = decoder.decode(bytes.subarray(bytes.length - maxBytes));
  if (cut.startsWith('\uFFFD')) cut = cut.slice(1);
  return `[… ${bytes.length - maxBytes} earlier bytes cut]\n${cut}`;
}

/**
 * A tool's words ended as one sentence, for a message that goes on after them: Docker 20.10 ends its errors with a
 * period and 28.x does not, so a period appended blindly shows "..".
 */
export function sentence(text: string): string {
  const trimmed = text.trimEnd();
  return trimmed === '' || /[.!?…]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/** A tool's words without their closing period, for a message that puts them mid-sentence or adds its own. */
export function clause(text: string): string {
  let end = text.trimEnd().length;
  while (end > 0 && text[end - 1] === '.') end--;
  return text.slice(0, end).trimEnd();
}
