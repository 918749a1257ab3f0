// YAML text → plain value, bounded. The yaml library is far from linear on some shapes of a megabyte: 10^6 "["
// took 5.7 s and 980 MB (its parser slows with depth, its composer recurses), one flow sequence of 500 000
// items 20 s and 1 GB, a flow map of 100 000 keys 260 s (each key is checked against every other). So while
// the text is read, token by token, a collection nested deeper or holding more items than a spec ever needs is
// refused before the library builds anything. An alias inside the node it names (a value that contains itself)
// is refused naming its field, and alias expansion is capped (a "billion laughs" document is refused at once).
import { CST, isMap, isPair, isScalar, isSeq, Lexer, parseDocument, Parser, visit } from 'yaml';
import type { Document, Node, Pair } from 'yaml';
import { formatPath } from './errors.js';

/** Nesting of the parser's collections: the reference spec reaches 6. */
const maxYamlDepth = 64;

/** Items of one collection: a spec's longest lists (hosts, args, env) hold at most 256. */
const maxYamlItems = 1024;

/**
 * Nodes of the document (keys, values, collections, aliases): a spec of 256 hosts with every host field set
 * has about 6 000; the library takes about 15 µs and several hundred bytes for each.
 */
const maxYamlNodes = 16_384;

/**
 * Tokens of the text, comments and line breaks included (a megabyte of empty lines took 3.2 s and 300 MB): a
 * spec of 256 hosts with every host field set is about 15 000.
 */
const maxYamlTokens = 100_000;

/** The lexer's tokens that start a node (a plain scalar starts with the lexer's SCALAR mark). */
const nodeTokens = new Set<string | null>([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'block-scalar-header',
  'flow-seq-start',
  'flow-map-start',
  'seq-item-ind',
  'explicit-key-ind',
  'map-value-ind',
  'alias',
]);

/** Aliases resolved per anchor, weighted by what they copy (the yaml library's own measure). */
const maxYamlAliasCount = 100;

/** Text the loader refuses; `field` is the spec path of the value at fault, when there is one. */
export class YamlRefused extends Error {
  override name = 'YamlRefused';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The value the YAML (or JSON) text holds; YamlRefused or the yaml library's YAMLParseError when there is none. */
export function parseSpecYaml(text: string): unknown {
  refuseOversizedCollections(text);
  const doc = parseDocument(text, { prettyErrors: true });
  const [first] = doc.errors;
  if (first) throw first;
  refuseSelfContainingAliases(doc);
  try {
    return doc.toJS({ maxAliasCount: maxYamlAliasCount });
  } catch (err) {
    // The library's word for it is a ReferenceError about "resource exhaustion".
    if (err instanceof ReferenceError)
      throw new YamlRefused(
        `its aliases expand to more than ${maxYamlAliasCount} copies of their anchors (an alias bomb); write the values out or use fewer aliases`,
      );
    throw err;
  }
}

/** "line L, column C" of `offset` in `text`, both counted from 1. */
export function where(text: string, offset: number): string {
  const before = text.slice(0, offset);
  return `line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/**
 * Reads the text token by token, as the library's parser will, and stops at the first collection nested too
 * deep or grown too long, or once the document has too many nodes. The open collections are on the parser's stack, the one being filled near its top.
 */
function refuseOversizedCollections(text: string): void {
  const parser = new Parser();
  let offset = 0;
  let nodes = 0;
  let tokens = 0;
  for (const token of new Lexer().lex(text)) {
    if (++tokens > maxYamlTokens) {
      throw new YamlRefused(
        `it has more than ${maxYamlTokens} tokens (at ${where(text, offset)}); a spec of 256 hosts has about 15 000`,
      );
    }
    if (nodeTokens.has(CST.tokenType(token)) && ++nodes > maxYamlNodes) {
      throw new YamlRefused(
        `it has more than ${maxYamlNodes} keys, values and collections (at ${where(text, offset)}); a spec of 256 hosts has about 6 000`,
      );
    }
    for (const _ of parser.next(token));
    const { stack } = parser;
    if (stack.length > maxYamlDepth) {
      throw new YamlRefused(
        `it nests collections more than ${maxYamlDepth} deep (at ${where(text, offset)}); a spec needs 6`,
      );
    }
    for (let i = stack.length - 1; i >= 0 && i >= stack.length - 3; i--) {
      const open = stack[i];
      if (open && 'items' in open && open.items.length > maxYamlItems) {
        throw new YamlRefused(
          `more than ${maxYamlItems} items (at ${where(text, offset)}); a spec's longest list holds 256`,
          formatPath(openPath(stack.slice(0, i))),
        );
      }
    }
    offset += token.length;
  }
}

/** The field the parser is filling, from the collections open around it: their last keys and indexes. */
function openPath(open: readonly CST.Token[]): (string | number)[] {
  const path: (string | number)[] = [];
  for (const token of open) {
    if (token.type === 'block-seq' || (token.type === 'flow-collection' && token.start.source === '['))
      path.push(token.items.length - 1);
    else if (token.type === 'block-map' || token.type === 'flow-collection') {
      const key = token.items[token.items.length - 1]?.key;
      path.push(CST.resolveAsScalar(key)?.value ?? '?');
    }
  }
  return path;
}

/** Where a node sits, from the document's root: the keys of its pairs and the indexes in its sequences. */
function fieldPath(ancestors: readonly (Document | Node | Pair)[], node: unknown): (string | number)[] {
  const path: (string | number)[] = [];
  const chain = [...ancestors, node];
  chain.forEach((step, i) => {
    const child = chain[i + 1];
    if (isPair(step) && child === step.value)
      path.push(isScalar(step.key) ? String(step.key.value) : String(step.key));
    else if (isSeq(step) && child !== undefined) path.push(step.items.indexOf(child));
  });
  return path;
}

/**
 * An alias names an anchor defined before it; it makes a value that contains itself exactly when it sits inside
 * that anchor's node, i.e. when the node is one of its ancestors.
 */
function refuseSelfContainingAliases(doc: Document): void {
  visit(doc, {
    Alias(_key, alias, ancestors) {
      const target = alias.resolve(doc);
      if (target !== undefined && (isMap(target) || isSeq(target)) && ancestors.includes(target)) {
        throw new YamlRefused(
          `the alias *${alias.source} sits inside the node its anchor &${alias.source} names, so the value would contain itself; write the value out instead`,
          formatPath(fieldPath(ancestors, alias)),
        );
      }
    },
  });
}
