// /proc/meminfo. On GB10 (unified memory) MemAvailable is what tells whether the "GPU" has room.
import { boundedNumber, hostLines } from './host-output.js';

/** 2^50 KiB (1 EiB): no machine has more memory than this; a larger figure is not a real meminfo. */
const maxKiB = 2 ** 50;

export interface Meminfo {
  memTotalKiB: number;
  memAvailableKiB: number;
  memFreeKiB?: number;
  swapTotalKiB?: number;
  swapFreeKiB?: number;
  /** Every field as printed; sizes in KiB (the kernel's "kB" means KiB), counters (HugePages_*) as is. */
  fields: Record<string, number>;
}

export class MeminfoParseError extends Error {
  override readonly name = 'MeminfoParseError';
}

export function parseMeminfo(text: string): Meminfo {
  const fields: Record<string, number> = {};
  for (const line of hostLines(text)) {
    const match = /^([A-Za-z0-9_()]+):\s+(-?\d+)(?:\s+kB)?\s*$/.exec(line.trim());
    if (match?.[1] && match[2])
      fields[match[1]] = boundedNumber(Number(match[2]), `/proc/meminfo ${match[1]}`, maxKiB, match[2]);
  }
  const total = fields['MemTotal'];
  const available = fields['MemAvailable'];
  if (total === undefined || available === undefined) {
    // Kernels before 3.14 lack MemAvailable; guessing it from MemFree would overstate free memory.
    const missing = total === undefined ? 'MemTotal' : 'MemAvailable';
    throw new MeminfoParseError(
      `/proc/meminfo has no ${missing} line: ${JSON.stringify(text.slice(0, 200))}`,
    );
  }
  return {
    memTotalKiB: total,
    memAvailableKiB: available,
    memFreeKiB: fields['MemFree'],
    swapTotalKiB: fields['SwapTotal'],
    swapFreeKiB: fields['SwapFree'],
    fields,
  };
}
