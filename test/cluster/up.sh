#!/usr/bin/env bash
# Starts a real, local Kubernetes control plane with fake (kwok) GPU nodes:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
# all bound to 127.0.0.1 on random free ports, state and logs under DIR.
#
# Usage: test/cluster/up.sh [--nodes N] [--gpus G] [--dir DIR] [--bin-dir BIN] [--timeout SEC]
#   --nodes N    fake nodes to create (default 2)
#   --gpus G     nvidia.com/gpu per node (default 8)
#   --dir DIR    state dir (default ${TMPDIR:-/tmp}/phasegang-cluster); must not hold a running cluster
#   --bin-dir    use binaries from BIN instead of running build.sh (env PHASEGANG_K8S_BIN works too)
#   --timeout    seconds to wait for each component (default 90)
#   --profiling  serve kube-apiserver's /debug/pprof (test/scale -apiserver-profile)
#   --workload-api  enable the GenericWorkload feature gate (kube-apiserver, kube-scheduler,
#                kube-controller-manager) and serve scheduling.k8s.io/v1beta1 (Workload, PodGroup)
#   --real-nodes 1  also start a real node (realnode.sh, root only): containerd, CoreDNS and a
#                kubelet that runs real containers, Node `localhost` with G nvidia.com/gpu;
#                its pods use images phasegang.test/trainer:dev (test/realnode) with
#                imagePullPolicy Never. One per machine.
#
# Needs curl, setsid, base64, od and openssl (without openssl it builds
# test/tools/cmd/certgen with Go instead).
#
# Afterwards:  source DIR/env   (exports KUBECONFIG and the component PIDs)
# Stop with:   test/cluster/down.sh --dir DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

nodes=2
gpus=8
dir=${TMPDIR:-/tmp}/phasegang-cluster
bin=${PHASEGANG_K8S_BIN:-}
timeout=90
profiling=false
workload_api=false
real_nodes=0

die() { echo "up.sh: error: $*" >&2; exit 1; }
usage() { awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "${BASH_SOURCE[0]}"; }

while (($#)); do
  case "$1" in
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --gpus) gpus=${2:?--gpus needs a value}; shift 2 ;;
    --gpus=*) gpus=${1#*=}; shift ;;
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --bin-dir) bin=${2:?--bin-dir needs a value}; shift 2 ;;
    --bin-dir=*) bin=${1#*=}; shift ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
    --timeout=*) timeout=${1#*=}; shift ;;
    --profiling) profiling=true; shift ;;
    --workload-api) workload_api=true; shift ;;
    --real-nodes) real_nodes=${2:?--real-nodes needs a value}; shift 2 ;;
    --real-nodes=*) real_nodes=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ "$nodes" =~ ^[0-9]+$ ]] || die "--nodes must be a non-negative integer, got '$nodes'"
[[ "$gpus" =~ ^[0-9]+$ ]] || die "--gpus must be a non-negative integer, got '$gpus'"
[[ "$real_nodes" =~ ^[01]$ ]] || die "--real-nodes must be 0 or 1 (one real node per machine: realnode.sh), got '$real_nodes'"
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer, got '$timeout'"

for tool in curl setsid base64 od; do
  command -v "$tool" >/dev/null || die "'$tool' not found in PATH (Debian: apt-get install curl util-linux coreutils)"
done

t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}'; }
say() { echo "up.sh [$(elapsed)]: $*" >&2; }

# ---------------------------------------------------------------- binaries
if [[ -z "$bin" ]]; then
  bin=$("$here/build.sh" | tail -n 1) || die "build.sh failed"
fi
bin=$(cd "$bin" && pwd)
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
  [[ -x "$bin/$b" ]] || die "$bin/$b missing (run test/cluster/build.sh)"
done
stages_dir=$bin/../kwok-stages
for f in node-initialize.yaml node-heartbeat.yaml pod-ready.yaml pod-delete.yaml; do
  [[ -s "$stages_dir/$f" ]] || die "$stages_dir/$f missing (run test/cluster/build.sh)"
done
kubectl=$bin/kubectl

