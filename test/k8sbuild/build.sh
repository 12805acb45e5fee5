#!/usr/bin/env bash
# Builds Kubernetes components and etcd from the Go module proxy, cached by version.
#
#   test/k8sbuild/build.sh <out-dir> [component...]
#
# Components: etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
# (default: etcd kube-apiserver, what envtest needs). A component whose binary already
# exists in <out-dir> with a matching version stamp is skipped, so a warm run takes
# milliseconds. The versions are those pinned in this folder's go.mod files.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: build.sh <out-dir> [component...]}"
shift
components=("$@")
[ ${#components[@]} -eq 0 ] && components=(etcd kube-apiserver)
mkdir -p "$out"

kver="$(cd "$here/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ever="$(cd "$here/etcd" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
minor="$(echo "$kver" | cut -d. -f2)"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z -X k8s.io/component-base/version.gitCommit=0000000000000000000000000000000000000000"

i=0
for c in "${components[@]}"; do
	i=$((i + 1))
	if [ "$c" = etcd ]; then ver="$ever"; else ver="$kver"; fi
	stamp="$out/.$c.version"
	if [ -x "$out/$c" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$ver" ]; then
		continue
	fi
	start=$(date +%s)
	echo "[$i/${#components[@]}] building $c $ver into $out (cold: 1 to 6 min each on two cores) ..."
	if [ "$c" = etcd ]; then
		(cd "$here/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/$c.tmp" .)
	else
		(cd "$here/kubernetes" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "./cmd/$c")
	fi
	mv "$out/$c.tmp" "$out/$c"
	echo "$ver" >"$stamp"
	echo "built $c in $(($(date +%s) - start))s"
done
