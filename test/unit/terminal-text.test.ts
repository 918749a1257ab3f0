// Host text on a terminal (issue 14, item 7): control characters are escaped by the one renderer, and the
// fix-it commands of host-key errors quote the known_hosts path, so pasting them runs what they say.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { emit, emitError, terminalSafe, terminalText } from '../../src/cli/render.js';
import { HostKeyMismatchError, HostKeyUnknownError } from '../../src/ssh/errors.js';

// OSC 52: set the clipboard to base64("rm -rf ~"), then a cursor move and a C1 CSI.
const osc52 = '\x1b]52;c;cm0gLXJmIH4=\x07';
const hostile = `vLLM said ${osc52}done\x1b[2Ahidden\x9b31m\rover\x00\x7f`;

function capture(stream: 'stdout' | 'stderr', fn: () => void): string {
  const target = process[stream];
  const original = target.write.bind(target);
  let out = '';
  target.write = (chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  };
  try {
    fn();
  } finally {
    target.write = original;
  }
  return out;
}

// eslint-disable-next-line no-control-regex
const anyControl = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('control characters from hosts never reach the terminal raw', () => {
  it('terminalText escapes C0, DEL and C1 but keeps newline and tab', () => {
    const text = terminalText(`${hostile}\n\tnext`);
    assert.doesNotMatch(text, anyControl);
    assert.equal(
      text,
      'vLLM said \\x1b]52;c;cm0gLXJmIH4=\\x07done\\x1b[2Ahidden\\x9b31m\\x0dover\\x00\\x7f\n\tnext',
    );
  });

  it('terminalText escapes bidi controls and zero-width characters, and leaves other text alone', () => {
    // "vllm_node" that reads as one thing and is another: an override that reverses what follows, and a ZWSP.
    const bidi = 'rank 0 \u202eedon\u202c ok \u2066x\u2069 \u200e\u200f\u061c\u202a\u202b\u202d\u2067\u2068';
    const zeroWidth = 'vllm\u200b_node\u200c\u200d\u2060\ufeff';
    assert.equal(
      terminalText(bidi),
      'rank 0 \\u202eedon\\u202c ok \\u2066x\\u2069 \\u200e\\u200f\\u061c\\u202a\\u202b\\u202d\\u2067\\u2068',
    );
    assert.equal(terminalText(zeroWidth), 'vllm\\u200b_node\\u200c\\u200d\\u2060\\ufeff');
    assert.doesNotMatch(
      terminalText(bidi + zeroWidth),
      /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff]/,
    );
    assert.equal(terminalText('GPU «H200» — 80 GB, 名前 ✓'), 'GPU «H200» — 80 GB, 名前 ✓');
    const out = capture('stdout', () => emit({}, { name: zeroWidth }, (r) => r.name));
    assert.equal(out, 'vllm\\u200b_node\\u200c\\u200d\\u2060\\ufeff\n');
  });

  it('terminalSafe escapes every string inside a result, and leaves other values alone', () => {
    const when = new Date(0);
    const safe = terminalSafe({ a: hostile, list: [hostile, 3, null], nested: { b: hostile }, when });
    assert.doesNotMatch(JSON.stringify([safe.a, safe.list[0], safe.nested.b]), /\\u001b|\\u009b/);
    assert.equal(safe.list[1], 3);
    assert.equal(safe.when, when);
  });

  it('emit hands the text form an escaped result; colours added by the text form stay', () => {
    const out = capture('stdout', () => emit({}, { line: hostile }, (r) => `\x1b[31m!\x1b[39m ${r.line}`));
    assert.ok(out.startsWith('\x1b[31m!\x1b[39m vLLM said \\x1b]52'), JSON.stringify(out));
    assert.doesNotMatch(out.slice('\x1b[31m!\x1b[39m'.length), anyControl);
  });

  it('emit --json keeps the exact text (JSON escapes it) and emitError escapes the message', () => {
    const json = capture('stdout', () => emit({ json: true }, { line: hostile }, () => ''));
    assert.equal((JSON.parse(json) as { line: string }).line, hostile);
    const err = capture('stderr', () => emitError({}, new Error(hostile), 1));
    assert.ok(!err.includes(osc52));
    assert.match(err, /vLLM said \\x1b\]52;c;/);
  });
});

describe('host-key advice quotes the known_hosts path', () => {
  const endpoint = { host: 'spark1', address: '10.0.0.1', port: 2222, user: 'aurora' };
  const path = '/home/a b/known_hosts; touch /tmp/pwned';

  it('HostKeyUnknownError: the ssh-keyscan line appends to the quoted path', () => {
    const err = new HostKeyUnknownError(endpoint, 'ssh-ed25519', 'SHA256:x', path);
    assert.ok(
      err.message.includes(`ssh-keyscan -p 2222 10.0.0.1 >> '/home/a b/known_hosts; touch /tmp/pwned'`),
      err.message,
    );
  });

  it('HostKeyMismatchError: ssh-keygen -R gets the quoted name and path', () => {
    const err = new HostKeyMismatchError(endpoint, {
      keyType: 'ssh-ed25519',
      gotFingerprint: 'SHA256:x',
      expectedFingerprints: ['ssh-ed25519 SHA256:y'],
      knownHostsPath: path,
    });
    assert.ok(
      err.message.includes(`ssh-keygen -R '[10.0.0.1]:2222' -f '/home/a b/known_hosts; touch /tmp/pwned'`),
      err.message,
    );
  });
});
