// serve.backend: the multiproc rules of the spec (a master port, one worker per GPU, no Ray-only field), each
// refusal naming the field and the fix; the Ray backend stays the default and unchanged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { deploySpecSchema } from '../../src/config/schema.js';
import { formatIssues } from '../../src/config/errors.js';
import { refusalOf } from '../helpers/spec-refusal.js';

interface RawSpec {
  hosts: Record<string, unknown>[];
  gpu: Record<string, unknown>;
  ray: Record<string, unknown>;
  serve: Record<string, unknown>;
}

const example = parse(readFileSync('examples/spark-qwen35.yaml', 'utf8')) as RawSpec;

/** The example as a multiproc spec: its explicit ray.port removed, a master port set. */
function multiproc(mutate: (s: RawSpec) => void = () => undefined): RawSpec {
  const spec = structuredClone(example);
  delete spec.ray.port;
  spec.serve.backend = 'multiproc';
  spec.serve.masterPort = 29501;
  mutate(spec);
  return spec;
}

function errorsOf(spec: RawSpec): string {
  return refusalOf(spec);
}

describe('serve.backend', () => {
  it('defaults to ray, and the reference example is a Ray spec', () => {
    const spec = deploySpecSchema.parse(example);
    assert.equal(spec.serve.backend, 'ray');
    assert.equal(spec.serve.masterPort, undefined);
  });

  it('accepts a multiproc spec with tensor parallel equal to hosts × gpu.perHost', () => {
    const spec = deploySpecSchema.parse(multiproc());
    assert.equal(spec.serve.backend, 'multiproc');
    assert.equal(spec.serve.masterPort, 29501);
  });

  it('accepts tensor × pipeline parallel equal to the GPUs (tp 1, pp 2 on 2 hosts)', () => {
    const spec = deploySpecSchema.parse(
      multiproc((s) => {
        s.serve.tensorParallelSize = 1;
        s.serve.args = ['--pipeline-parallel-size', '2'];
      }),
    );
    assert.equal(spec.serve.tensorParallelSize, 1);
  });

  const refused: [string, (s: RawSpec) => void, RegExp][] = [
    [
      'no master port',
      (s) => delete s.serve.masterPort,
      /serve\.masterPort: not set: serve\.backend: multiproc needs the port .* e\.g\. serve\.masterPort: 29501/,
    ],
    [
      'the master port is the API port',
      (s) => (s.serve.masterPort = 30000),
      /serve\.masterPort: 30000 is also serve\.port/,
    ],
    [
      'fewer workers than GPUs',
      (s) => (s.serve.tensorParallelSize = 1),
      /serve\.tensorParallelSize: 1 × pipeline parallel 1 = 1 workers, but .*2 hosts × gpu\.perHost 1 = 2.* Set serve\.tensorParallelSize to 2/,
    ],
    [
      'more workers than GPUs',
      (s) => (s.serve.tensorParallelSize = 4),
      /serve\.tensorParallelSize: 4 × pipeline parallel 1 = 4 workers/,
    ],
    [
      'tensor × pipeline parallel over the GPUs',
      (s) => (s.serve.args = ['-pp', '2']),
      /serve\.tensorParallelSize: 2 × pipeline parallel 2 = 4 workers.* Set serve\.tensorParallelSize to 1/,
    ],
    [
      'ray.port set',
      (s) => (s.ray.port = 7000),
      /ray\.port: 7000 is a Ray setting, and serve\.backend: multiproc starts no Ray cluster .*would be ignored: remove ray\.port, or set serve\.backend: ray/,
    ],
    [
      'ray.verifyTimeout set',
      (s) => (s.ray.verifyTimeout = '3m'),
      /ray\.verifyTimeout: "3m" is a Ray setting.*remove ray\.verifyTimeout/,
    ],
    ['an unknown backend', (s) => (s.serve.backend = 'slurm'), /serve\.backend: .*"ray"\|"multiproc"/],
    [
      'a bad distributed timeout',
      (s) => (s.serve.distributedTimeout = 'soon'),
      /serve\.distributedTimeout: "soon" is not a duration/,
    ],
  ];
  for (const [name, mutate, expected] of refused) {
    it(`refuses a multiproc spec with ${name}`, () => {
      assert.match(errorsOf(multiproc(mutate)), expected);
    });
  }

  // Every rank's command line ends with serve.args, and vLLM keeps a flag's last value: a flag liftoff sets there
  // would override it on every rank, in either form, as vLLM's one-dash alias or as a prefix vLLM expands.
  const owned: [string[], RegExp][] = [
    [
      ['--master-addr', '10.9.9.9'],
      /serve\.args\[0\]: "--master-addr" is --master-addr, .*hosts\[0\]\.clusterIp/,
    ],
    [
      ['--master-port=29999'],
      /serve\.args\[0\]: "--master-port" is --master-port, .*set serve\.masterPort instead/,
    ],
    [
      ['--max-model-len', '4096', '--node-rank', '1'],
      /serve\.args\[2\]: "--node-rank" is --node-rank, .*its place in hosts/,
    ],
    [['--nnodes=4'], /serve\.args\[0\]: "--nnodes" is --nnodes, .*the number of hosts/],
    [['--master_port', '1'], /serve\.args\[0\]: "--master_port" is --master-port/],
    [['--master-p', '1'], /serve\.args\[0\]: "--master-p" is --master-port/],
    [
      ['-tp', '2'],
      /serve\.args\[0\]: "-tp" is --tensor-parallel-size, .*set serve\.tensorParallelSize instead/,
    ],
    [['--tensor-parallel-size=2'], /serve\.args\[0\]: .*set serve\.tensorParallelSize instead/],
    [['--headless'], /serve\.args\[0\]: "--headless" is --headless, .*rank 0 serves the API; remove it/],
    [['--port', '9000'], /serve\.args\[0\]: "--port" is --port, .*set serve\.port instead/],
    [['--distributed-executor-backend=ray'], /serve\.args\[0\]: .*set serve\.backend: ray/],
    [['--distributed-timeout-seconds', '60'], /serve\.args\[0\]: .*set serve\.distributedTimeout instead/],
    [['--served-model-name', 'x'], /serve\.args\[0\]: .*set serve\.servedModelName instead/],
    [['--data-parallel-size', '2'], /serve\.args\[0\]: "--data-parallel-size" is a data-parallel flag/],
    [['-dp=2'], /serve\.args\[0\]: "-dp" is a data-parallel flag/],
    [['--data-parallel-address', '10.0.0.1'], /serve\.args\[0\]: .*data parallel 1/],
  ];
  for (const [args, expected] of owned) {
    it(`refuses serve.args ${JSON.stringify(args)} in a multiproc spec: liftoff sets that flag`, () => {
      const errors = errorsOf(multiproc((s) => (s.serve.args = args)));
      assert.match(errors, expected);
      // Named once, at its own index; the value is not echoed.
      assert.equal(errors.split('\n').filter((l) => l.includes('serve.args[')).length, 1, errors);
      if (args.length > 1) assert.ok(!errors.includes(`: ${args[args.length - 1]}`), errors);
    });
  }

  it('accepts the flags a multiproc launch leaves to the spec, and ambiguous prefixes vLLM refuses itself', () => {
    for (const args of [
      ['--max-model-len', '4096', '--gpu-memory-utilization', '0.9', '--enforce-eager'],
      ['--pipeline-parallel-size', '1', '--enable-expert-parallel'],
      ['--master-', '1'],
      ['--po', '1'],
      ['--distributed-', '1'],
      ['--port-range-is-no-flag-of-vllm'],
    ]) {
      const r = deploySpecSchema.safeParse(multiproc((s) => (s.serve.args = args)));
      assert.equal(r.success, true, `${JSON.stringify(args)}: ${r.success ? '' : formatIssues(r.error)}`);
    }
  });

  it('leaves a Ray spec its serve.args as before', () => {
    const spec = structuredClone(example);
    spec.serve.args = ['--master-port', '29501', '--headless'];
    assert.equal(deploySpecSchema.safeParse(spec).success, true);
  });

  it('accepts its own output: the CLI sends the parsed spec (defaults filled in) to the workflow, which parses it again', () => {
    const once = deploySpecSchema.parse(multiproc());
    assert.equal(once.ray.port, 6379);
    assert.deepEqual(deploySpecSchema.parse(once), once);
    // The example's explicit ray.port 6379 is the default: it is what a parsed spec carries anyway.
    assert.equal(deploySpecSchema.safeParse(multiproc((s) => (s.ray.port = 6379))).success, true);
  });

  it('refuses the multiproc fields in a Ray spec', () => {
    const spec = structuredClone(example);
    spec.serve.masterPort = 29501;
    spec.serve.distributedTimeout = '1m';
    const errors = errorsOf(spec);
    assert.match(errors, /serve\.masterPort: is read only by serve\.backend: multiproc/);
    assert.match(errors, /serve\.distributedTimeout: is read only by serve\.backend: multiproc/);
  });

  it('keeps the Ray rules for a Ray spec only: ray.port may equal nothing of multiproc', () => {
    const ray = structuredClone(example);
    ray.serve.port = 6379;
    assert.match(errorsOf(ray), /serve\.port: 6379 is also ray\.port/);
    // A multiproc spec has no Ray head to collide with.
    assert.equal(deploySpecSchema.safeParse(multiproc((s) => (s.serve.port = 6379))).success, true);
  });
});
