// Adversarial host output (issue 14, item 2): long lines, absurd numbers and huge counts are bounded before
// anything reads them. The patterns that used to take quadratic time are run on 10 MB lines; the figures are
// printed, and each test has a generous timeout, which the old patterns (37.6 s for 256 KB) blow through.
import { describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { cutLine, HostOutputError, maxHostLineChars } from '../../src/parsers/host-output.js';
import { parseVllmLogLine, summarizeVllmLog } from '../../src/parsers/vllm-log.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import { parseComputeApps, parseQueryGpu } from '../../src/parsers/nvidia-smi.js';
import { parseMeminfo } from '../../src/parsers/meminfo.js';
import { errorLine } from '../../src/activities/ray.js';
import { globMatches } from '../../src/ssh/known-hosts.js';
import { cutNote, OutputTail } from '../../src/ssh/output-tail.js';

const MB10 = 10 * 1024 * 1024;
const timeout = { timeout: 20_000 };
const deadlineMs = 20_000;

const srcUrl = (path: string) => new URL(`../../src/${path}`, import.meta.url).href;

/** Runs an ES module's source in a child Node (with tsx) and returns its stdout; fails past the deadline. */
function withinDeadline(source: string): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', source], {
    encoding: 'utf8',
    timeout: deadlineMs,
  });
  assert.equal(r.error, undefined, `did not finish within ${deadlineMs} ms (${String(r.error)})`);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

function timed<T>(label: string, fn: () => T): T {
  const started = performance.now();
  const result = fn();
  console.log(`${label}: ${(performance.now() - started).toFixed(1)} ms`);
  return result;
}

const rayStatus = (nodes: string, usage: string) =>
  [
    '======== Autoscaler status: 2025-01-01 00:00:00 ========',
    'Node status',
    '---------------------------------------------------------------',
    'Active:',
    nodes,
    'Pending:',
    ' (no pending nodes)',
    'Recent failures:',
    ' (no failures)',
    '',
    'Resources',
    '---------------------------------------------------------------',
    'Usage:',
    usage,
    ' 0B/221.76GiB memory',
    '',
    'Demands:',
    ' (no resource demands)',
  ].join('\n');

describe('host lines are cut before any pattern runs', () => {
  it('cutLine keeps the head and says how much it cut', () => {
    assert.equal(cutLine('short'), 'short');
    const cut = cutLine('x'.repeat(maxHostLineChars + 10));
    assert.ok(cut.startsWith('x'.repeat(maxHostLineChars)));
    assert.match(cut, /\[10 characters cut\]$/);
  });

  it('a 10 MB vLLM log line is parsed in linear time and cut to a few KB', timeout, () => {
    const line = `INFO ${' '.repeat(MB10)}x`;
    const parsed = timed('10 MB line of blanks, parseVllmLogLine', () => parseVllmLogLine(line));
    assert.ok(parsed.text.length < maxHostLineChars + 100, `text cut to ${parsed.text.length} characters`);
  });

  it('the `repeated` pattern: a long blank run with no note, and the note itself', timeout, () => {
    // The old `\s*\[repeated …\]\s*$` retried from every blank of the run.
    const blanks = ' '.repeat(200_000);
    timed('200 KB of blanks before a broken repeat note', () =>
      parseVllmLogLine(`(RayWorkerWrapper pid=1) a${blanks}[repeated 3x across`),
    );
    assert.equal(
      parseVllmLogLine('(RayWorkerWrapper pid=7) Loading weights took 3.1 s [repeated 2x across cluster]')
        .text,
      'Loading weights took 3.1 s',
    );
  });

  it('the `Capturing CUDA graphs` pattern: long digit runs with no slash, and a real bar', timeout, () => {
    // The old `.*?(\d+)\/(\d+)\s*\[` retried every suffix of every digit run.
    const digits = '1'.repeat(maxHostLineChars);
    timed('4 KB digit run after the title', () => parseVllmLogLine(`Capturing CUDA graphs ${digits}`));
    timed('10 MB digit line after the title', () =>
      parseVllmLogLine(`Capturing CUDA graphs ${'1'.repeat(MB10)}`),
    );
    const bar = parseVllmLogLine(
      'Capturing CUDA graphs (mixed prompt-decode, PIECEWISE): 100%|██████████| 67/67 [00:05<00:00, 12.14it/s]',
    );
    assert.deepEqual(bar.graphs, { done: 67, total: 67 });
  });

  it('a tqdm line of 10 MB of carriage returns still yields its last segment', timeout, () => {
    const line = `Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01, 1.00s/it]${'\r'.repeat(MB10)}`;
    const parsed = timed('10 MB of \\r after a bar', () => parseVllmLogLine(line));
    assert.deepEqual(parsed.shard, { percent: 50, done: 1, total: 2 });
  });

  it('a fatal line after a 10 MB line is still seen', timeout, () => {
    const summary = timed('summarize a 10 MB line then a fatal line', () =>
      summarizeVllmLog([`INFO ${'a'.repeat(MB10)}`, 'torch.OutOfMemoryError: CUDA out of memory.']),
    );
    assert.equal(summary.fatal?.kind, 'cuda_oom');
  });

  it('the Ray error-line pattern runs in linear time on a 10 MB line', timeout, () => {
    // The old `[^\n]*\b(?:error|failed)\b[^\n]*` retried from every character of a line without the word.
    const log = `${'a'.repeat(MB10)}\nraylet exited: connection failed to the head\n`;
    const line = timed('errorLine over a 10 MB line', () => errorLine(log));
    assert.equal(line, 'raylet exited: connection failed to the head');
    assert.equal(
      errorLine('starting\n[2025] Failed to connect to GCS at address 10.0.0.1:6379 within 60 s\n'),
      'Failed to connect to GCS at address 10.0.0.1:6379 within 60 s',
    );
    assert.equal(errorLine('all good\n'), undefined);
  });
});

