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
