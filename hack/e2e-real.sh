#!/usr/bin/env bash
# make e2e-real: the real-node tier. Starts the local control plane with one
# real node and no fake ones (up.sh --nodes 0 --real-nodes 1: containerd,
# CoreDNS and a kubelet running real containers, 4 fake GPUs), runs the
# e2e tests named TestReal* against it with a real phasegang controller,
# stops everything, and checks that the host is as it was before: the
# output of test/cluster/hoststate.sh (sysctls, links, iptables, mounts,
# cgroups, directories, processes) must not differ. Needs root.
# E2E_TORCH=1 (make e2e-torch) also builds the PyTorch image
# (test/cluster/build-torch.sh), loads it and runs TestRealPyTorch.
# E2E_ARGS adds `go test` flags (e.g. E2E_ARGS='-run TestRealSeedDeadlock').
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "e2e-real: the real node needs root" >&2; exit 1; }
# The cluster is started and stopped by the commands of test/cluster/README.md's
# real-node block, run verbatim: the block's down.sh line at the end, the
# others now.
block=$(awk '/<!-- real-node -->/ {f=1; next} f && /^```sh/ {g=1; next} g && /^```/ {exit} g' test/cluster/README.md)
up_cmds=$(grep -v 'down\.sh' <<<"$block")
down_cmd=$(grep 'down\.sh' <<<"$block")
dir=$(grep -oE -- '--dir [^ ]+' <<<"$down_cmd" | cut -d' ' -f2)
[ -n "$up_cmds" ] && [ -n "$dir" ] || { echo "e2e-real: no real-node block in test/cluster/README.md" >&2; exit 1; }
if [ -d "$dir" ]; then bash test/cluster/down.sh --dir "$dir" || true; fi
mkdir -p "$dir"
E2E_ARTIFACTS=$(mktemp -d "${TMPDIR:-/tmp}/phasegang-e2e-real-artifacts.XXXXXX")
export E2E_ARTIFACTS
before=$E2E_ARTIFACTS/host.before
after=$E2E_ARTIFACTS/host.after
# Install and build first: the host's state is recorded after apt-get.
bash test/cluster/build.sh >/dev/null
bash test/cluster/realnode.sh prepare --dir "$dir"
torch=""
if [ "${E2E_TORCH:-0}" = 1 ]; then torch=$(bash test/cluster/build-torch.sh | tail -n 1); fi
bash test/cluster/hoststate.sh | sort >"$before"

cleanup() {
	code=$?
	if [ "$code" -ne 0 ]; then
		cp -r "$dir/logs" "$E2E_ARTIFACTS/cluster-logs" 2>/dev/null || true
		echo "e2e-real failed; cluster and node logs: $E2E_ARTIFACTS/cluster-logs" >&2
	fi
	echo "+ $down_cmd" >&2
	eval "$down_cmd" || code=1
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
echo "+ $up_cmds" >&2
eval "$up_cmds"
if [ -n "$torch" ]; then
	bash test/cluster/realnode.sh load --dir "$dir" "$torch"
	export PHASEGANG_TORCH_IMAGE=phasegang.test/torch:dev
fi
go test -tags e2e -count=1 -timeout 20m -v -run '^TestReal' ${E2E_ARGS:-} ./test/e2e/... | tee "$E2E_ARTIFACTS/go-test.log"   # pipefail: go test's status decides
# The PyTorch pipeline is not in CI: record which worker pod builder it
# passed on (test/realnode's TestPyTorchRanOnTheCurrentWorkerPodBuilder
# fails in make test once the builder changes without a new run).
if [ -n "$torch" ] && grep -q -- '--- PASS: TestRealPyTorch' "$E2E_ARTIFACTS/go-test.log"; then
	{
		echo "# Written by make e2e-torch (hack/e2e-real.sh) when TestRealPyTorch passed; commit it."
		echo "date $(date -u +%FT%TZ)"
		echo "driver/workers_pod.go sha256 $(sha256sum driver/workers_pod.go | cut -d' ' -f1)"
		grep -E 'real_torch_test.go:[0-9]+: (ddp Succeeded|train:|validate:|test:)' "$E2E_ARTIFACTS/go-test.log" | sed -E 's/^ +real_torch_test.go:[0-9]+: //'
	} >test/realnode/torch/last-run.txt
	echo "e2e-real: recorded the run in test/realnode/torch/last-run.txt" >&2
fi
