#!/usr/bin/env bash
# Stops a cluster started by up.sh and removes its state dir.
#
# Usage: test/cluster/down.sh [--dir DIR] [--keep-logs]
#   --dir DIR     state dir given to up.sh (default ${TMPDIR:-/tmp}/phasegang-cluster)
#   --keep-logs   keep DIR/logs (everything else in DIR is removed)
set -euo pipefail

dir=${TMPDIR:-/tmp}/phasegang-cluster
keep_logs=false
die() { echo "down.sh: error: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --keep-logs) keep_logs=true; shift ;;
    -h|--help) awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
done

if [[ ! -d "$dir" ]]; then
  echo "down.sh: $dir does not exist; nothing to do" >&2
  exit 0
fi
dir=$(cd "$dir" && pwd)
# Refuse to rm -rf something that up.sh did not create.
if [[ ! -d "$dir/pids" && ! -f "$dir/kubeconfig" && ! -d "$dir/logs" ]]; then
  die "$dir does not look like an up.sh state dir (no pids/, logs/ or kubeconfig); not touching it"
fi

# Only signal a PID if it still runs one of our binaries (PIDs get reused).
ours() {
  local pid=$1 name=$2 cmd
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmd" == *"$name"* ]]
}

# The real node first, while kube-apiserver still runs: its pods are
# deleted through the API so the kubelet tears each sandbox down itself.
if [[ -d "$dir/node" ]]; then
  "$(dirname "${BASH_SOURCE[0]}")/realnode.sh" down --dir "$dir" || echo "down.sh: realnode.sh down failed" >&2
fi

order=(kwok kube-scheduler kube-controller-manager kube-apiserver etcd)
pids=()
for name in "${order[@]}"; do
  f=$dir/pids/$name.pid
  [[ -f "$f" ]] || continue
  pid=$(cat "$f")
  if [[ "$pid" =~ ^[0-9]+$ ]] && ours "$pid" "$name"; then
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid:$name")
  fi
  # apiserver before etcd: give the clients a moment to go first.
  if [[ "$name" == kube-apiserver ]]; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
done

deadline=$(( $(date +%s) + 10 ))
for entry in "${pids[@]}"; do
  pid=${entry%%:*}; name=${entry#*:}
  while kill -0 "$pid" 2>/dev/null && ours "$pid" "$name"; do
    if (( $(date +%s) >= deadline )); then
      echo "down.sh: $name (pid $pid) ignored SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
done

if $keep_logs; then
  find "$dir" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  echo "down.sh: stopped; logs kept in $dir/logs" >&2
else
  rm -rf "$dir"
  echo "down.sh: stopped and removed $dir" >&2
fi
