#!/usr/bin/env bash
# make e2e: start the local control plane (test/cluster), run the e2e suite
# against it with a real phasegang controller process, stop everything.
# E2E_ARGS adds `go test` flags (e.g. E2E_ARGS='-run TestSeed').
# On failure the control-plane logs and the controller logs (and Jaeger's)
# are kept and their paths printed.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e.XXXXXX")
E2E_ARTIFACTS=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e-artifacts.XXXXXX")
export E2E_ARTIFACTS
cleanup() {
	code=$?
	# A background Argo build outlives a failed run otherwise (setsid: its
	# pid is its process group).
	if [ -n "${argo_build:-}" ]; then kill -TERM -- "-$argo_build" 2>/dev/null || true; fi
	if [ "$code" -ne 0 ]; then
		echo "e2e failed; control-plane logs: $dir/logs, controller and Jaeger logs: $E2E_ARTIFACTS" >&2
		bash test/cluster/down.sh --dir "$dir" --keep-logs || true
	else
		bash test/cluster/down.sh --dir "$dir" || true
		rm -rf "$E2E_ARTIFACTS"
	fi
	exit "$code"
}
trap cleanup EXIT
# Jaeger v2 for TestTracing, built once from the module proxy and cached.
PHASEGANG_JAEGER=$(bash test/jaeger/build.sh | tail -n 1)
export PHASEGANG_JAEGER
# Argo Workflows' workflow-controller and argoexec for
# TestArgoWorkflowController: a cold build takes ~10 min, so it runs in the
# background at the lowest CPU priority while the control plane comes up and
# the other tests run; the test (which runs last) waits for it through
# build.sh's lock. Returns at once when cached.
argo_build=""
if [ -z "${PHASEGANG_ARGO:-}" ]; then
	setsid nice -n 19 bash test/argo/build.sh >"$E2E_ARTIFACTS/argo-build.out" 2>&1 &
	argo_build=$!
fi
# E2E_UP_ARGS adds up.sh flags (e.g. --workload-api for the PodGroup path).
bash test/cluster/up.sh --nodes 2 --gpus 8 --dir "$dir" ${E2E_UP_ARGS:-}
# shellcheck disable=SC1091
source "$dir/env"
go test -tags e2e -count=1 -timeout 30m -v ${E2E_ARGS:-} ./test/e2e/...
