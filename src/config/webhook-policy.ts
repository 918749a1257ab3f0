// Where a webhook may go: the worker posts only to `https://` at public addresses, unless its policy lists the
// URL's origin (worker-policy.ts `webhooks`), so a spec's author cannot make the worker scan or poke its own
// network (the cloud metadata service, the Temporal frontend, the compose network, local admin ports). What can
// be judged from the URL alone is checked here, at validation for a literal URL and in the activity for one
// from a secret reference; a host name is checked when the activity resolves it (checked-lookup.ts), each
// connection anew, so a name that changes its answer (DNS rebinding) cannot slip past. Messages name the origin,
// never the path or query (a webhook's path is often its token).
import { BlockList, isIP } from 'node:net';
import { settingHint, type WorkerPolicy } from './worker-policy.js';

// Which IP addresses are inside: loopback, link-local, private, shared (CGNAT), unspecified, multicast, reserved
// and the cloud metadata addresses, in IPv4 and IPv6; node's BlockList matches an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d) against the IPv4 ranges. IPv6 forms that carry an IPv4 address to a translator (NAT64,
// 6to4, Teredo) are refused whole: what they reach is not this worker's to judge.
// First match wins: the metadata addresses before the link-local and private ranges that hold them.
const ranges: ReadonlyArray<readonly [cidr: string, kind: string]> = [
  ['169.254.169.254/32', 'the cloud metadata address'],
  ['fd00:ec2::254/128', 'the cloud metadata address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['::1/128', 'a loopback address'],
  ['0.0.0.0/8', 'an unspecified address'],
  ['::/128', 'an unspecified address'],
  ['169.254.0.0/16', 'a link-local address'],
  ['fe80::/10', 'a link-local address'],
  ['10.0.0.0/8', 'a private address'],
  ['172.16.0.0/12', 'a private address'],
  ['192.168.0.0/16', 'a private address'],
  ['fc00::/7', 'a private address'],
  ['fec0::/10', 'a private address'],
  ['100.64.0.0/10', 'a shared (CGNAT) address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['ff00::/8', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved address'],
  ['192.0.0.0/24', 'a reserved address'],
  ['192.0.2.0/24', 'a reserved address'],
  ['198.18.0.0/15', 'a reserved address'],
  ['198.51.100.0/24', 'a reserved address'],
  ['203.0.113.0/24', 'a reserved address'],
  ['::/96', 'a reserved address'],
  ['100::/64', 'a reserved address'],
  ['2001:db8::/32', 'a reserved address'],
  ['64:ff9b::/96', 'a translated IPv4 address (NAT64)'],
  ['64:ff9b:1::/48', 'a translated IPv4 address (NAT64)'],
  ['2002::/16', 'a translated IPv4 address (6to4)'],
  ['2001::/32', 'a translated IPv4 address (Teredo)'],
];

const insideRanges = ranges.map(([cidr, kind]) => {
  const [network = '', prefix = ''] = cidr.split('/');
  const list = new BlockList();
  list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return { cidr, kind, list };
});

export interface InsideAddress {
  /** "a private address" */
  kind: string;
  /** The range it lies in, "10.0.0.0/8": what the refusal names instead of the address itself. */
  range: string;
}

/**
 * The inside range `address` (an IP address, IPv6 without brackets) lies in; undefined for a public address.
 * Anything that is not an IP address at all counts as inside: nothing unchecked gets through.
 */
export function insideAddress(address: string): InsideAddress | undefined {
  const family = isIP(address);
  if (family === 0) return { kind: 'an address that cannot be checked', range: 'none' };
  const type = family === 6 ? 'ipv6' : 'ipv4';
  try {
    const hit = insideRanges.find((r) => r.list.check(address, type));
    return hit ? { kind: hit.kind, range: hit.cidr } : undefined;
  } catch {
    // An address BlockList cannot read is not one it can vouch for.
    return { kind: 'an address that cannot be checked', range: 'none' };
  }
}

/** A webhook URL as the worker judges it. */
export interface WebhookTarget {
  url: URL;
  /** scheme://host[:port], as URL.origin writes it: all a message may show. */
  origin: string;
  /** The policy lists the origin: any address, http too. */
  listed: boolean;
}

/** The address a URL's host names when it is an IP literal (brackets off); undefined for a name. */
function ipLiteralOf(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) !== 0 ? host : undefined;
}

/** The refusal of a webhook whose address lies inside (an IP literal, or what its name resolved to). */
export function insideRefusal(origin: string, inside: InsideAddress, policy: WorkerPolicy): string {
  return `the webhook at ${origin} is refused: ${origin} resolves to ${inside.kind} (${inside.range} is not allowed); list ${origin} under ${settingHint('webhooks', policy)} to allow it`;
}

export type WebhookCheck = { ok: true; target: WebhookTarget } | { ok: false; message: string };

/**
 * What the policy says of `url` before any resolution: refused (not http(s), plain http to an unlisted origin,
 * an IP literal inside), or a target to post to, whose name (when not listed) is still to be checked once
 * resolved. The message never holds the URL's path or query.
 */
export function checkWebhookUrl(url: string, policy: WorkerPolicy): WebhookCheck {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {
      ok: false,
      message: 'the webhook URL is not a URL; write e.g. https://hooks.example.com/liftoff',
    };
  }
  const origin = parsed.origin;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return {
      ok: false,
      message: `the webhook at ${parsed.protocol}// is not an http(s) URL; write e.g. https://hooks.example.com/liftoff`,
    };
  }
  const listed = policy.webhooks.includes(origin);
  if (!listed) {
    if (parsed.protocol !== 'https:') {
      return {
        ok: false,
        message: `the webhook at ${origin} is refused: plain http:// goes only to the origins the worker lists (webhooks: ${policy.webhooks.length > 0 ? policy.webhooks.join(', ') : 'none'}); use https:// to a public address, or list ${origin} under ${settingHint('webhooks', policy)} to allow it`,
      };
    }
    const literal = ipLiteralOf(parsed);
    const inside = literal !== undefined ? insideAddress(literal) : undefined;
    if (inside) return { ok: false, message: insideRefusal(origin, inside, policy) };
  }
  return { ok: true, target: { url: parsed, origin, listed } };
}
