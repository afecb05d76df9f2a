#!/usr/bin/env bash
# Prints what a real node (realnode.sh) may change on the host, one fact per
# line, sorted: the sysctls the kubelet sets, network links, iptables chains
# and rules (IPv4 and IPv6, counters dropped), mount points, kubelet cgroups,
# the directories the runtime creates outside its state dir, and processes of
# the node's programs. hack/e2e-real.sh diffs it before up.sh and after
# down.sh: any line that differs is something down.sh left behind.
set -uo pipefail

for s in kernel.panic kernel.panic_on_oops vm.overcommit_memory net.ipv4.ip_forward; do
  echo "sysctl $s=$(sysctl -n "$s" 2>/dev/null)"
done
ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
for t in iptables ip6tables; do
  command -v "$t-save" >/dev/null || continue
  "$t-save" 2>/dev/null | grep -vE '^#|^COMMIT' | sed -E 's/ \[[0-9]+:[0-9]+\]$//; s/^/'"$t"' /'
done
awk '{ gsub(/\\040/, " ", $5); print "mount " $5 }' /proc/self/mountinfo
for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
  [[ -e "$d" ]] && echo "cgroup $d"
done
for d in /var/log/containers /var/log/pods /var/lib/cni /run/netns /run/containerd /opt/containerd /var/lib/kubelet /etc/cni; do
  [[ -e "$d" ]] && echo "dir $d"
done
for p in /proc/[0-9]*; do
  c=$(cat "$p/comm" 2>/dev/null) || continue
  case "$c" in
    kubelet|containerd|containerd-shim*|runc|coredns|pause|trainer) echo "process $c" ;;
  esac
done
true
