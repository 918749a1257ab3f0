#!/usr/bin/env bash
# The real Docker engine of the tests (sim/real-docker.ts): Debian's docker.io (Docker Engine 20.10, its CLI and
# containerd) and debootstrap when missing, and the image every simulated host's daemon loads, built once into a
# cache outside the clone (CI clones afresh every run), keyed by a hash of this script:
#   $LIFTOFF_REAL_CACHE/docker-image-<hash>.tar    a `docker load` tarball
# The image is a minimal Debian root filesystem (debootstrap --variant=minbase) with python3 and the package
# metadata of the Ray and vLLM versions the simulated images report (the agreement check reads them without
# importing anything), and `ray`, `vllm` and `gpu-hog` commands that run liftoff's simulated tools: the node binary
# and the cluster's tool bundle are bind-mounted read-only into each container by the simulated cluster, so the
# image needs neither Node nor the repo and stays small. In a real-tools cluster (test/real) `ray` and `vllm` run
# the real Ray and vLLM instead: the venv of scripts/setup-real.sh, bind-mounted read-only at its own path, on this
# image's python3.11 (the venv is made from Debian bookworm's /usr/bin/python3.11, the same interpreter, so nothing
# of 3.7 GB goes into the image). The image adds the one shared library minbase lacks that the venv's native code
# links: libnuma1 (vLLM's CPU kernels, vllm/_C*.so).
# The tarball is made here without a daemon, so its image ID is the digest of its config: every daemon that loads it
# reports the same ID (two `docker import`s of one tree give two IDs, and the agreement check compares IDs).
# Called by scripts/setup.sh for the tests (not for the demo). Prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

# Keep in step with referenceImageVersions in sim/seed.ts (what the simulated docker's images report).
IMAGE_RAY_VERSION=2.49.1
IMAGE_VLLM_VERSION=0.11.0
SUITE=bookworm

need=()
[ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages: ${need[*]}; install them with: sudo apt-get install ${need[*]}"
    exit 1
  fi
  started=$(date +%s)
  log "installing ${need[*]} (apt)"
  # The package would start a daemon of its own (a docker0 bridge, iptables rules); the tests start one per host.
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  [ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
  log "installed ${need[*]} in $(($(date +%s) - started)) s"
fi

cache=${LIFTOFF_REAL_CACHE:-/var/cache/liftoff}
mkdir -p "$cache"
key=$(sha256sum scripts/setup-docker.sh | cut -c1-16)
image_tar=$cache/docker-image-$key.tar
# sim/real-docker.ts finds the tarball through this link, as sim/real-tools.ts finds the venv.
link=.docker-image.tar

exec 9>"$cache/.setup-docker.lock"
flock 9

if [ ! -f "$image_tar" ]; then
  [ "$(id -u)" = 0 ] || { log "building the test image needs root (debootstrap)"; exit 1; }
  started=$(date +%s)
  work=$(mktemp -d "$cache/docker-image-build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  rootfs=$work/rootfs
  log "building the test image into $image_tar (debootstrap $SUITE; about a minute, once)"
  if ! debootstrap --variant=minbase --include=python3,libnuma1 "$SUITE" "$rootfs" > "$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    log "debootstrap failed"
    exit 1
  fi
  debootstrap_s=$(($(date +%s) - started))
  # What a container never reads: apt's caches and lists, documentation, locales.
  rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*
  # debootstrap leaves the machine's resolver and hostname; docker mounts its own at run time.
  : > "$rootfs/etc/hostname"
  site=$rootfs/usr/local/lib/python3.11/dist-packages
  for pkg in "ray $IMAGE_RAY_VERSION" "vllm $IMAGE_VLLM_VERSION"; do
    set -- $pkg
    mkdir -p "$site/$1-$2.dist-info"
    printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$1" "$2" > "$site/$1-$2.dist-info/METADATA"
  done
  # The simulated tools: /etc/liftoff-sim/env (bind-mounted by the simulated cluster) names the node binary and the
  # cluster's state folder; the host is the container's hostname (a --network host container takes its daemon's).
  # A real-tools cluster mounts /etc/liftoff-real/env instead, naming the venv it mounts: `ray` and `vllm` are then
  # the real programs. Decided by the mounts, so one image (one image ID) serves both kinds of cluster, and an old
  # container of the simulated kind (gpu-hog) still runs beside real Ray on the same host. The real programs must
  # not report usage: these hosts reach nothing beyond the machine.
  for tool in ray vllm gpu-hog; do
    {
      printf '#!/bin/sh\n'
      printf "# liftoff's %s in a simulated host's container (scripts/setup-docker.sh): needs the cluster's mounts.\n" "$tool"
      if [ "$tool" != gpu-hog ]; then
        cat <<EOF
if [ -r /etc/liftoff-real/env ]; then
  . /etc/liftoff-real/env
  [ -x "\$LIFTOFF_REAL_VENV/bin/$tool" ] || { echo "$tool: \$LIFTOFF_REAL_VENV/bin/$tool is not mounted" >&2; exit 127; }
  export RAY_USAGE_STATS_ENABLED=0 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
  exec "\$LIFTOFF_REAL_VENV/bin/$tool" "\$@"
fi
EOF
      fi
      cat <<EOF
[ -r /etc/liftoff-sim/env ] || { echo "$tool: /etc/liftoff-sim/env is not mounted (a simulated host's container only)" >&2; exit 127; }
. /etc/liftoff-sim/env
LIFTOFF_SIM_HOST_DIR="\$LIFTOFF_SIM_STATE_DIR/hosts/\$(cat /proc/sys/kernel/hostname)"
export LIFTOFF_SIM_HOST_DIR
exec "\$LIFTOFF_SIM_NODE" "\$LIFTOFF_SIM_STATE_DIR/bin/simtool.mjs" $tool "\$@"
EOF
    } > "$rootfs/usr/local/bin/$tool"
    chmod 755 "$rootfs/usr/local/bin/$tool"
  done
  # A `docker save` tarball made by hand: one layer, a config, a manifest (the image ID is the config's digest).
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$work/layer.tar" .
  diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  mkdir -p "$work/image/$diff_id"
  mv "$work/layer.tar" "$work/image/$diff_id/layer.tar"
  printf '%s' "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"2026-01-01T00:00:00Z\",\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"],\"Cmd\":[\"/bin/sh\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]},\"history\":[{\"created\":\"2026-01-01T00:00:00Z\",\"created_by\":\"liftoff scripts/setup-docker.sh $key\"}]}" > "$work/config.json"
  config_id=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/image/$config_id.json"
  printf '%s' "[{\"Config\":\"$config_id.json\",\"RepoTags\":[\"liftoff-sim/host:$key\"],\"Layers\":[\"$diff_id/layer.tar\"]}]" > "$work/image/manifest.json"
  tar -C "$work/image" -cf "$image_tar.partial" .
  mv "$image_tar.partial" "$image_tar"
  # Images of earlier versions of this script: nothing loads them any more.
  find "$cache" -maxdepth 1 -name 'docker-image-*.tar' ! -name "${image_tar##*/}" -delete
  log "built the test image (sha256:$config_id, $(du -h "$image_tar" | cut -f1)) in $(($(date +%s) - started)) s (debootstrap ${debootstrap_s} s)"
fi

ln -sfn "$image_tar" "$link"
