#!/usr/bin/env bash
# make e2e-real: the real-node tier. Starts the local control plane with one
# real node and no fake ones (up.sh --nodes 0 --real-nodes 1: containerd,
# CoreDNS and a kubelet running real containers, 4 fake GPUs), runs the
# e2e tests named TestReal* against it with a real phasegang controller,
# stops everything, and checks that the host is as it was before: the
# output of test/cluster/hoststate.sh (sysctls, links, iptables, mounts,
# cgroups, directories, processes) must not differ. Needs root.
# E2E_ARGS adds `go test` flags (e.g. E2E_ARGS='-run TestRealSeedDeadlock').
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "e2e-real: the real node needs root" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e-real.XXXXXX")
E2E_ARTIFACTS=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e-real-artifacts.XXXXXX")
export E2E_ARTIFACTS
before=$E2E_ARTIFACTS/host.before
after=$E2E_ARTIFACTS/host.after
# Install and build first: the host's state is recorded after apt-get.
bash test/cluster/build.sh >/dev/null
bash test/cluster/realnode.sh prepare --dir "$dir"
bash test/cluster/hoststate.sh | sort >"$before"

cleanup() {
	code=$?
	if [ "$code" -ne 0 ]; then
		echo "e2e-real failed; cluster and node logs: $dir/logs, controller logs: $E2E_ARTIFACTS" >&2
		bash test/cluster/down.sh --dir "$dir" --keep-logs || true
	else
		bash test/cluster/down.sh --dir "$dir" || true
	fi
	bash test/cluster/hoststate.sh | sort >"$after"
	if ! diff -u "$before" "$after" >"$E2E_ARTIFACTS/host.diff"; then
		echo "e2e-real: down.sh left the host changed (- before, + after):" >&2
		cat "$E2E_ARTIFACTS/host.diff" >&2
		code=1
	else
		echo "e2e-real: the host is as it was before up.sh ($(wc -l <"$before") facts compared: test/cluster/hoststate.sh)" >&2
	fi
	[ "$code" -ne 0 ] || rm -rf "$E2E_ARTIFACTS"
	exit "$code"
}
trap cleanup EXIT
bash test/cluster/up.sh --nodes 0 --real-nodes 1 --gpus 4 --dir "$dir"
# shellcheck disable=SC1091
source "$dir/env"
go test -tags e2e -count=1 -timeout 20m -v -run '^TestReal' ${E2E_ARGS:-} ./test/e2e/...