# ---------------------------------------------------------------- state dir
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ -d "$dir/pids" ]]; then
  for p in "$dir"/pids/*.pid; do
    [[ -e "$p" ]] || continue
    if kill -0 "$(cat "$p")" 2>/dev/null; then
      die "a cluster is already running in $dir (pid $(cat "$p"), $(basename "$p" .pid)); run test/cluster/down.sh --dir $dir or pick another --dir"
    fi
  done
fi
rm -rf "$dir/etcd" "$dir/pki" "$dir/pids" "$dir/logs" "$dir/kwok" "$dir/run" "$dir/env" "$dir/kubeconfig"
mkdir -p "$dir/pki" "$dir/pids" "$dir/logs" "$dir/kwok" "$dir/run"
logs=$dir/logs

# ---------------------------------------------------------------- cleanup on failure
started=()
ok=false
on_exit() {
  local rc=$?
  if ! $ok; then
    echo "up.sh: FAILED after $(elapsed); stopping what was started. Logs kept in $logs" >&2
    local n
    for ((i=${#started[@]}-1; i>=0; i--)); do
      n=${started[$i]}
      if [[ -f "$dir/pids/$n.pid" ]]; then kill "$(cat "$dir/pids/$n.pid")" 2>/dev/null || true; fi
    done
    sleep 1
    for n in "${started[@]}"; do
      if [[ -f "$dir/pids/$n.pid" ]]; then kill -9 "$(cat "$dir/pids/$n.pid")" 2>/dev/null || true; fi
      rm -f "$dir/pids/$n.pid"
    done
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- ports
# Random free loopback ports; distinct per run so parallel clusters don't clash.
# They are drawn from below the kernel's ephemeral range: a port inside it can
# be taken by any outgoing connection (kube-apiserver's to etcd, say) between
# the check here and the component binding it, which failed a CI run once.
used_ports() {
  # Local ports of every TCP socket (any state), IPv4 and IPv6.
  local hex
  while read -r hex; do echo $((16#$hex)); done < <(awk 'NR>1 && $2 ~ /:/ {n=split($2,a,":"); print a[n]}' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
}
declare -A taken=()
# docs/tracing.md's Jaeger binds the fixed ports of its config verbatim
# (TestJaegerDocs, beside a running cluster); test/e2e's freePort reads the
# same file.
for p in $(grep -oE 'endpoint: 127\.0\.0\.1:[0-9]+' "$here/../jaeger/config.yaml" | grep -oE '[0-9]+$'); do taken[$p]=1; done
while read -r p; do [[ -n "$p" ]] && taken[$p]=1; done < <(used_ports)
read -r ephemeral_low ephemeral_high < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { ephemeral_low=32768; ephemeral_high=60999; }
if (( ephemeral_low > 12000 )); then port_base=10000; port_span=$(( ephemeral_low - 10000 ))
else port_base=$(( ephemeral_high + 1 )); port_span=$(( 65535 - ephemeral_high )); fi
pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( port_base + ( $(od -An -N2 -tu2 /dev/urandom) % port_span ) ))
    if [[ -z "${taken[$p]:-}" ]]; then taken[$p]=1; echo "$p"; return 0; fi
  done
  die "could not find a free TCP port"
}
etcd_port=$(pick_port); etcd_peer_port=$(pick_port); api_port=$(pick_port)
kcm_port=$(pick_port); sched_port=$(pick_port)

# ---------------------------------------------------------------- credentials
pki=$dir/pki
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "$token,admin,admin,system:masters" >"$pki/tokens.csv"
chmod 600 "$pki/tokens.csv"
# PHASEGANG_USE_OPENSSL=0 forces the Go fallback (used to test it).
if [[ "${PHASEGANG_USE_OPENSSL:-1}" != 0 ]] && command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -addext "extendedKeyUsage=serverAuth" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.crt" >"$logs/openssl.log" 2>&1 \
    || die "openssl could not create the serving certificate (see $logs/openssl.log)"
  openssl genrsa -out "$pki/sa.key" 2048 >>"$logs/openssl.log" 2>&1 \
    || die "openssl genrsa failed (see $logs/openssl.log)"
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" >>"$logs/openssl.log" 2>&1 \
    || die "openssl rsa -pubout failed (see $logs/openssl.log)"
else
  say "openssl not found; generating keys with test/tools/cmd/certgen"
  if [[ ! -x "$bin/phasegang-certgen" ]]; then
    (cd "$repo/test/tools" && GOWORK=off go build -o "$bin/phasegang-certgen" ./cmd/certgen) >"$logs/certgen.log" 2>&1 \
      || die "building certgen failed (see $logs/certgen.log)"
  fi
  "$bin/phasegang-certgen" -dir "$pki" >>"$logs/certgen.log" 2>&1 || die "certgen failed (see $logs/certgen.log)"
fi
chmod 600 "$pki"/*.key

ca_data=$(base64 -w0 <"$pki/apiserver.crt")
server=https://127.0.0.1:$api_port
kubeconfig=$dir/kubeconfig
cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: phasegang-local
  cluster:
    server: $server
    certificate-authority-data: $ca_data
users:
- name: admin
  user:
    token: $token
contexts:
- name: phasegang-local
  context:
    cluster: phasegang-local
    user: admin
    namespace: default
current-context: phasegang-local
EOF
chmod 600 "$kubeconfig"

# ---------------------------------------------------------------- helpers
# start NAME BINARY ARGS...: runs detached (own session, survives this shell),
# stdout+stderr to $logs/NAME.log, pid to $dir/pids/NAME.pid.
start() {
  local name=$1; shift
  setsid "$@" </dev/null >"$logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name.pid"
  started+=("$name")
}
alive() { kill -0 "$(cat "$dir/pids/$1.pid")" 2>/dev/null; }
# wait_for NAME WHAT CMD...: polls CMD until it succeeds, NAME dies, or timeout.
wait_for() {
  local name=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      echo "up.sh: $name exited while waiting for $what; last lines of $logs/$name.log:" >&2
      tail -n 25 "$logs/$name.log" >&2
      die "$name failed to start (full log: $logs/$name.log)"
    fi
    if (( $(date +%s) >= deadline )); then
      echo "up.sh: timed out after ${timeout}s waiting for $what; last lines of $logs/$name.log:" >&2
      tail -n 25 "$logs/$name.log" >&2
      die "$what not reached (full log: $logs/$name.log)"
    fi
    sleep 0.2
  done
}
healthz() { curl -fsk --max-time 2 "$1" | grep -qx ok; }

# ---------------------------------------------------------------- etcd
say "starting etcd on 127.0.0.1:$etcd_port"
# etcd reads every ETCD_* variable as a flag; run it without them.
etcd_env=(env)
while IFS='=' read -r k _; do [[ "$k" == ETCD_* ]] && etcd_env+=(-u "$k"); done < <(env)
start etcd "${etcd_env[@]}" "$bin/etcd" \
  --name=phasegang \
  --data-dir="$dir/etcd" \
  --listen-client-urls="http://127.0.0.1:$etcd_port" \
  --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
  --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster="phasegang=http://127.0.0.1:$etcd_peer_port" \
  --unsafe-no-fsync=true \
  --log-level=warn
wait_for etcd "etcd health (http://127.0.0.1:$etcd_port/health)" \
  bash -c "curl -fs --max-time 2 http://127.0.0.1:$etcd_port/health | grep -q '\"health\":\"true\"'"

# ---------------------------------------------------------------- kube-apiserver
# Extra flags of --workload-api (Kubernetes' gang API, KEP-4671).
api_extra=() component_extra=()
if $workload_api; then
  api_extra=(--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true)
  component_extra=(--feature-gates=GenericWorkload=true)
fi
say "starting kube-apiserver on $server"
apiserver_cmd=("$bin/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$etcd_port" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --secure-port="$api_port" \
  --cert-dir="$pki" \
  --tls-cert-file="$pki/apiserver.crt" \
  --tls-private-key-file="$pki/apiserver.key" \
  --token-auth-file="$pki/tokens.csv" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
  --endpoint-reconciler-type=none \
  --allow-privileged=true \
  --profiling="$profiling" \
  "${api_extra[@]}")
# The command line, NUL-separated, for apiserver.sh (restarts it the same way).
printf '%s\0' "${apiserver_cmd[@]}" >"$dir/run/kube-apiserver.cmd"
start kube-apiserver "${apiserver_cmd[@]}"
wait_for kube-apiserver "kube-apiserver /readyz" "$kubectl" --kubeconfig "$kubeconfig" get --raw /readyz

# ---------------------------------------------------------------- controllers, scheduler, kwok
say "starting kube-controller-manager, kube-scheduler, kwok"
start kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig="$kubeconfig" \
  --authentication-kubeconfig="$kubeconfig" \
  --authorization-kubeconfig="$kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$kcm_port" \
  --cert-dir="$dir/run/kube-controller-manager" \
  --leader-elect=false \
  --controllers='*' \
  --use-service-account-credentials=false \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/apiserver.crt" \
  --node-monitor-grace-period=120s \
  --flex-volume-plugin-dir="$dir/run/flexvolume" \
  --profiling=false \
  "${component_extra[@]}"
start kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig="$kubeconfig" \
  --authentication-kubeconfig="$kubeconfig" \
  --authorization-kubeconfig="$kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$sched_port" \
  --cert-dir="$dir/run/kube-scheduler" \
  --leader-elect=false \
  --profiling=false \
  "${component_extra[@]}"

kwok_config=$dir/kwok/kwok.yaml
{
  for f in node-initialize.yaml pod-ready.yaml pod-delete.yaml; do
    cat "$stages_dir/$f"; printf '\n---\n'
  done
  # kwok's heartbeat rewrites every node's status every 20-25 s: on 1,000
  # nodes that is ~45 writes/s, more than the workload under test. A real
  # kubelet reports an unchanged status every 5 minutes (and renews a
  # Lease). Every 60-70 s stays well inside kube-controller-manager's
  # --node-monitor-grace-period (120 s below).
  sed -e 's/durationMilliseconds: 20000$/durationMilliseconds: 60000/' \
      -e 's/jitterDurationMilliseconds: 25000$/jitterDurationMilliseconds: 70000/' \
      "$stages_dir/node-heartbeat.yaml"
  printf '\n---\n'
  cat "$here/kwok/phasegang-stages.yaml"
  # kwok plays every node's kubelet with a few workers (4 for pods by
  # default). Real kubelets work in parallel, one per node, so give kwok
  # enough workers that a 1,000-node cluster is paced by the components
  # under test, not by the simulator (see test/scale).
  printf '\n---\n'
  cat <<'KWOKCONFIG'
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 8
KWOKCONFIG
} >"$kwok_config"
# KWOK_WORKDIR keeps kwok away from ~/.kwok/kwok.yaml.
start kwok env KWOK_WORKDIR="$dir/kwok" "$bin/kwok" \
  --kubeconfig="$kubeconfig" \
  --config="$kwok_config" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --cidr=10.244.0.0/16

# ---------------------------------------------------------------- nodes
if ((nodes > 0)); then
  say "creating $nodes fake node(s) with $gpus nvidia.com/gpu each"
  {
    for ((i=0; i<nodes; i++)); do
      cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    phasegang.dev/fake-node: "true"
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: kwok-node-$i
    node.kubernetes.io/instance-type: kwok-gpu-$gpus
    # What GPU feature discovery sets on a real GPU node (examples/elastic.yaml selects it).
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
spec: {}
status:
  allocatable: &res
    cpu: "64"
    memory: 512Gi
    pods: "110"
    nvidia.com/gpu: "$gpus"
  capacity: *res
  addresses:
  - type: InternalIP
    address: 10.0.$((i / 250)).$((i % 250 + 1))
  - type: Hostname
    address: kwok-node-$i
---
EOF
    done
  } >"$dir/run/nodes.yaml"
  "$kubectl" --kubeconfig "$kubeconfig" create -f "$dir/run/nodes.yaml" >"$logs/nodes.log" 2>&1 \
    || { cat "$logs/nodes.log" >&2; die "creating nodes failed (see $logs/nodes.log)"; }
fi

wait_for kube-controller-manager "kube-controller-manager /healthz" healthz "https://127.0.0.1:$kcm_port/healthz"
wait_for kube-scheduler "kube-scheduler /healthz" healthz "https://127.0.0.1:$sched_port/healthz"
nodes_ready() {
  local out
  out=$("$kubectl" --kubeconfig "$kubeconfig" get nodes -l phasegang.dev/fake-node=true \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}') || return 1
  [[ $(grep -cx True <<<"$out") -eq $nodes ]]
}
if ((nodes > 0)); then
  wait_for kwok "$nodes node(s) Ready" nodes_ready
fi
# The service-account controller creates default/default; clients that rely on
# it (Jobs, most Pods created by controllers) can start right away afterwards.
wait_for kube-controller-manager "ServiceAccount default/default" \
  "$kubectl" --kubeconfig "$kubeconfig" -n default get serviceaccount default

# ---------------------------------------------------------------- env
{
  echo "# Local phasegang test cluster ($(date -u +%FT%TZ)); source this file."
  echo "export KUBECONFIG=$kubeconfig"
  echo "export PHASEGANG_CLUSTER_DIR=$dir"
  echo "export PHASEGANG_K8S_BIN=$bin"
  echo "export PATH=$bin:\$PATH"
  echo "PHASEGANG_API_SERVER=$server"
  echo "PHASEGANG_ETCD=http://127.0.0.1:$etcd_port"
  for n in "${started[@]}"; do
    v=$(tr 'a-z-' 'A-Z_' <<<"$n")_PID
    echo "$v=$(cat "$dir/pids/$n.pid")"
  done
} >"$dir/env"

# ---------------------------------------------------------------- real node
if ((real_nodes > 0)); then
  say "starting a real node (realnode.sh) with $gpus nvidia.com/gpu"
  "$here/realnode.sh" up --dir "$dir" --gpus "$gpus" || die "realnode.sh up failed (logs: $logs)"
fi

ok=true
say "cluster ready: $nodes fake + $real_nodes real node(s) x $gpus GPU; API $server"
echo "up.sh: KUBECONFIG=$kubeconfig  (source $dir/env; stop with $here/down.sh --dir $dir)" >&2
echo "$dir/env"
