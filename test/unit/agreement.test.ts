// The agreement checks' parsers (what a host prints) and comparisons (hosts against each other and the spec).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseDriver,
  parseHostFacts,
  parseIndexSha256,
  parseIndexes,
  parseKernel,
  parseLogind,
  parseMtus,
  parseRayProbe,
  parseVersions,
  parseWeights,
  type FactSection,
  type HostFacts,
} from '../../src/parsers/agreement-facts.js';
import { agreementCommands } from '../../src/steps/agreement-read.js';
import { compareHosts, ifaceMatches, type AgreementExpectations } from '../../src/preflight/agreement.js';
import { shortImageId } from '../../src/shared/revisions.js';
import { sparkExpectations } from '../helpers/agreement-expectations.js';

const idA = `sha256:${'3f2a9c1b2d4e'.padEnd(64, '0')}`;
const idB = `sha256:${'9b8c7d6e5f4a'.padEnd(64, '1')}`;
const snap = './snapshots/6f1c';

const machineIdOf = (host: string): string => (host === 'spark1' ? '1' : '2').repeat(32);

function facts(host: string, over: Partial<HostFacts> = {}): HostFacts {
  const ip = host === 'spark1' ? '10.0.2.11' : '10.0.2.12';
  return {
    host,
    clockOffsetMs: 0,
    machineId: machineIdOf(host),
    imageId: idA,
    addresses: [{ iface: 'enp1s0f1np1', address: ip, prefix: 24 }],
    mtus: { enp1s0f1np1: 1500, lo: 65536 },
    weights: {
      entries: [
        { kind: 'file', bytes: 100, path: `${snap}/config.json` },
        { kind: 'file', bytes: 500, path: `${snap}/model-00001-of-00002.safetensors` },
        { kind: 'file', bytes: 500, path: `${snap}/model-00002-of-00002.safetensors` },
        { kind: 'file', bytes: 80, path: `${snap}/model.safetensors.index.json` },
      ],
      truncated: false,
    },
    indexes: [
      {
        file: `${snap}/model.safetensors.index.json`,
        totalSize: 900,
        shards: ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'],
      },
    ],
    logind: { answers: true, removeIpc: true, uid: 0, user: 'root', linger: false },
    versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' },
    ...over,
  };
}

const expectations: AgreementExpectations = sparkExpectations(2, {
  ifaceVars: [
    { name: 'NCCL_SOCKET_IFNAME', value: 'enp1s0f1np1' },
    { name: 'GLOO_SOCKET_IFNAME', value: 'enp1s0f1np1' },
  ],
});

function problemsOf(worker: Partial<HostFacts>, exp: Partial<AgreementExpectations> = {}) {
  return compareHosts({ ...expectations, ...exp }, [facts('spark1'), facts('spark2', worker)]).problems;
}

