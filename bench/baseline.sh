#!/usr/bin/env bash
# The shell-script way, kept as the benchmark's baseline: the community launch sequence, one OpenSSH command
# at a time, host after host. It runs the same remote commands liftoff's activities run, without liftoff's
# extra checks (no preflight, no container confirmation, no diagnostics), and polls at the same interval.
#
#   bench/baseline.sh SETTINGS_FILE
#
# SETTINGS_FILE is bash that sets: SSH_CONFIG (an ssh_config with a Host entry per host), HOSTS (host names,
# head first), CLUSTER_IPS (their interconnect IPs, same order), HEAD_ADDRESS (where the control host reaches
# the head's HTTP port), UNITS, OLD_CONTAINERS (arrays), CONTAINER, IMAGE, RAY_PORT, GPUS_PER_HOST, MODEL,
# SERVE_PORT, LOG_PATH, POLL_SECONDS, IFACE. bench/run.ts writes it for the simulated cluster.
set -euo pipefail
# shellcheck source=/dev/null
source "$1"

on() { # on HOST COMMAND...: one SSH connection per command, as the script being replaced does.
  local host=$1
  shift
  ssh -F "$SSH_CONFIG" -o BatchMode=yes "$host" "$@"
}
q() { printf '%q ' "$@"; }

head=${HOSTS[0]}
head_ip=${CLUSTER_IPS[0]}
n=${#HOSTS[@]}
gpus_total=$((n * GPUS_PER_HOST))

# 1. Stop (and disable) the services that hold the GPUs after a reboot.
for h in "${HOSTS[@]}"; do
  on "$h" "$(q systemctl stop -- "${UNITS[@]}"); $(q systemctl disable -- "${UNITS[@]}")" >/dev/null
done

# 2. Force-remove the old containers, and the previous launch's.
for h in "${HOSTS[@]}"; do
  on "$h" "$(q docker rm -f -- "${OLD_CONTAINERS[@]}" "$CONTAINER") >/dev/null 2>&1 || true"
done

# 3. nvidia-smi until no process holds a GPU.
for h in "${HOSTS[@]}"; do
  until [ -z "$(on "$h" "$(q nvidia-smi --query-compute-apps=pid --format=csv,noheader)")" ]; do
    sleep "$POLL_SECONDS"
  done
done

# 4-5. The Ray head, then the workers, each a container running `ray start --block`.
ray_run() { # ray_run IP RAY_START_ARGS...
  local ip=$1
  shift
  q docker run -d --name "$CONTAINER" --gpus all --network host --ipc host --shm-size 16g \
    -e RAY_memory_monitor_refresh_ms=0 -e "NCCL_SOCKET_IFNAME=$IFACE" -e "GLOO_SOCKET_IFNAME=$IFACE" \
    -e "VLLM_HOST_IP=$ip" --entrypoint ray "$IMAGE" "$@" --node-ip-address "$ip" --num-gpus "$GPUS_PER_HOST"
}
on "$head" "$(ray_run "$head_ip" start --head --block --port "$RAY_PORT")" >/dev/null
for i in $(seq 1 $((n - 1))); do
  on "${HOSTS[$i]}" "$(ray_run "${CLUSTER_IPS[$i]}" start --block --address "$head_ip:$RAY_PORT")" >/dev/null
done

# 6. `ray status` until every GPU is in the cluster.
until on "$head" "$(q docker exec "$CONTAINER" ray status)" 2>/dev/null | grep -q "/${gpus_total}.0 GPU"; do
  sleep "$POLL_SECONDS"
done

# 7. nohup the server inside the head container.
serve=$(q docker exec "$CONTAINER" vllm serve "$MODEL" --port "$SERVE_PORT" \
  --tensor-parallel-size "$gpus_total" --distributed-executor-backend ray)
on "$head" "setsid nohup $serve > $(q "$LOG_PATH") 2>&1 < /dev/null &"

# 8. Poll until it answers.
until curl -sf --max-time 5 -o /dev/null "http://$HEAD_ADDRESS:$SERVE_PORT/health"; do
  sleep "$POLL_SECONDS"
done

# 9. One chat completion.
curl -sf --max-time 60 -H 'Content-Type: application/json' \
  --data "{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"Reply with one word: ready?\"}],\"max_tokens\":16}" \
  "http://$HEAD_ADDRESS:$SERVE_PORT/v1/chat/completions" >/dev/null
echo "baseline: $MODEL serving on $HEAD_ADDRESS:$SERVE_PORT"
