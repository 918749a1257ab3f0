// The `vllm serve` argv liftoff sends: the Ray executor only when more than one worker process serves.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pipelineParallelSize } from '../../src/config/backend.js';
import { serveArgv } from '../../src/host-commands/launch.js';
import type { LaunchServeInput } from '../../src/host-commands/launch.js';

const input = (tensorParallelSize: number, args: string[] = []): LaunchServeInput => ({
  head: { target: { name: 'spark1', host: '10.0.0.1', port: 22, user: 'root' } } as LaunchServeInput['head'],
  clusterIp: '10.0.0.1',
  container: 'vllm',
  launchId: 'l1',
  model: 'Org/Model',
  port: 30000,
  tensorParallelSize,
  args,
  env: {},
  logPath: '/tmp/serve.log',
  rayPort: 6379,
});

const rayFlag = (argv: string[]): boolean => argv.join(' ').includes('--distributed-executor-backend ray');

describe('serveArgv', () => {
  it('asks for the Ray executor when tensor parallel spans GPUs', () => {
    assert.ok(rayFlag(serveArgv(input(2))));
  });
  it('leaves it out for one worker process (tensor × pipeline parallel 1)', () => {
    const argv = serveArgv(input(1, ['--max-model-len', '256']));
    assert.ok(!rayFlag(argv));
    assert.deepEqual(argv, [
      'vllm',
      'serve',
      'Org/Model',
      '--port',
      '30000',
      '--tensor-parallel-size',
      '1',
      '--max-model-len',
      '256',
    ]);
  });
  it('counts pipeline parallel from the serve args', () => {
    assert.ok(rayFlag(serveArgv(input(1, ['--pipeline-parallel-size', '2']))));
    assert.ok(rayFlag(serveArgv(input(1, ['-pp=2']))));
    assert.equal(pipelineParallelSize(['-pp', '3']), 3);
    assert.equal(pipelineParallelSize(['--pipeline-parallel-size=x']), 1);
    assert.equal(pipelineParallelSize([]), 1);
  });
});
