// The name resolution a webhook POST connects through when the worker's policy does not list its origin: every
// address the name resolves to must be public (config/webhook-policy.ts), and the connection goes to those checked
// addresses, never to a second answer for the same name. Node's http(s) request calls it for each connection it
// opens (and not at all for an IP literal, which webhook-policy.ts checks before), so a name that answers a
// public address at validation and a private one at connect time (DNS rebinding) is refused at connect time.
import { lookup as resolveName } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { insideAddress, type InsideAddress } from '../config/webhook-policy.js';

/** The name resolved to an address inside; what the refusal names is the range, never the address. */
export class InsideAddressError extends Error {
  override name = 'InsideAddressError';
  constructor(readonly inside: InsideAddress) {
    super(`the name resolves to ${inside.kind} (${inside.range})`);
  }
}

/** A `lookup` for node's net/http/https: resolves, refuses when any address is inside, else answers with them. */
export const checkedLookup: LookupFunction = (hostname, options, callback) => {
  resolveName(
    hostname,
    { all: true, family: options.family ?? 0, hints: options.hints ?? 0 },
    (err, found) => {
      if (err) {
        callback(err, '');
        return;
      }
      // Every address, not only the first: a connection may fall back to any of them (happy eyeballs).
      for (const { address } of found) {
        const inside = insideAddress(address);
        if (inside) {
          callback(new InsideAddressError(inside), '');
          return;
        }
      }
      const [first] = found;
      if (options.all === true) callback(null, found);
      else if (first === undefined)
        callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '');
      else callback(null, first.address, first.family);
    },
  );
};
