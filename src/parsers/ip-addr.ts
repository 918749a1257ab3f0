// The host's network as `ip -o -4 addr show` and `ibdev2netdev` print it. Host output is hostile: each line is
// cut before matching, and only anchored, linear patterns are used.
import { hostLines } from './host-output.js';

export interface Ipv4Address {
  iface: string;
  address: string;
  prefix: number;
}

/** `ip -o -4 addr show` lines: `2: enp1s0f1np1    inet 10.213.2.1/24 brd 10.213.2.255 scope global enp1s0f1np1\ …`. */
export function parseIpv4Addresses(text: string): Ipv4Address[] {
  return hostLines(text).flatMap((line) => {
    const m = /^\d+:\s+([^\s@]+)(?:@\S+)?\s+inet\s+(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})\b/.exec(line);
    return m?.[1] && m[2] && m[3] ? [{ iface: m[1], address: m[2], prefix: Number(m[3]) }] : [];
  });
}

export interface RdmaLink {
  device: string;
  port: number;
  iface: string;
  up: boolean;
}

/** `ibdev2netdev` (Mellanox OFED) lines: `mlx5_0 port 1 ==> enp1s0f0np0 (Up)`. */
export function parseIbdev2netdev(text: string): RdmaLink[] {
  return hostLines(text).flatMap((line) => {
    const m = /^(\S+) port (\d+) ==> (\S+) \((\w+)\)/.exec(line.trim());
    return m?.[1] && m[2] && m[3] && m[4]
      ? [{ device: m[1], port: Number(m[2]), iface: m[3], up: m[4].toLowerCase() === 'up' }]
      : [];
  });
}

/** Both addresses in the same IPv4 network of `prefix` bits. */
export function sameSubnet(a: string, b: string, prefix: number): boolean {
  const size = 2 ** (32 - prefix);
  return Math.floor(ipv4ToNumber(a) / size) === Math.floor(ipv4ToNumber(b) / size);
}

/** Whether `ip` reaches this host through `entry`: its own address, or (Linux answers every address of a
 * loopback interface's prefix) any address of lo's prefix, all of 127.0.0.0/8. */
export function carries(entry: Ipv4Address, ip: string): boolean {
  if (entry.address === ip) return true;
  return entry.iface === 'lo' && sameSubnet(entry.address, ip, entry.prefix);
}

export function ipv4ToNumber(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}
