// A TCP port free on loopback now, for a server a test, bench or script starts next (the kernel picks it, so two
// callers never race for the same one; a port can still be taken between this and the server's listen).
import { createServer } from 'node:net';

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => (port ? resolve(port) : reject(new Error('no free loopback port'))));
    });
  });
}
