// Adversarial host output (issue 14, item 2): long lines, absurd numbers and huge counts are bounded before
// anything reads them. Every input that took the old code minutes runs in a child Node with a deadline (see
// withinDeadline), so a pattern that backtracks fails the test instead of passing late. The three formerly
// quadratic patterns are also run directly, on a 256 KB line the 4 KB cut would otherwise have shortened: the
// old ones took 95-141 s on that here.
import { describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { cutLine, HostOutputError, maxHostLineChars } from '../../src/parsers/host-output.js';
import { parseRayStatus } from '../../src/parsers/ray-status.js';
import { parseComputeApps, parseQueryGpu } from '../../src/parsers/nvidia-smi.js';
import { parseMeminfo } from '../../src/parsers/meminfo.js';
import { errorLine } from '../../src/activities/ray-cluster.js';
import { globMatches } from '../../src/ssh/known-hosts.js';
import { cutNote, OutputTail } from '../../src/ssh/output-tail.js';
import { twoNodes, twoNodesHead, twoNodesWorker, variant } from '../helpers/ray-status-fixture.js';

const deadlineMs = 20_000;
const KB256 = 256 * 1024;

/**
 * Runs `body` in a child Node (with tsx) and returns what it returns (as JSON) and how long its `timed(...)`
 * calls took. The test fails when the child is not done within the deadline: a backtracking pattern blocks the
 * thread it runs on, so nothing in this process could end it (node:test's timeout never fires on a synchronous
 * test). `imports` maps a module under src/ to the names to import from it.
 */
function withinDeadline<T>(imports: Record<string, string[]>, body: string): { value: T; ms: number } {
  const importLines = Object.entries(imports).map(
    ([path, names]) =>
      `import { ${names.join(', ')} } from ${JSON.stringify(new URL(`../../src/${path}`, import.meta.url).href)};`,
  );
  const source = `${importLines.join('\n')}
    let ms = 0;
    const timed = (fn) => { const t = performance.now(); try { return fn(); } finally { ms += performance.now() - t; } };
    const error = (fn) => { try { fn(); return undefined; } catch (e) { return { name: e.name, message: e.message }; } };
    const value = await (async () => { ${body} })();
    console.log(JSON.stringify({ value, ms }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', source], {
    encoding: 'utf8',
    timeout: deadlineMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.error, undefined, `did not finish within ${deadlineMs} ms (${String(r.error)})`);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { value: T; ms: number };
}

function figure(label: string, ms: number): void {
  console.log(`FIGURE: ${label}: ${ms.toFixed(1)} ms`);
}

const vllmLog = { 'parsers/vllm-log.ts': ['parseVllmLogLine', 'summarizeVllmLog'] };
const MB10 = '10 * 1024 * 1024';

/** The recorded two-node `ray status` with these Active lines and this GPU line instead of its own. */
const rayStatus = (nodes: string, gpuUsage: string) =>
  variant(variant(twoNodes, ` 1 ${twoNodesHead}\n 1 ${twoNodesWorker}`, nodes), ' 0.0/2.0 GPU', gpuUsage);

describe('the formerly quadratic patterns are linear, run on a 256 KB line without the cut', () => {
  it('the `repeated` pattern: 256 KB of blanks before a broken note, and the note itself', () => {
    // The old `\s*\[repeated …\]\s*$` retried from every blank of the run.
    const { value, ms } = withinDeadline<string[]>(
      { 'parsers/vllm-log.ts': ['withoutRepeatNote'] },
      `const broken = 'a' + ' '.repeat(${KB256}) + '[repeated 3x across';
       return [
         timed(() => withoutRepeatNote(broken)) === broken ? 'kept' : 'changed',
         withoutRepeatNote('Loading weights took 3.1 s' + ' '.repeat(${KB256}) + '[repeated 2x across cluster]  '),
       ];`,
    );
    figure('withoutRepeatNote on 256 KB of blanks before a broken note', ms);
    assert.deepEqual(value, ['kept', 'Loading weights took 3.1 s']);
  });

  it('the `Capturing CUDA graphs` pattern: 256 KB of digits with no slash, and a bar after them', () => {
    // The old `Capturing CUDA graphs.*?(\d+)\/(\d+)\s*\[` retried every suffix of every digit run.
    const { value, ms } = withinDeadline<unknown[]>(
      { 'parsers/vllm-log.ts': ['cudaGraphsCount'] },
      `return [
         timed(() => cudaGraphsCount('Capturing CUDA graphs ' + '1'.repeat(${KB256}))) ?? null,
         timed(() => cudaGraphsCount('Capturing CUDA graphs ' + '1 '.repeat(${KB256 / 2}) + '67/67 [00:05<00:00]')),
       ];`,
    );
    figure('cudaGraphsCount on 256 KB of digits, then 256 KB of short numbers', ms);
    assert.deepEqual(value, [null, { done: 67, total: 67 }]);
  });

  it('the Ray error-line patterns: a 256 KB line without the words, and one that ends in them', () => {
    // The old generic `[^\n]*\b(?:error|failed)\b[^\n]*` retried from every character of the line.
    const { value, ms } = withinDeadline<unknown[]>(
      { 'activities/ray-cluster.ts': ['joinErrorIn'] },
      `const long = 'a'.repeat(${KB256});
       return [
         timed(() => joinErrorIn([long])) ?? null,
         timed(() => joinErrorIn([long + ' connection failed']))?.line.length,
       ];`,
    );
    figure('joinErrorIn on two 256 KB lines', ms);
    assert.deepEqual(value, [null, KB256 + ' connection failed'.length]);
  });
});

describe('host lines are cut before any pattern runs', () => {
  it('cutLine keeps the head and says how much it cut', () => {
    assert.equal(cutLine('short'), 'short');
    const cut = cutLine('x'.repeat(maxHostLineChars + 10));
    assert.ok(cut.startsWith('x'.repeat(maxHostLineChars)));
    assert.match(cut, /\[10 characters cut\]$/);
  });

  it('a 10 MB vLLM log line is parsed in linear time and cut to a few KB', () => {
    const { value, ms } = withinDeadline<number>(
      vllmLog,
      `return timed(() => parseVllmLogLine('INFO ' + ' '.repeat(${MB10}) + 'x')).text.length;`,
    );
    figure('parseVllmLogLine on a 10 MB line of blanks', ms);
    assert.ok(value < maxHostLineChars + 100, `text cut to ${value} characters`);
  });

  it('the `repeated` pattern through the parser: 200 KB of blanks before a broken note, and the note', () => {
    const { value, ms } = withinDeadline<string>(
      vllmLog,
      `timed(() => parseVllmLogLine('(RayWorkerWrapper pid=1) a' + ' '.repeat(200000) + '[repeated 3x across'));
       return parseVllmLogLine('(RayWorkerWrapper pid=7) Loading weights took 3.1 s [repeated 2x across cluster]').text;`,
    );
    figure('parseVllmLogLine on 200 KB of blanks before a broken repeat note', ms);
    assert.equal(value, 'Loading weights took 3.1 s');
  });

  it('the `Capturing CUDA graphs` pattern through the parser: long digit runs, and a real bar', () => {
    const { value, ms } = withinDeadline<unknown>(
      vllmLog,
      `timed(() => parseVllmLogLine('Capturing CUDA graphs ' + '1'.repeat(${maxHostLineChars})));
       timed(() => parseVllmLogLine('Capturing CUDA graphs ' + '1'.repeat(${MB10})));
       return parseVllmLogLine('Capturing CUDA graphs (mixed prompt-decode, PIECEWISE): 100%|██████████| 67/67 [00:05<00:00, 12.14it/s]').graphs;`,
    );
    figure('parseVllmLogLine on a 4 KB and a 10 MB digit line after the title', ms);
    assert.deepEqual(value, { done: 67, total: 67 });
  });

  it('a tqdm line of 10 MB of carriage returns still yields its last segment', () => {
    const { value, ms } = withinDeadline<unknown>(
      vllmLog,
      `const line = 'Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01, 1.00s/it]' + '\\r'.repeat(${MB10});
       return timed(() => parseVllmLogLine(line)).shard;`,
    );
    figure('parseVllmLogLine on 10 MB of carriage returns after a bar', ms);
    assert.deepEqual(value, { percent: 50, done: 1, total: 2 });
  });

  it('a fatal line after a 10 MB line is still seen', () => {
    const { value, ms } = withinDeadline<string | undefined>(
      vllmLog,
      `return timed(() => summarizeVllmLog(['INFO ' + 'a'.repeat(${MB10}), 'torch.OutOfMemoryError: CUDA out of memory.'])).fatal?.kind;`,
    );
    figure('summarizeVllmLog on a 10 MB line then a fatal line', ms);
    assert.equal(value, 'cuda_oom');
  });

  it('the Ray error line after a 10 MB line', () => {
    const { value, ms } = withinDeadline<string | undefined>(
      { 'activities/ray-cluster.ts': ['errorLine'] },
      `return timed(() => errorLine('a'.repeat(${MB10}) + '\\nraylet exited: connection failed to the head\\n'));`,
    );
    figure('errorLine over a 10 MB line', ms);
    assert.equal(value, 'raylet exited: connection failed to the head');
    assert.equal(
      errorLine('starting\n[2025] Failed to connect to GCS at address 10.0.0.1:6379 within 60 s\n'),
      'Failed to connect to GCS at address 10.0.0.1:6379 within 60 s',
    );
    assert.equal(errorLine('all good\n'), undefined);
  });
});

describe('numbers from hosts are bounded', () => {
  it('ray status: a huge node count is an error, not a billion-entry list', () => {
    const status = (nodes: string) => JSON.stringify(rayStatus(nodes, ' 0.0/2.0 GPU'));
    const { value, ms } = withinDeadline<Array<{ name: string; message: string } | undefined>>(
      { 'parsers/ray-status.ts': ['parseRayStatus'] },
      `return [
         timed(() => error(() => parseRayStatus(${status(' 1000000000 node_a')}))),
         error(() => parseRayStatus(${status(' 20000 node_a')})),
         error(() => parseRayStatus(${status(Array.from({ length: 3 }, () => ' 4000 worker').join('\n'))})),
       ];`,
    );
    figure('parseRayStatus with 1000000000 nodes', ms);
    const [billion, twentyThousand, threeTimes4000] = value;
    assert.equal(billion?.name, 'HostOutputError');
    assert.match(billion?.message ?? '', /node count of node_a is "1000000000"/);
    assert.equal(twentyThousand?.name, 'HostOutputError');
    assert.match(threeTimes4000?.message ?? '', /more than 10000 nodes/);
    assert.equal(parseRayStatus(rayStatus(' 2 worker', ' 0.0/2.0 GPU')).activeNodes.length, 2);
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
    // The old matcher took 20 s on this, and 186 s in a full run.
    const { value, ms } = withinDeadline<boolean[]>(
      { 'ssh/known-hosts.ts': ['entryMatchesHost', 'globMatches'] },
      `const pattern = '*a'.repeat(30);
       const name = 'a'.repeat(60) + 'b';
       const entry = { names: { kind: 'patterns', patterns: [pattern] }, keyType: 'ssh-ed25519', key: Buffer.alloc(0), line: 1 };
       return timed(() => [globMatches(pattern, name), entryMatchesHost(entry, name, 22)]);`,
    );
    figure('glob *a×30 against a×60 b, both matchers', ms);
    const matched = value;
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
    const started = performance.now();
    for (let i = 0; i < 320; i++) tail.push(chunk);
    figure('10 MB through a 1 MiB tail', performance.now() - started);
    assert.equal(tail.bytes().length, 1024 * 1024);
  });
});