describe('agreement: parsers', () => {
  it('reads the clock offset, image ID, addresses and MTUs', () => {
    const sections = new Map<FactSection, string[]>([
      ['clock', ['1796354320354868938']],
      ['image', [idA]],
      [
        'addr',
        [
          '3: enp1s0f1np1    inet 10.0.2.12/24 brd 10.0.2.255 scope global enp1s0f1np1\\       valid_lft forever',
        ],
      ],
      [
        'link',
        [
          '3: enp1s0f1np1@if7: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP mode DEFAULT',
          '1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT',
        ],
      ],
    ]);
    const f = parseHostFacts('spark2', sections, 1796354320000);
    assert.equal(f.clockOffsetMs, 354);
    assert.equal(f.imageId, idA);
    assert.deepEqual(f.addresses, [{ iface: 'enp1s0f1np1', address: '10.0.2.12', prefix: 24 }]);
    assert.deepEqual(f.mtus, { enp1s0f1np1: 9000, lo: 65536 });
    assert.equal(f.weights, undefined, 'no weights section: not listed');
    assert.equal(f.rayPort, undefined);
  });

  it('refuses an image line that is not an ID (an error message)', () => {
    const f = parseHostFacts('h', new Map([['image', ['Error: No such image: x']]]), 0);
    assert.equal(f.imageId, undefined);
  });

  it('reads the weight list, broken links as such, and notices truncation', () => {
    const w = parseWeights(['f 64 ./a.safetensors', 'l 40 ./b.safetensors', 'p 0 ./fifo', 'garbage']);
    assert.deepEqual(w.entries, [
      { kind: 'file', bytes: 64, path: './a.safetensors' },
      { kind: 'broken', bytes: 40, path: './b.safetensors' },
    ]);
    assert.equal(w.truncated, false);
    assert.equal(parseWeights(Array.from({ length: 20_001 }, (_, i) => `f 1 ./${i}`)).truncated, true);
  });

  it('reads the index shards once each and its total_size', () => {
    const idx = parseIndexes([
      'file ./s/model.safetensors.index.json',
      '"total_size": 1234',
      '"model-1.safetensors"',
      '"model-1.safetensors"',
      '"../evil.safetensors"',
      'file ./t/model.safetensors.index.json',
      '"model-2.safetensors"',
    ]);
    assert.deepEqual(idx, [
      { file: './s/model.safetensors.index.json', totalSize: 1234, shards: ['model-1.safetensors'] },
      { file: './t/model.safetensors.index.json', shards: ['model-2.safetensors'] },
    ]);
  });

  it('tells a refused Ray port (reachable) from a blocked one', () => {
    assert.equal(parseRayProbe(['exit 0']).outcome, 'open');
    assert.equal(
      parseRayProbe([
        'exit 1',
        'bash: connect: Connection refused',
        'bash: line 1: /dev/tcp/x/1: Connection refused',
      ]).outcome,
      'refused',
    );
    const blocked = parseRayProbe(['exit 1', 'bash: connect: No route to host']);
    assert.deepEqual(blocked, { outcome: 'blocked', detail: 'No route to host' });
    assert.equal(parseRayProbe(['exit 124']).outcome, 'blocked');
  });

  it('reads logind: its user when it knows the session, id otherwise, nothing when it does not answer', () => {
    assert.deepEqual(
      parseLogind([
        'uid=0',
        'user=root',
        'session-exit=0',
        'RemoveIPC=yes',
        'user-exit=0',
        'UID=1000',
        'Name=aurora',
        'Linger=no',
      ]),
      { answers: true, removeIpc: true, uid: 1000, user: 'aurora', linger: false },
    );
    assert.deepEqual(parseLogind(['uid=1001', 'user=bob', 'session-exit=0', 'RemoveIPC=no', 'user-exit=1']), {
      answers: true,
      removeIpc: false,
      uid: 1001,
      user: 'bob',
      linger: undefined,
    });
    assert.equal(parseLogind(['uid=1001', 'user=bob', 'session-exit=127', 'user-exit=127']).answers, false);
  });

  it('reads the versions inside the image, and nothing from an error', () => {
    assert.deepEqual(parseVersions('python 3.12.3\nray 2.49.1\nvllm -\n'), {
      python: '3.12.3',
      ray: '2.49.1',
      vllm: '-',
    });
    assert.equal(parseVersions('docker: Error response from daemon: No such image\n'), undefined);
  });

  it("reads the host's identity: kernel, GPU driver and the index's sha256", () => {
    const sha = 'ab'.repeat(32);
    const file = `./snapshots/${'c'.repeat(40)}/model.safetensors.index.json`;
    const f = parseHostFacts(
      'h',
      new Map<FactSection, string[]>([
        ['kernel', ['6.11.0-1016-nvidia']],
        ['driver', ['580.95.05', '580.95.05']],
        ['index-sha', [`${sha}  ${file}`]],
      ]),
      0,
    );
    assert.equal(f.kernel, '6.11.0-1016-nvidia');
    assert.equal(f.driver, '580.95.05');
    assert.deepEqual(f.indexSha256, { file, sha256: sha });
    const none = parseHostFacts('h', new Map(), 0);
    assert.deepEqual([none.kernel, none.driver, none.indexSha256], [undefined, undefined, undefined]);
  });

  it('refuses a kernel line that is not one printable word of at most 100 characters', () => {
    assert.equal(parseKernel(['6.8.0-49-generic']), '6.8.0-49-generic');
    assert.equal(parseKernel(['uname: command not found']), undefined);
    assert.equal(parseKernel(['x'.repeat(101)]), undefined);
    assert.equal(parseKernel(['6.8.0\u001b[31m']), undefined);
    assert.equal(parseKernel([]), undefined);
  });

  it('takes a driver version only from an nvidia-smi that succeeded and was not cut', () => {
    assert.equal(parseDriver(['550.54.15']), '550.54.15');
    assert.equal(parseDriver(['580.95']), '580.95');
    assert.equal(parseDriver(['580']), undefined, 'one number is not a version');
    assert.equal(parseDriver(['1.2.3.4.5']), undefined);
    assert.equal(parseDriver(['12345.1']), undefined);
    assert.equal(parseDriver(['550.54.15', 'failed']), undefined, 'nvidia-smi exited non-zero');
    assert.equal(
      parseDriver([
        'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.',
        'failed',
      ]),
      undefined,
    );
    assert.equal(parseDriver(['550.54.15', ...Array.from({ length: 200 }, () => '550.54.15')]), undefined);
    assert.equal(parseDriver([]), undefined);
  });

  it("reads the index's sha256 only from a whole sha256sum line of an index", () => {
    const sha = '0f'.repeat(32);
    assert.deepEqual(parseIndexSha256([`${sha}  ./model.safetensors.index.json`]), {
      file: './model.safetensors.index.json',
      sha256: sha,
    });
    assert.deepEqual(parseIndexSha256([`${sha} *./s/model.safetensors.index.json`]), {
      file: './s/model.safetensors.index.json',
      sha256: sha,
    });
    assert.equal(parseIndexSha256([`${sha}  ./snapshots/abc/model.safet`]), undefined, 'cut by the bound');
    assert.equal(parseIndexSha256([`\\${sha}  ./a\\nb/model.safetensors.index.json`]), undefined);
    assert.equal(parseIndexSha256([`${sha.toUpperCase()}  ./model.safetensors.index.json`]), undefined);
    assert.equal(parseIndexSha256(['unreadable']), undefined);
    assert.equal(parseIndexSha256([`${sha}  ./${'d/'.repeat(600)}model.safetensors.index.json`]), undefined);
  });

  it('reads MTUs only from well-formed lines', () => {
    assert.deepEqual(parseMtus(['x: y mtu 1500', '2: eth0: <UP> mtu abc', '2: eth0: <UP> mtu 1500']), {
      eth0: 1500,
    });
  });

  it('quotes the spec values of each read and probes the head only from a worker', () => {
    const texts = (commands: { name: string; command: { text: string } }[]): Map<string, string> =>
      new Map(commands.map((c) => [c.name, c.command.text]));
    const worker = texts(
      agreementCommands(
        {
          host: 'w',
          image: "img'; rm -rf /",
          modelPath: '/m p',
          hashWeights: false,
          rayHead: { ip: '10.0.2.11', port: 6379 },
        },
        false,
      ),
    );
    assert.equal(worker.keys().next().value, 'clock', 'the clock is read first');
    assert.match(worker.get('image-id') ?? '', /-- 'img'\\''; rm -rf \/'/);
    assert.match(worker.get('weight-list') ?? '', /cd -- '\/m p'/);
    assert.match(worker.get('ray-port') ?? '', /\/dev\/tcp\/\$0\/\$1"' 10\.0\.2\.11 6379/);
    assert.equal(worker.has('weight-hashes'), false, 'no hashing unless preflight.hashWeights');
    assert.equal(worker.has('versions'), false);
    const head = texts(
      agreementCommands({ host: 'h', image: 'i', modelPath: '/m', hashWeights: true }, true),
    );
    assert.equal(head.has('ray-port'), false);
    assert.match(head.get('weight-hashes') ?? '', /sha256sum/);
    assert.match(head.get('versions') ?? '', /docker run --rm --network none --pull never/);
  });

  it("reads the host's identity bounded on the host, the index hash inside the quoted model folder", () => {
    const reads = agreementCommands({ host: 'h', image: 'i', modelPath: "/m'x", hashWeights: false }, false);
    const texts = new Map(reads.map((c) => [c.name, c.command.text]));
    assert.equal(texts.get('kernel'), 'uname -r 2>/dev/null | head -c 200');
    assert.equal(
      texts.get('gpu-driver'),
      '{ nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null || echo failed; } | head -c 1024',
    );
    assert.equal(
      texts.get('index-sha256'),
      `cd -- '/m'\\''x' 2>/dev/null || { echo unreadable; exit 0; }; find -L . -maxdepth 8 -name model.safetensors.index.json -type f 2>/dev/null | head -n 1 | while IFS= read -r f; do sha256sum -- "$f" 2>/dev/null; done | head -c 1100`,
    );
    for (const name of ['kernel', 'gpu-driver', 'index-sha256'])
      assert.ok((reads.find((c) => c.name === name)?.maxBytes ?? Infinity) <= 2048, name);
  });
});

describe('agreement: comparisons', () => {
  it('passes hosts that agree', () => {
    assert.deepEqual(compareHosts(expectations, [facts('spark1'), facts('spark2')]), {
      ok: true,
      problems: [],
      warnings: [],
      machineIds: { spark1: machineIdOf('spark1'), spark2: machineIdOf('spark2') },
      identities: [
        { host: 'spark1', imageId: idA, versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' } },
        { host: 'spark2', imageId: idA, versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.11.0' } },
      ],
    });
  });

  it('shows short image IDs side by side', () => {
    const [p] = problemsOf({ imageId: idB });
    assert.equal(shortImageId(idA), '3f2a9c1b2d4e');
    assert.equal(p?.check, 'image');
    assert.deepEqual(p?.hosts, ['spark2']);
    assert.match(p?.detail ?? '', /spark1: 3f2a9c1b2d4e \| spark2: 9b8c7d6e5f4a/);
  });

  it('names the version that differs', () => {
    const [p] = problemsOf({ versions: { python: '3.12.3', ray: '2.49.1', vllm: '0.10.2' } });
    assert.equal(p?.check, 'versions');
    assert.match(p?.detail ?? '', /^vllm inside .* \(spark1: vllm 0\.11\.0 \| spark2: vllm 0\.10\.2\)/);
  });

  it('refuses a missing shard, an empty one, a broken link and a short shard', () => {
    const base = facts('spark2').weights?.entries ?? [];
    const without = base.filter((e) => !e.path.endsWith('00002-of-00002.safetensors'));
    const missing = problemsOf({ weights: { entries: without, truncated: false } });
    assert.equal(missing.length, 1, 'reported once, not again as a list difference');
    assert.match(
      missing[0]?.detail ?? '',
      /lists shard\(s\) that are not there: model-00002-of-00002\.safetensors/,
    );

    const broken = base.map((e) =>
      e.path.endsWith('00002-of-00002.safetensors') ? { ...e, kind: 'broken' as const } : e,
    );
    assert.match(
      problemsOf({ weights: { entries: broken, truncated: false } })[0]?.detail ?? '',
      /broken symbolic link.*00002-of-00002/,
    );

    const empty = base.map((e) => (e.path.endsWith('00001-of-00002.safetensors') ? { ...e, bytes: 0 } : e));
    assert.match(
      problemsOf({ weights: { entries: empty, truncated: false } })[0]?.detail ?? '',
      /are empty: model-00001/,
    );

    const short = base.map((e) => (e.path.endsWith('00001-of-00002.safetensors') ? { ...e, bytes: 300 } : e));
    const shortProblems = problemsOf({ weights: { entries: short, truncated: false } });
    assert.match(shortProblems[0]?.detail ?? '', /hold 800 bytes, fewer than its total_size 900/);
  });

  it('compares file lists and sizes host against host', () => {
    const base = facts('spark2').weights?.entries ?? [];
    const entries = [
      ...base.map((e) => (e.path.endsWith('config.json') ? { ...e, bytes: 99 } : e)),
      { kind: 'file' as const, bytes: 5, path: './extra.txt' },
    ];
    const [p] = problemsOf({ weights: { entries, truncated: false } });
    assert.match(p?.detail ?? '', /only on spark2: \.\/extra\.txt/);
    assert.match(p?.detail ?? '', /config\.json 100 B on spark1, 99 B on spark2/);
  });

  it('compares hashes only where both hosts hashed', () => {
    const a = facts('spark1', { hashes: { './x': 'a'.repeat(64) } });
    const b = facts('spark2', { hashes: { './x': 'b'.repeat(64) } });
    assert.match(compareHosts(expectations, [a, b]).problems[0]?.detail ?? '', /sha256 differs: \.\/x/);
    assert.equal(compareHosts(expectations, [facts('spark1'), b]).ok, true);
  });

  it('refuses clusterIp on another interface than NCCL/GLOO_SOCKET_IFNAME name', () => {
    const [p] = problemsOf({
      addresses: [{ iface: 'enp2s0', address: '10.0.2.12', prefix: 24 }],
      mtus: { enp2s0: 1500 },
    });
    assert.deepEqual(p?.hosts, ['spark2']);
    assert.match(
      p?.detail ?? '',
      /clusterIp 10\.0\.2\.12 is on enp2s0, but NCCL_SOCKET_IFNAME=enp1s0f1np1 and GLOO_SOCKET_IFNAME=enp1s0f1np1/,
    );
  });

  it('reads NCCL_SOCKET_IFNAME as NCCL does: prefixes, lists, = and ^', () => {
    assert.ok(ifaceMatches('enp1s0', 'enp1s0f1np1'));
    assert.ok(ifaceMatches('eth,enp1', 'enp1s0f1np1'));
    assert.ok(!ifaceMatches('=enp1s0', 'enp1s0f1np1'));
    assert.ok(!ifaceMatches('^docker,lo', 'docker0'));
    assert.ok(ifaceMatches('^docker,lo', 'enp1s0f1np1'));
  });

  it('refuses VLLM_HOST_IP that is not the node IP, naming the hosts', () => {
    const [p] = problemsOf(
      {},
      { vllmHostIps: [{ field: 'ray.env', value: '10.0.2.11', hosts: ['spark1', 'spark2'] }] },
    );
    assert.deepEqual(p?.hosts, ['spark2']);
    assert.match(
      p?.detail ?? '',
      /ray\.env VLLM_HOST_IP=10\.0\.2\.11 is not the node IP given to Ray on spark2 \(10\.0\.2\.12\)/,
    );
  });

  it('refuses a blocked Ray port, not a refused one', () => {
    assert.equal(problemsOf({ rayPort: { outcome: 'refused', detail: 'connection refused' } }).length, 0);
    const [p] = problemsOf({ rayPort: { outcome: 'blocked', detail: 'No route to host' } });
    assert.match(
      p?.detail ?? '',
      /spark2 cannot reach the head's Ray port 10\.0\.2\.11:6379 \(No route to host\)/,
    );
  });

  it('refuses MTUs that differ on the cluster interface', () => {
    const [p] = problemsOf({ mtus: { enp1s0f1np1: 9000 } });
    assert.match(p?.detail ?? '', /MTU of the cluster interface differs \(spark1: 1500 \| spark2: 9000\)/);
  });

  it('refuses RemoveIPC=yes for a regular user without linger, with the fix', () => {
    const user = { answers: true, removeIpc: true, uid: 1000, user: 'aurora', linger: false };
    const [p] = problemsOf({ logind: user });
    assert.equal(p?.check, 'ipc');
    assert.match(p?.detail ?? '', /sudo loginctl enable-linger aurora/);
    assert.equal(problemsOf({ logind: { ...user, linger: true } }).length, 0);
    assert.equal(problemsOf({ logind: { ...user, removeIpc: false } }).length, 0);
    assert.equal(problemsOf({ logind: { ...user, answers: false } }).length, 0);
  });

  it('warns, without refusing, about clock skew above preflight.maxClockSkew', () => {
    const r = compareHosts(expectations, [facts('spark1'), facts('spark2', { clockOffsetMs: 7300 })]);
    assert.equal(r.ok, true);
    assert.match(r.warnings[0] ?? '', /clocks differ by 7\.3 s between spark1 and spark2/);
    assert.deepEqual(
      compareHosts(expectations, [facts('spark1'), facts('spark2', { clockOffsetMs: 4000 })]).warnings,
      [],
    );
  });
});
