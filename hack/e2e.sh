#!/usr/bin/env bash
# make e2e: start the local control plane (test/cluster), run the e2e suite
# against it with a real phasegang controller process, stop everything.
# E2E_ARGS adds `go test` flags (e.g. E2E_ARGS='-run TestSeed').
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e.XXXXXX")
export E2E_ARTIFACTS="$dir/artifacts"
mkdir -p "$E2E_ARTIFACTS"
cleanup() {
	code=$?
	if [ "$code" -ne 0 ] && [ -d "$dir/logs" ]; then
		echo "e2e failed; control-plane logs: $dir/logs, controller logs: $E2E_ARTIFACTS" >&2
		bash test/cluster/down.sh --dir "$dir" --keep-logs || true
	else
		bash test/cluster/down.sh --dir "$dir" || true
	fi
	exit "$code"
}
trap cleanup EXIT
bash test/cluster/up.sh --nodes 2 --gpus 8 --dir "$dir"
# shellcheck disable=SC1091
source "$dir/env"
go test -tags e2e -count=1 -timeout 30m -v ${E2E_ARGS:-} ./test/e2e/...
