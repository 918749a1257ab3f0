// The vLLM log parser reads torch's rendezvous failures of vLLM's multi-node mode as their own kinds (the texts of
// the real CPU build's failure, test/real/real-multinode.test.ts, and torch's store).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { summarizeVllmLog } from '../../src/parsers/vllm-log.js';

describe('multi-node fatal lines', () => {
  const cases: [string, string][] = [
    [
      'torch.distributed.DistNetworkError: The client socket has timed out after 5000ms while trying to connect to (10.1.0.11, 29599).',
      'master_unreachable',
    ],
    [
      'torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29501, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use',
      'master_port_in_use',
    ],
    [
      'ERROR 12-04 14:17:13 [multiproc_executor.py:953] torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of (10.213.52.11, 29501). The client socket has failed to connect to 0.0.0.0:14414 (errno: 101 - Network is unreachable).',
      'master_unreachable',
    ],
    [
      'torch.distributed.DistStoreError: Timed out after 121 seconds waiting for clients. 1/2 clients joined.',
      'ranks_missing',
    ],
  ];
  it("is not fooled by torch's retries, which a headless rank prints until rank 0 listens", () => {
    const retries = [
      '[E1204 14:17:07.030603774 socket.cpp:818] [c10d] The client socket has failed to connect to any network address of (10.213.52.11, 29501).',
      '[W1204 14:17:07.030922502 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host 10.213.52.11:29501 - retrying (try=0, timeout=5000ms, delay=643ms): The client socket has failed to connect to any network address of (10.213.52.11, 29501). The client socket has failed to connect to 0.0.0.0:14414 (errno: 101 - Network is unreachable).',
    ];
    assert.equal(summarizeVllmLog(retries).fatal, undefined);
  });

  for (const [line, kind] of cases) {
    it(`${kind}, even after the traceback that precedes it`, () => {
      const fatal = summarizeVllmLog([
        'Traceback (most recent call last):',
        '  File "x.py", line 1, in f',
        line,
      ]).fatal;
      assert.equal(fatal?.kind, kind);
      assert.equal(fatal?.line, line);
    });
  }
});
