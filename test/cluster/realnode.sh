#!/usr/bin/env bash
# A real node beside up.sh's control plane: containerd + runc + CNI (Debian
# packages), CoreDNS and a kubelet built from the module proxy
# (build-node.sh), with fake GPUs. Its pods run real processes.
#
# Usage: test/cluster/realnode.sh up      --dir DIR [--gpus G]
#        test/cluster/realnode.sh down    --dir DIR
#        test/cluster/realnode.sh prepare --dir DIR   (install and build only)
#        test/cluster/realnode.sh load    --dir DIR IMAGE.tar...   (import more images)
#   up     needs root and the control plane of `up.sh --dir DIR` (up.sh
#          --real-nodes 1 calls it); installs containerd, runc,
#          containernetworking-plugins, iptables and conntrack with apt-get
#          when missing; loads the test images (phasegang.test/trainer:dev,
#          phasegang.test/pause:dev) into containerd; creates Node `localhost`
#          labelled phasegang.dev/real-node=true with G nvidia.com/gpu
#          (default 4) from a fake device plugin (test/deviceplugin), so the
#          kubelet hands each container distinct GPU IDs
#          (NVIDIA_VISIBLE_DEVICES).
#   down   stops everything up started and undoes what the kubelet and the
#          runtime changed on the host (sysctls, iptables chains, mounts,
#          cgroups, the bridge, directories outside DIR); down.sh calls it.
#          hoststate.sh prints what it restores, for a before/after diff.
#
# One real node per machine: it owns the bridge klbr0 (10.244.0.1/24, host
# only: pods reach each other, the node's DNS and nothing else), the
# kubelet's port 127.0.0.1:10250 and the node name `localhost` (the name
# kube-apiserver reaches the kubelet by without asking a DNS server).
# Why each setting: ../../shared/notes/real-node.md, summarised in README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

BRIDGE=klbr0
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
NODE_NAME=localhost
# What the kubelet changes on the host and down restores (real-node.md).
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory net.ipv4.ip_forward)
# Directories outside DIR that the kubelet, containerd, runc or CNI create
# whatever their configured roots; down removes those that were not there.
HOST_DIRS=(/var/log/containers /var/log/pods /var/lib/cni /run/netns /run/containerd /opt/containerd /var/lib/kubelet /etc/cni)

cmd=${1:-}; shift || true
dir=""
gpus=4
extra=()
die() { echo "realnode.sh: error: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --gpus) gpus=${2:?--gpus needs a value}; shift 2 ;;
    --gpus=*) gpus=${1#*=}; shift ;;
    -h|--help) awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *.tar) extra+=("$1"); shift ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ -n "$dir" ]] || die "--dir is required"
[[ "$gpus" =~ ^[0-9]+$ ]] || die "--gpus must be a non-negative integer, got '$gpus'"
dir=$(cd "$dir" && pwd)
n=$dir/node
logs=$dir/logs

t0=$(date +%s.%N)
say() { echo "realnode.sh [$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}')]: $*" >&2; }

