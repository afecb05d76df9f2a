#!/usr/bin/env bash
# End-to-end check of the local cluster: up (2 nodes x 4 GPUs), nodes Ready
# with nvidia.com/gpu 4, a GPU pod that runs 3 s and succeeds with a
# termination message, a pod failing with exit code 2, deletion of a Running
# pod, namespace deletion (controller-manager), down.
#
# Usage: test/cluster/smoke.sh [--dir DIR] [--keep]   (--keep: leave the cluster up)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${TMPDIR:-/tmp}/phasegang-smoke-$$
keep=false
while (($#)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --keep) keep=true; shift ;;
    *) echo "smoke.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done

fail() { echo "smoke.sh: FAIL: $*" >&2; echo "smoke.sh: logs in $dir/logs" >&2; exit 1; }
step() { echo "smoke.sh: --- $*" >&2; }

cleanup() {
  local rc=$?
  if ! $keep; then
    if ((rc == 0)); then "$here/down.sh" --dir "$dir" || true
    else "$here/down.sh" --dir "$dir" --keep-logs || true; fi
  fi
  exit "$rc"
}
trap cleanup EXIT

"$here/up.sh" --nodes 2 --gpus 4 --dir "$dir" >/dev/null
# shellcheck disable=SC1091
source "$dir/env"
k() { kubectl "$@"; }

# poll TIMEOUT DESCRIPTION CMD...: until CMD succeeds.
poll() {
  local t=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < deadline )) || fail "timed out after ${t}s: $what"
    sleep 0.2
  done
}
jp() { k get "$@"; }

step "nodes"
k get nodes -o wide
for n in kwok-node-0 kwok-node-1; do
  [[ $(jp node "$n" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] || fail "$n not Ready"
  [[ $(jp node "$n" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}') == 4 ]] || fail "$n allocatable nvidia.com/gpu != 4"
done

pod() { # name run-seconds exit-code message
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations:
$( [[ -n "$2" ]] && echo "    phasegang.dev/sim-run-seconds: \"$2\"" )
$( [[ -n "$3" ]] && echo "    phasegang.dev/sim-exit-code: \"$3\"" )
$( [[ -n "$4" ]] && echo "    phasegang.dev/sim-termination-message: '$4'" )
spec:
  restartPolicy: Never
  containers:
  - name: train
    image: example.invalid/train
    resources:
      limits:
        nvidia.com/gpu: 1
EOF
}
phase() { jp pod "$1" -o jsonpath='{.status.phase}'; }
is_phase() { [[ $(phase "$1") == "$2" ]]; }

step "pod ok: Running -> Succeeded after 3 s, termination message"
msg='{"loss":0.125,"step":100}'
pod ok 3 "" "$msg" | k apply -f -
poll 30 "pod ok Running" is_phase ok Running
t_run=$(date +%s.%N)
echo "ok: Running on $(jp pod ok -o jsonpath='{.spec.nodeName}')" >&2
poll 30 "pod ok Succeeded" is_phase ok Succeeded
t_done=$(date +%s.%N)
echo "ok: Succeeded $(awk -v a="$t_run" -v b="$t_done" 'BEGIN{printf "%.1f", b-a}')s after Running was observed" >&2
got=$(jp pod ok -o jsonpath='{.status.containerStatuses[0].state.terminated.message}')
[[ "$got" == "$msg" ]] || fail "termination message: got '$got', want '$msg'"
code=$(jp pod ok -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[[ "$code" == 0 ]] || fail "pod ok exitCode $code"
k get pod ok -o jsonpath='{.status.containerStatuses[0].state}{"\n"}'

step "pod bad: exit code 2 -> Failed"
pod bad 1 2 "" | k apply -f -
poll 30 "pod bad Failed" is_phase bad Failed
code=$(jp pod bad -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[[ "$code" == 2 ]] || fail "pod bad exitCode '$code', want 2"
k get pod bad -o jsonpath='{.status.phase} {.status.containerStatuses[0].state}{"\n"}'

step "pod forever: Running, delete -> gone"
pod forever "" "" "" | k apply -f -
poll 30 "pod forever Running" is_phase forever Running
k delete pod forever --wait=false
poll 30 "pod forever deleted" bash -c "! kubectl get pod forever"

step "GPU accounting: 8 GPUs total, 9th pod stays Pending"
for i in $(seq 1 8); do pod "g$i" "" "" ""; echo "---"; done | k apply -f - >/dev/null
pod g9 "" "" "" | k apply -f - >/dev/null
all_running() { [[ $(k get pods -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}' | grep -c '^g[1-8]=Running$') == 8 ]]; }
poll 30 "8 GPU pods Running" all_running
sleep 2
[[ $(phase g9) == Pending ]] || fail "9th GPU pod is $(phase g9), want Pending"
k get pods -o wide

step "namespace deletion (controller-manager)"
k create namespace smoke-ns
poll 30 "default SA in smoke-ns" k -n smoke-ns get serviceaccount default
k -n smoke-ns create job j --image=example.invalid/x -- true
poll 30 "job pod created" bash -c "[[ -n \$(kubectl -n smoke-ns get pods -o name) ]]"
k delete namespace smoke-ns --wait=false
poll 60 "namespace smoke-ns gone" bash -c "! kubectl get namespace smoke-ns"

echo "smoke.sh: PASS" >&2
