import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import {
  judgeGpusClear,
  NvidiaSmiParseError,
  parseComputeApps,
  parseQueryGpu,
  type GpuLook,
} from '../../src/parsers/nvidia-smi.js';

const fixtures = new URL('../../../shared/fixtures/nvidia-smi/', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, fixtures), 'utf8');
const fileLines = (name: string) => read(name).split('\n');

const h200Uuid = 'GPU-22f9416c-6faf-ed62-7c71-75d31a105e4a';

// Every data file under fixtures/nvidia-smi must be checked by one of these; the last test enforces it.
const covered = new Set<string>();
const use = (name: string) => {
  covered.add(name);
  return read(name);
};

describe('parseComputeApps', () => {
  it('h200 idle (header, no rows) → no processes', () => {
    assert.deepEqual(parseComputeApps(use('h200/compute-apps-idle.csv')), []);
  });

  it('h200 busy: header form with units, then the noheader,nounits form', () => {
    use('h200/compute-apps-busy.csv');
    const [header, withUnits, noHeader] = fileLines('h200/compute-apps-busy.csv');
    assert.deepEqual(parseComputeApps(`${header}\n${withUnits}\n`), [
      { pid: 424, processName: 'python3', usedMiB: 29222, gpuUuid: h200Uuid },
    ]);
    assert.deepEqual(parseComputeApps(`${noHeader}\n`), [
      { pid: 424, processName: 'python3', usedMiB: 29222 },
    ]);
  });

  it('gb10 idle (header only) → no processes', () => {
    assert.deepEqual(parseComputeApps(use('gb10/compute-apps-idle.csv')), []);
  });

  it('gb10 busy, noheader: real used memory even though device memory is [N/A]', () => {
    assert.deepEqual(parseComputeApps(use('gb10/compute-apps-busy-noheader.csv')), [
      { pid: 6330, processName: 'ray::RayWorkerWrapper', usedMiB: 96073 },
    ]);
  });

  it('maps [N/A] memory to null, not 0', () => {
    assert.deepEqual(parseComputeApps('6330, ray::RayWorkerWrapper, [N/A]\n'), [
      { pid: 6330, processName: 'ray::RayWorkerWrapper', usedMiB: null },
    ]);
  });

  it('rejoins a process name that contains ", "', () => {
    assert.deepEqual(parseComputeApps('77, python3 -c a, b, 512 MiB, GPU-x\n'), [
      { pid: 77, processName: 'python3 -c a, b', usedMiB: 512, gpuUuid: 'GPU-x' },
    ]);
  });

  it('reads columns in the order given for noheader output', () => {
    assert.deepEqual(parseComputeApps('GPU-x, 12, python3\n', ['gpu_uuid', 'pid', 'process_name']), [
      { pid: 12, processName: 'python3', usedMiB: null, gpuUuid: 'GPU-x' },
    ]);
  });

  it('throws on nvidia-smi failure text instead of reporting "no processes"', () => {
    assert.throws(
      () =>
        parseComputeApps("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"),
      NvidiaSmiParseError,
    );
    assert.throws(() => parseComputeApps('garbage, here\n'), NvidiaSmiParseError);
  });
});

describe('parseQueryGpu', () => {
  for (const state of ['idle', 'busy'] as const) {
    it(`h200 ${state}: header form, then noheader,nounits with its field list`, () => {
      const name = `h200/query-gpu-${state}.csv`;
      use(name);
      const [header, withUnits, noHeader] = fileLines(name);
      const used = state === 'idle' ? 0 : 29231;
      assert.deepEqual(parseQueryGpu(`${header}\n${withUnits}\n`), [
        {
          index: 0,
          uuid: h200Uuid,
          name: 'NVIDIA H200',
          'memory.total': 143771,
          'memory.used': used,
          'memory.free': 143771 - used - (state === 'idle' ? 615 : 614),
          'utilization.gpu': 0,
        },
      ]);
      assert.deepEqual(parseQueryGpu(`${noHeader}\n`, ['index', 'memory.used', 'memory.total']), [
        { index: 0, 'memory.used': used, 'memory.total': 143771 },
      ]);
    });
  }

  it('gb10: [N/A] memory becomes null, units are stripped from numbers', () => {
    assert.deepEqual(parseQueryGpu(use('gb10/query-gpu.csv')), [
      {
        'memory.total': null,
        'memory.used': null,
        'memory.free': null,
        'utilization.gpu': 0,
        'power.draw': 11.17,
        'temperature.gpu': 35,
      },
    ]);
  });

  it('gb10 noheader,nounits: [N/A] and [Not Supported] are null', () => {
    assert.deepEqual(
      parseQueryGpu('0, NVIDIA GB10, [N/A], [Not Supported]\n', [
        'index',
        'name',
        'memory.used',
        'memory.total',
      ]),
      [{ index: 0, name: 'NVIDIA GB10', 'memory.used': null, 'memory.total': null }],
    );
  });

  it('uses the caller field names when a header is present too', () => {
    const [header, row] = fileLines('h200/query-gpu-idle.csv');
    const fields = ['index', 'uuid', 'name', 'memory.total', 'memory.used', 'memory.free', 'utilization.gpu'];
    assert.equal(parseQueryGpu(`${header}\n${row}\n`, fields)[0]?.['memory.total'], 143771);
  });

  it('needs the field list for noheader output, and the right number of values', () => {
    assert.throws(() => parseQueryGpu('0, 0, 143771\n'), /field list/);
    assert.throws(
      () => parseQueryGpu('0, 0\n', ['index', 'memory.used', 'memory.total']),
      /2 values for 3 fields/,
    );
  });
});