# ---------------------------------------------------------------- helpers
# start NAME CMD...: a daemon in its own session; its own PID (not setsid's)
# in $n/pids/NAME.pid, so down signals the daemon itself.
start() {
  local name=$1; shift
  setsid sh -c 'echo $$ > "$0"; exec "$@"' "$n/pids/$name.pid" "$@" </dev/null >"$logs/$name.log" 2>&1 &
  for _ in $(seq 1 50); do [[ -s "$n/pids/$name.pid" ]] && return 0; sleep 0.1; done
  die "$name did not start (see $logs/$name.log)"
}
pid_of() { [[ -s "$n/pids/$1.pid" ]] && cat "$n/pids/$1.pid"; }
alive() { local p; p=$(pid_of "$1") && kill -0 "$p" 2>/dev/null; }
# wait_for NAME SECONDS WHAT CMD...
wait_for() {
  local name=$1 secs=$2 what=$3; shift 3
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      tail -n 25 "$logs/$name.log" >&2
      die "$name exited while waiting for $what (log: $logs/$name.log)"
    fi
    (( $(date +%s) < deadline )) || { tail -n 25 "$logs/$name.log" >&2; die "timed out waiting for $what (log: $logs/$name.log)"; }
    sleep 0.2
  done
}
# stop NAME [SECONDS]: SIGTERM, then SIGKILL after SECONDS (default 10).
stop() {
  local name=$1 secs=${2:-10} p
  p=$(pid_of "$name") || return 0
  kill -0 "$p" 2>/dev/null || { rm -f "$n/pids/$name.pid"; return 0; }
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 1 $((secs * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then
    echo "realnode.sh: $name (pid $p) ignored SIGTERM; SIGKILL" >&2
    kill -KILL "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$n/pids/$name.pid"
}
kubectl() { "$PHASEGANG_K8S_BIN/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }
ctr_() { ctr --address "$n/containerd/containerd.sock" -n k8s.io "$@"; }

# ---------------------------------------------------------------- up
ensure_packages() {
  local missing=()
  command -v containerd >/dev/null && command -v ctr >/dev/null || missing+=(containerd)
  [[ -x /usr/sbin/runc ]] || missing+=(runc)
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v nft >/dev/null || missing+=(nftables)
  command -v ip >/dev/null || missing+=(iproute2)
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
  say "installing ${missing[*]} (apt-get)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$logs/apt.log" 2>&1 || { tail -n 20 "$logs/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
}

record_host() {
  local s d
  for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$n/sysctl.before"
  for d in "${HOST_DIRS[@]}"; do [[ -e "$d" ]] && echo "$d"; done >"$n/dirs.before" || true
  nft list tables >"$n/nft.before" 2>/dev/null || true
}

make_bridge() {
  ip link add "$BRIDGE" type bridge
  ip addr replace "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

write_containerd_config() {
  mkdir -p "$n/containerd" "$n/cni" "$n/ipam"
  cat >"$n/containerd/config.toml" <<EOF
version = 2
root = "$n/containerd/root"
state = "$n/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$n/containerd/containerd.sock"
[ttrpc]
  address = "$n/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$n/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "phasegang.test/pause:dev"
  # Root lacks CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$n/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n/cni"
EOF
  # A host-only bridge: the pods' gateway is the bridge's own address
  # (CoreDNS listens there), there is no default route and no masquerade.
  cat >"$n/cni/10-$BRIDGE.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "$BRIDGE", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "isDefaultGateway": false,
   "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$n/ipam",
            "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]]}}]}
EOF
}

import_images() {
  local img
  for img in "$images"/*.tar; do
    ctr_ images import "$img" >>"$logs/ctr-import.log" 2>&1 \
      || { tail -n 10 "$logs/ctr-import.log" >&2; die "ctr images import $img failed"; }
  done
}

write_coredns_config() {
  mkdir -p "$n/coredns"
  # cluster.local from the API server; every other name NXDOMAIN (there is
  # no forward plugin in this build): nothing a pod asks leaves the machine.
  cat >"$n/coredns/Corefile" <<EOF
cluster.local:53 {
  bind $NODE_IP
  errors
  kubernetes cluster.local {
    kubeconfig $dir/kubeconfig
    pods insecure
  }
}
.:53 {
  bind $NODE_IP
  template ANY ANY {
    rcode NXDOMAIN
  }
}
EOF
}

write_kubelet_config() {
  mkdir -p "$n/kubelet" "$n/pod-logs"
  : >"$n/resolv.conf"
  cat >"$n/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 here; the kubelet refuses it since 1.35 unless told not to.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$n/containerd/containerd.sock
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
# No host search domain or resolver reaches a pod.
resolvConf: $n/resolv.conf
podLogsDir: $n/pod-logs
rotateCertificates: false
serializeImagePulls: false
# The disk is shared with builds: evict nothing, collect no imported image.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

node_ready() {
  [[ $(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
node_has_gpus() {
  [[ $(kubectl get node "$NODE_NAME" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}' 2>/dev/null) == "$gpus" ]]
}

up() {
  [[ $(id -u) == 0 ]] || die "the real node needs root (containerd, runc, network namespaces)"
  [[ -s "$dir/kubeconfig" && -s "$dir/env" ]] || die "$dir has no control plane; start it with up.sh --dir $dir"
  # shellcheck disable=SC1091
  source "$dir/env"
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || die "bridge $BRIDGE exists: another real node runs on this machine (one per machine)"
  rm -rf "$n"; mkdir -p "$n/pids" "$logs"
  ensure_packages
  local out
  out=$("$here/build-node.sh") || die "build-node.sh failed"
  nodebin=$(tail -n 2 <<<"$out" | head -n 1)/bin
  images=$(tail -n 1 <<<"$out")
  record_host
  # From here on, a failure undoes what was done.
  trap 'rc=$?; if ((rc)); then echo "realnode.sh: up failed; undoing" >&2; down || true; fi; exit $rc' EXIT

  say "bridge $BRIDGE $NODE_IP/24"
  make_bridge
  write_containerd_config
  say "starting containerd"
  start containerd containerd --config "$n/containerd/config.toml"
  wait_for containerd 30 "containerd's socket" ctr_ version
  say "importing test images from $images"
  import_images
  write_coredns_config
  say "starting CoreDNS on $NODE_IP:53"
  start coredns "$nodebin/coredns" -conf "$n/coredns/Corefile"
  wait_for coredns 30 "CoreDNS to serve" grep -q '^CoreDNS-' "$logs/coredns.log"
  write_kubelet_config
  say "starting the kubelet (node $NODE_NAME)"
  start kubelet "$nodebin/kubelet" --config "$n/kubelet.yaml" --kubeconfig "$dir/kubeconfig" \
    --root-dir "$n/kubelet" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --node-labels phasegang.dev/real-node=true --v 2
  wait_for kubelet 90 "node $NODE_NAME Ready" node_ready
  # Fake GPUs through the kubelet's device-plugin API: the kubelet counts
  # them and gives each container distinct device IDs.
  say "starting the fake GPU device plugin ($gpus devices)"
  # The kubelet serves that API in /var/lib/kubelet/device-plugins whatever
  # its --root-dir (down removes /var/lib/kubelet if it was not there).
  start deviceplugin "$nodebin/deviceplugin" -count "$gpus"
  wait_for kubelet 30 "$gpus nvidia.com/gpu allocatable" node_has_gpus
  {
    echo "export PHASEGANG_REAL_NODE=$NODE_NAME"
    echo "export PHASEGANG_REAL_NODE_DIR=$n"
    echo "export PHASEGANG_REAL_NODE_GPUS=$gpus"
  } >>"$dir/env"
  trap - EXIT
  say "real node $NODE_NAME Ready with $gpus nvidia.com/gpu"
}

# ---------------------------------------------------------------- down
# drain_pods deletes the node's pods through the API while it still runs, so
# the kubelet stops each sandbox the normal way (CNI DEL: veth, IP, netns).
drain_pods() {
  kubectl get --raw /readyz >/dev/null 2>&1 || return 0
  kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" \
    --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  # Exited containers stay until the kubelet's container GC: wait only for
  # the running tasks (sandboxes included) to stop.
  local deadline=$(( $(date +%s) + 30 ))
  while (( $(date +%s) < deadline )); do
    [[ -z $(ctr_ tasks list 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"') ]] && return 0
    sleep 0.5
  done
  echo "realnode.sh: tasks still running 30 s after their pods were deleted; killing them" >&2
}

# remove_containers kills what the kubelet did not stop: the shims outlive
# containerd otherwise.
remove_containers() {
  local id
  for id in $(ctr_ tasks list -q 2>/dev/null); do
    ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true
  done
  for id in $(ctr_ containers list -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1 || true; done
}

# kill_strays kills any process still started from DIR's binaries or
# sockets (a shim whose task was never deleted, a container's process).
kill_strays() {
  local p c
  for p in /proc/[0-9]*; do
    c=$( (tr '\0' ' ' <"$p/cmdline") 2>/dev/null) || continue
    [[ "$c" == *"$n/"* ]] && kill -KILL "${p#/proc/}" 2>/dev/null || true
  done
}

unmount_all() {
  local m
  # Deepest first: pod volumes sit under the kubelet's bind-mounted root.
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
    awk -v n="$n/" '{ gsub(/\\040/, " ", $5); if (index($5, n) == 1) print $5 }' /proc/self/mountinfo | sort -r)
  if ! grep -qx /run/netns "$n/dirs.before" 2>/dev/null; then
    while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
      awk '{ if (index($5, "/run/netns/") == 1) print $5 }' /proc/self/mountinfo | sort -r)
  fi
}

remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
    [[ -d "$d" ]] || continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

# remove_iptables deletes the KUBE-* chains the kubelet made and the rules
# that jump to them, in every table, IPv4 and IPv6.
remove_iptables() {
  local save t rule chain
  for save in iptables ip6tables; do
    command -v "$save" >/dev/null || continue
    for t in filter nat mangle; do
      "$save" -t "$t" -S >/dev/null 2>&1 || continue
      while read -r rule; do
        eval "\"$save\" -t \"$t\" -D ${rule#-A }" 2>/dev/null || true
      done < <("$save" -t "$t" -S | grep -E '^-A [A-Z]+ .*-j KUBE-' | grep -vE '^-A KUBE-')
      while read -r chain; do "$save" -t "$t" -F "$chain" 2>/dev/null || true; done < <("$save" -t "$t" -S | awk '$1=="-N" && $2 ~ /^KUBE-/ {print $2}')
      while read -r chain; do "$save" -t "$t" -X "$chain" 2>/dev/null || true; done < <("$save" -t "$t" -S | awk '$1=="-N" && $2 ~ /^KUBE-/ {print $2}')
    done
  done
  # iptables (nf_tables backend) created the tables themselves, which
  # outlive their last chain: delete those that were not there before.
  if command -v nft >/dev/null && [[ -f "$n/nft.before" ]]; then
    local table
    while read -r table; do
      grep -qxF "$table" "$n/nft.before" || nft delete $table 2>/dev/null || true
    done < <(nft list tables 2>/dev/null)
  fi
}

restore_sysctls() {
  local kv
  [[ -f "$n/sysctl.before" ]] || return 0
  while read -r kv; do
    [[ "$(sysctl -n "${kv%%=*}")" == "${kv#*=}" ]] || sysctl -qw "$kv" || true
  done <"$n/sysctl.before"
}

remove_host_dirs() {
  local d
  [[ -f "$n/dirs.before" ]] || return 0
  for d in "${HOST_DIRS[@]}"; do
    grep -qx "$d" "$n/dirs.before" || rm -rf "$d"
  done
}

down() {
  [[ -d "$n" ]] || return 0
  [[ -s "$dir/env" ]] && { set +u; source "$dir/env"; set -u; } || true
  if alive containerd && alive kubelet && [[ -n "${PHASEGANG_K8S_BIN:-}" ]]; then drain_pods; fi
  stop deviceplugin
  stop kubelet
  stop coredns
  if alive containerd; then remove_containers; fi
  stop containerd
  kill_strays
  unmount_all
  remove_cgroups
  remove_iptables
  restore_sysctls
  ip link del "$BRIDGE" 2>/dev/null || true
  remove_host_dirs
  if [[ -n "${PHASEGANG_K8S_BIN:-}" ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
    kubectl delete node "$NODE_NAME" --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$n"
  say "real node stopped; host restored"
}

# prepare installs and builds without starting anything (hack/e2e-real.sh
# runs it before it records the host's state).
prepare() {
  mkdir -p "$logs"
  ensure_packages
  "$here/build-node.sh" >/dev/null || die "build-node.sh failed"
}

# load imports more image tarballs into the running node's containerd.
load() {
  local img
  for img in "${extra[@]}"; do
    say "importing $img"
    ctr_ images import "$img" >>"$logs/ctr-import.log" 2>&1 || { tail -n 10 "$logs/ctr-import.log" >&2; die "ctr images import $img failed"; }
  done
}

case "$cmd" in
  prepare) prepare ;;
  load) load ;;
  up) up ;;
  down) down ;;
  *) die "usage: realnode.sh up|down|prepare|load --dir DIR [--gpus G] [IMAGE.tar...]" ;;
esac
