#!/usr/bin/env bash
# Stops or starts the kube-apiserver of a cluster started by up.sh, the
# same way up.sh started it (its command line is in DIR/run/kube-apiserver.cmd),
# to test clients through an API server outage.
#
# Usage: test/cluster/apiserver.sh stop|start [--dir DIR] [--timeout SEC]
#   stop     SIGTERM kube-apiserver, SIGKILL it after --grace seconds (default 3; its graceful
#            shutdown drains long watches for a minute), wait until it has exited
#   start    start it again (log appended to DIR/logs/kube-apiserver.log), wait for /readyz;
#            DIR/pids/kube-apiserver.pid gets the new PID
#   --dir    the cluster's state dir (default $PHASEGANG_CLUSTER_DIR, else ${TMPDIR:-/tmp}/phasegang-cluster)
#   --timeout seconds to wait for /readyz after start (default 60)
#   --grace  seconds between SIGTERM and SIGKILL on stop (default 3)
set -euo pipefail

die() { echo "apiserver.sh: error: $*" >&2; exit 1; }
usage() { awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "${BASH_SOURCE[0]}"; }

action=${1:-}
[[ "$action" == stop || "$action" == start ]] || { usage >&2; die "first argument must be stop or start"; }
shift
dir=${PHASEGANG_CLUSTER_DIR:-${TMPDIR:-/tmp}/phasegang-cluster}
timeout=60
grace=3
while (($#)); do
  case "$1" in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
    --timeout=*) timeout=${1#*=}; shift ;;
    --grace) grace=${2:?--grace needs a value}; shift 2 ;;
    --grace=*) grace=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
pidfile=$dir/pids/kube-apiserver.pid
cmdfile=$dir/run/kube-apiserver.cmd
[[ -s "$cmdfile" ]] || die "$cmdfile missing (a cluster started by up.sh?)"

case "$action" in
stop)
  pid=$(cat "$pidfile" 2>/dev/null) || die "$pidfile missing"
  kill "$pid" 2>/dev/null || exit 0 # not running
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || exit 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  ;;
start)
  if [[ -s "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    die "kube-apiserver is running (pid $(cat "$pidfile"))"
  fi
  mapfile -d '' cmd <"$cmdfile"
  setsid "${cmd[@]}" </dev/null >>"$dir/logs/kube-apiserver.log" 2>&1 &
  echo $! >"$pidfile"
  kubectl=$(dirname "${cmd[0]}")/kubectl
  deadline=$(($(date +%s) + timeout))
  until "$kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null 2>&1; do
    kill -0 "$(cat "$pidfile")" 2>/dev/null || die "kube-apiserver exited (see $dir/logs/kube-apiserver.log)"
    (($(date +%s) < deadline)) || die "kube-apiserver not ready after ${timeout}s"
    sleep 0.2
  done
  ;;
esac