// Captures liftoff does not parse: it asks nvidia-smi for the --query CSV forms only, never the default table,
// `-q` or `--version`.
const notParsed = [
  'h200/nvidia-smi-busy.txt',
  'h200/nvidia-smi-idle.txt',
  'h200/nvidia-smi-q.txt',
  'h200/version.txt',
];

describe('judgeGpusClear: the verdict on what the queries found', () => {
  const limits = { maxUsedMiB: 1024, minAvailableMiB: 65_536 };
  /** The fixtures' header form, read as activities/gpu.ts reads its own query. */
  const look = (gpuCsv: string, appsCsv: string, memAvailableMiB: number): GpuLook => {
    const [header, row] = gpuCsv.split('\n');
    const gpus = parseQueryGpu(`${header}\n${row}\n`).map((r, i) => ({
      index: typeof r['index'] === 'number' ? r['index'] : i,
      memoryUsedMiB: r['memory.used'] as number | null,
    }));
    return {
      host: 'spark1',
      gpus,
      processes: parseComputeApps(appsCsv),
      unifiedMemory: gpus.some((g) => g.memoryUsedMiB === null),
      memAvailableMiB,
    };
  };

  it('h200 idle: clear', () => {
    const idle = look(read('h200/query-gpu-idle.csv'), read('h200/compute-apps-idle.csv'), 0);
    assert.deepEqual(judgeGpusClear(idle, limits), { ok: true });
  });

  it('h200 busy: GpuNotClear naming the process and the device memory above the limit', () => {
    const [header, withUnits] = fileLines('h200/compute-apps-busy.csv');
    const busy = look(read('h200/query-gpu-busy.csv'), `${header}\n${withUnits}\n`, 0);
    const verdict = judgeGpusClear(busy, limits);
    assert.ok(!verdict.ok);
    assert.equal(verdict.type, 'GpuNotClear');
    assert.deepEqual(verdict.busyGpus, [{ index: 0, memoryUsedMiB: 29231 }]);
    assert.match(
      verdict.message,
      /^GPUs on spark1 are not clear: 1 compute process\(es\) hold them: pid 424 python3 \(29222 MiB\); device memory above 1024 MiB: GPU 0 29231 MiB used\. Stop what holds them/,
    );
  });

  it('gb10 (unified memory, [N/A] device memory): clear by MemAvailable, not clear below it or with a process', () => {
    const gpu = read('gb10/query-gpu.csv');
    const idle = read('gb10/compute-apps-idle.csv');
    assert.deepEqual(judgeGpusClear(look(gpu, idle, 100_000), limits), { ok: true });
    const low = judgeGpusClear(look(gpu, idle, 21_710), limits);
    assert.ok(!low.ok);
    assert.match(low.message, /unified memory: MemAvailable 21710 MiB, below the 65536 MiB required/);
    const held = judgeGpusClear(look(gpu, read('gb10/compute-apps-busy-noheader.csv'), 100_000), limits);
    assert.ok(!held.ok);
    assert.match(held.message, /pid 6330 ray::RayWorkerWrapper \(96073 MiB\)/);
    assert.deepEqual(held.busyGpus, []);
  });
});

describe('nvidia-smi fixtures', () => {
  it('every data fixture under nvidia-smi/ is covered by a test above, or named as not parsed', () => {
    const all = ['h200', 'gb10'].flatMap((dir) =>
      readdirSync(new URL(`${dir}/`, fixtures))
        .filter((f) => !f.endsWith('.md'))
        .map((f) => `${dir}/${f}`),
    );
    assert.deepEqual(all.filter((f) => !covered.has(f) && !notParsed.includes(f)).sort(), []);
    assert.deepEqual(
      notParsed.filter((f) => covered.has(f) || !all.includes(f)),
      [],
    );
  });
});