describe('numbers from hosts are bounded', () => {
  it('ray status: a huge node count is an error, not a billion-entry list', timeout, () => {
    const gpus = ' 0.0/2.0 GPU';
    assert.throws(
      () =>
        timed('ray status with 1000000000 nodes', () =>
          parseRayStatus(rayStatus(' 1000000000 node_a', gpus)),
        ),
      (e: unknown) => e instanceof HostOutputError && /node count of node_a is "1000000000"/.test(e.message),
    );
    assert.throws(() => parseRayStatus(rayStatus(' 20000 node_a', gpus)), HostOutputError);
    assert.throws(
      () => parseRayStatus(rayStatus(Array.from({ length: 3 }, () => ' 4000 worker').join('\n'), gpus)),
      /more than 10000 nodes/,
    );
    assert.equal(parseRayStatus(rayStatus(' 2 worker', gpus)).activeNodes.length, 2);
  });

  it('ray status: 0.0/1e999 GPU and negative usage are errors naming the output', () => {
    assert.throws(
      () => parseRayStatus(rayStatus(' 1 node_a', ' 0.0/1e999 GPU')),
      (e: unknown) =>
        e instanceof HostOutputError &&
        /ray status GPU total is "1e999": not a finite number/.test(e.message),
    );
    assert.throws(
      () => parseRayStatus(rayStatus(' 1 node_a', ' -1.0/2.0 GPU')),
      /GPU used is "-1.0": negative/,
    );
    assert.throws(() => parseRayStatus(rayStatus(' 1 node_a', ' 0.0/1e12 GPU')), /above/);
    assert.deepEqual(parseRayStatus(rayStatus(' 1 node_a', ' 0.0/2.0 GPU')).resources.GPU, {
      used: 0,
      total: 2,
    });
  });

  it('nvidia-smi: memory.used -5000, 1e999 and an absurd pid are errors, not "clear"', () => {
    const fields = ['index', 'name', 'memory.used', 'memory.total'];
    assert.throws(
      () => parseQueryGpu('0, NVIDIA H200, -5000, 143771\n', fields),
      (e: unknown) =>
        e instanceof HostOutputError && /nvidia-smi memory\.used is "-5000": negative/.test(e.message),
    );
    assert.throws(() => parseQueryGpu('0, NVIDIA H200, 0, 1e999\n', fields), /memory\.total is "1e999"/);
    assert.throws(() => parseComputeApps('99999999999, python3, 100\n'), /pid is "99999999999"/);
    assert.throws(() => parseComputeApps('12, python3, -1\n'), /used_gpu_memory is "-1": negative/);
    assert.deepEqual(parseQueryGpu('0, NVIDIA GB10, [N/A], [N/A]\n', fields), [
      { index: 0, name: 'NVIDIA GB10', 'memory.used': null, 'memory.total': null },
    ]);
  });

  it('meminfo: a negative or infinite MemAvailable is an error', () => {
    assert.throws(
      () => parseMeminfo('MemTotal: 1000 kB\nMemAvailable: -5000 kB\n'),
      /\/proc\/meminfo MemAvailable is "-5000": negative/,
    );
    assert.throws(
      () => parseMeminfo(`MemTotal: 1000 kB\nMemAvailable: ${'9'.repeat(400)} kB\n`),
      /MemAvailable is "9{10}.*not a finite number/,
    );
    assert.equal(parseMeminfo('MemTotal: 1000 kB\nMemAvailable: 500 kB\n').memAvailableKiB, 500);
  });
});

