// The host's tool server: one long-lived process per simulated host that runs the short, read-only tool calls
// (served.ts) in-process, so a call costs about 2 ms of CPU (1 in the server) instead of a Node start (~50). The
// thin client (client.c), which is each tool's name in the host's bin/, sends it one call per connection; a call
// the server does not take is answered "not mine" and the client execs the node bundle (main.ts) as before.
//
// Started beside the host's sshd, in its namespaces (sim/tool-server.ts), as `node simtool-server.mjs HOST_DIR`;
// it ends with the cluster (cluster-down kills every process whose LIFTOFF_SIM_HOST_DIR is the cluster's).
//
// The wire, on the unix socket paths.toolSocket (native byte order, which both ends share):
//   request:  u32 magic "LTS1", u32 N, then N bytes: u32 uid, u32 pid, u32 argc, u32 envc, and NUL-ended strings:
//             cwd, argv[0..argc) (argv[0] names the tool), envp[0..envc)
//   replies:  frames of u8 kind, u32 length, body: 'o' stdout bytes, 'e' stderr bytes, then one 'x' (i32 exit
//             code) or, before any output, one 'f' (not mine: run it yourself). The connection ends after it.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { basename } from 'node:path';
import { paths } from '../host-state.js';
import { runWithToolIo, type ToolIo } from './io.js';
import { isToolName, recordCommand, tools } from './registry.js';
import { servedInProcess } from './served.js';

const requestMagic = 0x3153544c; // "LTS1" read as a little-endian u32
/** Arguments plus environment; a bigger request (none seen in practice) is refused and runs as its own process. */
const maxRequestBytes = 4 << 20;

const frameKind = { stdout: 0x6f, stderr: 0x65, exit: 0x78, notMine: 0x66 } as const;

interface CallRequest {
  uid: number;
  pid: number;
  cwd: string;
  argv: string[];
  env: NodeJS.ProcessEnv;
}

function parseRequest(body: Buffer): CallRequest | undefined {
  if (body.length < 16) return undefined;
  const uid = body.readUInt32LE(0);
  const pid = body.readUInt32LE(4);
  const argc = body.readUInt32LE(8);
  const envc = body.readUInt32LE(12);
  const strings: string[] = [];
  let at = 16;
  while (at < body.length) {
    const end = body.indexOf(0, at);
    if (end < 0) return undefined;
    strings.push(body.toString('utf8', at, end));
    at = end + 1;
  }
  if (argc < 1 || strings.length !== 1 + argc + envc) return undefined;
  const env: NodeJS.ProcessEnv = {};
  for (const entry of strings.slice(1 + argc)) {
    const eq = entry.indexOf('=');
    // The first definition wins, as getenv finds it.
    if (eq > 0 && !Object.hasOwn(env, entry.slice(0, eq))) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return { uid, pid, cwd: strings[0] ?? '/', argv: strings.slice(1, 1 + argc), env };
}

function frame(kind: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(kind, 0);
  head.writeUInt32LE(body.length, 1);
  return Buffer.concat([head, body]);
}

function exitFrame(code: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeInt32LE(code | 0, 0);
  return frame(frameKind.exit, body);
}

/**
 * Whether this server may run the call: a tool it takes, for a caller of its own user (another user's call must
 * meet that user's permissions, so it runs as that user's process), in the server's time zone (dates print in
 * local time, which Node fixes per process).
 */
function takes(req: CallRequest): boolean {
  const [toolPath, ...args] = req.argv;
  const name = basename(toolPath ?? '');
  return (
    isToolName(name) &&
    req.uid === process.getuid?.() &&
    req.env.TZ === process.env.TZ &&
    servedInProcess(name, args)
  );
}

async function serveCall(conn: Socket, req: CallRequest | undefined): Promise<void> {
  if (!req || !takes(req)) {
    conn.end(frame(frameKind.notMine, Buffer.alloc(0)));
    return;
  }
  const [toolPath = '', ...args] = req.argv;
  const name = basename(toolPath);
  if (!isToolName(name)) return;
  const send =
    (kind: number) =>
    (chunk: string | Uint8Array): void => {
      if (!conn.destroyed) conn.write(frame(kind, Buffer.from(chunk)));
    };
  const io: ToolIo = {
    env: req.env,
    stdout: send(frameKind.stdout),
    stderr: send(frameKind.stderr),
    pid: req.pid,
  };
  recordCommand(req.env.LIFTOFF_SIM_HOST_DIR, name, args);
  let code: number;
  try {
    code = await runWithToolIo(io, async () => (await tools[name]()).main(args));
  } catch (err) {
    io.stderr(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    code = 1;
  }
  if (!conn.destroyed) conn.end(exitFrame(code));
}

function acceptCall(conn: Socket): void {
  const chunks: Buffer[] = [];
  let have = 0;
  conn.on('error', () => undefined);
  const onData = (chunk: Buffer): void => {
    chunks.push(chunk);
    have += chunk.length;
    if (have < 8) return;
    const buf = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    chunks.length = 0;
    chunks.push(buf);
    const length = buf.readUInt32LE(4);
    if (buf.readUInt32LE(0) !== requestMagic || length > maxRequestBytes) {
      conn.off('data', onData);
      conn.end(frame(frameKind.notMine, Buffer.alloc(0)));
      return;
    }
    if (have < 8 + length) return;
    conn.off('data', onData);
    void serveCall(conn, parseRequest(buf.subarray(8, 8 + length)));
  };
  conn.on('data', onData);
}

function main(): void {
  const hostDir = process.argv[2];
  if (!hostDir) {
    process.stderr.write('usage: simtool-server.mjs HOST_DIR\n');
    process.exit(2);
  }
  const socket = paths.toolSocket(hostDir);
  mkdirSync(paths.toolServer(hostDir), { recursive: true, mode: 0o700 });
  chmodSync(paths.toolServer(hostDir), 0o700);
  rmSync(socket, { force: true });
  // A call's own failure is answered to its caller; one that escapes it (an error in a callback it left behind)
  // leaves the server in an unknown state: it ends, and every call from then on runs as its own process.
  const fail = (err: unknown): void => {
    process.stderr.write(`tool server: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    rmSync(socket, { force: true });
    process.exit(70);
  };
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.once(signal, () => {
      rmSync(socket, { force: true });
      process.exit(0);
    });
  const server = createServer(acceptCall);
  server.on('error', fail);
  server.listen(socket, () => {
    chmodSync(socket, 0o600);
    writeFileSync(paths.toolServerPid(hostDir), `${process.pid}\n`);
  });
  // Loaded now, not on the first call, so no call pays for it.
  void Promise.all([tools['nvidia-smi'](), tools.docker(), tools.systemctl(), tools.ray()]);
}

main();
