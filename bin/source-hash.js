// What dist/ was compiled from: one hash over src/ (paths and contents). scripts/build.sh writes it to
// dist/source.sha256; bin/liftoff.js runs dist/ only while it matches, so an edit to src/ never runs old code.
// Contents, not mtimes: a checkout, a copy or an unpacked npm tarball keeps neither order of mtimes.
// Plain JavaScript: it runs before anything is compiled, and in an installed package with no TypeScript.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** @param {string} dir @param {string} rel @returns {string[]} */
function files(dir, rel = '') {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => {
      const path = rel ? `${rel}/${e.name}` : e.name;
      return e.isDirectory() ? files(dir, path) : [path];
    });
}

/** The hash of `<root>/src`, or undefined when there is no src/. @param {string} root @returns {string | undefined} */
export function sourceHash(root) {
  const src = join(root, 'src');
  let paths;
  try {
    paths = files(src);
  } catch {
    return undefined;
  }
  const hash = createHash('sha256');
  for (const path of paths)
    hash
      .update(path)
      .update('\0')
      .update(readFileSync(join(src, path)))
      .update('\0');
  return hash.digest('hex');
}

/** The hash dist/ was built from, or undefined when there is no build. @param {string} root */
export function builtHash(root) {
  try {
    return readFileSync(join(root, 'dist', 'source.sha256'), 'utf8').trim();
  } catch {
    return undefined;
  }
}
