import { abortReason } from './exec-contract.js';

/**
 * Bounds the channels open at once on one connection (sshd's MaxSessions); the rest wait their turn in order. A
 * waiter whose signal aborts leaves the queue, so a cancelled activity never holds a place behind other
 * activities' commands on a shared connection.
 */
export class Slots {
  private readonly waiting: Array<() => void> = [];
  constructor(private free: number) {}
  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(granted);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(abortReason(signal));
      };
      const granted = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(granted);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
