import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MeminfoParseError, parseMeminfo } from '../../src/parsers/meminfo.js';

// No meminfo fixture exists; the sample below has the layout of a real /proc/meminfo (GB10 figures).
const sample = [
  'MemTotal:       125323488 kB',
  'MemFree:         9761524 kB',
  'MemAvailable:   23019744 kB',
  'Buffers:           10640 kB',
  'Cached:         13602428 kB',
  'SwapTotal:      16777212 kB',
  'SwapFree:       16777212 kB',
  'HugePages_Total:       0',
  'Hugepagesize:       2048 kB',
  'Active(anon):     1234 kB',
  '',
].join('\n');

describe('parseMeminfo', () => {
  it('reads totals and availability in KiB', () => {
    const info = parseMeminfo(sample);
    assert.equal(info.memTotalKiB, 125323488);
    assert.equal(info.memAvailableKiB, 23019744);
    assert.equal(info.memFreeKiB, 9761524);
    assert.equal(info.swapTotalKiB, 16777212);
    assert.equal(info.swapFreeKiB, 16777212);
    assert.equal(info.fields['HugePages_Total'], 0);
    assert.equal(info.fields['Hugepagesize'], 2048);
    assert.equal(info.fields['Active(anon)'], 1234);
  });

  it('reads this machine’s /proc/meminfo', () => {
    const info = parseMeminfo(readFileSync('/proc/meminfo', 'utf8'));
    assert.ok(info.memTotalKiB > 0);
    assert.ok(info.memAvailableKiB > 0 && info.memAvailableKiB <= info.memTotalKiB);
  });

  it('refuses text without MemAvailable instead of guessing it', () => {
    const old = sample.replace(/^MemAvailable:.*\n/m, '');
    assert.throws(
      () => parseMeminfo(old),
      (err: unknown) => err instanceof MeminfoParseError && /MemAvailable/.test(err.message),
    );
    assert.throws(() => parseMeminfo('cat: /proc/meminfo: No such file or directory'), MeminfoParseError);
  });
});
