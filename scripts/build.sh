#!/usr/bin/env bash
# `npm run build`: compiles src/ into dist/ with tsc (tsconfig.build.json), which bin/liftoff.js runs, and stamps
# dist/ with the hash of the sources it came from (bin/source-hash.js). `--if-stale` does nothing when that stamp
# matches src/ (scripts/setup.sh and the tests call it that way). Types are checked by `npm run lint`, not here:
# the build only emits. The workflow sandbox's bundle is not made here: the worker bundles src/workflows itself.
set -euo pipefail
cd "$(dirname "$0")/.."

current() { node --input-type=module -e "import { sourceHash } from './bin/source-hash.js'; console.log(sourceHash('.'))"; }
fresh() { [ "$(cat dist/source.sha256 2>/dev/null || true)" = "$1" ]; }

if [ "${1:-}" = --if-stale ] && fresh "$(current)"; then exit 0; fi

# Two test files may start at once on a stale build: one builds, the other waits and then finds it fresh.
exec 9>node_modules/.liftoff-build.lock
flock 9
hash=$(current)
if [ "${1:-}" = --if-stale ] && fresh "$hash"; then exit 0; fi

started=$(date +%s)
printf 'build: compiling src/ into dist/ (tsc)\n' >&2
partial="dist.partial.$$"
rm -rf "$partial"
trap 'rm -rf "$partial"' EXIT
node_modules/.bin/tsc -p tsconfig.build.json --outDir "$partial"
# tsc copies no plain JavaScript: the failure converter is loaded by path into the workflow sandbox.
cp src/temporal/encoded-failure-converter.cjs "$partial/temporal/"
# The hash taken before compiling: a source edited meanwhile makes the stamp stale, never the other way.
printf '%s\n' "$hash" >"$partial/source.sha256"
# Swapped in whole, so a CLI starting meanwhile sees either the old build or the new one.
if [ -d dist ]; then mv dist "dist.old.$$"; fi
mv "$partial" dist
rm -rf "dist.old.$$"
printf 'build: compiled in %s s\n' "$(($(date +%s) - started))" >&2