describe('known_hosts wildcards', () => {
  it('`*a` repeated 30 times against a name that does not match returns at once', () => {
    // In a child process with a deadline: a matcher that backtracks blocks the thread it runs on, so nothing in
    // this process could end it (node:test's timeout never fires on a synchronous test). The old one took 20 s.
    const out = withinDeadline(`
      import { entryMatchesHost, globMatches } from ${JSON.stringify(srcUrl('ssh/known-hosts.ts'))};
      const pattern = '*a'.repeat(30);
      const name = 'a'.repeat(60) + 'b';
      const entry = { names: { kind: 'patterns', patterns: [pattern] }, keyType: 'ssh-ed25519', key: Buffer.alloc(0), line: 1 };
      const started = performance.now();
      const matched = [globMatches(pattern, name), entryMatchesHost(entry, name, 22)];
      console.log(JSON.stringify({ matched, ms: performance.now() - started }));
    `);
    const { matched, ms } = JSON.parse(out) as { matched: boolean[]; ms: number };
    console.log(`glob *a×30 against a×60 b, both matchers: ${ms.toFixed(1)} ms`);
    assert.deepEqual(matched, [false, false]);
  });

  it('matches as OpenSSH does: * and ?, case-insensitive, whole name', () => {
    const cases: Array<[string, string, boolean]> = [
      ['*', '', true],
      ['*', 'spark1', true],
      ['spark?', 'spark1', true],
      ['spark?', 'spark10', false],
      ['SPARK*', 'spark10', true],
      ['*.example.com', 'a.example.com', true],
      ['*.example.com', 'example.com', false],
      ['10.0.*.1', '10.0.12.1', true],
      ['10.0.*.1', '10.0.12.2', false],
      ['[10.0.0.1]:2222', '[10.0.0.1]:2222', true],
      ['a*b*c', 'aXbYc', true],
      ['a*b*c', 'aXbYcd', false],
      ['a**', 'a', true],
      ['?', '', false],
      ['', '', true],
      ['', 'a', false],
    ];
    for (const [glob, name, expected] of cases)
      assert.equal(globMatches(glob, name), expected, `${glob} ~ ${name}`);
  });
});

describe('the executor keeps a bounded tail of each stream', () => {
  it('keeps the last bytes, counts the cut ones and says so', () => {
    const tail = new OutputTail(1024);
    for (let i = 0; i < 100; i++) tail.push(Buffer.alloc(1000, i % 2 === 0 ? 'a' : 'b'));
    tail.push(Buffer.from('END\n'));
    assert.equal(tail.bytes().length, 1024);
    assert.equal(tail.cutBytes, 100 * 1000 + 4 - 1024);
    assert.ok(tail.bytes().toString().endsWith('END\n'));
    // The kept bytes are one line cut at its front: the text drops it whole, and the note counts it.
    assert.equal(tail.text(), `${cutNote(tail.cutBytes + 1024)}\n`);
  });

  it('drops the rest of the line the cut fell in: no fragment of a secret is left for redaction to miss', () => {
    const secret = 'sk-live-0123456789abcdefghijklmnopqrstuvwxyz';
    const after = 'after the secret\n';
    // Kept: the secret's last 20 characters, its newline, and the line after.
    const tail = new OutputTail(20 + 1 + after.length);
    tail.push(Buffer.from(`${'a'.repeat(2000)}\n--api-key ${secret}\n`));
    tail.push(Buffer.from(after));
    assert.equal(tail.bytes().toString(), `${secret.slice(-20)}\n${after}`);
    const text = tail.text();
    assert.ok(!text.includes(secret.slice(-20)), text);
    assert.equal(text.split('\n').slice(1).join('\n'), after);
    assert.match(text, /^\[liftoff: output too long, its first \d+ bytes were cut\]\n/);
  });

  it('a line longer than 4 KiB loses its first 4 KiB, and a character split there is dropped whole', () => {
    const tail = new OutputTail(4100);
    tail.push(Buffer.from('€'.repeat(2000), 'utf8')); // 6000 bytes, no newline: 1900 cut, then 4096 + 1 dropped
    assert.equal(tail.text(), `${cutNote(1900 + 4097)}\n€`);
  });

  it('a short output is kept whole, with no note', () => {
    const tail = new OutputTail(1024);
    tail.push(Buffer.from('hello\n'));
    assert.equal(tail.text(), 'hello\n');
    assert.equal(tail.cutBytes, 0);
  });

  it('10 MB in 32 KB chunks keep memory at the cap', () => {
    const tail = new OutputTail(1024 * 1024);
    const chunk = Buffer.alloc(32 * 1024, 'x');
    timed('10 MB through a 1 MiB tail', () => {
      for (let i = 0; i < 320; i++) tail.push(chunk);
    });
    assert.equal(tail.bytes().length, 1024 * 1024);
  });
});
